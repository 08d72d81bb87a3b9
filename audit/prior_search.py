"""Prior search for DP semantics: candidate two-point priors on neighbouring databases.

ε-DP (and hence, by Theorem 1 of the Pufferfish paper, min(ε, ε²/2)-MI DP) must hold for every
prior, i.e. Θ is all distributions; a leak found under any member refutes it. A two-point
prior on a neighbouring pair (one record switching between two rows, the rest fixed) puts all
the audit's samples where a DP violation shows. The search only proposes candidates: the
engine chooses among all critics on the validation split and pays for the choice in the union
bound, so adding candidates never breaks the type-I guarantee.
"""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError, check_int
from mechanisms.catalog.neighbouring_pair import NeighbouringPair
from mechanisms.priors import TwoPoint


def differing_record(pair: NeighbouringPair) -> int | None:
    """The record in which the pair's databases differ (None when they are equal)."""
    rows = np.flatnonzero(np.any(pair.first != pair.second, axis=1))
    return int(rows[0]) if len(rows) else None


def random_pairs(prior, count: int, rng: np.random.Generator, max_tries: int = 20) -> list:
    """``count`` neighbouring pairs built from ``prior``: a base database, and for record
    j mod n two rows drawn from the prior's record j that differ."""
    count = check_int(count, "prior_search", 0)
    pairs = []
    if count == 0:
        return pairs
    base = prior(1, rng)[0]
    for j in range(count):
        record = j % prior.n
        for _ in range(max_tries):
            a, b = prior(2, rng)[:, record]
            if np.any(a != b):
                break
        else:
            continue  # this record takes a single value under the prior: nothing to switch
        first, second = base.copy(), base.copy()
        first[record], second[record] = a, b
        pairs.append(NeighbouringPair(first, second, why=f"random pair from the declared prior, record {record}"))
    return pairs


def search_priors(pairs) -> list:
    """(two-point prior, record that varies) for each neighbouring pair that differs."""
    out = []
    for pair in pairs:
        if not isinstance(pair, NeighbouringPair):
            raise InputError("argument 'pairs' must hold NeighbouringPair objects")
        record = differing_record(pair)
        if record is not None:
            out.append((TwoPoint(pair.first, pair.second, p=0.5), record))
    return out
