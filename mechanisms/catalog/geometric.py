"""The truncated geometric mechanism for a count (Ghosh, Roughgarden and Sundararajan 2009).

Records are bits; the count c = Σ x_i ∈ {0, ..., n} moves by 1 under substitution. The
output is c + Z clamped to {0, ..., n}, with Z two-sided geometric,
P(Z = z) = (1 − α)/(1 + α) α^|z|, α = e^(−ε). Its pmf given c is
(1 − α)/(1 + α) α^|r − c| for 0 < r < n, α^c/(1 + α) at r = 0 and α^(n−c)/(1 + α) at r = n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimators.validation import as_generator, check_int, check_positive

from .batch import as_database_batch
from .entry import CatalogEntry
from .guarantee import Guarantee
from .neighbouring_pair import NeighbouringPair

__all__ = ["TruncatedGeometric", "entries"]


@dataclass(frozen=True)
class TruncatedGeometric:
    """Count of n bit records plus two-sided geometric noise, clamped to {0..n}; output ``(m, 1)``."""

    epsilon: float
    records: int

    def __post_init__(self):
        check_positive(self.epsilon, "epsilon")
        check_int(self.records, "records", minimum=1)

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=1, binary=True)
        rng = as_generator(rng)
        counts = dbs[:, :, 0].sum(axis=1)
        success = -math.expm1(-self.epsilon)  # 1 − α
        # The difference of two i.i.d. geometric variables is two-sided geometric with ratio α.
        noise = rng.geometric(success, size=counts.shape) - rng.geometric(success, size=counts.shape)
        # Clamping is the mechanism's definition (post-processing onto the count's range), not a repair.
        return np.clip(counts + noise, 0.0, float(self.records))[:, None]


def entries(epsilon: float = 1.0) -> list:
    """The truncated geometric entry on n = 4 bit records."""
    records = 4
    first = np.array([[1.0], [1.0], [0.0], [0.0]])
    second = np.array([[1.0], [1.0], [1.0], [0.0]])
    return [CatalogEntry(
        name="truncated_geometric", description=f"count of {records} bits plus two-sided geometric noise "
                                                "(α = e^-ε), clamped to {0..n}",
        mechanism=TruncatedGeometric(epsilon, records), output_dim=1,
        output_encoding="the released count in {0, ..., n}",
        claimed=Guarantee("dp", epsilon, note="Ghosh, Roughgarden & Sundararajan (2009)"),
        true=Guarantee("dp", epsilon, note="tight: adjacent counts have pmf ratio e^ε inside the range"),
        buggy=False, neighbouring="substitution: one bit record flipped",
        pairs=(NeighbouringPair(first, second, why="count 2 vs 3"),),
        source="Ghosh, Roughgarden & Sundararajan (2009)")]
