"""Direct tests of audit/search/prior_search.py: candidate two-point priors on neighbouring pairs.

Expected pairs are enumerated independently: with one base database, switching record j
between two of its values gives every neighbouring pair the search can build, so for binary
records there is one unordered pair per record, and C(v, 2) for a record with v values.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from estimators.validation import InputWarning
from audit.search.prior_search import MAX_PRIOR_SEARCH, differing_record, random_pairs, search_priors
from estimators.validation import InputError
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.inputs.priors import ProductBernoulli, ProductGaussian, TwoPoint


def _unordered(pair) -> tuple:
    return frozenset((pair.first.tobytes(), pair.second.tobytes()))


def _expected_pairs(base: np.ndarray, values_per_record: dict) -> set:
    """Every unordered pair {base with record j = a, base with record j = b}, a ≠ b."""
    out = set()
    for record, values in values_per_record.items():
        for a, b in itertools.combinations(values, 2):
            first, second = base.copy(), base.copy()
            first[record], second[record] = a, b
            out.add(frozenset((first.tobytes(), second.tobytes())))
    return out


def _shared_base(pairs) -> np.ndarray:
    """The base database, read off the pairs: a pair equals it outside the record it switches."""
    base = pairs[0].first.copy()
    record = differing_record(pairs[0])
    other = next(p for p in pairs if differing_record(p) != record)
    base[record] = other.first[record]
    return base


def test_differing_record():
    first = np.zeros((4, 2))
    second = first.copy()
    assert differing_record(NeighbouringPair(first, second)) is None
    second[2, 1] = 1.0
    assert differing_record(NeighbouringPair(first, second)) == 2


def test_binary_records_give_one_pair_each_and_the_search_says_when_it_runs_out():
    prior = ProductBernoulli(np.full(4, 0.5))
    with pytest.warns(InputWarning, match=r"6 two-point priors were asked for.*only 4 distinct"):
        pairs = random_pairs(prior, 6, np.random.default_rng(0))
    binary = [np.array([0.0]), np.array([1.0])]
    assert sorted(differing_record(p) for p in pairs) == [0, 1, 2, 3]
    assert {_unordered(p) for p in pairs} == _expected_pairs(_shared_base(pairs), dict.fromkeys(range(4), binary))


def test_two_binary_attributes_give_six_pairs_per_record_all_found():
    prior = ProductBernoulli(np.full((2, 2), 0.5))
    values = [np.array(v, dtype=float) for v in itertools.product((0.0, 1.0), repeat=2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)  # all 2 × C(4, 2) = 12 exist: no warning
        pairs = random_pairs(prior, 12, np.random.default_rng(1))
    assert len(pairs) == 12
    assert {_unordered(p) for p in pairs} == _expected_pairs(_shared_base(pairs), {0: values, 1: values})
    with pytest.warns(InputWarning, match="only 12 distinct"):
        assert len(random_pairs(prior, 13, np.random.default_rng(1))) == 12


def test_a_record_with_one_value_is_skipped():
    prior = ProductBernoulli(np.array([0.5, 1.0, 0.5]))
    with pytest.warns(InputWarning, match="only 2 distinct neighbouring pairs"):
        pairs = random_pairs(prior, 3, np.random.default_rng(2), max_tries=50)
    assert sorted(differing_record(p) for p in pairs) == [0, 2]


def test_continuous_records_cycle_through_the_records_and_are_reproducible():
    prior = ProductGaussian(np.zeros((3, 2)), 1.0)
    pairs = random_pairs(prior, 5, np.random.default_rng(3))
    assert [differing_record(p) for p in pairs] == [0, 1, 2, 0, 1]
    assert all("record" in p.why for p in pairs)
    assert len({_unordered(p) for p in pairs}) == 5
    again = random_pairs(prior, 5, np.random.default_rng(3))
    assert [_unordered(p) for p in again] == [_unordered(p) for p in pairs]


@pytest.mark.parametrize("count, message", [(-1, "prior_search"), (MAX_PRIOR_SEARCH + 1, "at most 1000"),
                                            (2.5, "prior_search")])
def test_bad_counts_name_the_argument(count, message):
    prior = ProductBernoulli(np.full(2, 0.5))
    with pytest.raises(InputError, match=message):
        random_pairs(prior, count, np.random.default_rng(0))


def test_zero_pairs_draws_nothing():
    class Refusing(ProductBernoulli):
        def _sample(self, m, rng):
            raise AssertionError("no draw is needed for zero pairs")

    assert random_pairs(Refusing(np.full(2, 0.5)), 0, np.random.default_rng(0)) == []


def test_search_priors_removes_repeats_either_way_round_and_equal_pairs():
    first = np.zeros((3, 1))
    second = first.copy()
    second[1] = 1.0
    third = first.copy()
    third[2] = 5.0
    pairs = [NeighbouringPair(first, second), NeighbouringPair(second, first), NeighbouringPair(first, first),
             NeighbouringPair(first, third), NeighbouringPair(first.copy(), second.copy())]
    found = search_priors(pairs)
    assert [record for _, record in found] == [1, 2]
    prior, _ = found[0]
    assert isinstance(prior, TwoPoint)
    np.testing.assert_array_equal(prior.p, [0.5, 0.5, 0.5])
    draws = prior(400, np.random.default_rng(4))
    # Only record 1 varies: the two databases of the pair, each about half the time.
    np.testing.assert_array_equal(draws[:, [0, 2]], 0.0)
    assert 150 < int(draws[:, 1, 0].sum()) < 250  # Binomial(400, 1/2): 200 ± 5 standard deviations


def test_search_priors_refuses_other_objects():
    with pytest.raises(InputError, match="'pairs'"):
        search_priors([(np.zeros((2, 1)), np.ones((2, 1)))])


# -- add/remove: searched pairs take exactly one record out (issue 43 §4) ------------------------

def test_prior_search_under_add_remove_builds_pairs_with_one_record_absent():
    """The declared prior of an add/remove audit given by a pair holds a database with an absent
    record; the search used the presence column's observed low end (0) as a pattern level and built
    databases with no record present, which failed after the MI runs."""
    from audit.search.prior_search import add_remove_pairs, candidate_pairs

    given = NeighbouringPair(np.array([[4.0], [1.0], [1.0]]), np.array([[4.0], [1.0]]))
    prior = given.prior()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        pairs = add_remove_pairs(candidate_pairs(prior, 12, np.random.default_rng(0)))
    assert len(pairs) >= 2
    for pair in pairs:
        presence = np.stack([pair.first[:, -1], pair.second[:, -1]])
        # Every record present in one database, exactly one of them absent from the other.
        assert sorted(presence.sum(axis=1).tolist()) == [2.0, 3.0]
        assert np.count_nonzero(presence[0] != presence[1]) == 1
        assert np.array_equal(pair.first[:, :-1], pair.second[:, :-1])


def test_prior_search_under_add_remove_of_one_record_is_refused_before_running():
    from audit.search.prior_search import candidate_pairs
    from mechanisms.inputs.relation import PresentRecords

    calls = []

    class Counted(ProductBernoulli):
        def _sample(self, m, rng):
            calls.append(m)
            return super()._sample(m, rng)

    with pytest.raises(InputError, match="'prior_search' \\(3\\).*hold 1, which would leave none"):
        candidate_pairs(PresentRecords(Counted(0.5, shape=(1, 1))), 3, np.random.default_rng(0))
    assert calls == []
