"""``miaudit catalog``: the reference mechanisms with claimed and true guarantees."""

from __future__ import annotations


def configure(parser) -> None:
    parser.add_argument("--name", default=None, metavar="NAME[?KEY=VALUE&...]",
                        help="show only this entry, optionally at other parameters, e.g. 'svt4?epsilon=0.1&queries=10'")
    parser.add_argument("--buggy", action="store_true", help="show only the buggy entries")


def _pair_text(value) -> str:
    if value is None:
        return "-"
    return "inf" if value == float("inf") else f"{value:.4g}"


def _table(rows: list) -> str:
    from audit.report.content import TextTable
    from audit.report.table import format_text_table

    return format_text_table(TextTable("catalog", ("name", "claimed", "true", "true is", "pair attains", "buggy",
                                                   "output"),
                                       [(e.name, e.claimed.text, e.true.text, e.true_kind,
                                         _pair_text(e.exposing_epsilon), "yes" if e.buggy else "no",
                                         f"(m, {e.output_dim})") for e in rows]))


def run(args):
    # Imported here: the catalog loads SciPy, which --help and usage errors must not wait for.
    from mechanisms.catalog import catalog, catalog_names, get_entry

    from estimators.validation import InputError

    if args.name is not None:
        # Only the named entry is built (building them all runs every DP-SGD accountant).
        names = catalog_names(training=True)
        if args.name.partition("?")[0] not in names:
            raise InputError(f"argument '--name': no catalog mechanism {args.name!r}; "
                             f"available: {', '.join(sorted(names))}")
        try:  # NAME?KEY=VALUE&...: the entry at other parameters
            rows = [get_entry(args.name)]
        except InputError as exc:
            raise InputError(f"argument '--name': {exc}") from None
    else:
        rows = catalog(training=True)  # the DP-SGD training runs too
    if args.buggy:
        rows = [e for e in rows if e.buggy]
    payload = {"mechanisms": [e.to_dict() for e in rows]}
    note = ("\n\n'true is': whether the true ε is exact or an upper bound; 'pair attains': the ε of the "
            "entry's exposing pairs (largest |log-likelihood ratio|; '-': not computed: the MI notions, "
            "SVT3 with c > 1, more than 4096 output-pattern symbols: patterns × queries)")
    return payload, _table(rows) + note
