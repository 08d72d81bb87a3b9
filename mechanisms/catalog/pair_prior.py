"""The two-point prior on a neighbouring pair of databases.

An MI audit sees a DP violation when the secret is *which* of two neighbouring databases
was used: with the database uniform on the pair, I(secret; output) is the Jensen–Shannon
divergence between the two output laws, which a mechanism that separates them too well
makes large. This prior draws each database of the pair with probability 1/2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from estimators.validation import InputError, as_generator, check_int

__all__ = ["NeighbouringPair", "TwoPointPrior"]


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

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"first": self.first.tolist(), "second": self.second.tolist(), "why": self.why}


@dataclass(frozen=True)
class TwoPointPrior:
    """Prior ``prior(m, rng) -> (m, n, k)``: each database of ``pair`` with probability 1/2.

    ``secret(m, rng)`` is not offered: the secret bit is recovered as
    ``TwoPointPrior.which(dbs)`` (0 for ``pair.first``, 1 for ``pair.second``).
    """

    pair: NeighbouringPair = field()

    def __call__(self, m, rng=None) -> np.ndarray:
        m = check_int(m, "m", minimum=1)
        rng = as_generator(rng)
        second = rng.random(m) < 0.5
        return np.where(second[:, None, None], self.pair.second, self.pair.first)

    def which(self, dbs) -> np.ndarray:
        """The secret bit of each database in ``dbs``: 0 for ``first``, 1 for ``second``.

        Raises
        ------
        InputError
            If a database is neither of the pair.
        """
        arr = np.asarray(dbs, dtype=np.float64)
        if arr.ndim != 3 or arr.shape[1:] != self.pair.record_shape:
            raise InputError(f"argument 'dbs' must have shape (m, {', '.join(map(str, self.pair.record_shape))}), "
                             f"got shape {arr.shape}")
        is_first = np.all(arr == self.pair.first, axis=(1, 2))
        is_second = np.all(arr == self.pair.second, axis=(1, 2))
        if not np.all(is_first | is_second):
            raise InputError("argument 'dbs' holds a database that is neither of the pair")
        return (~is_first).astype(np.float64)
