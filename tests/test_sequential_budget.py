"""Sequential audits within ``max_runs`` (audit.gating.sequential, audit.gating.look_runs): the last look fits, counted
by a mechanism that counts its own calls, where its outputs hold float bits only sometimes and where the looks may
certify different pairs; a look that an unplanned float-bit test shows past the budget is not run."""

from __future__ import annotations

import numpy as np
import pytest

from audit.gating.look_runs import FLOAT_PROBE_RUNS
from audit.gating.sequential import run_sequential_audit
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.snapping import snap
from test_sequential import RUNNER_PROBE_CALLS, _CountingMechanism


def _sometimes_thirds(share):
    """A snapped Laplace sum (on the 2^-32 grid), divided by 3 in a ``share`` of the runs: those outputs hold bits
    below the grid (two in three of them: a grid value divisible by 3 stays on it), as mean_noisy_count's quotient
    does when its noisy count is above 1."""
    def mechanism(dbs, rng):
        y = snap(dbs[:, :, 0].sum(axis=1) + rng.laplace(0.0, 1.0, len(dbs)))
        return np.where(rng.random(len(dbs)) < share, y / 3, y)[:, None]
    return mechanism


def _rounded_sum(dbs, rng):
    # + 0.0: integer outputs, no bit to read; np.round leaves −0.0 on [−½, 0), a sign the float-bit test reads.
    return np.round(dbs[:, :, 0].sum(axis=1) + rng.laplace(0.0, 1.0, len(dbs)))[:, None] + 0.0


def _pair_spec(mechanism, seed):
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    return AuditSpec(mechanism=mechanism, priors=(pair.prior(),), claim=parse_claim("dp:1"), records=(0,), seed=seed)


def test_outputs_with_float_bits_in_half_the_runs_get_a_last_look_that_fits_them():
    # Seed 0: the runner's one probe output is on the grid, so a schedule from it alone would plan 3 runs per sample
    # (2,000 samples in 6,000 runs) while every look's MI sample shows float bits and runs the float-bit test.
    counting = _CountingMechanism(_sometimes_thirds(0.5))
    result = run_sequential_audit(_pair_spec(counting, 0), 6000)
    assert result.stopped == "budget" and not result.notes
    assert len(result.looks) == len(result.schedule)  # the last look completed
    # The calls the mechanism saw: the runner's probe's, the float-bit probe's 64 outputs, and the looks' runs.
    made = counting.calls - RUNNER_PROBE_CALLS
    assert made == result.runs == FLOAT_PROBE_RUNS + sum(look.runs for look in result.looks) <= 6000
    # A sample costs one MI run and, per input, an event-test run and a float-bit-test run: 5 runs.
    assert result.schedule[-1].samples == (6000 - FLOAT_PROBE_RUNS) // 5
    assert result.result.float_event_test is not None


def test_a_look_that_an_unplanned_float_bit_test_puts_past_the_budget_is_not_run():
    # One run in 50 divided by 3: seed 1's 65 probe outputs are all on the grid, so the looks are planned at 3 runs
    # per sample, but look 2's 400-sample MI sample shows float bits and its float-bit test runs. The last look
    # (9,978 samples) would then plan 5 runs per sample, 49,890 > 30,000: it is not run, no call spent on it.
    counting = _CountingMechanism(_sometimes_thirds(0.02))
    result = run_sequential_audit(_pair_spec(counting, 1), 30000)
    last = result.schedule[-1]
    assert last.samples == (30000 - FLOAT_PROBE_RUNS) // 3
    assert len(result.looks) == len(result.schedule) - 1 and result.stopped == "budget"
    assert any("was not run" in note for note in result.notes)
    # The calls the mechanism saw are the probes' and the looks' that were run: none was spent on the last look.
    made = counting.calls - RUNNER_PROBE_CALLS
    assert made == result.runs == FLOAT_PROBE_RUNS + sum(look.runs for look in result.looks) < 30000


def test_looks_that_may_certify_different_pairs_leave_the_last_look_their_runs():
    # Two pairs of Θ sharing the all-zero database: a correct mechanism's event test picks either at each look, and a
    # look on the other pair than the last one's makes runs the last look does not reuse. Seeds 0 and 1 do that.
    zero = np.zeros((4, 1))
    pairs = [NeighbouringPair(zero, np.eye(4)[:, [i]]) for i in (0, 1)]
    for seed in (0, 1):
        counting = _CountingMechanism(_rounded_sum)
        spec = AuditSpec(mechanism=counting, priors=tuple(p.prior() for p in pairs), claim=parse_claim("dp:1"),
                         seed=seed)
        result = run_sequential_audit(spec, 20000)
        assert result.stopped == "budget" and not result.notes
        assert len(result.looks) == len(result.schedule)  # the last look completed
        made = counting.calls - RUNNER_PROBE_CALLS
        assert made == result.runs == FLOAT_PROBE_RUNS + sum(look.runs for look in result.looks) <= 20000
        # The schedule, by hand: integer outputs, so a sample costs 4 runs (one per prior of Θ, one of each input of
        # the event test's pair); the early looks of 400 and 800 samples keep their 2 event runs per sample out of
        # the last look's budget, and the early look its at most 100 per input.
        early, last = result.schedule[0], result.schedule[-1]
        ordinary = [look.samples for look in result.schedule[1:-1]]
        assert early.early and ordinary == [400, 800]
        assert last.samples == (20000 - FLOAT_PROBE_RUNS - 2 * 100 - 2 * sum(ordinary)) // 4


def _float_laplace_sum(dbs, rng):
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (len(dbs), 1))


@pytest.mark.train
def test_both_event_tests_selection_runs_are_planned_under_a_prior_that_is_not_a_two_point_prior():
    # Under a Bernoulli prior both event tests choose on selection runs of their own (the event test's and the
    # float-bit test's, event_runs each); the plan counted one. `--prior builtin:bernoulli --n 3 --claim dp:1
    # --max-runs 6000` planned a look of 748 samples at 6,000 runs, which made 6,184 (748 of them the float-bit
    # test's selection) and stopped after its work: "the first look's audit needs 6184 mechanism runs or more".
    from mechanisms.inputs.priors import ProductBernoulli

    counting = _CountingMechanism(_float_laplace_sum)
    spec = AuditSpec(mechanism=counting, priors=(ProductBernoulli(0.5, shape=(3, 1)),), claim=parse_claim("dp:1"),
                     seed=0)
    result = run_sequential_audit(spec, 6000)
    assert len(result.looks) == len(result.schedule) and not result.notes  # the last look completed
    made = counting.calls - RUNNER_PROBE_CALLS
    assert made == result.runs <= 6000
    # The plan by hand, per sample s (event runs = samples): s MI runs; per test (event, float-bit) s selection runs
    # and 2s certification runs; the float-bit pilot 2 min(s, 2000); the 8 structured pairs' probe, 16.
    s = result.schedule[-1].samples
    assert result.schedule[-1].planned_runs == s + 2 * (s + 2 * s) + 2 * min(s, 2000) + 16 <= 6000


def test_the_float_probe_on_a_degenerate_prior_draws_independent_runs_off_the_databases_stream():
    # A prior whose 64 probe databases are all one database (every record 0): the probe's job is not a job of one
    # database (no `one_database`), so its runs are a chunk on its own seed, not that database's stream of runs,
    # which the looks' event tests read. Pinned: 64 distinct outputs (noise of 2^40 values: a repeat has
    # probability below 64² / 2^41 ≈ 2·10⁻⁹), none from the cache, and none among the stream's first runs.
    from audit.gating.look_runs import plans_float_runs
    from audit.gating.sequential import _look_runner
    from mechanisms.inputs.priors import ProductBernoulli

    made = []

    def integer_noise(dbs, rng):
        y = rng.integers(0, 2**40, size=(len(dbs), 1)).astype(np.float64) + dbs.sum(axis=(1, 2))[:, None]
        made.append(y.copy())
        return y

    spec = AuditSpec(mechanism=integer_noise, priors=(ProductBernoulli(0.0, shape=(3, 1)),),
                     claim=parse_claim("dp:1"), seed=0)
    with _look_runner(spec) as runner:
        assert plans_float_runs(spec, runner) is False  # integer outputs: the 64 probe runs are made
        probe = np.concatenate(made)[-FLOAT_PROBE_RUNS:, 0]
        assert runner.calls == FLOAT_PROBE_RUNS and runner.cache.hits == 0
        assert len(np.unique(probe)) == FLOAT_PROBE_RUNS
        runner.cache.start_look()
        stream = runner.sample(np.broadcast_to(np.zeros((3, 1)), (200, 3, 1)), np.random.default_rng(1),
                               budget="event_runs", one_database=True)
        assert not np.isin(stream[:, 0], probe).any() and runner.cache.hits == 0
