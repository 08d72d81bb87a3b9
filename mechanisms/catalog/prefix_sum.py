"""Prefix sums of a noisy histogram (PrefixSum of Wang, Ding, Wang, Kifer and Zhang, PLDI 2019).

Each bin count gets Lap(1/ε) noise and the mechanism releases the running sums of the noisy
counts. Under add/remove of one record (ℓ₁ sensitivity 1 of the counts) the noisy counts are
ε-DP (Dwork and Roth 2014, Thm 3.6) and the prefix sums are an invertible post-processing of
them, so the release is exactly ε-DP: the pair's shift of one count by 1 attains ε.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import check_int, check_positive

from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.catalog.histogram import NEIGHBOURING, NoisyHistogram, histogram_pair
from mechanisms.catalog.sums import laplace_pair_epsilon
from mechanisms.catalog.batch import VectorizedMechanism

__all__ = ["FACTORIES", "NoisyPrefixSum"]


@dataclass(frozen=True)
class NoisyPrefixSum(VectorizedMechanism):
    """Running sums of the bin counts plus i.i.d. Laplace(``scale``) noise, output ``(m, bins)``."""

    scale: float
    records: int
    bins: int

    def __call__(self, dbs, rng=None) -> np.ndarray:
        return np.cumsum(NoisyHistogram(self.scale, self.records, self.bins)(dbs, rng), axis=1)


def prefix_sum(*, epsilon: float = 1.0, records: int = 3, bins: int = 4) -> CatalogEntry:
    """Prefix sums of the noisy bin counts, Lap(1/ε) per count."""
    check_positive(epsilon, "epsilon")
    check_int(records, "records", minimum=1)
    check_int(bins, "bins", minimum=1)
    return CatalogEntry(
        name="prefix_sum", description=f"prefix sums of a {bins}-bin histogram of {records} records, Lap(1/ε) "
                                       "on each count",
        mechanism=NoisyPrefixSum(1.0 / epsilon, records, bins), output_dim=bins,
        output_encoding="the running sums of the k noisy bin counts",
        claimed=Guarantee("dp", epsilon, note="Laplace mechanism on the counts, then post-processing"),
        true=Guarantee("dp", epsilon, note="exact: the prefix sums determine the noisy counts"), true_exact=True,
        buggy=False, neighbouring=NEIGHBOURING, pairs=(histogram_pair(records, bins),),
        source="Wang, Ding, Wang, Kifer & Zhang (PLDI 2019): PrefixSum; DP-Sniper benchmark (Bichsel et al. 2021)",
        # The prefix sums are a bijective linear image of the noisy counts, so the pair attains what the counts do.
        pair_epsilon=laplace_pair_epsilon(1.0 / epsilon))


FACTORIES = {"prefix_sum": prefix_sum}
