"""L2-penalized logistic regression solved by Newton's method, for the audit's classifier statistics.

The model and penalty are scikit-learn's ``LogisticRegression`` defaults (L2, C = 1, intercept
not penalized): minimize

    L(w, c) = Σᵢ [log(1 + e^{zᵢ}) − yᵢ zᵢ] + ‖w‖² / (2C),   zᵢ = xᵢᵀw + c,

a strictly convex problem with one minimizer (Hastie, Tibshirani and Friedman 2009, Section
4.4.1; Bishop 2006, Section 4.3.3). For the few standardized features of a mechanism's output,
Newton's method (iteratively reweighted least squares) reaches it in a handful of steps, each
one solve of a (d + 1) × (d + 1) system, where a quasi-Newton solver takes tens to hundreds of
cheaper ones; a backtracking line search on L (Armijo 1966; Boyd and Vandenberghe 2004,
Algorithm 9.5) makes every step decrease L, so it converges from any start.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from estimators.validation import InputError

#: Newton steps before the fit stops (it converges in far fewer; the coefficients are then still a
#: fixed function of the training data, which is all the event test needs of a statistic).
MAX_NEWTON_STEPS = 100


#: A full step at most this large (relative to 1 + the largest coefficient) keeps the Hessian for the
#: steps after it: the chord method (Ortega and Rheinboldt 1970, Section 10.2; Kelley 1995,
#: Section 5.4.3), whose steps solve with an earlier Hessian and converge linearly at a rate of the
#: order of that Hessian's relative error — here of the order of the last step — to the same
#: minimizer (the gradient is exact; the line search below still makes every step decrease L).
REUSE_HESSIAN_STEP = 1e-3

#: The Newton decrement (relative to 1 + L) below which the full step is taken as the last one.
FINAL_DECREMENT = 1e-10

#: The chord steps from a given Hessian (:func:`fit_logistic`'s ``start_hessian``) go on while each full step is
#: at most this fraction of the one before it; at a step that shrinks less, the Hessian is computed afresh.
CHORD_CONTRACTION = 0.1

#: How many times the chord steps compute their Hessian afresh before handing over to Newton's method.
CHORD_REFRESHES = 2

#: The fewest features (with the intercept) at which a cross-fit shares its folds' first Hessian
#: (:meth:`audit.statistics.classifier.FeatureDesign.start_hessians`): with fewer, a Hessian costs less than
#: the extra passes over the rows that the chord steps take.
SHARED_HESSIAN_MIN_FEATURES = 16


def _weighted_gram(design: np.ndarray, curvature: np.ndarray) -> np.ndarray:
    """Σᵢ cᵢ x̃ᵢ x̃ᵢᵀ: the design's Gram matrix with row weights ``curvature``."""
    return (design * curvature[:, None]).T @ design


def data_hessian(features: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """The Hessian of L's data term at θ = (w, c): Σᵢ pᵢ(1 − pᵢ) x̃ᵢ x̃ᵢᵀ, x̃ᵢ = (xᵢ, 1), pᵢ = σ(x̃ᵢᵀθ)
    (Hastie, Tibshirani and Friedman 2009, Eq. 4.24; the penalty's diagonal is not included).

    It is a sum over rows: the Hessian of a fit on a union of parts of the rows is the sum of the
    parts' (how :func:`audit.statistics.classifier_critic.cross_fit` gives every fold's fit its first Hessian at
    the cost of one pass over all the rows).
    """
    x = np.asarray(features, dtype=np.float64)
    design = np.concatenate([x, np.ones((len(x), 1))], axis=1)
    p = expit(design @ np.asarray(theta, dtype=np.float64))
    return _weighted_gram(design, p * (1.0 - p))


def _loss(z: np.ndarray, labels: np.ndarray, coefficients: np.ndarray, inverse_c: float,
          row_weights: np.ndarray | None) -> float:
    # log(1 + e^z) = max(z, 0) + log(1 + e^{−|z|}): exact, without overflow, and six times faster than logaddexp.
    terms = np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z))) - labels * z
    data = np.sum(terms) if row_weights is None else float(row_weights @ terms)
    return float(data + 0.5 * inverse_c * (coefficients @ coefficients))


def fit_logistic(features: np.ndarray, labels: np.ndarray, c: float = 1.0,
                 tol: float = 1e-6, start: np.ndarray | None = None,
                 sample_weight: np.ndarray | None = None,
                 start_hessian: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """(coefficients w, intercept c) minimizing the module docstring's L on ``features`` and 0/1 ``labels``.

    ``start``: (w, c) as one vector of d + 1 entries to start from (default 0). The minimizer is
    unique, so the start changes only how many steps reach it: a fit on data like those of an
    earlier fit (another fold of the same draws) starts from that fit's solution.

    ``sample_weight``: row i counts ``sample_weight[i]`` times, with ``labels[i]`` in [0, 1] its
    fraction of label 1: L = Σᵢ wᵢ [log(1 + e^{zᵢ}) − yᵢ zᵢ] + ‖w‖²/(2C), which for the distinct
    rows of a sample, wᵢ their counts and yᵢ their fractions of label 1, is the sample's own L
    term for term (so the minimizer is the same, found with one row per distinct row).

    Stops after a full Newton step whose largest entry is at most ``tol`` (1 + the largest
    coefficient), or after the step whose Newton decrement λ² = gᵀH⁻¹g (twice the decrease it
    predicts) is below :data:`FINAL_DECREMENT` (1 + L), taken in full — near the minimizer
    Newton's method converges quadratically (Boyd and Vandenberghe 2004, Section 9.5.3: the error
    after a full step is of the order of the step's size squared, here 10⁻¹² at the default
    ``tol``), so either step leaves the coefficients at about rounding precision — or after
    :data:`MAX_NEWTON_STEPS` steps.

    ``start_hessian``: the data term's Hessian at ``start`` (:func:`data_hessian` of these rows, or a
    sum of its values on parts of them). The fit then first takes chord steps, each solving with that
    one Hessian (Ortega and Rheinboldt 1970, Section 10.2; Kelley 1995, Section 5.4.3: the gradient is
    exact, so they converge to the same minimizer, linearly at a rate r of the order of the Hessian's
    relative change over the remaining distance), computing it afresh where the steps stop
    contracting by :data:`CHORD_CONTRACTION`, and stops where the distance still to go, at most
    size·r/(1 − r) after a step of that size, is below ``tol``² (the precision Newton's last step
    leaves); where they fail (:func:`_chord_steps`), Newton's method above goes on from where they stopped.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise InputError(f"argument 'features' must be (n, d) and 'labels' (n,), got {x.shape} and {y.shape}")
    if not c > 0:
        raise InputError(f"argument 'c' must be > 0, got {c!r}")
    row_weights = None
    if sample_weight is not None:
        row_weights = np.asarray(sample_weight, dtype=np.float64)
        if row_weights.shape != y.shape or not np.all(np.isfinite(row_weights)) or np.any(row_weights < 0):
            raise InputError(f"argument 'sample_weight' must be {len(y)} finite numbers >= 0, got shape "
                             f"{row_weights.shape}")
    n, d = x.shape
    design = np.concatenate([x, np.ones((n, 1))], axis=1)
    ridge = np.full(d + 1, 1.0 / c)
    ridge[-1] = 0.0
    if start is None:
        theta, z = np.zeros(d + 1), np.zeros(n)
    else:
        theta = np.array(start, dtype=np.float64)
        if theta.shape != (d + 1,) or not np.all(np.isfinite(theta)):
            raise InputError(f"argument 'start' must be {d + 1} finite numbers, got shape {theta.shape}")
        z = design @ theta
    loss = _loss(z, y, theta[:d], 1.0 / c, row_weights)
    if start_hessian is not None:
        start_hessian = np.asarray(start_hessian, dtype=np.float64)
        if start is None or start_hessian.shape != (d + 1, d + 1) or not np.all(np.isfinite(start_hessian)):
            raise InputError(f"argument 'start_hessian' must be {d + 1} x {d + 1} finite numbers with a 'start', got "
                             f"shape {start_hessian.shape}")
        theta, z, loss, converged = _chord_steps(design, y, ridge, theta, z, loss, start_hessian + np.diag(ridge),
                                                 row_weights, 1.0 / c, tol)
        if converged:
            return theta[:d], float(theta[d])
    hessian, reuse_hessian = None, False
    for _ in range(MAX_NEWTON_STEPS):
        p = expit(z)
        curvature = p * (1.0 - p)
        residual = p - y
        if row_weights is not None:
            residual *= row_weights
            curvature *= row_weights
        gradient = design.T @ residual + ridge * theta
        if hessian is None or not reuse_hessian:
            hessian = _weighted_gram(design, curvature) + np.diag(ridge)
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        decrement = float(gradient @ step)
        if decrement <= 0.0:
            break
        if decrement <= FINAL_DECREMENT * (1.0 + abs(loss)):
            # Within rounding of L the line search cannot tell steps apart; this close, the full
            # step is the one that converges (quadratically), so it is the last.
            theta = theta - step
            break
        # Backtracking (Armijo): halve the step until L falls by at least a quarter of the predicted decrease.
        t, dz = 1.0, design @ step
        while True:
            candidate = theta - t * step
            z_candidate = z - t * dz
            new_loss = _loss(z_candidate, y, candidate[:d], 1.0 / c, row_weights)
            if new_loss <= loss - 0.25 * t * decrement or t < 1e-12:
                break
            t *= 0.5
        if t < 1e-12:
            break
        theta, z, loss = candidate, z_candidate, new_loss
        size = np.max(np.abs(step)) / (1.0 + np.max(np.abs(theta)))
        if t == 1.0 and size <= tol:
            break
        # After a small full step the Hessian barely changes: the next steps solve with the last one.
        reuse_hessian = t == 1.0 and size <= REUSE_HESSIAN_STEP
    return theta[:d], float(theta[d])


def _chord_steps(design, y, ridge, theta, z, loss, hessian, row_weights, inverse_c, tol):
    """:func:`fit_logistic`'s chord steps from the given ``hessian`` (penalty included): (θ, z, L, converged).

    Each step is the Newton step with the Hessian held fixed, taken in full where it decreases L by
    at least a quarter of the decrease it predicts (Armijo's test at t = 1) and is at most
    :data:`CHORD_CONTRACTION` times the step before it. A step that fails either test is not
    taken: the Hessian is computed afresh at the current point instead (at most
    :data:`CHORD_REFRESHES` times; then the fit hands over, unconverged, to Newton's method with its
    line search). The fit has converged once the distance left after a full step of size s at the
    observed rate r = s/s_prev, at most s·r/(1 − r) (a geometric series), is at most ``tol``². Within
    rounding of L (the Newton decrement below :data:`FINAL_DECREMENT`) Armijo's test cannot judge a
    step, so such steps are judged by the contraction test alone.
    """
    d = design.shape[1] - 1
    previous, refreshes = None, 0
    for _ in range(MAX_NEWTON_STEPS):
        p = expit(z)
        residual = p - y
        if row_weights is not None:
            residual *= row_weights
        gradient = design.T @ residual + ridge * theta
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return theta, z, loss, False
        decrement = float(gradient @ step)
        size = np.max(np.abs(step)) / (1.0 + np.max(np.abs(theta)))
        if decrement <= 0.0 or size == 0.0:  # the gradient vanishes: θ is the minimizer
            return theta, z, loss, True
        candidate, z_candidate = theta - step, z - design @ step
        new_loss = _loss(z_candidate, y, candidate[:d], inverse_c, row_weights)
        shrinks = previous is None or size <= CHORD_CONTRACTION * previous
        descends = decrement <= FINAL_DECREMENT * (1.0 + abs(loss)) or new_loss <= loss - 0.25 * decrement
        if not (shrinks and descends):
            if refreshes == CHORD_REFRESHES:
                return theta, z, loss, False
            curvature = p * (1.0 - p) if row_weights is None else p * (1.0 - p) * row_weights
            hessian = _weighted_gram(design, curvature) + np.diag(ridge)
            previous, refreshes = None, refreshes + 1
            continue
        theta, z, loss = candidate, z_candidate, new_loss
        if previous is not None:
            rate = size / previous
            if size * rate / (1.0 - rate) <= tol * tol:
                return theta, z, loss, True
        previous = size
    return theta, z, loss, False
