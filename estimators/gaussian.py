"""Gaussian (canonical-correlation) MI from sample covariances.

For jointly Gaussian X (dx) and Y (dy) with covariance Σ = [[Σ_X, Σ_XY], [Σ_YX, Σ_Y]],

    I(X; Y) = ½ log(det Σ_X det Σ_Y / det Σ) = −½ Σ_i log(1 − ρ_i²),

where ρ_i are the canonical correlations. The determinant form follows from the Gaussian
entropy ½ log((2πe)^d det Σ) (Cover and Thomas, *Elements of Information Theory*, 2nd ed.,
Thm 8.4.1) and I = h(X) + h(Y) − h(X, Y); the canonical-correlation form is Gelfand and
Yaglom (1957), obtained by whitening X and Y. Plugging in sample covariances gives an
estimate that is consistent for Gaussian data and, for other data, the MI of the Gaussian
with the same second moments (a lower bound on I(X; Y) when the marginals are Gaussian,
because the Gaussian maximises h(X, Y) for a given covariance).
"""

from __future__ import annotations

import numpy as np

from .scaling import standardized_columns
from .validation import InputError, paired_sample_batches, paired_samples

__all__ = ["gaussian_mi", "gaussian_mi_batch"]


def _log_dets(cov: np.ndarray, what: str) -> np.ndarray:
    """log det of each stacked covariance; a singular one means constant or collinear columns."""
    sign, logdet = np.linalg.slogdet(cov)
    if np.any(sign <= 0):
        slice_index = int(np.argmax(sign <= 0))
        where = f" in slice {slice_index}" if len(cov) > 1 else ""
        raise InputError(f"{what}: singular sample covariance (constant or collinear columns){where}; "
                         "the Gaussian estimator needs linearly independent, non-constant columns")
    return logdet


def _gaussian_mi_unchecked(x: np.ndarray, y: np.ndarray, labels=("argument 'x'", "argument 'y'")) -> np.ndarray:
    n, dx = x.shape[1], x.shape[2]
    # Standardizing each column leaves the MI unchanged (it is affine invariant) and keeps the
    # covariance from overflowing (data of scale 1e200) or underflowing (1e-200) to a singular one.
    joint = standardized_columns(np.concatenate([x, y], axis=2))
    centred = joint - joint.mean(axis=1, keepdims=True)
    # One batched product gives every slice's joint covariance; the 1/(n-1) factor
    # cancels in det Σ_X det Σ_Y / det Σ but keeps the numbers of a sensible size.
    cov = np.einsum("pni,pnj->pij", centred, centred) / (n - 1)
    logdet_x = _log_dets(cov[:, :dx, :dx], labels[0])
    logdet_y = _log_dets(cov[:, dx:, dx:], labels[1])
    sign, logdet_joint = np.linalg.slogdet(cov)
    # Singular joint covariance with regular marginals: an exact linear relation, I = +inf.
    logdet_joint = np.where(sign > 0, logdet_joint, -np.inf)
    # Fischer's inequality makes the value ≥ 0; rounding can leave a tiny negative number.
    return np.maximum(0.5 * (logdet_x + logdet_y - logdet_joint), 0.0)


def _check_enough_samples(n: int, dx: int, dy: int) -> None:
    if n <= dx + dy:
        raise InputError(
            f"arguments 'x' and 'y' need more samples than dx + dy = {dx + dy} for a regular covariance, got {n}"
        )


def gaussian_mi(x, y) -> float:
    """Gaussian/CCA estimate of I(X; Y) in nats from paired samples.

    Parameters
    ----------
    x : array_like, shape (n, dx) or (n,)
    y : array_like, shape (n, dy) or (n,)
        Paired row by row with ``x``; n > dx + dy.

    Returns
    -------
    float
        ½ log(det Σ̂_X det Σ̂_Y / det Σ̂) = −½ Σ log(1 − ρ̂_i²) over the sample canonical
        correlations (Gelfand and Yaglom 1957); ``inf`` for an exact linear relation.
    """
    x, y = paired_samples(x, y)
    _check_enough_samples(*x.shape, y.shape[1])
    return float(_gaussian_mi_unchecked(x[None], y[None])[0])


def gaussian_mi_batch(x, y, *, labels=("argument 'x'", "argument 'y'")) -> np.ndarray:
    """Gaussian/CCA estimates of I(X_s; Y_s) in nats for every slice s, fully vectorized.

    Parameters
    ----------
    x : array_like, shape (p, n, dx)
    y : array_like, shape (p, n, dy)
        n > dx + dy.
    labels : (str, str)
        How messages name ``x`` and ``y`` (a caller passing other variables names them).

    Returns
    -------
    ndarray, shape (p,)
        ``gaussian_mi(x[s], y[s])`` for each slice, from stacked covariances (no loop over p).
    """
    x, y = paired_sample_batches(x, y)
    _check_enough_samples(x.shape[1], x.shape[2], y.shape[2])
    return _gaussian_mi_unchecked(x, y, labels)
