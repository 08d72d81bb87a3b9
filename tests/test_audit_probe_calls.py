"""Every call of the mechanism an audit makes is counted: ``samples`` (the runs) plus ``probe_calls`` (the runner's
probe, :attr:`mechanisms.execution.runner.MechanismRunner.probe_calls`), against a mechanism that counts the databases
it is called on, and the run-count line names the probe's calls (:func:`audit.report.plain_words.runs_line`).

The expected probe calls are written here from what the probe does (:func:`mechanisms.execution.worker.run_probe`):
two calls on one database with one seed, the global generators seeded otherwise the second time, and a third seeded
as the first where the two outputs differ, as a function drawing from NumPy's global generator makes them.
"""

from __future__ import annotations

import numpy as np
import pytest

from audit.engine import run_audit
from audit.report.content import facts
from audit.report.plain_words import runs_line
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint

CALLED = {"databases": 0}


def seeded_sum(dbs, rng):
    """The databases' sums plus Laplace noise from ``rng``, rounded (classifier critics, no training): the probe's
    two outputs agree."""
    CALLED["databases"] += len(dbs)
    return np.round(dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (len(dbs), 1)))


def global_sum(dbs, rng):
    """The same from NumPy's global generator: the probe's two outputs differ, and a third call is made."""
    CALLED["databases"] += len(dbs)
    return np.round(dbs.sum(axis=(1, 2))[:, None] + np.random.laplace(0.0, 1.0, (len(dbs), 1)))


@pytest.mark.parametrize("mechanism, probe", [(seeded_sum, 2), (global_sum, 3)])
def test_the_audit_counts_the_probes_calls_beside_its_runs(mechanism, probe):
    CALLED["databases"] = 0
    pair = TwoPoint(np.zeros((3, 1)), np.array([[1.0], [0.0], [0.0]]))
    result = run_audit(AuditSpec(mechanism=mechanism, priors=[pair], claim=parse_claim("dp:1"), samples=1000, seed=3))
    assert result.probe_calls == probe
    assert CALLED["databases"] == result.samples + result.probe_calls
    assert result.to_dict()["probe_calls"] == probe
    line = runs_line(result)
    assert line.startswith(f"mechanism calls: {result.samples + probe} = {result.samples} runs")
    assert f" + {probe} for the probe, two calls on one database with one seed, " in line
    assert ("and a third seeded as the first" in line) == (probe == 3)
    assert dict(facts(result))["mechanism calls"].startswith(f"{result.samples + probe} = {result.samples} runs + ")
