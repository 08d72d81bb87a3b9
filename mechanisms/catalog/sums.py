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
from mechanisms.claims.dp_curves import gaussian_dp_delta

from mechanisms.catalog.batch import VectorizedMechanism, as_database_batch, column_sums
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.snapping import snap

__all__ = ["FACTORIES", "NoisySum", "classic_gaussian_sigma", "gaussian_exact_epsilon", "gaussian_pair_epsilon",
           "laplace_pair_epsilon"]

NEIGHBOURING = "substitution: one record (row in [0,1]^k) replaced; n is public"
ENCODING = "the k noisy column sums (or means), one per column"


@dataclass(frozen=True)
class NoisySum(VectorizedMechanism):
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
            return snap(values + rng.laplace(0.0, self.scale, size=values.shape))
        return snap(values + rng.normal(0.0, self.scale, size=values.shape))


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
    (:func:`mechanisms.claims.dp_curves.gaussian_dp_delta`), which decreases in ε, by bracketing.
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


def _shift(pair: NeighbouringPair, mean: bool) -> np.ndarray:
    """How far the pair moves the noiseless column sums (or means)."""
    shift = column_sums(pair.second[None])[0] - column_sums(pair.first[None])[0]
    return shift / (pair.record_shape[0] if mean else 1.0)


def laplace_pair_epsilon(scale: float, mean: bool = False):
    """``pair -> ‖shift‖₁ / b``: the ε a pair attains on a Laplace sum (or mean).

    The log density ratio of Lap(a, b) and Lap(a', b) is (|y − a'| − |y − a|)/b, which reaches
    |a − a'|/b beyond both centres; coordinates add (Dwork and Roth 2014, Thm 3.6, proof).
    """
    return lambda pair: float(np.abs(_shift(pair, mean)).sum() / scale)


def gaussian_pair_epsilon(sigma: float, delta: float, mean: bool = False):
    """``pair -> ε(δ)`` of N(a, σ²I) against N(a', σ²I): the exact profile at ‖a − a'‖₂ (Balle-Wang 2018, Thm 8)."""
    def attained(pair):
        distance = float(np.linalg.norm(_shift(pair, mean)))
        return 0.0 if distance == 0.0 else gaussian_exact_epsilon(delta, sigma, distance)
    return attained


def laplace_sum(*, epsilon: float = 1.0, records: int = 3, attributes: int = 2) -> CatalogEntry:
    """Column sums plus Lap(k/ε) per column."""
    check_positive(epsilon, "epsilon")
    l1 = float(attributes)
    scale = l1 / epsilon
    return CatalogEntry(
        name="laplace_sum", description=f"column sums of {records}x{attributes} records in [0,1] plus Lap(k/ε)",
        mechanism=NoisySum("laplace", scale, records, attributes), output_dim=attributes,
        output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="Laplace mechanism, Dwork-Roth (2014) Thm 3.6, ℓ₁ sensitivity k"),
        true=Guarantee("dp", epsilon, note="exact: the pair shifts every column by 1"), true_exact=True,
        buggy=False, neighbouring=NEIGHBOURING, pairs=(_pair(records, attributes),),
        source="Dwork & Roth (2014) Thm 3.6", pair_epsilon=laplace_pair_epsilon(scale))


def gaussian_sum(*, epsilon: float = 0.5, delta: float = 1e-5, records: int = 3, attributes: int = 2) -> CatalogEntry:
    """Column sums plus N(0, σ²) per column, σ by the classic calibration."""
    l2 = math.sqrt(attributes)
    sigma = classic_gaussian_sigma(epsilon, delta, l2)
    return CatalogEntry(
        name="gaussian_sum",
        description=f"column sums of {records}x{attributes} records in [0,1] plus N(0, σ²), classic σ",
        mechanism=NoisySum("gaussian", sigma, records, attributes), output_dim=attributes,
        output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, delta, note="classic calibration, Dwork-Roth (2014) Thm A.1"),
        true=Guarantee("dp", gaussian_exact_epsilon(delta, sigma, l2), delta,
                       note="exact: Balle-Wang (2018) Thm 8 profile inverted at δ"), true_exact=True,
        buggy=False, neighbouring=NEIGHBOURING, pairs=(_pair(records, attributes),),
        source="Dwork & Roth (2014) Thm A.1", pair_epsilon=gaussian_pair_epsilon(sigma, delta))


def laplace_mean(*, epsilon: float = 1.0, records: int = 4) -> CatalogEntry:
    """Mean of n values plus Lap(1/(nε))."""
    check_positive(epsilon, "epsilon")
    check_int(records, "records", minimum=1)
    scale = 1.0 / (records * epsilon)
    return CatalogEntry(
        name="laplace_mean", description=f"mean of {records} values in [0,1] plus Lap(1/(nε))",
        mechanism=NoisySum("laplace", scale, records, 1, mean=True),
        output_dim=1, output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="Laplace mechanism, sensitivity 1/n"),
        true=Guarantee("dp", epsilon, note="exact: the pair moves the mean by 1/n"), true_exact=True,
        buggy=False, neighbouring=NEIGHBOURING, pairs=(_pair(records, 1),), source="Dwork & Roth (2014) Thm 3.6",
        pair_epsilon=laplace_pair_epsilon(scale, mean=True))


def gaussian_mean(*, epsilon: float = 0.5, delta: float = 1e-5, records: int = 4) -> CatalogEntry:
    """Mean of n values plus N(0, σ²), classic σ."""
    check_int(records, "records", minimum=1)
    sigma = classic_gaussian_sigma(epsilon, delta, 1.0 / records)
    return CatalogEntry(
        name="gaussian_mean", description=f"mean of {records} values in [0,1] plus N(0, σ²), classic σ",
        mechanism=NoisySum("gaussian", sigma, records, 1, mean=True), output_dim=1,
        output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, delta, note="classic calibration, Dwork-Roth (2014) Thm A.1"),
        true=Guarantee("dp", gaussian_exact_epsilon(delta, sigma, 1.0 / records), delta,
                       note="exact: Balle-Wang (2018) Thm 8 profile inverted at δ"), true_exact=True,
        buggy=False, neighbouring=NEIGHBOURING, pairs=(_pair(records, 1),), source="Dwork & Roth (2014) Thm A.1",
        pair_epsilon=gaussian_pair_epsilon(sigma, delta, mean=True))


def mean_off_by_one_count(*, epsilon: float = 1.0, records: int = 2) -> CatalogEntry:
    """Mean plus Lap(1/((n+1)ε)): calibrated to a record count one too large (small n shows it most)."""
    check_positive(epsilon, "epsilon")
    check_int(records, "records", minimum=1)
    scale = 1.0 / ((records + 1) * epsilon)
    return CatalogEntry(
        name="mean_off_by_one_count",
        description=f"mean of {records} values in [0,1] plus Lap(1/((n+1)ε)): the noise is calibrated "
                    "to a record count one too large",
        mechanism=NoisySum("laplace", scale, records, 1, mean=True), output_dim=1,
        output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="as if the sensitivity were 1/(n+1)"),
        true=Guarantee("dp", epsilon * (records + 1) / records,
                       note="exact: Laplace mechanism with scale b is (1/n)/b-DP = ε(n+1)/n"), true_exact=True,
        buggy=True, neighbouring=NEIGHBOURING, pairs=(_pair(records, 1),),
        source="wrong-count mean bug (DP-testing benchmarks)", pair_epsilon=laplace_pair_epsilon(scale, mean=True))


FACTORIES = {f.__name__: f for f in (laplace_sum, gaussian_sum, laplace_mean, gaussian_mean, mean_off_by_one_count)}
