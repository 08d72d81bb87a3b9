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
retries says it on its last attempt only (``captured_prints(..., say_failure=False)`` before), not once an attempt.

Writes to the file descriptors themselves (compiled code's ``printf``, a subprocess given the descriptor) are not
Python-level and reach the terminal as before; :meth:`PrintedLines.fileno` gives them the real stream's.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass

__all__ = ["KEPT_CHARACTERS", "KEPT_LINES", "NOTE_WORDS", "Printed", "PrintedLines", "captured_prints",
           "terminal_stderr"]

#: The lines of a mechanism's output an audit keeps and shows (the first ones).
KEPT_LINES = 3

#: A kept line is cut to this many characters.
KEPT_CHARACTERS = 200

#: The words by which the audit's note on what a mechanism printed (:meth:`Printed.note`) is found among its notes.
NOTE_WORDS = "while the audit ran it"


@dataclass(frozen=True)
class Printed:
    """What user code printed: ``lines`` in all (a last line without a newline counts), the first ones kept."""

    lines: int = 0
    first: tuple = ()

    def __add__(self, other: "Printed") -> "Printed":
        return Printed(self.lines + other.lines, (self.first + other.first)[:KEPT_LINES])

    def note(self, who: str, failed: bool = False) -> str:
        """The one line that says it: ``mechanism 'f' printed 6,000 lines ...; the first 3: 'a' | 'b' | 'c'``
        (``failed``: what a call that failed printed, written out as it fails)."""
        lines = f"{self.lines:,} line" + ("" if self.lines == 1 else "s")
        shown = " | ".join(repr(line) for line in self.first)
        first = f"; the first {len(self.first)}" if len(self.first) < self.lines else ""
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
        return Printed(self._newlines + self._open_line, tuple(first))


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


@contextlib.contextmanager
def captured_prints(who: str, say_failure: bool = True):
    """Within the block, ``sys.stdout`` and ``sys.stderr`` are one :class:`PrintedLines` (yielded); both are put back
    after it. A block that raises first writes what was printed in it (:meth:`Printed.note`) to the real stderr,
    where ``say_failure`` (false for an attempt that will be retried, so that a chunk's failure is said once)."""
    saved = sys.stdout, sys.stderr
    capture = PrintedLines(original=terminal_stderr())
    sys.stdout = sys.stderr = capture
    try:
        yield capture
    except BaseException:
        sys.stdout, sys.stderr = saved
        printed = capture.printed
        if printed.lines and say_failure:
            try:
                sys.stderr.write(printed.note(who, failed=True) + "\n")
                sys.stderr.flush()
            except (OSError, ValueError):  # a closed stderr: the error itself still propagates
                pass
        raise
    finally:
        sys.stdout, sys.stderr = saved
