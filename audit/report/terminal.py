"""Text that is safe to print on a terminal.

Mechanism names, prior descriptions, file names and notes are user input; printed raw, an
ANSI escape sequence in one can recolour or rewrite the terminal (or hide a verdict), a
carriage return can overwrite a line, and a Unicode bidirectional override can reorder what
the reader sees ("Trojan Source", Boucher and Anderson, 2021). :func:`terminal_text` shows
each such character as a visible escape instead.
"""

from __future__ import annotations

import re

# C0 controls (except tab and, where allowed, newline), DEL, C1 controls (U+0080–U+009F; U+009B is
# a one-character CSI on many terminals), and the Unicode bidirectional formatting characters.
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE_KEEPING_NEWLINES = re.compile(f"[{_CONTROL}]")
_UNSAFE = re.compile(f"[{_CONTROL}\n]")

# numpy 2 writes scalars as ``np.float64(0.5)``; a message shows the number itself.
_NUMPY_SCALAR = re.compile(r"\bnp\.(?:float|int|uint|complex)(?:16|32|64|128)?\(([^()]*)\)|\bnp\.(?:True|False)_\b")


def _visible(match: re.Match) -> str:
    character = match.group(0)
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text, *, keep_newlines: bool = True) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\u202e``).

    Parameters
    ----------
    text : object
        Converted with ``str``.
    keep_newlines : bool
        Keep line breaks (whole messages and tables); ``False`` for one table cell or one line.

    Returns
    -------
    str
        Text that cannot move the cursor, change colours or reorder characters on a terminal.
    """
    pattern = _UNSAFE_KEEPING_NEWLINES if keep_newlines else _UNSAFE
    return pattern.sub(_visible, str(text))


def plain_numbers(message: str) -> str:
    """``message`` with numpy scalar reprs (``np.float64(0.5)``, ``np.True_``) written as plain values."""
    def plain(match: re.Match) -> str:
        if match.group(1) is not None:
            return match.group(1)
        return "True" if "True" in match.group(0) else "False"

    return _NUMPY_SCALAR.sub(plain, str(message))


def format_columns(headers, rows) -> str:
    """Left-aligned columns separated by two spaces, with a dashed rule under the header.

    Every cell is made terminal-safe and kept to one line (:func:`terminal_text`): cells hold
    user input such as mechanism names.
    """
    cells = [tuple(terminal_text(cell, keep_newlines=False) for cell in row) for row in [tuple(headers), *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
