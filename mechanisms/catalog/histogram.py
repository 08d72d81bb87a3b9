"""Noisy histogram: correct (Laplace scale 1/ε) and buggy (scale ε).

Each row is a bin indicator: one-hot over k bins, or all zero for an absent record.
Adding or removing a record (a row switching between all-zero and one-hot) moves one
bin count by 1: ℓ₁ sensitivity 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_generator, check_int, check_positive

from mechanisms.catalog.batch import VectorizedMechanism, as_database_batch, column_sums
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.catalog.sums import laplace_pair_epsilon
from mechanisms.snapping import snap

__all__ = ["FACTORIES", "NoisyHistogram", "histogram_pair"]


@dataclass(frozen=True)
class NoisyHistogram(VectorizedMechanism):
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
        return snap(counts + as_generator(rng).laplace(0.0, self.scale, size=counts.shape))


NEIGHBOURING = "add/remove: one row switches between all-zero (absent) and a one-hot bin indicator"
SOURCE = "StatDP benchmark (Ding et al. 2018): Histogram / HistogramBuggy"


def histogram_pair(records: int, bins: int) -> NeighbouringPair:
    """Records 0..n-2 in bins 0, 1, ...; record n-1 absent or in the next bin."""
    first = np.zeros((records, bins))
    for i in range(records - 1):
        first[i, i % bins] = 1.0
    second = first.copy()
    second[records - 1, (records - 1) % bins] = 1.0
    return NeighbouringPair(first, second, why=f"record {records - 1} is added to bin {(records - 1) % bins}: "
                            "that count moves by 1")


def _checked(epsilon, records, bins):
    check_positive(epsilon, "epsilon")
    check_int(records, "records", minimum=1)
    check_int(bins, "bins", minimum=1)


def histogram(*, epsilon: float = 0.5, records: int = 3, bins: int = 4) -> CatalogEntry:
    """Bin counts plus Lap(1/ε)."""
    _checked(epsilon, records, bins)
    return CatalogEntry(
        name="histogram", description=f"{bins}-bin histogram of {records} records plus Lap(1/ε)",
        mechanism=NoisyHistogram(1.0 / epsilon, records, bins), output_dim=bins, output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="Laplace mechanism, ℓ₁ sensitivity 1 (Dwork-Roth 2014 Thm 3.6)"),
        true=Guarantee("dp", epsilon, note="exact: one count moves by 1"), true_exact=True,
        buggy=False, neighbouring=NEIGHBOURING, pairs=(histogram_pair(records, bins),), source=SOURCE,
        pair_epsilon=laplace_pair_epsilon(1.0 / epsilon))


def histogram_buggy(*, epsilon: float = 0.5, records: int = 3, bins: int = 4) -> CatalogEntry:
    """Bin counts plus Lap(ε): scale ε instead of 1/ε (ε ≠ 1 shows it)."""
    _checked(epsilon, records, bins)
    return CatalogEntry(
        name="histogram_buggy", description=f"{bins}-bin histogram plus Lap(ε): scale ε instead of 1/ε",
        mechanism=NoisyHistogram(epsilon, records, bins), output_dim=bins, output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="as if the scale were 1/ε"),
        true=Guarantee("dp", 1.0 / epsilon, note="exact: Laplace scale b with ℓ₁ sensitivity 1 is (1/b)-DP"),
        true_exact=True, buggy=True, neighbouring=NEIGHBOURING, pairs=(histogram_pair(records, bins),),
        source=SOURCE, pair_epsilon=laplace_pair_epsilon(epsilon))


ENCODING = "the k noisy bin counts"
FACTORIES = {f.__name__: f for f in (histogram, histogram_buggy)}
