"""Priors from a user's table, function or mixture: resampled rows, mixtures and user priors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from estimators.validation import InputError, check_int, check_real, first_nonfinite_index
from mechanisms.base import MechanismError, read_tensors
from mechanisms.errors import exception_text, raised_where
from mechanisms.calls.user_call import FIRST_CALL_TIMEOUT, TIMEOUT_HINT, call_user_code, first_call_timeout
from mechanisms.inputs.missing_values import ALLOW_NAN_HINT
from mechanisms.inputs.priors import Prior, _SUM_TOLERANCE, _finite_array
from mechanisms.outputs.limits import beyond_range_text, first_inexact_number, inexact_number_text, number_noun

__all__ = ["EmpiricalResample", "Mixture", "UserPrior"]

#: How a prior's records may hold a number that float64 does not hold exactly instead (:func:`_inexact_text`).
_IN_A_COARSER_UNIT = "in a coarser unit (a record is read as float64)"


def _inexact_text(values, holds: str) -> str | None:
    """Where a prior's ``values`` (a table's rows, a sampler's databases) hold a number that float64 does not hold
    exactly (:func:`mechanisms.outputs.limits.first_inexact_number`, as a mechanism's outputs are read): ``"{holds}
    an integer that float64 does not hold exactly at [i, ...]: why"``, i the row or database; None where they hold
    none."""
    inexact = first_inexact_number(values)
    if inexact is None:
        return None
    index, number = inexact
    return (f"{holds} {number_noun(number)} that float64 does not hold exactly at {list(map(int, index))}: "
            f"{inexact_number_text(number, _IN_A_COARSER_UNIT, verb='draw')}")


def _read_table(path: Path) -> np.ndarray:
    if not path.is_file():
        raise InputError(f"argument 'path': file {str(path)!r} does not exist")
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if path.suffix == ".csv":
            try:
                return np.loadtxt(path, delimiter=",", ndmin=2)
            except ValueError:
                # A header line of column names is the one non-numeric line allowed.
                return np.loadtxt(path, delimiter=",", ndmin=2, skiprows=1)
    except (ValueError, OSError) as exc:
        raise InputError(f"argument 'path': cannot read {str(path)!r} as numbers: {exc}") from None
    raise InputError(f"argument 'path' must end in .csv or .npy, got {str(path)!r}")


@dataclass(frozen=True, eq=False)
class EmpiricalResample(Prior):
    """Databases of ``n`` records drawn from the rows of an empirical dataset.

    With ``replace=True`` the records are i.i.d. from the empirical distribution (rows
    independent); without replacement they are a uniformly random n-subset in random
    order (rows dependent). Columns keep the dataset's joint distribution, so they are
    not declared independent.

    Parameters
    ----------
    data : array_like, shape (N, k) or (N,)
        The dataset, one record per row.
    n : int
        Records per database (at most N without replacement).
    replace : bool
        Resample with replacement (default True).
    """

    draws_only_from_rng = True  # every draw is from the rng argument (mechanisms.base.draws_only_from_rng)

    data: np.ndarray
    n_records: int
    replace: bool = True

    name = "empirical-resample"
    discrete = True
    independent_columns = False

    def __post_init__(self):
        data = read_tensors(self.data, "argument 'data' holds", InputError)  # a tensor read as a mechanism's output is
        inexact = _inexact_text(data, "argument 'data' holds")
        if inexact is not None:  # float64 would round it silently (2**64 + 5 read as 2**64)
            raise InputError(inexact)
        data = _finite_array(data, "data")
        data = data[:, None] if data.ndim == 1 else data
        if data.ndim != 2:
            raise InputError(f"argument 'data' must have shape (N, k), got {data.shape}")
        n = check_int(self.n_records, "n_records", 1)
        if not isinstance(self.replace, bool):
            raise InputError(f"argument 'replace' must be True or False, got {self.replace!r}")
        if not self.replace and n > data.shape[0]:
            raise InputError(f"argument 'n_records' = {n} exceeds the {data.shape[0]} rows of 'data' "
                             "(sampling without replacement)")
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "n_records", n)
        object.__setattr__(self, "shape", (n, data.shape[1]))

    @classmethod
    def from_file(cls, path, n_records: int, replace: bool = True) -> "EmpiricalResample":
        """Load the dataset from a ``.csv`` (comma-separated, optional header line) or ``.npy`` file."""
        return cls(_read_table(Path(path)), n_records, replace)

    @property
    def independent_rows(self) -> bool:
        """Records are independent exactly when drawn with replacement."""
        return self.replace

    def _sample(self, m, rng):
        rows = self.data.shape[0]
        if self.replace:
            index = rng.integers(0, rows, size=(m, self.n))
        else:
            index = np.argsort(rng.random((m, rows)), axis=1)[:, :self.n]
        return self.data[index]

    def describe(self) -> str:
        how = "with" if self.replace else "without"
        return f"{self.n} records resampled {how} replacement from a dataset of {self.data.shape[0]}x{self.k}"


@dataclass(frozen=True, eq=False)
class Mixture(Prior):
    """A mixture Σ_c weights[c] · components[c] of priors of the same shape.

    Θ is often taken convex; a mixture of independent-row priors generally has
    dependent rows, so the structure flags hold only in the one-component case.

    Parameters
    ----------
    components : sequence of Prior
        Priors of one common shape ``(n, k)``.
    weights : array_like
        Non-negative mixture weights summing to 1.
    """

    @property
    def draws_only_from_rng(self) -> bool:
        """Whether every component draws only from the rng argument (:func:`mechanisms.base.draws_only_from_rng`)."""
        return all(c.draws_only_from_rng is True for c in self.components)

    components: tuple
    weights: np.ndarray

    name = "mixture"

    def __post_init__(self):
        components = tuple(self.components)
        if not components or not all(isinstance(c, Prior) for c in components):
            raise InputError("argument 'components' must be a non-empty sequence of Prior objects")
        shapes = {c.shape for c in components}
        if len(shapes) != 1:
            raise InputError(f"argument 'components' must share one shape, got {sorted(shapes)}")
        weights = _finite_array(self.weights, "weights").reshape(-1)
        if weights.shape != (len(components),):
            raise InputError(f"argument 'weights' must have {len(components)} entries, got {weights.size}")
        if (weights < 0).any() or abs(weights.sum() - 1.0) > _SUM_TOLERANCE:
            raise InputError("argument 'weights' must be non-negative and sum to 1")
        object.__setattr__(self, "components", components)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "shape", components[0].shape)

    @property
    def first_seconds(self):
        """The slowest component's first seconds a database (:attr:`Prior.first_seconds`; a database of the mixture is
        one of a component's), None where a component holds none (the mixture's own first draw is then timed,
        :func:`mechanisms.inputs.bounded_draws.draw_bounded`)."""
        seconds = [c.first_seconds for c in self.components]
        return None if None in seconds else max(seconds)

    @property
    def independent_rows(self) -> bool:
        return len(self.components) == 1 and self.components[0].independent_rows

    @property
    def independent_columns(self) -> bool:
        return len(self.components) == 1 and self.components[0].independent_columns

    @property
    def discrete(self) -> bool:
        return all(c.discrete for c in self.components)

    def _sample(self, m, rng):
        labels = rng.choice(len(self.components), size=m, p=self.weights)
        out = np.empty((m,) + self.shape)
        for label, component in enumerate(self.components):
            chosen = np.flatnonzero(labels == label)
            if chosen.size:
                out[chosen] = component(chosen.size, rng)
        return out

    def describe(self) -> str:
        parts = "; ".join(f"{w:g} x ({c.describe()})" for w, c in zip(self.weights, self.components))
        return f"mixture of {len(self.components)}: {parts}"


@dataclass(frozen=True, eq=False)
class UserPrior(Prior):
    """A user's callable ``sample(m, rng) -> (m, n, k)`` as a prior, with its structure declared.

    Nothing can be inferred about an arbitrary sampler, so its rows count as dependent and
    its values as continuous unless the user declares otherwise; the audit then certifies
    only what those declarations allow.

    Parameters
    ----------
    sample : callable
        ``sample(m, rng) -> (m, n, k)``.
    label : str
        Name for reports.
    allow_nan : bool
        Whether the databases may hold NaN, missing values, which then reach the mechanism unchanged
        (``--allow-nan``; :mod:`mechanisms.inputs.missing_values`); default False: a NaN is refused, the error
        naming the flag. An infinity is refused either way.
    independent_rows, independent_columns, discrete : bool
        Structure the user vouches for.

    Attributes
    ----------
    first_seconds : float
        Seconds a database of the first call (``sample(2, rng)``, made when the prior is built, bounded by
        ``--timeout``, else a minute): they bound the later draws where no ``--timeout`` is given
        (:func:`mechanisms.inputs.bounded_draws.draw_bounded`).
    """

    sample: object
    label: str = "user prior"
    independent_rows: bool = False
    independent_columns: bool = False
    discrete: bool = False
    allow_nan: bool = False

    name = "user"

    def __post_init__(self):
        if not callable(self.sample):
            raise InputError("argument 'sample' must be callable: sample(m, rng) -> (m, n, k)")
        for flag in ("independent_rows", "independent_columns", "discrete", "allow_nan"):
            # A string such as "false" would be truthy: only a real boolean may vouch for structure.
            if not isinstance(getattr(self, flag), (bool, np.bool_)):
                raise InputError(f"argument '{flag}' must be True or False, got {getattr(self, flag)!r}")
            object.__setattr__(self, flag, bool(getattr(self, flag)))
        # Bounded in time: a sampler that never returns is named instead of hanging the audit.
        limit = first_call_timeout()  # the audit's --timeout, else a minute
        hint = TIMEOUT_HINT if limit != FIRST_CALL_TIMEOUT else f"(its first call may take {limit:g} s)"
        started = time.perf_counter()
        probe = self._call(2, np.random.default_rng(0), timeout=limit, hint=hint)
        # Seconds a database, which bound the later draws where no --timeout is given (bounded_draws.draw_bounded).
        object.__setattr__(self, "first_seconds", (time.perf_counter() - started) / 2)
        if probe.ndim != 3 or 0 in probe.shape[1:]:
            raise MechanismError(f"prior {self.label!r} must return an array of shape (m, n, k); for m = 2 it "
                                 f"returned shape {probe.shape}", mechanism=f"prior {self.label!r}")
        object.__setattr__(self, "shape", probe.shape[1:])

    def _call(self, m, rng, timeout=None, hint=TIMEOUT_HINT) -> np.ndarray:
        """``sample(m, rng)`` as finite float64 of shape (m, ...); any failure names the prior."""
        who = f"prior {self.label!r}"
        try:
            out = call_user_code(self.sample, (m, rng), who=who, timeout=timeout,
                                 where=f" when asked for {m} databases", hint=hint)
        except MechanismError:
            raise
        except Exception as exc:  # noqa: BLE001 - a user's sampler may raise anything
            raise MechanismError(f"{who} raised {type(exc).__name__} when asked for {m} databases{exception_text(exc)}"
                                 f"{raised_where(exc, self.sample)}", mechanism=who) from exc
        # A tensor (torch.bernoulli's draws, a bfloat16 or one that requires grad) read as a mechanism's output is.
        out = read_tensors(out, f"argument 'sample' of {who} returned",
                           lambda message: MechanismError(message, mechanism=who))
        check_real(out, f"{who} output", error=lambda message: MechanismError(message, mechanism=who))
        inexact = _inexact_text(out, f"argument 'sample' of {who} returned")
        if inexact is not None:  # the float64 cast below would round it silently (2**64 + 5 read as 2**64)
            raise MechanismError(inexact, mechanism=who)
        try:
            out = np.asarray(out, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise MechanismError(f"{who} returned non-numeric data ({type(out).__name__}): {exc}",
                                 mechanism=who) from None
        except OverflowError:  # a Python int beyond float64 (10**400)
            raise MechanismError(f"{who} returned {beyond_range_text(out)}", mechanism=who) from None
        if out.ndim == 0 or out.shape[0] != m:
            raise MechanismError(f"{who} returned shape {out.shape} when asked for {m} databases; expected "
                                 f"({m}, n, k)", mechanism=who)
        bad = first_nonfinite_index(np.where(np.isnan(out), 0.0, out) if self.allow_nan else out)
        if bad is not None:
            missing = "" if self.allow_nan or not np.isnan(out[bad]).any() else f"; {ALLOW_NAN_HINT}"
            raise MechanismError(f"{who} returned NaN or inf (database {bad}){missing}", mechanism=who,
                                 database_index=bad)
        return out

    def _sample(self, m, rng):
        out = self._call(m, rng)
        if out.shape != (m,) + self.shape:
            raise MechanismError(f"prior {self.label!r} returned shape {out.shape}, expected {(m,) + self.shape}",
                                 mechanism=f"prior {self.label!r}")
        return out

    def describe(self) -> str:
        flags = [name for name in ("independent_rows", "independent_columns", "discrete") if getattr(self, name)]
        return f"{self.label} on {self.n}x{self.k} databases" + (f" ({', '.join(flags)})" if flags else "")
