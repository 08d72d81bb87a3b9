"""The Kraskov–Stögbauer–Grassberger (KSG) k-nearest-neighbour MI estimator.

Kraskov, Stögbauer and Grassberger, "Estimating mutual information",
Phys. Rev. E 69, 066138 (2004), estimator 1 (their Eq. (8)):

    I(X; Y) ≈ ψ(k) + ψ(N) − ⟨ψ(n_x + 1) + ψ(n_y + 1)⟩,

where ε_i is the max-norm distance from sample i to its k-th nearest neighbour in the
joint space (X, Y), and n_x(i), n_y(i) count the other samples whose marginal max-norm
distance to sample i is *strictly* smaller than ε_i.

Two preparations make the estimate behave as MI does (both as in scikit-learn's
``mutual_info_regression``):

- **Scale.** The max-norm mixes coordinates, so every coordinate of X and of Y is first
  standardized to mean 0 and unit standard deviation (:func:`~estimators.scaling.standardized_columns`).
  MI is invariant under such maps; the estimate then is too (x × 1000 gives the same value).
- **Constant coordinates.** A coordinate that takes one value on every sample is at distance 0
  between every pair, so under the max-norm it changes no ε_i, n_x(i) or n_y(i): Eq. (8) is the
  same without it, and it is dropped (it carries no information either: I(X, c; Y) = I(X; Y)).
  When *every* coordinate of X (or of Y) is constant, I(X; Y) ≤ H(X) = 0, and the estimate is
  0.0 exactly. It is also what Eq. (8) gives read as written: every other sample is strictly
  closer than ε_i in X, so n_x(i) = N − 1 and ψ(n_x + 1) = ψ(N) cancels ψ(N); ε_i is then Y's
  own k-th neighbour distance, so n_y(i) = k − 1 where Y has no ties there and ψ(n_y + 1) = ψ(k)
  cancels ψ(k). (Breaking the constant's "ties" with noise instead made X and Y independent noise
  of the same scale, and the estimate a random number: −0.11 nats for two constants at n = 100.)
- **Other ties.** The estimator assumes continuous data: when k + 1 or more samples coincide,
  ε_i = 0, nothing is strictly closer and the digamma terms ψ(n_x + 1) = ψ(n_y + 1) = ψ(1) inflate
  the estimate without bound (two independent boolean columns gave 9.7 nats at n = 2000, above
  log n). Kraskov et al. (2004, Sec. II) remove such degeneracies by adding low-amplitude noise;
  here, when any remaining coordinate has repeated values, seeded Gaussian noise of standard
  deviation ``TIE_JITTER`` (on the standardized scale) is added to every remaining coordinate. On
  discrete data the estimate then tends to the plug-in MI of the symbols. The noise is far below
  the spacing between symbols, so a sample of the joint symbol (a, b), seen c_ab times among N
  (c_a times a, c_b times b), has its k neighbours inside its symbol; X's noise is alike for every
  sample of a, so n_x(i) is about c_a / c_ab times the count inside the symbol, likewise for Y;
  the sample's term ψ(k) + ψ(N) − ψ(n_x + 1) − ψ(n_y + 1) is then about log(N c_ab / (c_a c_b)),
  the plug-in's, plus Eq. (8)'s term for the independent noise of X and Y inside the symbol,
  which averages to about 0. :func:`~estimators.discrete.plugin_mi` is the estimator meant for
  discrete data.

The validation of paired samples that all classical estimators share lives in
:mod:`estimators.validation` (:func:`~estimators.validation.paired_samples`,
:func:`~estimators.validation.paired_sample_batches`).
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree
from scipy.special import digamma

from .scaling import standardized_columns
from .validation import InputError, as_generator, check_int, counted, paired_sample_batches, paired_samples

__all__ = ["TIE_JITTER", "breaks_ties", "has_ties", "ksg_mi", "ksg_mi_batch"]

# Standard deviation of the tie-breaking noise, relative to each coordinate's standard
# deviation: scikit-learn's value (1e-10), far below any real spacing of the data and far
# above float64 resolution (1e-16) at unit scale.
TIE_JITTER = 1e-10


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


def has_ties(*samples: np.ndarray) -> bool:
    """Whether any coordinate of any of the ``(n, d)`` (or ``(p, n, d)``) arrays repeats a value."""
    for arr in samples:
        columns = np.sort(np.asarray(arr, dtype=np.float64), axis=-2)
        if np.any(np.diff(columns, axis=-2) == 0):
            return True
    return False


def _varying_columns(values: np.ndarray) -> np.ndarray:
    """``values`` (n, d) without its constant columns (module docstring: they change no max-norm distance)."""
    varying = np.any(values != values[:1], axis=0)
    return values if varying.all() else values[:, varying]


def _prepared(x: np.ndarray, y: np.ndarray):
    """(x, y) as Eq. (8) is computed on: constant columns dropped, the rest standardized; None when X or Y is
    constant (every column), whose MI is 0."""
    x, y = _varying_columns(x), _varying_columns(y)
    if x.shape[1] == 0 or y.shape[1] == 0:
        return None
    return standardized_columns(x), standardized_columns(y)


def breaks_ties(x, y) -> bool:
    """Whether the KSG estimate of paired ``(n, dx)``, ``(n, dy)`` samples adds tie-breaking noise: neither
    variable is constant and a coordinate that is not constant repeats a value (module docstring)."""
    prepared = _prepared(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
    return prepared is not None and has_ties(*prepared)


def _ksg_unchecked(x: np.ndarray, y: np.ndarray, k: int, rng: np.random.Generator) -> float:
    n = len(x)
    prepared = _prepared(x, y)
    if prepared is None:
        return 0.0  # X or Y constant: I(X; Y) <= H(X) = 0 (module docstring)
    x, y = prepared
    if has_ties(x, y):
        x = x + TIE_JITTER * rng.standard_normal(x.shape)
        y = y + TIE_JITTER * rng.standard_normal(y.shape)
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
        raise InputError(f"arguments 'x' and 'y' have {counted(n, 'sample')}, too few for KSG with argument 'k' = "
                         f"{counted(k, 'neighbour')}: it needs at least k + 1 = {k + 1}")
    return k


def ksg_mi(x, y, k: int = 3, *, seed=0) -> float:
    """KSG estimate (estimator 1) of I(X; Y) in nats from paired samples.

    Parameters
    ----------
    x : array_like, shape (n, dx) or (n,)
        Samples of X.
    y : array_like, shape (n, dy) or (n,)
        Samples of Y, paired row by row with ``x``.
    k : int, default 3
        Number of neighbours; 1 <= k < n.
    seed : int or numpy.random.Generator, default 0
        Seeds the tie-breaking noise (used only when some coordinate repeats a value).

    Returns
    -------
    float
        ψ(k) + ψ(N) − ⟨ψ(n_x + 1) + ψ(n_y + 1)⟩ (Kraskov et al. 2004, Eq. (8)), in nats.
        The estimate can be slightly negative when X and Y are (nearly) independent; it is 0.0
        exactly when X or Y is constant (module docstring).

    Notes
    -----
    The neighbour searches run on every CPU core (scipy's ``workers=-1``): in 20 joint
    dimensions at n = 100,000 one search takes minutes.

    Distances are max-norm distances on standardized coordinates (see the module
    docstring), so rescaling any coordinate leaves the estimate unchanged; it is nearly (not
    exactly) invariant under other invertible monotone transforms of X or Y. Constant
    coordinates are dropped; data with other ties get seeded tie-breaking noise (module
    docstring); for discrete data use :func:`~estimators.discrete.plugin_mi`.
    """
    x, y = paired_samples(x, y)
    return _ksg_unchecked(x, y, _check_k(k, len(x)), as_generator(seed))


def ksg_mi_batch(x, y, k: int = 3, *, seed=0) -> np.ndarray:
    """KSG estimates of I(X_s; Y_s) in nats for each slice s of a batch.

    Parameters
    ----------
    x : array_like, shape (p, n, dx)
    y : array_like, shape (p, n, dy)
    k : int, default 3
        Number of neighbours; 1 <= k < n.
    seed : int or numpy.random.Generator, default 0
        Seeds the tie-breaking noise of every slice.

    Returns
    -------
    ndarray, shape (p,)
        ``ksg_mi(x[s], y[s], k)`` for each slice (Kraskov et al. 2004, Eq. (8)). Each slice
        needs its own k-d trees, so this is a loop over slices.
    """
    x, y = paired_sample_batches(x, y)
    k = _check_k(k, x.shape[1])
    rng = as_generator(seed)
    return np.array([_ksg_unchecked(xs, ys, k, rng) for xs, ys in zip(x, y)], dtype=np.float64)
