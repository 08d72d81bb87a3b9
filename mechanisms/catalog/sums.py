"""Laplace and Gaussian sums and means of bounded records (with an off-by-one-count bug).

Records are rows in [0, 1]^k and neighbours differ in one record (substitution, n public),
so the column sums have ℓ₁ sensitivity k and ℓ₂ sensitivity √k, and the column means
(sums / n) have sensitivities k/n and √k/n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from estimators.validation import as_generator, check_choice, check_int, check_positive, check_probability
from mechanisms.calibration import classical_gaussian_variance
from mechanisms.dp_curves import gaussian_dp_delta

from .batch import as_database_batch, column_sums
from .entry import CatalogEntry
from .guarantee import Guarantee
from .neighbouring_pair import NeighbouringPair

__all__ = ["NoisySum", "classic_gaussian_sigma", "gaussian_exact_epsilon", "entries"]

NEIGHBOURING = "substitution: one record (row in [0,1]^k) replaced; n is public"
ENCODING = "the k noisy column sums (or means), one per column"


@dataclass(frozen=True)
class NoisySum:
    """Column sums (``mean=False``) or column means (``mean=True``) plus i.i.d. noise.

    Parameters
    ----------
    noise : {"laplace", "gaussian"}
        Laplace with scale b = ``scale`` or Gaussian with standard deviation σ = ``scale``.
    scale : float
        The noise scale, already calibrated by the caller.
    records, attributes : int
        n and k of the accepted databases.
    mean : bool
        Divide the sums by the public record count n.
    """

    noise: str
    scale: float
    records: int
    attributes: int
    mean: bool = False

    def __post_init__(self):
        check_choice(self.noise, "noise", ("laplace", "gaussian"))
        check_positive(self.scale, "scale")
        check_int(self.records, "records", minimum=1)
        check_int(self.attributes, "attributes", minimum=1)

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=self.attributes)
        rng = as_generator(rng)
        values = column_sums(dbs) / (self.records if self.mean else 1.0)
        if self.noise == "laplace":
            return values + rng.laplace(0.0, self.scale, size=values.shape)
        return values + rng.normal(0.0, self.scale, size=values.shape)


def classic_gaussian_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    """σ = Δ₂ √(2 ln(1.25/δ)) / ε of the classic Gaussian mechanism, (ε, δ)-DP for ε ≤ 1.

    Dwork and Roth (2014), Theorem A.1, via
    :func:`mechanisms.calibration.classical_gaussian_variance`.
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    return math.sqrt(classical_gaussian_variance(epsilon, delta, check_positive(l2_sensitivity, "l2_sensitivity")))


def gaussian_exact_epsilon(delta: float, sigma: float, l2_sensitivity: float) -> float:
    """The smallest ε with δ(ε) ≤ ``delta`` for the Gaussian mechanism.

    Inverts the exact privacy profile of Balle and Wang (2018), Theorem 8
    (:func:`mechanisms.dp_curves.gaussian_dp_delta`), which decreases in ε, by bracketing.
    """
    delta = check_probability(delta, "delta")
    if gaussian_dp_delta(0.0, sigma, l2_sensitivity) <= delta:
        return 0.0
    upper = 1.0
    while gaussian_dp_delta(upper, sigma, l2_sensitivity) > delta:
        upper *= 2.0
    return brentq(lambda e: gaussian_dp_delta(e, sigma, l2_sensitivity) - delta, 0.0, upper, xtol=1e-12)


def _pair(records: int, attributes: int) -> NeighbouringPair:
    empty = np.zeros((records, attributes))
    full_first = empty.copy()
    full_first[0] = 1.0
    return NeighbouringPair(empty, full_first, why="record 0 changes from all zeros to all ones: "
                            "every column moves by 1, the largest shift in every norm")


def entries(epsilon: float = 1.0, gaussian_epsilon: float = 0.5, delta: float = 1e-5) -> list:
    """The sum and mean entries at the given parameters."""
    records, attributes = 3, 2
    sum_pair = _pair(records, attributes)
    mean_records = 4
    mean_pair = _pair(mean_records, 1)
    out = []

    l1 = float(attributes)
    out.append(CatalogEntry(
        name="laplace_sum", description=f"column sums of {records}x{attributes} records in [0,1] plus Lap(k/ε)",
        mechanism=NoisySum("laplace", l1 / epsilon, records, attributes), output_dim=attributes,
        output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="Laplace mechanism, Dwork-Roth (2014) Thm 3.6, ℓ₁ sensitivity k"),
        true=Guarantee("dp", epsilon, note="tight: the pair shifts every column by 1"),
        buggy=False, neighbouring=NEIGHBOURING, pairs=(sum_pair,), source="Dwork & Roth (2014) Thm 3.6"))

    l2 = math.sqrt(attributes)
    sigma = classic_gaussian_sigma(gaussian_epsilon, delta, l2)
    exact = gaussian_exact_epsilon(delta, sigma, l2)
    out.append(CatalogEntry(
        name="gaussian_sum",
        description=f"column sums of {records}x{attributes} records in [0,1] plus N(0, σ²), classic σ",
        mechanism=NoisySum("gaussian", sigma, records, attributes), output_dim=attributes,
        output_encoding=ENCODING,
        claimed=Guarantee("dp", gaussian_epsilon, delta, note="classic calibration, Dwork-Roth (2014) Thm A.1"),
        true=Guarantee("dp", exact, delta, note="exact: Balle-Wang (2018) Thm 8 profile inverted at δ"),
        buggy=False, neighbouring=NEIGHBOURING, pairs=(sum_pair,), source="Dwork & Roth (2014) Thm A.1"))

    out.append(CatalogEntry(
        name="laplace_mean", description=f"mean of {mean_records} values in [0,1] plus Lap(1/(nε))",
        mechanism=NoisySum("laplace", 1.0 / (mean_records * epsilon), mean_records, 1, mean=True),
        output_dim=1, output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="Laplace mechanism, sensitivity 1/n"),
        true=Guarantee("dp", epsilon, note="tight on the pair"),
        buggy=False, neighbouring=NEIGHBOURING, pairs=(mean_pair,), source="Dwork & Roth (2014) Thm 3.6"))

    mean_sigma = classic_gaussian_sigma(gaussian_epsilon, delta, 1.0 / mean_records)
    out.append(CatalogEntry(
        name="gaussian_mean", description=f"mean of {mean_records} values in [0,1] plus N(0, σ²), classic σ",
        mechanism=NoisySum("gaussian", mean_sigma, mean_records, 1, mean=True), output_dim=1,
        output_encoding=ENCODING,
        claimed=Guarantee("dp", gaussian_epsilon, delta, note="classic calibration, Dwork-Roth (2014) Thm A.1"),
        true=Guarantee("dp", gaussian_exact_epsilon(delta, mean_sigma, 1.0 / mean_records), delta,
                       note="exact: Balle-Wang (2018) Thm 8 profile inverted at δ"),
        buggy=False, neighbouring=NEIGHBOURING, pairs=(mean_pair,), source="Dwork & Roth (2014) Thm A.1"))

    small = 2  # the off-by-one error matters most for small n: true ε = ε (n+1)/n
    out.append(CatalogEntry(
        name="mean_off_by_one_count",
        description=f"mean of {small} values in [0,1] plus Lap(1/((n+1)ε)): the noise is calibrated "
                    "to a record count one too large",
        mechanism=NoisySum("laplace", 1.0 / ((small + 1) * epsilon), small, 1, mean=True), output_dim=1,
        output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="as if the sensitivity were 1/(n+1)"),
        true=Guarantee("dp", epsilon * (small + 1) / small,
                       note="Laplace mechanism with scale b: exactly (1/n)/b-DP = ε(n+1)/n"),
        buggy=True, neighbouring=NEIGHBOURING, pairs=(_pair(small, 1),),
        source="wrong-count mean bug (DP-testing benchmarks)"))
    return out
