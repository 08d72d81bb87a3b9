"""Structured candidate pairs (StatDP's input patterns adapted to databases) and the prior search's
order: structured pairs first, then random ones. Expected pairs are written out by hand."""

import numpy as np
import pytest

from audit.search.prior_search import candidate_pairs, record_patterns, structured_pairs
from mechanisms.inputs.priors import UniformBox


def _observed(n=3, k=4, values=(0.0, 0.9, 2.0), m=50, seed=0):
    return np.random.default_rng(seed).choice(values, size=(m, n, k))


def _database(n, k, rest, record, row):
    db = np.full((n, k), rest, dtype=float)
    db[record] = row
    return db


def test_first_pairs_follow_the_pattern_order_with_observed_levels():
    # Columns take 0, 0.9 and 2: low 0, high 2, and the middle is the observed value nearest 1 (0.9).
    pairs = structured_pairs(None, 8, None, observed=_observed())
    n, k = 3, 4
    lo, mid, hi = np.zeros(k), np.full(k, 0.9), np.full(k, 2.0)
    expected = [
        # 'extremes' (all low → all high) on record 0 then record 2, the rest equal to the first row (low) ...
        (_database(n, k, 0.0, 0, lo), _database(n, k, 0.0, 0, hi)),
        (_database(n, k, 0.0, 2, lo), _database(n, k, 0.0, 2, hi)),
        # ... (the rest at the low end repeats those) then the rest at the high end;
        (_database(n, k, 2.0, 0, lo), _database(n, k, 2.0, 0, hi)),
        (_database(n, k, 2.0, 2, lo), _database(n, k, 2.0, 2, hi)),
        # 'one above': middle → middle with the first column high, the rest at the middle ...
        (_database(n, k, 0.9, 0, mid), _database(n, k, 0.9, 0, [2.0, 0.9, 0.9, 0.9])),
        (_database(n, k, 0.9, 2, mid), _database(n, k, 0.9, 2, [2.0, 0.9, 0.9, 0.9])),
        # ... then at the low end.
        (_database(n, k, 0.0, 0, mid), _database(n, k, 0.0, 0, [2.0, 0.9, 0.9, 0.9])),
        (_database(n, k, 0.0, 2, mid), _database(n, k, 0.0, 2, [2.0, 0.9, 0.9, 0.9])),
    ]
    assert len(pairs) == len(expected)
    for pair, (first, second) in zip(pairs, expected):
        np.testing.assert_array_equal(pair.first, first)
        np.testing.assert_array_equal(pair.second, second)
    assert "StatDP pattern 'extremes'" in pairs[0].why and "'one above'" in pairs[4].why


def test_record_patterns_are_statdp_shapes():
    lo, mid, hi = np.zeros(4), np.ones(4), np.full(4, 2.0)
    shapes = {name: (a.tolist(), b.tolist()) for name, a, b in record_patterns(lo, mid, hi)}
    assert shapes["one above rest below"] == ([1, 1, 1, 1], [2, 0, 0, 0])
    assert shapes["one below rest above"] == ([1, 1, 1, 1], [0, 2, 2, 2])
    assert shapes["half half"] == ([1, 1, 1, 1], [2, 2, 0, 0])
    assert shapes["all above"] == ([1, 1, 1, 1], [2, 2, 2, 2])
    assert shapes["all below"] == ([1, 1, 1, 1], [0, 0, 0, 0])
    assert shapes["X shape"] == ([2, 2, 0, 0], [0, 0, 2, 2])
    assert list(shapes)[0] == "extremes"


@pytest.mark.parametrize("k", [1, 2, 5])
def test_every_structured_pair_is_a_distinct_neighbouring_pair(k):
    pairs = structured_pairs(None, 1000, None, observed=_observed(n=4, k=k))
    identities = set()
    for pair in pairs:
        changed = np.flatnonzero(np.any(pair.first != pair.second, axis=1))
        assert len(changed) == 1 and changed[0] in (0, 3)
        identities.add(frozenset((pair.first.tobytes(), pair.second.tobytes())))
    assert len(identities) == len(pairs)
    # 9 patterns x 3 bases x 2 records at most; fewer columns make more patterns coincide.
    assert 0 < len(pairs) <= 54
    assert len(structured_pairs(None, 3, None, observed=_observed(n=4, k=k))) == min(3, len(pairs))


def test_records_restricts_the_changed_record():
    pairs = structured_pairs(None, 100, None, records=(1,), observed=_observed())
    assert pairs and all(np.flatnonzero(np.any(p.first != p.second, axis=1)).tolist() == [1] for p in pairs)


def test_candidate_pairs_put_structured_pairs_before_random_ones():
    prior = UniformBox(0.0, 1.0, shape=(3, 1))
    rng = np.random.default_rng(5)
    structured = structured_pairs(prior, 1000, np.random.default_rng(5))
    pairs = candidate_pairs(prior, len(structured) + 4, rng)
    assert len(pairs) == len(structured) + 4
    assert all("StatDP" in p.why for p in pairs[:len(structured)])
    assert all("random pair" in p.why for p in pairs[len(structured):])
    # The structured ones read the prior's observed range: lowest and highest of 1,000 draws.
    first = pairs[0]
    assert first.first[0, 0] < 0.01 and first.second[0, 0] > 0.99 and np.all(first.first[1:] == first.first[0])
