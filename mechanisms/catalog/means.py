"""Private mean under add/remove neighbours, correct (noisy count) and buggy (true count).

A database is a fixed table of n rows ``(value, present)`` with value ∈ [0, 1] and present
∈ {0, 1}: rows with present = 0 are absent records, so adding or removing a record flips
one row's ``present`` bit while n stays fixed. The sum S = Σ value·present and the count
C = Σ present each move by at most 1 when one row changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_generator, check_choice, check_int, check_positive

from .batch import as_database_batch
from .entry import CatalogEntry
from .guarantee import NOT_PRIVATE, Guarantee
from .neighbouring_pair import NeighbouringPair

__all__ = ["PresenceMean", "entries"]


@dataclass(frozen=True)
class PresenceMean:
    """Noisy mean of the present records, output ``(m, 1)``.

    Parameters
    ----------
    epsilon : float
        The claimed ε.
    records : int
        n, the table size.
    count : {"noisy", "true"}
        ``"noisy"``: (S + Lap(2/ε)) / max(C + Lap(2/ε), 1), the ε split evenly between sum and
        count (basic composition, Dwork-Roth 2014 Thm 3.16, then post-processing).
        ``"true"`` (the bug): (S + Lap(1/ε)) / max(C, 1): the division by the exact count
        is treated as post-processing although C is private.
    """

    epsilon: float
    records: int
    count: str = "noisy"

    def __post_init__(self):
        check_positive(self.epsilon, "epsilon")
        check_int(self.records, "records", minimum=1)
        check_choice(self.count, "count", ("noisy", "true"))

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=2)
        present = dbs[:, :, 1]
        if not np.all((present == 0.0) | (present == 1.0)):
            raise InputError("argument 'dbs' must have the 'present' column (attribute 1) in {0, 1}")
        rng = as_generator(rng)
        m = dbs.shape[0]
        total = np.sum(dbs[:, :, 0] * present, axis=1)
        count = present.sum(axis=1)
        if self.count == "noisy":
            noisy_total = total + rng.laplace(0.0, 2.0 / self.epsilon, size=m)
            noisy_count = count + rng.laplace(0.0, 2.0 / self.epsilon, size=m)
            return (noisy_total / np.maximum(noisy_count, 1.0))[:, None]
        noisy_total = total + rng.laplace(0.0, 1.0 / self.epsilon, size=m)
        return (noisy_total / np.maximum(count, 1.0))[:, None]


def entries(epsilon: float = 1.0) -> list:
    """The add/remove mean entries."""
    records = 3
    first = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    second = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    pair = NeighbouringPair(first, second, why="a record of value 0 is added: the sum stays 0, the count "
                            "goes 2 -> 3, so a true-count mean is Lap(1/ε)/2 vs Lap(1/ε)/3, whose "
                            "density ratio is unbounded in the tails")
    neighbouring = "add/remove: one row's 'present' bit flips (rows are (value in [0,1], present in {0,1}))"
    encoding = "the noisy mean, one column"
    return [
        CatalogEntry(
            name="mean_noisy_count",
            description="noisy sum / max(noisy count, 1), Lap(2/ε) on each",
            mechanism=PresenceMean(epsilon, records, "noisy"), output_dim=1, output_encoding=encoding,
            claimed=Guarantee("dp", epsilon, note="basic composition of two ε/2 Laplace releases"),
            true=Guarantee("dp", epsilon, note="an upper bound: composition plus post-processing"),
            buggy=False, neighbouring=neighbouring, pairs=(pair,),
            source="Dwork & Roth (2014) Thm 3.6 and 3.16"),
        CatalogEntry(
            name="mean_true_count",
            description="noisy sum / exact count: the wrong-count bug (the count is not privatised)",
            mechanism=PresenceMean(epsilon, records, "true"), output_dim=1, output_encoding=encoding,
            claimed=Guarantee("dp", epsilon, note="Lap(1/ε) on the sum, division taken for post-processing"),
            true=NOT_PRIVATE("the exact count sets the noise scale: outputs Lap(1/ε)/c vs Lap(1/ε)/(c+1) "
                             "have an unbounded likelihood ratio"),
            buggy=True, neighbouring=neighbouring, pairs=(pair,),
            source="wrong-count mean bug (DP-testing benchmarks)"),
    ]
