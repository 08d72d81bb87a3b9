"""Neighbouring relations: add/remove beside replace-one (mechanisms.inputs.relation and its uses)."""

import math
import re

import numpy as np
import pytest

from audit.engine import run_audit
from audit.spec import AuditSpec
from estimators.validation import InputError
from mechanisms.claims.parsing import parse_claim
from mechanisms.base import MechanismError
from mechanisms.execution.runner import MechanismRunner
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.inputs.pair_files import pair_from_files
from mechanisms.inputs.priors import ProductBernoulli
from mechanisms.inputs.relation import (ADD_REMOVE, REPLACE_ONE, PresentRecords, add_remove_rows, presence_pair, split_by_presence)
from mechanisms.claims.conversion import convert_claim


def _noisy_count(dbs, rng):
    """The number of records plus Laplace(1) noise: ε = 1 under add/remove (the count moves by 1), 0 under
    replace-one (the count does not move)."""
    return dbs.shape[1] + rng.laplace(0.0, 1.0, size=(dbs.shape[0], 1))


# -- claims carry their relation, and convert where a theorem allows -----------------------

def test_claim_carries_its_relation_into_its_json():
    claim = parse_claim("dp:1:1e-5", relation="add-remove")
    assert claim.relation == ADD_REMOVE and claim.to_dict()["relation"] == "add-remove"
    assert parse_claim("dp:1").relation == REPLACE_ONE
    assert parse_claim("dp:1") != parse_claim("dp:1", relation="add-remove")


@pytest.mark.parametrize("text, expected", [
    ("dp:1", {"epsilon": 2.0}),                                     # group privacy, k = 2: 2ε
    ("dp:0.5:1e-5", {"epsilon": 1.0, "delta": (1 + math.exp(0.5)) * 1e-5}),  # δ + e^ε δ
    ("zcdp:0.5", {"rho": 2.0}),                                     # k²ρ
    ("gdp:1.5", {"mu": 3.0}),                                       # kμ
    ("rdp:8:0.25", {"order": 4.0, "epsilon": 0.75}),                # (α/2, 3ε)
])
def test_add_remove_claims_convert_to_replace_one_by_group_privacy(text, expected):
    converted = convert_claim(parse_claim(text, relation="add-remove"), "replace-one")
    assert converted.relation == REPLACE_ONE
    assert converted.parameters() == pytest.approx(expected, rel=1e-12)
    assert "group privacy" in converted.origin


@pytest.mark.parametrize("claim, relation, reason", [
    (parse_claim("dp:1"), "add-remove", "says nothing about add/remove"),
    (parse_claim("rdp:2:0.5", relation="add-remove"), "replace-one", "α ≥ 4"),
])
def test_conversions_without_a_theorem_are_refused_with_the_reason(claim, relation, reason):
    with pytest.raises(InputError, match=reason):
        convert_claim(claim, relation)


@pytest.mark.parametrize("text", ["mi-dp:0.5", "ldp:1", "mi-pp:0.5"])
def test_mi_notions_and_local_dp_are_replace_one_only(text):
    with pytest.raises(InputError, match="replace-one neighbours only"):
        parse_claim(text, relation="add-remove", argument="--relation")


def test_add_remove_mi_budget_is_that_of_the_group_privacy_form():
    # 1-DP add/remove ⇒ 2-DP replace-one ⇒ MI ≤ min(2, 2²/2) = 2 nats (Theorem 1 at ε = 2).
    assert parse_claim("dp:1", relation="add-remove").implied_mi_budget("mi-dp").value == 2.0


# -- pairs with differing row counts, the presence column --------------------------------

def test_pair_of_n_and_n_minus_one_rows_is_add_remove_with_a_presence_column():
    larger = np.array([[1.0, 5.0], [2.0, 6.0], [3.0, 7.0]])
    pair = NeighbouringPair(larger, np.delete(larger, 1, axis=0))
    assert pair.relation == ADD_REMOVE and pair.database_shape == (3, 2)
    np.testing.assert_array_equal(pair.first, np.column_stack([larger, [1, 1, 1]]))
    np.testing.assert_array_equal(pair.second, np.column_stack([larger, [1, 0, 1]]))
    # Either order; the record present is in the database given first or second.
    swapped = NeighbouringPair(np.delete(larger, 2, axis=0), larger)
    np.testing.assert_array_equal(swapped.first[:, -1], [1, 1, 0])


def test_rows_that_are_not_one_removal_are_refused():
    with pytest.raises(InputError, match="not add/remove neighbours"):
        add_remove_rows(np.array([[1.0], [2.0], [3.0]]), np.array([[3.0], [1.0]]), "--pair")


def test_pair_files_with_differing_row_counts(tmp_path):
    np.save(tmp_path / "a.npy", np.array([[0.0], [1.0]]))
    np.save(tmp_path / "b.npy", np.array([[0.0]]))
    pair = pair_from_files(tmp_path / "a.npy", tmp_path / "b.npy", "--pair")
    assert pair.relation == ADD_REMOVE and "record 1 added/removed" in pair.why


def test_presence_pair_turns_a_replacement_into_present_against_absent():
    first = np.array([[1.0, 1.0], [2.0, 1.0]])
    second = np.array([[1.0, 1.0], [9.0, 1.0]])
    present, absent = presence_pair(first, second, 1)
    np.testing.assert_array_equal(present, first)
    np.testing.assert_array_equal(absent, [[1.0, 1.0], [2.0, 0.0]])


def test_split_by_presence_groups_databases_by_their_present_records():
    batch = np.zeros((4, 3, 2))
    batch[:, :, -1] = [[1, 1, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]]
    groups = {tuple(rows): indices.tolist() for indices, rows in split_by_presence(batch)}
    assert groups == {(0, 1, 2): [0, 2], (0, 2): [1], (1, 2): [3]}


def test_runner_runs_each_group_on_its_present_records_only():
    batch = np.zeros((3, 4, 2))
    batch[:, :, 0] = [[1, 2, 3, 4], [1, 2, 3, 4], [5, 6, 7, 8]]
    batch[:, :, 1] = [[1, 1, 1, 1], [1, 0, 1, 1], [0, 1, 1, 0]]

    def shape_and_sum(dbs, rng):
        assert dbs.shape[2] == 1  # the presence column never reaches the mechanism
        return np.column_stack([np.full(len(dbs), dbs.shape[1]), dbs.sum(axis=(1, 2))])

    with MechanismRunner(shape_and_sum, "probe", presence_column=True) as runner:
        out = runner.sample(batch, np.random.default_rng(0))
    np.testing.assert_array_equal(out, [[4, 10], [3, 8], [2, 13]])


def test_present_records_prior_appends_a_column_of_ones():
    draws = PresentRecords(ProductBernoulli(0.5, shape=(3, 1)))(5, 0)
    assert draws.shape == (5, 3, 2) and np.all(draws[:, :, 1] == 1)


# -- audits under add/remove ---------------------------------------------------------------

def _spec(claim, pair, **kwargs):
    return AuditSpec(mechanism=_noisy_count, priors=(pair.prior(),), claim=claim, samples=3000, seed=3,
                     records=(int(np.flatnonzero(np.any(pair.first != pair.second, axis=1))[0]),), **kwargs)


ADD_REMOVE_PAIR = NeighbouringPair(np.array([[1.0], [0.0], [1.0]]), np.array([[1.0], [0.0]]))


def test_add_remove_audit_refutes_a_count_claimed_below_its_epsilon():
    # The noisy count's add/remove ε is exactly 1 (Laplace(1) on a count that moves by 1).
    refuted = run_audit(_spec(parse_claim("dp:0.4", relation="add-remove"), ADD_REMOVE_PAIR, relation="add-remove"))
    assert refuted.claim_verdict == "refuted" and refuted.claim["relation"] == "add-remove"
    assert 0.4 < refuted.dp_epsilon_lower_bound_event <= 1.0 + 1e-9
    held = run_audit(_spec(parse_claim("dp:1", relation="add-remove"), ADD_REMOVE_PAIR, relation="add-remove"))
    assert held.claim_verdict == "not-refuted"


def test_replace_one_pairs_see_no_leak_in_the_count_and_convert_the_claim():
    pair = NeighbouringPair(np.array([[1.0], [0.0]]), np.array([[1.0], [1.0]]))
    result = run_audit(_spec(parse_claim("dp:0.4", relation="add-remove"), pair))
    assert result.claim_verdict == "not-refuted"
    assert result.claim["label"] == "0.8-DP" and result.claim["relation"] == "replace-one"
    assert any("group privacy" in note for note in result.notes)


def test_a_replace_one_claim_is_refused_on_add_remove_pairs():
    with pytest.raises(InputError, match="says nothing about add/remove"):
        _spec(parse_claim("dp:1"), ADD_REMOVE_PAIR, relation="add-remove")


@pytest.mark.train  # the declared prior's secrets get neural critics
def test_add_remove_prior_search_generates_present_against_absent_pairs():
    spec = AuditSpec(mechanism=_noisy_count, priors=(ProductBernoulli(0.5, shape=(3, 1)),), prior_search=2,
                     claim=parse_claim("dp:0.4", relation="add-remove"), relation="add-remove", samples=3000, seed=4)
    result = run_audit(spec)
    assert result.claim_verdict == "refuted"
    # The chosen pair is a record present (last attribute 1) against absent (0), in either order.
    values = re.search(r"a = \[(.*?)\], b = \[(.*?)\]", result.event_test.description).groups()
    assert sorted(float(v.split()[-1]) for v in values) == [0.0, 1.0]


def test_opendp_symmetric_distance_on_unsized_data_reads_its_map_per_relation():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    from mechanisms.adapters.libraries import OpenDPMechanism

    count = dp.t.make_count(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
    wrapped = OpenDPMechanism(count >> dp.m.then_laplace(scale=2.0))
    # ε = d_in / scale: d_in = 1 for add/remove, 2 for replace-one in the symmetric distance.
    assert wrapped.natural_relation == ADD_REMOVE
    add_remove, _ = wrapped.claim()
    assert (add_remove.parameters, add_remove.relation) == ((0.5,), ADD_REMOVE)
    replace_one, _ = wrapped.claim(REPLACE_ONE)
    assert (replace_one.parameters, replace_one.relation) == ((1.0,), REPLACE_ONE)
    sized = dp.t.make_count(dp.vector_domain(dp.atom_domain(T=float, nan=False), size=3), dp.symmetric_distance())
    claim, why = OpenDPMechanism(sized >> dp.m.then_laplace(scale=2.0)).claim(ADD_REMOVE)
    assert claim is None and "no add/remove distance" in why


# -- the command line: --relation, pairs of n and n − 1 rows, --per-database ---------------------

def test_cli_add_remove_pair_files_and_a_per_database_function(tmp_path, capsys):
    import json

    from audit.cli.main import main

    (tmp_path / "count.py").write_text(
        "def noisy_count(db, rng):\n"
        "    # a function of one database whose output is a mapping: ε = 1 under add/remove\n"
        "    return {'count': db.shape[0] + rng.laplace(0.0, 1.0)}\n")
    np.save(tmp_path / "with.npy", np.array([[3.0], [1.0], [4.0]]))
    np.save(tmp_path / "without.npy", np.array([[3.0], [1.0]]))
    pair = f"{tmp_path / 'with.npy'},{tmp_path / 'without.npy'}"
    argv = ["audit", "--mechanism", f"{tmp_path / 'count.py'}:noisy_count", "--per-database", "--pair", pair,
            "--samples", "1000", "--seed", "2", "--json", "--quiet"]
    assert main(argv + ["--claim", "dp:0.3", "--relation", "add-remove"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["claim_verdict"] == "refuted" and payload["claim"]["relation"] == "add-remove"
    # The same pair against a replace-one claim: refused, with the reason.
    assert main(argv + ["--claim", "dp:0.3"]) == 2
    assert "says nothing about add/remove" in capsys.readouterr().err


def test_outputs_whose_width_follows_n_are_one_error_naming_per_database():
    pair = NeighbouringPair(np.array([[1.0], [2.0], [3.0]]), np.array([[1.0], [2.0]]))
    with MechanismRunner(lambda dbs, rng: dbs[:, :, 0], "rows", presence_column=True) as runner:
        with pytest.raises(MechanismError, match=r"2 on databases of 2 records, 3 on databases of 3 records.*--per-database"):
            runner.sample(np.stack([pair.first, pair.second]), np.random.default_rng(0))


def test_an_add_remove_pair_audited_as_replace_one_is_an_error():
    # Its presence column would reach the mechanism.
    with pytest.raises(InputError, match="relation='add-remove'"):
        AuditSpec(mechanism=_noisy_count, priors=(ADD_REMOVE_PAIR.prior(),), claim=parse_claim("dp:1"), samples=1000)


@pytest.mark.parametrize("relation", ["add-remove", "add-remove:2"])
def test_a_one_record_prior_under_add_remove_is_refused_before_any_run(relation):
    # Taking its record out leaves an empty database; the audit ran (about 30 s) and then stopped with "a database of
    # the add/remove audit has no record present", naming no argument.
    def never_run(dbs, rng):
        raise AssertionError("the mechanism ran")

    with pytest.raises(InputError, match=r"argument 'priors' \(--n\): under " + relation + r" .*hold 1 record.*--n 2"):
        AuditSpec(mechanism=never_run, priors=(ProductBernoulli(0.5, shape=(1, 1)),),
                  claim=parse_claim("dp:1", relation=relation), relation=relation, samples=1000)
    # Two records leave one: accepted.
    AuditSpec(mechanism=never_run, priors=(ProductBernoulli(0.5, shape=(2, 1)),),
              claim=parse_claim("dp:1", relation="add-remove"), relation="add-remove", samples=1000)


def test_cli_a_one_record_prior_audited_under_both_relations_names_n(tmp_path, capsys):
    from audit.cli.main import main

    (tmp_path / "f.py").write_text("def f(db, rng):\n    return float(db.sum()) + rng.laplace()\n")
    argv = ["audit", "--mechanism", f"{tmp_path / 'f.py'}:f", "--per-database", "--prior", "builtin:bernoulli",
            "--n", "1", "--k", "1", "--domain", "0,1", "--claim", "dp:1", "--samples", "500", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "(--n)" in err and "--relation replace-one" in err and len(err.splitlines()) == 1


def test_split_by_presence_of_long_databases_is_fast_and_keeps_the_groups_order():
    """Grouping rows of presence flags by np.unique(axis=0) sorted them element by element: 400 databases
    of 20,000 records took about 5 s, 2,000 of 50,000 three minutes (issue 43 §8)."""
    import time

    m, n = 400, 20_000
    batch = np.ones((m, n, 2))
    batch[::2, 7, 1] = 0.0
    batch[1::4, 19_999, 1] = 0.0
    started = time.perf_counter()
    groups = split_by_presence(batch)
    assert time.perf_counter() - started < 2.0
    # The groups by hand, in the lexicographic order of their flags (False before True): record 7 absent first,
    # then record 19,999 absent, then every record present.
    expected = [(np.arange(0, m, 2), np.delete(np.arange(n), 7)),
                (np.arange(1, m, 4), np.arange(n - 1)),
                (np.arange(3, m, 4), np.arange(n))]
    assert len(groups) == 3
    for (indices, rows), (want_indices, want_rows) in zip(groups, expected):
        np.testing.assert_array_equal(indices, want_indices)
        np.testing.assert_array_equal(rows, want_rows)
