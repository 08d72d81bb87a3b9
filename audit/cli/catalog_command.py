"""``miaudit catalog``: the reference mechanisms with claimed and true guarantees."""

from __future__ import annotations

from mechanisms.catalog import catalog, get_entry



def configure(parser) -> None:
    parser.add_argument("--name", default=None, metavar="NAME[?KEY=VALUE&...]",
                        help="show only this entry, optionally at other parameters, e.g. 'svt4?epsilon=0.1&queries=10'")
    parser.add_argument("--buggy", action="store_true", help="show only the buggy entries")


def _pair_text(value) -> str:
    if value is None:
        return "-"
    return "inf" if value == float("inf") else f"{value:.4g}"


def _table(rows: list) -> str:
    header = ("name", "claimed", "true", "true is", "pair attains", "buggy", "output")
    cells = [header] + [(e.name, e.claimed.text, e.true.text, e.true_kind, _pair_text(e.exposing_epsilon),
                         "yes" if e.buggy else "no", f"(m, {e.output_dim})") for e in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run(args):
    rows = [get_entry(args.name)] if args.name is not None else catalog()
    if args.buggy:
        rows = [e for e in rows if e.buggy]
    payload = {"mechanisms": [e.to_dict() for e in rows]}
    note = ("\n\n'true is': whether the true ε is exact or an upper bound; 'pair attains': the ε of the "
            "entry's exposing pairs (largest |log-likelihood ratio|; '-': not computed: the MI notions, "
            "SVT3 with c > 1, more than 4096 output patterns)")
    return payload, _table(rows) + note
