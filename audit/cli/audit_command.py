"""``miaudit audit``: audit a mechanism from a TOML configuration or from flags."""

from __future__ import annotations


from audit.cli.main import add_device_option
from audit.report import report_target, summary_table
from estimators.validation import InputError



def configure(parser) -> None:
    parser.add_argument("config", nargs="?", metavar="CONFIG.toml", help="audit configuration (see the README)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a configuration value, e.g. --set audit.epsilon=0.2 (repeatable)")
    parser.add_argument("--report", metavar="OUT.html",
                        help="OUT.html: the HTML report with OUT.md and OUT.json beside it; OUT.md or OUT.json: "
                             "that report alone (the location is checked before the audit)")
    parser.add_argument("--mechanism", metavar="SPEC", help="FILE.py:NAME, package.module:NAME or catalog:NAME")
    parser.add_argument("--prior", metavar="SPEC",
                        help="FILE.py:NAME, builtin:bernoulli|gaussian|uniform or catalog:NAME "
                             "(default for a catalog mechanism: its exposing prior)")
    parser.add_argument("--n", type=int, help="builtin prior: records per database")
    parser.add_argument("--k", type=int, help="builtin prior: attributes per record")
    parser.add_argument("--p", type=float, help="builtin:bernoulli: P(entry = 1)")
    parser.add_argument("--mean", type=float, help="builtin:gaussian: mean")
    parser.add_argument("--std", type=float, help="builtin:gaussian: standard deviation")
    parser.add_argument("--low", type=float, help="builtin:uniform: lower end")
    parser.add_argument("--high", type=float, help="builtin:uniform: upper end")
    parser.add_argument("--independent-rows", action="store_true",
                        help="a FILE.py prior callable has independent rows (you vouch for it)")
    parser.add_argument("--notion", choices=("mi-dp", "smi-dp", "mi-pp"))
    parser.add_argument("--epsilon", type=float, help="audited epsilon, nats")
    parser.add_argument("--secret", metavar="FILE.py:G", help="mi-pp: the secret g(dbs) -> (m, dg)")
    parser.add_argument("--public", metavar="FILE.py:W", help="mi-pp: the public part w(dbs) -> (m, dw)")
    parser.add_argument("--alpha", type=float, help="type-I error of a violation verdict (default 0.05)")
    parser.add_argument("--samples", type=int, help="databases per prior (default 20000)")
    parser.add_argument("--slices", type=int, help="random slices per secret (default 32)")
    parser.add_argument("--records", help="DP notions: 'all' or comma-separated record indices")
    parser.add_argument("--claim", metavar="NOTION:EPS[:DELTA]", help="claimed guarantee, e.g. dp:1 or mi-dp:0.5")
    parser.add_argument("--delta", type=float, help="delta of the event-based DP bound (default 0)")
    parser.add_argument("--event-runs", type=int, help="mechanism runs per neighbouring input for the event test")
    parser.add_argument("--prior-search", type=int, metavar="N",
                        help="DP notions (Θ = all distributions): add N two-point priors on random neighbouring "
                             "pairs (and a catalog mechanism's exposing pairs) to Θ")
    add_device_option(parser)
    # None means "not given": the configuration file's value, if any, then the default applies.
    parser.set_defaults(seed=None, device=None)


def _flag_config(args) -> dict:
    config: dict = {}
    if args.mechanism:
        config["mechanism"] = {"spec": args.mechanism}
    prior = {k: getattr(args, k) for k in ("n", "k", "p", "mean", "std", "low", "high") if getattr(args, k) is not None}
    if args.prior:
        prior["spec"] = args.prior
    if args.independent_rows:
        prior["independent_rows"] = True
    if prior:
        config["prior"] = prior
    audit = {k: getattr(args, k) for k in ("notion", "epsilon", "alpha", "samples", "slices", "records", "delta",
                                           "seed", "device")
             if getattr(args, k) is not None}
    if args.event_runs is not None:
        audit["event_runs"] = args.event_runs
    if args.prior_search is not None:
        audit["prior_search"] = args.prior_search
    if audit:
        config["audit"] = audit
    if args.secret or args.public:
        config["secret"] = {"g": args.secret, "w": args.public}
    if args.claim:
        parts = args.claim.split(":")
        if len(parts) not in (2, 3):
            raise InputError(f"argument '--claim' must be NOTION:EPSILON[:DELTA], got {args.claim!r}")
        try:
            config["claim"] = {"notion": parts[0], "epsilon": float(parts[1]),
                               "delta": float(parts[2]) if len(parts) == 3 else 0.0}
        except ValueError:
            raise InputError(f"argument '--claim' must be NOTION:EPSILON[:DELTA], got {args.claim!r}") from None
    return config


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def run(args):
    from audit.config import apply_overrides, build_spec, load_config  # here: they load torch, --help must not
    from audit.engine import run_audit

    report = report_target(args.report) if args.report else None  # checked before any work
    config = load_config(args.config) if args.config else {}
    config = _merge(config, _flag_config(args))
    config = apply_overrides(config, args.set)
    spec = build_spec(config, quiet=args.quiet or args.json)
    result = run_audit(spec)
    if report:
        report.write(result)
    text = summary_table(result) + "\n\n" + result.statement() + "".join(
        f"\n- claim {check.claim}: {'REFUTED' if check.certified_contradiction else 'not contradicted'} ({check.detail})"
        for check in result.cross_checks)
    if args.report:
        text += f"\n\nreport: {args.report}"
    return result.to_dict(), text
