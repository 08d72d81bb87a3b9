"""``miaudit bounds NAME``: the conversion-bound calculator."""

from __future__ import annotations

import importlib


# One module per paper; a module that has not landed yet contributes nothing.
BOUND_MODULES = ("audit.bounds.pufferfish", "audit.bounds.local_mi", "audit.bounds.pml", "audit.bounds.lip")


def calculators() -> dict:
    """All registered calculators by name."""
    found = {}
    for qualified in BOUND_MODULES:
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:
                raise
            continue
        for calc in module.CALCULATORS:
            found[calc.name] = calc
    return found


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="bound_name", metavar="NAME", required=True)
    for name, calc in calculators().items():
        p = sub.add_parser(name, help=calc.help, description=calc.help)
        p.add_argument("--bits", action="store_true", help="information inputs and outputs in bits (default: nats)")
        p.add_argument("--json", action="store_true", default=None, dest="json_sub", help="print only JSON")
        calc.configure(p)


def run(args):
    calc = calculators()[args.bound_name]
    if getattr(args, "json_sub", None):
        args.json = True
    payload = calc.compute(args)
    return payload, calc.describe(payload)
