"""ε-MI DP mean estimation (Algorithm 1) with geometric or coordinate-wise medians, and the
sample-complexity expressions of Proposition 5 and Remark 19.

Reference: the Pufferfish/MI paper (Nuradha and Goldfeld, Pufferfish Privacy:
An Information-Theoretic Study (IEEE Transactions on Information Theory, 2023)), Section VII-A
(Algorithm 1, Proposition 5, Remarks 17–19) and the proof in Section VIII-L. ε in nats.

Privacy is over data distributions whose coordinates have variance at most
``variance_bound`` c (Algorithm 1 as printed takes c = 1): the proof bounds
Var(μ̃_p(ℓ) | other rows) ≤ c/k² and applies Corollary 3, using e^x ≥ 1 + x.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.validation import (InputError, as_generator, as_samples, check_choice, check_int, check_nonnegative,
                                   check_positive, check_probability)

MEDIANS = ("geometric", "coordinate")
RATES = ("mi-dp-geometric", "mi-dp-coordinate", "dp")


# ----------------------------------------------------------------------------- medians

@dataclass(frozen=True)
class GeometricMedian:
    """Weiszfeld's geometric median of point sets, batched.

    Attributes
    ----------
    point : ndarray, shape (d,) or (B, d)
        argmin_y Σ_p ‖y − x_p‖ for each point set.
    iterations : int
        Iterations run (the batch stops together).
    converged : bool or ndarray of bool, shape (B,)
        Whether the last step was at most ``tol`` × the point set's spread.
    tol : float
        Relative step tolerance.
    max_iter : int
        Iteration cap.
    """

    point: np.ndarray
    iterations: int
    converged: object
    tol: float
    max_iter: int


def _point_batch(points) -> tuple[np.ndarray, bool]:
    arr = np.asarray(points, dtype=np.float64)
    single = arr.ndim == 2
    if single:
        arr = arr[None]
    if arr.ndim != 3 or 0 in arr.shape:
        raise InputError(f"argument 'points' must have shape (m, d) or (B, m, d), got shape {np.shape(points)}")
    if not np.all(np.isfinite(arr)):
        raise InputError("argument 'points' contains NaN or inf")
    return arr, single


def _is_optimal_data_point(batch: np.ndarray, candidate: np.ndarray, tiny: np.ndarray) -> np.ndarray:
    """Whether each candidate data point minimizes Σ‖y − x_p‖ (Vardi and Zhang 2000, Eq. (2.5)):
    the norm of the sum of unit vectors from it to the other points is at most its multiplicity."""
    diff = batch - candidate[:, None, :]
    dist = np.linalg.norm(diff, axis=2)
    same = dist < tiny[:, None]
    units = np.where(same[:, :, None], 0.0, diff / np.where(same, 1.0, dist)[:, :, None])
    return np.linalg.norm(units.sum(axis=1), axis=1) <= same.sum(axis=1)


def geometric_median(points, *, tol: float = 1e-9, max_iter: int = 1000) -> GeometricMedian:
    """Geometric median by Weiszfeld's iteration with the Vardi–Zhang correction.

    Weiszfeld (1937) iterates y ← Σ x_p/‖x_p − y‖ / Σ 1/‖x_p − y‖; Vardi and Zhang (2000,
    "The multivariate L1-median and associated data depth", PNAS) modify the step when y
    lands on a data point so that the iteration still converges to the minimizer. Runs all
    B point sets at once; starts at the coordinate-wise mean.

    Parameters
    ----------
    points : array_like, shape (m, d) or (B, m, d)
    tol : float
        Stop when every step is at most ``tol`` × the set's spread (its largest coordinate range).
    max_iter : int
        Iteration cap; ``converged`` reports sets that did not reach ``tol`` within it.
    """
    batch, single = _point_batch(points)
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    spread = np.ptp(batch, axis=1).max(axis=1)  # (B,)
    # A point "coincides" with y below this distance (scale-aware, never zero).
    tiny = np.maximum(spread, np.finfo(float).tiny) * 1e-14
    y = batch.mean(axis=1)
    step = np.full(batch.shape[0], np.inf)
    rows = np.arange(batch.shape[0])
    iterations = 0
    for iterations in range(1, max_iter + 1):
        diff = batch - y[:, None, :]
        dist = np.linalg.norm(diff, axis=2)
        # Weiszfeld creeps towards a minimizer that is a data point; test the nearest data
        # point for optimality (‖Σ unit vectors to the others‖ ≤ its multiplicity) and jump.
        nearest = batch[rows, np.argmin(dist, axis=1)]
        on_point = _is_optimal_data_point(batch, nearest, tiny)
        coincide = dist < tiny[:, None]
        inv = np.where(coincide, 0.0, 1.0 / np.where(coincide, 1.0, dist))
        weight_sum = inv.sum(axis=1)
        has_others = weight_sum > 0
        target = (inv[:, :, None] * batch).sum(axis=1) / np.where(has_others, weight_sum, 1.0)[:, None]
        pull = np.linalg.norm((inv[:, :, None] * diff).sum(axis=1), axis=1)
        eta = coincide.sum(axis=1).astype(float)
        # Vardi–Zhang: stay on a data point when its mass outweighs the pull of the others.
        stay = np.where(eta > 0, np.minimum(1.0, eta / np.where(pull > 0, pull, 1.0)), 0.0)
        stay = np.where((eta > 0) & (pull == 0), 1.0, stay)
        stay = np.where(has_others, stay, 1.0)
        y_new = (1.0 - stay)[:, None] * target + stay[:, None] * y
        y_new = np.where(on_point[:, None], nearest, y_new)
        step = np.where(on_point, 0.0, np.linalg.norm(y_new - y, axis=1))
        y = y_new
        if np.all(step <= tol * spread):
            break
    converged = step <= tol * spread
    return GeometricMedian(y[0] if single else y, iterations, bool(converged[0]) if single else converged,
                           tol, max_iter)


def coordinate_median(points) -> np.ndarray:
    """Coordinate-wise median (Remark 18's cheaper alternative), shape (d,) or (B, d)."""
    batch, single = _point_batch(points)
    out = np.median(batch, axis=1)
    return out[0] if single else out


# ----------------------------------------------------------------------------- Algorithm 1

def algorithm1_blocks(beta: float) -> int:
    """m = ⌈200 log(1/β)⌉, Algorithm 1's number of blocks (rounded up to an integer)."""
    beta = check_probability(beta, "beta")
    return math.ceil(200.0 * math.log(1.0 / beta))


def algorithm1_noise_variance(block_size: int, dim: int, epsilon: float, variance_bound: float = 1.0) -> float:
    """σ² = d c / (2 k² ε) for blocks of k samples (Algorithm 1; Section VIII-L).

    Algorithm 1 prints σ² = d m²/(2 n² ε), equal to this when m divides n and c = 1; with
    k = ⌊n/m⌋ blocks the k form is the one the privacy proof supports.
    """
    k = check_int(block_size, "block_size", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    eps = check_positive(epsilon, "epsilon")
    c = check_positive(variance_bound, "variance_bound")
    return d * c / (2.0 * k ** 2 * eps)


def noisy_block_means(dbs, blocks: int, noise_std: float, rng) -> np.ndarray:
    """Step 1 of Algorithm 1, batched: μ̃_p = mean of block p + N(0, σ² I_d).

    ``dbs`` has shape (B, n, d); block p holds rows (p−1)k … pk−1 with k = ⌊n/m⌋ (rows past
    mk are not used). Returns shape (B, m, d).
    """
    dbs = np.asarray(dbs, dtype=np.float64)
    if dbs.ndim != 3 or 0 in dbs.shape:
        raise InputError(f"argument 'dbs' must have shape (B, n, d), got shape {dbs.shape}")
    b, n, d = dbs.shape
    blocks = check_int(blocks, "blocks", minimum=1)
    if blocks > n:
        raise InputError(f"argument 'blocks' ({blocks}) exceeds the number of samples n = {n}")
    noise_std = check_nonnegative(noise_std, "noise_std")
    rng = as_generator(rng)
    k = n // blocks
    means = dbs[:, : blocks * k, :].reshape(b, blocks, k, d).mean(axis=2)
    return means + rng.normal(0.0, noise_std, size=means.shape)


@dataclass(frozen=True)
class MeanEstimate:
    """Result of ε-MI DP mean estimation (Algorithm 1).

    Attributes
    ----------
    estimate : ndarray, shape (d,) or (B, d)
        The private mean estimate(s).
    epsilon : float
        MI-DP budget in nats.
    beta : float or None
        Failure probability that set ``blocks`` (None when ``blocks`` was given directly).
    blocks, block_size, samples_used : int
        m, k = ⌊n/m⌋ and m k.
    noise_std, noise_variance : float
        σ and σ² of the Gaussian noise added to every block mean.
    variance_bound : float
        c, the per-coordinate variance bound the privacy guarantee assumes.
    median : str
        ``"geometric"`` or ``"coordinate"``.
    iterations : int or None
        Weiszfeld iterations (geometric median only).
    converged : bool, ndarray or None
        Whether Weiszfeld reached ``tol`` (geometric median only).
    tol : float or None
    max_iter : int or None
    """

    estimate: np.ndarray
    epsilon: float
    beta: float | None
    blocks: int
    block_size: int
    samples_used: int
    noise_std: float
    noise_variance: float
    variance_bound: float
    median: str
    iterations: int | None
    converged: object
    tol: float | None
    max_iter: int | None

    def to_dict(self) -> dict:
        """JSON-ready dict (arrays become lists)."""
        return fields_to_dict(self, order=("estimate", "epsilon", "unit"), extra={"unit": "nats"},
                              null_nonfinite=False)


class MIDPMeanEstimator:
    """Algorithm 1 as a batched mechanism ``mech(dbs, rng) -> (B, d)`` on (B, n, d) batches.

    Parameters
    ----------
    epsilon : float
        MI-DP budget in nats, > 0.
    beta : float, optional
        Failure probability; sets m = ⌈200 log(1/β)⌉. Give exactly one of ``beta``, ``blocks``.
    blocks : int, optional
        m directly (e.g. for small n); the accuracy guarantee of Proposition 5 then does not apply.
    variance_bound : float
        c ≥ every coordinate's variance under the data distributions protected (default 1,
        as in Algorithm 1).
    median : {"geometric", "coordinate"}
        Algorithm 1's geometric median, or Remark 18's coordinate-wise median.
    tol, max_iter :
        Weiszfeld tolerance and iteration cap (reported in the result).
    """

    def __init__(self, epsilon, *, beta=None, blocks=None, variance_bound=1.0, median="geometric",
                 tol=1e-9, max_iter=1000):
        self.epsilon = check_positive(epsilon, "epsilon")
        if (beta is None) == (blocks is None):
            raise InputError("give exactly one of the arguments 'beta', 'blocks'")
        self.beta = None if beta is None else check_probability(beta, "beta")
        self.blocks = algorithm1_blocks(beta) if blocks is None else check_int(blocks, "blocks", minimum=1)
        self.variance_bound = check_positive(variance_bound, "variance_bound")
        self.median = check_choice(median, "median", MEDIANS)
        self.tol = check_positive(tol, "tol")
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)

    def estimate(self, dbs, rng=None) -> MeanEstimate:
        """Run Algorithm 1 on each database of the batch ``dbs`` (B, n, d)."""
        dbs = np.asarray(dbs, dtype=np.float64)
        if dbs.ndim != 3 or 0 in dbs.shape:
            raise InputError(f"argument 'dbs' must have shape (B, n, d), got shape {dbs.shape}")
        if not np.all(np.isfinite(dbs)):
            raise InputError("argument 'dbs' contains NaN or inf")
        n, d = dbs.shape[1], dbs.shape[2]
        if n < self.blocks:
            raise InputError(f"argument 'dbs' has n = {n} samples, fewer than the {self.blocks} blocks "
                             "Algorithm 1 needs (lower 'blocks' or raise 'beta')")
        k = n // self.blocks
        variance = algorithm1_noise_variance(k, d, self.epsilon, self.variance_bound)
        means = noisy_block_means(dbs, self.blocks, math.sqrt(variance), rng)
        if self.median == "geometric":
            gm = geometric_median(means, tol=self.tol, max_iter=self.max_iter)
            point, iterations, converged, tol, max_iter = gm.point, gm.iterations, gm.converged, self.tol, self.max_iter
        else:
            point, iterations, converged, tol, max_iter = coordinate_median(means), None, None, None, None
        return MeanEstimate(point, self.epsilon, self.beta, self.blocks, k, self.blocks * k, math.sqrt(variance),
                            variance, self.variance_bound, self.median, iterations, converged, tol, max_iter)

    def __call__(self, dbs, rng=None) -> np.ndarray:
        return self.estimate(dbs, rng).estimate


def mi_dp_mean(samples, epsilon, *, beta=None, blocks=None, variance_bound=1.0, median="geometric",
               tol=1e-9, max_iter=1000, seed=None) -> MeanEstimate:
    """ε-MI DP estimate of the mean of i.i.d. samples (n, d) by Algorithm 1.

    See :class:`MIDPMeanEstimator` for the parameters; ``seed`` is an int, None or Generator.
    """
    x = as_samples(samples, "samples")
    estimator = MIDPMeanEstimator(epsilon, beta=beta, blocks=blocks, variance_bound=variance_bound,
                                  median=median, tol=tol, max_iter=max_iter)
    batch = estimator.estimate(x[None], seed)
    converged = None if batch.converged is None else bool(batch.converged[0])
    return dataclasses.replace(batch, estimate=batch.estimate[0], converged=converged)


# ----------------------------------------------------------------------------- sample complexity

def proposition5_block_size(alpha, epsilon, dim, variance_bound=1.0) -> int:
    """Lemma 2's block size k with the proof's explicit constants (Section VIII-L).

    k = ⌈max(40 d c/α′², 2 d √(c log 20)/(α′ √ε))⌉ with α′ = α/1.04: Chebyshev gives
    P(‖block mean − μ‖ > α′/2) ≤ 4dc/(kα′²) ≤ 0.1, and the Gaussian tail
    2 exp(−α′²/(8σ²d)) ≤ 0.1 at σ² = dc/(2k²ε). (The paper prints 2dc√(log 20)/(α√ε) for the
    second term, the same when c = 1; √c is what the tail bound gives.)
    """
    a = check_positive(alpha, "alpha") / 1.04
    eps = check_positive(epsilon, "epsilon")
    d = check_int(dim, "dim", minimum=1)
    c = check_positive(variance_bound, "variance_bound")
    return math.ceil(max(40.0 * d * c / a ** 2, 2.0 * d * math.sqrt(c * math.log(20.0)) / (a * math.sqrt(eps))))


def proposition5_sample_size(alpha, beta, epsilon, dim, variance_bound=1.0) -> int:
    """n₀ = m k with m = ⌈200 log(1/β)⌉ and Lemma 2's k: Algorithm 1 with n ≥ n₀ samples
    is ε-MI DP and P(‖μ̂ − μ‖ ≤ α) ≥ 1 − β (Proposition 5, explicit constants of its proof)."""
    return algorithm1_blocks(beta) * proposition5_block_size(alpha, epsilon, dim, variance_bound)


def sample_complexity_rate(alpha, beta, epsilon, dim, *, method="mi-dp-geometric", moment=None, radius=None):
    """The expression inside O(·) of the stated sample complexities (constant 1).

    - ``"mi-dp-geometric"``: log(1/β) (d/α² + d/(α√ε)) (Proposition 5).
    - ``"mi-dp-coordinate"``: log(d/β) (d/α² + d/(α√ε)) (Remark 18, coordinate-wise median).
    - ``"dp"``: log(d/β) (d/α² + d/(ε α^{k/(k−1)}) + d log(R)/ε) for ε-DP with a bounded k-th
      moment (``moment`` k ≥ 2) and ‖μ‖ ≤ R (``radius``), from [45] (Remark 19).

    These are rates for comparing shapes (e.g. 1/√ε against 1/ε), not sample sizes.
    """
    a = check_positive(alpha, "alpha")
    b = check_probability(beta, "beta")
    eps = check_positive(epsilon, "epsilon")
    d = check_int(dim, "dim", minimum=1)
    method = check_choice(method, "method", RATES)
    if method != "dp" and (moment is not None or radius is not None):
        raise InputError(f"arguments 'moment' and 'radius' apply to method='dp' only, not {method!r}")
    if method == "mi-dp-geometric":
        return math.log(1.0 / b) * (d / a ** 2 + d / (a * math.sqrt(eps)))
    if method == "mi-dp-coordinate":
        return math.log(d / b) * (d / a ** 2 + d / (a * math.sqrt(eps)))
    if moment is None or radius is None:
        raise InputError("method='dp' needs the arguments 'moment' (k >= 2) and 'radius' (R >= 1)")
    if isinstance(moment, bool) or not isinstance(moment, (int, float)) or not moment >= 2 or not math.isfinite(moment):
        raise InputError(f"argument 'moment' must be a finite number >= 2, got {moment!r}")
    r = check_positive(radius, "radius")
    if r < 1:
        raise InputError(f"argument 'radius' must be >= 1 (log R enters the rate), got {radius!r}")
    return math.log(d / b) * (d / a ** 2 + d / (eps * a ** (moment / (moment - 1))) + d * math.log(r) / eps)
