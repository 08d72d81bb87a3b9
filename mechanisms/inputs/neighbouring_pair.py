"""A neighbouring pair of databases that exposes a mechanism.

An MI audit sees a DP violation when the secret is *which* of two neighbouring databases
was used: with the database uniform on the pair, I(secret; output) is the Jensen–Shannon
divergence between the two output laws, which a mechanism that separates them too well
makes large. :meth:`NeighbouringPair.prior` is that uniform two-point prior.

Two databases of the same shape that differ in one record are replace-one neighbours; two whose
row counts differ by one, the smaller being the larger without one of its rows, are add/remove
neighbours (:mod:`mechanisms.inputs.relation`), held with a presence column so that both have the
shape (n, k + 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.validation import InputError
from mechanisms.inputs.missing_values import check_missing_values, rows_differ, same_databases
from mechanisms.inputs.priors import TwoPoint
from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE, PresencePairPrior, add_remove_rows, with_presence

__all__ = ["NeighbouringPair", "checked_pair", "refuse_equal_pair"]


def _database(value, label: str, allow_nan: bool = False) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{label} must be numeric: {exc}") from None
    if arr.ndim != 2 or 0 in arr.shape:
        raise InputError(f"{label} must have shape (n, k) with n, k >= 1, got shape {arr.shape}")
    check_missing_values(arr, label, allow_nan)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class NeighbouringPair:
    """Two neighbouring databases and why they expose a mechanism.

    A NaN in a database is a missing value (:mod:`mechanisms.inputs.missing_values`): the pair holds it (the
    declared domain's missing-value family builds such pairs); a pair a user gives may hold one only with
    ``--allow-nan`` (:func:`checked_pair`), and an audit takes one only with ``AuditSpec(allow_nan=True)``.

    Attributes
    ----------
    first, second : ndarray
        The two databases (read-only copies): of one shape ``(n, k)`` (replace-one neighbours),
        or of ``n`` and ``n − 1`` rows (add/remove neighbours; held as ``(n, k + 1)`` with a
        presence column, :func:`mechanisms.inputs.relation.with_presence`).
    why : str
        What the pair exposes (e.g. the event whose probability ratio exceeds e^ε).
    relation : {"replace-one", "add-remove"}
        Set from the shapes.
    """

    first: np.ndarray
    second: np.ndarray
    why: str = ""
    relation: str = field(default=REPLACE_ONE, init=False)

    def __post_init__(self):
        first = _database(self.first, "argument 'first'", allow_nan=True)
        second = _database(self.second, "argument 'second'", allow_nan=True)
        if abs(first.shape[0] - second.shape[0]) == 1 and first.shape[1] == second.shape[1]:
            larger, smaller = (first, second) if first.shape[0] > second.shape[0] else (second, first)
            row = add_remove_rows(larger, smaller, "first, second")
            present = with_presence(larger)
            absent = present.copy()
            absent[row, -1] = 0.0
            first, second = (present, absent) if larger is first else (absent, present)
            first.setflags(write=False)
            second.setflags(write=False)
            object.__setattr__(self, "relation", ADD_REMOVE)
        if first.shape != second.shape:
            raise InputError(f"arguments 'first' and 'second' must have the same shape, "
                             f"got {first.shape} and {second.shape}")
        if np.count_nonzero(rows_differ(first, second)) > 1:
            raise InputError("arguments 'first' and 'second' must differ in at most one record (row)")
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "second", second)

    @property
    def record_shape(self) -> tuple[int, int]:
        """``(n, k)``, with the presence column for an add/remove pair."""
        return self.first.shape

    @property
    def database_shape(self) -> tuple[int, int]:
        """The larger database's shape as given, ``(n, k)`` (without a presence column)."""
        n, k = self.first.shape
        return (n, k - 1) if self.relation == ADD_REMOVE else (n, k)

    def prior(self) -> TwoPoint:
        """Prior ``prior(m, rng) -> (m, n, k)`` drawing ``first`` or ``second`` with probability 1/2 each.

        The pair differs in at most one record, so the per-record two-point prior of
        :mod:`mechanisms.inputs.priors` with P(second) = 1/2 switches exactly that record (for an
        add/remove pair, its presence flag).
        """
        kind = PresencePairPrior if self.relation == ADD_REMOVE else TwoPoint
        return kind(self.first, self.second, p=0.5)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return fields_to_dict(self)


_EQUAL = "{label}: the two databases are equal; a neighbouring pair differs in one record"


def checked_pair(first, second, argument: str, given: str, allow_nan: bool = False) -> NeighbouringPair:
    """Two databases a user gave as neighbours (``--pair``, ``[[pairs]]``, ``assert_claim(pairs=...)``), checked.

    :class:`NeighbouringPair` itself admits two equal databases (the pair families build them); a
    pair a user gives must be neighbours that differ: two equal databases give no power, so an
    audit of them would pass any mechanism.

    Parameters
    ----------
    first, second : array_like
        The databases: one shape ``(n, k)`` (replace-one) or ``n`` and ``n − 1`` rows, the
        smaller being the larger without one row (add/remove).
    argument : str
        The argument's name in errors (``--pair``, ``pairs[0]``).
    given : str
        Where the pair came from, for the pair's ``why``.
    allow_nan : bool
        Whether the databases may hold NaN (missing values; ``--allow-nan``).

    Raises
    ------
    InputError
        Naming ``argument`` when a database is not numeric of shape ``(n, k)``, the shapes are
        neither equal nor ``n`` and ``n − 1`` rows, the databases are equal, or they differ in
        more than one record (or by more than one removed row).
    """
    label = f"argument '{argument}'"
    a = _database(first, f"{label} (first database)", allow_nan)
    b = _database(second, f"{label} (second database)", allow_nan)
    if a.shape[1:] == b.shape[1:] and abs(a.shape[0] - b.shape[0]) == 1:
        larger, smaller = (a, b) if a.shape[0] > b.shape[0] else (b, a)
        row = add_remove_rows(larger, smaller, argument)
        return NeighbouringPair(a, b, why=f"{given} (record {row} added/removed)")
    if a.shape != b.shape:
        raise InputError(f"{label}: the two databases must have the same shape (n, k) (replace-one neighbours) or "
                         f"n and n − 1 rows (add/remove neighbours), got {a.shape} and {b.shape}")
    differing = np.flatnonzero(rows_differ(a, b))
    if len(differing) == 0:
        raise InputError(_EQUAL.format(label=label))
    if len(differing) > 1:
        raise InputError(f"{label}: the databases differ in records {differing.tolist()}; neighbours differ in exactly "
                         "one record (replace-one) or by one record added or removed (add/remove)")
    return NeighbouringPair(a, b, why=f"{given} (record {int(differing[0])} replaced)")


def refuse_equal_pair(pair: NeighbouringPair, argument: str) -> NeighbouringPair:
    """``pair``, a :class:`NeighbouringPair` a user built, unless its two databases are equal.

    A :class:`NeighbouringPair` holds databases that differ in at most one record; one a user
    gives must differ (:func:`checked_pair`, whose message this is).

    Raises
    ------
    InputError
        Naming ``argument`` when ``pair.first`` equals ``pair.second``.
    """
    if same_databases(pair.first, pair.second):
        raise InputError(_EQUAL.format(label=f"argument '{argument}'"))
    return pair
