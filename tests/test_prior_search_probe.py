"""The prior search's pairs a mechanism refuses are left out with a note (audit.search.pair_probe).

A combination sweep found ``--mechanism catalog:histogram_buggy --prior-search 3`` failing with exit 1: StatDP's
patterns set a record to every column's high end (several 1s), which the one-hot histogram refuses.
"""

from __future__ import annotations

import json
import pickle
import re

import numpy as np
import pytest

from audit.cli.main import main
from audit.search.pair_probe import probe_searched_pairs, refusal
from estimators.validation import InputError
from mechanisms.errors import MechanismError, StatisticError, refuses
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

FAST = ["--samples", "1000", "--slices", "0", "--set", "critic.max_steps=50", "--seed", "3"]


def _one_hot_only(dbs, rng=None):
    """Column sums plus noise; a record with several 1s is refused (ValueError), as the catalog's histogram does."""
    dbs = np.asarray(dbs)
    if np.any(dbs.sum(axis=2) > 1):
        raise ValueError("argument 'dbs' must have at most one 1 per record")
    return dbs.sum(axis=1) + np.random.default_rng(rng).laplace(size=(len(dbs), dbs.shape[2]))


def _broken_on_empty(dbs, rng=None):
    """A bug: divides by the count of 1s, so an all-zero database raises ZeroDivisionError (not a refusal)."""
    dbs = np.asarray(dbs)
    if np.any(dbs.sum(axis=(1, 2)) == 0):
        raise ZeroDivisionError("division by zero")
    return dbs.sum(axis=1) / dbs.sum(axis=(1, 2))[:, None]


def _pairs():
    ok_first, ok_second = np.zeros((2, 2)), np.zeros((2, 2))
    ok_second[0, 0] = 1.0  # record 0 moves into bin 0: one 1 at most per record
    bad_first, bad_second = np.eye(2), np.eye(2)
    bad_second[0] = 1.0  # record 0 holds two 1s: refused
    return [NeighbouringPair(bad_first, bad_second, why="two 1s"), NeighbouringPair(ok_first, ok_second, why="one 1")]


def test_the_probe_leaves_out_refused_pairs_and_says_how_many_and_why():
    pairs = _pairs()
    with MechanismRunner(_one_hot_only, "onehot") as runner:
        kept, note, probed = probe_searched_pairs(pairs, runner, seed=0, spares=lambda count: [])
        unfilled = probe_searched_pairs(pairs, runner, seed=0)[1]  # no spares
    assert kept == [pairs[1]] and probed == 2
    assert note.startswith("prior search: 1 of 2 searched pairs left out, the mechanism refused its record values")
    assert "first: two 1s: mechanism 'onehot' raised ValueError" in note
    assert note.endswith("; the search had no further candidate to probe in their place: 1 of the 2 searched pairs "
                         "asked for join Θ")
    assert unfilled.endswith("; no further candidate was probed in their place: 1 of the 2 searched pairs asked for "
                             "join Θ")


def _spare(first_row, why):
    first, second = np.zeros((2, 2)), np.zeros((2, 2))
    second[0] = first_row
    return NeighbouringPair(first, second, why=why)


def test_refused_pairs_are_replaced_by_the_searchs_spares_the_mechanism_accepts():
    # The spares are probed in order until as many pairs as searched are kept: the refused spare is left out, the
    # first accepted one fills the place, and the third is neither probed nor kept.
    pairs = _pairs()
    spares = [_spare([1.0, 1.0], "spare two 1s"), _spare([0.0, 1.0], "spare one 1"), _spare([1.0, 0.0], "unused")]
    asked = []

    def more(count):
        asked.append(count)
        return spares

    with MechanismRunner(_one_hot_only, "onehot") as runner:
        kept, note, probed = probe_searched_pairs(pairs, runner, seed=0, spares=more)
        calls = runner.calls
    assert asked == [2] and kept == [pairs[1], spares[1]]
    assert probed == 4 and calls == 2 * len(kept)  # the runner counts the accepted pairs' runs, one of each database
    assert note.endswith("; 1 of 2 further candidates of the search probed in their place accepted: 2 of the 2 "
                         "searched pairs asked for join Θ")


def test_the_spares_are_not_asked_for_where_no_pair_is_refused():
    ok = _pairs()[1]

    def more(count):
        raise AssertionError("no spare is needed")

    with MechanismRunner(_one_hot_only, "onehot") as runner:
        assert probe_searched_pairs([ok], runner, seed=0, spares=more) == ([ok], None, 1)


def test_a_search_whose_every_pair_and_spare_is_refused_names_the_flag():
    bad = _pairs()[0]
    with MechanismRunner(_one_hot_only, "onehot") as runner, \
            pytest.raises(InputError, match=r"--prior-search 1: the mechanism refused every searched pair \(first: two "
                                            r"1s: .*; 0 of 1 further candidate of the search probed in their place "
                                            r"accepted\)"):
        probe_searched_pairs([bad], runner, seed=0, spares=lambda count: [_spare([1.0, 1.0], "spare")])


def test_the_probe_reports_a_failure_that_is_no_refusal():
    pairs = _pairs()  # the second pair's first database holds no 1
    with MechanismRunner(_broken_on_empty, "broken") as runner, \
            pytest.raises(MechanismError, match="mechanism 'broken' raised ZeroDivisionError on prior search probe run"):
        probe_searched_pairs(pairs, runner, seed=0)


def _refusal_error(message, refused=True, kind=MechanismError):
    error = kind(message, mechanism="mechanism 'm'")
    error.refused = refused
    return error


def test_a_refusal_is_the_mechanisms_input_or_value_error_only():
    refused = _refusal_error("mechanism 'm' raised InputError on database 0: no")
    assert refusal(refused) == "mechanism 'm' raised InputError on database 0: no"
    # The flag says it, not the words: an error that only reads like a refusal is a failure, and so is a statistic's.
    assert refusal(_refusal_error("mechanism 'm' raised InputError on database 0: no", refused=False)) is None
    assert refusal(_refusal_error("statistic 's' raised ValueError: no", kind=StatisticError)) is None
    assert [refuses(error) for error in (ValueError(), InputError("x"), KeyError(3), ZeroDivisionError())] == \
        [True, True, False, False]
    # It travels back from a worker process with the error (pickled).
    back = pickle.loads(pickle.dumps(refused))
    assert back.refused and str(back) == str(refused) and type(back) is MechanismError
    assert not pickle.loads(pickle.dumps(_refusal_error("m", refused=False))).refused


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.integration)])
def test_the_runners_error_on_a_refused_batch_is_a_refusal_after_its_retries(workers):
    # The runner's final error (its words rewritten with the job's database numbers, after any retries) is still a
    # refusal, in this process and from a worker process (pickled back); a bug's error is not.
    settings = ExecutionSettings(workers=workers, retries=2)
    with MechanismRunner(_one_hot_only, "onehot", settings) as runner:
        with pytest.raises(MechanismError, match=r"mechanism 'onehot' raised ValueError on ") as caught:
            runner.sample(np.ones((1, 2, 2)), np.random.default_rng(0), what="probe", budget=None)
        assert caught.value.refused and type(caught.value) is MechanismError
    with MechanismRunner(_broken_on_empty, "broken", settings) as runner:
        with pytest.raises(MechanismError, match=r"mechanism 'broken' raised ZeroDivisionError on ") as caught:
            runner.sample(np.zeros((1, 2, 2)), np.random.default_rng(0), what="probe", budget=None)
        assert not caught.value.refused


@pytest.mark.train
def test_the_catalog_histogram_with_a_prior_search_completes_leaving_the_refused_pairs_out(capsys):
    status = main(["audit", "--mechanism", "catalog:histogram_buggy", "--prior-search", "12", "--json", *FAST])
    out = capsys.readouterr()
    assert status == 0, out.err
    result = json.loads(out.out)
    notes = [n for n in result["notes"] if n.startswith("prior search: ")]
    assert len(notes) == 1, result["notes"]
    left_out = int(re.match(r"prior search: (\d+) of 12 searched pairs left out", notes[0]).group(1))
    assert 0 < left_out < 12 and "at most one 1 per record" in notes[0]
    # The search's 11 further candidates (it has 23 distinct pairs) were probed in their place, one accepted.
    audited = int(re.search(r"accepted: (\d+) of the 12 searched pairs asked for join Θ$", notes[0]).group(1))
    assert audited == 12 - left_out + 1
    assert result["samples_by_purpose"]["pair_probe"] == 2 * (12 + 11)


@pytest.mark.train
def test_a_search_whose_every_pair_is_refused_is_refilled_from_its_spares(capsys):
    # All 3 searched pairs hold a record with several 1s; it exited 2 ("refused every searched pair"). The search's
    # next 3 candidates are probed in their place and the 2 the histogram accepts are audited.
    status = main(["audit", "--mechanism", "catalog:histogram_buggy", "--prior-search", "3", "--json", *FAST])
    out = capsys.readouterr()
    assert status == 0, out.err
    notes = [n for n in json.loads(out.out)["notes"] if n.startswith("prior search: ")]
    assert notes[0].startswith("prior search: 3 of 3 searched pairs left out")
    assert notes[0].endswith("; 2 of 3 further candidates of the search probed in their place accepted: 2 of the 3 "
                             "searched pairs asked for join Θ")


def test_a_mechanism_failing_on_a_searched_pair_other_than_by_refusing_it_is_reported_failing(tmp_path, capsys,
                                                                                                monkeypatch):
    """A bug on an all-zero database (which the prior, 12 fair coins, draws with probability 2^-12): the searched
    pairs hold one, so the probe raises the mechanism's failure and the audit exits 1 naming it."""
    import audit.engine

    raised = []

    def probe(*a, **k):
        try:
            return probe_searched_pairs(*a, **k)
        except MechanismError as error:
            raised.append(error)
            raise
    monkeypatch.setattr(audit.engine, "probe_searched_pairs", probe)
    mech = tmp_path / "mine.py"
    mech.write_text("def f(db, rng):\n    return 1.0 / float(db.sum()) + rng.laplace()\n")
    status = main(["audit", "--mechanism", f"{mech}:f", "--per-database", "--claim", "dp:1", "--prior",
                   "builtin:bernoulli", "--n", "12", "--prior-search", "3", *FAST])
    err = capsys.readouterr().err
    assert status == 1 and "raised ZeroDivisionError" in err, err
    assert len(raised) == 1 and "ZeroDivisionError" in str(raised[0])


def test_left_out_keeps_the_order_and_words_one_and_several_refusals():
    from audit.search.pair_probe import left_out

    pairs = [NeighbouringPair(np.zeros((1, 1)), np.ones((1, 1)), why=f"p{i}") for i in range(3)]
    kept, first, note = left_out(pairs, [(0, "no")], "searched")
    assert kept == pairs[1:] and first == "first: p0: no"
    assert note == ("1 of 3 searched pairs left out, the mechanism refused its record values in one probe run of "
                    "each database (first: p0: no)")
    kept, _, note = left_out(pairs, [(0, "no"), (2, "nor")], "structured", " on record 4")
    assert kept == [pairs[1]]
    assert note.startswith("2 of 3 structured pairs on record 4 left out, the mechanism refused their record values")
    assert left_out(pairs[:1], [(0, "no")], "searched")[2].startswith("1 of 1 searched pair left out")
