"""What a user's mechanism prints while an audit runs it: counted exactly, its first lines kept, none on the terminal.

An audit calls a mechanism tens of thousands of times; a function that prints on every call (a debugging line,
a library's progress bar) would bury the verdict under as many lines. :func:`captured_prints` takes what the
call writes to ``sys.stdout`` and ``sys.stderr`` (Python-level writes: ``print``, ``warnings``, ``logging``'s
stream handlers that look the stream up) into a :class:`PrintedLines`, which counts every line and keeps the first
:data:`KEPT_LINES` (each cut to :data:`KEPT_CHARACTERS` characters), so its memory is bounded whatever is printed.
The runner adds the counts of every chunk, in the audit's process or a worker's (:class:`Printed` travels back
with the chunk's outputs), and the audit says them in one note (:meth:`Printed.note`). An attempt at a chunk that
fails counts too: what it printed travels back with its error (``MechanismError.printed``, pickled with it from a
worker process or a Ray task) and the runner adds it, so that a chunk retried successfully counts the prints of
every attempt; only a worker process that dies takes its attempt's prints with it. A call that fails for good
writes what it printed, summarised so, to the real stderr before its error propagates, once: a chunk the runner
runs says nothing on its attempts (``captured_prints(..., say_failure=False)``), and the runner says what the last one
printed when it gives the chunk up (:func:`say_failed`), not once an attempt.

A warning is the mechanism's print where the code it names (the file of the line that ``warnings`` shows) is
not miaudit's, and miaudit's own otherwise (:func:`is_miaudit_code`): the checks of the call's outputs and the
output encoder run inside the capture, and NumPy's warning of an overflow in their cast names their line. Those
are shown as they would be without the capture (on the terminal, or recorded by a ``catch_warnings`` around the
audit) and not counted; caught by the capture they were counted as the mechanism's lines, and a warning shown once
was lost.

Writes to the file descriptors themselves (compiled code's ``printf``, a subprocess given the descriptor) are not
Python-level and reach the terminal as before; :meth:`PrintedLines.fileno` gives them the real stream's.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEPT_CHARACTERS", "KEPT_LINES", "NOTE_WORDS", "Printed", "PrintedLines", "captured_prints",
           "is_miaudit_code", "say_failed", "terminal_stderr"]

#: The lines of a mechanism's output an audit keeps and shows (the first ones).
KEPT_LINES = 3

#: A kept line is cut to this many characters.
KEPT_CHARACTERS = 200

#: The words by which the audit's note on what a mechanism printed (:meth:`Printed.note`) is found among its notes.
NOTE_WORDS = "while the audit ran it"


@dataclass(frozen=True)
class Printed:
    """What user code printed: ``lines`` in all (a last line without a newline counts), the first ones kept;
    ``unterminated``: its last line has no newline.

    ``a + b`` is what ``a`` and then ``b`` printed, as one text: a last line of ``a`` without a newline is
    continued by ``b``'s first line, as a terminal shows them, so that the count of what a function printed over
    many calls does not depend on how the runs were cut into chunks (each chunk is captured on its own).
    """

    lines: int = 0
    first: tuple = ()
    unterminated: bool = False

    def __add__(self, other: "Printed") -> "Printed":
        if not other.lines:
            return self
        if not self.unterminated:
            return Printed(self.lines + other.lines, (self.first + other.first)[:KEPT_LINES], other.unterminated)
        first = self.first
        if len(first) == self.lines:  # its open last line is among those kept: ``other``'s first line ends it
            first = first[:-1] + ((first[-1] + other.first[0])[:KEPT_CHARACTERS],) + other.first[1:]
        return Printed(self.lines + other.lines - 1, first[:KEPT_LINES], other.unterminated)

    def note(self, who: str, failed: bool = False) -> str:
        """The one line that says it: ``mechanism 'f' printed 6,000 lines ...; the first 3 in the order of the
        runs: 'a' | 'b' | 'c'`` (``failed``: what a call that failed printed, written out as it fails, in the
        order printed). The runner adds what each chunk printed in the order of the chunks' runs
        (:meth:`mechanisms.execution.runner.MechanismRunner._dispatch`), whichever worker ran them and
        whenever they ended, so the first lines are the same from one run of an audit to the next."""
        lines = f"{self.lines:,} line" + ("" if self.lines == 1 else "s")
        shown = " | ".join(repr(line) for line in self.first)
        first = f"; the first {len(self.first)}" if len(self.first) < self.lines else ""
        if first and not failed:
            first += " in the order of the runs"
        when = "before it failed" if failed else f"{NOTE_WORDS} (stdout and stderr, kept off the terminal)"
        return f"{who} printed {lines} {when}{first}: {shown}"


class PrintedLines(io.TextIOBase):
    """A text stream that counts the lines written to it and keeps the first :data:`KEPT_LINES`.

    Parameters
    ----------
    original : text stream, optional
        The stream it stands in for: :meth:`fileno` is its descriptor (compiled code writing there reaches the
        terminal), and :func:`terminal_stderr` finds it.
    """

    def __init__(self, original=None):
        super().__init__()
        self.original = original
        self._newlines = 0
        self._open_line = False  # text written since the last newline
        self._first: list[str] = []
        self._current: list[str] = []  # the line being written, while a kept line is still wanted
        self._current_length = 0

    @property
    def encoding(self) -> str:
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False  # a library that draws progress bars on a terminal draws none here

    def fileno(self) -> int:
        if self.original is None:
            raise io.UnsupportedOperation("fileno")
        return self.original.fileno()

    @property
    def buffer(self):
        """Bytes written to ``sys.stdout.buffer`` count as the text they decode to (UTF-8, errors replaced)."""
        return _BytesInto(self)

    def write(self, text) -> int:
        text = str(text)
        if not text:
            return 0
        if len(self._first) < KEPT_LINES:
            *complete, last = text.split("\n")
            for piece in complete:
                self._keep(piece)
                if len(self._first) < KEPT_LINES:
                    self._first.append("".join(self._current))
                self._current, self._current_length = [], 0
            self._keep(last)
        self._newlines += text.count("\n")
        self._open_line = not text.endswith("\n")
        return len(text)

    def _keep(self, piece: str) -> None:
        room = KEPT_CHARACTERS - self._current_length
        if room > 0 and piece:
            self._current.append(piece[:room])
            self._current_length += min(len(piece), room)

    def flush(self) -> None:
        pass

    @property
    def printed(self) -> Printed:
        """The lines written so far (an unfinished last line counts) and the first ones."""
        first = list(self._first)
        if self._open_line and len(first) < KEPT_LINES:
            first.append("".join(self._current))
        return Printed(self._newlines + self._open_line, tuple(first), self._open_line)


class _BytesInto:
    """``sys.stdout.buffer`` of a :class:`PrintedLines`: bytes decoded into it."""

    def __init__(self, lines: PrintedLines):
        self._lines = lines

    def write(self, data) -> int:
        self._lines.write(bytes(data).decode("utf-8", errors="replace"))
        return len(data)

    def flush(self) -> None:
        pass


def terminal_stderr():
    """The stderr the terminal shows, also while :func:`captured_prints` holds ``sys.stderr`` (for miaudit's own
    last words, such as the watchdog's: :mod:`mechanisms.calls.watchdog`)."""
    stream = sys.stderr
    return stream.original if isinstance(stream, PrintedLines) and stream.original is not None else stream


#: The folders of miaudit's packages, each ending with a separator (:func:`is_miaudit_code`).
_MIAUDIT_FOLDERS = tuple(str(Path(__file__).resolve().parents[2] / package) + os.sep
                         for package in ("audit", "estimators", "mechanisms"))


@functools.lru_cache(maxsize=1024)
def is_miaudit_code(filename) -> bool:
    """Whether the source file ``filename`` (a warning's, a code object's) is in one of miaudit's packages
    (``audit``, ``estimators``, ``mechanisms``; the catalog's mechanisms included)."""
    try:
        return os.path.realpath(filename).startswith(_MIAUDIT_FOLDERS)
    except (TypeError, ValueError):  # no file name ("<string>" is a name, and not miaudit's)
        return False


def say_failed(printed: Printed | None, who: str) -> None:
    """Write what ``who`` printed in a call that failed for good (:meth:`Printed.note`), where it printed anything, to
    ``sys.stderr``: :func:`captured_prints`'s block that raised, or the runner's chunk given up after its attempts
    (:meth:`mechanisms.execution.runner.MechanismRunner._dispatch`), whose attempts each say nothing."""
    if printed is None or not printed.lines:
        return
    try:
        sys.stderr.write(printed.note(who, failed=True) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed stderr: the error itself still propagates
        pass


@contextlib.contextmanager
def captured_prints(who: str, say_failure: bool = True):
    """Within the block, ``sys.stdout`` and ``sys.stderr`` are one :class:`PrintedLines` (yielded); both are put back
    after it. A block that raises first writes what was printed in it (:meth:`Printed.note`) to the real stderr,
    where ``say_failure`` (false for an attempt that will be retried, so that a chunk's failure is said once).
    A warning of miaudit's own code (:func:`is_miaudit_code`) is shown as it would be without the block, with the
    streams put back while it is (module docstring)."""
    saved = sys.stdout, sys.stderr
    shown = warnings.showwarning  # the application's (the CLI's), a recording catch_warnings' or Python's

    def show(message, category, filename, lineno, file=None, line=None):
        if file is not None or not is_miaudit_code(filename):
            return shown(message, category, filename, lineno, file, line)
        within = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = saved
        try:
            return shown(message, category, filename, lineno, file, line)
        finally:
            sys.stdout, sys.stderr = within

    capture = PrintedLines(original=terminal_stderr())
    sys.stdout = sys.stderr = capture
    warnings.showwarning = show
    try:
        yield capture
    except BaseException:
        sys.stdout, sys.stderr = saved
        if say_failure:
            say_failed(capture.printed, who)
        raise
    finally:
        sys.stdout, sys.stderr = saved
        if warnings.showwarning is show:  # else the mechanism set its own, which it keeps
            warnings.showwarning = shown
