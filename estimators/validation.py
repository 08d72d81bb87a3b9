"""Validation at the boundary: one clear error that names the offending argument.

Every public entry point of miaudit validates its inputs with these helpers so that
bad input (wrong shapes, NaN/inf, empty arrays, epsilon <= 0, alpha outside (0, 1))
gets a single :class:`InputError` naming the argument. Nothing is silently clipped.
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np

from .choices import UNSET

__all__ = [
    "InputError",
    "as_float64",
    "as_float_array",
    "as_generator",
    "as_sample_batch",
    "as_positive_array",
    "as_samples",
    "check_bool",
    "check_choice",
    "check_real",
    "check_finite_number",
    "check_int",
    "check_nonnegative",
    "check_not_text",
    "check_positive",
    "check_probability",
    "check_same_length",
    "check_unmasked",
    "closest_word",
    "first_nonfinite_index",
    "parse_decimal",
    "parse_decimal_integer",
    "plain",
    "paired_sample_batches",
    "paired_samples",
    "refuse_unused",
    "scalar_or_array",
]


class InputError(ValueError):
    """Invalid user input. The message names the argument and what was wrong."""


def plain(value) -> str:
    """``value`` as a message shows it: NumPy scalars as the Python number they hold
    (``0.5``, not ``np.float64(0.5)``), arrays and sequences as lists of such numbers (at most
    six entries shown), strings quoted, everything else by ``repr``."""
    if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and len(value) > 0):
        flat = np.asarray(value, dtype=object).ravel().tolist()
        head = ", ".join(plain(v) for v in flat[:6])
        return f"[{head}{', ...' if len(flat) > 6 else ''}]"
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def check_real(values, what: str, error=InputError) -> None:
    """Raise ``error`` naming ``what`` when ``values`` holds complex numbers.

    Converting a complex array to float silently drops the imaginary part, so every array
    that enters miaudit (user data, mechanism outputs, prior draws) passes here first.

    Parameters
    ----------
    values : array_like
    what : str
        How the message names the data, e.g. ``"argument 'x'"`` or ``"mechanism 'f' output"``.
    error : callable, default InputError
        Builds the exception from the message (e.g. a ``MechanismError`` naming the mechanism).
    """
    if callable(getattr(values, "is_complex", None)):  # a torch tensor: ask it, do not convert it
        is_complex = bool(values.is_complex())
    else:
        try:
            is_complex = np.iscomplexobj(values)
        except (TypeError, ValueError):  # ragged or exotic input: the float conversion will say why
            return
    if not is_complex and isinstance(values, np.ndarray) and values.dtype == object:
        is_complex = any(isinstance(v, complex) for v in values.flat)
    if is_complex:
        raise error(f"{what} holds complex numbers; miaudit works with real numbers (pass the real and "
                    "imaginary parts as separate columns, e.g. numpy.column_stack([z.real, z.imag]))")


#: A number as a user writes it: ASCII digits, an optional sign, point and exponent, or inf/nan
#: (refused later as not finite, by name). Python's ``float`` and ``int`` also accept underscores
#: (``1_0`` is 10) and any Unicode digit (full-width ``１``): a typo must not be read as a number.
_DECIMAL = re.compile(r"\s*[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)\s*", re.ASCII | re.IGNORECASE)
_DECIMAL_INTEGER = re.compile(r"\s*[+-]?\d+\s*", re.ASCII)


#: How an error says that a Python integer cannot become a float64 (``float(10**400)`` raises OverflowError).
BEYOND_FLOAT64 = "beyond float64's range of about 1.8e308"


def as_float64(values, what: str, *, copy: bool = False) -> np.ndarray:
    """``values`` as a float64 array, or one :class:`InputError` saying that ``what`` must be numeric.

    The conversion alone, the first step of every parameter array's check: the caller checks the
    shape, finiteness and range after it. NumPy's reason (a ragged list, text that is not a number)
    follows the message.

    Parameters
    ----------
    values : array_like
    what : str
        How the message names the data, e.g. ``"argument 'x'"``.
    copy : bool
        Always return a new array (``np.array``); otherwise ``values`` itself when it already is a
        float64 array (``np.asarray``).
    """
    try:
        return np.array(values, dtype=np.float64) if copy else np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} must be numeric: {exc}") from None
    except OverflowError:  # a Python int beyond float64 (10**400)
        raise InputError(f"{what} holds an integer {BEYOND_FLOAT64}") from None


def parse_decimal(text: str) -> float:
    """``float(text)`` for a plain ASCII decimal number (:data:`_DECIMAL`); ValueError otherwise.

    Usable as an ``argparse`` type (its error then reads "invalid parse_decimal value").
    """
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text):
        raise ValueError(f"not a plain decimal number: {text!r}")
    return float(text)


def parse_decimal_integer(text: str) -> int:
    """``int(text)`` for plain ASCII digits with an optional sign; ValueError otherwise."""
    if not isinstance(text, str) or not _DECIMAL_INTEGER.fullmatch(text):
        raise ValueError(f"not a whole number in decimal digits: {text!r}")
    return int(text)


def _number(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise InputError(f"argument '{name}' must be a real number, got {plain(value)}")
    out = float(value)
    if not math.isfinite(out):
        raise InputError(f"argument '{name}' must be finite, got {plain(value)}")
    return out


def check_finite_number(value, name: str) -> float:
    """Return ``value`` as a float, or raise if it is not a finite real number."""
    return _number(value, name)


def check_positive(value, name: str) -> float:
    """Return ``value`` as a float, or raise unless it is finite and > 0."""
    out = _number(value, name)
    if out <= 0:
        raise InputError(f"argument '{name}' must be > 0, got {plain(value)}")
    return out


def check_nonnegative(value, name: str) -> float:
    """Return ``value`` as a float, or raise unless it is finite and >= 0."""
    out = _number(value, name)
    if out < 0:
        raise InputError(f"argument '{name}' must be >= 0, got {plain(value)}")
    return out


def check_probability(value, name: str) -> float:
    """Return ``value`` as a float, or raise unless it lies in the open interval (0, 1)."""
    out = _number(value, name)
    if not 0.0 < out < 1.0:
        raise InputError(f"argument '{name}' must be in (0, 1), got {plain(value)}")
    return out


def check_int(value, name: str, minimum: int | None = None) -> int:
    """Return ``value`` as an int, or raise unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise InputError(f"argument '{name}' must be an integer, got {plain(value)}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise InputError(f"argument '{name}' must be >= {minimum}, got {plain(value)}")
    return out


def refuse_unused(value, name: str, applies: str, remedy: str, *, unset=UNSET) -> None:
    """One :class:`InputError` naming ``name`` when a setting the chosen method does not use was given
    (``value`` is not ``unset``, the default that means "not given": :data:`estimators.choices.UNSET`, or None
    for a command-line flag), instead of ignoring it silently.

    ``applies`` says when it is used (``"to sliced estimation"``), ``remedy`` how to go on.
    """
    if value is not unset:
        raise InputError(f"argument '{name}' applies only {applies}: {remedy}")


def check_bool(value, name: str) -> bool:
    """Return ``value`` as a bool, or raise unless it is ``True`` or ``False`` (a NumPy bool too).

    A truthiness test would read the text ``"False"`` as true.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"argument '{name}' must be True or False, got {plain(value)}")
    return bool(value)


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` unchanged, or raise unless it is one of ``choices``."""
    if value not in choices:
        listed = ", ".join(plain(c) for c in choices)
        raise InputError(f"argument '{name}' must be one of {listed}, got {plain(value)}")
    return value


def closest_word(typed: str, words) -> str | None:
    """The one of ``words`` a typo of ``typed`` most likely meant (``--samples`` for ``--sample``): the closest by
    :func:`difflib.get_close_matches` at its similarity ratio 0.6, None where none is that close. The one rule of every
    "did you mean" hint (a flag, a configuration key, a function of a file)."""
    import difflib

    close = difflib.get_close_matches(typed, list(words), n=1, cutoff=0.6)
    return close[0] if close else None


def as_positive_array(values, name: str, *, allow_zero: bool = False) -> np.ndarray:
    """Return a scalar or array parameter (ε over a grid, μ, ...) as a non-empty float64 array,
    or raise unless every entry is finite and > 0 (>= 0 with ``allow_zero``)."""
    try:
        arr = None if isinstance(values, (str, bytes, bool)) else np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0 if allow_zero else arr <= 0):
        raise InputError(f"argument '{name}' must be finite and {'>=' if allow_zero else '>'} 0, got {plain(values)}")
    return arr


def scalar_or_array(values):
    """A 0-d result as a Python float, anything else unchanged (functions vectorised over ε
    return a float for a scalar input and an array for an array input)."""
    return float(values) if np.ndim(values) == 0 else values


def without_repeats(arr: np.ndarray) -> np.ndarray:
    """``arr`` with every axis of stride 0 (a broadcast: :func:`numpy.broadcast_to`) cut to its first entry, a view:
    the same values, each held once. The runner's chunks repeat one database for every run that way
    (:mod:`mechanisms.execution.runner`); a check of every value then reads one database, not thousands."""
    if not any(stride == 0 and size > 1 for stride, size in zip(arr.strides, arr.shape)):
        return arr
    return arr[tuple(slice(0, 1) if stride == 0 else slice(None) for stride in arr.strides)]


def first_nonfinite_index(arr: np.ndarray) -> int | None:
    """Index along the first axis of the first NaN/inf entry of ``arr`` (at least 1-D), or None.

    A finite sum of the entries proves them all finite (a NaN or an infinity makes any sum NaN or infinite):
    one pass with no array of flags, what a wide output's check costs; an infinite sum (an overflow) is checked
    entry by entry. A broadcast axis is read at its first entry alone (:func:`without_repeats`): its other
    entries are the same values, so the answer is the same."""
    arr = without_repeats(arr) if isinstance(arr, np.ndarray) else arr
    with np.errstate(over="ignore", invalid="ignore"):
        if np.issubdtype(np.asarray(arr).dtype, np.number) and np.isfinite(np.sum(arr)):
            return None
    bad = ~np.isfinite(arr)
    return int(np.argwhere(bad)[0][0]) if bad.any() else None


def as_float_array(values, name: str, *, ndim=None, shape: str | None = None,
                   first_axis: str = "position") -> np.ndarray:
    """Return ``values`` as a float64 array with finite entries and an allowed number of axes.

    The shared core of every array check at the boundary (samples, sample batches,
    database batches, parameter vectors).

    Parameters
    ----------
    values : array_like
        The data.
    name : str
        Argument name used in error messages.
    ndim : int or tuple of int, optional
        The allowed numbers of axes (default: any).
    shape : str, optional
        How the expected shape reads in messages, e.g. ``"(m, n, k)"``.
    first_axis : str
        What the first axis indexes (``"row"``, ``"database"``, ...); the NaN/inf message
        names the first offending index along it.

    Returns
    -------
    ndarray
        ``values`` as float64 (no copy when it already is one).

    Raises
    ------
    InputError
        Naming ``name`` when ``values`` is not numeric (or ragged), holds complex numbers,
        has a number of axes outside ``ndim``, or holds NaN or inf.
    """
    expected = f" of shape {shape}" if shape else ""
    if values is None:
        raise InputError(f"argument '{name}' is None; pass a numeric array{expected}")
    check_real(values, f"argument '{name}'")
    check_not_text(values, f"argument '{name}'", f"a numeric array{expected}")
    check_unmasked(values, f"argument '{name}'")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"argument '{name}' must be a numeric array{expected}: {exc}") from None
    except OverflowError:  # a Python int beyond float64 (10**400)
        raise InputError(f"argument '{name}' holds an integer {BEYOND_FLOAT64}") from None
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if allowed is not None and arr.ndim not in allowed:
        wanted = shape or " or ".join(f"{n}-D" for n in allowed)
        raise InputError(f"argument '{name}' must have shape {wanted}, got shape {arr.shape}")
    if arr.ndim == 0:
        if not np.isfinite(arr):
            raise InputError(f"argument '{name}' contains NaN or inf")
        return arr
    index = first_nonfinite_index(arr)
    if index is not None:
        # NumPy turns None into NaN: where the data hold None, say so.
        objects = isinstance(values, (list, tuple)) or getattr(values, "dtype", None) == object
        has_none = objects and any(v is None for v in np.asarray(values, dtype=object).flat)
        raise InputError(f"argument '{name}' contains NaN or inf (first in {first_axis} {index})"
                         f"{'; None entries count as NaN (missing values)' if has_none else ''}")
    return arr


def check_not_text(values, what: str, wanted: str = "numeric") -> None:
    """Raise :class:`InputError` naming ``what`` when ``values`` is text, or an array of text, bytes or dates.

    NumPy converts text such as ``"1.5"`` to a number, and dates and durations (``datetime64``,
    ``timedelta64``) to counts of their unit, where ``NaT`` becomes -9.2e18: data of these kinds
    are refused, as :func:`estimators.array_files.load_npy_array` refuses such files.

    Parameters
    ----------
    values : object
    what : str
        How the message names the data, e.g. ``"argument 'x'"``.
    wanted : str
        What the message says the data must be, e.g. ``"a numeric array of shape (n, d)"``.
    """
    if isinstance(values, (str, bytes)):
        raise InputError(f"{what} must be {wanted}, got text")
    dtype = getattr(values, "dtype", None)
    if isinstance(values, (list, tuple)):
        try:
            dtype = np.asarray(values).dtype  # text among numbers makes the whole list text
        except (TypeError, ValueError):  # ragged: the float conversion will say why
            return
    elif dtype == object and any(isinstance(v, (str, bytes)) for v in values.flat):
        raise InputError(f"{what} must be {wanted}, got text among its entries")
    if isinstance(dtype, np.dtype) and dtype.kind in "SUVMm":
        raise InputError(f"{what} must be {wanted}, got {'text' if dtype.kind in 'SU' else 'dtype ' + str(dtype)}")


def check_unmasked(values, what: str) -> None:
    """Raise :class:`InputError` naming ``what`` when ``values`` is a masked array with masked entries.

    ``numpy.asarray`` drops a mask and keeps whatever the masked entries hold, so they would be used as
    data; miaudit has no notion of a missing value.
    """
    if isinstance(values, np.ma.MaskedArray) and np.ma.count_masked(values):
        raise InputError(f"{what} is a masked array with {np.ma.count_masked(values)} masked entries, which "
                         "would be used as data; drop the rows that hold them (or pass values.filled(...) "
                         "to choose the values)")


def as_samples(values, name: str, *, min_rows: int = 1) -> np.ndarray:
    """Return samples as a float64 array of shape ``(n, d)``.

    A 1-D array of length n becomes ``(n, 1)``. Raises :class:`InputError` for other
    shapes, fewer than ``min_rows`` rows, zero columns, non-numeric data, NaN or inf.
    """
    arr = as_float_array(values, name, ndim=(1, 2), shape="(n,) or (n, d)", first_axis="row")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.shape[0] < min_rows:
        raise InputError(f"argument '{name}' needs at least {counted(min_rows, 'sample')}, got {arr.shape[0]}")
    if arr.shape[1] == 0:
        raise InputError(f"argument '{name}' has zero columns (shape {arr.shape})")
    return arr


def as_sample_batch(values, name: str, *, min_rows: int = 1) -> np.ndarray:
    """Return a batch of p sample sets as a float64 array of shape ``(p, n, d)``.

    Raises :class:`InputError` naming ``name`` for another number of axes, no slice, zero
    columns, fewer than ``min_rows`` samples per slice, non-numeric data, NaN or inf.
    """
    arr = as_float_array(values, name, ndim=3, shape="(p, n, d)", first_axis="slice")
    if arr.shape[0] < 1 or arr.shape[2] < 1:
        raise InputError(f"argument '{name}' needs at least one slice and one column, got shape {arr.shape}")
    if arr.shape[1] < min_rows:
        raise InputError(f"argument '{name}' needs at least {counted(min_rows, 'sample')} per slice, got {arr.shape[1]}")
    return arr


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun`` in its number: ``"1 sample"``, ``"2 samples"`` (``noun`` takes an s for every other n)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
            raise InputError(f"argument 'seed' must be a non-negative integer, got {plain(seed)}")
        return np.random.default_rng(seed)
    raise InputError(f"argument 'seed' must be an integer, None or numpy.random.Generator, got {plain(seed)}")


def paired_samples(x, y, *, min_rows: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Validate paired samples ``x`` (n, dx) and ``y`` (n, dy) (1-D arrays become one column).

    Returns float64 arrays; raises :class:`InputError` naming ``x`` or ``y`` for bad shapes,
    NaN/inf, fewer than ``min_rows`` rows, or different numbers of rows.
    """
    x = as_samples(x, "x", min_rows=min_rows)
    y = as_samples(y, "y", min_rows=min_rows)
    check_same_length(x=x, y=y)
    return x, y


def paired_sample_batches(x, y, *, min_rows: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Validate batches of paired samples ``x`` (p, n, dx) and ``y`` (p, n, dy).

    Returns float64 arrays; raises :class:`InputError` naming ``x`` or ``y`` for bad shapes,
    NaN/inf, or when the two disagree in the number of slices p or samples n.
    """
    x = as_sample_batch(x, "x", min_rows=min_rows)
    y = as_sample_batch(y, "y", min_rows=min_rows)
    if x.shape[:2] != y.shape[:2]:
        raise InputError(
            f"arguments 'x' and 'y' must have the same (slices, samples), got {x.shape[:2]} and {y.shape[:2]}"
        )
    return x, y


class InputWarning(UserWarning):
    """Input that is accepted but deserves the user's attention; the CLI prints it on stderr."""


def plain_toml(value) -> str:
    """``value`` as a TOML file writes it: numpy scalars as plain numbers, strings quoted."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(plain_toml(v) for v in value) + "]"
    return repr(value)
