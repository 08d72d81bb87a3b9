"""Mechanisms calibrated for ε-MI DP and ε-MI Pufferfish privacy (ε in nats).

The noise scales come from :mod:`mechanisms.calibration` (the Pufferfish/MI paper,
``papers/pufferfish-mi-privacy.txt``): Corollary 2 (Laplace, MI-DP, ℓ₁ form),
Corollary 3 (Gaussian, MI-DP, ℓ₂ form), Theorem 3 (Laplace, MI-PP) and Theorem 4
(Gaussian, MI-PP). The claimed guarantee is the theorem's; so is the true one (each
theorem is an upper bound on the mutual information, so these entries are not buggy).
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.calibration import gaussian_mi_dp, gaussian_mi_pp, laplace_mi_dp, laplace_mi_pp

from .entry import CatalogEntry
from .guarantee import Guarantee
from .neighbouring_pair import NeighbouringPair
from .sums import NoisySum

__all__ = ["entries"]

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
        true=Guarantee(calibration.notion, calibration.epsilon, note=f"upper bound: {theorem}"),
        buggy=False,
        neighbouring=SUM_NEIGHBOURING if calibration.notion == "mi-dp" else PP_NEIGHBOURING,
        pairs=(pair,), source="Pufferfish/MI paper (papers/pufferfish-mi-privacy.txt)")


def entries(epsilon: float = 0.5) -> list:
    """Laplace and Gaussian MI-DP sums and MI-PP counts at ε nats."""
    records, attributes = 3, 2
    empty = np.zeros((records, attributes))
    full_first = empty.copy()
    full_first[0] = 1.0
    sum_pair = NeighbouringPair(empty, full_first, why="record 0 changes from all zeros to all ones")
    bits = 4
    bit_first = np.zeros((bits, 1))
    bit_first[1:3] = 1.0
    bit_second = bit_first.copy()
    bit_second[0] = 1.0
    bit_pair = NeighbouringPair(bit_first, bit_second, why="record 0 (the secret) is 0 or 1")
    worst_var = bits / 4.0
    return [
        _sum_entry("laplace_mi_dp_sum", laplace_mi_dp(epsilon, l1_sensitivity=float(attributes), dim=attributes),
                   records, attributes, sum_pair, "Corollary 2 (ℓ₁ form)"),
        _sum_entry("gaussian_mi_dp_sum",
                   gaussian_mi_dp(epsilon, l2_sensitivity=math.sqrt(attributes), dim=attributes),
                   records, attributes, sum_pair, "Corollary 3 (ℓ₂ form)"),
        _sum_entry("laplace_mi_pp_count", laplace_mi_pp(epsilon, cond_std=[math.sqrt(worst_var)]),
                   bits, 1, bit_pair, "Theorem 3 with E[√Var(count)] ≤ √(n/4)"),
        _sum_entry("gaussian_mi_pp_count", gaussian_mi_pp(epsilon, [worst_var]),
                   bits, 1, bit_pair, "Theorem 4 with Var(count) ≤ n/4"),
    ]
