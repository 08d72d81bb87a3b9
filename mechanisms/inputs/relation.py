"""Neighbouring relations: which databases a DP-family claim calls neighbours.

=================  ============================================================================
``replace-one``    databases of n records that differ in one record (bounded DP; n fixed)
``add-remove``     databases that differ by one record present in one and absent from the other
                   (unbounded DP; n and n − 1 records)
``replace:K``      databases of n records that differ in up to K records (user-level, bounded)
``add-remove:K``   one database is the other with up to K of its records removed (user-level,
                   unbounded; n and n − j records, 1 ≤ j ≤ K)
=================  ============================================================================

``replace:1`` is ``replace-one`` and ``add-remove:1`` is ``add-remove`` (:func:`check_relation`
writes every relation in its one form). A relation at distance K is a user-level relation: a
claim stated for it bounds every pair of databases at distance at most K (a user who contributes
up to K records); a claim stated per record is converted to it by group privacy
(:mod:`mechanisms.claims.conversion`).

A claim carries its relation (:attr:`mechanisms.claims.claim.Claim.relation`). An audit's neighbouring
pairs have one relation too; where the two differ, :func:`convert_claim` turns the claim into one
about the audited pairs where a theorem allows it, and otherwise says why it cannot:

- add/remove → replace-one: replacing a record is removing it and adding another, two add/remove
  steps, so *group privacy* for groups of 2 applies: ε-DP ⇒ 2ε-DP, (ε, δ)-DP ⇒ (2ε, (1 + e^ε)δ)-DP
  (Dwork and Roth 2014, Theorem 2.2; Vadhan 2017, Lemma 2.2, whose proof chains the two steps:
  P[M(x) ∈ S] ≤ e^ε(e^ε P[M(x′) ∈ S] + δ) + δ, tighter than the lemma's stated k e^{kε} δ), ρ-zCDP ⇒ 4ρ-zCDP (Bun and Steinke 2016,
  Proposition 1.9: k²ρ for groups of k), μ-GDP ⇒ 2μ-GDP (Dong, Roth and Su 2022, Theorem 2.14:
  kμ for groups of k), (α, ε)-RDP with α ≥ 4 ⇒ (α/2, 3ε)-RDP (Mironov 2017, Proposition 2 with
  c = 1: a 2-stable transformation at α ≥ 2^{c+1} gives (α/2^c, 3^c ε)); an RDP claim at α < 4 is
  refused (the group bound needs a higher order);
- replace-one → add/remove: refused. On unbounded data a replace-one claim says nothing about
  adding or removing a record (a mechanism that releases n is 0-DP under replace-one);
- local DP and the MI notions are defined under replace-one only;
- to a distance K: a pair at distance K is a chain of g pairs at the claim's distance, g steps of
  group privacy (the same theorems for groups of g); see :func:`group_steps`.

Add/remove pairs are audited with a *presence column*: every database gets one more attribute,
1 for a present record and 0 for an absent one, so the two databases of an add/remove pair have
the same shape, (n, k + 1), and differ in one record, as the audit's machinery expects.
:func:`split_by_presence` gives the mechanism runner each group of databases with the same
present records, which it runs as its own batch of (m, n′, k): the mechanism never sees absent
records nor the column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError

from mechanisms.inputs.missing_values import rows_differ
from mechanisms.inputs.priors import Prior, TwoPoint

__all__ = [
    "ADD_REMOVE", "GroupPairPrior", "GroupPresencePairPrior", "RELATIONS", "RELATION_SYNTAX", "REPLACE_ONE", "PresencePairPrior", "PresentRecords", "add_remove_rows", "check_relation",
    "group_steps", "presence_pair", "removed_rows", "relation_at", "relation_distance", "relation_kind", "relation_words", "split_by_presence", "with_presence",
]

REPLACE_ONE = "replace-one"
ADD_REMOVE = "add-remove"
RELATIONS = (REPLACE_ONE, ADD_REMOVE)

#: How a relation is written, for help and errors.
RELATION_SYNTAX = "replace-one, add-remove, replace:K or add-remove:K (K >= 1 records)"

_WORDS = {REPLACE_ONE: "replace one record (n fixed)", ADD_REMOVE: "add or remove one record (n varies)"}
_WORDS_AT = {REPLACE_ONE: "replace up to {k} records (n fixed)", ADD_REMOVE: "add or remove up to {k} records (n varies)"}
# The written prefix of each kind at a distance K (``replace:K``; ``replace-one:K`` reads as well).
_PREFIXES = {"replace": REPLACE_ONE, REPLACE_ONE: REPLACE_ONE, ADD_REMOVE: ADD_REMOVE}


def _parsed(value) -> tuple | None:
    """(kind, distance) of a written relation, or None when it is not one."""
    if not isinstance(value, str):
        return None
    if value in RELATIONS:
        return value, 1
    prefix, colon, count = value.partition(":")
    if not colon or prefix not in _PREFIXES or not count.isascii() or not count.isdigit() or int(count) < 1:
        return None
    return _PREFIXES[prefix], int(count)


def relation_at(kind: str, distance: int) -> str:
    """The relation of ``kind`` (``replace-one`` or ``add-remove``) at ``distance`` records, in its one
    written form: the kind itself at distance 1, ``replace:K`` or ``add-remove:K`` beyond."""
    if distance == 1:
        return kind
    return f"{'replace' if kind == REPLACE_ONE else ADD_REMOVE}:{int(distance)}"


def check_relation(value, argument: str = "relation") -> str:
    """``value`` in its one written form if it is a relation (``replace:1`` is ``replace-one``), else one
    error naming ``argument``."""
    parsed = _parsed(value)
    if parsed is None:
        raise InputError(f"argument '{argument}' must be one of {RELATION_SYNTAX}, got {value!r}")
    return relation_at(*parsed)


def relation_kind(relation: str) -> str:
    """``replace-one`` or ``add-remove``: the kind of ``relation`` whatever its distance (whether the
    databases keep their n records, or a presence column tells present records from absent ones)."""
    return _parsed(check_relation(relation))[0]


def relation_distance(relation: str) -> int:
    """How many records neighbours under ``relation`` may differ in (1 for ``replace-one`` and ``add-remove``)."""
    return _parsed(check_relation(relation))[1]


def group_steps(stated: str, audited: str) -> int | None:
    """How many neighbours under ``stated`` chain into one pair under ``audited`` (the group size of group
    privacy), or None when no chain does (a replace claim says nothing about adding or removing records).

    - same kind, distances a (stated) and b (audited): ⌈b / a⌉ (a pair at distance ≤ b is a chain
      of ⌈b / a⌉ pairs at distance ≤ a: change the records a at a time);
    - add-remove:a stated, replace:b audited: 2 ⌈b / a⌉ (replacing b records is removing them,
      ⌈b / a⌉ steps, then adding the new ones, ⌈b / a⌉ steps).
    """
    (stated_kind, a), (audited_kind, b) = _parsed(check_relation(stated)), _parsed(check_relation(audited))
    steps = -(-b // a)
    if stated_kind == audited_kind:
        return steps
    return 2 * steps if stated_kind == ADD_REMOVE else None


def relation_words(relation: str) -> str:
    """The relation in words, e.g. ``"add or remove one record (n varies)"``, ``"replace up to 3 records (n fixed)"``."""
    kind, distance = _parsed(check_relation(relation))
    return _WORDS[kind] if distance == 1 else _WORDS_AT[kind].format(k=distance)


# -- the presence column --------------------------------------------------------------------

def with_presence(db: np.ndarray, present=True) -> np.ndarray:
    """``db`` of shape (n, k) with a presence column appended: (n, k + 1), 1 where ``present``."""
    db = np.asarray(db, dtype=np.float64)
    flags = np.broadcast_to(np.asarray(present, dtype=np.float64), db.shape[:1]).reshape(-1, 1)
    return np.concatenate([db, flags], axis=1)


def add_remove_rows(larger: np.ndarray, smaller: np.ndarray, argument: str) -> int:
    """The row of ``larger`` (n rows) whose removal gives ``smaller`` (n − 1 rows, same order).

    Raises
    ------
    InputError
        Naming ``argument`` when no single row's removal gives ``smaller``.
    """
    return int(removed_rows(larger, smaller, argument, ADD_REMOVE)[0])


def removed_rows(larger: np.ndarray, smaller: np.ndarray, argument: str, relation: str) -> np.ndarray:
    """The rows of ``larger`` (n rows) whose removal gives ``smaller`` (n − j rows, the rest in the same order),
    1 ≤ j ≤ the distance of ``relation`` (an add/remove relation).

    The rows are found by matching ``smaller`` in order against ``larger`` (greedy subsequence matching:
    a row of ``larger`` that equals the next unmatched row of ``smaller`` is kept); when ``smaller`` is
    ``larger`` without some rows, the greedy match finds such rows.

    Raises
    ------
    InputError
        Naming ``argument`` when the shapes are not n and n − j rows of one width, the smaller database
        is empty, j is above the relation's distance, or no removal of j rows gives ``smaller``.
    """
    most = relation_distance(relation)
    removed = larger.shape[0] - smaller.shape[0]
    if not 1 <= removed or larger.shape[1:] != smaller.shape[1:]:
        raise InputError(f"argument '{argument}': add/remove neighbours have n and n − 1 rows of the same width, got "
                         f"{larger.shape} and {smaller.shape}")
    if removed > most:
        raise InputError(f"argument '{argument}': the databases have {larger.shape[0]} and {smaller.shape[0]} rows, "
                         f"{removed} records added/removed; neighbours under {relation} differ by at most {most} "
                         f"(the relation add-remove:{removed} admits them)")
    if smaller.shape[0] == 0:
        raise InputError(f"argument '{argument}': the smaller database is empty; add/remove pairs need at least one "
                         "record in each database")
    rows, matched = [], 0
    for i in range(larger.shape[0]):
        if matched < smaller.shape[0] and np.array_equal(larger[i], smaller[matched], equal_nan=True):  # NaN: a missing value
            matched += 1
        else:
            rows.append(i)
    if matched < smaller.shape[0]:
        what = "one row" if removed == 1 else f"{removed} rows"
        raise InputError(f"argument '{argument}': the databases are not add/remove neighbours: removing {what} of the "
                         f"larger ({larger.shape[0]} rows) does not give the smaller (rows in the same order)")
    return np.asarray(rows[:removed], dtype=np.int64)


def presence_pair(first: np.ndarray, second: np.ndarray, record: int) -> tuple:
    """An add/remove pair of presence-column databases from a pair that differs in ``record``.

    A pair where the record is present in one and absent from the other (with the same values)
    is returned as it is; any other (a replacement: present in both with different values) becomes
    ``first`` against ``first`` with the record absent, the add/remove pair of the first database.
    """
    first, second = np.array(first, dtype=np.float64), np.array(second, dtype=np.float64)
    present = first[record, -1] != 0, second[record, -1] != 0
    if present[0] != present[1] and np.array_equal(first[record, :-1], second[record, :-1], equal_nan=True):
        return first, second
    base = first if present[0] or not present[1] else second
    absent = base.copy()
    absent[record, -1] = 0.0
    present_db = base.copy()
    present_db[record, -1] = 1.0
    return present_db, absent


def split_by_presence(batch: np.ndarray) -> list:
    """``(indices, rows)`` for each group of databases of ``batch`` (m, n, k + 1) with the same present records.

    ``rows`` are the present records' indices; the runner runs ``batch[indices][:, rows, :-1]`` as
    one batch. Raises :class:`InputError` for a presence flag other than 0 or 1, or a database with
    no record present.
    """
    flags = batch[:, :, -1]
    if not np.all((flags == 0) | (flags == 1)):
        raise InputError("the presence column (the last attribute of an add/remove audit's databases) must hold 0 "
                         "or 1")
    # Rows of presence flags compared as packed bytes: np.unique(flags == 1, axis=0) sorts rows of n
    # booleans element by element (179 s for 2,000 databases of 50,000 records; this: about 1 s). Bytes
    # compare as the flags do (the first record in the highest bit), so the groups keep that order.
    packed = np.ascontiguousarray(np.packbits(flags == 1, axis=1))
    keys, inverse = np.unique(packed.view(np.dtype((np.void, packed.shape[1]))).ravel(), return_inverse=True)
    patterns = np.unpackbits(keys.view(np.uint8).reshape(len(keys), -1), axis=1, count=flags.shape[1]).astype(bool)
    groups = []
    for g, pattern in enumerate(patterns):
        if not pattern.any():
            raise InputError("a database of the add/remove audit has no record present; the mechanism needs at least "
                             "one")
        groups.append((np.flatnonzero(inverse.reshape(-1) == g), np.flatnonzero(pattern)))
    return groups


@dataclass(frozen=True, eq=False)
class PresencePairPrior(TwoPoint):
    """The two-point prior on an add/remove pair held with a presence column (its last attribute)."""

    presence_column = True

    def describe(self) -> str:
        return (f"two-point records on {self.n}x{self.k - 1} databases plus a presence column (add/remove), "
                f"P(second) {', '.join(sorted({f'{v:g}' for v in self.p}))}")


@dataclass(frozen=True, eq=False)
class GroupPairPrior(TwoPoint):
    """The uniform two-point prior on a pair of databases that differ in several records (a user-level pair).

    :class:`~mechanisms.inputs.priors.TwoPoint` switches each record on its own, which on such a pair
    would draw databases that are neither of the two; this prior draws ``second`` whole with probability
    ``p`` (one draw per database, the same for every record) and ``first`` otherwise, so its records are
    not independent.
    """

    independent_rows = False

    def __post_init__(self):
        super().__post_init__()
        if len(np.unique(self.p)) != 1:
            raise InputError("argument 'p' of a group pair prior must be one probability for the whole database")

    @property
    def independent_columns(self) -> bool:
        return False

    def _sample(self, m, rng):
        chosen = rng.random(m) < self.p[0]
        return np.where(chosen[:, None, None], self.second[None], self.first[None])

    @property
    def records_changed(self) -> int:
        """How many records the two databases differ in (a missing value in both places is no difference)."""
        return int(np.count_nonzero(rows_differ(self.first, self.second)))

    def describe(self) -> str:
        return (f"two databases of {self.n}x{self.k} that differ in {self.records_changed} records, "
                f"P(second) {self.p[0]:g}")


@dataclass(frozen=True, eq=False)
class GroupPresencePairPrior(GroupPairPrior):
    """:class:`GroupPairPrior` on an add/remove pair at a distance above 1 held with a presence column."""

    presence_column = True

    def describe(self) -> str:
        return (f"two databases of {self.n}x{self.k - 1} plus a presence column (add/remove) with "
                f"{self.records_changed} records present vs absent, P(second) {self.p[0]:g}")


@dataclass(frozen=True, eq=False)
class PresentRecords(Prior):
    """A prior's databases with every record present: draws of ``prior`` with a presence column of ones.

    Under add/remove, the records a declared prior draws are present; the audit's add/remove pairs
    (:func:`presence_pair`) then take one of them out.
    """

    prior: Prior

    name = "present-records"
    presence_column = True

    def __post_init__(self):
        n, k = self.prior.shape
        object.__setattr__(self, "shape", (n, k + 1))

    @property
    def draws_only_from_rng(self):
        return getattr(self.prior, "draws_only_from_rng", False)

    @property
    def first_seconds(self):
        return getattr(self.prior, "first_seconds", None)

    @property
    def discrete(self):
        return self.prior.discrete

    @property
    def independent_rows(self):
        return self.prior.independent_rows

    @property
    def independent_columns(self):
        return self.prior.independent_columns

    def _sample(self, m, rng):
        dbs = np.asarray(self.prior(m, rng), dtype=np.float64)
        return np.concatenate([dbs, np.ones(dbs.shape[:2] + (1,))], axis=2)

    def describe(self) -> str:
        return f"{self.prior.describe()}, every record present (add/remove presence column)"
