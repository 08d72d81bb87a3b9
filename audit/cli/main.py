"""Entry point of the ``miaudit`` console script.

Sub-commands are modules of :mod:`audit.cli` listed in :data:`COMMANDS`. Each module defines

- ``HELP``: a one-line description,
- ``configure(parser)``: adds its own arguments to an ``argparse`` sub-parser,
- ``run(args) -> (payload, text)``: does the work and returns the JSON payload (a dict)
  and the human-readable text.

Every sub-command gets ``--json`` (only the JSON payload on stdout), ``--seed`` and
``--quiet``; commands that train call :func:`add_device_option` for ``--device``.

Two robustness rules hold for every sub-command: a flag value that starts with a minus
sign and a digit (``--support -1,0,1``, ``--epsilon -1e-3``) is read as a value, never as
an option; and output piped into a reader that stops early (``miaudit ... | head``) ends
quietly instead of with a ``BrokenPipeError`` traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import sys

from estimators.validation import InputError

COMMANDS = ("demo", "estimate", "audit", "calibrate", "bounds", "catalog", "experiment")

# Exit status after the reader of stdout went away: 128 + SIGPIPE, as a shell reports a
# process killed by a broken pipe.
BROKEN_PIPE_STATUS = 141


class _Parser(argparse.ArgumentParser):
    """An argument parser that reads any token of the form ``-<digit>...`` or ``-.<digit>...``
    as a value.

    argparse treats only ``-12`` and ``-1.5`` as negative numbers; ``-1,0,1`` or ``-1e-3``
    would be taken for an unknown option. No miaudit option starts with a digit, so every
    such token can safely be a value. Sub-parsers inherit the class (argparse creates them
    with ``type(parent)``).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-\.?\d")


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--device {auto,cpu,cuda}`` to a sub-command that trains."""
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where to train: auto picks CUDA when present (default: auto)")


def _common_options() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="print only the JSON result on stdout")
    common.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    common.add_argument("--quiet", action="store_true", help="no progress bars")
    return common


def _available_commands() -> dict:
    modules = {}
    for name in COMMANDS:
        qualified = f"audit.cli.{name}_command"
        try:
            modules[name] = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            # A sub-command whose module has not landed yet is simply not offered.
            if exc.name != qualified:
                raise
    return modules


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    """Build the argument parser; return it with the sub-command modules it offers."""
    modules = _available_commands()
    parser = _Parser(
        prog="miaudit",
        description="Audit randomized mechanisms for privacy violations with mutual information.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in modules.items():
        # A fresh parent per sub-command: argparse shares a parent's action objects, so one
        # sub-command's set_defaults(seed=...) would otherwise change every other's default.
        sub_parser = sub.add_parser(name, help=module.HELP, description=module.HELP, parents=[_common_options()])
        module.configure(sub_parser)
    return parser, modules


def _clean_for_json(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean_for_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean_for_json(v) for v in value]
    return value


def main(argv=None) -> int:
    """Run ``miaudit`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        payload, text = modules[args.command].run(args)
    except InputError as exc:
        print(f"miaudit {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"miaudit {args.command}: interrupted", file=sys.stderr)
        return 130
    output = json.dumps(_clean_for_json(payload), indent=2, allow_nan=False) if args.json else text
    return _write_stdout(output)


def _write_stdout(output: str) -> int:
    """Print ``output`` (if any); exit quietly when the reader of stdout has gone away."""
    try:
        if output:
            print(output)
        sys.stdout.flush()
    except BrokenPipeError:
        # The recipe of the Python docs (signal module, "Note on SIGPIPE"): point stdout at
        # devnull so that the interpreter's final flush does not raise a second time.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return BROKEN_PIPE_STATUS
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
