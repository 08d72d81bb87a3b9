"""Outputs of any structure as fixed-width numeric rows: the one encoder of structured releases.

A per-database mechanism ``f(db, rng)`` (``--per-database``) may return, for each database:

- a number, or an array of any shape (shapes may differ between databases);
- a mapping of keys to numbers or arrays (e.g. OpenDP's ``make_count_by`` >> threshold release);
- a set, list or other collection of released keys (strings, numbers);
- a fitted scikit-learn-style estimator: its public fitted attributes, those ending in ``_``
  (``coef_``, ``classes_``, ``intercept_``, …);
- a tuple of these (positions are part of the names), and ``None``.

:func:`output_features` names every number the output holds, with its place
(``y.coef_[1,0]``, ``y{'alice'}``, ``y.shape[0]``); strings and non-finite numbers are categorical
(``y='spam'``, ``y=nan``). These names and values are the output's *support facts*: its shapes,
key sets and class sets are the set of names present. :class:`OutputEncoder` turns them into one
row of fixed width 2W: each name is hashed (CRC-32, the same in every process) to one of W
buckets; the first W columns hold the sum of the values in each bucket, the last W the number of
names in it. An output that holds a name its neighbour never produces (a new key, a new class, a
larger shape) changes a count in the second block whatever else collides there, so a statistic on
the counts alone (:class:`audit.support_statistic.SupportLogRatio`) sees every change of support
that is not exactly offset by another in the same bucket.

The encoding is a fixed function of the output (it depends on no draw, database or fit), so every
event on encoded rows is an event on the output: a test on them keeps its level (post-processing,
Dwork and Roth 2014, Proposition 2.1). Hashing loses information (colliding values add up) but never
validity.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from numbers import Number

import numpy as np

from estimators.validation import InputError, check_int

__all__ = ["DEFAULT_WIDTH", "MAX_ELEMENTS", "OutputEncoder", "output_features", "support_facts"]

#: Buckets per block of an encoded row (the row has 2 × this many columns).
DEFAULT_WIDTH = 64

#: The most numbers one output may hold (a larger output is an error naming the mechanism, not truncated).
MAX_ELEMENTS = 1_000_000


def _public_fitted(obj) -> dict | None:
    """An estimator's public fitted attributes (names ending in ``_``, not starting with ``_``), or None
    for an object that is not an estimator (no ``fit`` method or no such attribute)."""
    if not callable(getattr(obj, "fit", None)):
        return None
    fitted = {name: value for name, value in vars(obj).items()
              if name.endswith("_") and not name.startswith("_")} if hasattr(obj, "__dict__") else {}
    return fitted or None


def _key_text(key) -> str:
    return repr(key.item() if isinstance(key, np.generic) else key)


def output_features(output, path: str = "y", *, _out: dict | None = None) -> dict:
    """The named numbers an output holds (see the module docstring), as ``{name: value}``.

    Raises
    ------
    InputError
        For an object of no supported kind, or more than :data:`MAX_ELEMENTS` numbers.
    """
    out = {} if _out is None else _out
    if len(out) > MAX_ELEMENTS:
        raise InputError(f"the output holds more than {MAX_ELEMENTS} numbers")
    if output is None:
        out[f"{path}=None"] = 0.0
    elif isinstance(output, (str, bytes)):
        out[f"{path}={output!r}"] = 0.0
    elif isinstance(output, (bool, np.bool_, Number, np.number)) and np.ndim(output) == 0:
        _number(float(output), path, out)
    elif isinstance(output, Mapping):
        out[f"{path}.len"] = float(len(output))
        for key, value in output.items():
            output_features(value, f"{path}{{{_key_text(key)}}}", _out=out)
    elif isinstance(output, tuple):
        for position, value in enumerate(output):
            output_features(value, f"{path}.{position}", _out=out)
    elif isinstance(output, (set, frozenset)) or (isinstance(output, list) and not _numeric_list(output)):
        out[f"{path}.len"] = float(len(output))
        for key in output:
            out[f"{path}{{{_key_text(key)}}}"] = out.get(f"{path}{{{_key_text(key)}}}", 0.0) + 1.0
    elif isinstance(output, (list, np.ndarray)) or hasattr(output, "__array__"):
        _array(output, path, out)
    else:
        fitted = _public_fitted(output)
        if fitted is None:
            raise InputError(f"the output is a {type(output).__name__}, which is none of: a number, an array, a "
                             "mapping, a set or list of keys, a fitted estimator (public attributes ending in _), "
                             "a tuple of these")
        for name in sorted(fitted):
            output_features(fitted[name], f"{path}.{name}", _out=out)
    return out


def _numeric_list(values: list) -> bool:
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):  # ragged
        return False
    return array.dtype.kind in "biuf"


def _number(value: float, name: str, out: dict) -> None:
    if math.isfinite(value):
        out[name] = value
    else:  # categorical: a released NaN or infinity is a fact about the output's support
        out[f"{name}={value!r}"] = 0.0


def _array(values, path: str, out: dict) -> None:
    array = np.asarray(values)
    if array.size > MAX_ELEMENTS:
        raise InputError(f"the output {path} holds {array.size} numbers, more than {MAX_ELEMENTS}")
    out[f"{path}.ndim"] = float(array.ndim)
    for axis, size in enumerate(array.shape):
        out[f"{path}.shape[{axis}]"] = float(size)
    if array.dtype.kind in "biuf":
        flat = array.astype(np.float64).ravel()
        for index, value in zip(np.ndindex(*array.shape), flat):
            _number(float(value), f"{path}[{','.join(map(str, index))}]", out)
    else:  # strings or objects: each element by its own kind
        for index in np.ndindex(*array.shape):
            output_features(array[index], f"{path}[{','.join(map(str, index))}]", _out=out)


def support_facts(output) -> dict:
    """The output's support facts in words: the shape of each array, the keys of each mapping or set,
    the classes of an estimator (``classes_``), by place; for reports and tests."""
    facts = {}
    for name, value in output_features(output).items():
        for suffix in (".ndim", ".len"):
            if name.endswith(suffix):
                facts[name] = value
        if ".shape[" in name:
            facts[name] = value
    return facts


class OutputEncoder:
    """Encode outputs of any structure as rows of ``2 * width`` numbers (module docstring).

    Parameters
    ----------
    width : int
        Buckets per block (default :data:`DEFAULT_WIDTH`).

    Examples
    --------
    >>> encoder = OutputEncoder(width=4)
    >>> row = encoder({"alice": 3.0})
    >>> row.shape, float(row[4:].sum())  # two names: y.len and y{'alice'}
    ((8,), 2.0)
    """

    def __init__(self, width: int = DEFAULT_WIDTH):
        self.width = check_int(width, "width", 1)

    @property
    def support_columns(self) -> slice:
        """The columns that count the names in each bucket (the support block)."""
        return slice(self.width, 2 * self.width)

    def bucket(self, name: str) -> int:
        """The bucket of a feature name: CRC-32 of its UTF-8 bytes modulo the width (the same in every process)."""
        return zlib.crc32(name.encode("utf-8")) % self.width

    def __call__(self, output) -> np.ndarray:
        row = np.zeros(2 * self.width)
        for name, value in output_features(output).items():
            b = self.bucket(name)
            row[b] += value
            row[self.width + b] += 1.0
        return row

    def __repr__(self) -> str:
        return f"OutputEncoder(width={self.width})"
