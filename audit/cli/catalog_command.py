"""``miaudit catalog``: the reference mechanisms with claimed and true guarantees."""

from __future__ import annotations

from mechanisms.catalog import catalog, get_entry



def configure(parser) -> None:
    parser.add_argument("--name", default=None, help="show only this entry")
    parser.add_argument("--buggy", action="store_true", help="show only the buggy entries")


def _table(rows: list) -> str:
    header = ("name", "claimed", "true", "buggy", "output")
    cells = [header] + [(e.name, e.claimed.text, e.true.text, "yes" if e.buggy else "no",
                         f"(m, {e.output_dim})") for e in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args):
    rows = [get_entry(args.name)] if args.name is not None else catalog()
    if args.buggy:
        rows = [e for e in rows if e.buggy]
    payload = {"mechanisms": [e.to_dict() for e in rows]}
    return payload, _table(rows)
