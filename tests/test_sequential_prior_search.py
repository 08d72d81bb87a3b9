"""A sequential audit's prior search refills the pairs the mechanism refuses, within its looks' plan
(audit.engine, audit.search.pair_probe): where nothing is refused the audit is the one without the refill; where
pairs are refused the search's next candidates join Θ, their probe runs are made once and reused by the later looks,
and every look completes within ``max_runs``."""

from __future__ import annotations

import numpy as np
import pytest

import audit.engine
import audit.search.pair_probe
from audit.gating.sequential import run_sequential_audit
from audit.spec import AuditSpec
from estimators.validation import InputError
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair


def _laplace_sum(dbs, rng):
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(scale=4.0, size=(len(dbs), 1))


def _one_hot_sum(dbs, rng):
    """Column sums plus noise; a record with several 1s is refused (ValueError), as the catalog's histogram does."""
    dbs = np.asarray(dbs)
    if np.any(dbs.sum(axis=2) > 1):
        raise ValueError("argument 'dbs' must have at most one 1 per record")
    return dbs.sum(axis=1) + rng.laplace(scale=4.0, size=(len(dbs), dbs.shape[2]))


def _spec(mechanism, pair, prior_search):
    # Ideal arithmetic (no float-bit test) and a claim the noise meets: the looks run to the last one.
    return AuditSpec(mechanism=mechanism, priors=(pair.prior(),), claim=parse_claim("dp:2"), records=(0,), seed=0,
                     prior_search=prior_search, quiet=True, arithmetic="ideal")


def _without_seconds(value):
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k not in ("seconds", "summary")}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


_HOT = NeighbouringPair(np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]))


def test_where_nothing_is_refused_the_sequential_audit_is_the_one_without_the_refill(monkeypatch):
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    spec = _spec(_laplace_sum, pair, 3)
    with_refill = run_sequential_audit(spec, 20000)
    assert len(with_refill.looks) == len(with_refill.schedule) > 1
    # The audit as it was without the refill: the probe given no spares, and no spare ever computed.
    real = audit.engine.probe_searched_pairs
    monkeypatch.setattr(audit.engine, "probe_searched_pairs", lambda pairs, runner, seed, spares=None:
                        real(pairs, runner, seed, None))
    monkeypatch.setattr(audit.engine, "spare_pairs", lambda *a, **k: pytest.fail("a spare was drawn"))
    without = run_sequential_audit(spec, 20000)
    assert _without_seconds(with_refill.to_dict()) == _without_seconds(without.to_dict())


def test_a_sequential_audit_refills_refused_pairs_within_its_plan_and_reuses_the_spares_runs(monkeypatch):
    # Every one of the 4 searched pairs holds a record with two 1s: without the refill the sequential audit raised
    # "refused every searched pair" (exit 2). Counted here: the runner's calls of each look's probe.
    probe_calls = []
    real = audit.search.pair_probe.refused_pairs

    def counted(pairs, runner, rng, what):
        before = runner.calls
        refused = real(pairs, runner, rng, what)
        probe_calls[-1] += runner.calls - before
        return refused

    real_probe = audit.engine.probe_searched_pairs

    def probe(*a, **k):
        probe_calls.append(0)
        return real_probe(*a, **k)
    monkeypatch.setattr(audit.search.pair_probe, "refused_pairs", counted)
    monkeypatch.setattr(audit.engine, "probe_searched_pairs", probe)
    max_runs = 20000
    sequential = run_sequential_audit(_spec(_one_hot_sum, _HOT, 4), max_runs)
    looks = len(sequential.looks)
    assert looks == len(sequential.schedule) > 1 and sequential.stopped == "budget" and not sequential.notes
    [note] = [n for n in sequential.result.notes if n.startswith("prior search: ")]
    accepted = int(note.split("further candidates of the search probed in their place accepted: ")[1].split()[0])
    assert note.startswith("prior search: 4 of 4 searched pairs left out") and 0 < accepted <= 4
    # The spares kept cost 2 runs each, at the first look only (later looks reuse them): within the 2 · 4 probe runs
    # each look plans (audit.gating.look_runs), refused pairs' probes making no counted run.
    assert probe_calls == [2 * accepted] + [0] * (looks - 1)
    # Θ: the declared pair and the spares kept, whose MI runs are within those planned for 1 + 4 priors.
    samples = sequential.schedule[-1].samples
    assert sequential.result.samples_by_purpose["mi"] == samples * (1 + accepted)
    assert sequential.runs <= max_runs


def test_a_sequential_audit_whose_spares_are_refused_too_names_prior_search():
    def refuses_any_one(dbs, rng):
        if np.any(np.asarray(dbs)[:, 0] == 1):
            raise ValueError("argument 'dbs': record 0 may not hold a 1")
        return _one_hot_sum(dbs, rng)

    with pytest.raises(InputError, match=r"--prior-search 2: the mechanism refused every searched pair .* further "
                                         r"candidates? of the search probed in their place accepted"):
        run_sequential_audit(_spec(refuses_any_one, _HOT, 2), 20000)


def test_refused_probe_calls_are_outside_max_runs_within_their_stated_bound():
    # audit.search.pair_probe, "Refused calls are outside --max-runs": per look at most 2N refused pairs (N searched,
    # N spares), each tried once on its two databases (a refusal is never retried), that attempt locating the refused
    # one (two more calls of one database): 2N · 2 · 2 databases a look. Counted here on the mechanism itself,
    # every database it was called on, returned or refused.
    called = {"returned": 0, "refused": 0}

    def counted(dbs, rng):
        try:
            outputs = _one_hot_sum(dbs, rng)
        except ValueError:
            called["refused"] += len(dbs)
            raise
        called["returned"] += len(dbs)
        return outputs

    searched, max_runs = 4, 20000
    spec = _spec(counted, _HOT, searched)
    sequential = run_sequential_audit(spec, max_runs)
    looks, retries = len(sequential.looks), spec.execution.retries
    assert looks > 1 and retries == 2  # the default --retries
    assert sequential.runs <= max_runs  # the counted runs: within the budget
    # Every searched pair is refused (each holds a record with two 1s): refused calls are made at every look, and
    # never more than the bound, 2 · 4 · 2 · 2 = 32 a look, whatever the retries.
    spares = audit.search.pair_probe.SPARE_PROBES_PER_PAIR * searched
    assert spares == 4 and 0 < called["refused"] <= looks * (searched + spares) * 2 * 2
    assert called["refused"] % looks == 0  # each look probes again, the same refusals
