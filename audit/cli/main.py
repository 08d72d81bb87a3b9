"""Entry point of the ``miaudit`` console script.

Sub-commands are modules ``audit.cli.<name>_command`` named in :data:`COMMANDS` (with their
one-line help). Each module defines

- ``configure(parser)``: adds its own arguments to an ``argparse`` sub-parser,
- ``run(args) -> (payload, text)``: does the work and returns the JSON payload (a dict)
  and the human-readable text.

Every sub-command gets ``--json`` (only the JSON payload on stdout), ``--seed`` and
``--quiet``; commands that train call :func:`add_device_option` for ``--device`` (``audit`` takes it from its
configuration key, :data:`audit.config.keys.KEYS`, checked with the other choice flags).

Robustness rules that hold for every sub-command:

- a flag value that starts with a minus sign and a digit, ``inf`` or ``nan``
  (``--support -1,0,1``, ``--epsilon -1e-3``, ``--epsilon -inf``) is read as a value, never
  as an option, so that validation can reject it with an error naming the flag;
- stdout carries the result alone: while a command runs, anything written to stdout (a
  mechanism's ``print``, a C extension, a subprocess) goes to stderr instead, at the file
  descriptor level (:func:`stdout_to_stderr`);
- everything printed from user input is terminal-safe (control characters shown as escapes,
  :func:`audit.report.terminal.terminal_text`) and error messages show numbers, not numpy reprs;
- output piped into a reader that stops early (``miaudit ... | head``) ends quietly (status
  141); stdout that cannot be written (``> /dev/full``) gives one line on stderr and status 2;
- SIGTERM and SIGHUP (a CI runner's cancel, a closed terminal) end the program as Ctrl-C does
  (:func:`end_on_termination`): workers, Ray handles and external programs' process groups are
  ended, temporary files removed, an old report left as it was, one line on stderr, and status
  128 + the signal's number (143 for SIGTERM).

Only the module of the command being run is imported, and command modules import their heavy
dependencies inside ``run``: ``miaudit --help`` and usage errors load neither torch, SciPy nor
matplotlib.

Exit status: 0 success; 2 bad input, an output that cannot be written, or a usage error;
130 interrupted; 129 and 143 ended by SIGHUP and SIGTERM; 141 stdout closed by its reader.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import signal
import sys

# Sub-command name -> one-line help. The help lives here so that building the parser imports
# only the module of the command being run (some pull in torch, which takes seconds to load).
COMMANDS = {
    "demo": "audit a built-in selection of mechanisms (correct, buggy, MI-PP) and write a report",
    "estimate": "estimate mutual information between samples in .npy files (nats unless --bits)",
    "audit": "check a privacy claim (dp, ldp, zcdp, rdp, gdp, mi-dp, mi-pp) against a mechanism: refuted with "
             "certified type-I error <= alpha, not refuted, or cannot be refuted at this budget; also audits "
             "MI-DP, SMI-DP or MI-PP",
    "calibrate": "calibrate Laplace or Gaussian noise for MI-DP, MI Pufferfish privacy, eps-DP or (eps, delta)-DP",
    "bounds": "conversion bounds between privacy notions (pufferfish, local MI, PML, LIP papers)",
    "catalog": "the reference mechanisms (correct and buggy) with claimed and true guarantees",
    "experiment": "list the reproduced figures and studies, or run one (writes CSV, PNG and a Markdown summary)",
    "scan": "audit every DP entry point of a library or of your module: findings, controls, skipped cases",
    "one-run": "one-run audit: m canaries, one training run, a certified (eps, delta) lower bound (Steinke et al. 2023)",
}

# Exit status after the reader of stdout went away: 128 + SIGPIPE, as a shell reports a
# process killed by a broken pipe.
BROKEN_PIPE_STATUS = 141
# Exit status for bad input, including an output (report, folder, stdout) that cannot be written.
USAGE_STATUS = 2


class _Parser(argparse.ArgumentParser):
    """An argument parser that reads any token of the form ``-<digit>...``, ``-.<digit>...``,
    ``-inf``, ``-infinity`` or ``-nan`` (any case) as a value.

    argparse treats only ``-12`` and ``-1.5`` as negative numbers; ``-1,0,1``, ``-1e-3`` or
    ``-inf`` would be taken for an unknown option ("expected one argument"). No miaudit option
    starts with a digit or is called ``-inf``/``-nan``, so every such token can safely be a
    value, which validation then accepts or rejects naming the flag. Sub-parsers inherit the
    class (argparse creates them with ``type(parent)``).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\.?\d|inf(inity)?$|nan$)", re.IGNORECASE)

    def error(self, message):
        """A usage error is one line, ``miaudit audit: error: argument --samples: invalid integer value: 'ten'``, as
        every other bad input's: a usage block above it would bury the line that says what is wrong (``--help``
        prints the usage)."""
        self.exit(USAGE_STATUS, f"{self.prog}: error: {message}\n")

    def _print_message(self, message, file=None):
        # argparse swallows OSError here, so --help into a full device would "succeed" with exit 0.
        if message:
            (file or sys.stderr).write(message)


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--device {auto,cpu,cuda}`` to a sub-command that trains."""
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where to train: auto picks CUDA when present (default: auto)")


def check_seed(seed, flag: str = "--seed") -> int:
    """``--seed`` for commands that validate it themselves: a whole number ≥ 0 (what
    :func:`numpy.random.default_rng` accepts); :class:`InputError` naming the flag otherwise."""
    from estimators.validation import InputError

    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"argument '{flag}' must be a whole number >= 0, got {seed!r}")
    return seed


def integer(text: str) -> int:
    """:func:`audit.config.flag_values.integer`, imported when a flag is read (it loads NumPy)."""
    from audit.config.flag_values import integer as read

    return read(text)


def _common_options() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="print only the JSON result on stdout")
    common.add_argument("--seed", type=integer, default=0, help="random seed, a whole number >= 0 (default: 0)")
    common.add_argument("--quiet", action="store_true", help="no progress bars")
    return common


def _available_commands(only: str | None = None) -> dict:
    """The sub-command modules (all, or just ``only``) that can be imported."""
    modules = {}
    for name in COMMANDS if only is None else (only,):
        qualified = f"audit.cli.{name.replace('-', '_')}_command"
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
    listed with their help, from :data:`COMMANDS`, and none is imported when ``argv`` names no
    command: ``miaudit --help``); without, every sub-command is.
    """
    selected = argv[0] if argv and argv[0] in COMMANDS else None
    if argv is None:
        modules = _available_commands()
    else:
        modules = _available_commands(selected) if selected is not None else {}
    parser = _Parser(
        prog="miaudit",
        description="Audit randomized mechanisms for privacy violations with mutual information.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.sub_parsers = sub.choices  # name -> its parser: an unknown flag is named against its command's flags
    for name in list(COMMANDS) + [n for n in modules if n not in COMMANDS]:
        module = modules.get(name)
        help_text = getattr(module, "HELP", None) or COMMANDS.get(name, "")
        # A fresh parent per sub-command: argparse shares a parent's action objects, so one
        # sub-command's set_defaults(seed=...) would otherwise change every other's default.
        sub_parser = sub.add_parser(name, help=help_text, description=help_text, parents=[_common_options()])
        if module is not None:
            module.configure(sub_parser)
    return parser, modules


@contextlib.contextmanager
def stdout_to_stderr():
    """Send everything written to stdout to stderr while the block runs.

    Both levels are redirected: ``sys.stdout`` (Python ``print``) and file descriptor 1 (C
    extensions, ``os.write(1, ...)``, subprocesses), so that stdout carries the command's
    result alone (``--json`` stays valid JSON whatever a mechanism prints).
    """
    _flush(sys.stdout)
    saved_stdout = sys.stdout
    try:
        saved_fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved_fd = None  # no fd 1 or fd 2 to work with: the Python-level redirection still holds
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        _flush(sys.stderr)
        sys.stdout = saved_stdout
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def _flush(stream) -> None:
    try:
        stream.flush()
    except (OSError, ValueError):
        pass  # a full or closed stream is reported when the result is written


def _error(command: str | None, message) -> None:
    """One line (or a few) on stderr, terminal-safe, with numbers shown plainly."""
    from audit.report.terminal import plain_numbers, terminal_text

    prefix = f"miaudit {command}" if command else "miaudit"
    print(f"{prefix}: error: {terminal_text(plain_numbers(message))}", file=sys.stderr)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP received: raised in the main thread so that the program ends as on Ctrl-C.

    A subclass of :class:`KeyboardInterrupt`, so every clean-up that a Ctrl-C runs (workers killed,
    Ray released, an external program's process group killed, temporary files removed) runs for
    it too, and user code that catches ``Exception`` does not swallow it.
    """

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


#: Signals that end the program as Ctrl-C does (:func:`end_on_termination`).
TERMINATION_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def end_on_termination() -> None:
    """Make SIGTERM and SIGHUP raise :class:`Terminated` in this (the main) process.

    Their default action kills the process at once: no ``finally`` runs, so an audit's workers,
    its external programs' process groups and its temporary files were left behind (issue 32 B4).
    The first such signal raises; a second one while the clean-up runs is left to its default
    action (the user insists). A process forked by user code is not ours to clean up: there the
    signal takes its default action too.
    """
    owner = os.getpid()

    def handler(signum, frame):
        if os.getpid() != owner or _terminating:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        _terminating.append(signum)
        raise Terminated(signum)

    for number in TERMINATION_SIGNALS:
        try:
            signal.signal(number, handler)
        except (OSError, ValueError):  # not the main thread, or a signal this platform does not deliver
            pass


_terminating: list = []


def main(argv=None) -> int:
    """Run ``miaudit`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    process_entry = argv is None  # the miaudit program itself (not a caller's main([...])): it may end the process
    argv = sys.argv[1:] if argv is None else list(argv)
    if process_entry:  # a user call that ignores its timeout's interruption ends the program, with one line
        from mechanisms.calls.interrupts import watch_interrupts
        from mechanisms.calls.watchdog import exit_when_stuck

        exit_when_stuck()
        end_on_termination()
        watch_interrupts()  # a KeyboardInterrupt user code raises itself is its failure, not the user's Ctrl-C
    try:
        status = _main(argv)
    except Terminated as exc:  # arrived outside the command's run (while parsing, or printing the result)
        print(f"miaudit: terminated by {exc.name}", file=sys.stderr)
        status = 128 + exc.signum
    except SystemExit as exc:
        # argparse's --help and usage errors: their text may still sit in stdout's buffer.
        if _write_stdout("") == USAGE_STATUS and exc.code == 0:
            raise SystemExit(USAGE_STATUS) from None
        raise
    if process_entry:
        _exit_without_user_threads(status)
        if status in TERMINATION_STATUSES:
            _end_process(status)
    return status


#: The exit statuses of a program ended by SIGTERM or SIGHUP (128 + the signal's number).
TERMINATION_STATUSES = frozenset(128 + number for number in TERMINATION_SIGNALS)


def _end_process(status: int) -> None:
    """Flush stdout and stderr and end the process now with ``status``, skipping the interpreter's
    finalisation. Every clean-up of the command (workers, external programs, temporary files, a report's
    set) ran while the signal unwound it; freeing a large audit's objects at exit took 3 s after the
    "terminated" line, past a CI runner's grace before SIGKILL (issue 43 §6)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _exit_without_user_threads(status: int) -> None:
    """End the program now when user code left non-daemon threads running: the interpreter would wait for
    them at exit, for ever if they never end (issue 32 B3). The output is written already."""
    import threading

    left = [t.name for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if not left:
        return
    print(f"miaudit: warning: user code left {len(left)} thread(s) running ({', '.join(left[:3])}"
          f"{', ...' if len(left) > 3 else ''}); exiting without waiting for them", file=sys.stderr)
    _end_process(status)


def unknown_flag_error(parser: argparse.ArgumentParser, command: str | None, extras: list) -> str:
    """The one line for arguments no flag of ``command`` takes (``--per-databse``): the first of them (the rest may
    be its values) and the flag it is closest to, from the command's own flags
    (:func:`estimators.validation.closest_word`), or where the flags are listed."""
    from estimators.validation import closest_word

    sub_parser = getattr(parser, "sub_parsers", {}).get(command, parser)
    flags = [option for action in sub_parser._actions for option in action.option_strings if option.startswith("--")]
    unknown = extras[0]
    typed = unknown.partition("=")[0]
    close = closest_word(typed, flags) if typed.startswith("-") else None
    program = f"miaudit {command}" if command else "miaudit"
    hint = f"did you mean {close}?" if close else f"{program} --help lists its flags"
    return f"unrecognized argument {unknown!r}: {hint}"


def _main(argv: list) -> int:
    parser, modules = build_parser(argv)
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:  # one line naming the argument and the flag it is closest to, not the whole usage block
            _error(getattr(args, "command", None), unknown_flag_error(parser, getattr(args, "command", None), extras))
            return USAGE_STATUS
    except BrokenPipeError:
        _stdout_to_devnull()  # the help text's reader went away (miaudit --help | head -1)
        return BROKEN_PIPE_STATUS
    except OSError as exc:
        return _output_failed(exc)  # the help or usage text could not be written
    if args.command is None:
        parser.print_help(sys.stderr)
        return USAGE_STATUS
    try:
        with stdout_to_stderr():
            payload, text = modules[args.command].run(args)
    except Exception as exc:
        # InputError is looked up, not imported: estimators.validation loads NumPy, which a light command
        # (a stored listing) never needs, and a command that did not import it cannot have raised one.
        validation = sys.modules.get("estimators.validation")
        if validation is None or not isinstance(exc, validation.InputError):
            raise
        _error(args.command, exc)
        return getattr(exc, "exit_status", USAGE_STATUS)  # 1 for a failing user function (MechanismError)
    except KeyboardInterrupt as exc:
        if isinstance(exc, Terminated):
            print(f"miaudit {args.command}: terminated by {exc.name}", file=sys.stderr)
            return 128 + exc.signum
        print(f"miaudit {args.command}: interrupted", file=sys.stderr)
        return 130
    if args.json:
        # ensure_ascii (the default) writes every control character in user strings as \uXXXX.
        from estimators.result_forms import to_jsonable  # after parsing: it loads NumPy

        output = json.dumps(to_jsonable(payload), indent=2, allow_nan=False)
    else:
        from audit.report.terminal import terminal_text

        output = terminal_text(text)
    # A sub-command may ask for another status once its output is printed (audit --fail-on-violation).
    return _write_stdout(output) or getattr(args, "exit_status", 0)


def _write_stdout(output: str) -> int:
    """Print ``output`` (if any) and flush; exit quietly when the reader of stdout has gone away,
    with one line on stderr when stdout cannot be written (a full device)."""
    try:
        if output:
            print(output)
        sys.stdout.flush()
    except BrokenPipeError:
        # The recipe of the Python docs (signal module, "Note on SIGPIPE"): point stdout at
        # devnull so that the interpreter's final flush does not raise a second time.
        _stdout_to_devnull()
        return BROKEN_PIPE_STATUS
    except OSError as exc:
        return _output_failed(exc)
    return 0


def _output_failed(exc: OSError) -> int:
    """One line on stderr (where possible) for output that cannot be written; status 2."""
    _stdout_to_devnull()
    try:
        _error(None, f"cannot write the result to stdout ({exc.strerror or exc})")
    except OSError:
        pass  # stderr cannot be written either: the status alone tells
    return USAGE_STATUS


def _stdout_to_devnull() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
