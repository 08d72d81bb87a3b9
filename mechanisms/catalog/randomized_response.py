"""Binary randomized response (Warner 1965): each bit is reported truthfully with p = e^ε/(1+e^ε).

The likelihood ratio of a report under the two values of a bit is p/(1 − p) = e^ε, so
each report is ε-LDP, and the vector of reports is ε-DP under substitution of one record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimators.validation import as_generator, check_int

from mechanisms.catalog.batch import EpsilonRecordsMechanism, as_database_batch
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

__all__ = ["FACTORIES", "RandomizedResponse"]


@dataclass(frozen=True)
class RandomizedResponse(EpsilonRecordsMechanism):
    """One randomized report per bit record; output ``(m, n)`` of 0.0/1.0 reports."""

    @property
    def truth_probability(self) -> float:
        """p = e^ε / (1 + e^ε)."""
        return 1.0 / (1.0 + math.exp(-self.epsilon))

    def __call__(self, dbs, rng=None) -> np.ndarray:
        bits = as_database_batch(dbs, records=self.records, attributes=1, binary=True)[:, :, 0]
        flip = as_generator(rng).random(bits.shape) >= self.truth_probability
        return np.where(flip, 1.0 - bits, bits)


def randomized_response(*, epsilon: float = 1.0, records: int = 3) -> CatalogEntry:
    """Randomized response on n bit records."""
    check_int(records, "records", minimum=1)
    first = np.zeros((records, 1))
    first[1:2] = 1.0
    second = first.copy()
    second[0] = 1.0
    return CatalogEntry(
        name="randomized_response", description=f"binary randomized response on {records} bit records",
        mechanism=RandomizedResponse(epsilon, records), output_dim=records,
        output_encoding="one 0.0/1.0 report per record",
        claimed=Guarantee("ldp", epsilon, note="Warner (1965); ratio p/(1-p) = e^ε"),
        true=Guarantee("ldp", epsilon, note="exact: one report's ratio is e^ε"), true_exact=True,
        buggy=False, neighbouring="substitution: one bit record flipped (local: one user's value changes)",
        pairs=(NeighbouringPair(first, second, why="record 0 flips 0 -> 1"),), source="Warner (1965)",
        # each flipped bit's report has likelihood ratio e^ε in the direction of its true value
        pair_epsilon=lambda pair: float(epsilon * np.count_nonzero(pair.first != pair.second)))


FACTORIES = {"randomized_response": randomized_response}
