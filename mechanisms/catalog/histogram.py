"""Noisy histogram: correct (Laplace scale 1/ε) and buggy (scale ε).

Each row is a bin indicator: one-hot over k bins, or all zero for an absent record.
Adding or removing a record (a row switching between all-zero and one-hot) moves one
bin count by 1: ℓ₁ sensitivity 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_generator, check_int, check_positive

from .batch import as_database_batch, column_sums
from .entry import CatalogEntry
from .guarantee import Guarantee
from .neighbouring_pair import NeighbouringPair

__all__ = ["NoisyHistogram", "entries"]


@dataclass(frozen=True)
class NoisyHistogram:
    """Bin counts plus i.i.d. Laplace(``scale``) noise, output ``(m, bins)``."""

    scale: float
    records: int
    bins: int

    def __post_init__(self):
        check_positive(self.scale, "scale")
        check_int(self.records, "records", minimum=1)
        check_int(self.bins, "bins", minimum=1)

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=self.bins, binary=True)
        if np.any(dbs.sum(axis=2) > 1.0):
            raise InputError("argument 'dbs' must have at most one 1 per record (a bin indicator)")
        counts = column_sums(dbs)
        return counts + as_generator(rng).laplace(0.0, self.scale, size=counts.shape)


def entries(epsilon: float = 0.5) -> list:
    """Correct and buggy histograms; ε ≠ 1 so that scale ε differs from scale 1/ε."""
    records, bins = 3, 4
    first = np.zeros((records, bins))
    first[0, 0] = first[1, 1] = 1.0
    second = first.copy()
    second[2, 2] = 1.0
    pair = NeighbouringPair(first, second, why="record 2 is added to bin 2: that count moves by 1")
    neighbouring = "add/remove: one row switches between all-zero (absent) and a one-hot bin indicator"
    encoding = "the k noisy bin counts"
    source = "StatDP benchmark (Ding et al. 2018): Histogram / HistogramBuggy"
    return [
        CatalogEntry(
            name="histogram", description=f"{bins}-bin histogram of {records} records plus Lap(1/ε)",
            mechanism=NoisyHistogram(1.0 / epsilon, records, bins), output_dim=bins, output_encoding=encoding,
            claimed=Guarantee("dp", epsilon, note="Laplace mechanism, ℓ₁ sensitivity 1 (Dwork-Roth 2014 Thm 3.6)"),
            true=Guarantee("dp", epsilon, note="tight: one count moves by 1"),
            buggy=False, neighbouring=neighbouring, pairs=(pair,), source=source),
        CatalogEntry(
            name="histogram_buggy", description=f"{bins}-bin histogram plus Lap(ε): scale ε instead of 1/ε",
            mechanism=NoisyHistogram(epsilon, records, bins), output_dim=bins, output_encoding=encoding,
            claimed=Guarantee("dp", epsilon, note="as if the scale were 1/ε"),
            true=Guarantee("dp", 1.0 / epsilon, note="Laplace scale b with ℓ₁ sensitivity 1 is exactly (1/b)-DP"),
            buggy=True, neighbouring=neighbouring, pairs=(pair,), source=source),
    ]
