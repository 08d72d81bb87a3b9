"""LIP / max-lift privacy mechanism design by the SVD of W (Zamani, Sadeghi and Skoglund).

Source: Zamani, Sadeghi and Skoglund, An Information Geometric Approach to Local
Information Privacy with Applications to Max-lift and Local Differential Privacy
(arXiv:2501.11757, 2025).

An agent sees useful data Y, correlated with private data X through the leakage matrix
P_{X|Y} (rows x, columns y; square and invertible), and releases U through a kernel
P_{U|Y}. The privacy constraint is bounded local information privacy (LIP), Eq. (1c),
``-ε ≤ log(P_{X|U}(x|u) / P_X(x)) ≤ ε``, or max-lift, Eq. (28), its right half only.

Writing P_{X|U=u} = P_X + ε [√P_X] L_u, the utility I(U;Y) ≈ ½ ε² Σ_u P_U(u) ‖W L_u‖²
(Proposition 1, Eq. (5)) with W = [√P_Y]⁻¹ P_{X|Y}⁻¹ [√P_X]. The designs here put the
L_u along ±L*, the top right singular vector of W (Lemmas 2–5), which gives a binary U.

Information values are in nats. ε is a log-likelihood ratio bound, not an information value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.units import NATS
from estimators.validation import InputError, as_float64, as_generator, as_positive_array, check_choice, check_positive, plain

__all__ = [
    "APPROACHES",
    "LEAKAGES",
    "LIPDesign",
    "LeakageGeometry",
    "ScalingFactors",
    "check_distribution",
    "check_leakage_matrix",
    "kl_divergence",
    "largest_feasible_scale",
    "leakage_geometry",
    "lip_design",
    "privacy_box",
    "scaling_factors",
]

LEAKAGES = ("lip", "max-lift")
APPROACHES = ("first", "second")

# Tolerance for "columns sum to one" and "entries sum to one" on user-supplied distributions.
_STOCHASTIC_TOL = 1e-8


def _finite_array(values, name: str, ndim: int) -> np.ndarray:
    arr = as_float64(values, f"argument '{name}'")
    if arr.ndim != ndim:
        raise InputError(f"argument '{name}' must be {ndim}-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"argument '{name}' contains NaN or inf")
    return arr


def check_leakage_matrix(pxgy, name: str = "pxgy") -> np.ndarray:
    """Return P_{X|Y} (rows x, columns y) as float64, or raise :class:`InputError`.

    It must be square, finite, non-negative, column-stochastic and invertible (the paper's
    standing assumption, Section II and Remark 1).
    """
    arr = _finite_array(pxgy, name, 2)
    if arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise InputError(f"argument '{name}' must be a square matrix of size >= 2, got shape {arr.shape}")
    if np.any(arr < 0):
        raise InputError(f"argument '{name}' has negative entries")
    sums = arr.sum(axis=0)
    if np.any(np.abs(sums - 1.0) > _STOCHASTIC_TOL):
        raise InputError(f"argument '{name}' must be column-stochastic (each column y is P_X|Y=y), "
                         f"column sums are {sums.tolist()}")
    if np.linalg.cond(arr) > 1e12:
        raise InputError(f"argument '{name}' must be invertible (the LIP design needs P_X|Y^-1)")
    return arr


def check_distribution(p, name: str, size: int | None = None) -> np.ndarray:
    """Return a probability vector with all entries > 0, or raise :class:`InputError`."""
    arr = _finite_array(p, name, 1)
    if size is not None and arr.shape[0] != size:
        raise InputError(f"argument '{name}' must have length {size} (the number of columns of the "
                         f"leakage matrix), got {arr.shape[0]}")
    if np.any(arr <= 0):
        raise InputError(f"argument '{name}' must have all entries > 0 (the paper assumes P_Y(y) > 0)")
    if abs(arr.sum() - 1.0) > _STOCHASTIC_TOL:
        raise InputError(f"argument '{name}' must sum to 1, sums to {plain(arr.sum())}")
    return arr


def kl_divergence(p, q) -> np.ndarray:
    """D(p‖q) in nats along the last axis, with 0 log 0 = 0 (q > 0 assumed)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    ratio = np.where(p > 0, p / q, 1.0)
    return np.sum(np.where(p > 0, p * np.log(ratio), 0.0), axis=-1)


@dataclass(frozen=True)
class LeakageGeometry:
    """The ε-free part of the design: P_X, W, σ_max and L*.

    Attributes
    ----------
    pxgy, py, px : ndarray
        P_{X|Y} (rows x, columns y), P_Y and P_X = P_{X|Y} P_Y.
    w : ndarray
        W = [√P_Y]⁻¹ P_{X|Y}⁻¹ [√P_X] (Section III).
    sigma_max : float
        Largest singular value of W on the subspace orthogonal to √P_X. √P_X is a singular
        vector of W with singular value 1, the smallest (Proposition 2), so this is σ_max(W);
        restricting to √P_X^⊥ keeps L* ⊥ √P_X (Eq. (7)) even when σ_max(W) = 1.
    l_star : ndarray
        The unit right singular vector L* for σ_max, signed so its first non-zero entry is > 0.
    c1, c2, c1_prime, c2_prime : float
        The ε ranges of Propositions 3 and 5 under which the local approximation is justified.
    """

    pxgy: np.ndarray
    py: np.ndarray
    px: np.ndarray
    w: np.ndarray
    sigma_max: float
    l_star: np.ndarray
    c1: float
    c2: float
    c1_prime: float
    c2_prime: float

    @property
    def sqrt_px(self) -> np.ndarray:
        return np.sqrt(self.px)

    def to_dict(self) -> dict:
        """A JSON-ready dict of the fields but the inputs ``pxgy`` and ``py``."""
        return fields_to_dict(self, exclude=("pxgy", "py"), null_nonfinite=False)


def leakage_geometry(pxgy, py) -> LeakageGeometry:
    """Compute W, σ_max, L* and the validity ranges c₁, c₂, c₁', c₂' for a leakage matrix.

    Parameters
    ----------
    pxgy : array_like, shape (K, K)
        P_{X|Y}: column y is the distribution of X given Y = y. Invertible.
    py : array_like, shape (K,)
        P_Y, all entries > 0.

    Notes
    -----
    W is defined in Section III; Proposition 2 ([1, App. C]) gives its smallest singular value 1
    with singular vector √P_X. c₁, c₂ are from Proposition 3 (c₁ = min_y P_Y(y) /
    max_y Σ_x |α_yx| P_X(x) with [α] = P_{X|Y}⁻¹, c₂ = σ_min(P_{X|Y}) min_y P_Y(y)); c₁' =
    log(c₁ + 1) and c₂' = log(c₂ + 1) are from Proposition 5.
    """
    pxgy = check_leakage_matrix(pxgy, "pxgy")
    py = check_distribution(py, "py", size=pxgy.shape[1])
    px = pxgy @ py
    if np.any(px <= 0):
        raise InputError("argument 'pxgy' gives P_X(x) = 0 for some x (a zero row); the paper assumes P_X > 0")
    inverse = np.linalg.inv(pxgy)
    sqrt_px = np.sqrt(px)
    w = (inverse / np.sqrt(py)[:, None]) * sqrt_px[None, :]
    # Project √P_X out so the top singular vector is the best direction satisfying (7).
    projector = np.eye(len(px)) - np.outer(sqrt_px, sqrt_px)
    _, singular, vt = np.linalg.svd(w @ projector)
    l_star = vt[0]
    first = np.flatnonzero(np.abs(l_star) > 1e-12)[0]
    l_star = l_star * np.sign(l_star[first])
    min_py = float(py.min())
    c1 = min_py / float(np.max(np.abs(inverse) @ px))
    c2 = float(np.linalg.svd(pxgy, compute_uv=False).min()) * min_py
    return LeakageGeometry(pxgy=pxgy, py=py, px=px, w=w, sigma_max=float(singular[0]), l_star=l_star,
                           c1=c1, c2=c2, c1_prime=float(np.log1p(c1)), c2_prime=float(np.log1p(c2)))


def privacy_box(epsilon, leakage: str = "lip", approach: str = "second"):
    """Coefficients (lower, upper) of the box ``lower·√P_X ≤ L_u ≤ upper·√P_X``.

    - LIP, first approach: Eq. (10) in L-form, lower = −1/(1+ε), upper = 1 (Proposition 3).
    - LIP, second approach: Eq. (9), lower = (e^−ε − 1)/ε, upper = (e^ε − 1)/ε.
    - max-lift, first approach: Eq. (30), lower = −∞, upper = 1.
    - max-lift, second approach: Eq. (37), lower = −∞, upper = (e^ε − 1)/ε.

    Vectorized over ``epsilon``; returns two float arrays of its shape.
    """
    check_choice(leakage, "leakage", LEAKAGES)
    check_choice(approach, "approach", APPROACHES)
    eps = as_positive_array(epsilon, "epsilon")
    if approach == "first":
        lower, upper = -1.0 / (1.0 + eps), np.ones_like(eps)
    else:
        lower, upper = np.expm1(-eps) / eps, np.expm1(eps) / eps
    if leakage == "max-lift":
        lower = np.full_like(eps, -np.inf)
    return lower, upper


def largest_feasible_scale(direction, sqrt_px, lower, upper) -> np.ndarray:
    """Largest t > 0 with ``lower·√P_X ≤ t·direction ≤ upper·√P_X`` (vectorized over the box).

    This is λ of Lemma 3 / Lemma 5 directly, and 1/γ of Lemma 2 / Lemma 4 before the γ ≥ 1 floor.
    Each positive entry d_x caps t at upper·√P_X(x)/d_x, each negative one at lower·√P_X(x)/d_x.
    """
    direction = np.asarray(direction, dtype=np.float64)
    lower = np.asarray(lower, dtype=np.float64)[..., None]
    upper = np.asarray(upper, dtype=np.float64)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        caps = np.where(direction > 0, upper * sqrt_px / direction,
                        np.where(direction < 0, lower * sqrt_px / direction, np.inf))
    return np.min(caps, axis=-1)


@dataclass(frozen=True)
class ScalingFactors:
    """The factors of Lemmas 2–5 for one leakage notion, arrays over ε.

    Attributes
    ----------
    gamma1, gamma2 : ndarray
        Smallest γ ≥ 1 with L*/γ₁ and −L*/γ₂ feasible for the first-approach box (Lemma 2, 4).
    gamma_max : ndarray
        Smallest common factor for both, max(γ₁, γ₂) (Lemma 2).
    lambda1, lambda2 : ndarray
        Largest λ > 0 with λ₁L* and −λ₂L* feasible for the second-approach box (Lemma 3, 5).
    lambda_prime : ndarray
        Largest common factor, min(λ₁, λ₂) (Lemma 3).
    """

    epsilon: np.ndarray
    leakage: str
    gamma1: np.ndarray
    gamma2: np.ndarray
    gamma_max: np.ndarray
    lambda1: np.ndarray
    lambda2: np.ndarray
    lambda_prime: np.ndarray


def scaling_factors(geometry: LeakageGeometry, epsilon, leakage: str = "lip") -> ScalingFactors:
    """γ₁, γ₂, γ_max, λ₁, λ₂, λ' of Lemmas 2–5 for every ε in ``epsilon``."""
    eps = as_positive_array(epsilon, "epsilon")
    s = geometry.sqrt_px
    first = privacy_box(eps, leakage, "first")
    second = privacy_box(eps, leakage, "second")
    gamma1 = np.maximum(1.0, 1.0 / largest_feasible_scale(geometry.l_star, s, *first))
    gamma2 = np.maximum(1.0, 1.0 / largest_feasible_scale(-geometry.l_star, s, *first))
    lambda1 = largest_feasible_scale(geometry.l_star, s, *second)
    lambda2 = largest_feasible_scale(-geometry.l_star, s, *second)
    return ScalingFactors(epsilon=eps, leakage=leakage, gamma1=gamma1, gamma2=gamma2,
                          gamma_max=np.maximum(gamma1, gamma2), lambda1=lambda1, lambda2=lambda2,
                          lambda_prime=np.minimum(lambda1, lambda2))


@dataclass(frozen=True)
class LIPDesign:
    """A binary-U privacy mechanism P_{U|Y} built along ±L*.

    Attributes
    ----------
    epsilon : float
    leakage : str
        ``"lip"`` (Eq. (1c)) or ``"max-lift"`` (Eq. (28)).
    approach : str
        ``"first"`` (Lemma 2 / 4: L*/γ₁, −L*/γ₂) or ``"second"`` (Lemma 3 / 5: λ₁L*, −λ₂L*).
    symmetric : bool
        True for the common-factor designs (γ_max, or λ'), which use a uniform U.
    p_u : ndarray, shape (2,)
    l_vectors : ndarray, shape (K, 2)
        Column u is L_u.
    p_x_given_u, p_y_given_u : ndarray, shape (K, 2)
        Column u is P_{X|U=u} = P_X + ε[√P_X]L_u and P_{Y|U=u} = P_Y + ε P_{X|Y}⁻¹[√P_X]L_u
        (Section IV-A, after Theorem 1).
    p_u_given_y : ndarray, shape (2, K)
        The released kernel: row u, column y, P_{U|Y}(u|y) = P_U(u) P_{Y|U}(y|u) / P_Y(y).
    approx_utility : float
        ½ ε² Σ_u P_U ‖W L_u‖² (Eq. (6)), in nats.
    mutual_information : float
        The exact I(U;Y) of this kernel, Σ_u P_U D(P_{Y|U=u} ‖ P_Y), in nats.
    max_log_lift, min_log_lift : float
        max and min over (x, u) of log(P_{X|U}(x|u)/P_X(x)).
    """

    epsilon: float
    leakage: str
    approach: str
    symmetric: bool
    p_u: np.ndarray
    l_vectors: np.ndarray
    p_x_given_u: np.ndarray
    p_y_given_u: np.ndarray
    p_u_given_y: np.ndarray
    approx_utility: float
    mutual_information: float
    max_log_lift: float
    min_log_lift: float
    unit: str = NATS

    def release(self, y, seed=None) -> np.ndarray:
        """Draw U for each useful-data symbol in ``y`` (integer indices 0..K−1)."""
        rng = as_generator(seed)
        y = np.asarray(y)
        if y.dtype.kind not in "iu" or np.any(y < 0) or np.any(y >= self.p_u_given_y.shape[1]):
            raise InputError(f"argument 'y' must hold integer symbols in [0, {self.p_u_given_y.shape[1]})")
        cumulative = np.cumsum(self.p_u_given_y[:, y], axis=0)
        draws = rng.random(y.shape)
        return np.sum(draws[None, ...] >= cumulative[:-1], axis=0)

    def to_dict(self) -> dict:
        return fields_to_dict(self, null_nonfinite=False)


def lip_design(pxgy, py, epsilon: float, approach: str = "second", leakage: str = "lip",
               symmetric: bool = False) -> LIPDesign:
    """Build the binary-U mechanism that attains the lower bounds of Lemmas 2–5.

    With scales (c₁, c₂) = (1/γ₁, 1/γ₂) (first approach) or (λ₁, λ₂) (second approach),
    L₁ = c₁L*, L₂ = −c₂L* and P_U = (c₂, c₁)/(c₁ + c₂), so Σ_u P_U L_u = 0 (Eq. (8)) and
    ½ε²Σ_u P_U‖WL_u‖² = ½ε²σ²_max c₁c₂ (Appendix A, proofs of Lemmas 2 and 3). With
    ``symmetric=True`` both scales are the common one (1/γ_max or λ') and U is uniform.

    The box of either approach implies the constraint exactly (Lemma 1 for the first; (9) is
    (1c) rewritten for the second), so the kernel meets ε-LIP (or ε-max-lift) whenever it is a
    valid kernel. Raises :class:`InputError` naming ``epsilon`` when ε is so large that a
    P_{Y|U=u} would have a negative entry.
    """
    geometry = leakage_geometry(pxgy, py)
    eps = float(check_positive(epsilon, "epsilon"))
    check_choice(approach, "approach", APPROACHES)
    factors = scaling_factors(geometry, eps, leakage)
    if approach == "first":
        scales = (1.0 / factors.gamma1[()], 1.0 / factors.gamma2[()])
        if symmetric:
            scales = (1.0 / factors.gamma_max[()],) * 2
    else:
        scales = (factors.lambda1[()], factors.lambda2[()])
        if symmetric:
            scales = (factors.lambda_prime[()],) * 2
    c1, c2 = (float(c) for c in scales)
    l_vectors = np.stack([c1 * geometry.l_star, -c2 * geometry.l_star], axis=1)
    p_u = np.array([c2, c1]) / (c1 + c2)
    sqrt_px = geometry.sqrt_px
    p_x_given_u = geometry.px[:, None] + eps * sqrt_px[:, None] * l_vectors
    p_y_given_u = np.linalg.solve(geometry.pxgy, p_x_given_u)
    if np.any(p_y_given_u < -1e-12):
        # The approach's own range: Proposition 3 (c₁, c₂) for the first, Proposition 5 (c₁', c₂') for the second.
        names, ranges = (("c1, c2", (geometry.c1, geometry.c2)) if approach == "first"
                         else ("c1', c2'", (geometry.c1_prime, geometry.c2_prime)))
        raise InputError(
            f"argument 'epsilon' = {plain(eps)} is too large for this design: P_Y|U would have a negative "
            f"entry (the paper's range for the {approach} approach is eps < max({names}) = {max(ranges):.4g})")
    p_y_given_u = np.clip(p_y_given_u, 0.0, None)  # only rounding below 0 remains after the check
    p_u_given_y = (p_u[:, None] * p_y_given_u.T) / geometry.py[None, :]
    log_lift = np.log(p_x_given_u / geometry.px[:, None])
    approx = 0.5 * eps**2 * float(np.sum(p_u * np.sum((geometry.w @ l_vectors) ** 2, axis=0)))
    mi = float(np.sum(p_u * kl_divergence(p_y_given_u.T, geometry.py)))
    return LIPDesign(epsilon=eps, leakage=leakage, approach=approach, symmetric=symmetric, p_u=p_u,
                     l_vectors=l_vectors, p_x_given_u=p_x_given_u, p_y_given_u=p_y_given_u,
                     p_u_given_y=p_u_given_y, approx_utility=approx, mutual_information=mi,
                     max_log_lift=float(log_lift.max()), min_log_lift=float(log_lift.min()))
