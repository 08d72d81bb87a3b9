"""A forecast's numbers as a line prints them: significant figures (:func:`figures`) and a range from its low end to
its high end that says one number where both ends print the same (:func:`value_range`).

Every forecast of seconds, steps or runs that miaudit prints as a range goes through :func:`value_range` (the wide
critics' cost line, :mod:`audit.critic_cost`; the runs a refutation would take, :mod:`audit.report.content`), so
that none reads "1 to 1 s" and none rounds a sub-second time to "0 s".
"""

from __future__ import annotations

import math
import numbers


def figures(value, digits: int = 2) -> str:
    """``value`` as a forecast prints it: an integer exactly, a float to ``digits`` significant figures but whole
    numbers never rounded further (143.4 → "143", 1.24 → "1.2", 0.312 → "0.31", 0.996 → "1"), with thousands
    separators, no trailing zeros and no exponent, so that a sub-second time reads "0.3", not "0"."""
    if isinstance(value, numbers.Integral):
        return f"{value:,}"
    value = float(value)
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    rounded = float(f"{value:.{digits}g}")
    if abs(rounded) >= 10 ** (digits - 1):  # whole numbers: a forecast of 143 s keeps its 3 figures
        return f"{value:,.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(rounded)))
    return f"{rounded:.{decimals}f}".rstrip("0").rstrip(".")


def value_range(low, high, unit: str = "", about: str = "about ") -> str:
    """A forecast's range from ``low`` to ``high`` (:func:`figures`), e.g. "25 to 143 s"; where both ends print the
    same, that one number after ``about`` ("about 1.2 s"; ``about=""`` for a count that is exact at both ends)."""
    first, last = figures(low), figures(high)
    unit = f" {unit}" if unit else ""
    return f"{about}{first}{unit}" if first == last else f"{first} to {last}{unit}"
