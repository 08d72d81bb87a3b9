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
from mechanisms.neighbouring_pair import NeighbouringPair
from mechanisms.priors import TwoPoint

from .config_schema import InputWarning

#: The most two-point priors a search may add: each costs ``samples`` mechanism runs and a
#: critic, so a larger search is a mistake rather than a plan.
MAX_PRIOR_SEARCH = 1000


def differing_record(pair: NeighbouringPair) -> int | None:
    """The record in which the pair's databases differ (None when they are equal)."""
    rows = np.flatnonzero(np.any(pair.first != pair.second, axis=1))
    return int(rows[0]) if len(rows) else None


def _identity(first: np.ndarray, second: np.ndarray) -> tuple:
    """What makes two pairs the same two-point prior: the unordered set of their databases."""
    return first.shape, frozenset((first.tobytes(), second.tobytes()))


def random_pairs(prior, count: int, rng: np.random.Generator, max_tries: int = 200) -> list:
    """Up to ``count`` distinct neighbouring pairs built from ``prior``: one base database, and for
    record j mod n two rows drawn from the prior's record j that differ.

    A record whose two rows yield no new pair in ``max_tries`` draws is taken to have no more
    (a discrete prior has finitely many: n = 4 binary records give 4). When fewer than
    ``count`` distinct pairs are found, an :class:`~audit.config_schema.InputWarning` says so
    and the pairs found are returned.
    """
    count = check_int(count, "prior_search", 0)
    if count > MAX_PRIOR_SEARCH:
        raise InputError(f"argument 'prior_search' must be at most {MAX_PRIOR_SEARCH}, got {count}")
    pairs, seen = [], set()
    if count == 0:
        return pairs
    base = prior(1, rng)[0]
    exhausted = set()
    record = -1
    while len(pairs) < count and len(exhausted) < prior.n:
        record = (record + 1) % prior.n
        if record in exhausted:
            continue
        for _ in range(max_tries):
            a, b = prior(2, rng)[:, record]
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


def search_priors(pairs) -> list:
    """(two-point prior, record that varies) for each distinct neighbouring pair that differs."""
    out, seen = [], set()
    for pair in pairs:
        if not isinstance(pair, NeighbouringPair):
            raise InputError("argument 'pairs' must hold NeighbouringPair objects")
        record = differing_record(pair)
        identity = _identity(pair.first, pair.second)
        if record is not None and identity not in seen:
            seen.add(identity)
            out.append((TwoPoint(pair.first, pair.second, p=0.5), record))
    return out
