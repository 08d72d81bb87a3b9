"""Mechanisms run side by side on the same input (the DP-Sniper benchmark's LaplaceParallel and SVT34Parallel).

Independent mechanisms on the same database compose: the privacy losses add (basic
composition, Dwork and Roth 2014, Thm 3.16), and on a given pair the joint log-likelihood ratio
is the sum of the parts', so the pair attains the sum of the parts' one-sided extremes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import as_generator, check_int, check_positive

from mechanisms.catalog.batch import VectorizedMechanism, as_database_batch, column_sums
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.catalog.sparse_vector import ENCODING, NEIGHBOURING, SparseVector, exposing_pair, extremes_epsilon, true_guarantee
from mechanisms.snapping import snap

__all__ = ["FACTORIES", "ParallelSparseVector", "ReplicatedLaplace"]


@dataclass(frozen=True)
class ReplicatedLaplace(VectorizedMechanism):
    """``copies`` independent Laplace(``scale``) releases of the sum of n values in [0, 1]; output ``(m, copies)``."""

    scale: float
    records: int
    copies: int

    def __post_init__(self):
        check_positive(self.scale, "scale")
        check_int(self.records, "records", minimum=1)
        check_int(self.copies, "copies", minimum=1)

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=1)
        total = column_sums(dbs)  # (m, 1)
        return snap(total + as_generator(rng).laplace(0.0, self.scale, size=(total.shape[0], self.copies)))


@dataclass(frozen=True)
class ParallelSparseVector(VectorizedMechanism):
    """SVT3 and SVT4 with independent noise on the same queries; output: SVT3's 2k columns then SVT4's k."""

    svt3: SparseVector
    svt4: SparseVector

    @property
    def output_dim(self) -> int:
        return self.svt3.output_dim + self.svt4.output_dim

    def __call__(self, dbs, rng=None) -> np.ndarray:
        rng = as_generator(rng)
        return np.concatenate([self.svt3(dbs, rng), self.svt4(dbs, rng)], axis=1)

    def log_ratio_extremes(self, first_answers, second_answers):
        """Sum of the parts' one-sided extremes (independent parts: log ratios add); ``None`` if either is."""
        parts = [mech.log_ratio_extremes(first_answers, second_answers) for mech in (self.svt3, self.svt4)]
        if any(p is None for p in parts):
            return None
        return parts[0][0] + parts[1][0], parts[0][1] + parts[1][1]


def laplace_parallel(*, epsilon: float = 1.0, copies: int = 20, records: int = 3) -> CatalogEntry:
    """``copies`` Laplace releases of one count, each at ε/copies."""
    check_positive(epsilon, "epsilon")
    check_int(copies, "copies", minimum=1)
    check_int(records, "records", minimum=1)
    scale = copies / epsilon
    first = np.zeros((records, 1))
    second = first.copy()
    second[0] = 1.0
    return CatalogEntry(
        name="laplace_parallel",
        description=f"{copies} independent Lap({copies}/ε) releases of the sum of {records} values in [0,1]",
        mechanism=ReplicatedLaplace(scale, records, copies), output_dim=copies,
        output_encoding="the noisy sum, once per copy",
        claimed=Guarantee("dp", epsilon, note="basic composition of copies × (ε/copies), Dwork-Roth (2014) Thm 3.16"),
        true=Guarantee("dp", epsilon, note="exact: every copy's ratio reaches e^(ε/copies) in the same tail"),
        true_exact=True, buggy=False,
        neighbouring="substitution: one record (a value in [0,1]) replaced; the sum moves by at most 1",
        pairs=(NeighbouringPair(first, second, why="record 0 goes 0 -> 1: the sum moves by 1"),),
        source="DP-Sniper benchmark (Bichsel et al. 2021): LaplaceParallel",
        pair_epsilon=lambda pair: float(copies * abs(pair.second.sum() - pair.first.sum()) / scale))


def svt34_parallel(*, epsilon: float = 1.0, queries: int = 5, threshold: float = 1.0, cutoff: int = 1) -> CatalogEntry:
    """SVT3 and SVT4 run side by side, each claimed ε-DP, the pair claimed ε-DP."""
    pair = exposing_pair(check_int(queries, "queries", minimum=1))
    records = pair.record_shape[0]
    svt3 = SparseVector(3, epsilon, records, queries, threshold, cutoff)
    svt4 = SparseVector(4, epsilon, records, queries, threshold, cutoff)
    bound3, _ = true_guarantee(3, epsilon, queries, cutoff, svt3.scales[1])
    bound4, _ = true_guarantee(4, epsilon, queries, cutoff, svt4.scales[1])
    mech = ParallelSparseVector(svt3, svt4)
    return CatalogEntry(
        name="svt34_parallel",
        description=f"SVT3 and SVT4 side by side with independent noise, {queries} queries, T = {threshold:g}, "
                    f"c = {cutoff}",
        mechanism=mech, output_dim=mech.output_dim,
        output_encoding="SVT3's columns (" + ENCODING + "; then the released answers), then SVT4's indicators",
        claimed=Guarantee("dp", epsilon, note="as claimed for each part (DP-Sniper's benchmark)"),
        true=Guarantee("dp", bound3.epsilon + bound4.epsilon,
                       note="an upper bound: the parts' bounds add (basic composition)"), true_exact=False,
        buggy=True, neighbouring=NEIGHBOURING, pairs=(pair,),
        source="DP-Sniper benchmark (Bichsel et al. 2021): SVT34Parallel", pair_epsilon=extremes_epsilon(mech))


FACTORIES = {f.__name__: f for f in (laplace_parallel, svt34_parallel)}
