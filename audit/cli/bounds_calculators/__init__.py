"""The ``miaudit bounds NAME`` calculators, one module per paper, over the maths of
:mod:`audit.bounds` and :mod:`mechanisms`."""

from __future__ import annotations

from audit.cli.bounds_calculators import lip, local_mi, pml, pufferfish
from audit.cli.bounds_calculators.common import Calculator

__all__ = ["Calculator", "calculators"]


def calculators() -> dict:
    """Every calculator by name, in the order of the papers."""
    return {calc.name: calc for module in (pufferfish, local_mi, pml, lip) for calc in module.CALCULATORS}
