"""Plain-text pieces every report part shares: a table of strings, a number to a few figures, the missing mark."""

from __future__ import annotations

from dataclasses import dataclass

from estimators.validation import InputError

MISSING = "—"


@dataclass(frozen=True)
class TextTable:
    """A table of plain strings: a caption, column headers and rows of equal length."""

    caption: str
    headers: tuple
    rows: list

    def __post_init__(self):
        for row in self.rows:
            if len(row) != len(self.headers):
                raise InputError(f"table '{self.caption}' has a row of {len(row)} cells for {len(self.headers)} columns")


def number(value, digits: int = 4) -> str:
    """``value`` to ``digits`` significant figures; :data:`MISSING` for ``None``."""
    return MISSING if value is None else f"{value:.{digits}g}"
