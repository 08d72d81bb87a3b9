"""What one output may hold before the encoder takes it, and the error for an output it cannot take.

The encoder (:mod:`mechanisms.outputs.encoding`) visits every part of an output in Python, so an
output's cost is the number of parts it holds: about 3 µs each. :func:`check_output_limits` walks
the output's structure once without recursion and before any part is encoded, and refuses

- more than :data:`MAX_ELEMENTS` parts in all, counted from each structure's length before it is
  read (an array's entries, a mapping's keys, a set's or list's elements, a tuple's positions,
  an estimator's fitted attributes): a 2,000,000-key set is refused in microseconds, not encoded
  in a minute;
- nesting deeper than :data:`MAX_DEPTH`, and a structure that contains itself (a recursive dict,
  a model whose attribute is the model), which would otherwise end in a ``RecursionError``;
- numbers the encoder cannot represent as a float64 without losing them: complex numbers (and
  complex arrays, whose imaginary part a cast drops), ints beyond float64's range, ints beyond
  :data:`EXACT_INTEGERS` that float64 does not hold exactly (``2**64 + 5`` would be read as ``2**64``:
  a mechanism releasing a count above such an offset would look constant), dates and
  durations (``datetime64``, ``timedelta64``), structured (void) arrays;
- an object whose attributes cannot be read (its ``__getattr__`` raises).

Each is :class:`OutputNotEncodable`, naming the place in the output (the encoder's names:
``y{'a'}``, ``y.0``, ``y.coef_``, ``y[3]``), its type and what is accepted: the mechanism ran; its
output is what the audit cannot take.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Complex, Integral, Real

import numpy as np

from estimators.validation import InputError

__all__ = ["ACCEPTED", "EXACT_INTEGERS", "MAX_DEPTH", "MAX_ELEMENTS", "OutputNotEncodable", "check_output_limits",
           "first_inexact_integer", "inexact_integer_text", "key_text", "public_fitted", "type_text"]

#: The most parts one output may hold in all (about 0.3 s to encode; module docstring).
MAX_ELEMENTS = 100_000

#: The deepest nesting of structures in one output (Python's recursion limit is 1,000 frames).
MAX_DEPTH = 64

#: Every integer of magnitude at most this is a float64 exactly (binary64 has 53 significant bits, IEEE 754-2008
#: Section 3.6); above it only some are, and a cast rounds the others to a neighbour.
EXACT_INTEGERS = 2**53

#: What the encoder accepts, for messages.
ACCEPTED = ("real numbers (an int that float64 holds exactly), strings, bytes, None, arrays of real numbers or "
            "strings, mappings, sets or lists of keys, fitted estimators (public attributes ending in _), and "
            "tuples of these")

_COMPLEX = "complex numbers are not accepted: release the real and imaginary parts (z.real, z.imag)"
_DATES = "dates and durations are not numbers: release them as numbers (e.g. seconds) or strings"

#: Array dtype kinds the encoder cannot take, with why: complex, dates, durations, structured records.
_REFUSED_KINDS = {"c": _COMPLEX, "M": _DATES, "m": _DATES,
                  "V": "structured records are not accepted: release a mapping of their fields"}

#: A place longer than this is shortened in messages (its start and its end are kept).
_PLACE_CHARACTERS = 100


class OutputNotEncodable(InputError):
    """An output (or a part of it) the encoder cannot take.

    Attributes
    ----------
    place : str
        The part, by the encoder's name for it (``y``, ``y{'a'}``, ``y.coef_``).
    kind : str
        Its type in words (``a complex``, ``a set of 2000000 elements``).
    reason : str
        Why it cannot be encoded (may be empty).
    detail : str
        The message after "the output is not encodable: ".
    """

    def __init__(self, place: str, kind: str, reason: str = "", accepted: str = ACCEPTED):
        self.place, self.kind, self.reason, self.accepted = place, kind, reason, accepted
        shown = place if len(place) <= _PLACE_CHARACTERS else f"{place[:60]}…{place[-30:]}"
        self.detail = f"{shown} is {kind}" + (f": {reason}" if reason else "") + f"; accepted: {accepted}"
        super().__init__(f"the output is not encodable: {self.detail}")

    def __reduce__(self):
        # Rebuilt from its parts where it crosses processes (a custom __init__ defeats the default pickling).
        return type(self), (self.place, self.kind, self.reason, self.accepted)


def public_fitted(obj) -> dict | None:
    """An estimator's public fitted attributes (names ending in ``_``, not starting with ``_``), or None
    for an object that is not an estimator (no ``fit`` method or no such attribute)."""
    if not callable(getattr(obj, "fit", None)):
        return None
    fitted = {name: value for name, value in vars(obj).items()
              if name.endswith("_") and not name.startswith("_")} if hasattr(obj, "__dict__") else {}
    return fitted or None


def key_text(key) -> str:
    """A mapping's or set's key as the encoder names it (``'alice'``, ``3``: NumPy scalars as Python's)."""
    return repr(key.item() if isinstance(key, np.generic) else key)


def type_text(value) -> str:
    """A value's type in words, with its article (``a set``, ``an ndarray``)."""
    name = "array" if isinstance(value, np.ndarray) else type(value).__name__
    vowel = name[:1].lower() in "aeiou" and not name.lower().startswith("uint")  # a uint64 ("you-int")
    return f"{'an' if vowel else 'a'} {name}"


def inexact_integer_text(value, category: str = "as a string to audit it as a category", verb: str = "release") -> str:
    """Why an integer that float64 does not hold exactly is refused, in words (:data:`EXACT_INTEGERS`); ``category``:
    how else the caller's outputs may carry it; ``verb``: what the caller does with it (a prior draws it)."""
    return (f"{int(value)} is beyond 2**53, where float64 holds only some integers: it would be read as "
            f"{float(value):.17g}, its last digits lost, and a change in them unseen by the audit; {verb} it less "
            f"an offset, or {category}")


def _inexact(value) -> bool:
    """Whether the integer ``value`` is one float64 does not hold exactly (a float64 holds it iff the cast is
    lossless; beyond :data:`EXACT_INTEGERS` only, so that the common case costs one comparison)."""
    return not -EXACT_INTEGERS <= value <= EXACT_INTEGERS and int(float(value)) != int(value)


def first_inexact_integer(values) -> tuple | None:
    """(index, value) of the first integer in ``values`` that float64 does not hold exactly, None where there is none.

    An integer array is read at once (its entries beyond :data:`EXACT_INTEGERS` alone one by one); an object array
    element by element; any other array holds no int. What is no array (a list of rows) is read as NumPy reads it,
    and where NumPy cast it to float64 with a value of magnitude 2**53 or more (where an int beyond may have been
    rounded) element by element again. What NumPy cannot read as an array is left to the caller's conversion."""
    array = values
    if not isinstance(values, np.ndarray):
        try:
            array = np.asarray(values)
            if array.dtype.kind == "f" and np.any(np.abs(array) >= EXACT_INTEGERS):
                array = np.asarray(values, dtype=object)
        except (TypeError, ValueError, OverflowError):  # ragged, or beyond float64: the caller's conversion says why
            return None
    if array.dtype.kind not in "iuO":
        return None
    if array.dtype.kind in "iu":
        beyond = np.flatnonzero((array > EXACT_INTEGERS) | (array < -EXACT_INTEGERS))
        candidates = ((np.unravel_index(i, array.shape), array.flat[i]) for i in beyond)
    else:
        candidates = ((index, value) for index, value in np.ndenumerate(array)
                      if isinstance(value, (Integral, np.integer)) and not isinstance(value, (bool, np.bool_)))
    for index, value in candidates:
        try:
            if _inexact(value):
                return index, value
        except OverflowError:  # beyond float64's range altogether: the caller's conversion says so
            return None
    return None


def _number_problem(value) -> str | None:
    """Why a scalar cannot be encoded as a float64, or None."""
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return _DATES
    if isinstance(value, (complex, np.complexfloating)):
        return _COMPLEX
    if isinstance(value, Integral) and not isinstance(value, (bool, np.bool_)):
        try:
            float(value)
        except OverflowError:
            return f"it has {len(str(abs(int(value))))} digits, beyond float64's range of about 1.8e308"
        if _inexact(value):
            return inexact_integer_text(value)
    elif isinstance(value, Complex) and not isinstance(value, (Real, np.floating, np.bool_)):
        return _COMPLEX  # a bool, a Fraction and a float are Complex too, and real
    return None


#: Leaves that need no check (a plain float, string, bool or None): skipped without a visit.
_PLAIN = frozenset({float, str, bytes, bool, type(None), np.float64, np.float32, np.int32, np.bool_})


def _plain(value) -> bool:
    """Whether a part is a leaf that needs no check: a :data:`_PLAIN` type or an int within
    :data:`EXACT_INTEGERS` (a larger one may be no float64)."""
    kind = type(value)
    return kind in _PLAIN or ((kind is int or kind is np.int64) and -EXACT_INTEGERS <= value <= EXACT_INTEGERS)


def _int_key(value) -> bool:
    """Whether ``value`` is an int a set may hold as a key: one within float64's range (a set's elements are named
    by their digits, never read as float64; a larger int keeps its refusal)."""
    return (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            and int(value).bit_length() < 1024)


class _Place:
    """A part's place, spelt out only when a message needs it (most parts never need it)."""

    __slots__ = ("holder", "style", "key")

    def __init__(self, holder, style: str, key):
        self.holder, self.style, self.key = holder, style, key

    def __str__(self) -> str:
        holder, key = str(self.holder), self.key
        if self.style == "key":
            return f"{holder}{{{key_text(key)}}}"
        if self.style == "index":
            return f"{holder}[{','.join(map(str, key)) if isinstance(key, tuple) else key}]"
        return f"{holder}.{key}"


def _parts(value, place) -> tuple[int, object] | None:
    """(how many parts ``value`` holds, a function listing the parts (part, style, key) to visit) for a
    structure, None for a leaf; a plain leaf (:data:`_PLAIN`) is never listed. The parts are listed
    only once their number is known to be within the bound."""
    if isinstance(value, (str, bytes)) or value is None:
        return None
    if isinstance(value, Mapping):
        return len(value), lambda: ((v, "key", k) for k, v in value.items() if not _plain(v))
    if isinstance(value, tuple):
        return len(value), lambda: ((v, "attribute", i) for i, v in enumerate(value) if not _plain(v))
    if isinstance(value, list):
        return len(value), lambda: ((v, "index", i) for i, v in enumerate(value) if not _plain(v))
    if isinstance(value, (set, frozenset)):  # its ints are keys, named by their digits (key_text): no float64 needed
        return len(value), lambda: ((v, "key", v) for v in value if not _plain(v) and not _int_key(v))
    if isinstance(value, np.ndarray) or (hasattr(value, "__array__") and not isinstance(value, np.generic)):
        array = np.asarray(value)
        if array.dtype.kind in _REFUSED_KINDS:
            raise OutputNotEncodable(str(place), f"an array of dtype {array.dtype}", _REFUSED_KINDS[array.dtype.kind])
        if array.dtype.kind in "iu":
            inexact = first_inexact_integer(array)
            if inexact is not None:
                index, number = inexact
                raise OutputNotEncodable(str(_Place(place, "index", index)), type_text(number),
                                         inexact_integer_text(number))
        if array.dtype.kind != "O":
            return array.size, tuple
        return array.size, lambda: ((v, "index", i) for i, v in np.ndenumerate(array) if not _plain(v))
    fitted = public_fitted(value)
    if fitted is not None:
        return len(fitted), lambda: ((fitted[name], "attribute", name) for name in sorted(fitted))
    return None


def check_output_limits(output, place: str = "y") -> None:
    """Refuse an output the encoder cannot take, before any of it is encoded (module docstring).

    The walk holds no recursion and reads at most :data:`MAX_ELEMENTS` parts: each structure's
    length is added to the count before its parts are read.

    Raises
    ------
    OutputNotEncodable
        Naming the place, the type and what is accepted.
    """
    count = 0
    stack = [(output, place, ())]  # (part, its place, the ids of the structures that hold it)
    while stack:
        value, where, holders = stack.pop()
        problem = _number_problem(value)
        if problem is not None:
            raise OutputNotEncodable(str(where), type_text(value), problem)
        try:
            parts = _parts(value, where)
        except OutputNotEncodable:
            raise
        except Exception as exc:  # noqa: BLE001 - a user's __getattr__ or __array__ may raise anything
            raise OutputNotEncodable(str(where), type_text(value), f"reading it raised {type(exc).__name__}: "
                                     f"{exc}") from None
        if parts is None:
            continue
        size, items = parts
        if id(value) in holders:
            raise OutputNotEncodable(str(where), type_text(value), "it contains itself: an output must be a finite "
                                     "tree of values, not refer to itself")
        if len(holders) >= MAX_DEPTH:
            raise OutputNotEncodable(str(where), type_text(value), f"nested {len(holders)} levels deep, more than the "
                                     f"{MAX_DEPTH} an output may hold")
        count += size
        if count > MAX_ELEMENTS:
            raise OutputNotEncodable(str(where), f"{type_text(value)} of {size:,} parts",
                                     f"one output may hold at most {MAX_ELEMENTS:,} numbers, keys and elements in "
                                     "all, each about 3 µs to encode; release a summary instead: counts, a "
                                     "histogram or the top keys")
        inner = (*holders, id(value))
        # Pushed last part first, so that parts are visited in order and the bound names the one that passes it.
        stack.extend(reversed([(part, _Place(where, style, key), inner) for part, style, key in items()]))
