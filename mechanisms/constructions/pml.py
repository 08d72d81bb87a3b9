"""Pointwise maximal leakage (PML) of discrete Markov kernels, and PML-optimal kernels.

Source: Grosse, Saeidian, Oechtering and Skoglund, Dobrushin Coefficients of Private
Mechanisms Beyond Local Differential Privacy (arXiv:2601.09498, 2026).

A kernel is a row-stochastic matrix ``K`` of shape ``(N, M)``: row x is the output law
K_{Y|X=x}, column y the probabilities of outcome y. A prior P_X is a length-N vector.
Q_X(c) is the set of priors whose smallest mass is at least c, for 0 < c ≤ 1/N.
All leakage values are in nats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.units import NATS
from estimators.validation import InputError, as_generator, check_int, check_positive, plain

__all__ = [
    "KernelLeakage",
    "as_kernel",
    "check_min_mass",
    "example2_kernels",
    "kernel_leakage",
    "ldp",
    "local_leakage_capacity",
    "optimal_binary_pml_kernel",
    "outcome_pml",
    "randomized_response",
    "sample_min_mass_priors",
]

# Row sums of a stochastic matrix are compared to 1 with this absolute tolerance, so that
# matrices written with rounded decimals (e.g. 1/3 as 0.3333333333) are accepted.
ROW_SUM_TOLERANCE = 1e-8


def as_kernel(kernel, name: str = "kernel") -> np.ndarray:
    """Return ``kernel`` as a float64 row-stochastic matrix of shape ``(N, M)``.

    Raises
    ------
    InputError
        Unless it is 2-D with N ≥ 1 rows and M ≥ 1 columns, finite, non-negative and each
        row sums to 1 (within ``ROW_SUM_TOLERANCE``).
    """
    try:
        arr = np.asarray(kernel, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"argument '{name}' must be a numeric matrix: {exc}") from None
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InputError(f"argument '{name}' must be a non-empty 2-D matrix (inputs x outputs), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"argument '{name}' contains NaN or inf")
    if np.any(arr < 0):
        raise InputError(f"argument '{name}' has negative entries; a Markov kernel is non-negative")
    sums = arr.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOLERANCE)
    if bad.size:
        row = int(bad[0])
        raise InputError(f"argument '{name}' is not row-stochastic: row {row} sums to {plain(sums[row])}, not 1")
    return arr


def check_min_mass(c, n_inputs: int, name: str = "c") -> float:
    """Return the minimum-mass constant c of Q_X(c), or raise unless 0 < c ≤ 1/N.

    Q_X(c) = {P_X : min_x P_X(x) ≥ c} is non-empty exactly when c ≤ 1/N (paper, Sec. III).
    """
    c = check_positive(c, name)
    n_inputs = check_int(n_inputs, "n_inputs", minimum=1)
    # Compare c·N with 1 so that c = 1/N written in floating point is accepted.
    if c * n_inputs > 1.0 + 1e-12:
        raise InputError(f"argument '{name}' must be in (0, 1/N] = (0, {1.0 / n_inputs:.6g}] for N = {n_inputs}, got {plain(c)}")
    return min(c, 1.0 / n_inputs)


def sample_min_mass_priors(n_inputs: int, c, size: int, seed=None, concentration=1.0) -> np.ndarray:
    """Random priors in Q_X(c), as used for the random distribution pairs of Fig. 1.

    Q_X(c) = {c + (1 − Nc) V : V ∈ P(X)} (paper, Appendix B), so a prior is drawn as
    c + (1 − Nc) V with V ~ Dirichlet(concentration, ..., concentration); concentration 1
    makes the draws uniform on Q_X(c).

    Parameters
    ----------
    n_inputs : int
        N ≥ 1.
    c : float
        Minimum mass, 0 < c ≤ 1/N.
    size : int
        Number of priors.
    seed : int, numpy.random.Generator or None
    concentration : float
        Dirichlet parameter > 0: small values spread the priors towards the vertices of Q_X(c).

    Returns
    -------
    ndarray, shape (size, N)
    """
    n = check_int(n_inputs, "n_inputs", minimum=1)
    c = check_min_mass(c, n)
    size = check_int(size, "size", minimum=1)
    alpha = check_positive(concentration, "concentration")
    simplex = as_generator(seed).dirichlet(np.full(n, alpha), size=size)
    return c + (1.0 - n * c) * simplex


def _as_prior(prior, n_inputs: int) -> np.ndarray:
    arr = np.asarray(prior, dtype=np.float64)
    if arr.shape != (n_inputs,):
        raise InputError(f"argument 'prior' must have shape ({n_inputs},) to match the kernel's rows, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError("argument 'prior' contains NaN or inf")
    if np.any(arr <= 0):
        raise InputError("argument 'prior' must have full support (every entry > 0)")
    if abs(arr.sum() - 1.0) > ROW_SUM_TOLERANCE:
        raise InputError(f"argument 'prior' must sum to 1, got {plain(arr.sum())}")
    return arr


def outcome_pml(kernel, prior) -> np.ndarray:
    """PML ℓ(X → y) of every outcome y of ``kernel`` under a full-support prior P_X.

    ℓ_{P_XY}(X → y) = log( max_x K_{Y|X=x}(y) / (K ∘ P_X)(y) )  (paper, Sec. II-B, the
    simplification of Definition 1 shown in Saeidian et al. [12]).

    Parameters
    ----------
    kernel : array_like, shape (N, M)
        Row-stochastic matrix.
    prior : array_like, shape (N,)
        Distribution of X with every entry > 0.

    Returns
    -------
    ndarray, shape (M,)
        PML of each outcome in nats; NaN for an outcome of probability 0 (PML is defined
        only on the support of Y).
    """
    K = as_kernel(kernel)
    p = _as_prior(prior, K.shape[0])
    p_y = p @ K
    column_max = K.max(axis=0)
    out = np.full(K.shape[1], np.nan)
    seen = p_y > 0
    out[seen] = np.log(column_max[seen] / p_y[seen])
    return out


def _capacity_per_outcome(K: np.ndarray, c: float) -> np.ndarray:
    """sup over P_X ∈ Q_X(c) of ℓ(X → y), per outcome; NaN for an all-zero column.

    Lemma 4 (Appendix D): the infimum of (K ∘ P_X)(y) over Q_X(c) is
    c Σ_x K(y|x) + (1 − Nc) min_x K(y|x), since Q_X(c) = {c + (1 − Nc) V : V ∈ P(X)}
    (Appendix B). So the supremum of the PML of y is the log of max_x K(y|x) over it.
    """
    n_inputs = K.shape[0]
    worst_mass = c * K.sum(axis=0) + (1.0 - n_inputs * c) * K.min(axis=0)
    out = np.full(K.shape[1], np.nan)
    used = worst_mass > 0
    out[used] = np.log(K.max(axis=0)[used] / worst_mass[used])
    return out


def local_leakage_capacity(kernel, c) -> float:
    """The Q_X(c)-local leakage capacity C(K, Q_X(c)) in nats: K is (ε, c)-PML iff it is ≤ ε.

    Definition 2 with the exact characterization of Lemma 4 (Appendix D):
    C(K, Q_X(c)) = max_y log[ max_x K(y|x) / (c Σ_x K(y|x) + (1 − Nc) min_x K(y|x)) ].
    Every kernel has C ≤ −log c (paper, after Definition 2); c = 1/N gives the PML under
    the uniform prior. Outcomes that never occur (all-zero columns) are ignored.
    """
    K = as_kernel(kernel)
    c = check_min_mass(c, K.shape[0])
    return float(np.nanmax(_capacity_per_outcome(K, c)))


def ldp(kernel) -> float:
    """LDP(K) = sup_y sup_{x,x'} log K(y|x) / K(y|x') in nats (paper, Eq. (1)).

    ``inf`` when some column mixes zero and positive entries; all-zero columns (outcomes
    that never occur) are ignored.
    """
    K = as_kernel(kernel)
    used = K.max(axis=0) > 0
    column_max = K.max(axis=0)[used]
    column_min = K.min(axis=0)[used]
    if np.any(column_min == 0):
        return math.inf
    return float(np.max(np.log(column_max / column_min)))


@dataclass(frozen=True)
class KernelLeakage:
    """PML and LDP guarantees of one kernel.

    Attributes
    ----------
    pml : float
        C(K, Q_X(c)): the smallest ε for which the kernel is (ε, c)-PML (Definition 2, Lemma 4).
    per_outcome : ndarray, shape (M,)
        The same supremum for each outcome y (NaN for outcomes that never occur).
    ldp : float
        LDP(K) (Eq. (1)); ``inf`` when a column has a zero next to a positive entry.
    c : float
        The minimum-mass constant of Q_X(c).
    n_inputs, n_outputs : int
        Shape of the kernel.
    unit : str
        Unit of ``pml``, ``per_outcome`` and ``ldp``.
    """

    pml: float
    per_outcome: np.ndarray
    ldp: float
    c: float
    n_inputs: int
    n_outputs: int
    unit: str = NATS

    def to_dict(self) -> dict:
        """A JSON-ready dict (NaN / inf become ``None``)."""
        return fields_to_dict(self, order=("pml", "ldp"))


def kernel_leakage(kernel, c) -> KernelLeakage:
    """(ε, c)-PML level and LDP level of ``kernel`` (Definition 2 with Lemma 4; Eq. (1))."""
    K = as_kernel(kernel)
    c = check_min_mass(c, K.shape[0])
    per_outcome = _capacity_per_outcome(K, c)
    return KernelLeakage(pml=float(np.nanmax(per_outcome)), per_outcome=per_outcome, ldp=ldp(K),
                         c=c, n_inputs=K.shape[0], n_outputs=K.shape[1])


def optimal_binary_pml_kernel(epsilon, c, n_inputs: int, q: int | None = None) -> np.ndarray:
    """A binary-output (ε, c)-PML kernel whose Dobrushin coefficient is η_TV(ε, c).

    For ε < log(2/(Nc)) this is Remark 2: with
    m = (1 − e^ε c q) / (1 + e^ε(1 − Nc)) and M = e^ε(1 − c q) / (1 + e^ε(1 − Nc)),
    the first column is p = [M]*q + [m]*(N − q) and K = [p, 1 − p]; its Dobrushin
    coefficient M − m = (e^ε − 1)/(e^ε(1 − Nc) + 1) attains Theorem 3. For N = 2 and q = 1
    this is Example 1, and as c → 0 Warner's randomized response.
    For ε ≥ log(2/(Nc)) it is the mechanism of the proof of Theorem 2,
    p = [1/2, ..., 1/2, 1, 0], which is log(2/(Nc))-PML and has η_TV = 1 (``q`` unused).

    Parameters
    ----------
    epsilon : float
        PML level ε > 0 in nats.
    c : float
        Minimum mass, 0 < c ≤ 1/N.
    n_inputs : int
        N ≥ 2.
    q : int, optional
        Number of rows with the large entry M, 1 ≤ q ≤ N − 1. Remark 2's matrix is a valid
        kernel only when N − 1/(c e^ε) ≤ q ≤ 1/(c e^ε); by default the valid q closest to N/2.

    Returns
    -------
    ndarray, shape (N, 2)
    """
    eps = check_positive(epsilon, "epsilon")
    n = check_int(n_inputs, "n_inputs", minimum=2)
    c = check_min_mass(c, n)
    if eps >= math.log(2.0 / (n * c)):
        p = np.full(n, 0.5)
        p[-2:] = (1.0, 0.0)
        return np.column_stack([p, 1.0 - p])
    e = math.exp(eps)
    # m ≥ 0 needs q ≤ 1/(c e^ε); M ≤ 1 needs N − q ≤ 1/(c e^ε).
    reach = 1.0 / (c * e)
    valid = [k for k in range(1, n) if k <= reach and n - k <= reach]
    if q is None:
        if not valid:
            raise InputError(f"Remark 2 gives no valid kernel for epsilon={plain(epsilon)}, c={plain(c)}, N={n}: "
                             "no q in 1..N-1 with N - 1/(c e^eps) <= q <= 1/(c e^eps)")
        q = min(valid, key=lambda k: abs(k - n / 2))
    else:
        q = check_int(q, "q", minimum=1)
        if q not in valid:
            raise InputError(f"argument 'q' must satisfy 1 <= q <= N-1 and N - 1/(c e^eps) <= q <= 1/(c e^eps) "
                             f"(= {n - reach:.6g} .. {reach:.6g}) so that Remark 2's matrix is stochastic, got {plain(q)}")
    denominator = 1.0 + e * (1.0 - n * c)
    big = e * (1.0 - c * q) / denominator
    small = (1.0 - e * c * q) / denominator
    p = np.array([big] * q + [small] * (n - q))
    return np.column_stack([p, 1.0 - p])


def randomized_response(p) -> np.ndarray:
    """Warner's randomized response: report the true bit with probability p.

    K = [[p, 1 − p], [1 − p, p]] (Warner 1965, paper ref. [33]); for p > 1/2 it is
    log(p/(1 − p))-LDP, the optimal binary ε-LDP mechanism (Kairouz et al. [25]).
    """
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise InputError(f"argument 'p' must be a number in [0, 1], got {plain(p)}") from None
    if not (math.isfinite(p) and 0.0 <= p <= 1.0):
        raise InputError(f"argument 'p' must be in [0, 1], got {plain(p)}")
    return np.array([[p, 1.0 - p], [1.0 - p, p]])


def example2_kernels() -> dict:
    """The kernels K₁ (N = 10, c = 0.05) and K₂ (N = 5, c = 0.1) of Example 2.

    K₁ has first column [15/16]*5 + [1/16]*5 (it is Remark 2's kernel for ε = log(10/3),
    q = 5, and log 15-LDP); K₂ is the circulant 5 × 5 matrix with 1/3 on three consecutive
    entries of each row (infinite LDP because of its zeros). Both are (log(10/3), c)-PML.

    Returns
    -------
    dict
        ``{"K1": {"kernel", "c"}, "K2": {"kernel", "c"}}``.
    """
    p1 = np.array([15.0 / 16.0] * 5 + [1.0 / 16.0] * 5)
    k1 = np.column_stack([p1, 1.0 - p1])
    k2 = np.zeros((5, 5))
    for row in range(5):
        k2[row, [row, (row + 1) % 5, (row + 2) % 5]] = 1.0 / 3.0
    return {"K1": {"kernel": k1, "c": 0.05}, "K2": {"kernel": k2, "c": 0.1}}
