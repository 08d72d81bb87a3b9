"""Fig. 3b of the Pufferfish/MI paper: where the ε-MI DP Gaussian beats the classical Gaussian.

Remark 11: the Corollary 3 Gaussian, σ² = Δ₂²/(2d(e^{2ε/d} − 1)), is ε-MI DP and hence
(ε′, √(2ε))-DP (Theorem 1); the classical Gaussian needs σ² = 2 log(1.25/√(2ε)) Δ₂²/ε′² for
(ε′, √(2ε))-DP (ε′ ≤ 1). The MI-DP mechanism adds less noise exactly when
ε′ < 2 √(d (e^{2ε/d} − 1) log(1.25/√(2ε))). The figure shades that region for d = 30;
computed by :func:`mechanisms.calibration.remark11_mi_dp_is_quieter`.
"""

from __future__ import annotations

import numpy as np

from mechanisms.calibration import remark11_mi_dp_is_quieter, remark11_threshold
from mechanisms.papers import PUFFERFISH

from .framework import Experiment, ExperimentOutput, Table, new_figure

DIM = 30
# The region's boundary for other d, to show Remark 11's remark that it shrinks as d grows.
COMPARISON_DIMS = (1, 5, 30, 300)
EPSILON_MAX = 0.5  # δ = √(2ε) < 1 needs ε < 1/2
EPSILON_PRIME_MAX = 1.0  # the classical Gaussian mechanism's range ε′ ≤ 1


def _open_grid(upper: float, points: int) -> np.ndarray:
    """``points`` cell centres of (0, upper): both ends are excluded by Remark 11's ranges."""
    return (np.arange(points) + 0.5) * upper / points


def run(context) -> ExperimentOutput:
    points = 60 if context.quick else 200
    eps = _open_grid(EPSILON_MAX, points)
    eps_prime = _open_grid(EPSILON_PRIME_MAX, points)
    grid_eps, grid_eps_prime = np.meshgrid(eps, eps_prime, indexing="ij")
    quieter = remark11_mi_dp_is_quieter(grid_eps_prime, grid_eps, DIM)
    region = Table("region", {"epsilon": grid_eps.ravel(), "epsilon_prime": grid_eps_prime.ravel(),
                              "mi_dp_quieter": quieter.ravel()})
    thresholds = {f"epsilon_prime_threshold_d{d}": remark11_threshold(eps, d) for d in COMPARISON_DIMS}
    boundary = Table("threshold", {"epsilon": eps, **thresholds})

    figure, axes = new_figure()
    ax = axes[0, 0]
    ax.contourf(grid_eps, grid_eps_prime, quieter.astype(float), levels=[0.5, 1.5], colors=["#9ecae1"])
    for index, d in enumerate(COMPARISON_DIMS):
        style = "-" if d == DIM else ":"
        ax.plot(eps, thresholds[f"epsilon_prime_threshold_d{d}"], style, color=f"C{index}",
                label=f"ε′* boundary, d = {d}")
    ax.set_xlim(0, EPSILON_MAX)
    ax.set_ylim(0, EPSILON_PRIME_MAX)
    ax.set_xlabel("ε (MI-DP budget, nats)")
    ax.set_ylabel("ε′ (classical (ε′, √(2ε))-DP)")
    ax.set_title(f"Shaded: MI-DP Gaussian adds less noise (d = {DIM})")
    ax.legend(fontsize=8, loc="lower right")

    share = float(quieter.mean())
    t30 = thresholds[f"epsilon_prime_threshold_d{DIM}"]
    findings = [
        f"For d = {DIM} the MI-DP Gaussian is the quieter one on {100 * share:.1f}% of the grid "
        f"(0, {EPSILON_MAX}) × (0, {EPSILON_PRIME_MAX}]: below the boundary ε′*(ε), which rises from "
        f"{t30[0]:.3f} at ε = {eps[0]:.4f} to {t30[-1]:.3f} at ε = {eps[-1]:.4f}.",
        "The boundary for d = " + ", ".join(str(d) for d in COMPARISON_DIMS) + " at ε = "
        f"{eps[points // 2]:.3f} is " + ", ".join(f"{thresholds[f'epsilon_prime_threshold_d{d}'][points // 2]:.4f}"
                                                  for d in COMPARISON_DIMS)
        + ": the region shrinks as d grows, as Remark 11 notes.",
    ]
    settings = {"d": DIM, "grid": f"{points} × {points} cell centres of (0, {EPSILON_MAX}) × (0, {EPSILON_PRIME_MAX})"}
    return ExperimentOutput([region, boundary], figure, settings, findings)


EXPERIMENTS = [Experiment(
    name="pufferfish-fig3b",
    description="(ε′, ε) region where the ε-MI DP Gaussian adds less noise than the classical (ε′, √(2ε))-DP one, d = 30",
    source=PUFFERFISH.cite("Fig. 3b (Remark 11)"),
    run=run,
    full_runtime="2 s on a 2-core x86_64 CPU (200 × 200 grid)",
)]
