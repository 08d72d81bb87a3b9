"""``miaudit catalog``: the reference mechanisms with claimed and true guarantees."""

from __future__ import annotations


def configure(parser) -> None:
    parser.add_argument("--name", default=None, help="show only this entry")
    parser.add_argument("--buggy", action="store_true", help="show only the buggy entries")


def _table(rows: list) -> str:
    from audit.report.content import TextTable
    from audit.report.table import format_text_table

    return format_text_table(TextTable("catalog", ("name", "claimed", "true", "buggy", "output"),
                                       [(e.name, e.claimed.text, e.true.text, "yes" if e.buggy else "no",
                                         f"(m, {e.output_dim})") for e in rows]))


def run(args):
    # Imported here: the catalog loads SciPy, which --help and usage errors must not wait for.
    from mechanisms.catalog import catalog, get_entry

    from estimators.validation import InputError

    rows = catalog()
    if args.name is not None:
        if args.name not in {e.name for e in rows}:
            raise InputError(f"argument '--name': no catalog mechanism {args.name!r}; "
                             f"available: {', '.join(sorted(e.name for e in rows))}")
        rows = [get_entry(args.name)]
    if args.buggy:
        rows = [e for e in rows if e.buggy]
    payload = {"mechanisms": [e.to_dict() for e in rows]}
    return payload, _table(rows)
