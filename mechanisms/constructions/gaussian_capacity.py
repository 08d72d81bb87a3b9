"""CI-LMIP of the Gaussian mechanism: capacity of the amplitude-constrained Gaussian channel.

Local-MI paper (Ngo, Östman and Graell i Amat, Local Mutual-Information Differential Privacy
(arXiv:2405.07596v1, 2024)), Section II: the optimal CI-LMIP
parameter of G(X) = X + N(0, σ² I_d) with ‖X‖ ≤ A (the paper's A = √d Δ) is

    μ̄_G^CI = sup over P_X with ‖X‖ ≤ A of I(X; X + N(0, σ² I_d))   (bits),

the capacity studied by Rassouli and Clerckx (2016). The ball and the noise are invariant
under rotations and MI is concave in P_X, so averaging any input law over rotations does
not lower MI: an optimal input is X = R·U with U uniform on the unit sphere, independent of
a radius R ∈ [0, A]. With T = ‖Y‖,

    I(X; Y) = I(R; T) + E[g(R)],   g(r) = I(U; Y | R = r),

because Y's direction is uniform and independent of (R, T). I(R; T) is the MI of a scalar
channel with the radial density of Y below, and g(r) = r²/σ² − E[log ₀F₁(d/2; (r T/σ²)²/4)]
(log-likelihood ratio of N(x, σ²I) against its rotation average). The maximisation over the
law of R on a fine grid is a Blahut–Arimoto iteration with the linear reward g
(Blahut 1972; Arimoto 1972): p ← p·exp(c), c(r) = D(W_r ‖ q) + g(r). Concavity gives the
duality bound C ≤ max_r c(r), so every run reports a lower value, an upper value and their gap.
In d = 1 this is the channel with X = ±R; in any d it is exact up to the reported gap
(evaluated on a grid of radii four times finer than the one optimised over).

The work is bounded. The grid needs about 10 A/σ radii times 25 (A/σ + √d + 12) output radii;
beyond :data:`MAX_GRID_ENTRIES` no iteration is run and the closed-form bounds of
:func:`gaussian_capacity_bounds_bits` are returned instead (``kind="bounds"``: ``mu`` a lower and
``upper`` an upper bound, which are tight when A²/(dσ²) is small, i.e. for large d). The
iterations stop after :data:`MAX_KERNEL_UPDATES` kernel-entry updates in all (a few seconds),
and ``kind="lower"`` then says that the gap, not ``rtol``, is the accuracy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, ive

from estimators.result_forms import fields_to_dict
from estimators.units import LN2
from estimators.validation import check_int, check_positive

__all__ = ["MAX_GRID_ENTRIES", "MAX_KERNEL_UPDATES", "GaussianCapacity", "gaussian_capacity_bounds_bits",
           "gaussian_lmip_ci_bits", "radial_log_density"]

# Largest (radii × output radii) kernel the Blahut–Arimoto iteration builds (the duality check
# builds one four times larger): ~8 MB per array.
MAX_GRID_ENTRIES = 1_000_000
# Largest total number of kernel-entry updates (iterations × kernel entries): a few seconds.
MAX_KERNEL_UPDATES = 2_000_000_000


@dataclass(frozen=True)
class GaussianCapacity:
    """Result of :func:`gaussian_lmip_ci_bits`.

    Attributes
    ----------
    mu : float
        Mutual information achieved by the optimised input law (a certain lower bound).
    upper : float
        Duality upper bound max_r c(r) on the capacity.
    gap : float
        ``upper - mu``.
    kind : str
        ``"exact"`` when the gap is within the requested tolerance, ``"lower"`` when the
        iteration cap was reached first (``mu`` is then only a lower bound, ``upper`` an upper
        bound), ``"bounds"`` when the grid would exceed :data:`MAX_GRID_ENTRIES` and the
        closed-form bounds were returned.
    unit : str
        ``"bits"``.
    amplitude, sigma : float
        Peak norm A (‖X‖ ≤ A) and noise standard deviation σ.
    dim : int
        Dimension d.
    iterations : int
        Blahut–Arimoto iterations used (0 for ``kind="bounds"``).
    radii, weights : tuple of float
        Support (radii with mass > 1e-6) and masses of the optimised input radius law.
    """

    mu: float
    upper: float
    gap: float
    kind: str
    unit: str
    amplitude: float
    sigma: float
    dim: int
    iterations: int
    radii: tuple
    weights: tuple

    def to_dict(self) -> dict:
        return fields_to_dict(self, null_nonfinite=False)


def _log_hyp0f1_bessel(order_half: float, z: np.ndarray) -> np.ndarray:
    """log ₀F₁(b; z²/4) with b = d/2, via ₀F₁(b; z²/4) = Γ(b) (z/2)^{1−b} I_{b−1}(z).

    Uses the exponentially scaled Bessel function so large z does not overflow; below
    z = 1e-6 the series 1 + z²/(4b) is exact to double precision.
    """
    b = order_half
    small = z < 1e-6
    zs = np.where(small, 1.0, z)
    scaled = ive(b - 1.0, zs)
    with np.errstate(divide="ignore"):
        log_bessel = np.log(scaled) + zs
    # For a large order (high dimension) and small z, I_{b−1}(z) underflows; there the
    # uniform (Debye) expansion gives log I_ν directly.
    underflow = scaled < 1e-250
    if np.any(underflow & ~small):
        log_bessel = np.where(underflow, _log_bessel_debye(b - 1.0, zs), log_bessel)
    big = gammaln(b) + (1.0 - b) * np.log(zs / 2.0) + log_bessel
    return np.where(small, np.log1p(z * z / (4.0 * b)), big)


def _log_bessel_debye(order: float, x: np.ndarray) -> np.ndarray:
    """log I_ν(x) by the uniform asymptotic expansion for large ν (Abramowitz and Stegun
    9.7.7, terms u₁ and u₂): relative error O(ν⁻³); used only where I_ν(x) e^{−x} underflows,
    which needs ν ≳ 50."""
    w = x / order
    root = np.sqrt(1.0 + w * w)
    t = 1.0 / root
    eta = root + np.log(w / (1.0 + root))
    u1 = (3.0 * t - 5.0 * t**3) / 24.0
    u2 = (81.0 * t**2 - 462.0 * t**4 + 385.0 * t**6) / 1152.0
    return (-0.5 * np.log(2.0 * math.pi * order) - 0.5 * np.log(root) + order * eta
            + np.log1p(u1 / order + u2 / order**2))


def radial_log_density(t: np.ndarray, r: np.ndarray, sigma: float, dim: int) -> np.ndarray:
    """log density of T = ‖r U + N(0, σ² I_d)‖ at t, U uniform on the unit sphere.

    ρ_r(t) = S_{d−1} t^{d−1} (2πσ²)^{−d/2} exp(−(t² + r²)/(2σ²)) ₀F₁(d/2; (r t/σ²)²/4),
    with S_{d−1} = 2π^{d/2}/Γ(d/2) the area of the unit sphere (the rotation average of the
    Gaussian density is the ₀F₁ term; for d = 1 it is cosh(r t/σ²)). ``t`` and ``r`` broadcast.
    """
    t, r = np.broadcast_arrays(np.asarray(t, float), np.asarray(r, float))
    return _radial_log_density(t, r, sigma, dim, _log_hyp0f1_bessel(dim / 2.0, r * t / sigma**2))


def _radial_log_density(t: np.ndarray, r: np.ndarray, sigma: float, dim: int, log_f: np.ndarray) -> np.ndarray:
    """:func:`radial_log_density` given its ₀F₁ term ``log_f`` = log ₀F₁(d/2; (r t/σ²)²/4)."""
    b = dim / 2.0
    log_area = math.log(2.0) + b * math.log(math.pi) - gammaln(b)
    with np.errstate(divide="ignore"):
        log_t = (dim - 1) * np.log(t) if dim > 1 else np.zeros_like(t)
    return (log_area + log_t - b * math.log(2.0 * math.pi * sigma**2) - (t * t + r * r) / (2.0 * sigma**2)
            + log_f)


def _channel(radii: np.ndarray, sigma: float, dim: int, t: np.ndarray, t_weights: np.ndarray):
    """Row-stochastic kernel W[j, i] ∝ ρ_{r_j}(t_i) w_i, its log, and the rewards g(r_j) (nats)."""
    # The ₀F₁ term enters both the density and the reward: the Bessel function, most of the
    # kernel's cost, is evaluated once.
    t_grid, r_grid = np.broadcast_arrays(t[None, :], radii[:, None])
    log_f = _log_hyp0f1_bessel(dim / 2.0, r_grid * t_grid / sigma**2)
    log_rho = _radial_log_density(t_grid, r_grid, sigma, dim, log_f)
    log_w = log_rho + np.log(t_weights)[None, :]
    log_w -= np.logaddexp.reduce(log_w, axis=1, keepdims=True)
    kernel = np.exp(log_w)
    reward = radii**2 / sigma**2 - np.sum(kernel * log_f, axis=1)
    return kernel, log_w, reward


def _scores(kernel, log_kernel, reward, p):
    """c_j = D(W_j ‖ pW) + g_j in nats: I(p) = Σ p_j c_j and C ≤ max_j c_j."""
    log_q = np.log(np.maximum(p @ kernel, 1e-300))
    divergence = np.sum(kernel * (log_kernel - log_q[None, :]), axis=1)
    return divergence + reward


def gaussian_lmip_ci_bits(sigma: float, amplitude: float, dim: int = 1, *, rtol: float = 1e-4,
                          atol_bits: float = 1e-9, max_iter: int = 20000,
                          radii_per_sigma: float = 10.0) -> GaussianCapacity:
    """Optimal CI-LMIP μ̄_G^CI of the Gaussian mechanism (capacity, ‖X‖ ≤ A), in bits.

    Local-MI paper, Section II and Fig. 2 (capacity of Rassouli and Clerckx 2016), computed
    by the radial Blahut–Arimoto iteration described in the module docstring.

    Parameters
    ----------
    sigma : float
        Noise standard deviation σ > 0.
    amplitude : float
        Peak norm A > 0 of the input, ‖X‖ ≤ A. The paper's ‖X‖ ≤ √d Δ is A = √d Δ
        (ℓ₂ sensitivity 2A).
    dim : int
        Dimension d ≥ 1.
    rtol, atol_bits : float
        Stop when the duality gap on the optimisation grid is at most
        max(atol_bits, rtol · mu) (Blahut–Arimoto's gap shrinks only like 1/iterations once
        the mass sits between grid points, so a relative tolerance keeps runs short).
    max_iter : int
        Iteration cap; if reached, ``kind`` is ``"lower"``.
    radii_per_sigma : float
        Grid density of radii: at least this many grid points per σ (and at least 101).

    Returns
    -------
    GaussianCapacity
    """
    sigma = check_positive(sigma, "sigma")
    amplitude = check_positive(amplitude, "amplitude")
    dim = check_int(dim, "dim", minimum=1)
    rtol = check_positive(rtol, "rtol")
    atol = check_positive(atol_bits, "atol_bits") * LN2
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    density = check_positive(radii_per_sigma, "radii_per_sigma")
    if not _grid_entries(sigma, amplitude, dim, density) <= MAX_GRID_ENTRIES:
        return _closed_form(sigma, amplitude, dim, rtol)
    n_radii = max(101, int(math.ceil(density * amplitude / sigma)) + 1)
    radii = np.linspace(0.0, amplitude, n_radii)
    t_max = amplitude + sigma * (math.sqrt(dim) + 12.0)  # see _grid_entries
    n_t = int(math.ceil(t_max / (sigma / 25.0))) + 1
    t = np.linspace(0.0, t_max, n_t)
    t_weights = np.full(n_t, t[1] - t[0])
    t_weights[[0, -1]] *= 0.5
    if dim > 1:
        t, t_weights = t[1:], t_weights[1:]  # the radial density vanishes at t = 0 when d > 1
    kernel, log_kernel, reward = _channel(radii, sigma, dim, t, t_weights)
    max_iter = min(max_iter, max(1, MAX_KERNEL_UPDATES // kernel.size))
    # Start from the largest radius: optimal on its own when A/σ is small (binary / sphere input).
    p = np.full(n_radii, 1e-3 / n_radii)
    p[-1] += 1.0 - p.sum()
    iterations = 0
    for iterations in range(1, max_iter + 1):
        c = _scores(kernel, log_kernel, reward, p)
        lower, upper = float(p @ c), float(c.max())
        if upper - lower <= max(atol, rtol * lower):
            break
        p = p * np.exp(c - upper)
        p /= p.sum()
    c = _scores(kernel, log_kernel, reward, p)
    lower = float(p @ c)
    # Duality bound over radii between the grid points too (4× finer grid).
    fine = np.linspace(0.0, amplitude, 4 * (n_radii - 1) + 1)
    fine_kernel, fine_log_kernel, fine_reward = _channel(fine, sigma, dim, t, t_weights)
    log_q = np.log(np.maximum(p @ kernel, 1e-300))
    fine_c = np.sum(fine_kernel * (fine_log_kernel - log_q[None, :]), axis=1) + fine_reward
    upper = max(float(fine_c.max()), float(c.max()))
    mu_bits, upper_bits = lower / LN2, upper / LN2
    support = p > 1e-6
    return GaussianCapacity(
        mu=mu_bits, upper=upper_bits, gap=upper_bits - mu_bits,
        kind="exact" if upper - lower <= max(atol, rtol * lower) else "lower", unit="bits",
        amplitude=amplitude, sigma=sigma, dim=dim, iterations=iterations,
        radii=tuple(float(r) for r in radii[support]), weights=tuple(float(w) for w in p[support]),
    )


def gaussian_capacity_bounds_bits(sigma: float, amplitude: float, dim: int, *, rtol: float = 1e-4) -> tuple[float, float]:
    """Simple bounds on μ̄_G^CI for ‖X‖ ≤ A in d dimensions, in bits: (lower, upper).

    - lower, the larger of: (a) the cube [−A/√d, A/√d]^d lies in the ball, so d independent
      scalar channels with amplitude A/√d give d · μ̄_G^CI(A/√d, d = 1) (when that scalar grid
      fits :data:`MAX_GRID_ENTRIES`); (b) X uniform on the ball and the entropy-power inequality
      (Shannon 1948; Stam 1959): I ≥ (d/2) log(1 + e^{2h(X)/d} / (2πeσ²)) with
      h(X) = log(π^{d/2} A^d / Γ(d/2 + 1));
    - upper: ‖X‖ ≤ A implies E‖X‖² ≤ A², whose capacity is (d/2) log(1 + A²/(dσ²))
      (local-MI paper, Theorem 3 with K_X = (A²/d) I and K_Y = σ² I; footnote 2).

    All logs are taken before exponentiating, so a tiny σ or a huge d gives finite bounds.
    ``rtol`` is passed to the scalar Blahut–Arimoto run (its achieved value is a lower bound).
    """
    sigma = check_positive(sigma, "sigma")
    amplitude = check_positive(amplitude, "amplitude")
    dim = check_int(dim, "dim", minimum=1)
    log_sigma, log_amplitude = math.log(sigma), math.log(amplitude)
    upper = 0.5 * dim * np.logaddexp(0.0, 2.0 * log_amplitude - math.log(dim) - 2.0 * log_sigma) / LN2
    log_ball_volume = 0.5 * dim * math.log(math.pi) + dim * log_amplitude - float(gammaln(0.5 * dim + 1.0))
    snr = 2.0 * log_ball_volume / dim - math.log(2.0 * math.pi * math.e) - 2.0 * log_sigma
    lower = 0.5 * dim * np.logaddexp(0.0, snr) / LN2
    cube_side = math.exp(log_amplitude - 0.5 * math.log(dim))
    if _grid_entries(sigma, cube_side, 1, 10.0) <= MAX_GRID_ENTRIES:
        lower = max(lower, dim * gaussian_lmip_ci_bits(sigma, cube_side, 1, rtol=rtol).mu)
    return float(min(lower, upper)), float(upper)


def _grid_entries(sigma: float, amplitude: float, dim: int, radii_per_sigma: float) -> float:
    """Entries of the Blahut–Arimoto kernel: radii × output radii (inf when A/σ overflows).

    Past A + (√d + 12)σ the radial density is below e^{-70} of its peak; output radii are
    σ/25 apart, input radii at least ``radii_per_sigma`` per σ (and at least 101).
    """
    ratio = amplitude / sigma
    if not math.isfinite(radii_per_sigma * ratio):
        return math.inf
    return max(101.0, math.ceil(radii_per_sigma * ratio) + 1.0) * (25.0 * (ratio + math.sqrt(dim) + 12.0) + 1.0)


def _closed_form(sigma: float, amplitude: float, dim: int, rtol: float) -> GaussianCapacity:
    lower, upper = gaussian_capacity_bounds_bits(sigma, amplitude, dim, rtol=rtol)
    return GaussianCapacity(mu=lower, upper=upper, gap=upper - lower, kind="bounds", unit="bits",
                            amplitude=amplitude, sigma=sigma, dim=dim, iterations=0, radii=(), weights=())
