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

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_generator, check_finite_number, check_int, check_positive

from .batch import as_database_batch, column_sums
from .entry import CatalogEntry
from .guarantee import NOT_PRIVATE, Guarantee
from .neighbouring_pair import NeighbouringPair

__all__ = ["SparseVector", "VARIANTS", "entries"]

ABOVE, BELOW, NOT_ANSWERED = 1.0, 0.0, -1.0


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
class SparseVector:
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
        check_positive(self.epsilon, "epsilon")
        check_int(self.records, "records", minimum=1)
        check_int(self.queries, "queries", minimum=1)
        check_finite_number(self.threshold, "threshold")
        check_int(self.cutoff, "cutoff", minimum=1)

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
        eps1 = spec.epsilon1_share * self.epsilon
        eps2 = self.epsilon - eps1
        rho_scale = (c if spec.threshold_scale_times_c else 1.0) / eps1
        nu_scale = spec.query_noise_c_factor * (c if spec.query_noise_uses_c else 1.0) / eps2

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
            released[newly_above, i] = noisy[newly_above]
            if spec.redraw_threshold:
                rho = np.where(newly_above, rng.laplace(0.0, rho_scale, size=m), rho)
            if spec.cutoff:
                tops += newly_above
                answered &= tops < c
        if spec.release_value:
            return np.concatenate([indicators, released], axis=1)
        return indicators


def _true_guarantee(variant: int, epsilon: float, cutoff: int) -> Guarantee:
    if variant in (1, 2):
        return Guarantee("dp", epsilon, note=f"Lyu et al. (2017) Table 1: Alg. {variant} is ε-DP")
    if variant == 4:
        return Guarantee("dp", (1 + 6 * cutoff) / 4 * epsilon,
                         note="Lyu et al. (2017) Table 1: ((1+6c)/4)ε-DP, an upper bound; not ε-DP")
    reasons = {
        3: "releasing q_i + ν_i on ⊤ leaks the answers (Lyu et al. 2017 Table 1: ∞-DP)",
        5: "without query noise the ⊤/⊥ pattern compares answers exactly: ⊤⊥⊤⊥⊤ is impossible on "
           "equal answers and likely on [2,0,2,0,2] (Lyu et al. 2017 Table 1: ∞-DP)",
        6: "no cutoff: the privacy loss grows without bound in the number of queries "
           "(Lyu et al. 2017 Table 1: ∞-DP)",
    }
    return NOT_PRIVATE(reasons[variant])


def exposing_pair() -> NeighbouringPair:
    """Answers [1,1,1,1,1] vs [2,0,2,0,2] (StatDP style), n = 2 records, k = 5 queries."""
    first = np.array([[1.0, 0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0, 0.0]])
    second = np.array([[1.0, 0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0, 1.0]])
    return NeighbouringPair(first, second, why="answers [1,1,1,1,1] vs [2,0,2,0,2]: record 1 moves half the "
                            "answers up and half down, against one shared noisy threshold")


def entries(epsilon: float = 1.0, threshold: float = 1.0, cutoff: int = 1) -> list:
    """The six sparse vector entries on the exposing pair."""
    pair = exposing_pair()
    records, queries = pair.record_shape
    out = []
    for variant, spec in VARIANTS.items():
        mech = SparseVector(variant, epsilon, records, queries, threshold, cutoff)
        encoding = "per query 1.0 = ⊤ (above), 0.0 = ⊥, -1.0 = not answered after the cutoff"
        if spec.release_value:
            encoding += "; then per query the released noisy answer (0.0 where none)"
        true = _true_guarantee(variant, epsilon, cutoff)
        out.append(CatalogEntry(
            name=f"svt{variant}",
            description=f"sparse vector, {spec.source}, T = {threshold:g}, c = {cutoff}"
                        + ("" if spec.cutoff else " (ignored: no cutoff)"),
            mechanism=mech, output_dim=mech.output_dim, output_encoding=encoding,
            claimed=Guarantee("dp", epsilon, note=f"claimed by {spec.source.split(',')[0]}"),
            true=true, buggy=variant not in (1, 2),
            neighbouring="substitution: one record (row in [0,1]^k) replaced; every answer moves by at most 1",
            pairs=(pair,), source=spec.source))
    return out
