"""Plain-text pieces every report part shares: a table of strings, a number to a few figures, the missing mark, and an
MI point estimate and certified lower bound as a cell reads them (a negative one as noise, no evidence)."""

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


def estimate_text(value, unit: str = "") -> str:
    """An MI point estimate for reading: a negative one says it is noise (MI is never negative: the MI line says so in
    words, :func:`audit.mi_statement.negative_estimate_words`), so that it does not read as a leakage below the
    certified bound beside it; the JSON keeps the value."""
    if value is None:
        return MISSING
    suffix = f" {unit}" if unit else ""
    return f"{number(value)}{suffix}" + (" (below 0: noise)" if value < 0 else "")


def bound_text(value, unit: str = "") -> str:
    """A certified lower bound for reading: a negative one reads as 0 (no evidence; the JSON keeps the raw value)."""
    if value is None:
        return MISSING
    suffix = f" {unit}" if unit else ""
    return f"0{suffix} (no evidence)" if value < 0 else f"{number(value)}{suffix}"
