"""Families of neighbouring pairs built from a declared input domain.

A DP guarantee holds for every pair of neighbouring databases of the mechanism's domain; the pairs
that break a wrong one are rarely the ones a prior draws. Published DP testers try structured
inputs before random ones (Ding et al. 2018, StatDP; Bichsel et al. 2021, DP-Sniper), and the
bugs found in libraries sit at structured places of the domain: records at its two ends (a clamp
wider than the noise covers), values a few representable steps from the ends (OpenDP issue #2923:
``make_sum_of_squared_deviations`` on records in [2⁵⁰, 2⁵⁰ + 1], where "all records at a, one record
a vs b" changes the rounding of the mean and the sum by more than the stated sensitivity), a record
duplicating another (deduplication, distinct counts), one attribute of a record changed against the
whole record (per-attribute sensitivities), and, under add/remove, the empty and one-record
databases (a count's or a mean's edge cases). :func:`domain_pair_families` builds these as named
families of :class:`~mechanisms.inputs.neighbouring_pair.NeighbouringPair`; further families (a
scan profile's label present against absent, an optional per-record argument) are passed in
``extra`` and treated alike.

The families only propose pairs. An audit scores them on pilot runs and keeps the best
(:mod:`audit.search.family_pilot`); the kept pair is certified on fresh runs, so the choice among
families costs no α (Ding et al. 2018; the event search's rule, :mod:`audit.search.event_search`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, check_int
from mechanisms.inputs.missing_values import rows_differ
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.inputs.relation import (ADD_REMOVE, REPLACE_ONE, check_relation, presence_pair, relation_distance,
                                        relation_kind, with_presence)

__all__ = ["PairFamily", "domain_pair_families", "representable_levels"]


@dataclass(frozen=True)
class PairFamily:
    """A named family of candidate neighbouring pairs.

    Attributes
    ----------
    name : str
        What the family is, in words ("domain ends", "grid near the ends", ...).
    pairs : tuple of NeighbouringPair
        Its pairs, in order of preference.
    """

    name: str
    pairs: tuple

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"argument 'name' of a pair family must be a non-empty string, got {self.name!r}")
        pairs = tuple(self.pairs)
        if not all(isinstance(p, NeighbouringPair) for p in pairs):
            raise InputError(f"argument 'pairs' of pair family {self.name!r} must hold NeighbouringPair objects")
        object.__setattr__(self, "pairs", pairs)


def _steps_from(value: float, towards: float, steps: int, integer: bool) -> list:
    """``steps`` successive representable values from ``value`` towards ``towards`` (integers step by 1)."""
    out, current = [], value
    for _ in range(steps):
        current = current + np.sign(towards - value) if integer else float(np.nextafter(current, towards))
        out.append(current)
    return out


def representable_levels(low: float, high: float, steps: int = 2, integer: bool = False) -> np.ndarray:
    """The grid of one attribute: its two ends, the ``steps`` representable values next to each end
    (the next float64, :func:`numpy.nextafter`, or the next integer), and the midpoint, sorted and
    without repeats, all within [low, high].

    A domain [2⁵⁰, 2⁵⁰ + 1] holds five float64 values (the spacing there is 2⁻²), so with ``steps = 2``
    its grid is all of them; [0, 1] gives 0, 5e-324, 1e-323, 0.5, 1 − 2.2e-16, 1 − 1.1e-16 and 1.
    """
    low, high = float(low), float(high)
    if not (np.isfinite(low) and np.isfinite(high)) or low > high:
        raise InputError(f"argument 'domain' must be a bounded range LOW <= HIGH for a grid, got [{low:g}, {high:g}]")
    middle = low + (high - low) / 2
    values = [low, high, float(np.floor(middle)) if integer else middle]
    if high > low:
        values += _steps_from(low, high, steps, integer) + _steps_from(high, low, steps, integer)
    values = np.unique(np.asarray(values, dtype=np.float64))
    return values[(values >= low) & (values <= high)]


def _grid_rows(lows: np.ndarray, highs: np.ndarray, steps: int, integer: bool) -> np.ndarray:
    """Rows (g, k) of the grid: row i holds each attribute's i-th level (the last level where it has fewer),
    without repeats."""
    levels = [representable_levels(a, b, steps, integer) for a, b in zip(lows, highs)]
    size = max(len(v) for v in levels)
    rows = np.array([[v[min(i, len(v) - 1)] for v in levels] for i in range(size)], dtype=np.float64)
    return np.unique(rows, axis=0)


def _pair(base: np.ndarray, record: int, value: np.ndarray, why: str, first_value=None) -> NeighbouringPair:
    """``base`` with ``record`` at ``first_value`` (default: as in ``base``) against it at ``value``."""
    first, second = base.copy(), base.copy()
    if first_value is not None:
        first[record] = first_value
    second[record] = value
    return NeighbouringPair(first, second, why=why)


def _replace_one_families(lows, highs, n: int, k: int, steps: int, integer: bool) -> list:
    """The replace-one families of :func:`domain_pair_families`."""
    at_low, at_high = np.tile(lows, (n, 1)), np.tile(highs, (n, 1))
    families = [PairFamily("domain ends", (
        _pair(at_low, 0, highs, "domain ends: record 0 at the low end vs the high end, the others at the low end"),
        _pair(at_high, 0, lows, "domain ends: record 0 at the high end vs the low end, the others at the high end")))]
    rows = _grid_rows(lows, highs, steps, integer)
    families.append(PairFamily("grid near the ends", tuple(
        _pair(np.tile(a, (n, 1)), 0, b, f"grid near the ends: all records at a = {_row_text(a)}, record 0 a vs "
                                        f"b = {_row_text(b)}")
        for i, a in enumerate(rows) for j, b in enumerate(rows) if i != j)))
    if k > 1:
        whole = [_pair(at_low, 0, highs, "whole record: every attribute of record 0 at the low end vs the high end")]
        single = []
        for column in range(k):
            row = lows.copy()
            row[column] = highs[column]
            single.append(_pair(at_low, 0, row, f"one attribute: attribute {column} of record 0 at the low end vs the "
                                               "high end, everything else at the low end"))
        families.append(PairFamily("whole record vs one attribute", tuple(whole + single)))
    if n > 1:
        duplicates = []
        for a, b, ends in ((lows, highs, "low end, record 1 at the high end"),
                           (highs, lows, "high end, record 1 at the low end")):
            base = np.tile(a, (n, 1))
            base[1] = b
            duplicates.append(_pair(base, 0, b, f"duplicates: record 0 a vs a copy of record 1 (the others at the "
                                                f"{ends})"))
        families.append(PairFamily("duplicates", tuple(duplicates)))
    return families


def _missing_value_families(lows, highs, n: int, k: int) -> list:
    """With ``--allow-nan``: a missing value (NaN) next to present ones. Record 0 missing vs at each end, the
    others at that end; record 0 present at each end vs missing, every other record missing (many missing
    values and one present: a mean that imputes or rescales by the count of present values); for k > 1, one
    attribute of record 0 missing vs at the low end."""
    missing_row, pairs = np.full(k, np.nan), []
    for row, end in ((lows, "low"), (highs, "high")):
        pairs.append(_pair(np.tile(row, (n, 1)), 0, missing_row, f"missing value: record 0 at the {end} end vs "
                                                                 f"missing, the others at the {end} end"))
    for row, end in ((lows, "low"), (highs, "high")):
        pairs.append(_pair(np.full((n, k), np.nan), 0, row, f"missing values: every record missing, record 0 "
                                                            f"missing vs present at the {end} end"))
    for column in range(k if k > 1 else 0):
        row = lows.copy()
        row[column] = np.nan
        pairs.append(_pair(np.tile(lows, (n, 1)), 0, row, f"missing value: attribute {column} of record 0 at the "
                                                         "low end vs missing, everything else at the low end"))
    return [PairFamily("missing value next to present ones", tuple(pairs))]


def _row_text(row: np.ndarray) -> str:
    """A record's values in full (2⁵⁰ + 0.25 reads 1125899906842624.2, not 1.1259e+15)."""
    from audit.search.input_domain import number_text

    return "[" + ", ".join(number_text(float(v)) for v in np.ravel(row)) + "]"


def _as_add_remove(family: PairFamily) -> PairFamily:
    """A replace-one family as add/remove pairs: each of its databases' changed record present against absent
    (:func:`mechanisms.inputs.relation.presence_pair`), without repeats."""
    out, seen = [], set()
    for pair in family.pairs:
        record = int(np.flatnonzero(rows_differ(pair.first, pair.second))[0])
        for database in (pair.first, pair.second):
            present = with_presence(database)
            first, second = presence_pair(present, present, record)
            identity = (first.tobytes(), second.tobytes())
            if identity not in seen:
                seen.add(identity)
                out.append(NeighbouringPair(first, second, why=f"{pair.why}; record {record} present vs absent"))
    return PairFamily(family.name, tuple(out))


def _small_database_families(lows, highs, n: int, steps: int, integer: bool) -> list:
    """Add/remove only: the empty database against one record, and one record against two."""
    rows = _grid_rows(lows, highs, steps, integer)
    empty = with_presence(np.tile(lows, (n, 1)), present=False)
    pairs = []
    for row in rows:
        one = empty.copy()
        one[0, :-1], one[0, -1] = row, 1.0
        absent = one.copy()
        absent[0, -1] = 0.0
        pairs.append(NeighbouringPair(one, absent, why=f"empty database vs one record at {_row_text(row)}"))
    families = [PairFamily("empty vs one record", tuple(pairs))]
    if n > 1:
        pairs = []
        for kept, changed in ((lows, highs), (highs, lows), (lows, lows), (highs, highs)):
            two = empty.copy()
            two[1, :-1], two[0, :-1], two[:2, -1] = kept, changed, 1.0
            one = two.copy()
            one[0, -1] = 0.0
            pairs.append(NeighbouringPair(two, one, why=f"one record ({_row_text(kept)}) vs two (another at "
                                                        f"{_row_text(changed)})"))
        families.append(PairFamily("one record vs two", tuple(pairs)))
    return families


def _group_family(lows, highs, n: int, relation: str) -> list:
    """A user-level relation at a distance K > 1: K records at one end of the domain changed together, the rest
    at the other end; under replace:K the K records move to the other end (both ways), under add-remove:K they
    are present against absent (K at most n − 1, so that a record stays present). Empty when K is 1 or no such
    group fits."""
    distance, add_remove = relation_distance(relation), relation_kind(relation) == ADD_REMOVE
    group = min(distance, n - 1 if add_remove else n)
    if distance == 1 or group < 2:
        return []
    pairs = []
    for base, changed in ((lows, highs), (highs, lows)):
        first = np.tile(base, (n, 1))
        second = first.copy()
        second[:group] = changed
        if add_remove:  # the group at ``changed`` present against absent
            first, second = with_presence(second), with_presence(second)
            second[:group, -1] = 0.0
            why = f"records 0–{group - 1} at {_row_text(changed)} present vs absent, the rest at {_row_text(base)}"
        else:
            why = f"records 0–{group - 1} at {_row_text(base)} vs {_row_text(changed)} together, the rest at " \
                  f"{_row_text(base)}"
        pairs.append(NeighbouringPair(first, second, why=why, relation=relation))
    return [PairFamily(f"{group} records at the ends", tuple(pairs))]


def domain_pair_families(domain, n: int, k: int, relation: str = REPLACE_ONE, *, steps: int = 2,
                         extra=(), allow_nan: bool = False) -> list:
    """Named families of candidate neighbouring pairs over a bounded declared domain.

    Parameters
    ----------
    domain : DeclaredDomain or (float, float)
        The records' domain (:class:`audit.search.input_domain.DeclaredDomain`, one range per attribute
        or one for all), or one ``(low, high)`` range for every attribute. Must be bounded.
    n, k : int
        Records per database and attributes per record (without a presence column).
    relation : str
        The neighbouring relation the pairs follow. Under add/remove every pair is a record present
        against absent, held with a presence column (shape (n, k + 1),
        :mod:`mechanisms.inputs.relation`). Under a user-level relation at a distance K > 1
        (``replace:K``, ``add-remove:K``) a family of K records changed together comes first.
    steps : int
        Representable values next to each end in the grid (:func:`representable_levels`).
    extra : sequence of PairFamily
        Further families (a scan profile's), appended as given; their pairs must have the
        families' shape.
    allow_nan : bool
        Whether the databases may hold NaN, missing values (``--allow-nan``): then the family "missing
        value next to present ones" follows "duplicates" (:func:`_missing_value_families`).

    Returns
    -------
    list of PairFamily
        In order: under a distance K > 1, "K records at the ends" (records 0 to K − 1 at one end vs
        the other, or present vs absent, the rest at the first end); "domain ends" (record 0 at one end vs the other, the rest at the first end); "grid
        near the ends" (all records at a, record 0 a vs b, for a ≠ b on the grid of
        :func:`representable_levels`; OpenDP issue #2923 is such a pair); "whole record vs one
        attribute" (k > 1: record 0's every attribute changed, then each one alone); "duplicates"
        (n > 1: record 0 changed into a copy of record 1); with ``allow_nan``, "missing value next to present
        ones" (record 0 missing vs at an end; every record missing, record 0 present vs missing; one
        attribute missing); under add/remove, each of these with the
        changed record present vs absent, then "empty vs one record" (every grid row) and "one record
        vs two" (n > 1); then ``extra``. Families with no pair are left out.

    Raises
    ------
    InputError
        Naming the argument: an unbounded domain, n or k below 1, a domain with per-attribute
        ranges for another k, an unknown relation, an ``extra`` that is not a PairFamily of the
        families' shape.
    """
    from audit.search.input_domain import DeclaredDomain, domain_from_ranges

    n, k, steps = check_int(n, "n", 1), check_int(k, "k", 1), check_int(steps, "steps", 0)
    relation = check_relation(relation, "relation")
    if not isinstance(domain, DeclaredDomain):
        domain = domain_from_ranges(domain, f"domain {domain!r}")
    if not domain.bounded:
        raise InputError(f"argument 'domain' must be bounded to build pairs at its ends, got {domain.text()} "
                         f"({domain.source})")
    lows, highs = domain.columns(k)
    families = _replace_one_families(lows, highs, n, k, steps, domain.integer)
    if allow_nan is True:
        families += _missing_value_families(lows, highs, n, k)
    add_remove = relation_kind(relation) == ADD_REMOVE
    if add_remove:
        families = [_as_add_remove(f) for f in families] + _small_database_families(lows, highs, n, steps,
                                                                                    domain.integer)
    families = _group_family(lows, highs, n, relation) + families
    shape = (n, k + 1) if add_remove else (n, k)
    for family in extra:
        if not isinstance(family, PairFamily) or any(p.record_shape != shape for p in family.pairs):
            raise InputError(f"argument 'extra' must hold PairFamily objects whose pairs have shape {shape}")
        families.append(family)
    return [family for family in families if family.pairs]
