"""``miaudit bounds NAME``: the conversion-bound calculator."""

from __future__ import annotations

import math

import numpy as np

from estimators.validation import InputError

from audit.cli.bounds_calculators import calculators
from audit.cli.bounds_calculators.common import refuse_bits
from audit.config.flag_values import with_flag_names


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="bound_name", metavar="NAME", required=True)
    for name, calc in calculators().items():
        p = sub.add_parser(name, help=calc.help, description=calc.help)
        p.add_argument("--bits", action="store_true",
                       help="refused: no information value is read or printed" if calc.no_information
                       else "information inputs and outputs in bits (default: nats)")
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
        refuse_bits(calc, args)
        with np.errstate(all="ignore"):  # a non-finite result is caught below, by name
            payload = calc.compute(args)
    except InputError as exc:
        raise InputError(with_flag_names(str(exc), args.flag_names)) from None
    except (OverflowError, ZeroDivisionError, FloatingPointError) as exc:
        raise InputError(f"{_given_numbers(args)}: beyond the float range for this calculator ({exc})") from None
    bad = [name for name in non_finite_fields(payload)
           if not (name in calc.unbounded_fields and payload[name] == math.inf)]
    if bad:
        raise InputError(f"{_given_numbers(args)}: the result {', '.join(bad)} is not a finite number for these "
                         "values (beyond the float range)")
    return payload, calc.describe(payload)


def non_finite_fields(payload: dict) -> list:
    """Names of the payload fields holding NaN or ±inf (anywhere inside lists)."""
    def bad(value) -> bool:
        if isinstance(value, (list, tuple)):
            return any(bad(v) for v in value)
        return isinstance(value, float) and not math.isfinite(value)

    return [name for name, value in payload.items() if bad(value)]


def _given_numbers(args) -> str:
    """The numeric flags the user gave, as the message's subject (``arguments '--mu', '--epsilon'``)."""
    flags = [flag for dest, flag in args.flag_names.items()
             if isinstance(getattr(args, dest, None), (int, float)) and not isinstance(getattr(args, dest), bool)
             and dest != "json_sub"]
    flags = flags or list(args.flag_names.values())
    return ("argument " if len(flags) == 1 else "arguments ") + ", ".join(f"'{flag}'" for flag in flags)
