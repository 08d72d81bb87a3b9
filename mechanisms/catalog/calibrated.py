"""Mechanisms calibrated for ε-MI DP and ε-MI Pufferfish privacy (ε in nats).

The noise scales come from :mod:`mechanisms.calibration` (the Pufferfish/MI paper, Nuradha and
Goldfeld, Pufferfish Privacy: An Information-Theoretic Study (IEEE Transactions on Information
Theory, 2023)): Corollary 2 (Laplace, MI-DP, ℓ₁ form), Corollary 3 (Gaussian, MI-DP, ℓ₂ form),
Theorem 3 (Laplace, MI-PP) and Theorem 4 (Gaussian, MI-PP). The claimed guarantee is the
theorem's; so is the true one (each theorem is an upper bound on the mutual information, so
these entries are not buggy). Each entry's ``source`` cites its theorem.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.calibration import gaussian_mi_dp, gaussian_mi_pp, laplace_mi_dp, laplace_mi_pp

from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.papers import PUFFERFISH
from mechanisms.catalog.sums import NoisySum

__all__ = ["FACTORIES"]

SUM_NEIGHBOURING = "substitution: one record (row in [0,1]^k) replaced; n is public"
# Θ for the MI-PP entries: every product-Bernoulli prior on n bit records; secret g = record 0,
# no public part w. Then Var(count) = Σ θ_i(1 − θ_i) ≤ n/4, attained at θ_i = 1/2.
PP_NEIGHBOURING = ("MI-PP: secret g = record 0, no public part, Θ = all product-Bernoulli priors on "
                   "the n bit records (the pair's prior is a member)")


def _sum_entry(name, calibration, records, attributes, pair, theorem):
    return CatalogEntry(
        name=name,
        description=f"column sums of {records}x{attributes} records in [0,1] plus {calibration.noise} noise "
                    f"calibrated for {calibration.epsilon:g}-{calibration.notion.upper()} ({calibration.rule})",
        mechanism=NoisySum(calibration.noise, calibration.scale, records, attributes), output_dim=attributes,
        output_encoding="the k noisy column sums",
        claimed=Guarantee(calibration.notion, calibration.epsilon, note=theorem),
        true=Guarantee(calibration.notion, calibration.epsilon, note=f"upper bound: {theorem}"), true_exact=False,
        buggy=False,
        neighbouring=SUM_NEIGHBOURING if calibration.notion == "mi-dp" else PP_NEIGHBOURING,
        # an MI guarantee is not a likelihood-ratio bound: no pair ε is computed for these entries
        pairs=(pair,), source=PUFFERFISH.cite(theorem), pair_epsilon=None)


RECORDS, ATTRIBUTES, BITS = 3, 2, 4


def _sum_pair() -> NeighbouringPair:
    empty = np.zeros((RECORDS, ATTRIBUTES))
    full_first = empty.copy()
    full_first[0] = 1.0
    return NeighbouringPair(empty, full_first, why="record 0 changes from all zeros to all ones")


def _bit_pair() -> NeighbouringPair:
    bit_first = np.zeros((BITS, 1))
    bit_first[1:3] = 1.0
    bit_second = bit_first.copy()
    bit_second[0] = 1.0
    return NeighbouringPair(bit_first, bit_second, why="record 0 (the secret) is 0 or 1")


def laplace_mi_dp_sum(*, epsilon: float = 0.5) -> CatalogEntry:
    """Laplace sums calibrated for ε-MI DP (Corollary 2)."""
    return _sum_entry("laplace_mi_dp_sum", laplace_mi_dp(epsilon, l1_sensitivity=float(ATTRIBUTES), dim=ATTRIBUTES),
                      RECORDS, ATTRIBUTES, _sum_pair(), "Corollary 2 (ℓ₁ form)")


def gaussian_mi_dp_sum(*, epsilon: float = 0.5) -> CatalogEntry:
    """Gaussian sums calibrated for ε-MI DP (Corollary 3)."""
    return _sum_entry("gaussian_mi_dp_sum",
                      gaussian_mi_dp(epsilon, l2_sensitivity=math.sqrt(ATTRIBUTES), dim=ATTRIBUTES),
                      RECORDS, ATTRIBUTES, _sum_pair(), "Corollary 3 (ℓ₂ form)")


def laplace_mi_pp_count(*, epsilon: float = 0.5) -> CatalogEntry:
    """Laplace count calibrated for ε-MI PP (Theorem 3)."""
    return _sum_entry("laplace_mi_pp_count", laplace_mi_pp(epsilon, cond_std=[math.sqrt(BITS / 4.0)]),
                      BITS, 1, _bit_pair(), "Theorem 3 with E[√Var(count)] ≤ √(n/4)")


def gaussian_mi_pp_count(*, epsilon: float = 0.5) -> CatalogEntry:
    """Gaussian count calibrated for ε-MI PP (Theorem 4)."""
    return _sum_entry("gaussian_mi_pp_count", gaussian_mi_pp(epsilon, [BITS / 4.0]),
                      BITS, 1, _bit_pair(), "Theorem 4 with Var(count) ≤ n/4")


FACTORIES = {f.__name__: f for f in (laplace_mi_dp_sum, gaussian_mi_dp_sum, laplace_mi_pp_count,
                                     gaussian_mi_pp_count)}
