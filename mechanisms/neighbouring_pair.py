"""A neighbouring pair of databases that exposes a mechanism.

An MI audit sees a DP violation when the secret is *which* of two neighbouring databases
was used: with the database uniform on the pair, I(secret; output) is the Jensen–Shannon
divergence between the two output laws, which a mechanism that separates them too well
makes large. :meth:`NeighbouringPair.prior` is that uniform two-point prior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.validation import InputError
from mechanisms.priors import TwoPoint

__all__ = ["NeighbouringPair"]


def _database(value, name: str) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"argument '{name}' must be numeric: {exc}") from None
    if arr.ndim != 2 or 0 in arr.shape:
        raise InputError(f"argument '{name}' must have shape (n, k) with n, k >= 1, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"argument '{name}' contains NaN or inf")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class NeighbouringPair:
    """Two neighbouring databases of shape ``(n, k)`` and why they expose a mechanism.

    Attributes
    ----------
    first, second : ndarray
        The two databases (read-only copies).
    why : str
        What the pair exposes (e.g. the event whose probability ratio exceeds e^ε).
    """

    first: np.ndarray
    second: np.ndarray
    why: str = ""

    def __post_init__(self):
        first = _database(self.first, "first")
        second = _database(self.second, "second")
        if first.shape != second.shape:
            raise InputError(f"arguments 'first' and 'second' must have the same shape, "
                             f"got {first.shape} and {second.shape}")
        if np.count_nonzero(np.any(first != second, axis=1)) > 1:
            raise InputError("arguments 'first' and 'second' must differ in at most one record (row)")
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "second", second)

    @property
    def record_shape(self) -> tuple[int, int]:
        """``(n, k)``."""
        return self.first.shape

    def prior(self) -> TwoPoint:
        """Prior ``prior(m, rng) -> (m, n, k)`` drawing ``first`` or ``second`` with probability 1/2 each.

        The pair differs in at most one record, so the per-record two-point prior of
        :mod:`mechanisms.priors` with P(second) = 1/2 switches exactly that record.
        """
        return TwoPoint(self.first, self.second, p=0.5)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return fields_to_dict(self)
