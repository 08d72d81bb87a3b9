"""Outputs of any structure as fixed-width numeric rows: the one encoder of structured releases.

A per-database mechanism ``f(db, rng)`` (``--per-database``) may return, for each database:

- a number, or an array of any shape (shapes may differ between databases);
- a mapping of keys to numbers or arrays (e.g. OpenDP's ``make_count_by`` >> threshold release);
- a set, list or other collection of released keys (strings, numbers);
- a fitted scikit-learn-style estimator: its public fitted attributes, those ending in ``_``
  (``coef_``, ``classes_``, ``intercept_``, …), recursively for ensembles and pipelines, trees
  through their node arrays (:mod:`mechanisms.outputs.estimators`);
- a tuple of these (positions are part of the names), and ``None``.

:func:`output_features` names every number the output holds, with its place
(``y.coef_[1,0]``, ``y{'alice'}``, ``y.shape[0]``); strings and non-finite numbers are categorical
(``y='spam'``, ``y=nan``); relations between neighbouring numbers of a small array or mapping are named
too (``(equal neighbours of y)``, ``(y[2] - y[1])``: :mod:`mechanisms.outputs.relations`). These names and values are the output's *support facts*: its shapes,
key sets and class sets are the set of names present. :class:`OutputEncoder` turns them into one
row of fixed width 2W: each name is hashed (CRC-32, the same in every process) to one of W
buckets; the first W columns hold the sum of the values in each bucket, the last W the number of
names in it. An output whose finite numbers, added in one bucket, pass float64's largest number (about
1.8e308) is refused, its numbers named (:class:`~mechanisms.outputs.limits.OutputNotEncodable`), rather than
encoded as an infinite sum. An output that holds a name its neighbour never produces (a new key, a new class, a
larger shape) changes a count in the second block whatever else collides there, so a statistic on
the counts alone (:class:`audit.statistics.support.SupportLogRatio`) sees every change of support
that is not exactly offset by another in the same bucket.

The encoding is a fixed function of the output (it depends on no draw, database or fit), so every
event on encoded rows is an event on the output: a test on them keeps its level (post-processing,
Dwork and Roth 2014, Proposition 2.1). Hashing loses information (colliding values add up) but never
validity.

To say what differs in words, the encoder keeps the first :data:`NAMES_PER_BUCKET` names it encodes
into each bucket (in the process that encodes: the audit's own with ``--workers 1``, the default).
:meth:`OutputEncoder.describe_differences` reads two inputs' encoded rows and names the support
facts seen under one input and never under the other (``key 'alice' released in 12 of 2000 runs on a,
never in the 2000 on b``, a and b the pair's databases as the audit names them; ``y.classes_ contains 2``), for the
event test's result
(:attr:`audit.result.EventTest.support_differences`): counts to reproduce a bug by, not certified.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from numbers import Number

import numpy as np

from estimators.validation import check_int

from mechanisms.outputs.arrays import as_array, is_array_like
from mechanisms.outputs.limits import (EXACT_INTEGERS, MAX_ELEMENTS, OutputNotEncodable, check_output_limits,
                                      indexed_place, integer_rest, numeric_list, numpy_reading, type_text)
from mechanisms.outputs.limits import key_text as _key_text

from mechanisms.outputs.estimators import estimator_parts, holds_estimators
from mechanisms.outputs.relations import MAX_RELATION_ELEMENTS, in_estimator, is_relation, relation_features

__all__ = ["DEFAULT_WIDTH", "MAX_ELEMENTS", "NAMES_PER_BUCKET", "NONE_NOTE_WORDS", "OutputEncoder", "encoder_of",
           "none_note", "output_features", "support_facts"]

#: Buckets per block of an encoded row (the row has 2 × this many columns).
DEFAULT_WIDTH = 64

#: Names the encoder keeps per bucket for :meth:`OutputEncoder.describe_differences` (the first ones encoded).
NAMES_PER_BUCKET = 4

#: Support facts :meth:`OutputEncoder.describe_differences` states at most.
MAX_DIFFERENCES = 3

#: Names whose bucket an encoder remembers (a bound on its memory where every output names new keys).
MAX_REMEMBERED_NAMES = 100_000

#: A single name's values are support facts where they take at most this many values (shapes, lengths).
MAX_FACT_VALUES = 4

def output_features(output, path: str = "y", *, _out: dict | None = None) -> dict:
    """The named numbers an output holds (see the module docstring), as ``{name: value}``.

    Raises
    ------
    OutputNotEncodable
        Naming the part of the output and its type: an object of no supported kind, a number that is
        no float64, more than :data:`MAX_ELEMENTS` parts, a structure that contains itself
        (:func:`~mechanisms.outputs.limits.check_output_limits`, checked before any part is encoded),
        or any part whose encoding raised.
    """
    if _out is None:
        check_output_limits(output, path)
    try:
        return _features(output, path, {} if _out is None else _out, top=_out is None)
    except OutputNotEncodable:
        raise
    except Exception as exc:  # noqa: BLE001 - a user's object may raise anything when read; the innermost part is named
        raise OutputNotEncodable(path, type_text(output), f"encoding it raised {type(exc).__name__}: "
                                 f"{exc}") from None


def _features(output, path: str, out: dict, top: bool = False) -> dict:
    if output is None:
        out[f"{path}=None"] = 0.0
    elif isinstance(output, (str, bytes)):
        out[f"{path}={output!r}"] = 0.0
    elif isinstance(output, (bool, np.bool_, Number, np.number)) and np.ndim(output) == 0:
        _number(float(output), path, out)
        rest = integer_rest(output)
        if rest is not None:  # an int beyond 2**53: its float64 and what that leaves, together exact
            out[f"{path}.rest"] = float(rest)
    elif isinstance(output, Mapping):
        out[f"{path}.len"] = float(len(output))
        for key, value in output.items():
            output_features(value, f"{path}{{{_key_text(key)}}}", _out=out)
        if not in_estimator(path):
            relation_features(_numbers_by_key(output, path), out, path)
    elif isinstance(output, tuple):
        for position, value in enumerate(output):
            output_features(value, f"{path}.{position}", _out=out)
    elif isinstance(output, list) and holds_estimators(output):  # an ensemble's members, by position
        for position, value in enumerate(output):
            output_features(value, f"{path}[{position}]", _out=out)
    elif isinstance(output, (set, frozenset)) or (isinstance(output, list) and not numeric_list(output)):
        out[f"{path}.len"] = float(len(output))
        for key in output:
            out[f"{path}{{{_key_text(key)}}}"] = out.get(f"{path}{{{_key_text(key)}}}", 0.0) + 1.0
    elif isinstance(output, list) or is_array_like(output):
        _array(output, path, out)
    else:
        parts = estimator_parts(output)
        if parts is None or (top and parts[0][1] is None and parts[0][0].startswith("=")):
            raise OutputNotEncodable(path, type_text(output), "none of the accepted kinds")
        for suffix, value in parts:
            if suffix.startswith("="):  # an unfitted template: its class is the fact
                out[f"{path}{suffix}"] = 0.0
            else:
                output_features(value, f"{path}{suffix}", _out=out)
    return out


def _numbers_by_key(mapping: Mapping, path: str) -> list:
    """The mapping's numeric scalar values as (feature name, value), in the order of their keys (sorted where the
    keys compare, else by their text): the neighbours of :func:`mechanisms.outputs.relations.relation_features`."""
    numbers = [(key, float(value)) for key, value in mapping.items()
               if isinstance(value, (bool, np.bool_, Number, np.number)) and np.ndim(value) == 0]
    try:
        numbers.sort(key=lambda item: item[0])
    except TypeError:  # keys of mixed kinds
        numbers.sort(key=lambda item: _key_text(item[0]))
    return [(f"{path}{{{_key_text(key)}}}", value) for key, value in numbers]


#: NaN numbers :func:`_number` has met in this process: :meth:`OutputEncoder.__call__` reads whether an output held
#: one by the change (a list, so that the count is one object; encoding runs in one thread of a process).
_NAN_NUMBERS = [0]


def _number(value: float, name: str, out: dict) -> None:
    if math.isfinite(value):
        out[name] = value
    else:  # categorical: a released NaN or infinity is a fact about the output's support
        out[f"{name}={value!r}"] = 0.0
        _NAN_NUMBERS[0] += value != value


def _array(values, path: str, out: dict) -> None:
    array = as_array(values)  # a tensor as its NumPy equal (mechanisms.outputs.arrays)
    out[f"{path}.ndim"] = float(array.ndim)
    for axis, size in enumerate(array.shape):
        out[f"{path}.shape[{axis}]"] = float(size)
    if array.dtype.kind in "biuf":
        flat = array.astype(np.float64).ravel()
        names = [indexed_place(path, index) for index in np.ndindex(*array.shape)]
        for name, value in zip(names, flat):
            _number(float(value), name, out)
        _integer_rests(values, array, names, out)
        if array.ndim and array.size <= MAX_RELATION_ELEMENTS and not in_estimator(path):  # along the last axis
            row_length = array.shape[-1]
            for start in range(0, array.size, max(row_length, 1)):
                row = path if array.ndim == 1 else f"{path}[{','.join(map(str, np.unravel_index(start, array.shape)[:-1]))},:]"
                relation_features(list(zip(names[start:start + row_length], flat[start:start + row_length])), out, row)
    else:  # strings or objects: each element by its own kind
        for index in np.ndindex(*array.shape):
            output_features(array[index], indexed_place(path, index), _out=out)


def _integer_rests(values, array: np.ndarray, names: list, out: dict) -> None:
    """Each integer entry beyond 2**53 of ``values`` (read as ``array``) adds its remainder over its float64,
    ``NAME.rest`` (:func:`~mechanisms.outputs.limits.integer_rest`): an integer array's entries, and a list's ints
    that NumPy read into a float64 array beside floats (``[0.5, 2**60 + 1]``), read again as given."""
    if array.dtype.kind not in "iuf":
        return
    beyond = np.flatnonzero((array > EXACT_INTEGERS) | (array < -EXACT_INTEGERS))
    if not beyond.size:
        return
    given = array if array.dtype.kind in "iu" or isinstance(values, np.ndarray) else numpy_reading(values)
    for index in beyond:
        rest = integer_rest(given.flat[index])
        if rest is not None:
            out[f"{names[index]}.rest"] = float(rest)


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


def _place_text(name: str) -> str:
    """A feature name in words: ``y{'alice'}`` is key 'alice', ``y.0{'x'}`` key 'x' of y.0, ``y.len``
    len(y), else the name (a relation's name as it is)."""
    if is_relation(name):
        return name
    if name.endswith("}") and "{" in name:
        path, key = name[:-1].split("{", 1)
        return f"key {key}" + ("" if path == "y" else f" of {path}")
    if name.endswith(".len"):
        return f"len({name[:-4]})"
    return name


def _classes_element(name: str) -> str | None:
    """``y.classes_`` for an element name ``y.classes_[2]`` of an estimator's class set, else None."""
    attribute = name.rsplit("[", 1)[0]
    return attribute if name.endswith("]") and attribute.endswith("classes_") else None


def _rank(single) -> int:
    """0 for a key or a class (what a reader looks for first), 2 for a relation between numbers, 1 for any other part."""
    if single is not None and is_relation(single):
        return 2
    return 0 if single is not None and (single.endswith("}") or _classes_element(single)) else 1


def _present_text(names: list, complete: bool, single, count: float, value) -> str:
    """A bucket's count column at ``count`` (> 0) in words; ``value``: its value column's, where constant."""
    if single is not None:
        classes = _classes_element(single)
        if classes is not None and value is not None:
            return f"{classes} contains {value:g}"
        if not is_relation(single) and "=" in single and not single.endswith("}"):
            return single  # a categorical value (y='spam', y=nan) is its own name
        return f"{_place_text(single)} released" + ("" if count == 1 else f" {count:g} times")
    if not names:
        return f"{count:g} parts of the output hashed to a bucket whose names were encoded in another process"
    listed = ", ".join(_place_text(n) for n in names) + ("" if complete else ", …")
    return f"{count:g} of the parts hashed together ({listed})"


def _value_text(name: str, value: float) -> str:
    return f"{_place_text(name)} = {value:g}"


def encoder_of(mechanism) -> "OutputEncoder | None":
    """The :class:`OutputEncoder` a mechanism encodes its outputs with (its ``encoder``, or its wrapped
    ``mechanism``'s), or None."""
    for _ in range(4):
        encoder = getattr(mechanism, "encoder", None)
        if isinstance(encoder, OutputEncoder):
            return encoder
        mechanism = getattr(mechanism, "mechanism", None)
        if mechanism is None:
            return None
    return None


def _refuse_overflow(output, features: dict, buckets, bucket: int, width: int):
    """Refuse an output whose finite numbers, added in one bucket, pass float64's largest number (about 1.8e308): the
    sum is not a number the row can hold, and the refusal names them rather than a row of inf."""
    names = sorted((name for name, b in zip(features, buckets) if b == bucket), key=lambda name: -abs(features[name]))
    shown = ", ".join(f"{name} = {features[name]:.6g}" for name in names[:MAX_DIFFERENCES])
    more = f" and {len(names) - MAX_DIFFERENCES} smaller" if len(names) > MAX_DIFFERENCES else ""
    raise OutputNotEncodable("y", type_text(output), f"its numbers {shown}{more} share bucket {bucket} of the encoder's "
                             f"{width}, where they are added, and their sum passes float64's largest number "
                             f"({np.finfo(np.float64).max:.6g}); rescale the released numbers",
                             accepted="finite numbers whose sums in one bucket stay within float64's range")


class OutputEncoder:
    """Encode outputs of any structure as rows of ``2 * width`` numbers (module docstring).

    Parameters
    ----------
    width : int
        Buckets per block (default :data:`DEFAULT_WIDTH`).

    Attributes
    ----------
    statistic : UserStatistic or None
        A user's statistic (:mod:`audit.statistics.user_statistic`), set by :class:`audit.spec.AuditSpec`,
        and in a worker process by :meth:`mechanisms.execution.worker.MechanismReference.resolve` (it travels
        with the mechanism): its values on each output are appended to the row, after the ``2 * width`` columns.
    with_nan : int
        The outputs this encoder encoded in this process that held a NaN: each NaN becomes one category
        (``y=nan``, the same whatever produced it), which the audit's notes count
        (:meth:`mechanisms.execution.runner.MechanismRunner.call_notes`).

    Examples
    --------
    >>> encoder = OutputEncoder(width=4)
    >>> row = encoder({"alice": 3.0})
    >>> row.shape, float(row[4:].sum())  # two names: y.len and y{'alice'}
    ((8,), 2.0)
    """

    def __init__(self, width: int = DEFAULT_WIDTH):
        self.width = check_int(width, "width", 1)
        self._names: dict[int, list[str]] = {}  # bucket -> the first NAMES_PER_BUCKET names encoded into it
        self._more: set[int] = set()            # buckets that received more names than that
        self._buckets: dict[str, int] = {}      # name -> bucket, for names seen (at most MAX_REMEMBERED_NAMES)
        # A user's statistic (audit.statistics.user_statistic.UserStatistic): its values on the output before
        # encoding are appended to each row, after the two blocks.
        self.statistic = None
        # Outputs encoded in this process that held a NaN (each NaN a category, y=nan: _number), for the audit's
        # note on them (mechanisms.execution.worker.run_chunk counts a chunk's by the difference).
        self.with_nan = 0

    @property
    def support_columns(self) -> slice:
        """The columns that count the names in each bucket (the support block)."""
        return slice(self.width, 2 * self.width)

    def bucket(self, name: str) -> int:
        """The bucket of a feature name: CRC-32 of its UTF-8 bytes modulo the width (the same in every process)."""
        return zlib.crc32(name.encode("utf-8")) % self.width

    def __call__(self, output) -> np.ndarray:
        nan_before = _NAN_NUMBERS[0]
        features = output_features(output)
        self.with_nan += _NAN_NUMBERS[0] != nan_before
        buckets = np.fromiter((self._bucket_of(name) for name in features), dtype=np.intp, count=len(features))
        values = np.fromiter(features.values(), dtype=np.float64, count=len(features))
        # bincount adds each bucket's values in the features' order, as a loop of += would: the same doubles.
        sums = np.bincount(buckets, weights=values, minlength=self.width)
        if not np.all(np.isfinite(sums)):
            _refuse_overflow(output, features, buckets, int(np.flatnonzero(~np.isfinite(sums))[0]), self.width)
        counts = np.bincount(buckets, minlength=self.width)
        negative_zeros = (values == 0) & np.signbit(values)
        if negative_zeros.any():
            # The IEEE 754 sum of -0.0 alone is -0.0 (Section 6.3), but bincount's starts from +0.0: a bucket holding
            # only negative zeros keeps that sign, as a float64 output row holds it (a sign of zero is a bit released).
            only = (np.bincount(buckets[negative_zeros], minlength=self.width) == counts) & (counts > 0)
            sums[only] = -0.0
        row = np.concatenate([sums, counts.astype(np.float64)])
        return row if self.statistic is None else np.concatenate([row, self.statistic.values(output)])

    def encodes_none(self, row) -> bool:
        """Whether ``row``, a row this encoder made in this process (a statistic's values after its ``2 * width``
        columns aside), is the encoding of ``None``: what a function without a ``return`` releases (:func:`none_note`).

        The row alone cannot tell ``None`` from another output whose one name shares its bucket (a string, 1 in
        ``width``); the names this encoder saw in that bucket can, so a row encoded in another process, or a bucket
        that saw other names too, gives False."""
        row = np.asarray(row, dtype=np.float64).reshape(-1)
        [name] = output_features(None)
        return (row.size >= 2 * self.width and np.array_equal(row[:2 * self.width], OutputEncoder(self.width)(None))
                and self._names.get(self.bucket(name)) == [name] and self.bucket(name) not in self._more)

    def _bucket_of(self, name: str) -> int:
        """:meth:`bucket` of ``name``, remembered (a fitted model's hundreds of names recur in every run), with the
        name kept for :meth:`names_in` the first time it is seen."""
        b = self._buckets.get(name)
        if b is None:
            b = self.bucket(name)
            if len(self._buckets) < MAX_REMEMBERED_NAMES:
                self._buckets[name] = b
            kept = self._names.setdefault(b, [])
            if name not in kept:
                if len(kept) < NAMES_PER_BUCKET:
                    kept.append(name)
                else:
                    self._more.add(b)
        return b

    def names_in(self, bucket: int) -> tuple[list[str], bool]:
        """(the names encoded into ``bucket`` in this process, whether that list is every one of them)."""
        return list(self._names.get(bucket, [])), bucket not in self._more

    def describe_differences(self, rows_first, rows_second, first: str = "a", second: str = "b") -> list[str]:
        """The support facts of encoded rows seen under one input and never under the other, in words.

        A fact is a value of a bucket's count column other than 0 (which of its names are present),
        or, for a bucket that holds one name, a value that name takes on the rows where it is present
        under both inputs, when it takes at most :data:`MAX_FACT_VALUES` values there (a shape, a
        length: not a noisy count). The facts held by the largest share of one input's runs come
        first (keys and classes before other parts at equal shares), at most :data:`MAX_DIFFERENCES`.
        ``first``, ``second`` name the inputs: a and b, as the audit's pair line names its databases (its event's
        "first input" may be either). A bucket is named by the names encoded into it (module
        docstring); counts only, not a test.
        """
        a, b = np.asarray(rows_first, dtype=np.float64), np.asarray(rows_second, dtype=np.float64)
        if (a.ndim != 2 or b.ndim != 2 or a.shape[1] < 2 * self.width or b.shape[1] < 2 * self.width
                or not len(a) or not len(b)):
            return []
        a, b = a[:, :2 * self.width], b[:, :2 * self.width]  # a user's statistic's columns, if any, follow
        facts = []  # (−share of its input's runs, 0 for keys and classes else 1, sentence)
        for bucket in range(self.width):
            names, complete = self.names_in(bucket)
            single = names[0] if len(names) == 1 and complete else None
            count_a, count_b = a[:, self.width + bucket], b[:, self.width + bucket]
            value_a, value_b = a[:, bucket], b[:, bucket]
            sides = ((count_a, count_b, value_a, first, second), (count_b, count_a, value_b, second, first))
            for held, other, values, held_name, other_name in sides:
                for count in np.setdiff1d(np.unique(held[held > 0]), np.unique(other)):
                    rows = held == count
                    constant = np.unique(values[rows])
                    what = _present_text(names, complete, single, count, constant[0] if len(constant) == 1 else None)
                    facts.append((-rows.mean(), _rank(single), f"{what} in {int(rows.sum())} of {len(held)} runs on "
                                  f"{held_name}, never in the {len(other)} on {other_name}"))
            if single is None:
                continue
            present_a, present_b = value_a[count_a > 0], value_b[count_b > 0]
            if not len(present_a) or not len(present_b) or len(np.unique(np.r_[present_a, present_b])) > MAX_FACT_VALUES:
                continue
            for held, other, total, other_total, held_name, other_name in (
                    (present_a, present_b, len(a), len(b), first, second),
                    (present_b, present_a, len(b), len(a), second, first)):
                for value in np.setdiff1d(np.unique(held), np.unique(other)):
                    runs = int(np.sum(held == value))
                    facts.append((-runs / total, _rank(single), f"{_value_text(single, value)} in {runs} of {total} "
                                  f"runs on {held_name}, never in the {other_total} on {other_name}"))
        facts.sort(key=lambda fact: fact[:2])  # stable: ties keep bucket order
        return [sentence for _, _, sentence in facts[:MAX_DIFFERENCES]]

    def __repr__(self) -> str:
        return f"OutputEncoder(width={self.width})"


#: The words that mark :func:`none_note` (the terminal prints the notes that hold them).
NONE_NOTE_WORDS = "returned None"


def none_note(who: str) -> str:
    """The note for a mechanism whose output on the runner's probe database was ``None``
    (:meth:`OutputEncoder.encodes_none`): a function that forgot its ``return`` releases nothing, so every claim
    holds of it and no audit can refute one; the note says so, since the verdict alone would not."""
    return (f"{who} {NONE_NOTE_WORDS} on the first database it was given: if it has no return statement, it releases "
            "nothing and no claim can be refuted; return the noisy value")
