"""Pairs the auditor chooses at the ends of a library's declared input domain, and the note when the audited
records cannot reach that domain (audit/search/input_domain.py)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from audit.config.building import build_spec
from audit.search.input_domain import declared_domain, domain_check, domain_from_ranges, opendp_clamp_bounds
from estimators.validation import InputError
from mechanisms.adapters.libraries import OpenDPMechanism
from mechanisms.inputs.priors import ProductBernoulli, UniformBox

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")


def _bounded(low, high, scale=20.0):
    space = dp.vector_domain(dp.atom_domain(bounds=(low, high)), size=10), dp.symmetric_distance()
    return OpenDPMechanism(space >> dp.t.then_sum() >> dp.m.then_laplace(scale))


def _clamped(*clamps, size=10):
    """Records on an unbounded domain, clamped inside the pipeline by each of ``clamps`` in turn, summed, noised."""
    pipeline = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size), dp.symmetric_distance()
    for bounds in clamps:
        pipeline = pipeline >> dp.t.then_clamp(bounds)
    return OpenDPMechanism(pipeline >> dp.t.then_sum() >> dp.m.then_laplace(20.0))


def _unclamped():
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=10), dp.symmetric_distance()
    return OpenDPMechanism(space >> dp.t.then_impute_constant(0.0) >> dp.t.then_count() >> dp.m.then_laplace(1.0))


def test_declared_domain_reads_opendp_bounds_and_their_absence():
    bounded = declared_domain(_bounded(0.0, 100.0))
    assert (bounded.low, bounded.high, bounded.bounded) == (0.0, 100.0, True)
    free = declared_domain(_unclamped())
    assert free.low == -math.inf and free.high == math.inf and not free.bounded
    assert declared_domain(lambda dbs, rng: dbs.sum(axis=1)) is None  # a plain callable declares nothing


@pytest.mark.parametrize("size", [10, None])
def test_a_clamp_of_the_records_inside_the_pipeline_declares_its_bounds(size):
    # The bounds given to then_clamp here, on sized and unsized domains, are what the domain must read.
    clamped = declared_domain(_clamped((0.0, 100.0), size=size))
    assert (clamped.low, clamped.high) == (0.0, 100.0) and "make_clamp" in clamped.source
    # A second clamp acts on the first's output (a bounded domain), not on the records: only the first counts.
    assert opendp_clamp_bounds(_clamped((-5.0, 50.0), (1.0, 3.0)).measurement) == [(-5.0, 50.0)]
    # Without a record for the pipeline's construction (another OpenDP version), nothing is read.
    assert opendp_clamp_bounds(object()) == []


def test_a_zero_one_prior_against_a_clamp_gets_the_pair_at_the_clamp_ends():
    added, note = domain_check(_clamped((0.0, 100.0)), [ProductBernoulli(0.5, shape=(10, 1))], (), (10, 1))
    expected = np.zeros((10, 1))
    expected[0] = 100.0
    assert len(added) == 1 and np.array_equal(added[0].second, expected) and np.array_equal(added[0].first, 0 * expected)
    assert "span [0, 1]" in note and "make_clamp" in note


def test_a_zero_one_prior_gets_the_pair_at_the_domain_ends_and_a_note():
    # Records 0/1 against a domain of [0, 100]: the pair (0 vs 100 in record 0, the rest 0) is added.
    added, note = domain_check(_bounded(0.0, 100.0), [ProductBernoulli(0.5, shape=(10, 1))], (), (10, 1))
    assert len(added) == 1
    np.testing.assert_array_equal(added[0].first, np.zeros((10, 1)))
    expected = np.zeros((10, 1))
    expected[0] = 100.0
    np.testing.assert_array_equal(added[0].second, expected)
    assert "span [0, 1]" in note and "[0, 100]" in note


def test_a_prior_that_reaches_the_domain_gets_nothing():
    # 0/1 records reach a domain of [0, 1]; uniform records on [0, 1] never reach its ends exactly.
    added, note = domain_check(_bounded(0.0, 1.0), [ProductBernoulli(0.5, shape=(10, 1))], (), (10, 1))
    assert added == () and note is None
    added, note = domain_check(_bounded(0.0, 1.0), [UniformBox(0.0, 1.0, shape=(10, 1))], (), (10, 1))
    assert note is not None and len(added) == 1  # a continuous prior never draws the ends exactly: the pair is added


def test_an_unbounded_domain_gets_a_note_and_no_pair():
    added, note = domain_check(_unclamped(), [ProductBernoulli(0.5, shape=(10, 1))], (), (10, 1))
    assert added == () and "give --pair" in note


def test_the_audit_spec_carries_the_domain_pair_and_warns(tmp_path):
    source = tmp_path / "wide.py"
    source.write_text("import opendp.prelude as dp\ndp.enable_features('contrib')\n"
                      "space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 100.0)), size=10), dp.symmetric_distance()\n"
                      "wide = space >> dp.t.then_sum() >> dp.m.then_laplace(20.0)\n")
    config = {"mechanism": {"spec": f"{source}:wide"}, "prior": {"spec": "builtin:bernoulli", "n": 10},
              "claim": {"spec": "dp:1"}, "audit": {"records": [3]}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = build_spec(config)
    assert any("input domain" in str(w.message) for w in caught)
    # The pilot keeps one pair from the domain's families; on a sum, any record changed across the whole
    # range [0, 100] (within float rounding of the grid's ends) is as good as another.
    assert len(spec.pairs) == 1 and abs(spec.pairs[0].second[0, 0] - spec.pairs[0].first[0, 0]) >= 100 - 1e-12
    assert 0 in spec.records and any("[0, 100]" in note for note in spec.notes)


def test_a_diffprivlib_object_with_bounds_declares_them():
    from mechanisms.adapters.libraries import DiffprivlibMechanism

    class Bounded:  # diffprivlib's bounded objects carry bounds = (lower, upper), scalars or per feature
        bounds = (np.array([0.0, -5.0]), np.array([10.0, 50.0]))

        def randomise(self, value):
            return value

    domain = declared_domain(DiffprivlibMechanism(Bounded()))
    assert (domain.low, domain.high) == (-5.0, 50.0) and "diffprivlib bounds" in domain.source


def test_an_integer_opendp_domain_is_marked_and_its_families_hold_integers():
    from audit.search.pair_families import domain_pair_families

    space = dp.vector_domain(dp.atom_domain(bounds=(0, 10)), size=10), dp.symmetric_distance()
    domain = declared_domain(OpenDPMechanism(space >> dp.t.then_sum() >> dp.m.then_laplace(20.0)))
    assert (domain.low, domain.high, domain.integer) == (0.0, 10.0, True)
    for family in domain_pair_families(domain, 10, 1):
        for pair in family.pairs:  # the adapter refuses a non-integer for an integer domain
            assert np.array_equal(pair.first, np.round(pair.first)) and np.array_equal(pair.second, np.round(pair.second))


@pytest.mark.parametrize("prior, domain, attribute, value", [
    ({"spec": "builtin:gaussian", "n": 3, "k": 1}, "-3,3", 0, None),
    ({"spec": "builtin:bernoulli", "n": 3, "k": 2}, "0,1;0,0.5", 1, 1.0),
])
def test_a_prior_drawing_beyond_the_declared_domain_is_refused(tmp_path, prior, domain, attribute, value):
    # A Gaussian prior under --domain=-3,3 refuted 1-DP on a record at -3.47, where nothing is claimed.
    source = tmp_path / "m.py"
    source.write_text("def f(db, rng):\n    return float(db.sum()) + rng.laplace()\n")
    config = {"mechanism": {"spec": f"{source}:f", "per_database": True, "domain": domain}, "prior": prior,
              "claim": {"spec": "dp:1"}}
    with pytest.raises(InputError, match=r"\[prior\] spec \(--prior\) against --domain.*outside the declared "
                                         rf"domain") as caught:
        build_spec(config)
    assert f"attribute {attribute} = " in str(caught.value) and "\n" not in str(caught.value)
    if value is not None:
        assert f"= {value:g}," in str(caught.value)
    # Draws within the domain pass: a 0/1 prior under [0, 1].
    config["prior"], config["mechanism"]["domain"] = {"spec": "builtin:bernoulli", "n": 3, "k": 1}, "0,1"
    build_spec(config)


def test_the_note_names_the_attribute_that_falls_short_of_the_domain():
    # One-hot records of 4 columns whose last is never 1 (the catalog histogram's prior): the overall span [0, 1]
    # equals the domain [0, 1], and the warning read "the audited records span [0, 1] but the mechanism declares
    # records in [0, 1]".
    from audit.search.input_domain import domain_reach
    from mechanisms.inputs.priors import TwoPoint

    first, second = np.zeros((3, 4)), np.zeros((3, 4))
    first[:, 0], second[:, 1] = 1.0, 1.0
    prior = TwoPoint(first, second, p=np.full(3, 0.5))
    domain = domain_from_ranges((0, 1), "--domain 0,1")
    _, note = domain_check(lambda dbs, rng: dbs.sum(axis=1), [prior], (), (3, 4), user_domain=domain)
    assert "the audited records span [0, 1] ([0, 0] in attribute 2) but the mechanism declares records in [0, 1]" \
        in note, note
    reach = domain_reach(domain, [prior], (), 4)
    assert reach["audited"] == "[0, 1] ([0, 0] in attribute 2)" and not reach["reached"]
    # One attribute: the span alone, as before.
    one = domain_reach(domain, [ProductBernoulli(0.5, shape=(3, 1))], (), 1)
    assert one["audited"] == "[0, 1]" and one["reached"]
