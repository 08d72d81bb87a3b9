"""A neighbouring pair of databases that exposes a mechanism.

An MI audit sees a DP violation when the secret is *which* of two neighbouring databases
was used: with the database uniform on the pair, I(secret; output) is the Jensen–Shannon
divergence between the two output laws, which a mechanism that separates them too well
makes large. :meth:`NeighbouringPair.prior` is that uniform two-point prior.

Two databases of the same shape that differ in one record are replace-one neighbours; two whose
row counts differ by one, the smaller being the larger without one of its rows, are add/remove
neighbours (:mod:`mechanisms.inputs.relation`), held with a presence column so that both have the
shape (n, k + 1). Under a relation at a distance K (``replace:K``, ``add-remove:K``: user-level
neighbours) the databases may differ in up to K records, or the smaller may be the larger without
up to K of its rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.validation import InputError, as_float64
from mechanisms.inputs.missing_values import check_missing_values, rows_differ, same_databases
from mechanisms.inputs.priors import TwoPoint
from mechanisms.inputs.relation import (ADD_REMOVE, REPLACE_ONE, GroupPairPrior, GroupPresencePairPrior, PresencePairPrior,
                                        check_relation, relation_at, relation_distance, relation_kind, removed_rows,
                                        with_presence)

__all__ = ["NeighbouringPair", "checked_pair", "refuse_equal_pair"]


def _database(value, label: str, allow_nan: bool = False) -> np.ndarray:
    arr = as_float64(value, label, copy=True)
    if arr.ndim != 2 or 0 in arr.shape:
        raise InputError(f"{label} must have shape (n, k) with n, k >= 1, got shape {arr.shape}")
    check_missing_values(arr, label, allow_nan)
    arr.setflags(write=False)
    return arr


def _too_far(label: str, rows, relation: str) -> InputError:
    """The error for databases of one shape that differ in more records than ``relation`` admits."""
    rows = [int(r) for r in rows]
    most = relation_distance(relation)
    return InputError(f"{label}: the databases differ in records {rows}; neighbours under {relation} differ in at most "
                      f"{'one record' if most == 1 else f'{most} records'} (the user-level relation "
                      f"replace:{len(rows)} admits {len(rows)})")


@dataclass(frozen=True, eq=False)
class NeighbouringPair:
    """Two neighbouring databases and why they expose a mechanism.

    A NaN in a database is a missing value (:mod:`mechanisms.inputs.missing_values`): the pair holds it (the
    declared domain's missing-value family builds such pairs); a pair a user gives may hold one only with
    ``--allow-nan`` (:func:`checked_pair`), and an audit takes one only with ``AuditSpec(allow_nan=True)``.

    Attributes
    ----------
    first, second : ndarray
        The two databases (read-only copies): of one shape ``(n, k)`` (replace neighbours),
        or of ``n`` and ``n − j`` rows (add/remove neighbours; held as ``(n, k + 1)`` with a
        presence column, :func:`mechanisms.inputs.relation.with_presence`).
    why : str
        What the pair exposes (e.g. the event whose probability ratio exceeds e^ε).
    relation : str, optional
        Given: the relation under which the databases are neighbours, whose distance K bounds how
        many records they may differ in (default 1: ``replace-one`` or ``add-remove``). Held: the
        kind read from the shapes (same row counts: replace; n and n − j rows: add/remove) at that
        distance, e.g. ``"replace-one"``, ``"add-remove"``, ``"replace:3"``.

    Raises
    ------
    InputError
        When the databases differ in more records than the relation's distance admits (naming
        ``first`` and ``second``), or ``relation`` is not a relation.
    """

    first: np.ndarray
    second: np.ndarray
    why: str = ""
    relation: str | None = None

    def __post_init__(self):
        distance = 1 if self.relation is None else relation_distance(check_relation(self.relation, "relation"))
        first = _database(self.first, "argument 'first'", allow_nan=True)
        second = _database(self.second, "argument 'second'", allow_nan=True)
        kind = REPLACE_ONE
        removed = abs(first.shape[0] - second.shape[0])
        if 1 <= removed <= distance and first.shape[1] == second.shape[1]:
            larger, smaller = (first, second) if first.shape[0] > second.shape[0] else (second, first)
            rows = removed_rows(larger, smaller, "first, second", relation_at(ADD_REMOVE, distance))
            present = with_presence(larger)
            absent = present.copy()
            absent[rows, -1] = 0.0
            first, second = (present, absent) if larger is first else (absent, present)
            first.setflags(write=False)
            second.setflags(write=False)
            kind = ADD_REMOVE
        if first.shape != second.shape:
            hint = f" (add-remove:{removed} admits {removed} records removed)" if removed > distance else ""
            raise InputError(f"arguments 'first' and 'second' must have the same shape, "
                             f"got {first.shape} and {second.shape}{hint}")
        differing = np.flatnonzero(rows_differ(first, second))
        if len(differing) > distance:
            raise _too_far("arguments 'first' and 'second'", differing, relation_at(kind, distance))
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "second", second)
        object.__setattr__(self, "relation", relation_at(kind, distance))

    @property
    def record_shape(self) -> tuple[int, int]:
        """``(n, k)``, with the presence column for an add/remove pair."""
        return self.first.shape

    @property
    def database_shape(self) -> tuple[int, int]:
        """The larger database's shape as given, ``(n, k)`` (without a presence column)."""
        n, k = self.first.shape
        return (n, k - 1) if relation_kind(self.relation) == ADD_REMOVE else (n, k)

    def prior(self) -> TwoPoint:
        """Prior ``prior(m, rng) -> (m, n, k)`` drawing ``first`` or ``second`` with probability 1/2 each.

        A pair that differs in one record: the per-record two-point prior of
        :mod:`mechanisms.inputs.priors` with P(second) = 1/2 switches exactly that record (for an
        add/remove pair, its presence flag). A pair that differs in several records (a user-level
        relation): :class:`~mechanisms.inputs.relation.GroupPairPrior`, which switches them together.
        """
        presence = relation_kind(self.relation) == ADD_REMOVE
        if np.count_nonzero(rows_differ(self.first, self.second)) > 1:
            return (GroupPresencePairPrior if presence else GroupPairPrior)(self.first, self.second, p=0.5)
        return (PresencePairPrior if presence else TwoPoint)(self.first, self.second, p=0.5)

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return fields_to_dict(self)


_EQUAL = "{label}: the two databases are equal; a neighbouring pair differs in one record"


def checked_pair(first, second, argument: str, given: str, relation: str | None = None,
                 allow_nan: bool = False) -> NeighbouringPair:
    """Two databases a user gave as neighbours (``--pair``, ``[[pairs]]``, ``assert_claim(pairs=...)``), checked.

    :class:`NeighbouringPair` itself admits two equal databases (the pair families build them); a
    pair a user gives must be neighbours that differ: two equal databases give no power, so an
    audit of them would pass any mechanism.

    Parameters
    ----------
    first, second : array_like
        The databases: one shape ``(n, k)`` (replace) or ``n`` and ``n − j`` rows, the smaller
        being the larger without j rows (add/remove).
    argument : str
        The argument's name in errors (``--pair``, ``pairs[0]``).
    given : str
        Where the pair came from, for the pair's ``why``.
    relation : str, optional
        The relation whose distance K bounds the records the databases may differ in (default 1;
        :mod:`mechanisms.inputs.relation`).
    allow_nan : bool
        Whether the databases may hold NaN (missing values; ``--allow-nan``).

    Raises
    ------
    InputError
        Naming ``argument`` when a database is not numeric of shape ``(n, k)``, the shapes are
        neither equal nor ``n`` and ``n − j`` rows, the databases are equal, or they differ in
        more than K records (or by more than K removed rows).
    """
    label = f"argument '{argument}'"
    distance = 1 if relation is None else relation_distance(check_relation(relation, "relation"))
    a = _database(first, f"{label} (first database)", allow_nan)
    b = _database(second, f"{label} (second database)", allow_nan)
    if a.shape[1:] == b.shape[1:] and a.shape[0] != b.shape[0]:
        larger, smaller = (a, b) if a.shape[0] > b.shape[0] else (b, a)
        rows = removed_rows(larger, smaller, argument, relation_at(ADD_REMOVE, distance))
        which = f"record {int(rows[0])}" if len(rows) == 1 else f"records {rows.tolist()}"
        return NeighbouringPair(a, b, why=f"{given} ({which} added/removed)", relation=relation)
    if a.shape != b.shape:
        raise InputError(f"{label}: the two databases must have the same shape (n, k) (replace-one neighbours) or "
                         f"n and n − 1 rows (add/remove neighbours), got {a.shape} and {b.shape}")
    differing = np.flatnonzero(rows_differ(a, b))
    if len(differing) == 0:
        raise InputError(_EQUAL.format(label=label))
    if len(differing) > distance:
        raise _too_far(label, differing, relation_at(REPLACE_ONE, distance))
    which = f"record {int(differing[0])}" if len(differing) == 1 else f"records {differing.tolist()}"
    return NeighbouringPair(a, b, why=f"{given} ({which} replaced)", relation=relation)


def refuse_equal_pair(pair: NeighbouringPair, argument: str) -> NeighbouringPair:
    """``pair``, a :class:`NeighbouringPair` a user built, unless its two databases are equal.

    A :class:`NeighbouringPair` holds databases that differ in at most K records; one a user
    gives must differ (:func:`checked_pair`, whose message this is).

    Raises
    ------
    InputError
        Naming ``argument`` when ``pair.first`` equals ``pair.second``.
    """
    if same_databases(pair.first, pair.second):
        raise InputError(_EQUAL.format(label=f"argument '{argument}'"))
    return pair
