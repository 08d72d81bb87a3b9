"""User-level neighbours (issue 39 §6): relations at a distance of K records, ``replace:K`` and ``add-remove:K``.

Expected values are computed in the tests from the theorems' formulas (group privacy: kε, the chained δ,
k²ρ, kμ, Mironov's (α/2^c, 3^c ε)) and from the mechanisms' closed forms (a Laplace count's privacy loss
on a pair is |Δcount| / b).
"""

import dataclasses
import math

import numpy as np
import pytest

from audit.cli.main import main
from audit.gating.assertions import claim_spec
from audit.search.pair_families import domain_pair_families
from estimators.validation import InputError
from mechanisms.claims.conversion import convert_claim
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair, checked_pair
from mechanisms.inputs.priors import TwoPoint
from mechanisms.inputs.relation import (GroupPairPrior, PresencePairPrior, check_relation, group_steps,
                                        relation_distance, relation_kind, relation_words)


# -- the relations -----------------------------------------------------------------------------------

@pytest.mark.parametrize("written, one_form, kind, distance", [
    ("replace-one", "replace-one", "replace-one", 1),
    ("add-remove", "add-remove", "add-remove", 1),
    ("replace:1", "replace-one", "replace-one", 1),  # distance 1 is today's relation, the same string
    ("add-remove:1", "add-remove", "add-remove", 1),
    ("replace:3", "replace:3", "replace-one", 3),
    ("replace-one:2", "replace:2", "replace-one", 2),
    ("add-remove:12", "add-remove:12", "add-remove", 12),
])
def test_relations_are_written_in_one_form_with_their_kind_and_distance(written, one_form, kind, distance):
    assert check_relation(written) == one_form
    assert relation_kind(written) == kind and relation_distance(written) == distance


@pytest.mark.parametrize("bad", ["add-remove:0", "replace:", "replace:-1", "replace:1.5", "add:2", "k", "", None, 3,
                                 "replace:٣"])
def test_a_relation_that_is_none_is_one_error_naming_the_argument(bad):
    with pytest.raises(InputError, match=r"argument 'relation' must be one of .*replace:K or add-remove:K"):
        check_relation(bad)


def test_relation_words_say_the_distance():
    assert relation_words("add-remove:3") == "add or remove up to 3 records (n varies)"
    assert relation_words("replace:2") == "replace up to 2 records (n fixed)"
    assert relation_words("replace:1") == "replace one record (n fixed)"


@pytest.mark.parametrize("stated, audited, steps", [
    ("add-remove", "add-remove:3", 3),       # three records removed one at a time
    ("add-remove:2", "add-remove:3", 2),     # ⌈3/2⌉
    ("add-remove:3", "add-remove:2", 1),     # a claim at distance 3 covers pairs at distance 2
    ("replace-one", "replace:4", 4),
    ("add-remove", "replace-one", 2),        # a replacement is a removal and an addition
    ("add-remove", "replace:3", 6),          # three removals, three additions
    ("add-remove:2", "replace:3", 4),        # 2 ⌈3/2⌉
    ("add-remove:3", "replace-one", 2),      # still a removal and an addition (the claim's steps are subsets)
    ("replace:3", "replace-one", 1),
    ("replace:3", "add-remove", None),       # no theorem
])
def test_group_steps_chain_the_stated_relation_into_the_audited_one(stated, audited, steps):
    assert group_steps(stated, audited) == steps


# -- claims converted by group privacy -----------------------------------------------------------

def _converted(text, stated, audited):
    return convert_claim(parse_claim(text, relation=stated), audited)


def test_pure_dp_is_k_epsilon():
    claim = _converted("dp:0.7", "add-remove", "add-remove:3")
    assert claim.relation == "add-remove:3" and claim.epsilon == pytest.approx(3 * 0.7) and claim.delta == 0
    assert "Dwork and Roth 2014, Theorem 2.2" in claim.origin


def test_approximate_dp_chains_delta_and_stays_below_dwork_and_roths_bound():
    eps, delta, k = 0.5, 1e-6, 3
    claim = _converted(f"dp:{eps}:{delta}", "add-remove", f"add-remove:{k}")
    chained = delta * (1 + math.exp(eps) + math.exp(2 * eps))  # δ + e^ε δ + e^{2ε} δ, the definition applied 3 times
    assert claim.epsilon == pytest.approx(k * eps) and claim.delta == pytest.approx(chained, rel=1e-12)
    assert claim.delta <= k * math.exp((k - 1) * eps) * delta  # Dwork and Roth 2014's k e^{(k−1)ε} δ


def test_distance_one_conversions_are_todays():
    claim = _converted("dp:1:1e-5", "add-remove", "replace-one")
    assert (claim.epsilon, claim.delta) == (2.0, pytest.approx((1 + math.e) * 1e-5, rel=1e-12))
    assert parse_claim("dp:1:1e-5", relation="add-remove").replace_one_form()[0] == \
        parse_claim("dp:2:" + repr((1 + math.e) * 1e-5))  # the same claim as group_form(2)


def test_zcdp_is_k_squared_rho_and_gdp_k_mu():
    assert _converted("zcdp:0.5", "replace-one", "replace:3").rho == pytest.approx(9 * 0.5)
    # add-remove → replace:2 is 4 add/remove steps: μ ⇒ 4μ
    assert _converted("gdp:0.25", "add-remove", "replace:2").mu == pytest.approx(4 * 0.25)


@pytest.mark.parametrize("distance, order, epsilon", [
    (2, 8 / 2, 3 * 1.0),    # c = 1
    (3, 8 / 4, 9 * 1.0),    # g = 3 ≤ 2^2: c = 2
    (4, 8 / 4, 9 * 1.0),
])
def test_renyi_dp_follows_mironovs_proposition_2_with_its_order_change(distance, order, epsilon):
    claim = _converted("rdp:8:1", "add-remove", f"add-remove:{distance}")
    assert (claim.order, claim.epsilon) == (pytest.approx(order), pytest.approx(epsilon))


def test_renyi_dp_without_a_theorem_is_one_error_saying_what_to_state_instead():
    with pytest.raises(InputError, match=r"cannot be converted for groups of 5 records.*α ≥ 16.*zCDP"):
        _converted("rdp:8:1", "add-remove", "add-remove:5")  # g = 5 needs c = 3, α ≥ 16


def test_a_claim_stated_at_the_audited_distance_or_farther_is_not_converted():
    claim = _converted("dp:1", "add-remove:3", "add-remove:2")
    assert claim.epsilon == 1.0 and claim.relation == "add-remove:2"
    assert _converted("dp:1", "add-remove:3", "add-remove:3") == parse_claim("dp:1", relation="add-remove:3")


def test_a_replace_claim_says_nothing_about_add_remove_at_any_distance():
    with pytest.raises(InputError, match="says nothing about add/remove"):
        _converted("dp:1", "replace:3", "add-remove:3")


def test_local_dp_and_mi_notions_take_no_user_level_relation():
    with pytest.raises(InputError, match="replace-one neighbours only"):
        parse_claim("ldp:1", relation="replace:2")
    with pytest.raises(InputError, match="replace-one neighbours only"):
        parse_claim("mi-dp:1", relation="add-remove:2")


# -- neighbouring pairs at a distance ------------------------------------------------------------

A = np.array([[3.0], [1.0], [4.0], [1.0], [5.0]])


def test_a_pair_differing_in_more_rows_than_the_relation_admits_is_one_error_naming_the_arguments():
    B = A.copy()
    B[[0, 2]] = 9.0
    with pytest.raises(InputError, match=r"arguments 'first' and 'second'.*differ in records \[0, 2\]; .*at most one record"
                                         r".*replace:2"):
        NeighbouringPair(A, B)
    with pytest.raises(InputError, match=r"argument '--pair'.*differ in records \[0, 2\]"):
        checked_pair(A, B, "--pair", "given")
    pair = NeighbouringPair(A, B, relation="replace:2")
    assert pair.relation == "replace:2"
    assert NeighbouringPair(A, B, relation="add-remove:3").relation == "replace:3"  # the kind comes from the shapes
    B[1] = 9.0
    with pytest.raises(InputError, match=r"differ in records \[0, 1, 2\]; neighbours under replace:2 differ in at most 2 records"):
        NeighbouringPair(A, B, relation="replace:2")


def test_add_remove_pairs_by_their_row_counts():
    smaller = A[[0, 2]]  # rows 1, 3 and 4 removed
    pair = NeighbouringPair(A, smaller, relation="add-remove:3")
    assert pair.relation == "add-remove:3" and pair.database_shape == (5, 1)
    assert pair.first[:, -1].tolist() == [1, 1, 1, 1, 1] and pair.second[:, -1].tolist() == [1, 0, 1, 0, 0]
    with pytest.raises(InputError, match=r"argument 'pairs\[0\]'.*5 and 2 rows, 3 records added/removed.*at most 2"):
        checked_pair(A, smaller, "pairs[0]", "given", relation="add-remove:2")
    with pytest.raises(InputError, match=r"'second' must have the same shape.*add-remove:3 admits 3 records removed"):
        NeighbouringPair(A, smaller)  # distance 1 by default: today's rule
    with pytest.raises(InputError, match="not add/remove neighbours"):
        NeighbouringPair(A, np.array([[3.0], [7.0]]), relation="add-remove:3")


def test_distance_one_pairs_are_todays_objects():
    B = A.copy()
    B[2] = 9.0
    assert NeighbouringPair(A, B).relation == NeighbouringPair(A, B, relation="replace:1").relation == "replace-one"
    assert type(NeighbouringPair(A, B).prior()) is TwoPoint
    assert type(NeighbouringPair(A, A[:4]).prior()) is PresencePairPrior
    assert NeighbouringPair(A, A[:4]).relation == "add-remove"


def test_a_group_pair_draws_one_of_its_two_databases_whole():
    B = A.copy()
    B[[0, 3]] = 9.0
    prior = NeighbouringPair(A, B, relation="replace:2").prior()
    assert isinstance(prior, GroupPairPrior) and not prior.independent_rows
    draws = prior(400, np.random.default_rng(3))
    is_first = np.all(draws == A, axis=(1, 2))
    is_second = np.all(draws == B, axis=(1, 2))
    assert np.all(is_first | is_second)  # never a mix (the per-record TwoPoint would draw 4 databases)
    assert 150 < is_first.sum() < 250  # P(first) = 1/2: 400 draws, 5 standard deviations


# -- pair families at the distance -----------------------------------------------------------------

def test_domain_families_put_k_records_at_the_ends_first():
    families = domain_pair_families((0.0, 10.0), 4, 1, "replace:3")
    group = families[0]
    assert group.name == "3 records at the ends"
    first, second = group.pairs[0].first[:, 0], group.pairs[0].second[:, 0]
    assert first.tolist() == [0, 0, 0, 0] and second.tolist() == [10, 10, 10, 0]
    add_remove = domain_pair_families((0.0, 10.0), 4, 1, "add-remove:9")[0]  # K above n − 1: n − 1 records
    assert add_remove.name == "3 records at the ends"
    assert add_remove.pairs[0].second[:, -1].tolist() == [0, 0, 0, 1]
    assert domain_pair_families((0.0, 10.0), 4, 1, "replace-one")[0].name == "domain ends"  # distance 1: today's


# -- the command line ----------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["add-remove:0", "replace:two", "user"])
def test_cli_relation_errors_name_the_flag(bad, tmp_path, capsys):
    (tmp_path / "m.py").write_text("def f(db, rng):\n    return float(db.sum() + rng.laplace())\n")
    code = main(["audit", "--mechanism", f"{tmp_path / 'm.py'}:f", "--per-database", "--claim", "dp:1",
                 "--relation", bad])
    err = capsys.readouterr().err
    assert code == 2 and "--relation" in err and "add-remove:K" in err


def test_cli_pair_beyond_the_relation_is_refused_naming_pair(tmp_path, capsys):
    (tmp_path / "m.py").write_text("def f(db, rng):\n    return float(db.shape[0] + rng.laplace())\n")
    np.save(tmp_path / "with.npy", A)
    np.save(tmp_path / "without.npy", A[[0, 2]])
    code = main(["audit", "--mechanism", f"{tmp_path / 'm.py'}:f", "--per-database", "--claim", "dp:1",
                 "--relation", "add-remove:2", "--pair", f"{tmp_path / 'with.npy'},{tmp_path / 'without.npy'}"])
    err = capsys.readouterr().err
    assert code == 2 and "--pair" in err and "3 records added/removed" in err


def test_cli_mi_audit_under_a_relation_names_the_relation_typed(tmp_path, capsys):
    # A replace pair read at add-remove:2 is a replace:2 pair: the error named "an audit under replace:2", a relation
    # the user never typed; it names --relation add-remove:2, what it means, and what to do.
    (tmp_path / "m.py").write_text("def f(db, rng):\n    return float(db.sum() + rng.laplace())\n")
    replaced = A.copy()
    replaced[0] = replaced[0] + 1.0
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", replaced)
    code = main(["audit", "--mechanism", f"{tmp_path / 'm.py'}:f", "--per-database", "--notion", "mi-dp",
                 "--epsilon", "0.5", "--relation", "add-remove:2", "--pair", f"{tmp_path / 'a.npy'},{tmp_path / 'b.npy'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert "(--relation) is add-remove:2: neighbours that add or remove up to 2 records" in err
    assert "under replace:2" not in err and "--claim dp:EPS" in err and "drop --relation" in err


# -- audits --------------------------------------------------------------------------------------

def _discrete_laplace(rng):
    """P(Z = z) ∝ e^{−|z|}: the difference of two geometric variables with success probability 1 − e^{−1}
    (Inusah and Kozubowski 2006). Integers, so the float-bit tests see no rounding artefact (a continuous
    Laplace added to an integer count is refuted by them, rightly: Mironov 2012)."""
    p = 1 - math.exp(-1.0)
    return int(rng.geometric(p)) - int(rng.geometric(p))


def noisy_count(db, rng):
    """A count with discrete Laplace noise of scale 1: ε = 1 per record under add/remove (sensitivity 1)."""
    return float(db.shape[0] + _discrete_laplace(rng))


def doubled_count(db, rng):
    """Twice the count with the same noise: sensitivity 2, so 2ε per record and 6 on three records."""
    return float(2 * db.shape[0] + _discrete_laplace(rng))


def _audit(mechanism, claim, relation, pair_relation):
    from audit.engine import run_audit

    pair = NeighbouringPair(A, A[[0, 2]], relation=pair_relation)  # three records removed
    spec = claim_spec(mechanism, claim, pairs=[pair], relation=relation, per_database=True, seed=4)
    return run_audit(dataclasses.replace(spec, samples=2000, event_runs=2000))


def test_a_per_record_claim_audited_on_three_removed_records_is_read_as_three_epsilon():
    # The pair's privacy loss: the count changes by 3, and the noise's log-ratio is 1 per unit of change, so
    # ε_pair = 3 for the count and 6 for twice it (max over z of |z − z′| with z − z′ the change).
    # The claim dp:1 per record is dp:3 on pairs at add/remove distance 3 (group privacy).
    exact_pair_epsilon, doubled_pair_epsilon, converted_epsilon = 3 / 1.0, 6 / 1.0, 3 * 1.0
    honest = _audit(noisy_count, "dp:1", "add-remove", "add-remove:3")
    assert honest.claim["relation"] == "add-remove:3" and honest.claim["parameters"]["epsilon"] == converted_epsilon
    assert exact_pair_epsilon <= converted_epsilon and honest.claim_verdict != "refuted"
    leaky = _audit(doubled_count, "dp:1", "add-remove", "add-remove:3")
    assert doubled_pair_epsilon > converted_epsilon and leaky.claim_verdict == "refuted"
    bound = leaky.event_test.epsilon_lower_bound
    assert converted_epsilon < bound <= doubled_pair_epsilon  # a certified lower bound on the pair's true ε


def test_a_user_level_claim_is_audited_as_stated():
    # dp:1 stated for neighbours up to 3 records apart: the Laplace count's ε = 3 on the pair breaks it.
    result = _audit(noisy_count, "dp:1", "add-remove:3", "add-remove:3")
    assert result.claim["parameters"]["epsilon"] == 1.0 and result.claim_verdict == "refuted"


@pytest.mark.train  # the declared prior's records get neural critics
def test_a_group_pair_beside_a_declared_prior_does_not_refute_a_true_claim():
    # A declared prior (neural critics, each record's critic reading the other records) and the domain's group
    # pair: the group's critic reads the output alone (its other records move with the secret), also where its
    # statistic is evaluated on the event test's runs. With the other records read there, this audit certified
    # ε ≥ 4.8 for a mechanism whose ε on the pair is 3 · 1 = 3 (three records of a count with noise of scale 1).
    from audit import AuditSpec
    from audit.engine import run_audit
    from mechanisms.adapters.recognition import per_database_mechanism
    from mechanisms.inputs.priors import ProductBernoulli

    pair_epsilon = 3 * 1.0
    mechanism = per_database_mechanism(noisy_count, "noisy_count", what="mechanism", option="per_database").mechanism
    pairs = domain_pair_families((0.0, 1.0), 6, 1, "add-remove:3")[0].pairs
    spec = AuditSpec(mechanism=mechanism, priors=(ProductBernoulli(np.full((6, 1), 0.5)),), pairs=pairs,
                     claim=parse_claim(f"dp:{pair_epsilon}", relation="add-remove:3"), relation="add-remove:3",
                     samples=2000, seed=1)
    result = run_audit(spec)
    assert "records [0, 1, 2] together" in result.event_test.description
    assert result.claim_verdict == "not-refuted" and result.event_test.epsilon_lower_bound <= pair_epsilon


# -- library claims read at the distance -------------------------------------------------------------

def test_opendp_claims_are_read_at_d_in_k():
    dp = pytest.importorskip("opendp.prelude")
    from mechanisms.adapters.recognition import recognize_mechanism

    dp.enable_features("contrib")
    scale = 2.0
    count = dp.t.make_count(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()) \
        >> dp.m.then_laplace(scale=scale)
    recognized = recognize_mechanism(count, "count")
    # Laplace on a count: ε = d_in / scale, d_in the symmetric distance (k removals: k; k replacements: 2k).
    for relation, d_in in (("add-remove", 1), ("add-remove:3", 3), ("replace-one", 2), ("replace:2", 4)):
        claim, note = recognized.claim_at(relation)
        assert claim.relation == relation and claim.parameters == (pytest.approx(d_in / scale),)
        assert f"d_in = {d_in}" in note
    sized = dp.t.make_count(dp.vector_domain(dp.atom_domain(T=float, nan=False), size=5), dp.symmetric_distance()) \
        >> dp.m.then_laplace(scale=scale)
    claim, note = recognize_mechanism(sized, "sized").claim_at("add-remove:2")
    assert claim is None and "no claim read at that distance" in note  # sized data: no add/remove distance


# -- type-I at the boundary ----------------------------------------------------------------------

def _tight_refutations(audits: int, samples: int) -> int:
    """How many of ``audits`` seeded audits refute dp:3 stated for add-remove:3 on the discrete-Laplace count, whose
    ε on the audited pair (three records removed) is exactly 3: every refutation is a type-I error."""
    from audit.engine import run_audit

    pair = NeighbouringPair(A, A[[0, 2]], relation="add-remove:3")
    refuted = 0
    for seed in range(audits):
        spec = claim_spec(noisy_count, "dp:3", pairs=[pair], relation="add-remove:3", per_database=True, seed=seed,
                          alpha=0.05)
        refuted += run_audit(dataclasses.replace(spec, samples=samples, event_runs=samples)).claim_verdict == "refuted"
    return refuted


@pytest.mark.slow
def test_type_one_error_of_a_tight_user_level_claim_is_at_most_alpha():
    # 200 audits at α = 0.05: with a type-I rate of at most 0.05 the count of refutations is Binomial(200, ≤ 0.05),
    # and P(≥ 19) ≤ 0.007 (the binomial tail, scipy.stats.binom.sf(18, 200, 0.05)).
    from scipy.stats import binom

    assert binom.sf(18, 200, 0.05) < 0.01
    assert _tight_refutations(200, 1000) <= 18
