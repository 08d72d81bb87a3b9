"""``miaudit catalog``: the reference mechanisms with claimed and true guarantees."""

from __future__ import annotations


def configure(parser) -> None:
    parser.add_argument("--name", default=None, metavar="NAME[?KEY=VALUE&...]",
                        help="show only this entry, optionally at other parameters, e.g. 'svt4?epsilon=0.1&queries=10'")
    parser.add_argument("--buggy", action="store_true", help="show only the buggy entries")


def _pair_text(value) -> str:
    if value is None:
        return "-"
    return "inf" if value in ("inf", float("inf")) else f"{value:.4g}"


def _table(rows: list) -> str:
    """The listing's table, from the entries' ``to_dict()`` summaries."""
    from audit.report.terminal import format_columns  # light: the stored listing needs no NumPy

    return format_columns(("name", "claimed", "true", "true is", "pair attains", "buggy", "output"),
                          [(e["name"], e["claimed"]["text"], e["true"]["text"], e["true_epsilon_is"],
                            _pair_text(e["exposing_pair_epsilon"]), "yes" if e["buggy"] else "no",
                            f"(m, {e['output_dim']})") for e in rows])


def run(args):
    if args.name is not None:
        # Imported here: the catalog loads SciPy, which --help, usage errors and the stored listing must not wait for.
        from estimators.validation import InputError
        from mechanisms.catalog import catalog_names, get_entry

        # Only the named entry is built (building them all runs every DP-SGD accountant).
        names = catalog_names(training=True)
        if args.name.partition("?")[0] not in names:
            raise InputError(f"argument '--name': no catalog mechanism {args.name!r}; "
                             f"available: {', '.join(sorted(names))}")
        try:  # NAME?KEY=VALUE&...: the entry at other parameters
            rows = [get_entry(args.name).to_dict()]
        except InputError as exc:
            raise InputError(f"argument '--name': {exc}") from None
        if args.buggy and not rows[0]["buggy"]:  # the filter would leave an empty table, said nowhere
            raise InputError(f"argument '--buggy': catalog mechanism {args.name!r} is a correct one; drop --buggy")
    else:
        from audit.cli.listings import live_listing, stored_listing

        # The default listing (DP-SGD's training runs too) is stored; a test keeps it equal to the live one.
        rows = stored_listing("catalog") or live_listing("catalog")
    if args.buggy:
        rows = [e for e in rows if e["buggy"]]
    payload = {"mechanisms": rows}
    note = ("\n\n'true is': whether the true ε is exact or an upper bound; 'pair attains': the ε of the "
            "entry's exposing pairs (largest |log-likelihood ratio|; '-': not computed: the MI notions, "
            "SVT3 with c > 1, more than 4096 output-pattern symbols: patterns × queries)")
    return payload, _table(rows) + note
