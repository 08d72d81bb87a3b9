"""Entry point of the ``miaudit`` console script.

Sub-commands are modules ``audit.cli.<name>_command`` named in :data:`COMMANDS` (with their
one-line help). Each module defines

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

# Sub-command name -> one-line help. The help lives here so that building the parser imports
# only the module of the command being run (some pull in torch, which takes seconds to load).
COMMANDS = {
    "demo": "audit a built-in selection of mechanisms (correct, buggy, MI-PP) and write a report",
    "estimate": "estimate mutual information between samples in .npy files (nats unless --bits)",
    "audit": "audit a mechanism for MI-DP, SMI-DP or MI-PP violations (certified type-I error)",
    "calibrate": "calibrate Laplace or Gaussian noise for MI-DP, MI Pufferfish privacy, eps-DP or (eps, delta)-DP",
    "bounds": "conversion bounds between privacy notions (pufferfish, local MI, PML, LIP papers)",
    "catalog": "the reference mechanisms (correct and buggy) with claimed and true guarantees",
    "experiment": "list the reproduced figures and studies, or run one (writes CSV, PNG and a Markdown summary)",
}

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


def _available_commands(only: str | None = None) -> dict:
    """The sub-command modules (all, or just ``only``) that can be imported."""
    modules = {}
    for name in COMMANDS if only is None else (only,):
        qualified = f"audit.cli.{name}_command"
        try:
            modules[name] = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            # A sub-command whose module has not landed yet is simply not offered.
            if exc.name != qualified:
                raise
    return modules


def build_parser(argv=None) -> tuple[argparse.ArgumentParser, dict]:
    """Build the argument parser; return it with the sub-command modules it loaded.

    With ``argv``, only the sub-command it names is imported and configured (the others are
    listed with their help); without, every sub-command is.
    """
    selected = argv[0] if argv and argv[0] in COMMANDS else None
    modules = _available_commands(selected) if argv is not None else _available_commands()
    parser = _Parser(
        prog="miaudit",
        description="Audit randomized mechanisms for privacy violations with mutual information.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in list(COMMANDS) + [n for n in modules if n not in COMMANDS]:
        module = modules.get(name)
        help_text = getattr(module, "HELP", None) or COMMANDS.get(name, "")
        # A fresh parent per sub-command: argparse shares a parent's action objects, so one
        # sub-command's set_defaults(seed=...) would otherwise change every other's default.
        sub_parser = sub.add_parser(name, help=help_text, description=help_text, parents=[_common_options()])
        if module is not None:
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
    argv = sys.argv[1:] if argv is None else list(argv)
    parser, modules = build_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        payload, text = modules[args.command].run(args)
    except InputError as exc:
        print(f"miaudit {args.command}: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_status", 2)  # 1 for a failing user function (MechanismError)
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
