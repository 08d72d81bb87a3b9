"""Certified lower bounds on MI from a fixed, bounded critic and held-out samples.

For any fixed critic T with values in [lo, hi], DV(T) = E_P[T] − log E_Q[e^T] ≤ I(X; Y)
(Donsker–Varadhan), Q = P_X ⊗ P_Y. A one-sided lower confidence bound on E_P[T] and an upper
confidence bound on E_Q[e^T], each at level δ/2, therefore give L with P(L > I) ≤ δ
(DESIGN.md, "The statistical core"). The joint samples are the held-out pairs (x_i, y_i);
the product samples must be independent draws from Q, which pairing x of one held-out
sample with y of a different one, each sample used once, provides.

The trained critic may sit well below its nominal ceiling ``hi``; the e^hi range term of
the bound is then loose. Capping the critic, T_c = min(T, c), is again a fixed bounded
function, so a cap c chosen on the validation split (never on the certification split)
keeps the guarantee and tightens the bound (:func:`choose_caps`).
"""

from __future__ import annotations

import math

import numpy as np

from .validation import InputError, check_choice, check_probability

BOUND_METHODS = ("bernstein", "hoeffding")


def _ucb_from_moments(mean, variance, n, value_range, delta: float, method: str):
    if method == "hoeffding":
        return mean + value_range * np.sqrt(np.log(1.0 / delta) / (2.0 * n))
    log_term = np.log(2.0 / delta)
    return mean + np.sqrt(2.0 * variance * log_term / n) + 7.0 * value_range * log_term / (3.0 * (n - 1))


def upper_confidence_bound(samples, value_range, delta: float, method: str = "bernstein"):
    """One-sided upper confidence bound on the mean of i.i.d. variables with range ``value_range``.

    Works along the last axis (so a (M, n) array gives M bounds; ``value_range`` may be an
    array broadcasting against (M,)), each holding with probability at least 1 − ``delta``.

    ``"bernstein"``: empirical Bernstein bound of Maurer and Pontil (2009), "Empirical Bernstein
    bounds and sample variance penalization", Theorem 4: for Z_i ∈ [a, a + R],
    E Z ≤ Z̄ + sqrt(2 V_n ln(2/δ) / n) + 7 R ln(2/δ) / (3 (n − 1)), with V_n the unbiased
    sample variance.
    ``"hoeffding"``: Hoeffding (1963), Theorem 2: E Z ≤ Z̄ + R sqrt(ln(1/δ) / (2n)).
    """
    check_choice(method, "method", BOUND_METHODS)
    check_probability(delta, "delta")
    samples = np.asarray(samples, dtype=np.float64)
    n = samples.shape[-1]
    if n < 2:
        raise InputError(f"certification needs at least 2 held-out samples, got {n}")
    return _ucb_from_moments(samples.mean(axis=-1), samples.var(axis=-1, ddof=1), n,
                             np.asarray(value_range, dtype=np.float64), delta, method)


def dv_lower_bound(t_joint, t_product, lo, hi, delta: float, method: str = "bernstein"):
    """Certified lower bound on I(X; Y) from a critic bounded to [lo, hi].

    Parameters
    ----------
    t_joint : array (..., n)
        Critic values on held-out joint samples.
    t_product : array (..., n')
        Critic values on independent product-of-marginals samples.
    lo, hi : float or array (...)
        The critic's guaranteed range.
    delta : float
        Failure probability of the bound (split equally between the two means).

    Returns
    -------
    L : float or array (...)
        L = LCB(E_P[T]) − log UCB(E_Q[e^T]) with P(L > I(X; Y)) ≤ δ.
    """
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    lcb_joint = -upper_confidence_bound(-np.asarray(t_joint, dtype=np.float64), hi - lo, delta / 2.0, method)
    ucb_exp = upper_confidence_bound(np.exp(np.asarray(t_product, dtype=np.float64)),
                                     np.exp(hi) - np.exp(lo), delta / 2.0, method)
    return lcb_joint - np.log(ucb_exp)


#: The quantile levels of a critic's pooled validation values that are its candidate caps (:func:`cap_candidates`).
CAP_LEVELS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0)


def cap_candidates(val_joint, val_product, hi: float) -> np.ndarray:
    """Each critic's candidate caps (M, 11): the :data:`CAP_LEVELS` quantiles of its validation values, joint and
    product pooled, and ``hi`` itself, none above ``hi``. They depend on no δ: :func:`choose_caps` at several δ on
    the same validation values (the per-slice and the sliced certificates of one fit) can share them, computed once
    (each is a partition of every critic's values)."""
    val_joint = np.atleast_2d(np.asarray(val_joint, dtype=np.float64))
    val_product = np.atleast_2d(np.asarray(val_product, dtype=np.float64))
    pooled = np.concatenate((val_joint, val_product), axis=1)
    candidates = np.concatenate((np.quantile(pooled, np.array(CAP_LEVELS), axis=1).T, np.full((len(pooled), 1), hi)),
                                axis=1)
    return np.minimum(candidates, hi)


def choose_caps(val_joint, val_product, lo: float, hi: float, *, n_joint: int, n_product: int,
                delta: float, method: str = "bernstein", candidates=None) -> np.ndarray:
    """Per-critic cap c ≤ hi maximizing the predicted certified bound of min(T, c).

    The prediction plugs validation-split means and variances of the capped critic into the
    bound of :func:`dv_lower_bound` with the certification split's sample sizes. Candidate
    caps are quantiles of each critic's validation values (and ``hi`` itself), chosen without
    looking at the certification split (:func:`cap_candidates`; ``candidates``: those already computed).

    Returns
    -------
    caps : ndarray (M,)
    """
    val_joint = np.atleast_2d(np.asarray(val_joint, dtype=np.float64))
    val_product = np.atleast_2d(np.asarray(val_product, dtype=np.float64))
    if candidates is None:
        candidates = cap_candidates(val_joint, val_product, hi)
    joint = np.minimum(val_joint[:, None, :], candidates[:, :, None])
    expo = np.exp(np.minimum(val_product[:, None, :], candidates[:, :, None]))
    lcb = -_ucb_from_moments(-joint.mean(-1), joint.var(-1, ddof=1), n_joint, candidates - lo, delta / 2.0, method)
    ucb = _ucb_from_moments(expo.mean(-1), expo.var(-1, ddof=1), n_product,
                            np.exp(candidates) - math.exp(lo), delta / 2.0, method)
    predicted = lcb - np.log(ucb)
    return candidates[np.arange(len(candidates)), predicted.argmax(axis=1)]


def certify_critics(fit, delta: float, method: str = "bernstein", candidates=None):
    """Per-critic certified lower bounds of a :class:`~estimators.neural.CriticFit`.

    Each critic is capped at the level chosen on its validation split (:func:`choose_caps`)
    and certified on the test split at failure probability ``delta``. For K critics to hold
    simultaneously, pass ``delta = α / K`` (union bound). ``candidates``: the fit's :func:`cap_candidates`, where
    already computed.

    Returns
    -------
    bounds : ndarray (M,)
    caps : ndarray (M,)
    """
    lo, hi = fit.output_range
    caps = choose_caps(fit.validation_joint, fit.validation_product, lo, hi,
                       n_joint=fit.test_joint.shape[1], n_product=fit.test_product.shape[1],
                       delta=delta, method=method, candidates=candidates)
    bounds = dv_lower_bound(np.minimum(fit.test_joint, caps[:, None]), np.minimum(fit.test_product, caps[:, None]),
                            lo, caps, delta, method)
    return bounds, caps


def averaging_shifts(validation_product, caps) -> np.ndarray:
    """Per-critic shifts c_s = log mean exp(min(T_s, cap_s)) on the validation split.

    DV is invariant to shifting a critic, but the Jensen step of
    :func:`averaged_dv_lower_bound` is tight only when every critic has E_Q[e^T] ≈ 1; shifting
    by a level estimated on the validation split (never the certification split) gets there.
    """
    capped = np.minimum(np.asarray(validation_product, dtype=np.float64), np.asarray(caps, dtype=np.float64)[:, None])
    top = capped.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(capped - top).mean(axis=1, keepdims=True)))[:, 0]


def averaged_dv_lower_bound(t_joint, t_product, lo: float, caps, delta: float, method: str = "bernstein",
                            shifts=None) -> float:
    """Certified lower bound on the average MI over p critics' slices, at failure probability δ.

    With T_s capped at c_s and shifted by a fixed s_s (:func:`averaging_shifts`; DV is
    shift-invariant), (1/p) Σ_s DV(T_s) ≥ E_P[(1/p) Σ_s T_s] − log E_Q[(1/p) Σ_s e^{T_s}]
    because (1/p) Σ_s log m_s ≤ log((1/p) Σ_s m_s) (concavity of log). Each side is the mean of
    one bounded variable per sample — its range the average of the slices' ranges — so two
    concentration bounds suffice, whatever p is: no union bound over slices. The result
    lower-bounds the Monte Carlo sliced MI over the drawn slices, (1/p) Σ_s I(θ_sᵀX; φ_sᵀY)
    (Pufferfish paper, Eq. (7)).
    """
    caps = np.asarray(caps, dtype=np.float64)
    shifts = np.zeros_like(caps) if shifts is None else np.asarray(shifts, dtype=np.float64)
    check_probability(delta, "delta")
    joint = (np.minimum(np.asarray(t_joint, dtype=np.float64), caps[:, None]) - shifts[:, None]).mean(axis=0)
    product = np.exp(np.minimum(np.asarray(t_product, dtype=np.float64), caps[:, None]) - shifts[:, None]).mean(axis=0)
    joint_range = float(np.mean(caps - lo))
    exp_range = float(np.mean(np.exp(caps - shifts) - np.exp(lo - shifts)))
    lcb = -upper_confidence_bound(-joint, joint_range, delta / 2.0, method)
    ucb = upper_confidence_bound(product, exp_range, delta / 2.0, method)
    return float(lcb - np.log(ucb))


def sliced_lower_bound(fit, critics, delta: float, method: str = "bernstein", candidates=None) -> float:
    """Certified lower bound on the average MI over the slices ``critics`` of a fit, at failure probability δ.

    The one certificate of sliced MI, for :func:`estimators.estimate.estimate_mi` and the audit
    engine alike: each critic is capped (:func:`choose_caps`) and shifted
    (:func:`averaging_shifts`) from the validation split, then the averaged DV bound
    (:func:`averaged_dv_lower_bound`) is taken on the test split at δ.

    The caps are chosen at the certificate's own δ. A cap chosen on the validation split spends
    no α — whatever it is, min(T, c) is a fixed bounded critic before the test split is looked
    at — so δ there only sets the slack the choice predicts, and the slack that matters is that
    of the bound the caps serve (not of per-slice bounds at δ/p).

    Parameters
    ----------
    fit : estimators.neural.CriticFit
    critics : slice or index array
        The critics (slices) of one quantity.
    delta : float
        Failure probability of the bound.
    method : {"bernstein", "hoeffding"}
    candidates : ndarray (M, 11), optional
        The whole fit's :func:`cap_candidates`, where already computed (this takes the rows of ``critics``).
    """
    lo, hi = fit.output_range
    val_joint, val_product = fit.validation_joint[critics], fit.validation_product[critics]
    test_joint, test_product = fit.test_joint[critics], fit.test_product[critics]
    caps = choose_caps(val_joint, val_product, lo, hi, n_joint=test_joint.shape[1], n_product=test_product.shape[1],
                       delta=delta, method=method, candidates=None if candidates is None else candidates[critics])
    return averaged_dv_lower_bound(test_joint, test_product, lo, caps, delta, method,
                                   averaging_shifts(val_product, caps))
