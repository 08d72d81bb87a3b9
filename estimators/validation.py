"""Validation at the boundary: one clear error that names the offending argument.

Every public entry point of miaudit validates its inputs with these helpers so that
bad input (wrong shapes, NaN/inf, empty arrays, epsilon <= 0, alpha outside (0, 1))
gets a single :class:`InputError` naming the argument. Nothing is silently clipped.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "InputError",
    "as_generator",
    "as_samples",
    "check_choice",
    "check_finite_number",
    "check_int",
    "check_nonnegative",
    "check_positive",
    "check_probability",
    "check_same_length",
]


class InputError(ValueError):
    """Invalid user input. The message names the argument and what was wrong."""


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise InputError(f"argument '{name}' must be a real number, got {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise InputError(f"argument '{name}' must be finite, got {value!r}")
    return out


def check_finite_number(value, name: str) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number."""
    return _number(value, name)


def check_positive(value, name: str) -> float:
    """Return ``value`` as a float, or raise unless it is finite and > 0."""
    out = _number(value, name)
    if out <= 0:
        raise InputError(f"argument '{name}' must be > 0, got {value!r}")
    return out


def check_nonnegative(value, name: str) -> float:
    """Return ``value`` as a float, or raise unless it is finite and >= 0."""
    out = _number(value, name)
    if out < 0:
        raise InputError(f"argument '{name}' must be >= 0, got {value!r}")
    return out


def check_probability(value, name: str) -> float:
    """Return ``value`` as a float, or raise unless it lies in the open interval (0, 1)."""
    out = _number(value, name)
    if not 0.0 < out < 1.0:
        raise InputError(f"argument '{name}' must be in (0, 1), got {value!r}")
    return out


def check_int(value, name: str, minimum: int | None = None) -> int:
    """Return ``value`` as an int, or raise unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise InputError(f"argument '{name}' must be an integer, got {value!r}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise InputError(f"argument '{name}' must be >= {minimum}, got {value!r}")
    return out


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` unchanged, or raise unless it is one of ``choices``."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise InputError(f"argument '{name}' must be one of {listed}, got {value!r}")
    return value


def as_samples(values, name: str, *, min_rows: int = 1) -> np.ndarray:
    """Return samples as a float64 array of shape ``(n, d)``.

    A 1-D array of length n becomes ``(n, 1)``. Raises :class:`InputError` for other
    shapes, fewer than ``min_rows`` rows, zero columns, non-numeric data, NaN or inf.
    """
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"argument '{name}' must be numeric: {exc}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InputError(f"argument '{name}' must have shape (n,) or (n, d), got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise InputError(f"argument '{name}' needs at least {min_rows} samples, got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise InputError(f"argument '{name}' has zero columns (shape {arr.shape})")
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise InputError(f"argument '{name}' contains NaN or inf (first at row {row})")
    return arr


def check_same_length(**arrays: np.ndarray) -> int:
    """Return the common number of rows, or raise naming the arguments that disagree."""
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"'{k}' has {v}" for k, v in lengths.items())
        raise InputError(f"arguments must have the same number of samples: {described}")
    return next(iter(lengths.values()))


def as_generator(seed) -> np.random.Generator:
    """Return a NumPy Generator from a seed (int or None) or pass a Generator through."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, (numbers.Integral, np.integer)) and not isinstance(seed, bool)):
        if seed is not None and int(seed) < 0:
            raise InputError(f"argument 'seed' must be a non-negative integer, got {seed!r}")
        return np.random.default_rng(seed)
    raise InputError(f"argument 'seed' must be an integer, None or numpy.random.Generator, got {seed!r}")
