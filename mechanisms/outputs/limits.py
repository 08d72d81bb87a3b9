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
  :data:`SPLIT_INTEGERS` that float64 does not hold exactly (below it, one beyond :data:`EXACT_INTEGERS` is kept
  whole as its float64 and its remainder, :func:`integer_rest`: ``2**64 + 5`` alone would be read as ``2**64``,
  and a count above such an offset would look constant), and any other real number that no
  float64 equals (a longdouble ``1 + 2**-60``, ``Decimal('0.1')``, ``Fraction(1, 3)``: a secret in their last
  digits would be rounded away; :func:`first_inexact_number`, the one rule, which a batched output and a user's
  prior's draws go through too), dates and
  durations (``datetime64``, ``timedelta64``), structured (void) arrays;
- an object whose attributes cannot be read (its ``__getattr__`` raises).

Each is :class:`OutputNotEncodable`, naming the place in the output (the encoder's names:
``y{'a'}``, ``y.0``, ``y.coef_``, ``y[3]``), its type and what is accepted: the mechanism ran; its
output is what the audit cannot take.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from numbers import Complex, Integral, Rational, Real

import numpy as np

from estimators.validation import BEYOND_FLOAT64, InputError

from mechanisms.outputs.arrays import as_array, is_array_like, without_tensors

__all__ = ["ACCEPTED", "EXACT_INTEGERS", "MAX_DEPTH", "MAX_ELEMENTS", "OutputNotEncodable", "SPLIT_INTEGERS",
           "beyond_range_text", "check_output_limits", "first_inexact_number", "first_text_entry", "indexed_place",
           "inexact_number_text", "integer_rest", "key_text", "number_noun", "numeric_list", "numpy_reading",
           "parsed_text_text", "public_fitted", "refused_dtype_reason", "type_text"]

#: The most parts one output may hold in all (about 0.3 s to encode; module docstring).
MAX_ELEMENTS = 100_000

#: The deepest nesting of structures in one output (Python's recursion limit is 1,000 frames).
MAX_DEPTH = 64

#: Every integer of magnitude at most this is a float64 exactly (binary64 has 53 significant bits, IEEE 754-2008
#: Section 3.6); above it only some are, and a cast rounds the others to a neighbour.
EXACT_INTEGERS = 2**53

#: An integer of magnitude below this is kept exactly by the encoder of a function of one database's outputs: as the
#: float64 nearest it and, beyond :data:`EXACT_INTEGERS`, the remainder ``x - int(float(x))`` as a second float64
#: (:func:`integer_rest`; at most half of float64's spacing there, 2**52 below 2**106, so a float64 holds it).
SPLIT_INTEGERS = 2**106


def integer_rest(value) -> int | None:
    """The remainder an integer beyond :data:`EXACT_INTEGERS` leaves over its nearest float64, ``x - int(float(x))``
    (a float64 exactly below :data:`SPLIT_INTEGERS`), None for any other value: with the float64 it gives ``x``
    back, so that a 64-bit hash seed released beside a report (pure-ldp's local hashing) is encoded, not refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, np.integer)):
        return None
    number = int(value)
    if -EXACT_INTEGERS <= number <= EXACT_INTEGERS:
        return None
    return number - int(float(number))


#: What the encoder accepts, for messages.
ACCEPTED = ("real numbers that float64 holds exactly (a float; a longdouble, Decimal or Fraction whose value a "
            "float64 equals), ints below 2**106 in magnitude (beyond 2**53 kept as their float64 and its remainder), "
            "strings, bytes, None, arrays of real numbers or strings (NumPy arrays, tensors, buffers), mappings, "
            "sets or lists of keys, fitted estimators (public attributes ending in _), and "
            "tuples of these")

#: How an output may carry a number that float64 does not hold exactly instead (:func:`inexact_number_text`).
_AS_STRING = "str(x) to keep every digit, audited as a category"

_COMPLEX = "complex numbers are not accepted: release the real and imaginary parts (z.real, z.imag)"
_DATES = "dates and durations are not numbers: release them as numbers (e.g. seconds) or strings"

#: Array dtype kinds the encoder cannot take, with why: complex, dates, durations, structured records.
_REFUSED_KINDS = {"c": _COMPLEX, "M": _DATES, "m": _DATES,
                  "V": "structured records are not accepted: release a mapping of their fields"}

_RAW_BYTES = ("NumPy holds its values as raw bytes, no number it can read (a dtype of another library's, such as "
              "ml_dtypes' or JAX's bfloat16): cast it to a float dtype first, e.g. x.astype(numpy.float32), which "
              "holds every bfloat16 and float8 exactly")


def refused_dtype_reason(dtype: np.dtype, text: bool = True) -> str | None:
    """Why an array of ``dtype`` is refused (complex, dates and durations, structured records, raw bytes), None
    where its kind is read: a kind-``V`` dtype without fields is no structured record but raw bytes (another
    library's float type), said so. ``text``: the output may hold strings (a function of one database's), which
    the fix of a date may then be; a batched output's may not."""
    if dtype.kind == "V" and dtype.names is None:
        return _RAW_BYTES
    reason = _REFUSED_KINDS.get(dtype.kind)
    return reason if text or reason != _DATES else _DATES.removesuffix(" or strings")


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
    """A value's type in words, with its article (``a set``, ``an array``, ``an array.array``)."""
    name = "array" if isinstance(value, np.ndarray) else type(value).__name__
    if name == "array" and type(value).__module__ == "array":  # the buffer, told from a NumPy array
        name = "array.array"
    vowel = name[:1].lower() in "aeiou" and not name.lower().startswith("uint")  # a uint64 ("you-int")
    return f"{'an' if vowel else 'a'} {name}"


def first_text_entry(values) -> tuple | None:
    """(index, value) of the first string or bytes in ``values``, an array or what NumPy reads as one, None where
    there is none (or NumPy cannot read ``values``: the caller's conversion says why).

    A float64 cast parses strings (``"0.1000000000000000000001"`` is read as 0.1): a batched output holding
    text would be rounded silently, where a function of one database's string is a category, every
    character kept. Tensors are read as :func:`mechanisms.outputs.arrays.without_tensors` reads them."""
    array = numpy_reading(values)
    if array is None:
        return None
    if array.dtype.kind in "US":
        return (np.unravel_index(0, array.shape), array.flat[0]) if array.size else None
    if array.dtype.kind == "O":
        for index, value in np.ndenumerate(array):
            if isinstance(value, (str, bytes, np.str_, np.bytes_)):
                return index, value
    return None


def parsed_text_text(value, database: int, category: str) -> str:
    """What a message says of text in an output read as numbers (a batched output, a function of one database's
    without an encoder), after ``returned``: ``text ('0.1000000000000000000001') for database 1: ...``, ending
    with ``category``, how its every character would be kept (:func:`first_text_entry`)."""
    shown = value.item() if isinstance(value, np.generic) else value
    return (f"text ({shown!r}) for database {database}: the output is read as numbers, and a cast would parse the "
            f"text, its digits past float64's lost; release numbers{category}")


def number_noun(value) -> str:
    """A number that float64 does not hold exactly, named for a message: ``an integer``, else its type
    (``a longdouble``, ``a Fraction``: :func:`type_text`)."""
    return "an integer" if isinstance(value, (Integral, np.integer)) else type_text(value)


def beyond_range_text(values) -> str:
    """What rows of numbers (a batched output, a prior's draws) hold beyond float64's range, the reason their float64
    cast overflowed, after ``returned``: the first such number by its kind (:func:`number_noun`) and database, ``a
    Fraction beyond float64's range of about 1.8e308 for database 1``; ``a number beyond ...`` where none is found."""
    try:
        objects = np.asarray(without_tensors(values), dtype=object)  # each number as given, none cast
    except (TypeError, ValueError):  # ragged: the shape check names it once a value is found
        objects = np.empty(0, dtype=object)
    for index, value in np.ndenumerate(objects):
        if isinstance(value, _REALS) and not isinstance(value, (float, np.floating)):
            try:
                float(value)
            except OverflowError:
                return f"{number_noun(value)} {BEYOND_FLOAT64}" + (f" for database {index[0]}" if index else "")
            except (TypeError, ValueError):
                continue
    return f"a number {BEYOND_FLOAT64}"


def _value_text(value) -> str:
    """A number's digits on one line, its middle elided past :data:`_PLACE_CHARACTERS` (a Fraction of 10**30ths)."""
    text = " ".join(str(value).split())
    return text if len(text) <= _PLACE_CHARACTERS else f"{text[:60]}…{text[-30:]}"


def inexact_number_text(value, category: str = _AS_STRING, verb: str = "release") -> str:
    """Why a number that float64 does not hold exactly is refused, in words (:func:`first_inexact_number`):
    its digits, the float64 it would be read as, and what to release instead; ``category``: how else the
    caller's outputs may carry it; ``verb``: what the caller does with it (a prior draws it)."""
    if isinstance(value, (Integral, np.integer)):
        return (f"{int(value)} is beyond 2**53, where float64 holds only some integers: it would be read as "
                f"{float(value):.17g}, its last digits lost, and a change in them unseen by the audit; {verb} it "
                f"less an offset, or {category}")
    with np.errstate(over="ignore"):  # a longdouble beyond float64's range is read as inf, and said so
        read = float(value)  # as NumPy's cast and the encoder read it; 17 digits tell it from the value (0.1)
    return (f"{_value_text(value)} would be read as float64 {read:.17g}, its last digits lost, and a change in them "
            f"unseen by the audit; {verb} float(x) if rounding is intended, or {category}")


#: Real numbers, as the float64 rule reads them: a Decimal is no numbers.Real (it does not mix with floats), but
#: releases a real number all the same.
_REALS = (Real, Decimal, np.floating, np.integer)


def _inexact(value) -> bool:
    """Whether float64 does not hold the real number ``value`` exactly: an int beyond :data:`EXACT_INTEGERS` that
    the cast rounds, a longdouble, Decimal, Fraction or other real whose value no float64 equals (a NaN or an
    infinity is a float64: they follow the NaN rules). A float, a bool and NumPy's floats of at most 64 bits are
    float64s; an int within :data:`EXACT_INTEGERS` costs one comparison.

    Raises
    ------
    OverflowError
        For an int or a Fraction beyond float64's range (the caller's conversion says so).
    """
    if isinstance(value, (float, bool, np.bool_)):
        return False
    if isinstance(value, (Integral, np.integer)):
        return not -EXACT_INTEGERS <= value <= EXACT_INTEGERS and int(float(value)) != int(value)
    if isinstance(value, np.floating):  # a longdouble is compared in its own precision, against its cast
        with np.errstate(over="ignore"):
            return value.dtype.itemsize > 8 and value == value and np.float64(value) != value
    if isinstance(value, Decimal):
        # Decimal(float) is exact; a NaN is float64's NaN (a signalling one, which float() refuses, the encoder names)
        return not value.is_nan() and Decimal(float(value)) != value
    if isinstance(value, Rational):
        return Fraction(float(value)) != Fraction(value.numerator, value.denominator)
    if isinstance(value, Real):  # another library's real: its own comparison with its float
        read = float(value)
        return read == read and bool(read != value)
    return False


def _inexact_floats(array: np.ndarray) -> np.ndarray:
    """Flat indices of the entries of a float array that float64 does not hold exactly: none for float64 or
    narrower; for a longdouble array, those its cast to float64 and back changes (NaN aside), at once."""
    if array.dtype.itemsize <= 8:
        return np.empty(0, dtype=np.intp)
    with np.errstate(over="ignore"):
        back = array.astype(np.float64).astype(array.dtype)
    return np.flatnonzero((back != array) & (array == array))


def numpy_reading(values, tensors_read: bool = False) -> np.ndarray | None:
    """``values`` as NumPy reads it, for :func:`first_inexact_number` and :func:`first_text_entry` to read each value
    as it was given: an array itself; else (a list of rows, tensors in it read by
    :func:`mechanisms.outputs.arrays.without_tensors`) NumPy's array, read again as objects where NumPy's cast
    may have changed a value: to text (a list's numbers beside its text) or to float64 at a magnitude of 2**53 or
    more (where an int beyond may have been rounded). None where NumPy cannot read it (ragged, beyond float64).

    A caller that asks both questions of one output reads it once and passes the array to each; ``tensors_read``:
    ``values`` is :func:`~mechanisms.outputs.arrays.without_tensors`' already (its walk of a list is not repeated)."""
    if isinstance(values, np.ndarray):
        return values
    if not tensors_read:
        values = without_tensors(values)
    try:
        array = np.asarray(values)
        # Compared as float64 (a NumPy scalar): 2**53 as a float16 would overflow.
        if array.dtype.kind in "US" or (array.dtype.kind == "f"
                                        and np.any(np.abs(array) >= np.float64(EXACT_INTEGERS))):
            array = np.asarray(values, dtype=object)
    except (TypeError, ValueError, OverflowError):
        return None
    return array


def first_inexact_number(values) -> tuple | None:
    """(index, value) of the first number in ``values`` that float64 does not hold exactly (:func:`_inexact`), None
    where there is none: an int beyond 2**53 that the cast rounds, a longdouble, Decimal, Fraction or other real
    that no float64 equals.

    An integer or longdouble array is read at once (an integer array's entries beyond :data:`EXACT_INTEGERS`
    alone one by one); an object array element by element; an array of float64 or narrower floats, bools or
    strings holds none. What is no array (a list of rows) is read as NumPy reads it, and where NumPy cast it to
    float64 with a value of magnitude 2**53 or more (where an int beyond may have been rounded) element by element
    again. What NumPy cannot read as an array is left to the caller's conversion. Tensors are read as
    :func:`mechanisms.outputs.arrays.without_tensors` reads them (a bfloat16 as the float64 it equals)."""
    array = numpy_reading(values)
    if array is None:  # ragged, or beyond float64: the caller's conversion says why
        return None
    if array.dtype.kind not in "iufO":
        return None
    if array.dtype.kind == "f":
        candidates = ((np.unravel_index(i, array.shape), array.flat[i]) for i in _inexact_floats(array)[:1])
    elif array.dtype.kind in "iu":
        beyond = np.flatnonzero((array > EXACT_INTEGERS) | (array < -EXACT_INTEGERS))
        candidates = ((np.unravel_index(i, array.shape), array.flat[i]) for i in beyond)
    else:
        candidates = ((index, value) for index, value in np.ndenumerate(array) if isinstance(value, _REALS))
    for index, value in candidates:
        try:
            if _inexact(value):
                return index, value
        except (OverflowError, ValueError):  # beyond float64's range altogether: the caller's conversion says so
            return None
    return None


def _number_problem(value) -> str | None:
    """Why a scalar cannot be encoded as a float64, or None."""
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return _DATES
    if isinstance(value, (complex, np.complexfloating)):
        return _COMPLEX
    if isinstance(value, (Integral, np.integer)) and not isinstance(value, (bool, np.bool_)) \
            and -SPLIT_INTEGERS < int(value) < SPLIT_INTEGERS:
        return None  # kept exactly: its float64 and remainder (integer_rest)
    if isinstance(value, _REALS):
        try:
            inexact = _inexact(value)
        except OverflowError:
            digits = f"it has {len(str(abs(int(value))))} digits, " if isinstance(value, Integral) else "it is "
            return f"{digits}beyond float64's range of about 1.8e308"
        return inexact_number_text(value) if inexact else None
    if isinstance(value, Complex):
        return _COMPLEX  # a bool, a Fraction and a float are Complex too, and real: taken above
    return None


#: Leaves that need no check (a plain float, string, bool or None): skipped without a visit.
_PLAIN = frozenset({float, str, bytes, bool, type(None), np.float64, np.float32, np.int32, np.bool_})


def _plain(value) -> bool:
    """Whether a part is a leaf that needs no check: a :data:`_PLAIN` type or an int within
    :data:`EXACT_INTEGERS` (a larger one may be no float64)."""
    kind = type(value)
    return kind in _PLAIN or ((kind is int or kind is np.int64) and -EXACT_INTEGERS <= value <= EXACT_INTEGERS)


def numeric_list(values: list) -> bool:
    """Whether the encoder reads a list as an array of numbers (NumPy reads it as bools, ints or floats), rather than
    as a collection of keys, each named by its text (``[Fraction(1, 3), 'a']``, ragged rows)."""
    try:
        array = as_array(values)  # a list of tensors is numbers too
    except (TypeError, ValueError, OverflowError):  # ragged
        return False
    return array.dtype.kind in "biuf"


def _key_number(value) -> bool:
    """Whether ``value`` is a number a set may hold as a key, named by its digits (:func:`key_text`), never read as
    float64: an int within float64's range (a larger one keeps its refusal), or a real number that is no int (a
    longdouble, Decimal or Fraction the float64 rule would refuse as a value)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return int(value).bit_length() < 1024
    return isinstance(value, _REALS)


def indexed_place(holder: str, index) -> str:
    """The name of an array's entry at ``index`` (a tuple, or one position): ``y[3]``, ``y[0,2]``; the array itself,
    ``y``, for the empty index of a 0-d array, whose one entry is the array (no ``y[]``)."""
    if not isinstance(index, tuple):
        return f"{holder}[{index}]"
    return f"{holder}[{','.join(map(str, index))}]" if index else holder


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
            return indexed_place(holder, key)
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
    if isinstance(value, list):  # a list of keys (no numeric array) holds its numbers as keys, as a set does
        keys = not numeric_list(value)
        return len(value), lambda: ((v, "index", i) for i, v in enumerate(value)
                                    if not _plain(v) and not (keys and _key_number(v)))
    if isinstance(value, (set, frozenset)):  # its numbers are keys, named by their digits (key_text): no float64 needed
        return len(value), lambda: ((v, "key", v) for v in value if not _plain(v) and not _key_number(v))
    if is_array_like(value):  # a tensor detached, dense, on the CPU (mechanisms.outputs.arrays)
        array = as_array(value)
        if array.dtype.kind in _REFUSED_KINDS:
            raise OutputNotEncodable(str(place), f"an array of dtype {array.dtype}", refused_dtype_reason(array.dtype))
        if array.dtype.kind == "f":  # an integer array's entries are below 2**64, kept whole (integer_rest)
            inexact = first_inexact_number(array)
            if inexact is not None:
                index, number = inexact
                raise OutputNotEncodable(str(_Place(place, "index", index)), type_text(number),
                                         inexact_number_text(number))
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
        try:
            problem = _number_problem(value)  # another library's real may raise when read as a float
            if problem is not None:
                raise OutputNotEncodable(str(where), type_text(value), problem)
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
