"""CD-LMIP and the optimal LIP curve of the scalar Gaussian mechanism with a discrete input,
and Theorem 3's Gaussian-noise CI-LMIP, **in bits**.

Local-MI paper (Ngo, Östman and Graell i Amat, Local Mutual-Information Differential Privacy
(arXiv:2405.07596v1, 2024)), end of Section II: with d = 1 and
X on {x_1, …, x_n}, G(x_i) ~ N(x_i, σ²) and G(X) follows the Gaussian mixture
Σ_i P_X(x_i) N(x_i, σ²); μ̄_G^CD and δ̄_G^LIP(ε) come from numerical KL and hockey-stick
divergences between P_{G(X)} and P_{G(x)}. Here both are evaluated on one fine output grid
(trapezoid rule, 200 points per σ, on the union of the intervals x_i ± 40σ, outside which every
density is below e^−800 of its peak). Both quantities depend on σ only through x/σ, so the grid
is laid out in units of σ: a tiny or huge σ costs nothing extra. The grid is capped at
:data:`MAX_GRID_ENTRIES` (support points × grid points); beyond that (many support points, each
far from the others in units of σ) the error names ``sigma`` and ``support``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from estimators.units import LN2
from estimators.validation import InputError, check_positive, plain

from mechanisms.claims.dp_curves import PrivacyCurve

__all__ = ["MAX_GRID_ENTRIES", "GaussianMixtureChannel", "gaussian_lip_curve", "gaussian_lmip_cd_bits",
           "gaussian_noise_lmip_bits", "truncated_gaussian_input"]

# Support points × output grid points: about 64 MB per tabulated array.
MAX_GRID_ENTRIES = 8_000_000
_POINTS_PER_SIGMA = 200
_HALF_WIDTH = 40.0  # in units of σ


def _support_and_pmf(support, pmf):
    try:
        xs = np.asarray(support, dtype=np.float64).ravel()
        ps = np.asarray(pmf, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InputError("arguments 'support' and 'pmf' must be numeric") from None
    if xs.size == 0 or not np.all(np.isfinite(xs)):
        raise InputError(f"argument 'support' must be a non-empty list of finite numbers, got {plain(support)}")
    if np.unique(xs).size != xs.size:
        raise InputError(f"argument 'support' must hold distinct points, got {plain(support)}")
    if ps.shape != xs.shape:
        raise InputError(f"argument 'pmf' must have one entry per support point ({xs.size}), got {ps.size}")
    if not np.all(np.isfinite(ps)) or np.any(ps < 0.0) or np.any(ps > 1.0):
        raise InputError(f"argument 'pmf' must hold probabilities in [0, 1], got {plain(pmf)}")
    if abs(ps.sum() - 1.0) > 1e-9:
        raise InputError(f"argument 'pmf' must sum to 1, sums to {plain(ps.sum())}")
    keep = ps > 0.0  # points of zero mass are not inputs of the context (LIP's sup is over the support)
    return xs[keep], ps[keep]


def truncated_gaussian_input(points: int = 21, amplitude: float = 1.0, std: float = 0.5):
    """N(0, std²) restricted to ``points`` evenly spaced points of [−amplitude, amplitude].

    The input law of the local-MI paper's Fig. 3 and Fig. 4 (21 points, Δ = 1, N(0, 1/4)):
    masses proportional to the Gaussian density at the points. Returns (support, pmf).
    """
    if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 1:
        raise InputError(f"argument 'points' must be an integer >= 1, got {plain(points)}")
    amplitude = check_positive(amplitude, "amplitude")
    std = check_positive(std, "std")
    support = np.linspace(-amplitude, amplitude, int(points))
    log_mass = -0.5 * (support / std) ** 2
    return support, np.exp(log_mass - logsumexp(log_mass))


def _union_grid(centres: np.ndarray, rows: int):
    """Grid points and trapezoid weights on the union of [c − 40, c + 40] over ``centres``."""
    order = np.sort(centres)
    starts, ends = [order[0] - _HALF_WIDTH], [order[0] + _HALF_WIDTH]
    for c in order[1:]:
        if c - _HALF_WIDTH <= ends[-1]:
            ends[-1] = c + _HALF_WIDTH
        else:
            starts.append(c - _HALF_WIDTH)
            ends.append(c + _HALF_WIDTH)
    counts = [int(math.ceil(_POINTS_PER_SIGMA * (b - a))) + 1 for a, b in zip(starts, ends)]
    if rows * sum(counts) > MAX_GRID_ENTRIES:
        raise InputError(f"arguments 'sigma', 'support': {rows} support points this far apart in units of sigma need "
                         f"{rows * sum(counts)} grid entries (limit {MAX_GRID_ENTRIES}); use fewer support "
                         "points or a larger sigma")
    points, weights = [], []
    for a, b, n in zip(starts, ends, counts):
        y = np.linspace(a, b, n)
        w = np.full(n, y[1] - y[0])
        w[[0, -1]] *= 0.5
        points.append(y)
        weights.append(w)
    return np.concatenate(points), np.concatenate(weights)


class GaussianMixtureChannel:
    """X on a finite support → X + N(0, σ²), tabulated once on an output grid.

    Parameters
    ----------
    sigma : float
        Noise standard deviation σ > 0.
    support, pmf : array_like
        Distinct input points and their probabilities (summing to 1).
    """

    def __init__(self, sigma: float, support, pmf):
        self.sigma = check_positive(sigma, "sigma")
        self.support, self.pmf = _support_and_pmf(support, pmf)
        # Support points in units of σ, measured from the smallest one.
        with np.errstate(over="ignore"):
            scaled = (self.support - self.support.min()) / self.sigma
        if not np.all(np.isfinite(scaled)):
            raise InputError(f"arguments 'support', 'sigma': the spread of the support in units of sigma "
                             f"overflows a float (sigma = {plain(self.sigma)})")
        # 200 points per σ: the hockey-stick error is O(step²) (the integrand vanishes at the
        # event's edge), about 1e-7 here.
        u, self._weights = _union_grid(scaled, len(self.support))
        # log N(u; s_i, 1) for each support point (rows) and the mixture's log density; KL and
        # likelihood ratios are the same in units of σ.
        self._log_cond = -0.5 * (u[None, :] - scaled[:, None]) ** 2 - 0.5 * math.log(2 * math.pi)
        self._log_mix = logsumexp(self._log_cond + np.log(self.pmf)[:, None], axis=0)
        self._cond = np.exp(self._log_cond)
        self._tails = None  # built on the first hockey-stick query

    def kl_to_mixture_bits(self) -> np.ndarray:
        """KL(P_{G(x_i)} ‖ P_{G(X)}) for each support point, in bits."""
        integrand = self._cond * (self._log_cond - self._log_mix[None, :])
        return integrand @ self._weights / LN2

    def hockey_sticks(self, epsilon) -> tuple[np.ndarray, np.ndarray]:
        """(H_{e^ε}(P_{G(X)} ‖ P_{G(x_i)}), H_{e^ε}(P_{G(x_i)} ‖ P_{G(X)})), shapes (len(ε), n).

        H_{e^ε}(P ‖ Q) = P(L > ε) − e^ε Q(L > ε) with L = log(dP/dQ) (the supremum in the
        definition is attained by the event {L > ε}); both tail masses are read off
        cumulative sums over the grid sorted by L, so any number of ε costs a binary search.
        """
        eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
        if self._tails is None:
            self._tails = [_TailTable(self._log_mix, self._log_cond, self._weights),
                           _TailTable(self._log_cond, self._log_mix, self._weights)]
        mix_over, cond_over = (table.hockey_stick(eps) for table in self._tails)
        return mix_over, cond_over

    def largest_log_ratio(self) -> float:
        """max over the grid and the support of |log(dP_{G(X)}/dP_{G(x_i)})|: δ̄^LIP(ε) is 0 beyond it."""
        return float(np.abs(self._log_mix[None, :] - self._log_cond).max())


class _TailTable:
    """For each row i: grid points sorted by L_i = log p_i − log q_i, with the tail masses
    P_i(L_i > t) and Q_i(L_i > t) (trapezoid weights) as suffix sums."""

    def __init__(self, log_p: np.ndarray, log_q: np.ndarray, weights: np.ndarray):
        log_p, log_q = np.broadcast_arrays(log_p, log_q)
        ratio = log_p - log_q
        order = np.argsort(ratio, axis=1)
        self.sorted_ratio = np.take_along_axis(ratio, order, axis=1)
        zero = np.zeros((ratio.shape[0], 1))

        def suffix(log_density):
            mass = np.exp(np.take_along_axis(log_density, order, axis=1)) * weights[order]
            return np.hstack([np.cumsum(mass[:, ::-1], axis=1)[:, ::-1], zero])

        self.p_tail, self.q_tail = suffix(log_p), suffix(log_q)

    def hockey_stick(self, eps: np.ndarray) -> np.ndarray:
        out = np.empty((eps.size, self.sorted_ratio.shape[0]))
        for i, row in enumerate(self.sorted_ratio):
            k = np.searchsorted(row, eps, side="right")  # first grid point with L > ε
            with np.errstate(divide="ignore"):
                scaled_q = np.exp(eps + np.log(self.q_tail[i, k]))  # e^ε Q(L > ε) ≤ P(L > ε): no overflow
            out[:, i] = np.maximum(self.p_tail[i, k] - scaled_q, 0.0)  # ≥ 0 exactly; rounding only
        return out


def gaussian_lmip_cd_bits(sigma: float, support, pmf) -> float:
    """Optimal CD-LMIP μ̄_G^CD = I(X; X + N(0, σ²)) for a discrete input, in bits.

    Local-MI paper, Section II: I(X; G(X)) = Σ_i P_X(x_i) KL(N(x_i, σ²) ‖ Σ_j P_X(x_j) N(x_j, σ²))
    (the decomposition (19)/(28)), each KL by numerical integration.
    """
    channel = GaussianMixtureChannel(sigma, support, pmf)
    return float(channel.pmf @ channel.kl_to_mixture_bits())


def gaussian_lip_curve(sigma: float, support, pmf) -> PrivacyCurve:
    """Optimal LIP curve δ̄_G^LIP(ε) of X + N(0, σ²) for a discrete input law.

    Definition 4 of the local-MI paper, Eq. (3): M is (ε, δ)-LIP iff for every x,
    P[M(X) ∈ E] − e^ε P[M(x) ∈ E] ≤ δ and e^{−ε} P[M(x) ∈ E] − P[M(X) ∈ E] ≤ δ, i.e.

        δ̄^LIP(ε) = max_i max{H_{e^ε}(P_{G(X)} ‖ P_{G(x_i)}), e^{−ε} H_{e^ε}(P_{G(x_i)} ‖ P_{G(X)})}.

    (The printed Eq. (4) repeats one argument order; Eq. (3), Eq. (9) and the proof of
    Theorem 2(b), Eq. (27), all use the form above.) The curve is vectorised over ε ≥ 0.
    """
    channel = GaussianMixtureChannel(sigma, support, pmf)

    def delta(epsilon):
        eps = np.asarray(epsilon, dtype=np.float64)
        if not np.all(np.isfinite(eps)) or np.any(eps < 0):
            raise InputError(f"argument 'epsilon' must be finite and >= 0, got {plain(epsilon)}")
        mix_over, cond_over = channel.hockey_sticks(eps.ravel())
        worst = np.maximum(mix_over, np.exp(-eps.ravel())[:, None] * cond_over).max(axis=1)
        return float(worst[0]) if eps.ndim == 0 else worst.reshape(eps.shape)

    # G(x_i)/G(X) ≤ 1/P_X(x_i): the second divergence vanishes past ε = log(1/min P_X).
    kink = float(-np.log(channel.pmf.min()))
    return PrivacyCurve("gaussian-discrete-input", delta, "lip", breakpoints=(kink,) if kink > 0 else (),
                        vanishes_after=channel.largest_log_ratio(),
                        parameters={"sigma": channel.sigma, "support": channel.support.tolist(),
                                    "pmf": channel.pmf.tolist()})


def _covariance(matrix, name: str, dim: int | None = None) -> np.ndarray:
    try:
        k = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
    except (TypeError, ValueError):
        raise InputError(f"argument '{name}' must be a numeric matrix") from None
    if k.ndim != 2 or k.shape[0] != k.shape[1] or (dim is not None and k.shape[0] != dim):
        want = f"({dim}, {dim})" if dim is not None else "square"
        raise InputError(f"argument '{name}' must have shape {want}, got {k.shape}")
    if not np.all(np.isfinite(k)) or not np.allclose(k, k.T, atol=1e-12):
        raise InputError(f"argument '{name}' must be a finite symmetric matrix")
    return k


def gaussian_noise_lmip_bits(k_x, k_y) -> float:
    """Theorem 3, Eq. (14): μ(K_X, K_Y) = ½ log det(I_d + K_Y⁻¹ K_X) bits.

    The CI-LMIP of X + Y when X and Y have covariances K_X and K_Y (the saddle point is
    Gaussian). With K_X = Δ² I and K_Y = σ² I this is the best-case noise value
    (d/2) log(1 + Δ²/σ²). Computed from the generalized eigenvalues λ of K_X v = λ K_Y v:
    ½ Σ log(1 + λ). K_X must be positive semi-definite and K_Y positive definite.
    """
    k_y = _covariance(k_y, "k_y")
    k_x = _covariance(k_x, "k_x", dim=k_y.shape[0])
    scale = max(np.abs(k_y).max(), 1e-300)
    if np.linalg.eigvalsh(k_y).min() <= 1e-12 * scale:
        raise InputError("argument 'k_y' must be positive definite")
    if np.linalg.eigvalsh(k_x).min() < -1e-12 * max(np.abs(k_x).max(), 1e-300):
        raise InputError("argument 'k_x' must be positive semi-definite")
    # K_Y^{-1/2} K_X K_Y^{-1/2} has the generalized eigenvalues; Cholesky keeps it symmetric.
    chol = np.linalg.cholesky(k_y)
    inv_chol = np.linalg.inv(chol)
    lam = np.linalg.eigvalsh(inv_chol @ k_x @ inv_chol.T)
    return float(0.5 * np.sum(np.log2(1.0 + np.maximum(lam, 0.0))))
