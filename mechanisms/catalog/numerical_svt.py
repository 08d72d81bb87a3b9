"""Numerical sparse vector (Wang, Ding, Wang, Kifer and Zhang, PLDI 2019; Lyu, Su and Li 2017, Alg. 7 form).

Threshold noise ρ ~ Lap(3Δ/ε), comparison noise ν_i ~ Lap(6cΔ/ε); on ⊤ (q_i + ν_i ≥ T + ρ) the
mechanism releases a *fresh* noisy answer q_i + Lap(3cΔ/ε) and stops after c ⊤. The budget is
ε/3 for the threshold, ε/3 for the comparisons and ε/3 for the releases, so it is ε-DP (proved
with shadow execution by Wang et al. 2019; the DP-Sniper benchmark, Bichsel et al. 2021, uses it
as a correct mechanism). The queries are the k column sums of records in [0, 1]^k (Δ = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import as_generator, check_int

from mechanisms.catalog.batch import VectorizedMechanism, as_database_batch, column_sums
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.catalog.sparse_vector import ENCODING, NEIGHBOURING, check_svt_parameters, exposing_pair, extremes_epsilon
from mechanisms.catalog.sparse_vector_exposure import svt_log_ratio_extremes
from mechanisms.snapping import snap

__all__ = ["FACTORIES", "NumericalSparseVector"]


@dataclass(frozen=True)
class NumericalSparseVector(VectorizedMechanism):
    """Numerical SVT over the k column sums; output ``(m, 2k)``: k indicators (1/0/-1) then k released values."""

    epsilon: float
    records: int
    queries: int
    threshold: float = 1.0
    cutoff: int = 1

    def __post_init__(self):
        check_svt_parameters(self)

    @property
    def output_dim(self) -> int:
        return 2 * self.queries

    @property
    def scales(self) -> tuple[float, float, float]:
        """(threshold, comparison, release) noise scales: 3/ε, 6c/ε, 3c/ε."""
        return 3.0 / self.epsilon, 6.0 * self.cutoff / self.epsilon, 3.0 * self.cutoff / self.epsilon

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=self.queries)
        rng = as_generator(rng)
        answers = column_sums(dbs)
        m = answers.shape[0]
        rho_scale, nu_scale, release_scale = self.scales
        rho = rng.laplace(0.0, rho_scale, size=m)
        indicators = np.full((m, self.queries), -1.0)
        released = np.zeros((m, self.queries))
        answered = np.ones(m, dtype=bool)
        tops = np.zeros(m)
        for i in range(self.queries):  # sequential stream, vectorised over the m databases
            above = answers[:, i] + rng.laplace(0.0, nu_scale, size=m) >= self.threshold + rho
            fresh = snap(answers[:, i] + rng.laplace(0.0, release_scale, size=m))
            indicators[answered, i] = np.where(above, 1.0, 0.0)[answered]
            newly_above = answered & above
            released[newly_above, i] = fresh[newly_above]
            tops += newly_above
            answered &= tops < self.cutoff
        return np.concatenate([indicators, released], axis=1)

    def log_ratio_extremes(self, first_answers, second_answers):
        """(sup log p/q, sup log q/p) of the outputs on two answer vectors; ``None`` if not computed."""
        rho_scale, nu_scale, release_scale = self.scales
        return svt_log_ratio_extremes(first_answers, second_answers, variant=0, threshold=self.threshold,
                                      rho_scale=rho_scale, nu_scale=nu_scale, cutoff=self.cutoff,
                                      value_scale=release_scale)


def numerical_svt(*, epsilon: float = 1.0, queries: int = 5, threshold: float = 1.0, cutoff: int = 1) -> CatalogEntry:
    """Numerical sparse vector on the StatDP exposing pair."""
    pair = exposing_pair(check_int(queries, "queries", minimum=1))
    mech = NumericalSparseVector(epsilon, pair.record_shape[0], queries, threshold, cutoff)
    return CatalogEntry(
        name="numerical_svt",
        description=f"numerical sparse vector, {queries} queries, T = {threshold:g}, c = {cutoff}: "
                    "fresh noise on each released answer",
        mechanism=mech, output_dim=mech.output_dim,
        output_encoding=ENCODING + "; then per query the released fresh noisy answer (0.0 where none)",
        claimed=Guarantee("dp", epsilon, note="Wang et al. (2019): ε/3 threshold, ε/3 comparisons, ε/3 releases"),
        true=Guarantee("dp", epsilon, note="an upper bound: Wang et al. (2019)"), true_exact=False,
        buggy=False, neighbouring=NEIGHBOURING, pairs=(pair,),
        source="Wang, Ding, Wang, Kifer & Zhang (PLDI 2019); DP-Sniper benchmark (Bichsel et al. 2021)",
        pair_epsilon=extremes_epsilon(mech))


FACTORIES = {"numerical_svt": numerical_svt}
