"""Adapters that turn other kinds of mechanisms into the batched protocol ``mech(dbs, rng) -> (m, d)``.

- :class:`PerDatabaseMechanism` wraps a per-database callable ``f(db, rng) -> (d,)``.
- :class:`ExternalCommandMechanism` runs a program that reads databases on stdin and
  writes outputs on stdout (the wire format is documented on the class).
- :func:`opendp_mechanism` and :func:`diffprivlib_mechanism` wrap mechanisms of the
  optional OpenDP and diffprivlib libraries (:mod:`mechanisms.adapters.libraries`, imported
  only when called); ``--mechanism FILE.py:NAME`` recognizes them without these calls
  (:mod:`mechanisms.adapters.recognition`).

Each adapter raises :class:`~mechanisms.base.MechanismError` naming itself and the
database index when the wrapped mechanism fails on a database.
"""

from __future__ import annotations

import inspect
import io
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from estimators.device import native_threads
from estimators.validation import InputError, check_choice, check_positive

from mechanisms.base import MechanismError
from mechanisms.errors import exception_text, raised_where, refuses
from mechanisms.calls.later_bound import later_call_bound
from mechanisms.calls.program import ProgramTimeout, run_program
from mechanisms.calls.user_call import escape_error, first_call_timeout, time_left
from mechanisms.adapters.rows import _as_output_row, _stack_rows
from mechanisms.outputs.limits import OutputNotEncodable

__all__ = [
    "ExternalCommandMechanism",
    "PerDatabaseMechanism",
    "WIRE_FORMATS",
    "check_two_arguments",
    "diffprivlib_mechanism",
    "opendp_mechanism",
]


def check_two_arguments(function, who: str, call: str) -> None:
    """Refuse, before any run, a callable that cannot take the two positional arguments it is called with.

    A mechanism is called as ``call`` (``f(db, rng)`` or ``mech(dbs, rng)``); a function written
    ``f()``, ``f(db)`` or ``f(*, db, rng)`` would fail on its first call with Python's
    ``TypeError``, which names neither the flag nor the form expected. Callables without a
    signature Python can read (some builtins and C extensions) pass: their first call says.

    Raises
    ------
    InputError
        Naming ``who``, the form ``call`` and the callable's signature.
    """
    try:
        signature = inspect.signature(function)
    except Exception:  # noqa: BLE001 - no readable signature (a builtin, a hostile __signature__): the first call checks
        return
    try:
        signature.bind(None, None)
    except TypeError:
        raise InputError(f"{who} cannot be called as {call}: its signature is {signature}; it needs two positional "
                         "parameters, the input and rng, the numpy.random.Generator to draw all its noise from"
                         ) from None


#: NumPy's words for an array read as a table: indexed by a column's name (``db["age"]``) or by a DataFrame's attribute
#: (``db.age``, ``db.iloc``).
_TABLE_READS = ("only integers, slices", "'numpy.ndarray' object has no attribute")


def _named_column_hint(exc: BaseException, db) -> str:
    """What a function of one database that read its database as a table (a pandas DataFrame) is given instead, where
    NumPy's error says so (:data:`_TABLE_READS`): ``; db is a NumPy array of shape (10, 1), ...``; else ``""``."""
    if not isinstance(exc, (IndexError, AttributeError)) or not any(words in str(exc) for words in _TABLE_READS):
        return ""
    return (f"; db is a NumPy array of shape {tuple(np.shape(db))}, one row per record and no column names, not a "
            "DataFrame: read a column by its position (db[:, 0] for the first)")


@dataclass(frozen=True, eq=False)
class PerDatabaseMechanism:
    """Batch a per-database mechanism ``f(db, rng) -> (d,)`` (a scalar counts as ``d = 1``).

    Parameters
    ----------
    function : callable
        ``function(db, rng)`` with ``db`` of shape ``(n, k)``; called once per database,
        in batch order, with the same generator (so a seed reproduces the whole batch).
    name : str
        Name used in error messages.
    encoder : OutputEncoder, optional
        Outputs of any structure (:mod:`mechanisms.outputs.encoding`: arrays of any shape,
        mappings, sets of keys, fitted estimators, tuples), each encoded as one row of
        ``2 * encoder.width`` numbers. Without it, each output must be a number or a vector
        of one length (the rows are the outputs themselves).

    Notes
    -----
    A batch's calls run with one BLAS and one OpenMP thread (:func:`estimators.device.native_threads`,
    unless ``OMP_NUM_THREADS`` is set): a function called on one small database at a time gains
    nothing from a library's thread pool, whose threads' waits on a loaded machine cost more than
    the call (a scikit-learn fit on 5 records: 72 ms of CPU at load 16 on two cores, 3.2 ms on
    one thread).
    """

    function: Callable
    name: str = "per-database mechanism"
    encoder: Callable | None = None

    def __post_init__(self):
        if not callable(self.function):
            raise InputError(f"argument 'function' must be callable, got {type(self.function).__name__}")
        check_two_arguments(self.function, f"argument 'function' ({self.name})", "function(db, rng)")

    def __call__(self, dbs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        who = f"mechanism '{self.name}'"
        rows = []
        with native_threads(1):
            for index, db in enumerate(dbs):
                try:
                    value = self.function(db, rng)
                except Exception as exc:  # noqa: BLE001 - a black box may raise anything
                    error = MechanismError(f"{who} raised {type(exc).__name__} on database {index}"
                                           f"{exception_text(exc)}{raised_where(exc, self.function)}"
                                           f"{_named_column_hint(exc, db)}",
                                           mechanism=who, database_index=index)
                    error.refused = refuses(exc)
                    raise error from exc
                except BaseException as exc:  # sys.exit, os._exit, ...: one line naming this database, not the batch
                    escaped = escape_error(exc, who, f" on database {index}")
                    if escaped is None:  # Ctrl-C, an enclosing deadline: not this database's failure
                        raise
                    escaped.database_index = index
                    raise escaped from None
                rows.append(_as_output_row(value, who, index) if self.encoder is None else
                            self._encoded(value, who, index))
        return _stack_rows(rows, who)

    def _encoded(self, value, who: str, index: int) -> np.ndarray:
        try:
            return self.encoder(value)
        except OutputNotEncodable as exc:  # the function ran: its output is what the audit cannot take
            raise MechanismError(f"{who} returned an output that is not encodable on database {index}: {exc.detail}",
                                 mechanism=who, database_index=index) from None

    @property
    def support_columns(self) -> slice | None:
        """The encoded rows' support block (:attr:`OutputEncoder.support_columns`), None without an encoder."""
        return getattr(self.encoder, "support_columns", None)


#: Wire formats understood by :class:`ExternalCommandMechanism`.
WIRE_FORMATS = ("text", "npy")

#: Environment variable through which an external command receives its seed.
SEED_VARIABLE = "MIAUDIT_SEED"

#: The seed an external command receives is below this (2^31: exact in a double, so awk reads it).
SEED_LIMIT = 2**31

_STDERR_TAIL = 800


def _encode_text(dbs: np.ndarray) -> bytes:
    m, n, k = dbs.shape
    lines = [f"{m} {n} {k}"]
    lines.extend(" ".join(repr(float(v)) for v in db.ravel()) for db in dbs)
    return ("\n".join(lines) + "\n").encode()


def _decode_text(stdout: bytes, m: int, who: str) -> np.ndarray:
    try:
        text = stdout.decode()
    except UnicodeDecodeError:
        raise MechanismError(f"{who} printed bytes that are not UTF-8 text", mechanism=who) from None
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) != m:
        raise MechanismError(f"{who} printed {len(lines)} non-empty lines for {m} databases; "
                             f"expected one line of numbers per database", mechanism=who)
    rows = []
    for index, line in enumerate(lines):
        try:
            rows.append(np.array([float(token) for token in line.split()]))
        except ValueError:
            shown = line if len(line) <= 80 else line[:77] + "..."
            raise MechanismError(f"{who} printed a line that is not numbers for database {index}: {shown!r}",
                                 mechanism=who, database_index=index) from None
    return _stack_rows(rows, who)


def _encode_npy(dbs: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, dbs, allow_pickle=False)
    return buffer.getvalue()


def _decode_npy(stdout: bytes, who: str) -> np.ndarray:
    try:
        return np.load(io.BytesIO(stdout), allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable stdout is the same failure
        raise MechanismError(f"{who} did not print a valid .npy array: {type(exc).__name__}: {exc}",
                             mechanism=who) from None


#: Seconds an external program's batch outlives the bound of the call it runs in
#: (:meth:`ExternalCommandMechanism._bound`): that bound fires first, and its message says what set it; the
#: program's own end is for a call bounded on a thread, which stops waiting without interrupting the batch.
AFTER_ENCLOSING = 1.0


@dataclass(frozen=True, eq=False)
class ExternalCommandMechanism:
    """A mechanism implemented by an external program, batch in on stdin, outputs on stdout.

    The program is started once per batch. Its seed is the environment variable
    ``MIAUDIT_SEED``, an integer in [0, 2^31) drawn from the audit's generator (small enough
    for any language's generator, awk's ``srand`` included), so a seeded audit is
    reproducible when the program seeds its own randomness from it.

    Wire format ``"text"`` (the default; any language can speak it):

    - stdin: a header line ``m n k``, then one line per database holding its ``n * k``
      entries separated by spaces, row by row (record 0's k attributes, then record 1's, ...);
    - stdout: one line per database (``m`` non-empty lines, in order) holding its ``d``
      output numbers separated by whitespace.

    Wire format ``"npy"``: stdin is the ``(m, n, k)`` float64 batch as ``.npy`` bytes
    (``numpy.save``); stdout must be the ``(m, d)`` outputs as ``.npy`` bytes.

    Parameters
    ----------
    command : sequence of str
        Program and arguments (no shell), e.g. ``(sys.executable, "mech.py")``.
    timeout : float, optional
        Seconds the program may run per batch before it is killed (``--timeout``). Default: the bound of the call
        of user code it runs in (in an audit: the probe's :data:`~mechanisms.calls.user_call.FIRST_CALL_TIMEOUT`,
        a chunk's :func:`~mechanisms.calls.later_bound.later_call_bound`), plus :data:`AFTER_ENCLOSING`; called
        outside any, its first batch gets the first-call bound and each later one
        :func:`~mechanisms.calls.later_bound.later_call_bound` of its first batch's seconds a database.
    wire : {"text", "npy"}
        Wire format (default ``"text"``).
    name : str, optional
        Name used in error messages (default: the command line).

    Raises
    ------
    MechanismError
        When the program cannot be started, exceeds ``timeout``, exits with a non-zero
        status (its stderr is quoted), or prints something that is not the expected outputs.
    """

    command: tuple
    timeout: float | None = None
    wire: str = "text"
    name: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    #: Seconds a database of its first batch called outside a bounded call, None until then (:meth:`_bound`).
    first_seconds: float | None = field(default=None, init=False, repr=False)

    def __post_init__(self):
        if isinstance(self.command, str) or not self.command:
            raise InputError("argument 'command' must be a non-empty sequence of strings (no shell), "
                             f"got {self.command!r}")
        if not all(isinstance(part, (str, os.PathLike)) for part in self.command):
            raise InputError(f"argument 'command' must hold only strings, got {self.command!r}")
        object.__setattr__(self, "command", tuple(os.fspath(part) for part in self.command))
        if os.path.isdir(self.command[0]):  # else the OS says only "Permission denied" when it is started
            raise InputError(f"argument 'command': {self.command[0]!r} is a folder, not a program")
        if self.timeout is not None:
            object.__setattr__(self, "timeout", check_positive(self.timeout, "timeout"))
        check_choice(self.wire, "wire", WIRE_FORMATS)
        if self.name is None:
            object.__setattr__(self, "name", " ".join(self.command))

    def __call__(self, dbs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        who = f"mechanism '{self.name}'"
        batch = np.asarray(dbs, dtype=np.float64)
        seed = int(rng.integers(0, SEED_LIMIT))
        env = {**os.environ, **self.env, SEED_VARIABLE: str(seed)}
        payload = _encode_text(batch) if self.wire == "text" else _encode_npy(batch)
        timeout, hint, first = self._bound(batch.shape[0])
        started = time.perf_counter()
        try:  # in a process group of its own, killed whole when the program exits or times out
            returncode, stdout, stderr = run_program(self.command, payload, timeout=timeout, env=env)
        except ProgramTimeout:
            raise MechanismError(f"{who} did not finish within {timeout:g} s on a batch of "
                                 f"{batch.shape[0]} databases (hung?); it was killed with its child "
                                 f"processes{hint}", mechanism=who) from None
        except OSError as exc:
            raise MechanismError(f"{who} could not be started: {exc}", mechanism=who) from None
        seconds = (time.perf_counter() - started) / max(batch.shape[0], 1)
        if returncode != 0:
            stderr = stderr.decode(errors="replace").strip()[-_STDERR_TAIL:]
            raise MechanismError(f"{who} exited with status {returncode}; stderr: {stderr or '(empty)'}",
                                 mechanism=who)
        outputs = _decode_text(stdout, batch.shape[0], who) if self.wire == "text" else _decode_npy(stdout, who)
        if first:  # a first batch that gave its outputs: its time bounds the later ones
            object.__setattr__(self, "first_seconds", seconds)
        return outputs

    def _bound(self, databases: int) -> tuple[float, str, bool]:
        """Seconds a batch of ``databases`` may take, and the words that end its timeout message: ``timeout`` where
        given; else the time left to the bounded call of user code it runs in (an audit's chunk or probe,
        :func:`~mechanisms.calls.user_call.time_left`) plus :data:`AFTER_ENCLOSING`, so that the enclosing bound, whose
        message says what set it, fires first; else, outside any (called from Python), the first-call bound for its
        first batch (timed: :attr:`first_seconds`) and :func:`~mechanisms.calls.later_bound.later_call_bound` of that
        batch's seconds a database for each later one. The third value: whether this batch is that first one."""
        if self.timeout is not None:
            return self.timeout, "", False
        left = time_left()
        if left is not None:
            return left + AFTER_ENCLOSING, "", False
        if self.first_seconds is None:
            limit = first_call_timeout()
            return limit, f" (no --timeout was given: its first batch may take {limit:g} s)", True
        timeout, hint = later_call_bound(None, self.first_seconds, databases, each="batch", per="database")
        return timeout, f" {hint}", False


def opendp_mechanism(measurement, *, to_input: Callable | None = None, sensitivity: float | None = None,
                     name: str = "measurement"):
    """Wrap an OpenDP ``Measurement`` as a batched mechanism (needs the ``opendp`` extra).

    A shortcut for :class:`~mechanisms.adapters.libraries.OpenDPMechanism`; ``--mechanism
    FILE.py:NAME`` recognizes a measurement without it.

    Parameters
    ----------
    measurement : opendp.mod.Measurement
        Called once per database on ``to_input(db)``.
    to_input : callable, optional
        Maps a database of shape ``(n, k)`` to the measurement's input (default: the column,
        ``k = 1``, as the domain's element type; for an aggregate measurement the column sums).
    sensitivity : float, optional
        Aggregate measurements: the replace-one sensitivity of ``to_input``, where the
        privacy map is read for the claim.
    name : str
        Name used in error messages.

    Notes
    -----
    OpenDP draws its noise from its own cryptographically secure generator, which cannot
    be seeded, so audits of an OpenDP measurement are not reproducible bit for bit.
    """
    from mechanisms.adapters.libraries import OpenDPMechanism

    return OpenDPMechanism(measurement, query=to_input, sensitivity=sensitivity, name=name)


def diffprivlib_mechanism(mechanism_class, params: Mapping, query: Callable, *, name: str = "mechanism"):
    """Wrap a diffprivlib mechanism class as a batched mechanism (needs the ``diffprivlib`` extra).

    A shortcut for :class:`~mechanisms.adapters.libraries.DiffprivlibMechanism`: per batch,
    one ``mechanism_class(**params, random_state=seed)`` with a seed drawn from the audit's
    generator randomises ``query(db)`` of every database, so a seed reproduces the run.

    Raises
    ------
    InputError
        When diffprivlib rejects ``params`` (checked once here).
    ImportError
        When diffprivlib does not import, saying what fixes it.
    """
    from mechanisms.adapters.libraries import DiffprivlibMechanism, import_diffprivlib

    import_diffprivlib()
    if not callable(query):
        raise InputError(f"argument 'query' must be callable, got {type(query).__name__}")
    return DiffprivlibMechanism(mechanism_class, params=params, query=query, name=name)
