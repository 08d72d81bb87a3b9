"""Information units. miaudit computes in nats; bits only where a name or flag says so."""

from __future__ import annotations

import math

from .validation import check_choice

NATS = "nats"
BITS = "bits"
UNITS = (NATS, BITS)
LN2 = math.log(2.0)


def convert(value, from_unit: str, to_unit: str):
    """Convert an information value (scalar or array) between ``"nats"`` and ``"bits"``.

    1 bit = ln 2 nats. ``None`` passes through unchanged.
    """
    check_choice(from_unit, "from_unit", UNITS)
    check_choice(to_unit, "to_unit", UNITS)
    if value is None or from_unit == to_unit:
        return value
    return value / LN2 if to_unit == BITS else value * LN2
