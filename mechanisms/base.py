"""The black-box mechanism protocol and its validation at the boundary.

A mechanism is a batched callable ``mech(dbs, rng) -> (m, d)``: it receives ``m``
databases of ``n`` records with ``k`` attributes each (a float array of shape
``(m, n, k)``) and a :class:`numpy.random.Generator`, and returns one ``d``-dimensional
output per database. It models the randomized mechanism ``M: X^{n x k} -> Y`` of
Definition 1 of the Pufferfish paper (``pufferfish-mi-privacy.txt``), with ``Y = R^d``.

The audit engine never calls a mechanism directly: it calls :func:`sample_mechanism`,
which turns every way a black box can misbehave (it raises, returns the wrong shape,
returns NaN or inf, calls ``sys.exit``, never returns) into one :class:`MechanismError`
naming the mechanism and, where it can be found, the index of the offending database in
the batch, and which protects the audit from a mechanism that writes into its argument.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from estimators.validation import InputError, as_float_array, as_generator, check_real, first_nonfinite_index

from mechanisms.errors import MechanismError, StatisticError, exception_text, raised_where, refuses
from mechanisms.calls.user_call import TIMEOUT_HINT, call_user_code
from mechanisms.outputs.arrays import without_tensors
from mechanisms.outputs.limits import (beyond_range_text, first_inexact_number, first_text_entry, inexact_number_text,
                                      number_noun, numpy_reading, parsed_text_text, refused_dtype_reason, type_text)

__all__ = [
    "Mechanism",
    "MISSING_MARK_COLUMNS",
    "MechanismError",
    "as_database_batch",
    "check_batch_output",
    "draws_only_from_rng",
    "reads_databases_only",
    "returns_fresh_outputs",
    "preferred_chunk_size",
    "mechanism_name",
    "read_tensors",
    "refuse_lost_digits",
    "released_outputs",
    "released_width",
    "run_on_batch",
    "sample_mechanism",
    "with_missing_marks",
]


@runtime_checkable
class Mechanism(Protocol):
    """A batched randomized mechanism ``mech(dbs, rng) -> (m, d)``."""

    def __call__(self, dbs: np.ndarray, rng: np.random.Generator) -> np.ndarray:  # pragma: no cover
        ...


def draws_only_from_rng(code) -> bool:
    """Whether a mechanism or prior declares that it draws all its randomness from the generator it is given.

    Code that declares it (the attribute ``draws_only_from_rng = True``: the catalog mechanisms and
    the built-in priors) is run without seeding numpy's, ``random``'s and torch's global generators
    for each chunk (:func:`mechanisms.execution.chunks.seed_global_generators`), which only code
    that draws from them needs; its samples are the same either way. Anything else is seeded.
    """
    return getattr(code, "draws_only_from_rng", False) is True


def returns_fresh_outputs(mech) -> bool:
    """Whether a mechanism declares that every call returns a new array that it keeps no reference to.

    The outputs of code that declares it (the attribute ``fresh_outputs = True``: the DP-SGD trainers,
    :class:`~mechanisms.training.dpsgd.DPSGD`) are taken as they are where they are float64 already
    (:func:`check_batch_output`'s ``copy=False``); anything else's are copied, since a mechanism may hand back a
    buffer it overwrites on its next call. The outputs are the same either way: the copy of a wide release (the
    8,257 parameters of 1,000 runs, 66 MB) cost the host 0.02-0.2 s a call on the 2-core machine.
    """
    return getattr(mech, "fresh_outputs", False) is True


def reads_databases_only(mech) -> bool:
    """Whether a mechanism declares that it neither changes the databases it is called with nor keeps them.

    Code that declares it (the attribute ``reads_databases_only = True``: the DP-SGD trainers,
    :class:`~mechanisms.training.dpsgd.DPSGD`) is called with a read-only view of the runner's databases
    (:func:`run_on_batch`); anything else gets a copy of its own, since a mechanism may change its input in place
    (and would change the next chunk's, or another job's). The outputs are the same either way: the copy of a
    chunk of the d = 8,257 release (1,016 runs, the runner's 2^22 entries, 33 MB) took the host 2.4 ms on the
    quiet 2-core machine and up to 0.06 s under load.
    """
    return getattr(mech, "reads_databases_only", False) is True


def preferred_chunk_size(mech) -> int | None:
    """The databases per call a mechanism asks for (its ``preferred_chunk_size`` attribute), or None.

    A vectorized mechanism whose calls cost microseconds (the catalog's) asks for large chunks: the
    runner's fixed cost per chunk (a seeded generator, validation) then stops mattering. The audit's
    ``chunk_size`` setting, when given, overrides it (:class:`~mechanisms.execution.runner.MechanismRunner`).

    Raises
    ------
    InputError
        When the attribute is set to anything but a positive integer.
    """
    size = getattr(mech, "preferred_chunk_size", None)
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise InputError(f"mechanism '{mechanism_name(mech)}': attribute 'preferred_chunk_size' must be a positive "
                         f"integer, got {size!r}")
    return int(size)


def mechanism_name(mech) -> str:
    """A readable name for a mechanism: its ``name`` attribute, else its qualified name."""
    name = getattr(mech, "name", None)
    if isinstance(name, str) and name:
        return name
    for attribute in ("__name__", "__qualname__"):
        name = getattr(mech, attribute, None)
        if isinstance(name, str) and name:
            return name
    return type(mech).__qualname__


def as_database_batch(dbs, name: str = "dbs", allow_nan: bool = False) -> np.ndarray:
    """Return a database batch as a float64 array of shape ``(m, n, k)`` with finite entries (or NaN, a missing
    value, where ``allow_nan``: ``--allow-nan``).

    Raises
    ------
    InputError
        Naming ``name`` when the batch is not numeric, not 3-D, empty, or holds NaN/inf
        (the message gives the first offending database index).
    """
    if allow_nan:  # the NaN kept, everything else checked as always
        arr = np.array(dbs, dtype=np.float64)
        missing = np.isnan(arr)
        arr = as_float_array(np.where(missing, 0.0, arr), name, ndim=3, shape="(m, n, k)", first_axis="database")
        arr[missing] = np.nan
    else:
        arr = as_float_array(dbs, name, ndim=3, shape="(m, n, k)", first_axis="database")
    if 0 in arr.shape:
        raise InputError(f"argument '{name}' must be non-empty, got shape {arr.shape}")
    return arr


#: Output columns whose missing values one mark column holds (``--allow-nan``, :func:`with_missing_marks`). Its
#: value, 0 to 15, takes at most 16 values, and the classifier statistics one-hot encode a column of at most 16
#: values (:data:`audit.statistics.classifier.MAX_ONE_HOT_VALUES`): their features span each column's own
#: missing indicator, as an indicator column per output column did, at a quarter of the columns.
MISSING_MARK_COLUMNS = 4


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def with_missing_marks(values: np.ndarray) -> np.ndarray:
    """An ``(m, d)`` output that may hold NaN (a missing value, ``--allow-nan``) as ``(m, d + ⌈d/4⌉)`` numbers.

    Each column with NaN read as 0, then one mark column per :data:`MISSING_MARK_COLUMNS` (4) output columns:
    mark ``g`` is ``Σ_i 2^i [column 4g + i is NaN]``, which of its columns are missing, in binary. The map is
    one-to-one (:func:`released_outputs` inverts it) and fixed by ``d`` alone, decided from no draw, so every
    statistic of it is a statistic of the output, and by post-processing (Dwork and Roth 2014, Proposition 2.1)
    it leaks no more and certifies no more. Where no output is missing the marks are ⌈d/4⌉ columns of zeros.

    Examples
    --------
    >>> with_missing_marks(np.array([[1.5, np.nan, 2.0, np.nan, np.nan]]))
    array([[ 1.5,  0. ,  2. ,  0. ,  0. , 10. ,  1. ]])
    """
    missing = np.isnan(values)
    m, d = values.shape
    groups = _ceil_div(d, MISSING_MARK_COLUMNS)
    bits = np.zeros((m, groups * MISSING_MARK_COLUMNS))
    bits[:, :d] = missing
    marks = bits.reshape(m, groups, MISSING_MARK_COLUMNS) @ (2.0 ** np.arange(MISSING_MARK_COLUMNS))
    return np.concatenate([np.where(missing, 0.0, values), marks], axis=1)


def released_width(width: int) -> int | None:
    """The width ``d`` of the outputs whose rows of :func:`with_missing_marks` are ``width`` wide, or None where no
    ``d`` gives ``d + ⌈d/4⌉ = width`` (:func:`released_outputs` says why ``d = width − ⌈width/5⌉``)."""
    d = width - _ceil_div(width, MISSING_MARK_COLUMNS + 1)
    return d if d >= 1 and d + _ceil_div(d, MISSING_MARK_COLUMNS) == width else None


def released_outputs(rows) -> np.ndarray:
    """The outputs as released, NaN where missing, from rows of :func:`with_missing_marks` (its inverse).

    A width ``w = d + ⌈d/4⌉`` grows with ``d``, so it names ``d``: ``d = w − ⌈w/5⌉`` (with ``d = 4q + r``,
    ``0 < r ≤ 4``: ``w = 5q + r + 1``, so ``⌈w/5⌉ = q + 1``).

    Raises
    ------
    InputError
        Naming ``rows`` when their width is no ``d + ⌈d/4⌉``.
    """
    rows = np.asarray(rows, dtype=np.float64)
    width = rows.shape[1]
    d = released_width(width)
    if d is None:
        raise InputError(f"argument 'rows' has {width} columns: no output width d gives d + ceil(d/4) of them "
                         "(with_missing_marks)")
    marks = rows[:, d:].astype(np.int64)
    missing = (marks[:, :, None] >> np.arange(MISSING_MARK_COLUMNS)) & 1
    missing = missing.reshape(len(rows), -1)[:, :d].astype(bool)
    return np.where(missing, np.nan, rows[:, :d])


def read_tensors(values, what: str, error: Callable[[str], Exception], where: str | None = None):
    """``values`` with each PyTorch tensor in it read as its NumPy equal, as every user function's numbers are read
    (a mechanism's output, a prior's draws, a table: :func:`mechanisms.outputs.arrays.without_tensors`: detached,
    dense, on the CPU, a bfloat16 as the float64 it equals), or one ``error(message)``: ``"{what} a tensor that could
    not be read{where}: TypeError: …"``, ``what`` naming the function or argument and its verb (``"prior 'p'
    returned"``, ``"argument 'data' holds"``), ``where`` `` (a Tensor)`` unless given.
    """
    try:
        return without_tensors(values)
    except Exception as exc:  # noqa: BLE001 - torch may raise anything on a tensor with no values to read (meta)
        where = f" ({type_text(values)})" if where is None else where
        raise error(f"{what} a tensor that could not be read{where}: {type(exc).__name__}{exception_text(exc)}") \
            from None


#: How a batched output's number that float64 does not hold exactly may be released instead, as a category.
_AS_CATEGORY = "str(x) from a function of one database (--per-database), to keep every digit as a category"


def refuse_lost_digits(read, who: str, database: int | None, text_kept: str, number_kept: str) -> None:
    """Raise one :class:`MechanismError` naming the database where outputs read as float64 numbers (``read``: a
    batch's rows, or one database's row) hold text a float64 cast parses (``"0.1000000000000000000001"`` as 0.1:
    :func:`mechanisms.outputs.limits.first_text_entry`) or a number float64 does not hold exactly (``2**64 + 5``,
    ``Fraction(1, 3)``: :func:`mechanisms.outputs.limits.first_inexact_number`). ``database``: the database ``read``
    is, None where it is a batch (the entry's first index names it); ``text_kept`` and ``number_kept``: how the
    caller's outputs may carry the text or the number instead."""
    text = first_text_entry(read)
    if text is not None:
        index = database if database is not None else int(text[0][0])
        raise MechanismError(f"{who} returned {parsed_text_text(text[1], index, text_kept)}", mechanism=who,
                             database_index=index)
    inexact = first_inexact_number(read)
    if inexact is not None:
        index = database if database is not None else int(inexact[0][0])
        raise MechanismError(f"{who} returned {number_noun(inexact[1])} that float64 does not hold exactly for "
                             f"database {index}: {inexact_number_text(inexact[1], number_kept)}", mechanism=who,
                             database_index=index)


def check_batch_output(values, m: int, who: str, allow_nan: bool = False, copy: bool = True) -> np.ndarray:
    """Return a per-database output as a float64 array of shape ``(m, d)``.

    Shared by mechanisms and secret functions: both map a batch of ``m`` databases to
    one row per database. With ``allow_nan`` (``--allow-nan``) a released NaN is a missing value: the
    array is :func:`with_missing_marks`' ``(m, d + ⌈d/4⌉)``, the values with NaN read as 0 and then which
    of every 4 columns are missing, one column for 4 (a one-to-one map of the output, fixed by ``d``).
    Without ``copy`` (outputs the mechanism keeps no reference to, :func:`returns_fresh_outputs`) a float64
    array is returned itself, not a copy.

    Raises
    ------
    MechanismError
        Naming ``who`` when ``values`` is not numeric, not of shape ``(m, d)`` with
        ``d >= 1``, holds a number that float64 does not hold exactly (``2**64 + 5``, which the cast would
        read as ``2**64``; a longdouble, Decimal or Fraction such as ``Fraction(1, 3)``:
        :func:`mechanisms.outputs.limits.first_inexact_number`), holds text (which the cast would parse:
        :func:`mechanisms.outputs.limits.first_text_entry`) or holds NaN/inf (the message gives the first
        offending database). A PyTorch tensor (alone or in lists of rows) is read as its NumPy equal first:
        detached, dense, on the CPU, a bfloat16 as the float64 it equals
        (:func:`mechanisms.outputs.arrays.without_tensors`), and one that cannot be read is named by its type.
    """
    values = read_tensors(values, f"{who} returned", lambda message: MechanismError(message, mechanism=who))
    # What is no array (a list of rows) is read by NumPy once, for every check below and the cast.
    reading = numpy_reading(values, tensors_read=True)
    read = values if reading is None else reading
    check_real(read, f"{who} output", error=lambda message: MechanismError(message, mechanism=who))
    refused = (refused_dtype_reason(read.dtype, text=False)
               if isinstance(read, np.ndarray) and read.dtype.kind in "MmV" else None)
    if refused is not None:  # a cast would drop a date's unit (datetime64[ns] rounded past 2**53) or fail on bytes
        raise MechanismError(f"{who} returned an array of dtype {read.dtype}: {refused}", mechanism=who)
    try:
        if reading is not None and reading is not values and reading.dtype.kind in "biuf":
            arr = reading.astype(np.float64, copy=False)  # NumPy's own array: no buffer of the mechanism's
        else:
            # A copy: the mechanism may hand back a buffer it overwrites on its next call (unless it says it does not).
            arr = np.array(values, dtype=np.float64) if copy else np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:  # named by its type too: NumPy's words alone say "not 'generator'"
        raise MechanismError(f"{who} returned non-numeric output ({type_text(values)}): {exc}",
                             mechanism=who) from None
    except OverflowError:  # a Python int beyond float64 (10**400): NumPy's error would reach the user as a traceback
        raise MechanismError(f"{who} returned {beyond_range_text(read)}", mechanism=who) from None
    if arr.ndim != 2 or arr.shape[0] != m or arr.shape[1] == 0:
        hint = ""
        if arr.ndim < 2 and who.startswith("mechanism "):
            # A function of one database f(db, rng) given as a batched mechanism returns one value or row.
            hint = ("; if it is a function of one database, f(db, rng) -> output, give --per-database "
                    "([mechanism] per_database = true; from Python, wrap it: PerDatabaseMechanism(f))")
        # None (a function with no return statement) is no shape () to its author: said as what it is.
        what = "None" if values is None else f"shape {arr.shape}"
        raise MechanismError(
            f"{who} returned {what} for a batch of {m} database{'' if m == 1 else 's'}; expected ({m}, d) with "
            f"d >= 1{hint}", mechanism=who,
        )
    per_database = (", or text from a function of one database (--per-database), where a string is a category, "
                    "every character kept") if who.startswith("mechanism ") else ""
    refuse_lost_digits(read, who, None, per_database, _AS_CATEGORY)
    if allow_nan:
        arr = with_missing_marks(arr)
    index = first_nonfinite_index(arr)
    if index is not None:
        # A NaN may be a missing value the mechanism means to release: say how to audit that.
        hint = "; a NaN output (a missing value) is audited with --allow-nan ([audit] allow_nan = true)" \
            if who.startswith("mechanism ") and np.isnan(arr[index]).any() else ""
        raise MechanismError(f"{who} returned NaN or inf for database {index}{hint}",
                             mechanism=who, database_index=index)
    return arr


def _databases_for(mech, batch: np.ndarray) -> np.ndarray:
    """What ``mech`` is called with: a read-only view of ``batch`` where it reads its databases only
    (:func:`reads_databases_only`: a write then raises, not changes the runner's), else a copy of its own."""
    if not reads_databases_only(mech):
        return batch.copy()
    view = batch.view()
    view.flags.writeable = False
    return view


def _locate_failure(mech: Callable, batch: np.ndarray, rng: np.random.Generator, who: str,
                    timeout: float | None) -> int | None:
    # Re-run on single databases to find one that fails on its own. Only on the error
    # path, so the draws it consumes never affect a successful audit.
    for index in range(batch.shape[0]):
        try:
            call_user_code(mech, (batch[index:index + 1].copy(), rng), who=who, timeout=timeout,
                           where=f" on database {index}")
        except Exception:  # noqa: BLE001 - any failure of the black box locates it
            return index
    return None


def sample_mechanism(mech: Callable, dbs, rng=None, *, name: str | None = None,
                     locate: bool = True, timeout: float | None = None) -> np.ndarray:
    """Run ``mech`` on a copy of a database batch and validate what it returns.

    The mechanism gets its own copy of ``dbs``: whatever it writes into its argument, the
    caller's databases (from which the audit reads the secrets and the public part) stay as
    they were drawn. A copy rather than a read-only view, because a view's ``writeable`` flag
    can be switched back on by the mechanism, and because mechanisms that use their argument
    as scratch space are legitimate. Measured cost (2-core machine, one call of a summing
    mechanism): 1 µs for a 256 x 10 x 1 chunk (5% of the call), 19 µs for 8192 x 10 x 1
    (5%), 7.6 ms for 8192 x 100 x 10 (38% of the cheapest possible mechanism, less for any
    real one); a read-only view costs 1 µs at every size.

    Parameters
    ----------
    mech : callable
        A batched mechanism ``mech(dbs, rng) -> (m, d)``.
    dbs : array_like, shape (m, n, k)
        The databases.
    rng : int, None or numpy.random.Generator
        Seed or generator handed to the mechanism.
    name : str, optional
        Name used in error messages (default: :func:`mechanism_name`).
    locate : bool
        When a batched mechanism raises, re-run it on single databases to name the
        first one that fails on its own (default True). A refusal of the databases' values
        (:func:`~mechanisms.errors.refuses`) is located whatever ``locate`` says: the runner never retries
        one, so its first attempt is its last (:func:`mechanisms.execution.backends.run_tasks`).
    timeout : float, optional
        Seconds one call may take (default: no limit); see
        :func:`mechanisms.calls.user_call.call_user_code`.

    Returns
    -------
    ndarray, shape (m, d)
        The outputs as float64 (a fresh array).

    Raises
    ------
    InputError
        When ``dbs`` is not a finite ``(m, n, k)`` batch.
    MechanismError
        When the mechanism raises, returns the wrong shape, returns NaN/inf, calls
        ``sys.exit`` or does not return within ``timeout``. The message names the
        mechanism and, when it can be found, the database index.
    """
    return run_on_batch(mech, as_database_batch(dbs), as_generator(rng), name=name or mechanism_name(mech),
                        locate=locate, timeout=timeout)


def run_on_batch(mech: Callable, batch: np.ndarray, generator: np.random.Generator, *, name: str,
                 locate: bool = True, timeout: float | None = None, allow_nan: bool = False,
                 hint: str = TIMEOUT_HINT) -> np.ndarray:
    """:func:`sample_mechanism` on a batch already checked by :func:`as_database_batch` (float64,
    ``(m, n, k)``, finite): the runner checks a job's whole batch once, not each chunk again. With ``allow_nan``
    the batch may hold NaN and the outputs come with missing marks (:func:`check_batch_output`); ``hint`` ends the
    message of a call that outlived ``timeout`` (:func:`~mechanisms.calls.user_call.call_user_code`). A refusal
    (:func:`~mechanisms.errors.refuses`) is located whatever ``locate`` says, as :func:`sample_mechanism`'s is."""
    who = f"mechanism '{name}'"
    m = batch.shape[0]
    where = " on database 0" if m == 1 else f" on a batch of {m} databases"
    try:
        out = call_user_code(mech, (_databases_for(mech, batch), generator), who=who, timeout=timeout, where=where,
                             hint=hint)
    except MechanismError as exc:
        text = str(exc)
        # Its own words, its bound naming the code inside it, or its statistic's error, which names the statistic.
        if text.startswith(who) or exc.mechanism == who or isinstance(exc, StatisticError):
            raise
        # A function's adapter named it by its own name (in a worker: its file's full path); a library's keeps its words.
        if exc.mechanism and exc.mechanism.startswith("mechanism '") and text.startswith(exc.mechanism):
            renamed = MechanismError(who + text[len(exc.mechanism):], mechanism=who, database_index=exc.database_index)
            renamed.refused = exc.refused  # its refusal stays one
            raise renamed from exc
        raise MechanismError(f"{who}: {exc}", mechanism=who,
                             database_index=exc.database_index) from exc
    except Exception as exc:  # noqa: BLE001 - a black box may raise anything
        index = _locate_failure(mech, batch, generator, who, timeout) if (locate or refuses(exc)) and m > 1 else None
        if index is None and m == 1:
            index = 0
        where = f" on database {index}" if index is not None else f" on the batch of {m} databases"
        error = MechanismError(f"{who} raised {type(exc).__name__}{where}{exception_text(exc)}{raised_where(exc, mech)}",
                               mechanism=who, database_index=index)
        error.refused = refuses(exc)
        raise error from exc
    return check_batch_output(out, m, who, allow_nan, copy=not returns_fresh_outputs(mech))
