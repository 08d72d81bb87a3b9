"""Noise calibrations for MI Pufferfish privacy, MI-DP and classical DP.

Each rule returns a :class:`Calibration` (noise law, scale, variance, the theorem used);
``Calibration.mechanism(query)`` builds the batched noisy mechanism f + Z. Reference: the
Pufferfish/MI paper (Nuradha and Goldfeld, Pufferfish Privacy: An Information-Theoretic Study
(IEEE Transactions on Information Theory, 2023)), Theorems 3–6, Corollaries 2–4,
Remarks 8, 11, 12, 14 and Section III-A; classical rules as cited in :mod:`.classical`;
the Gaussian σ for a local-MI target (local-MI paper, Section II, Figs. 1 and 3) in
:mod:`.local_mi`.
"""

from mechanisms.calibration.classical import (analytic_gaussian_sigma, classical_gaussian_variance, gaussian_approx_dp,
                        laplace_approx_dp, laplace_dp)
from mechanisms.calibration.dependence import entropy_power_term, gaussian_attribute_mi, gaussian_secret_mi_pp
from mechanisms.calibration.dispatch import NOTIONS, calibrate
from mechanisms.calibration.gaussian import gaussian_mi_dp, gaussian_mi_pp, gaussian_mi_variance
from mechanisms.calibration.laplace import laplace_mi_dp, laplace_mi_pp, laplace_mi_scale
from mechanisms.calibration.local_mi import gaussian_sigma_for_lmip_bits
from mechanisms.calibration.noisy import NoisyMechanism
from mechanisms.calibration.projection import gaussian_projection_mi_pp
from mechanisms.calibration.regions import (remark11_mi_dp_is_quieter, remark11_threshold, remark14_correlation_threshold,
                      remark14_free_privacy)
from mechanisms.calibration.result import Calibration
from mechanisms.calibration.structured import gaussian_attribute_dp, gaussian_structured_pp

__all__ = [
    "Calibration", "NOTIONS", "NoisyMechanism", "analytic_gaussian_sigma", "calibrate",
    "classical_gaussian_variance", "entropy_power_term", "gaussian_approx_dp", "gaussian_attribute_dp",
    "gaussian_attribute_mi", "gaussian_mi_dp", "gaussian_mi_pp", "gaussian_mi_variance",
    "gaussian_projection_mi_pp", "gaussian_secret_mi_pp", "gaussian_sigma_for_lmip_bits", "gaussian_structured_pp", "laplace_approx_dp",
    "laplace_dp", "laplace_mi_dp", "laplace_mi_pp", "laplace_mi_scale", "remark11_mi_dp_is_quieter",
    "remark11_threshold", "remark14_correlation_threshold", "remark14_free_privacy",
]
