"""Code that declares it draws only from its rng (mechanisms.base.draws_only_from_rng) is run unseeded:
the declaration must be true of the catalog and the built-in priors, and the runner must honour it."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.base import draws_only_from_rng
from mechanisms.catalog import catalog
from mechanisms.execution.chunks import GLOBAL_DRAWS_WORDS
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.inputs.priors import Categorical, FixedRest, ProductBernoulli, ProductGaussian, TwoPoint, UniformBox
from mechanisms.inputs.user_priors import EmpiricalResample, Mixture, UserPrior


def _with_global_state(seed, call):
    np.random.seed(seed)
    random.seed(seed)
    return call()


@pytest.mark.parametrize("entry", catalog(), ids=lambda e: e.name)
def test_catalog_mechanisms_draw_only_from_their_rng(entry):
    assert draws_only_from_rng(entry.mechanism)
    batch = np.repeat(entry.pairs[0].first[None], 64, axis=0)
    outputs = [_with_global_state(s, lambda: entry.mechanism(batch, np.random.default_rng(7))) for s in (1, 2)]
    np.testing.assert_array_equal(*outputs)


def _built_in_priors():
    bern = ProductBernoulli(0.3, shape=(3, 2))
    return [bern, ProductGaussian.iid_rows([0.0, 1.0], np.eye(2), 3), UniformBox(0.0, 1.0, shape=(3, 2)),
            Categorical([0.2, 0.8], shape=(3, 2)), TwoPoint(np.zeros((3, 2)), np.ones((3, 2))),
            EmpiricalResample(np.arange(12.0).reshape(6, 2), 3),
            FixedRest(np.zeros((3, 2)), 1, ProductBernoulli(0.5, shape=(1, 2))), Mixture((bern, bern), [0.5, 0.5])]


@pytest.mark.parametrize("prior", _built_in_priors(), ids=lambda p: type(p).__name__)
def test_built_in_priors_draw_only_from_their_rng(prior):
    assert draws_only_from_rng(prior)
    draws = [_with_global_state(s, lambda: prior(50, np.random.default_rng(3))) for s in (1, 2)]
    np.testing.assert_array_equal(*draws)


def test_user_code_is_not_assumed_to_declare_it():
    user = UserPrior(lambda m, rng: np.random.random((m, 3, 2)))
    assert not draws_only_from_rng(user)
    assert not draws_only_from_rng(Mixture((user, ProductBernoulli(0.5, shape=(3, 2))), [0.5, 0.5]))
    assert not draws_only_from_rng(lambda dbs, rng: dbs.sum(axis=1))


class _GlobalDraws:
    """Draws from numpy's global generator, and says whether it declares otherwise."""

    def __init__(self, declares):
        self.draws_only_from_rng = declares

    def __call__(self, dbs, rng):
        return dbs.sum(axis=1) + np.random.random((len(dbs), 1))


@pytest.mark.filterwarnings("ignore::mechanisms.errors.MechanismWarning")
@pytest.mark.parametrize("declares", [False, True])
def test_the_runner_seeds_the_global_generators_unless_told_not_to(declares):
    dbs = np.zeros((600, 2, 1))
    runs = []
    for state in (1, 2):
        np.random.seed(state)
        with MechanismRunner(_GlobalDraws(declares), "global draws", ExecutionSettings(), quiet=True) as runner:
            runs.append(runner.sample(dbs, np.random.default_rng(0)))
            # The reproducibility probe catches a false declaration.
            assert any("declares draws_only_from_rng" in note for note in runner.notes) == declares
    # Seeded per chunk: the same outputs whatever the global state was; unseeded (the declaration, false
    # here on purpose): the global state shows through.
    assert np.array_equal(*runs) == (not declares)


@pytest.mark.filterwarnings("ignore::mechanisms.errors.MechanismWarning")
@pytest.mark.parametrize("declares", [False, True])
def test_the_callers_global_generators_are_as_they_were_after_a_job(declares):
    # Seeded per chunk (no declaration): the states are put back; declared: nothing seeds them, and the
    # catalog's mechanisms and the built-in priors do not draw from them.
    mechanism = _GlobalDraws(False) if not declares else catalog()[0].mechanism
    prior = UserPrior(lambda m, rng: np.random.random((m, 3, 2))) if not declares else TwoPoint(np.zeros((3, 2)),
                                                                                                np.ones((3, 2)))
    np.random.seed(5)
    random.seed(5)
    before = np.random.get_state()[1].copy(), random.getstate()
    with MechanismRunner(mechanism, "m", ExecutionSettings(chunk_size=100), quiet=True) as runner:
        dbs = runner.draw(prior, 300, np.random.default_rng(0))
        runner.sample(np.clip(dbs, 0, 1), np.random.default_rng(1))
    np.testing.assert_array_equal(np.random.get_state()[1], before[0])
    assert random.getstate() == before[1]


# --- chunk sizes (mechanisms.base.preferred_chunk_size) -----------------------------------------

class _Asks:
    def __init__(self, size):
        self.preferred_chunk_size = size

    def __call__(self, dbs, rng):
        return dbs.sum(axis=1)


def test_chunk_size_is_the_settings_then_the_mechanisms_within_the_entry_cap_then_256():
    from mechanisms.execution.runner import DEFAULT_CHUNK_SIZE, MAX_CHUNK_ENTRIES

    assert DEFAULT_CHUNK_SIZE == 256
    with MechanismRunner(_Asks(4096), "asks", ExecutionSettings()) as runner:
        assert runner.chunk_size((10, 1)) == 4096
        # 10,000 entries a database: 2^22 // 10^4 = 419 databases a call.
        assert runner.chunk_size((100, 100)) == 2**22 // 10_000 == MAX_CHUNK_ENTRIES // 10_000
        assert runner.chunk_size((1000, 1000)) == 256  # never below the default
        assert runner.chunk_size(None) == 256  # a prior that does not say its shape
    with MechanismRunner(_Asks(4096), "asks", ExecutionSettings(chunk_size=100)) as runner:
        assert runner.chunk_size((10, 1)) == 100
    with MechanismRunner(lambda dbs, rng: dbs.sum(axis=1), "plain", ExecutionSettings()) as runner:
        assert runner.chunk_size((10, 1)) == 256
    entry = catalog()[0]
    with MechanismRunner(entry.mechanism, entry.name, ExecutionSettings()) as runner:
        assert runner.chunk_size(entry.pairs[0].first.shape) == 4096


def test_a_mechanisms_chunk_size_sets_its_calls_and_a_bad_one_is_named():
    sizes = []

    class Recording(_Asks):
        def __call__(self, dbs, rng):
            sizes.append(len(dbs))
            return dbs.sum(axis=1)

    with MechanismRunner(Recording(1000), "records", ExecutionSettings()) as runner:
        runner.sample(np.zeros((2500, 2, 1)), np.random.default_rng(0))
    assert sizes[2:] == [1000, 1000, 500]  # after the reproducibility probe's two calls of one database
    for bad in (0, 2.5, "4096", True):
        with MechanismRunner(_Asks(bad), "bad", ExecutionSettings()) as runner:
            with pytest.raises(InputError, match="preferred_chunk_size"):
                runner.sample(np.zeros((10, 2, 1)), np.random.default_rng(0))


# --- the probe tells draws from the global generators from unseeded draws (worker.run_probe) -------------

class _Counting:
    """Counts its calls; draws from ``source``: its rng, numpy's global generator, or the operating system."""

    def __init__(self, source):
        self.source, self.calls = source, 0

    def __call__(self, dbs, rng):
        self.calls += 1
        if self.source == "rng":
            noise = rng.random((len(dbs), 1))
        elif self.source == "global":
            noise = np.random.random((len(dbs), 1))
        else:
            noise = np.frombuffer(os.urandom(8 * len(dbs)), dtype=np.uint64)[:, None] / 2.0**64
        return dbs.sum(axis=1) + noise


@pytest.mark.filterwarnings("ignore::mechanisms.errors.MechanismWarning")
@pytest.mark.parametrize("source, probe_calls, global_note, unseeded_note",
                         [("rng", 2, False, False), ("global", 3, True, False), ("urandom", 3, False, True)])
def test_the_probe_notes_draws_from_the_global_generators(source, probe_calls, global_note, unseeded_note):
    mechanism = _Counting(source)
    with MechanismRunner(mechanism, "m", ExecutionSettings(), quiet=True) as runner:
        runner.sample(np.zeros((10, 2, 1)), np.random.default_rng(0))
    # The probe's calls (one database each) before the job's one chunk of 10.
    assert mechanism.calls == probe_calls + 1
    assert any(GLOBAL_DRAWS_WORDS in note for note in runner.notes) == global_note
    assert any("cannot be reproduced" in note for note in runner.notes) == unseeded_note


@pytest.mark.train
def test_the_terminal_says_a_function_draws_from_numpys_global_generator(tmp_path, capsys):
    from audit.cli.main import main

    (tmp_path / "mine.py").write_text("import numpy as np\n\n\ndef f(db, rng):\n"
                                      "    return db[:, 0].sum() + np.random.laplace(0.0, 1.0)\n")
    code = main(["audit", "--mechanism", f"{tmp_path / 'mine.py'}:f", "--per-database", "--prior",
                 "builtin:bernoulli", "--n", "4", "--records", "0", "--claim", "dp:1", "--slices", "0",
                 "--samples", "400", "--event-runs", "400", "--seed", "0"])
    out = capsys.readouterr().out
    assert code == 0
    assert f"notes:\n- mechanism '{tmp_path / 'mine.py'}:f' {GLOBAL_DRAWS_WORDS}" in out
    assert "draw from rng (rng.laplace(...) for np.random.laplace(...))" in out
