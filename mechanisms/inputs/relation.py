"""Neighbouring relations: which databases a DP-family claim calls neighbours.

=================  ============================================================================
``replace-one``    databases of n records that differ in one record (bounded DP; n fixed)
``add-remove``     databases that differ by one record present in one and absent from the other
                   (unbounded DP; n and n − 1 records)
=================  ============================================================================

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
- local DP and the MI notions are defined under replace-one only.

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

from mechanisms.inputs.priors import Prior, TwoPoint

__all__ = [
    "ADD_REMOVE", "RELATIONS", "REPLACE_ONE", "PresencePairPrior", "PresentRecords", "add_remove_rows", "check_relation", "presence_pair", "relation_words", "split_by_presence", "with_presence",
]

REPLACE_ONE = "replace-one"
ADD_REMOVE = "add-remove"
RELATIONS = (REPLACE_ONE, ADD_REMOVE)

_WORDS = {REPLACE_ONE: "replace one record (n fixed)", ADD_REMOVE: "add or remove one record (n varies)"}


def check_relation(value, argument: str = "relation") -> str:
    """``value`` if it is a relation's name, else one error naming ``argument``."""
    if value not in RELATIONS:
        raise InputError(f"argument '{argument}' must be one of {', '.join(RELATIONS)}, got {value!r}")
    return value


def relation_words(relation: str) -> str:
    """The relation in words, e.g. ``"add or remove one record (n varies)"``."""
    return _WORDS[check_relation(relation)]


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
    if larger.shape[0] != smaller.shape[0] + 1 or larger.shape[1:] != smaller.shape[1:]:
        raise InputError(f"argument '{argument}': add/remove neighbours have n and n − 1 rows of the same width, got "
                         f"{larger.shape} and {smaller.shape}")
    if smaller.shape[0] == 0:
        raise InputError(f"argument '{argument}': the smaller database is empty; add/remove pairs need at least one "
                         "record in each database")
    from mechanisms.inputs.missing_values import rows_differ, same_databases  # NaN (a missing value) equals NaN

    differ = np.flatnonzero(rows_differ(larger[:-1], smaller))
    row = int(differ[0]) if len(differ) else smaller.shape[0]  # the first row that differs, else the last
    if not same_databases(np.delete(larger, row, axis=0), smaller):
        raise InputError(f"argument '{argument}': the databases are not add/remove neighbours: removing one row of the "
                         f"larger ({larger.shape[0]} rows) does not give the smaller (rows in the same order)")
    return row


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
