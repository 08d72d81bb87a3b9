"""``miaudit bounds NAME``: the conversion-bound calculator."""

from __future__ import annotations

from estimators.validation import InputError

from .bounds_calculators import calculators
from .flag_values import with_flag_names


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="bound_name", metavar="NAME", required=True)
    for name, calc in calculators().items():
        p = sub.add_parser(name, help=calc.help, description=calc.help)
        p.add_argument("--bits", action="store_true", help="information inputs and outputs in bits (default: nats)")
        p.add_argument("--json", action="store_true", default=None, dest="json_sub", help="print only JSON")
        calc.configure(p)
        # Library functions name their parameters; errors are shown with the flag instead.
        p.set_defaults(flag_names={action.dest: action.option_strings[0]
                                   for action in p._actions if action.option_strings})


def run(args):
    calc = calculators()[args.bound_name]
    if getattr(args, "json_sub", None):
        args.json = True
    try:
        payload = calc.compute(args)
    except InputError as exc:
        raise InputError(with_flag_names(str(exc), args.flag_names)) from None
    return payload, calc.describe(payload)
