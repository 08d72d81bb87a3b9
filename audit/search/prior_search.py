"""Prior search for DP semantics: candidate two-point priors on neighbouring databases.

ε-DP (and hence, by Theorem 1 of the Pufferfish paper, min(ε, ε²/2)-MI DP) must hold for every
prior, i.e. Θ is all distributions; a leak found under any member refutes it. A two-point
prior on a neighbouring pair (one record switching between two rows, the rest fixed) puts all
the audit's samples where a DP violation shows. The search only proposes candidates: the
engine chooses among all critics on the validation split and pays for the choice in the union
bound over the candidates it actually built, so adding candidates never breaks the type-I
guarantee. Pairs are de-duplicated (the uniform two-point prior on {a, b} is the one on
{b, a}), so the union bound counts each distinct prior once.
"""

from __future__ import annotations

import warnings

import numpy as np

from estimators.validation import InputError, check_int
from mechanisms.inputs.bounded_draws import draw_bounded
from mechanisms.inputs.missing_values import rows_differ
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.inputs.priors import TwoPoint
from mechanisms.inputs.relation import GroupPairPrior, presence_pair

from estimators.validation import InputWarning

#: The most two-point priors a search may add: each costs ``samples`` mechanism runs and a
#: critic, so a larger search is a mistake rather than a plan.
MAX_PRIOR_SEARCH = 1000

#: Ends the message of a draw that outlived its bound (:func:`~mechanisms.inputs.bounded_draws.draw_bounded`).
_SEARCHING = " drawing databases for the prior search (--prior-search)"


def check_search_count(count) -> int:
    """``count`` as the number of two-point priors a search adds: an integer in [0, MAX_PRIOR_SEARCH].

    Raises
    ------
    InputError
        Naming ``prior_search`` when ``count`` is not an integer, is negative or is above
        :data:`MAX_PRIOR_SEARCH`.
    """
    count = check_int(count, "prior_search", 0)
    if count > MAX_PRIOR_SEARCH:
        raise InputError(f"argument 'prior_search' must be at most {MAX_PRIOR_SEARCH} (each searched prior costs "
                         f"'samples' mechanism runs and a critic), got {count}")
    return count


def differing_record(pair: NeighbouringPair) -> int | None:
    """The record in which the pair's databases differ (None when they are equal)."""
    rows = np.flatnonzero(rows_differ(pair.first, pair.second))  # a NaN (missing value) in both places is no difference
    return int(rows[0]) if len(rows) else None


def _identity(first: np.ndarray, second: np.ndarray) -> tuple:
    """What makes two pairs the same two-point prior: the unordered set of their databases."""
    return first.shape, frozenset((first.tobytes(), second.tobytes()))


def _all_present(databases: np.ndarray, prior) -> np.ndarray:
    """``databases`` with every record present, for a prior with a presence column (an add/remove audit,
    :mod:`mechanisms.inputs.relation`; its draws may hold absent records); else as they are.

    A searched pair is built on databases whose records are all present, so that the add/remove pair
    made from it (:func:`add_remove_pairs`) takes exactly one record out: a pattern built from a
    column's observed low end would otherwise set every record absent.
    """
    if not getattr(prior, "presence_column", False):
        return databases
    present = np.array(databases, dtype=np.float64, copy=True)
    present[..., -1] = 1.0
    return present


def random_pairs(prior, count: int, rng: np.random.Generator, max_tries: int = 200, timeout=None) -> list:
    """Up to ``count`` distinct neighbouring pairs built from ``prior``: one base database, and for
    record j mod n two rows drawn from the prior's record j that differ.

    A record whose two rows yield no new pair in ``max_tries`` draws is taken to have no more
    (a discrete prior has finitely many: n = 4 binary records give 4). When fewer than
    ``count`` distinct pairs are found, an :class:`~estimators.validation.InputWarning` says so
    and the pairs found are returned. Each draw is bounded by ``timeout`` (``--timeout``), else by a multiple
    of the prior's first call's time (:func:`~mechanisms.inputs.bounded_draws.draw_bounded`).
    """
    count = check_search_count(count)
    pairs, seen = [], set()
    if count == 0:
        return pairs
    base = _all_present(draw_bounded(prior, 1, rng, timeout=timeout, where=_SEARCHING), prior)[0]
    exhausted = set()
    record = -1
    while len(pairs) < count and len(exhausted) < prior.n:
        record = (record + 1) % prior.n
        if record in exhausted:
            continue
        for _ in range(max_tries):
            a, b = _all_present(draw_bounded(prior, 2, rng, timeout=timeout, where=_SEARCHING), prior)[:, record]
            if np.any(a != b):
                first, second = base.copy(), base.copy()
                first[record], second[record] = a, b
                identity = _identity(first, second)
                if identity not in seen:
                    seen.add(identity)
                    pairs.append(NeighbouringPair(first, second,
                                                  why=f"random pair from the declared prior, record {record}"))
                    break
        else:
            exhausted.add(record)  # no new pair in max_tries draws: this record has no more
    if len(pairs) < count:
        warnings.warn(f"prior search: {count} two-point priors were asked for, but the declared prior gives only "
                      f"{len(pairs)} distinct neighbouring pair{'' if len(pairs) == 1 else 's'} (one base database, each record switched between "
                      f"two of its values; no new pair in {max_tries} draws per record); auditing those {len(pairs)}",
                      InputWarning, stacklevel=2)
    return pairs


#: Observed database draws from which :func:`structured_pairs` reads each column's range.
RANGE_DRAWS = 1000


def _column_levels(databases: np.ndarray) -> tuple:
    """(low, middle, high) of each column over ``databases`` (m, n, k), as observed values.

    The middle is the observed value nearest the midpoint of the range, so every pattern's
    database holds only values the prior produced (a mechanism may accept nothing else).
    """
    values = databases.reshape(-1, databases.shape[-1])
    low, high = np.fmin.reduce(values, axis=0), np.fmax.reduce(values, axis=0)  # missing values (NaN) left out
    middle = np.empty_like(low)
    for j in range(values.shape[1]):
        column = np.unique(values[:, j])
        column = column[~np.isnan(column)] if not np.isnan(column).all() else column
        middle[j] = column[np.argmin(np.abs(column - (low[j] + high[j]) / 2))]
    return low, middle, high


def record_patterns(low: np.ndarray, middle: np.ndarray, high: np.ndarray) -> list:
    """(name, a, b): the changed record's two rows for the input patterns of StatDP.

    Ding et al. (2018), StatDP's input generator ("one above", "one below", "one above rest below", "one below
    rest above", "half half", "all above", "all below", "X shape"), with a query answer's three
    levels read as each column's observed low, middle and high value: a record's columns are
    what a change of one record adds to the answers of column queries. "extremes" (all low vs
    all high) comes first: the largest change of the record, the usual worst case.
    """
    k = len(low)
    h = max(1, k // 2)

    def mixed(first, rest, split=1):
        row = rest.copy()
        row[:split] = first[:split]
        return row
    return [
        ("extremes", low, high),
        ("one above", middle, mixed(high, middle)),
        ("one below", middle, mixed(low, middle)),
        ("one above rest below", middle, mixed(high, low)),
        ("one below rest above", middle, mixed(low, high)),
        ("half half", middle, mixed(high, low, h)),
        ("all above", middle, high),
        ("all below", middle, low),
        ("X shape", mixed(high, low, h), mixed(low, high, h)),
    ]


def structured_pairs(prior, count: int, rng: np.random.Generator, records=None, observed=None, timeout=None) -> list:
    """Up to ``count`` distinct neighbouring pairs from StatDP's input patterns, in their order.

    Published DP testers try structured inputs before random ones (Ding et al. 2018, StatDP;
    DP-Sniper's pattern generator, Bichsel et al. 2021): here each pattern of
    :func:`record_patterns` changes one record (first record 0, then the last), and the other
    records are all equal to the pattern's first row ("all-equal vs one-changed"), then all at
    each column's observed low, then all at its high end. Column levels are read from
    :data:`RANGE_DRAWS` draws of ``prior``, or from ``observed`` databases of shape (m, n, k) when
    given (databases already drawn from it: no further call of the prior). ``records`` restricts
    the changed record (default: 0 and n − 1). Patterns that change nothing, and repeats, are
    skipped. The draws are bounded as :func:`random_pairs`' are (``timeout``).
    """
    count = check_int(count, "prior_search", 0)
    if count == 0:
        return []
    if observed is None:
        observed = draw_bounded(prior, RANGE_DRAWS, rng, timeout=timeout, where=_SEARCHING)
    observed = _all_present(np.asarray(observed, dtype=np.float64), prior)
    low, middle, high = _column_levels(observed)
    n = observed.shape[1]
    records = sorted({0, n - 1}) if records is None else list(records)
    pairs, seen = [], set()
    for name, a, b in record_patterns(low, middle, high):
        if np.array_equal(a, b):
            continue
        for base_name, rest in (("equal to the first row", a), ("at each column's low end", low),
                                ("at each column's high end", high)):
            for record in records:
                first = np.repeat(rest[None, :], n, axis=0)
                second = first.copy()
                first[record], second[record] = a, b
                identity = _identity(first, second)
                if identity in seen:
                    continue
                seen.add(identity)
                pairs.append(NeighbouringPair(first, second, why=f"structured pair (StatDP pattern '{name}'): "
                                              f"record {record} changes, the other records {base_name}"))
                if len(pairs) == count:
                    return pairs
    return pairs


def candidate_pairs(prior, count: int, rng: np.random.Generator, timeout=None) -> list:
    """``count`` neighbouring pairs for the prior search: structured ones first, then random ones.

    :func:`structured_pairs` (the published testers' patterns), then :func:`random_pairs` for
    the rest, without repeats. Every pair becomes a two-point prior in Θ whose critic is a
    candidate of the engine's union bound (α/K over the candidates built, never α per pair). ``timeout``
    (``--timeout``) bounds each draw of the prior (:func:`random_pairs`).
    """
    count = check_search_count(count)
    if count and getattr(prior, "presence_column", False) and prior.n < 2:
        raise InputError(f"argument 'prior_search' ({count}): under add/remove each searched pair takes one record "
                         f"out of a database, and the prior's databases hold {prior.n}, which would leave none; give "
                         "databases of at least 2 records, or --prior-search 0")
    pairs = structured_pairs(prior, count, rng, timeout=timeout)
    n_structured = len(pairs)
    if n_structured < count:
        seen = {_identity(p.first, p.second) for p in pairs}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InputWarning)  # said below, for the whole search
            extra = random_pairs(prior, count - n_structured, rng, timeout=timeout)
        pairs += [p for p in extra if _identity(p.first, p.second) not in seen]
    if len(pairs) < count:
        warnings.warn(f"prior search: {count} two-point priors were asked for, but the declared prior gives only "
                      f"{len(pairs)} distinct neighbouring pairs ({n_structured} structured, {len(pairs) - n_structured} "
                      "random: one base database, each record switched between two of its values); auditing those "
                      f"{len(pairs)}", InputWarning, stacklevel=2)
    return pairs


def spare_pairs(prior, pairs, count: int, rng: np.random.Generator, timeout=None, add_remove: bool = False) -> list:
    """Up to ``count`` candidates of the prior search after its first ``pairs``: :func:`candidate_pairs` of
    ``len(pairs) + count`` (at most :data:`MAX_PRIOR_SEARCH`) on ``rng``, less ``pairs``.

    ``rng`` is a copy of the generator ``pairs`` were drawn with, taken before they were: the structured pairs
    then continue the same patterns (their column levels come from the same draws) and the random ones are drawn
    anew, while the audit's own generator draws what it drew without the spares. ``add_remove``: ``pairs`` are
    :func:`add_remove_pairs`' and so are the spares. Fewer are returned where the prior gives no more.
    """
    total = min(len(pairs) + check_int(count, "count", 0), MAX_PRIOR_SEARCH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)  # fewer distinct pairs than asked: fewer spares
        more = candidate_pairs(prior, total, rng, timeout=timeout)
    if add_remove:
        more = add_remove_pairs(more)
    seen = {_identity(p.first, p.second) for p in pairs}
    return [p for p in more if _identity(p.first, p.second) not in seen][:count]


def add_remove_pairs(pairs) -> list:
    """Each pair of presence-column databases (:mod:`mechanisms.inputs.relation`) as an add/remove pair: the
    record that differs present in one database and absent from the other
    (:func:`mechanisms.inputs.relation.presence_pair`); a prior under add/remove generates its pairs this way."""
    out = []
    for pair in pairs:
        record = differing_record(pair)
        if record is not None:
            first, second = presence_pair(pair.first, pair.second, record)
            out.append(NeighbouringPair(first, second, why=f"{pair.why}; record {record} present vs absent"))
    return out


def search_priors(pairs) -> list:
    """(two-point prior, record that varies) for each distinct neighbouring pair that differs: its records switched
    together (:class:`~mechanisms.inputs.relation.GroupPairPrior`) where it differs in several (a user-level
    relation's pair), the first of them named."""
    out, seen = [], set()
    for pair in pairs:
        if not isinstance(pair, NeighbouringPair):
            raise InputError("argument 'pairs' must hold NeighbouringPair objects")
        record = differing_record(pair)
        identity = _identity(pair.first, pair.second)
        if record is not None and identity not in seen:
            seen.add(identity)
            several = np.count_nonzero(np.any(pair.first != pair.second, axis=1)) > 1
            out.append(((GroupPairPrior if several else TwoPoint)(pair.first, pair.second, p=0.5), record))
    return out
