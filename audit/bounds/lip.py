"""Bounds and exact optima for LIP / max-lift privacy–utility design.

Source: Zamani, Sadeghi and Skoglund, An Information Geometric Approach to Local Information
Privacy with Applications to Max-lift and Local Differential Privacy (arXiv:2501.11757, 2025);
the construction itself is in
:mod:`mechanisms.constructions.lip`.

Three quantities are computed exactly here, all by one method. Each is the largest value of
Σ_u P_U(u) f(z_u) over distributions of points z_u in a polytope Z with a prescribed mean,
where f is convex:

- problem (1) (or (29) for max-lift): z = P_{Y|U=u} ∈ Z = {q in the simplex :
  e^−ε P_X ≤ P_{X|Y} q ≤ e^ε P_X}, mean P_Y, f(q) = D(q ‖ P_Y);
- P₁ of Eq. (12) (P₁' of Eq. (31)): z = L_u in the first-approach box ∩ √P_X^⊥, mean 0,
  f(L) = ½ε²‖WL‖²;
- P₂ of Eq. (19) (P₂'): the same with the second-approach box.

Because f is convex, splitting each z_u into the vertices of Z never lowers the objective and
keeps the mean, so the optimum is a distribution on the vertices of Z: a linear program in the
vertex weights (the extreme-point argument of [34] cited in Remark 2 of the paper, and
Proposition 7). The LP dual μ is a certificate: f(v) ≤ μ·(v, 1) at every vertex v implies it on
all of Z (f − μ·(·,1) is convex), so μ·(mean, 1) bounds every mechanism, whatever |U|. A basic
optimal solution uses at most dim+1 vertices, so |U| ≤ |Y| + 1 suffices (Carathéodory).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from estimators.result_forms import fields_to_dict
from estimators.units import NATS, convert
from estimators.validation import InputError, as_positive_array, check_choice, check_positive, plain
from mechanisms.constructions.lip import (LEAKAGES, ScalingFactors, kl_divergence, leakage_geometry, privacy_box, scaling_factors)

__all__ = ["LIPBounds", "MixtureOptimum", "approximate_optimum", "exact_optimum", "lip_bounds"]

# The vertex search enumerates every choice of active constraints; beyond this many choices
# it is no longer a "small alphabet" and we refuse rather than run for minutes.
MAX_COMBINATIONS = 200_000
_FEASIBILITY_TOL = 1e-10


def polytope_vertices(eq_matrix, eq_rhs, ineq_matrix, ineq_rhs, max_combinations: int = MAX_COMBINATIONS):
    """All vertices of {z : E z = e, G z ≤ h} (bounded), by enumerating active constraint sets.

    A vertex is a feasible point where n linearly independent constraints are tight; with the
    m equalities always tight, choose n − m inequalities, solve, and keep feasible solutions.

    Returns
    -------
    ndarray, shape (V, n)
    """
    eq_matrix = np.atleast_2d(eq_matrix)
    n, m = eq_matrix.shape[1], eq_matrix.shape[0]
    choose = n - m
    total = math.comb(len(ineq_matrix), choose)
    if total > max_combinations:
        raise InputError(f"argument 'pxgy' is too large for the exact vertex search ({total} active sets; "
                         f"at most {max_combinations}); use the bounds only")
    found = []
    combos = itertools.combinations(range(len(ineq_matrix)), choose)
    while True:
        chunk = np.array(list(itertools.islice(combos, 20_000)), dtype=np.intp).reshape(-1, choose)
        if len(chunk) == 0:
            break
        systems = np.concatenate([np.broadcast_to(eq_matrix, (len(chunk), m, n)), ineq_matrix[chunk]], axis=1)
        rhs = np.concatenate([np.broadcast_to(eq_rhs, (len(chunk), m)), ineq_rhs[chunk]], axis=1)
        regular = np.linalg.cond(systems) < 1e10
        points = np.linalg.solve(systems[regular], rhs[regular][..., None])[..., 0]
        slack = points @ ineq_matrix.T - ineq_rhs
        found.append(points[np.all(slack <= _FEASIBILITY_TOL * (1 + np.abs(ineq_rhs)), axis=1)])
    vertices = np.concatenate(found)
    # Degenerate vertices are found once per active set that pins them; keep one copy.
    _, first = np.unique(np.round(vertices, 9), axis=0, return_index=True)
    return vertices[np.sort(first)]


@dataclass(frozen=True)
class MixtureOptimum:
    """The exact maximum of Σ_u P_U f(z_u) over mean-constrained distributions on a polytope.

    Attributes
    ----------
    problem : str
        ``"optimum"`` (problem (1) / (29)), ``"P1"`` (Eq. (12) / (31)) or ``"P2"`` (Eq. (19)).
    value : float
        The optimum, in ``unit``.
    p_u : ndarray, shape (|U|,)
        The optimal P_U (zero-weight vertices dropped).
    points : ndarray, shape (n, |U|)
        Column u is z_u: P_{Y|U=u} for ``"optimum"``, L_u for ``"P1"``/``"P2"``.
    p_u_given_y : ndarray or None, shape (|U|, |Y|)
        The optimal mechanism (``"optimum"`` only).
    certificate : float
        μ·(mean, 1) from the LP dual: an upper bound on the objective of every mechanism.
    certificate_violation : float
        max over vertices of f(v) − μ·(v, 1); ≤ 0 up to rounding when the certificate holds.
    vertices_searched : int
        Number of vertices of the polytope the LP chose among.
    method : str
    """

    problem: str
    epsilon: float
    leakage: str
    value: float
    p_u: np.ndarray
    points: np.ndarray
    p_u_given_y: np.ndarray | None
    certificate: float
    certificate_violation: float
    vertices_searched: int
    unit: str = NATS
    method: str = "vertex enumeration + linear program over vertex weights (HiGHS), LP-dual certificate"

    @property
    def u_alphabet_size(self) -> int:
        return len(self.p_u)

    def to(self, unit: str) -> "MixtureOptimum":
        """The same optimum with ``value`` and ``certificate`` in ``unit``."""
        return dataclasses.replace(self, unit=unit, value=convert(self.value, self.unit, unit),
                                   certificate=convert(self.certificate, self.unit, unit))

    def to_dict(self) -> dict:
        """A JSON-ready dict of the fields (arrays become lists) plus ``u_alphabet_size``."""
        order = ("problem", "epsilon", "leakage", "value", "unit", "p_u", "points", "p_u_given_y", "certificate",
                 "certificate_violation", "u_alphabet_size")
        return fields_to_dict(self, order=order, extra={"u_alphabet_size": self.u_alphabet_size},
                              null_nonfinite=False)


def _best_mixture(vertices: np.ndarray, values: np.ndarray, mean: np.ndarray):
    """Maximize Σ w_v f(v) s.t. Σ w_v v = mean, Σ w_v = 1, w ≥ 0; return (w, value, μ)."""
    constraint = np.vstack([vertices.T, np.ones(len(vertices))])
    target = np.append(mean, 1.0)
    result = linprog(-values, A_eq=constraint, b_eq=target, bounds=(0, None), method="highs")
    if result.status != 0:
        raise RuntimeError(f"the vertex LP did not solve: {result.message}")  # cannot happen: P_Y / 0 is feasible
    mu = -np.asarray(result.eqlin.marginals)
    return result.x, float(-result.fun), mu, constraint, target


def _solve_mixture(problem, epsilon, leakage, vertices, values, mean) -> dict:
    weights, value, mu, constraint, target = _best_mixture(vertices, values, mean)
    used = weights > 1e-12
    return dict(problem=problem, epsilon=float(epsilon), leakage=leakage, value=value,
                p_u=weights[used] / weights[used].sum(), points=vertices[used].T,
                certificate=float(mu @ target), certificate_violation=float(np.max(values - mu @ constraint)),
                vertices_searched=len(vertices))


def exact_optimum(pxgy, py, epsilon: float, leakage: str = "lip") -> MixtureOptimum:
    """The exact value of problem (1) (``leakage="lip"``) or (29) (``"max-lift"``), in nats.

    sup over P_{U|Y} of I(U;Y) subject to X − Y − U and the ε-LIP (or ε-max-lift) constraint,
    over every output alphabet U. Method: P_{Y|U=u} ranges over the polytope
    Q = {q ∈ simplex : e^−ε P_X ≤ P_{X|Y} q ≤ e^ε P_X} (the constraint (1c) is
    P_{X|U=u} = P_{X|Y} P_{Y|U=u} within [e^−ε, e^ε] P_X); I(U;Y) = Σ_u P_U D(P_{Y|U=u}‖P_Y)
    is convex in each P_{Y|U=u}, so the optimum sits on the vertices of Q (see the module
    docstring); the vertex weights solve an LP with Σ_v w_v v = P_Y. The returned mechanism is
    P_{U|Y}(u|y) = P_U(u) P_{Y|U}(y|u) / P_Y(y) with |U| ≤ |Y| + 1.
    """
    check_choice(leakage, "leakage", LEAKAGES)
    geometry = leakage_geometry(pxgy, py)
    eps = check_positive(epsilon, "epsilon")
    k = len(geometry.py)
    rows = [-np.eye(k), geometry.pxgy]
    # P_X|Y q ≤ 1 for every q in the simplex, so the upper constraint is vacuous once
    # e^ε min P_X ≥ 1; holding e^ε there gives the same polytope and cannot overflow.
    rhs = [np.zeros(k), math.exp(min(eps, -math.log(geometry.px.min()))) * geometry.px]
    if leakage == "lip":
        rows.append(-geometry.pxgy)
        rhs.append(-math.exp(-eps) * geometry.px)
    vertices = polytope_vertices(np.ones((1, k)), np.ones(1), np.vstack(rows), np.concatenate(rhs))
    values = kl_divergence(vertices, geometry.py)
    found = _solve_mixture("optimum", eps, leakage, vertices, values, geometry.py)
    kernel = found["p_u"][:, None] * found["points"].T / geometry.py[None, :]
    return MixtureOptimum(p_u_given_y=kernel, **found)


def _quadratic_polytope(geometry, epsilon: float, leakage: str, approach: str):
    lower, upper = (float(v) for v in privacy_box(epsilon, leakage, approach))
    if not math.isfinite(upper):
        raise InputError(f"argument 'epsilon' = {plain(epsilon)} is too large for the {approach} approach: its box "
                         "(e^eps - 1)/eps is beyond the float range")
    s = geometry.sqrt_px
    k = len(s)
    rows, rhs = [np.eye(k)], [upper * s]
    if np.isfinite(lower):
        rows.append(-np.eye(k))
        rhs.append(-lower * s)
    return polytope_vertices(s[None, :], np.zeros(1), np.vstack(rows), np.concatenate(rhs))


def approximate_optimum(pxgy, py, epsilon: float, approach: str = "second", leakage: str = "lip") -> MixtureOptimum:
    """The exact value of the quadratic problems P₁ (Eq. (12)), P₂ (Eq. (19)), P₁' (31), P₂' (Lemma 5).

    max over L_u, P_U of ½ε² Σ_u P_U ‖W L_u‖² with L_u ⊥ √P_X (7), Σ_u P_U L_u = 0 (8) and the
    approach's box (:func:`mechanisms.constructions.lip.privacy_box`). For K = 2 this equals the closed forms
    (14) and (20) (LIP) and (38) (max-lift P₂'); max-lift P₁' at K = 2 is ½ε²σ²_max (the segment of L has
    mean-zero energy κ = 1, :func:`_max_lift_energy`), above the paper's Eq. (35) ½ε²σ²_max/(γ₁γ₂) wherever
    γ₁γ₂ > 1, which is a lower bound only. For K > 2 the paper gives only bounds, and this is the exact value.
    """
    check_choice(leakage, "leakage", LEAKAGES)
    geometry = leakage_geometry(pxgy, py)
    eps = check_positive(epsilon, "epsilon")
    vertices = _quadratic_polytope(geometry, eps, leakage, approach)
    values = 0.5 * eps**2 * np.sum((vertices @ geometry.w.T) ** 2, axis=1)
    problem = "P1" if approach == "first" else "P2"
    found = _solve_mixture(problem, eps, leakage, vertices, values, np.zeros(len(geometry.px)))
    return MixtureOptimum(p_u_given_y=None, **found)


def _max_lift_energy(geometry) -> float:
    """κ = max E‖L‖² over mean-zero distributions on {L ⊥ √P_X, L ≤ √P_X} (first max-lift box).

    Lemma 4 states P₁' ≤ ½ε²σ²_max, which assumes ‖L‖ ≤ 1; without a lower box edge that fails
    for K ≥ 3 (e.g. uniform P_X, K = 3: L = (1, 1, −2)/√3 is feasible with ‖L‖² = 2). The correct
    factor is κ (κ = 1 for K = 2), and P₁' ≤ ½ε²σ²_max κ, P₂' ≤ ½σ²_max (e^ε − 1)² κ.
    """
    vertices = _quadratic_polytope(geometry, 1.0, "max-lift", "first")  # this box does not depend on ε
    return _best_mixture(vertices, np.sum(vertices**2, axis=1), np.zeros(len(geometry.px)))[1]


@dataclass(frozen=True)
class LIPBounds:
    """Closed-form bounds of Lemmas 2–5 and Theorems 1–3, arrays over ε (information in ``unit``).

    Attributes
    ----------
    factors : the ε grid, the leakage notion and γ₁, γ₂, γ_max, λ₁, λ₂, λ' (Lemmas 2–5).
    P1_lower : ½ε²σ²/(γ₁γ₂) (Lemma 2, Eq. (13); Lemma 4 for max-lift); equals P₁ for K = 2 (Eq. (14)), but
        not P₁' for max-lift (Eq. (35) does not hold: P₁' = ½ε²σ² at K = 2, :func:`approximate_optimum`).
    P1_lower_gamma_max : ½ε²σ²/γ_max² (Lemma 2).
    P1_upper : ½ε²σ² (Lemma 2); for max-lift ½ε²σ²κ (see :func:`_max_lift_energy`).
    P2_lower : ½ε²σ²λ₁λ₂ (Lemma 3; Lemma 5); equals P₂ for K = 2 (Eq. (20)).
    P2_lower_lambda_prime : ½ε²σ²λ'² (Lemma 3).
    P2_upper : ½σ²(e^ε − 1)² (Lemma 3); for max-lift times κ.
    chi2_approximation : ½ε²σ², the approximate optimum under the strong χ²-criterion of [1]
        (Section VI: "½ε²(7.4012)² = 27.39ε²" for Example 1).
    optimum_upper : a rigorous upper bound on problem (1) itself (not an approximation):
        I(U;Y) ≤ Σ_u P_U χ²(P_{Y|U=u}‖P_Y) (D ≤ log(1 + χ²) ≤ χ²), χ² = ‖W z_u‖² ≤ σ²‖z_u‖²
        with z_u = √P_X ⊙ (lift − 1), and by the Bhatia–Davis inequality (Var ≤ (M − 1)(1 − m)
        for a mean-1 variable in [m, M]) E_U‖z_U‖² ≤ (e^ε − 1)(1 − e^−ε) for LIP, (e^ε − 1)
        for max-lift (lift ∈ [0, e^ε]); capped by H(Y).
    """

    factors: ScalingFactors
    sigma_max: float
    P1_lower: np.ndarray
    P1_lower_gamma_max: np.ndarray
    P1_upper: np.ndarray
    P2_lower: np.ndarray
    P2_lower_lambda_prime: np.ndarray
    P2_upper: np.ndarray
    chi2_approximation: np.ndarray
    optimum_upper: np.ndarray
    unit: str = NATS

    _INFO_FIELDS = ("P1_lower", "P1_lower_gamma_max", "P1_upper", "P2_lower", "P2_lower_lambda_prime",
                    "P2_upper", "chi2_approximation", "optimum_upper")

    def to(self, unit: str) -> "LIPBounds":
        """The same bounds with every information field in ``unit``."""
        changes = {name: convert(getattr(self, name), self.unit, unit) for name in self._INFO_FIELDS}
        return dataclasses.replace(self, unit=unit, **changes)

    @property
    def epsilon(self) -> np.ndarray:
        return self.factors.epsilon

    def to_dict(self) -> dict:
        """A flat JSON-ready dict: the scaling factors, σ_max and the bounds (lists over ε)."""
        return {**fields_to_dict(self.factors, null_nonfinite=False),
                **fields_to_dict(self, exclude=("factors",), null_nonfinite=False)}


def lip_bounds(pxgy, py, epsilon, leakage: str = "lip") -> LIPBounds:
    """All closed-form bounds for every ε in ``epsilon`` (scalar or array), in nats.

    Cheap over a grid of ε: the SVD is done once and the rest is vectorized.
    """
    check_choice(leakage, "leakage", LEAKAGES)
    geometry = leakage_geometry(pxgy, py)
    eps = as_positive_array(epsilon, "epsilon")
    f = scaling_factors(geometry, eps, leakage)
    half_sq = 0.5 * eps**2 * geometry.sigma_max**2
    energy = 1.0 if leakage == "lip" else _max_lift_energy(geometry)
    if leakage == "lip":
        spread = np.expm1(eps) * -np.expm1(-eps)
    else:
        spread = np.expm1(eps)
    entropy_y = float(-np.sum(geometry.py * np.log(geometry.py)))
    return LIPBounds(
        factors=f, sigma_max=geometry.sigma_max,
        P1_lower=half_sq / (f.gamma1 * f.gamma2), P1_lower_gamma_max=half_sq / f.gamma_max**2,
        P1_upper=half_sq * energy, P2_lower=half_sq * f.lambda1 * f.lambda2,
        P2_lower_lambda_prime=half_sq * f.lambda_prime**2,
        P2_upper=0.5 * geometry.sigma_max**2 * np.expm1(eps) ** 2 * energy,
        chi2_approximation=half_sq,
        optimum_upper=np.minimum(geometry.sigma_max**2 * spread, entropy_y),
    )
