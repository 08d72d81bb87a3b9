"""``miaudit demo``: audit a small built-in selection (correct, buggy, MI-PP) and write the reports."""

from __future__ import annotations

from audit.cli.main import add_device_option, check_seed


def configure(parser) -> None:
    parser.add_argument("--out", default="miaudit-demo", metavar="DIR", help="report folder (default: miaudit-demo)")
    add_device_option(parser)


def run(args):
    # Imported here, after the arguments parsed: the engine loads torch, which --help must not wait for.
    from audit.demo import demo_specs
    from audit.engine import run_audit
    from audit.cli.audit_command import headline_lines
    from audit.report import check_output_location, summary_table, terminal_text, write_reports
    from audit.report.plain_words import dp_bounds_words

    check_seed(args.seed)
    out = check_output_location(args.out, "--out", folder=True)  # before the audits, not after them
    results = [run_audit(spec) for spec in demo_specs(args.seed, args.device, args.quiet or args.json)]
    paths = write_reports(results, out, title="miaudit demo: a correct, a buggy and an MI-PP mechanism", flag="--out")
    payload = {"audits": [r.to_dict() for r in results], "reports": {k: str(v) for k, v in paths.items()}}
    # The table's "DP ε lower bounds" cell said in words under it, as `miaudit audit` says it under its table.
    bounds_words = dp_bounds_words(results)
    lines = [summary_table(results)] + ([f"  {bounds_words}"] if bounds_words else []) + [""]
    for result in results:
        # What `miaudit audit` leads its terminal summary with (the JSON's `statement` says more); without a claim,
        # the MI notion's statement, as `miaudit audit` prints it then.
        head, *under = headline_lines(result) or [result.mi_statement()]
        lines += [terminal_text(line, keep_newlines=False) for line in [f"- {result.mechanism}: {head}", *under]]
    lines += ["", "reports: " + ", ".join(str(p) for p in paths.values())]
    return payload, "\n".join(lines)
