"""The sparse vector technique, variants 1–6 of Lyu, Su and Li (2017).

Lyu, Su and Li, "Understanding the Sparse Vector Technique for Differential Privacy",
PVLDB 10(6), 2017, Table 1 (Δ the query sensitivity, c the cutoff, ε₂ = ε − ε₁):

==========  ======  ============  ===============  ===========================  ==========
variant     ε₁      threshold ρ   query noise ν    other                        privacy
==========  ======  ============  ===============  ===========================  ==========
1 (Alg. 1)  ε/2     Lap(Δ/ε₁)     Lap(2cΔ/ε₂)      stop after c ⊤               ε-DP
2 (Alg. 2)  ε/2     Lap(cΔ/ε₁)    Lap(2cΔ/ε₂)      redraw ρ after each ⊤        ε-DP
3 (Alg. 3)  ε/2     Lap(Δ/ε₁)     Lap(cΔ/ε₂)       releases q + ν on ⊤          ∞-DP
4 (Alg. 4)  ε/4     Lap(Δ/ε₁)     Lap(Δ/ε₂)        stop after c ⊤               ((1+6c)/4)ε-DP
5 (Alg. 5)  ε/2     Lap(Δ/ε₁)     none             no cutoff                    ∞-DP
6 (Alg. 6)  ε/2     Lap(Δ/ε₁)     Lap(Δ/ε₂)        no cutoff                    ∞-DP
==========  ======  ============  ===============  ===========================  ==========

The queries are the k column sums of records in [0, 1]^k, so Δ = 1 under substitution.

The paper itself is not in ``shared/papers``. The ε₁ shares, the threshold and query-noise
scales, the threshold redraw (Alg. 2), the value release (Alg. 3), the cutoffs and the ``≥``
comparison were checked against an independent implementation of the same six algorithms,
DP-Sniper's (Bichsel, Steffen, Bogunovic and Vechev, IEEE S&P 2021; ``eth-sri/dp-sniper``,
``dpsniper/mechanisms/sparse_vector_technique.py``): they agree. The privacy column is from
Lyu et al. Table 1 and was not cross-checked there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_generator, check_finite_number, check_int, check_positive

from mechanisms.snapping import snap
from mechanisms.catalog.batch import VectorizedMechanism, as_database_batch, column_sums
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import NOT_PRIVATE, Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.catalog.sparse_vector_exposure import svt_log_ratio_extremes

__all__ = ["FACTORIES", "SparseVector", "VARIANTS", "check_svt_parameters", "exposing_pair", "extremes_epsilon", "pair_answers",
           "true_guarantee"]

ABOVE, BELOW, NOT_ANSWERED = 1.0, 0.0, -1.0


def check_svt_parameters(svt) -> None:
    """Check the parameters every sparse-vector mechanism shares (ε, records, queries, threshold, cutoff)."""
    check_positive(svt.epsilon, "epsilon")
    check_int(svt.records, "records", minimum=1)
    check_int(svt.queries, "queries", minimum=1)
    check_finite_number(svt.threshold, "threshold")
    check_int(svt.cutoff, "cutoff", minimum=1)


@dataclass(frozen=True)
class _Variant:
    epsilon1_share: float        # ε₁ / ε
    threshold_scale_times_c: bool  # ρ ~ Lap(cΔ/ε₁) rather than Lap(Δ/ε₁)
    query_noise_c_factor: float  # ν ~ Lap(factor · Δ/ε₂), factor in units of c; 0 = no noise
    query_noise_uses_c: bool
    redraw_threshold: bool
    release_value: bool
    cutoff: bool
    source: str


VARIANTS = {
    1: _Variant(0.5, False, 2.0, True, False, False, True, "Lyu, Su & Li (2017) Alg. 1"),
    2: _Variant(0.5, True, 2.0, True, True, False, True, "Dwork & Roth (2014) Alg. 2, as Lyu et al. (2017) Alg. 2"),
    3: _Variant(0.5, False, 1.0, True, False, True, True, "Roth (2011) lecture notes, as Lyu et al. (2017) Alg. 3"),
    4: _Variant(0.25, False, 1.0, False, False, False, True, "Lee & Clifton (2014), as Lyu et al. (2017) Alg. 4"),
    5: _Variant(0.5, False, 0.0, False, False, False, False, "Stoddard et al. (2014), as Lyu et al. (2017) Alg. 5"),
    6: _Variant(0.5, False, 1.0, False, False, False, False, "Chen et al. (2015), as Lyu et al. (2017) Alg. 6"),
}


@dataclass(frozen=True)
class SparseVector(VectorizedMechanism):
    """Sparse vector variant ``variant`` over the k column-sum queries.

    Output ``(m, k)``: per query 1.0 (⊤, above the noisy threshold), 0.0 (⊥) or -1.0
    (not answered: the cutoff was reached). Variant 3 outputs ``(m, 2k)``: those k
    indicators followed by the k released noisy answers q_i + ν_i (0.0 where none).

    Parameters
    ----------
    variant : int
        1–6, see the module table.
    epsilon : float
        The ε the variant is claimed to satisfy.
    records, queries : int
        n and k of the accepted databases.
    threshold : float
        The public threshold T (the same for every query).
    cutoff : int
        c, the number of ⊤ after which variants 1–4 stop (ignored by 5 and 6).
    """

    variant: int
    epsilon: float
    records: int
    queries: int
    threshold: float = 1.0
    cutoff: int = 1

    def __post_init__(self):
        if check_int(self.variant, "variant") not in VARIANTS:
            raise InputError(f"argument 'variant' must be one of 1..6, got {self.variant!r}")
        check_svt_parameters(self)

    @property
    def output_dim(self) -> int:
        """k, or 2k for variant 3."""
        return 2 * self.queries if VARIANTS[self.variant].release_value else self.queries

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=self.queries)
        rng = as_generator(rng)
        spec = VARIANTS[self.variant]
        answers = column_sums(dbs)
        m, c = answers.shape[0], self.cutoff
        rho_scale, nu_scale = self.scales
        rho = rng.laplace(0.0, rho_scale, size=m)
        indicators = np.full((m, self.queries), NOT_ANSWERED)
        released = np.zeros((m, self.queries))
        answered = np.ones(m, dtype=bool)
        tops = np.zeros(m)
        # The stream is sequential; each step is vectorised over the m databases.
        for i in range(self.queries):
            noisy = answers[:, i] + (rng.laplace(0.0, nu_scale, size=m) if nu_scale > 0 else 0.0)
            above = noisy >= self.threshold + rho
            indicators[answered, i] = np.where(above, ABOVE, BELOW)[answered]
            newly_above = answered & above
            released[newly_above, i] = snap(noisy[newly_above])  # rounded to 2^-32 (:mod:`.snapping`)
            if spec.redraw_threshold:
                rho = np.where(newly_above, rng.laplace(0.0, rho_scale, size=m), rho)
            if spec.cutoff:
                tops += newly_above
                answered &= tops < c
        if spec.release_value:
            return np.concatenate([indicators, released], axis=1)
        return indicators

    @property
    def scales(self) -> tuple[float, float]:
        """(threshold noise scale, query noise scale), as :meth:`__call__` draws them (0: no query noise)."""
        spec, c = VARIANTS[self.variant], self.cutoff
        eps1 = spec.epsilon1_share * self.epsilon
        eps2 = self.epsilon - eps1
        rho_scale = (c if spec.threshold_scale_times_c else 1.0) / eps1
        return rho_scale, spec.query_noise_c_factor * (c if spec.query_noise_uses_c else 1.0) / eps2

    def log_ratio_extremes(self, first_answers, second_answers):
        """(sup log p/q, sup log q/p) of the outputs on two answer vectors; ``None`` if not computed."""
        spec = VARIANTS[self.variant]
        rho_scale, nu_scale = self.scales
        return svt_log_ratio_extremes(first_answers, second_answers, variant=self.variant,
                                      threshold=self.threshold, rho_scale=rho_scale, nu_scale=nu_scale,
                                      cutoff=self.cutoff if spec.cutoff else None, redraw=spec.redraw_threshold)


def pair_answers(pair: NeighbouringPair) -> tuple[np.ndarray, np.ndarray]:
    """The query answers (column sums) of the pair's two databases."""
    return column_sums(pair.first[None])[0], column_sums(pair.second[None])[0]


def extremes_epsilon(mechanism):
    """``pair -> ε``: the larger of the two one-sided extremes, ``None`` where not computed."""
    def attained(pair):
        extremes = mechanism.log_ratio_extremes(*pair_answers(pair))
        return None if extremes is None else max(extremes)
    return attained


def true_guarantee(variant: int, epsilon: float, queries: int, cutoff: int, nu_scale: float) -> tuple:
    """(the true guarantee of the k-query instance, whether its ε is exact).

    Besides Lyu et al.'s Table 1, every variant with query noise ν ~ Lap(b) is (k/b)-DP on k
    queries with Δ = 1: with the threshold noise held fixed, each of the at most k comparisons
    (and a released q_i + ν_i) has probability (density) log-(1/b)-Lipschitz in q_i, because the
    Laplace CDF, survival function and density are (Lyu et al. 2017, proof of Theorem 2, without
    the cutoff). That bound is finite for variants 3 and 6, which the table lists as ∞-DP because
    their loss grows with k.
    """
    per_query = math.inf if nu_scale == 0.0 else queries / nu_scale
    if variant in (1, 2):
        bound, note = min(epsilon, per_query), f"Lyu et al. (2017) Table 1: Alg. {variant} is ε-DP"
    elif variant == 4:
        bound = min((1 + 6 * cutoff) / 4 * epsilon, per_query)
        note = "Lyu et al. (2017) Table 1: ((1+6c)/4)ε-DP, and k/b with ν ~ Lap(b); not ε-DP"
    elif variant == 5:
        return NOT_PRIVATE("without query noise the ⊤/⊥ pattern compares answers exactly: ⊤⊥⊤⊥⊤ is impossible "
                           "on equal answers and likely on [2,0,2,0,2] (Lyu et al. 2017 Table 1: ∞-DP)"), True
    else:
        bound = per_query
        note = (f"k/b for k = {queries} queries with ν ~ Lap(b) (log-Lipschitz Laplace laws, threshold noise held "
                f"fixed); ∞ as k grows (Lyu et al. 2017 Table 1: Alg. {variant} is ∞-DP)")
    return Guarantee("dp", bound, note="an upper bound: " + note), False


def exposing_pair(queries: int = 5) -> NeighbouringPair:
    """Answers [1,1,1,...] vs [2,0,2,0,...] (StatDP style), n = 2 records, k queries."""
    ones_zeros = np.array([float(i % 2 == 0) for i in range(queries)])
    first = np.stack([ones_zeros, 1.0 - ones_zeros])
    second = np.stack([ones_zeros, ones_zeros])
    return NeighbouringPair(first, second, why="answers [1,1,1,...] vs [2,0,2,...]: record 1 moves half the "
                            "answers up and half down, against one shared noisy threshold")


NEIGHBOURING = "substitution: one record (row in [0,1]^k) replaced; every answer moves by at most 1"
ENCODING = "per query 1.0 = ⊤ (above), 0.0 = ⊥, -1.0 = not answered after the cutoff"


def _entry(variant: int, epsilon: float, queries: int, threshold: float, cutoff: int) -> CatalogEntry:
    spec = VARIANTS[variant]
    pair = exposing_pair(check_int(queries, "queries", minimum=1))
    records, _ = pair.record_shape
    mech = SparseVector(variant, epsilon, records, queries, threshold, cutoff)
    true, exact = true_guarantee(variant, epsilon, queries, cutoff, mech.scales[1])
    return CatalogEntry(
        name=f"svt{variant}",
        description=f"sparse vector, {spec.source}, {queries} queries, T = {threshold:g}, c = {cutoff}"
                    + ("" if spec.cutoff else " (ignored: no cutoff)"),
        mechanism=mech, output_dim=mech.output_dim,
        output_encoding=ENCODING + ("; then per query the released noisy answer (0.0 where none)"
                                    if spec.release_value else ""),
        claimed=Guarantee("dp", epsilon, note=f"claimed by {spec.source.split(',')[0]}"),
        true=true, true_exact=exact, buggy=variant not in (1, 2), neighbouring=NEIGHBOURING,
        pairs=(pair,), source=spec.source, pair_epsilon=extremes_epsilon(mech))


def svt1(*, epsilon: float = 1.0, queries: int = 5, threshold: float = 1.0, cutoff: int = 1) -> CatalogEntry:
    """Lyu et al. Alg. 1."""
    return _entry(1, epsilon, queries, threshold, cutoff)


def svt2(*, epsilon: float = 1.0, queries: int = 5, threshold: float = 1.0, cutoff: int = 1) -> CatalogEntry:
    """Lyu et al. Alg. 2 (threshold redrawn after each ⊤)."""
    return _entry(2, epsilon, queries, threshold, cutoff)


def svt3(*, epsilon: float = 1.0, queries: int = 5, threshold: float = 1.0, cutoff: int = 1) -> CatalogEntry:
    """Lyu et al. Alg. 3 (releases the noisy answer on ⊤)."""
    return _entry(3, epsilon, queries, threshold, cutoff)


def svt4(*, epsilon: float = 1.0, queries: int = 5, threshold: float = 1.0, cutoff: int = 1) -> CatalogEntry:
    """Lyu et al. Alg. 4 (ε/4 for the threshold, too little query noise)."""
    return _entry(4, epsilon, queries, threshold, cutoff)


def svt5(*, epsilon: float = 1.0, queries: int = 5, threshold: float = 1.0) -> CatalogEntry:
    """Lyu et al. Alg. 5 (no query noise, no cutoff)."""
    return _entry(5, epsilon, queries, threshold, 1)


def svt6(*, epsilon: float = 1.0, queries: int = 5, threshold: float = 1.0) -> CatalogEntry:
    """Lyu et al. Alg. 6 (no cutoff)."""
    return _entry(6, epsilon, queries, threshold, 1)


FACTORIES = {f.__name__: f for f in (svt1, svt2, svt3, svt4, svt5, svt6)}
