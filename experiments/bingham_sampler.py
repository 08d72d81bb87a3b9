"""What diffprivlib's ``Bingham`` sampler draws, and the privacy loss of what it draws.

``python -m experiments.bingham_sampler [--seed S] [--draws N] [--starts K]`` prints, seeded and in seconds:

1. a chi-square goodness-of-fit test of ``diffprivlib.mechanisms.Bingham.randomise`` draws (d = 2: the angle;
   d = 3: uᵀAu) against the density :func:`log_density` derives for its sampler (``buggy=True``) and against
   the Bingham density it states (``buggy=False``);
2. the largest privacy loss sup_u |log p_A(u) / p_B(u)| / ε found over matrices C_A, C_B at most 1 apart in spectral
   norm (the mechanism's sensitivity Δ = 1), in d = 2 and d = 3, by a seeded random search and a Nelder–Mead
   refinement, with normalising constants by quadrature on the circle / sphere;
3. the loss of the pair C_A = 0, C_B = diag(1, −1, …, −1) in d = 2 … 50, where the density depends on u₁²
   alone and the normalising constants are one-dimensional integrals;
4. the loss of the pair C_A = diag(M, M, 0, …), C_B = diag(M + 1, M − 1, 0, …) in d = 3, 4, 10 (a two-dimensional
   quadrature), where the loss grows with d.

The sampler (diffprivlib 0.6.6, ``mechanisms/bingham.py`` lines 122–152) is the rejection sampler of Kent,
Ganeiber and Mardia (2018), "A new unified approach for the simulation of a wide class of directional
distributions", JCGS 27(2), §3: target f*(u) = exp(−uᵀAu), A = ε(λ_max I − C)/(4Δ), proposal the angular
central Gaussian ACG(Ω), g*(u) ∝ (uᵀΩu)^(−d/2), Ω = I + 2A/b with Σᵢ 1/(b + 2aᵢ) = 1 (their §3), and
acceptance f*(u) / (M* g*(u)) = exp(−uᵀAu) (uᵀΩu)^(d/2) / M*, M* = e^(−(d−b)/2) (d/b)^(d/2) (their §3).
The library accepts with exp(−uᵀAu) (uᵀΩu)^(−d/2) / M* (divides where the paper multiplies), so its draws
have density ∝ g*(u) × acceptance ∝ exp(−uᵀAu) (uᵀΩu)^(−d) (:func:`log_density`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import integrate, optimize, special, stats


def b_constant(a) -> float:
    """The ACG envelope's b: the root in (0, d] of Σᵢ 1/(b + 2aᵢ) = 1.

    Source: Kent, Ganeiber and Mardia (2018), §3 (diffprivlib's bisection, ``bingham.py`` line 128,
    solves the same equation). ``a``: the eigenvalues of A (≥ 0, one of them 0).
    """
    a = np.asarray(a, dtype=float)
    d = a.size
    gap = lambda b: np.sum(1.0 / (b + 2.0 * a)) - 1.0  # decreasing in b
    if gap(float(d)) >= 0.0:
        return float(d)  # A = 0: b = d
    return float(optimize.brentq(gap, 1e-12, float(d), xtol=1e-15))


def concentration(c, epsilon: float, sensitivity: float = 1.0) -> np.ndarray:
    """A = ε(λ_max I − C)/(4Δ), the matrix of the Bingham density exp(−uᵀAu) the mechanism states.

    Source: diffprivlib 0.6.6 ``mechanisms/bingham.py`` line 122 (``value_translated``).
    """
    c = np.asarray(c, dtype=float)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or not np.allclose(c, c.T):
        raise ValueError(f"c must be a symmetric square matrix, got shape {c.shape}")
    return epsilon * (np.linalg.eigvalsh(c).max() * np.eye(c.shape[0]) - c) / 4.0 / sensitivity


def log_density(u, c, epsilon: float, sensitivity: float = 1.0, buggy: bool = True) -> np.ndarray:
    """Unnormalised log density on the unit sphere (w.r.t. surface measure) of the mechanism's draws.

    ``buggy=False``: the Bingham density −uᵀAu it states (Kent et al. 2018, §3). ``buggy=True``: what its
    sampler draws, −uᵀAu − d log(uᵀΩu), Ω = I + 2A/b: the ACG proposal (uᵀΩu)^(−d/2) (Kent et al. 2018, §3)
    times diffprivlib's acceptance probability exp(−uᵀAu)(uᵀΩu)^(−d/2)/M* (``bingham.py`` lines 148–149),
    which is ≤ 1 because uᵀΩu ≥ 1 and M* ≥ 1 (no truncation). ``u``: (..., d) unit vectors.
    """
    a_mat = concentration(c, epsilon, sensitivity)
    u = np.asarray(u, dtype=float)
    quad_a = np.einsum("...i,ij,...j->...", u, a_mat, u)
    if not buggy:
        return -quad_a
    b = b_constant(np.linalg.eigvalsh(a_mat).clip(min=0.0))
    return -quad_a - u.shape[-1] * np.log1p(2.0 * quad_a / b)


def sphere_grid(d: int, size: int = 200):
    """Quadrature nodes and weights (summing to 1) for the uniform measure on the unit circle (d = 2) or sphere
    (d = 3): the rectangle rule in the angle (d = 2, exact for trigonometric polynomials), Gauss–Legendre in
    z = cos θ times the rectangle rule in φ (d = 3; Atkinson and Han 2012, "Spherical harmonics and approximations
    on the unit sphere", §5.1)."""
    if d == 2:
        theta = (np.arange(2 * size) + 0.5) * np.pi / size
        return np.stack([np.cos(theta), np.sin(theta)], axis=-1), np.full(2 * size, 1.0 / (2 * size))
    if d != 3:
        raise ValueError(f"d must be 2 or 3, got {d}")
    z, wz = np.polynomial.legendre.leggauss(size)
    phi = (np.arange(2 * size) + 0.5) * np.pi / size
    zz, pp = np.meshgrid(z, phi, indexing="ij")
    r = np.sqrt(1.0 - zz ** 2)
    nodes = np.stack([r * np.cos(pp), r * np.sin(pp), zz], axis=-1).reshape(-1, 3)
    weights = (wz[:, None] / 2.0 / (2 * size) * np.ones_like(pp)).reshape(-1)
    return nodes, weights


def normalised_log_density(c, epsilon, grid, buggy=True, sensitivity=1.0) -> np.ndarray:
    """log p(u) at the grid's nodes, p the density w.r.t. the uniform probability measure on the sphere."""
    nodes, weights = grid
    log_p = log_density(nodes, c, epsilon, sensitivity, buggy)
    return log_p - special.logsumexp(log_p, b=weights)


def privacy_loss(c_a, c_b, epsilon, grid, buggy=True) -> float:
    """sup_u |log p_A(u)/p_B(u)| over the grid's nodes (both directions of the pair): the pure-DP privacy loss
    (Dwork and Roth 2014, "The algorithmic foundations of differential privacy", Definition 2.4)."""
    diff = normalised_log_density(c_a, epsilon, grid, buggy) - normalised_log_density(c_b, epsilon, grid, buggy)
    return float(np.abs(diff).max())


def rotation(angles) -> np.ndarray:
    """A rotation matrix: of the plane (one angle) or of space (three Euler angles, z–y–z)."""
    if len(angles) == 1:
        s, k = np.sin(angles[0]), np.cos(angles[0])
        return np.array([[k, -s], [s, k]])
    out = np.eye(3)
    for axis, angle in zip((2, 1, 2), angles):
        s, k = np.sin(angle), np.cos(angle)
        i, j = [m for m in range(3) if m != axis]
        step = np.eye(3)
        step[i, i], step[i, j], step[j, i], step[j, j] = k, -s, s, k
        out = out @ step
    return out


def pair(d, params):
    """The pair (C_A, C_B) a search point names. C_A = diag(0, m₂, …) (any symmetric matrix up to a rotation and a
    shift by a multiple of I, under both of which the mechanism's output is equivariant or invariant), C_B = C_A + E,
    E = R diag(e) Rᵀ with e squashed into [−1, 1] by tanh: ‖C_A − C_B‖₂ ≤ 1 = Δ."""
    m = np.r_[0.0, np.abs(params[: d - 1])]
    e = np.tanh(params[d - 1: 2 * d - 1])
    rot = rotation(params[2 * d - 1:])
    return np.diag(m), np.diag(m) + rot @ np.diag(e) @ rot.T


def worst_pair(d, epsilon, seed, starts=200, refine=4, grid_size=60):
    """The largest loss/ε found: a seeded random search over :func:`pair`'s parameters, then Nelder–Mead from the
    ``refine`` best points; the winner re-evaluated on a finer grid (4× the nodes per axis)."""
    rng = np.random.default_rng(seed)
    grid = sphere_grid(d, grid_size)
    n_rot = 1 if d == 2 else 3
    loss = lambda p: -privacy_loss(*pair(d, p), epsilon, grid) / epsilon
    points = np.column_stack([rng.uniform(0, 3 / epsilon * 4, (starts, d - 1)) * rng.uniform(0, 1, (starts, 1)),
                              rng.choice([-4.0, 4.0], (starts, d)), rng.uniform(0, np.pi, (starts, n_rot))])
    values = np.array([loss(p) for p in points])
    best = None
    for start in points[np.argsort(values)[:refine]]:
        res = optimize.minimize(loss, start, method="Nelder-Mead", options={"maxiter": 300 * d, "xatol": 1e-4})
        if best is None or res.fun < best.fun:
            best = res
    c_a, c_b = pair(d, best.x)
    fine = privacy_loss(c_a, c_b, epsilon, sphere_grid(d, 4 * grid_size)) / epsilon
    return fine, c_a, c_b


def axial_loss(d: int, epsilon: float, buggy: bool = True) -> float:
    """sup_u |log p_A(u)/p_B(u)| / ε for C_A = 0 and C_B = diag(1, −1, …, −1) in dimension d (‖C_A − C_B‖₂ = 1).

    C_A = 0 gives A = 0, b = d, Ω = I: the uniform distribution, buggy or not. C_B gives A = (ε/2)(I − e₁e₁ᵀ), so
    uᵀAu = (ε/2)(1 − t), t = u₁², and t is Beta(1/2, (d − 1)/2) under the uniform measure (Watson 1983,
    "Statistics on spheres", §2.7), so the normaliser is a one-dimensional integral.
    """
    a = np.r_[0.0, np.full(d - 1, epsilon / 2.0)]
    b = b_constant(a)

    def log_g(t):
        x = epsilon / 2.0 * (1.0 - t)
        return -x - (d * np.log1p(2.0 * x / b) if buggy else 0.0)

    beta = stats.beta(0.5, (d - 1) / 2.0)
    norm = integrate.quad(lambda t: np.exp(log_g(t)) * beta.pdf(t), 0.0, 1.0, limit=200, points=[0.5])[0]
    ends = np.array([log_g(0.0), log_g(1.0)]) - np.log(norm)  # log g is monotone in t: its extremes at the ends
    return float(np.abs(ends).max() / epsilon)


def _planar_log_g(t, theta, a, b, d, buggy):
    """Unnormalised log density at u = (√t cos θ, √t sin θ, √(1 − t) v), A = diag(a) with a₃ = … = a_d."""
    x = t * (a[0] * np.cos(theta) ** 2 + a[1] * np.sin(theta) ** 2) + (1.0 - t) * a[2]
    return -x - (d * np.log1p(2.0 * x / b) if buggy else 0.0)


def planar_log_densities(d: int, epsilon: float, top: float, buggy: bool = True, size: int = 200,
                         change=(1.0, -1.0), theta=None):
    """log p_A, log p_B (w.r.t. the uniform measure) of the pair C_A = diag(M, M, 0, …, 0),
    C_B = diag(M + c₁, M + c₂, 0, …, 0), M = ``top``, (c₁, c₂) = ``change``: by default (1, −1), ‖C_A − C_B‖₂ = 1, one
    row of a covariance of rows of norm ≤ 1 replaced (e₂ by e₁); (1, 0) adds the row e₁ (OpenDP's add/remove).

    With u = (√t cos θ, √t sin θ, √(1 − t) v), uᵀAu = t(a₁cos²θ + a₂sin²θ) + (1 − t)a₃, and under the uniform measure
    t = u₁² + u₂² is Beta(1, (d − 2)/2) and θ uniform, independent of t (Watson 1983, §2.7): the normalisers by a
    two-dimensional quadrature (Gauss–Legendre in t, the rectangle rule in θ). Returns the t nodes and weights and the
    two log densities on the (t, θ) grid, θ the rectangle rule's nodes or the angles ``theta`` given.
    """
    z, wz = np.polynomial.legendre.leggauss(size)
    t_nodes = (z + 1.0) / 2.0
    t_weights = wz / 2.0 * stats.beta(1.0, (d - 2) / 2.0).pdf(t_nodes)
    grid_theta = (np.arange(2 * size) + 0.5) * np.pi / size
    out_theta = grid_theta if theta is None else np.asarray(theta, dtype=float)
    logs = []
    for lam in (np.r_[top, top, np.zeros(d - 2)], np.r_[top + change[0], top + change[1], np.zeros(d - 2)]):
        a = epsilon * (lam.max() - lam) / 4.0
        b = b_constant(a)
        on_grid = _planar_log_g(t_nodes[:, None], grid_theta[None, :], a, b, d, buggy)
        log_norm = special.logsumexp(on_grid, b=t_weights[:, None] / grid_theta.size * np.ones_like(on_grid))
        logs.append(_planar_log_g(t_nodes[:, None], out_theta[None, :], a, b, d, buggy) - log_norm)
    return t_nodes, t_weights, logs[0], logs[1]


def planar_loss(d: int, epsilon: float, top: float, buggy: bool = True, size: int = 200, change=(1.0, -1.0)) -> float:
    """sup_u |log p_A(u)/p_B(u)| / ε for :func:`planar_log_densities`' pair."""
    _, _, log_a, log_b = planar_log_densities(d, epsilon, top, buggy, size, change)
    return float(np.abs(log_a - log_b).max() / epsilon)


def planar_event(d: int, epsilon: float, top: float, threshold: float, buggy: bool = True, size: int = 200):
    """P_A(s < threshold), P_B(s < threshold) for s = u₁²/(u₁² + u₂²) = cos²θ, :func:`planar_log_densities`' pair:
    the event is |θ − π/2| < arcsin √threshold or |θ − 3π/2| < arcsin √threshold, integrated by Gauss–Legendre in θ
    (its density, (2π)⁻¹ per unit angle under the uniform measure, times p)."""
    half = np.arcsin(np.sqrt(threshold))
    z, wz = np.polynomial.legendre.leggauss(size)
    theta = np.r_[np.pi / 2 + half * z, 3 * np.pi / 2 + half * z]
    theta_weights = np.r_[wz, wz] * half / (2 * np.pi)
    _, t_weights, log_a, log_b = planar_log_densities(d, epsilon, top, buggy, size, theta=theta)
    weights = t_weights[:, None] * theta_weights[None, :]
    return float(np.sum(weights * np.exp(log_a))), float(np.sum(weights * np.exp(log_b)))


def goodness_of_fit(d, epsilon, draws, seed, bins=20):
    """Pearson chi-square tests (``scipy.stats.chisquare``) of ``Bingham(epsilon, random_state=seed).randomise(C)``
    draws, C = diag(1, 0) (d = 2; the statistic the angle θ ∈ [0, π) of ±u) or diag(2, 1, 0) (d = 3; the statistic
    uᵀAu), against the derived (buggy) density and the stated Bingham density; bins of equal probability under the
    derived density, their probabilities by quadrature. Returns {density: (chi-square, p-value)} and the means of u₁²
    (the draws', the derived density's and the stated one's)."""
    from diffprivlib.mechanisms import Bingham

    c = np.diag([1.0, 0.0]) if d == 2 else np.diag([2.0, 1.0, 0.0])
    mech = Bingham(epsilon=epsilon, random_state=seed)
    u = np.array([mech.randomise(c) for _ in range(draws)])
    a_mat = concentration(c, epsilon)
    stat_of = (lambda v: np.mod(np.arctan2(v[..., 1], v[..., 0]), np.pi)) if d == 2 else \
        (lambda v: np.einsum("...i,ij,...j->...", v, a_mat, v))
    nodes, weights = sphere_grid(d, 2000 if d == 2 else 300)
    node_stat = stat_of(nodes)
    order = np.argsort(node_stat)
    out = {}
    edges = None
    for name, buggy in (("derived", True), ("stated", False)):
        p = np.exp(normalised_log_density(c, epsilon, (nodes, weights), buggy)) * weights
        cdf = np.cumsum(p[order])
        if edges is None:  # equal-probability bins under the derived density
            edges = node_stat[order][np.searchsorted(cdf, np.arange(1, bins) / bins)]
        expected = np.diff(np.r_[0.0, np.interp(edges, node_stat[order], cdf), 1.0]) * draws
        observed = np.bincount(np.searchsorted(edges, stat_of(u)), minlength=bins)
        out[name] = stats.chisquare(observed, expected)
    mean_u1 = {"draws": float(np.mean(u[:, 0] ** 2))}
    for name, buggy in (("derived", True), ("stated", False)):
        p = np.exp(normalised_log_density(c, epsilon, (nodes, weights), buggy)) * weights
        mean_u1[name] = float(np.sum(p * nodes[:, 0] ** 2))
    return out, mean_u1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.bingham_sampler",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=4000, help="draws from diffprivlib per goodness-of-fit test")
    parser.add_argument("--starts", type=int, default=40, help="random starts of the worst-pair search")
    options = parser.parse_args(argv)
    started = time.perf_counter()
    eps_fit = 4.0
    for d in (2, 3):
        tests, means = goodness_of_fit(d, eps_fit, options.draws, options.seed)
        line = "; ".join(f"{name}: chi2 = {t.statistic:.1f}, p = {t.pvalue:.3g}" for name, t in tests.items())
        print(f"fit d={d} eps={eps_fit:g} ({options.draws} draws, 20 bins): {line}; E[u1^2] draws "
              f"{means['draws']:.3f}, derived {means['derived']:.3f}, stated {means['stated']:.3f}")
    for d in (2, 3):
        for epsilon in (0.1, 1.0, 4.0):
            ratio, c_a, c_b = worst_pair(d, epsilon, options.seed, starts=options.starts if d == 2 else
                                         options.starts // 4, grid_size=60 if d == 2 else 24)
            correct = privacy_loss(c_a, c_b, epsilon, sphere_grid(d, 96 if d == 3 else 240), buggy=False) / epsilon
            print(f"worst pair d={d} eps={epsilon:g}: loss/eps = {ratio:.3f} (stated density {correct:.3f}); "
                  f"C_A = {np.round(c_a, 3).tolist()}, C_B = {np.round(c_b, 3).tolist()}")
    # the d = 3 winners in round numbers: C_A = diag(0, m2, m3), C_B = C_A + diag(-1, 1, -1), 1 apart exactly
    grid = sphere_grid(3, 200)
    for epsilon, (m2, m3) in ((0.1, (414.0, 442.0)), (1.0, (24.0, 28.0))):
        c_a, c_b = np.diag([0.0, m2, m3]), np.diag([-1.0, m2 + 1.0, m3 - 1.0])
        print(f"pair d=3 eps={epsilon:g}: C_A = diag(0, {m2:g}, {m3:g}), C_B = diag(-1, {m2 + 1:g}, {m3 - 1:g}): "
              f"loss/eps = {privacy_loss(c_a, c_b, epsilon, grid) / epsilon:.3f} "
              f"(stated density {privacy_loss(c_a, c_b, epsilon, grid, buggy=False) / epsilon:.3f})")
    for d in (2, 3, 4, 5, 10, 50):
        cells = ", ".join(f"eps={eps:g}: {axial_loss(d, eps):.3f} ({axial_loss(d, eps, buggy=False):.3f})"
                          for eps in (0.1, 1.0, 4.0))
        print(f"C_A = 0 vs C_B = diag(1, -1, ..., -1), d={d}: loss/eps {cells}")
    for d in (3, 4, 10):
        cells = ", ".join(f"eps={eps:g} M={top:g}: {planar_loss(d, eps, top):.3f} "
                          f"({planar_loss(d, eps, top, buggy=False):.3f})"
                          for eps in (1.0, 2.0) for top in (20.0, 100.0))
        print(f"C_A = diag(M, M, 0, ...) vs C_B = diag(M + 1, M - 1, 0, ...), d={d}: loss/eps {cells}")
    p_a, p_b = planar_event(4, 2.0, 20.0, 1e-3)
    print(f"the audited pair, d=4 eps=2 M=20: loss/eps = {planar_loss(4, 2.0, 20.0):.3f}; the event s < 0.001, "
          f"s = u1^2/(u1^2 + u2^2): P_A = {p_a:.4f}, P_B = {p_b:.4f}, log-ratio {np.log(p_a / p_b):.3f}")
    # OpenDP's make_private_eigenvector: the same acceptance step; its map claims unit_epsilon / 2 per added row
    cells = ", ".join(f"d={d}: {planar_loss(d, 1.0, 100.0, change=(1.0, 0.0)):.3f}" for d in (3, 4, 10))
    print(f"add the row e1 to diag(100, 100, 0, ...) (OpenDP's claim: 0.5 unit_epsilon), loss/unit_epsilon {cells}")
    print(f"seconds: {time.perf_counter() - started:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
