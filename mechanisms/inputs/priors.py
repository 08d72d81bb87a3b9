"""Priors on databases: the members ``P_X`` of the class Θ of a Pufferfish framework.

A prior is a callable ``prior(m, rng) -> (m, n, k)`` drawing ``m`` independent databases
of ``n`` records with ``k`` attributes (Definitions 3-4 of ``pufferfish-mi-privacy.txt``:
Θ ⊆ P(X^{n×k}) holds the data distributions the adversary may believe in).

Each prior is a frozen dataclass that validates its parameters, has a ``shape``
``(n, k)``, a readable :meth:`~Prior.describe`, a :meth:`~Prior.to_dict`, and declares
the structure the audit engine relies on (DESIGN.md, "The statistical core"):

``independent_rows``
    The records X(1,·), ..., X(n,·) are mutually independent (the product form
    ``P_X = ∏ P_i`` assumed in Section VI of the paper). Then the DP secret ``g_i`` (row i)
    is independent of ``w_i`` (the other rows).
``independent_columns``
    The columns X(·,1), ..., X(·,k) are mutually independent. Then the attribute-privacy
    secret ``g_j`` (a function of column j) is independent of ``w_j`` (the other columns).
``discrete``
    The prior has finite support, so every function of the database (in particular
    every public part ``w(X)``) is discrete and can be stratified on.

Each flag is True only when the structure is guaranteed by the parameters; False means
"not guaranteed".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_float64, as_generator, check_int, check_real

__all__ = ["Categorical", "FixedRest", "Prior", "ProductBernoulli", "ProductGaussian", "TwoPoint", "UniformBox"]

_SUM_TOLERANCE = 1e-9


def _finite_array(value, name: str, allow_nan: bool = False) -> np.ndarray:
    check_real(value, f"argument '{name}'")
    arr = as_float64(value, f"argument '{name}'")
    if arr.size == 0:
        raise InputError(f"argument '{name}' must be non-empty")
    if not (np.isfinite(arr) | (allow_nan & np.isnan(arr))).all():
        raise InputError(f"argument '{name}' must be finite (it holds NaN or inf)")
    return arr


def _check_shape(shape, name: str = "shape") -> tuple[int, int]:
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise InputError(f"argument '{name}' must be a pair (n, k), got {shape!r}")
    return check_int(shape[0], f"{name}[0] (n)", 1), check_int(shape[1], f"{name}[1] (k)", 1)


def _entry_grid(value, name: str, shape, trailing: int = 0, allow_nan: bool = False) -> tuple[np.ndarray, tuple[int, int]]:
    """Broadcast a per-entry parameter to ``(n, k) + trailing axes``; infer (n, k) if ``shape`` is None. With
    ``allow_nan`` an entry may be NaN (a missing value: a two-point prior's rows from ``--allow-nan`` pairs).

    Without ``shape`` the leading axes say it: one axis means ``(n,)`` records with
    ``k = 1``, two axes mean ``(n, k)``.
    """
    arr = _finite_array(value, name, allow_nan)
    leading = arr.ndim - trailing
    if shape is None:
        if leading == 1:
            arr = arr.reshape(arr.shape[:1] + (1,) + arr.shape[1:])
        elif leading != 2:
            raise InputError(f"argument '{name}' has shape {arr.shape}; give 'shape=(n, k)' or an array "
                             f"with leading shape (n,) or (n, k)")
        shape = arr.shape[:2]
    n, k = _check_shape(shape)
    target = (n, k) + arr.shape[arr.ndim - trailing:]
    try:
        return np.broadcast_to(arr, target).copy(), (n, k)
    except ValueError:
        raise InputError(f"argument '{name}' of shape {arr.shape} does not broadcast to {target}") from None


def _check_unit_interval(arr: np.ndarray, name: str) -> None:
    if (arr < 0).any() or (arr > 1).any():
        raise InputError(f"argument '{name}' must hold probabilities in [0, 1]")


def _range_text(arr: np.ndarray) -> str:
    low, high = float(arr.min()), float(arr.max())
    return f"{low:g}" if low == high else f"in [{low:g}, {high:g}]"


class Prior:
    """Base class of all priors: ``prior(m, rng)`` draws ``m`` databases of shape ``(n, k)``.

    Subclasses are frozen dataclasses that set ``shape``, the structure flags
    ``independent_rows``, ``independent_columns``, ``discrete``, and implement
    ``_sample(m, rng)`` and :meth:`describe`.
    """

    #: Whether every draw is from the rng argument (:func:`mechanisms.base.draws_only_from_rng`): only the
    #: built-in priors say so; a subclass is assumed to draw from global generators unless it says otherwise.
    draws_only_from_rng = False
    name = "prior"
    #: Seconds one database took in the first call of the user's sampler inside the prior
    #: (:class:`~mechanisms.inputs.user_priors.UserPrior`), which bounds its later draws where no ``--timeout`` is
    #: given (:func:`mechanisms.inputs.bounded_draws.draw_bounded`); None for miaudit's own draws.
    first_seconds = None

    def __call__(self, m: int, rng=None) -> np.ndarray:
        """Draw ``m`` databases, shape ``(m, n, k)``, from a seed or Generator ``rng``."""
        m = check_int(m, "m", 1)
        return self._sample(m, as_generator(rng))

    @property
    def n(self) -> int:
        """Number of records per database."""
        return self.shape[0]

    @property
    def k(self) -> int:
        """Number of attributes per record."""
        return self.shape[1]

    def describe(self) -> str:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def to_dict(self) -> dict:
        """A JSON-ready summary: name, shape, structure flags and description."""
        # Not the field walk of estimators.result_forms: a summary for every subclass, whose fields
        # (probability arrays, callables) differ; the description is computed.
        return {
            "name": self.name,
            "shape": list(self.shape),
            "independent_rows": self.independent_rows,
            "independent_columns": self.independent_columns,
            "discrete": self.discrete,
            "description": self.describe(),
        }


@dataclass(frozen=True, eq=False)
class ProductBernoulli(Prior):
    """Independent Bernoulli entries: X(i, j) ~ Bernoulli(p(i, j)), values in {0, 1}.

    Parameters
    ----------
    p : array_like
        Success probabilities in [0, 1], shape ``(n,)``, ``(n, k)``, or anything that
        broadcasts to ``shape``.
    shape : (int, int), optional
        ``(n, k)``; inferred from ``p`` when omitted.
    """

    draws_only_from_rng = True  # every draw is from the rng argument (mechanisms.base.draws_only_from_rng)

    p: np.ndarray
    shape: tuple | None = None

    name = "product-bernoulli"
    discrete = True
    independent_rows = True
    independent_columns = True

    def __post_init__(self):
        p, shape = _entry_grid(self.p, "p", self.shape)
        _check_unit_interval(p, "p")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "shape", shape)

    def _sample(self, m, rng):
        return (rng.random((m,) + self.shape) < self.p).astype(np.float64)

    def describe(self) -> str:
        return f"product Bernoulli on {self.n}x{self.k} databases, p {_range_text(self.p)}"


@dataclass(frozen=True, eq=False)
class ProductGaussian(Prior):
    """Independent Gaussian records: X(i, ·) ~ N(mean(i), cov(i)), independently over i.

    With ``k = 1`` this is a member of the product Gaussian family Θ_G(m, s) of Remark 9
    of the Pufferfish paper (θ_i = N(μ_i, σ_i²)); with rows sharing N(μ, Σ) it is a member
    of its multivariate version Θ_G^k(m, s) (Section V, before Remark 16).

    Parameters
    ----------
    mean : array_like
        Record means, shape ``(n,)`` (k = 1), ``(n, k)``, or broadcastable to ``shape``.
    cov : array_like
        Record covariances: a scalar variance, ``(k, k)`` shared by all records, or
        ``(n, k, k)``; each symmetric positive semi-definite.
    shape : (int, int), optional
        ``(n, k)``; inferred from ``mean`` when omitted.
    """

    draws_only_from_rng = True  # every draw is from the rng argument (mechanisms.base.draws_only_from_rng)

    mean: np.ndarray
    cov: np.ndarray
    shape: tuple | None = None

    name = "product-gaussian"
    discrete = False
    independent_rows = True

    def __post_init__(self):
        mean, shape = _entry_grid(self.mean, "mean", self.shape)
        n, k = shape
        cov = _finite_array(self.cov, "cov")
        if cov.ndim == 0:
            cov = cov * np.eye(k)
        if cov.shape == (k, k):
            cov = np.broadcast_to(cov, (n, k, k))
        if cov.shape != (n, k, k):
            raise InputError(f"argument 'cov' must be a scalar, ({k}, {k}) or ({n}, {k}, {k}), got {cov.shape}")
        if not np.allclose(cov, np.swapaxes(cov, 1, 2), rtol=1e-10, atol=1e-12):
            raise InputError("argument 'cov' must be symmetric")
        eigenvalues, eigenvectors = np.linalg.eigh(cov)
        if (eigenvalues < -1e-10 * max(1.0, float(np.abs(eigenvalues).max()))).any():
            raise InputError("argument 'cov' must be positive semi-definite")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "cov", np.array(cov))
        object.__setattr__(self, "shape", shape)
        # A square root A(i) with A A^T = cov(i); eigh handles singular covariances.
        root = eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))[:, None, :]
        object.__setattr__(self, "_root", root)

    @classmethod
    def theta_g(cls, means, variances) -> "ProductGaussian":
        """The member ∏_i N(μ_i, σ_i²) of Θ_G of Remark 9 (one scalar attribute per record)."""
        means = _finite_array(means, "means").reshape(-1)
        variances = _finite_array(variances, "variances")
        if (variances < 0).any():
            raise InputError("argument 'variances' must be >= 0")
        variances = np.broadcast_to(variances, means.shape) if variances.ndim == 0 else variances.reshape(-1)
        if variances.shape != means.shape:
            raise InputError(f"arguments 'means' and 'variances' differ in length: {means.size} vs {variances.size}")
        return cls(means, variances[:, None, None])

    @classmethod
    def iid_rows(cls, mean, cov, n: int) -> "ProductGaussian":
        """The member N(μ, Σ)^{⊗n} of Θ_G^k (Section V): n i.i.d. records of dimension k."""
        mean = _finite_array(mean, "mean").reshape(-1)
        n = check_int(n, "n", 1)
        return cls(mean[None, :], cov, shape=(n, mean.size))

    @property
    def independent_columns(self) -> bool:
        """True when every covariance is diagonal (Gaussian: uncorrelated means independent)."""
        off_diagonal = self.cov * (1.0 - np.eye(self.k))
        return bool((off_diagonal == 0).all())

    def in_theta_g(self, mean_bound: float, variance_bound: float) -> bool:
        """Membership in Θ_G^k(m, s): every |μ_j| ≤ m and every Σ(i, j) ≤ s (Remark 9, Section V)."""
        return bool((np.abs(self.mean) <= mean_bound).all() and (self.cov <= variance_bound).all())

    def _sample(self, m, rng):
        z = rng.standard_normal((m,) + self.shape)
        return self.mean + np.einsum("nij,mnj->mni", self._root, z)

    def describe(self) -> str:
        variances = np.diagonal(self.cov, axis1=1, axis2=2)
        return (f"product Gaussian on {self.n}x{self.k} databases, mean {_range_text(self.mean)}, "
                f"variance {_range_text(variances)}" + ("" if self.independent_columns else ", correlated attributes"))


@dataclass(frozen=True, eq=False)
class UniformBox(Prior):
    """Independent uniform entries: X(i, j) ~ U[low(i, j), high(i, j)].

    Parameters
    ----------
    low, high : array_like
        Bounds with ``low < high``, shape ``(n,)``, ``(n, k)`` or broadcastable to ``shape``.
    shape : (int, int), optional
        ``(n, k)``; inferred from ``low`` and ``high`` when omitted.
    """

    draws_only_from_rng = True  # every draw is from the rng argument (mechanisms.base.draws_only_from_rng)

    low: np.ndarray
    high: np.ndarray
    shape: tuple | None = None

    name = "uniform-box"
    discrete = False
    independent_rows = True
    independent_columns = True

    def __post_init__(self):
        shape = self.shape
        if shape is None:
            shape = np.broadcast_shapes(np.shape(self.low), np.shape(self.high))
            shape = shape + (1,) if len(shape) == 1 else shape
        low, shape = _entry_grid(self.low, "low", shape)
        high, _ = _entry_grid(self.high, "high", shape)
        if not (low < high).all():
            raise InputError("arguments 'low' and 'high' must satisfy low < high in every entry")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        object.__setattr__(self, "shape", shape)

    def _sample(self, m, rng):
        return self.low + (self.high - self.low) * rng.random((m,) + self.shape)

    def describe(self) -> str:
        return f"uniform box on {self.n}x{self.k} databases, low {_range_text(self.low)}, high {_range_text(self.high)}"


@dataclass(frozen=True, eq=False)
class Categorical(Prior):
    """Independent categorical entries: X(i, j) = values[c] with probability probabilities(i, j, c).

    Parameters
    ----------
    probabilities : array_like
        Shape ``(..., C)``: one probability vector (non-negative, summing to 1) per entry;
        the leading axes are ``(n,)``, ``(n, k)`` or broadcast to ``shape``.
    values : array_like, optional
        The ``C`` category values (default ``0, 1, ..., C-1``).
    shape : (int, int), optional
        ``(n, k)``; inferred from the leading axes of ``probabilities`` when omitted.
    """

    draws_only_from_rng = True  # every draw is from the rng argument (mechanisms.base.draws_only_from_rng)

    probabilities: np.ndarray
    values: np.ndarray | None = None
    shape: tuple | None = None

    name = "categorical"
    discrete = True
    independent_rows = True
    independent_columns = True

    def __post_init__(self):
        probabilities, shape = _entry_grid(self.probabilities, "probabilities", self.shape, trailing=1)
        if probabilities.shape[-1] < 1:
            raise InputError("argument 'probabilities' needs at least one category")
        if (probabilities < 0).any():
            raise InputError("argument 'probabilities' must be non-negative")
        if (np.abs(probabilities.sum(axis=-1) - 1.0) > _SUM_TOLERANCE).any():
            raise InputError("argument 'probabilities' must sum to 1 over the last axis (categories)")
        categories = probabilities.shape[-1]
        values = np.arange(categories, dtype=np.float64) if self.values is None else _finite_array(self.values, "values")
        if values.shape != (categories,):
            raise InputError(f"argument 'values' must have shape ({categories},), got {values.shape}")
        object.__setattr__(self, "probabilities", probabilities)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "shape", shape)

    def _sample(self, m, rng):
        cumulative = np.cumsum(self.probabilities, axis=-1)
        cumulative[..., -1] = 1.0  # rounding in the sum must not leave u above the last edge
        u = rng.random((m,) + self.shape + (1,))
        return self.values[(u >= cumulative).sum(axis=-1)]

    def describe(self) -> str:
        return f"categorical on {self.n}x{self.k} databases, values {self.values.tolist()}"


@dataclass(frozen=True, eq=False)
class TwoPoint(Prior):
    """Each record independently takes one of two given rows: X(i, ·) = second(i) w.p. p_i, else first(i).

    Parameters
    ----------
    first, second : array_like
        The two candidate rows of every record, shape ``(n, k)`` (or ``(n,)`` for k = 1).
    p : array_like
        Probability of ``second`` per record, in [0, 1]; scalar or shape ``(n,)`` (default 0.5).
    """

    draws_only_from_rng = True  # every draw is from the rng argument (mechanisms.base.draws_only_from_rng)

    first: np.ndarray
    second: np.ndarray
    p: np.ndarray = 0.5

    name = "two-point"
    discrete = True
    independent_rows = True

    def __post_init__(self):
        # NaN rows are missing values, allowed where the pair was (mechanisms.inputs.missing_values).
        first, shape = _entry_grid(self.first, "first", None, allow_nan=True)
        second, _ = _entry_grid(self.second, "second", shape, allow_nan=True)
        p = _finite_array(self.p, "p")
        try:
            p = np.broadcast_to(p, (shape[0],)).copy()
        except ValueError:
            raise InputError(f"argument 'p' must be a scalar or have shape ({shape[0]},), got {p.shape}") from None
        _check_unit_interval(p, "p")
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "second", second)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "shape", shape)

    @property
    def independent_columns(self) -> bool:
        """True when no random record has two attributes that switch together."""
        switching = (self.first != self.second).sum(axis=1)
        random_record = (self.p > 0) & (self.p < 1)
        return bool((switching[random_record] <= 1).all())

    def _sample(self, m, rng):
        chosen = rng.random((m, self.n)) < self.p
        # Record i of a draw is row i (first) or n + i (second) of the stacked rows: the same values as
        # np.where(chosen[:, :, None], second, first), gathered whole rows at a time (5x faster).
        rows = np.concatenate([self.first, self.second])
        return np.take(rows, chosen * self.n + np.arange(self.n), axis=0)

    def describe(self) -> str:
        return f"two-point records on {self.n}x{self.k} databases, P(second) {_range_text(self.p)}"


@dataclass(frozen=True, eq=False)
class FixedRest(Prior):
    """One record random, all others fixed: X(record, ·) ~ record_prior, X(j, ·) = rest(j) for j ≠ record.

    The prior of a DP audit at a single record (Definition 2 conditions on the other rows).

    Parameters
    ----------
    rest : array_like, shape (n, k)
        The fixed database; its row ``record`` is replaced by the random record.
    record : int
        Index of the random record.
    record_prior : Prior
        Distribution of the random record, a prior of shape ``(1, k)``.
    """

    @property
    def draws_only_from_rng(self) -> bool:
        """Whether every component draws only from the rng argument (:func:`mechanisms.base.draws_only_from_rng`)."""
        return self.record_prior.draws_only_from_rng is True

    rest: np.ndarray
    record: int
    record_prior: Prior

    name = "fixed-rest"
    independent_rows = True

    def __post_init__(self):
        rest, shape = _entry_grid(self.rest, "rest", None)
        record = check_int(self.record, "record", 0)
        if record >= shape[0]:
            raise InputError(f"argument 'record' must be < n = {shape[0]}, got {record}")
        if not isinstance(self.record_prior, Prior) or self.record_prior.shape != (1, shape[1]):
            raise InputError(f"argument 'record_prior' must be a Prior of shape (1, {shape[1]})")
        object.__setattr__(self, "rest", rest)
        object.__setattr__(self, "record", record)
        object.__setattr__(self, "shape", shape)

    @property
    def first_seconds(self):
        """The record prior's (:attr:`Prior.first_seconds`): each database draws one record from it."""
        return self.record_prior.first_seconds

    @property
    def independent_columns(self) -> bool:
        """The fixed rows are constants, so only the random record matters."""
        return self.record_prior.independent_columns

    @property
    def discrete(self) -> bool:
        """Finite support exactly when the random record has it."""
        return self.record_prior.discrete

    def _sample(self, m, rng):
        out = np.broadcast_to(self.rest, (m,) + self.shape).copy()
        out[:, self.record, :] = self.record_prior(m, rng)[:, 0, :]
        return out

    def describe(self) -> str:
        return (f"record {self.record} of {self.n}x{self.k} databases from ({self.record_prior.describe()}), "
                "other records fixed")


