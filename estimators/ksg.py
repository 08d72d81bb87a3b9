"""The Kraskov–Stögbauer–Grassberger (KSG) k-nearest-neighbour MI estimator.

Kraskov, Stögbauer and Grassberger, "Estimating mutual information",
Phys. Rev. E 69, 066138 (2004), estimator 1 (their Eq. (8)):

    I(X; Y) ≈ ψ(k) + ψ(N) − ⟨ψ(n_x + 1) + ψ(n_y + 1)⟩,

where ε_i is the max-norm distance from sample i to its k-th nearest neighbour in the
joint space (X, Y), and n_x(i), n_y(i) count the other samples whose marginal max-norm
distance to sample i is *strictly* smaller than ε_i.

The validation of paired samples that all classical estimators share lives in
:mod:`estimators.validation` (:func:`~estimators.validation.paired_samples`,
:func:`~estimators.validation.paired_sample_batches`).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma

from .validation import InputError, check_int, paired_sample_batches, paired_samples

__all__ = ["ksg_mi", "ksg_mi_batch"]


def _strictly_closer_counts(points: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """For each point, how many *other* points lie at max-norm distance strictly below its radius."""
    tree = cKDTree(points)
    counts = np.zeros(len(points), dtype=np.int64)
    positive = radii > 0
    # A closed ball of the next float below ε holds exactly the points at distance < ε.
    # A zero radius (ties: k + 1 identical samples) has no point strictly inside.
    closed_radii = np.nextafter(radii[positive], 0.0)
    inside = tree.query_ball_point(points[positive], closed_radii, p=np.inf, return_length=True, workers=-1)
    counts[positive] = np.asarray(inside, dtype=np.int64) - 1  # minus the point itself
    return counts


def _ksg_unchecked(x: np.ndarray, y: np.ndarray, k: int) -> float:
    n = len(x)
    joint = np.hstack([x, y])
    # k + 1 neighbours because the nearest one is the point itself (distance 0).
    distances, _ = cKDTree(joint).query(joint, k=k + 1, p=np.inf, workers=-1)
    radii = distances[:, k]
    n_x = _strictly_closer_counts(x, radii)
    n_y = _strictly_closer_counts(y, radii)
    return float(digamma(k) + digamma(n) - np.mean(digamma(n_x + 1) + digamma(n_y + 1)))


def _check_k(k, n: int) -> int:
    k = check_int(k, "k", minimum=1)
    if k >= n:
        raise InputError(f"argument 'k' must be smaller than the number of samples ({n}), got {k}")
    return k


def ksg_mi(x, y, k: int = 3) -> float:
    """KSG estimate (estimator 1) of I(X; Y) in nats from paired samples.

    Parameters
    ----------
    x : array_like, shape (n, dx) or (n,)
        Samples of X.
    y : array_like, shape (n, dy) or (n,)
        Samples of Y, paired row by row with ``x``.
    k : int, default 3
        Number of neighbours; 1 <= k < n.

    Returns
    -------
    float
        ψ(k) + ψ(N) − ⟨ψ(n_x + 1) + ψ(n_y + 1)⟩ (Kraskov et al. 2004, Eq. (8)), in nats.
        The estimate can be slightly negative when X and Y are (nearly) independent.

    Notes
    -----
    The neighbour searches run on every CPU core (scipy's ``workers=-1``): in 20 joint
    dimensions at n = 100,000 one search takes minutes.

    Distances are max-norm distances on the raw coordinates, so the relative scaling of
    the columns matters; the estimator is nearly (not exactly) invariant under invertible
    monotone transforms of X or Y. Ties (discrete or rounded data) bias KSG: the data are
    used unchanged, with no jitter, so duplicate rows are counted as they are. Where k + 1
    or more joint rows coincide, ε_i = 0, nothing is strictly closer and the estimate is
    inflated (constant data give ψ(k) + ψ(N) − 2ψ(1), not 0); use :func:`plugin_mi` for
    discrete data.
    """
    x, y = paired_samples(x, y)
    return _ksg_unchecked(x, y, _check_k(k, len(x)))


def ksg_mi_batch(x, y, k: int = 3) -> np.ndarray:
    """KSG estimates of I(X_s; Y_s) in nats for each slice s of a batch.

    Parameters
    ----------
    x : array_like, shape (p, n, dx)
    y : array_like, shape (p, n, dy)
    k : int, default 3
        Number of neighbours; 1 <= k < n.

    Returns
    -------
    ndarray, shape (p,)
        ``ksg_mi(x[s], y[s], k)`` for each slice (Kraskov et al. 2004, Eq. (8)). Each slice
        needs its own k-d trees, so this is a loop over slices.
    """
    x, y = paired_sample_batches(x, y)
    k = _check_k(k, x.shape[1])
    return np.array([_ksg_unchecked(xs, ys, k) for xs, ys in zip(x, y)], dtype=np.float64)
