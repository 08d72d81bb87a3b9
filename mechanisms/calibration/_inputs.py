"""Input checks shared by the calibration rules (one clear InputError naming the argument)."""

from __future__ import annotations

import math
import sys

import numpy as np

from estimators.validation import InputError, as_float64, check_int, check_positive

# Noise scales are computed in log space and must come out as normal floats: above the
# largest float nothing can be drawn, and below the smallest normal one a positive scale
# would read as (or round to) no noise at all.
LOG_FLOAT_MAX = math.log(sys.float_info.max)
LOG_FLOAT_MIN = math.log(sys.float_info.min)


def check_epsilon(epsilon) -> float:
    """ε must be a finite number > 0."""
    return check_positive(epsilon, "epsilon")


def nonnegative_vector(values, name: str, dim=None) -> np.ndarray:
    """Per-coordinate values (variances, standard deviations) as a 1-D float array ≥ 0.

    A scalar is one coordinate. When ``dim`` is given the length must equal it.
    """
    arr = np.atleast_1d(as_float64(values, f"argument '{name}'"))
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"argument '{name}' must be a non-empty 1-D list of per-coordinate values, "
                         f"got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"argument '{name}' contains NaN or inf")
    if np.any(arr < 0):
        raise InputError(f"argument '{name}' must be >= 0 in every coordinate, got {arr.tolist()}")
    if dim is not None:
        dim = check_int(dim, "dim", minimum=1)
        if arr.size != dim:
            raise InputError(f"argument '{name}' has {arr.size} coordinates but 'dim' is {dim}")
    return arr


def coordinate_total(values, name: str, dim=None, *, root: bool = False):
    """(d, Σ_j v_j as a callable, log Σ_j v_j) for per-coordinate values v_j ≥ 0 (their square
    roots with ``root=True``).

    A list gives one value per coordinate (its length checked against ``dim``). A single number
    with ``dim`` d is the same value in each of the d coordinates: the sum is d·v and no d-long
    array is built, so a huge d costs nothing.
    """
    if np.ndim(values) == 0 and dim is not None:
        d = check_int(dim, "dim", minimum=1)
        value = float(nonnegative_vector(values, name)[0])
        value = math.sqrt(value) if root else value
        return d, (lambda: d * value), math.log(d) + safe_log(value)
    arr = nonnegative_vector(values, name, dim)
    arr = np.sqrt(arr) if root else arr
    return arr.size, arr.sum, log_sum(arr)


def resolve_dim(dim) -> int:
    """The query dimension of a sensitivity-based rule (default 1)."""
    return 1 if dim is None else check_int(dim, "dim", minimum=1)


def exactly_one(**candidates) -> str:
    """Name of the single argument that is not ``None``; raise unless exactly one is given."""
    given = [name for name, value in candidates.items() if value is not None]
    if len(given) != 1:
        listed = ", ".join(f"'{n}'" for n in candidates)
        found = ", ".join(f"'{n}'" for n in given) or "none"
        raise InputError(f"give exactly one of the arguments {listed} (got {found})")
    return given[0]


def projection_matrix(matrix, input_dim=None) -> np.ndarray:
    """A deterministic projection as a float (d, ℓ) array with ℓ ≤ d, finite entries."""
    arr = as_float64(matrix, "argument 'matrix'")
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"argument 'matrix' must have shape (d, l), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError("argument 'matrix' contains NaN or inf")
    if arr.shape[1] > arr.shape[0]:
        raise InputError(f"argument 'matrix' must have l <= d columns, got shape {arr.shape}")
    if input_dim is not None and arr.shape[0] != input_dim:
        raise InputError(f"argument 'matrix' has {arr.shape[0]} rows but 'input_dim' is {input_dim}")
    return arr


def safe_log(value: float) -> float:
    """log(value) for value ≥ 0, with log(0) = −inf (an exact zero stays an exact zero)."""
    return math.log(value) if value > 0 else -math.inf


def log_sum(values: np.ndarray) -> float:
    """log Σ values for values ≥ 0 (−inf for all zeros), without overflow of the sum."""
    positive = values[values > 0]
    return float(np.logaddexp.reduce(np.log(positive))) if positive.size else -math.inf


def normal_ratio(numerator: float, denominator: float) -> float:
    """numerator/denominator, or NaN when it falls below the smallest normal float (a
    subnormal quotient has lost digits; the log-space value is used instead)."""
    ratio = numerator / denominator
    return ratio if ratio == 0.0 or ratio >= sys.float_info.min else math.nan


def log_expm1_ratio(numerator: float, denominator: float) -> float:
    """log(e^{a/b} − 1) for a, b > 0, without overflow for a large a/b and without losing a/b
    when it underflows (then e^{a/b} − 1 = a/b to double precision)."""
    x = numerator / denominator
    if x > 1.0:
        return x + math.log1p(-math.exp(-x))  # inf stays inf: the caller's range check names it
    if x >= sys.float_info.min:
        return math.log(math.expm1(x))
    return math.log(numerator) - math.log(denominator)


def attempt(formula) -> float:
    """The value of ``formula()`` (the rule as printed), or NaN where it overflows or divides by
    zero on the way; :func:`noise_value` then falls back to the log-space value."""
    try:
        with np.errstate(all="ignore"):
            return float(formula())
    except (OverflowError, ZeroDivisionError, ValueError):
        return math.nan


def noise_value(direct: float, log_value: float, what: str, drivers) -> float:
    """A noise scale or variance: ``direct`` (the formula as printed) when it is a normal float,
    else exp(``log_value``), the same quantity computed in log space.

    −inf as ``log_value`` is an exact 0 (e.g. a query with zero conditional variance). A value
    outside the normal float range is an :class:`InputError` naming the arguments in
    ``drivers`` (the ones that set it): above the largest float nothing can be drawn, and below
    the smallest normal one a positive scale would read as (or round to) no noise at all.
    """
    if log_value == -math.inf:
        return 0.0
    if math.isfinite(direct) and direct >= sys.float_info.min:
        return direct
    if math.isnan(log_value) or log_value > LOG_FLOAT_MAX or log_value < LOG_FLOAT_MIN:
        names = ("argument " if len(drivers) == 1 else "arguments ") + ", ".join(f"'{name}'" for name in drivers)
        if math.isnan(log_value):
            shown = "not a number"
        else:
            where = "above the largest" if log_value > 0 else "below the smallest normal"
            shown = f"e^{log_value:.6g}, {where} float"
        raise InputError(f"{names}: the {what} for these values is {shown}; no noise of that size can be drawn")
    return math.exp(log_value)
