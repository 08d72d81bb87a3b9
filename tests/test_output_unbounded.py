"""Output features held in every run of one input and never in the other, named (mechanisms.outputs.unbounded)."""

import re

import numpy as np

from audit.engine import run_audit
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.outputs.encoding import OutputEncoder
from mechanisms.outputs.unbounded import MIN_UNBOUNDED_RUNS, UNBOUNDED, unbounded_differences


def test_a_value_in_every_run_of_one_input_and_none_of_the_other_is_named_with_its_counts():
    rng = np.random.default_rng(0)
    # Column 0: exactly 0 under A, Laplace under B (never 0 in law); column 1: the same law under both.
    a = np.column_stack([np.zeros(40), rng.laplace(size=40)])
    b = np.column_stack([rng.laplace(size=30), rng.laplace(size=30)])
    assert unbounded_differences(a, b, "A", "B") == [f"value y[0] = 0 in 40 of 40 runs of A, never in the 30 runs of B: "
                                                     f"{UNBOUNDED}"]
    # Swapped inputs swap the words; a value B also takes is no unbounded difference; too few runs say nothing.
    assert unbounded_differences(b, a, "B", "A") == [f"value y[0] = 0 in 40 of 40 runs of A, never in the 30 runs of B: "
                                                     f"{UNBOUNDED}"]
    b[3, 0] = 0.0
    assert unbounded_differences(a, b, "A", "B") == []
    assert unbounded_differences(a[:MIN_UNBOUNDED_RUNS - 1], rng.laplace(size=(30, 2)), "A", "B") == []


def test_a_key_released_in_every_run_of_one_input_is_named_once_by_its_key():
    # Dicts: 'bob' under both (noisy), 'alice' at 3.0 in every run of A only. Read from the raw dicts: alice's
    # key is the one fact; its value column (3.0, constant) says the same again and is not repeated.
    rng = np.random.default_rng(1)
    encoder = OutputEncoder()
    with_alice = [{"alice": 3.0, "bob": float(rng.integers(40, 60))} for _ in range(25)]
    without = [{"bob": float(rng.integers(40, 60))} for _ in range(25)]
    rows_a = np.array([encoder(out) for out in with_alice])
    rows_b = np.array([encoder(out) for out in without])
    sentences = unbounded_differences(rows_a, rows_b, "A", "B", encoder=encoder)
    assert sentences[0] == f"key 'alice' released in 25 of 25 runs of A, never in the 25 runs of B: {UNBOUNDED}"
    assert not any("y{'alice'} = 3" in sentence for sentence in sentences)
    # The mapping's length, 2 against 1, is the other fact of every run (order of rank: keys first).
    assert f"value len(y) = 2 in 25 of 25 runs of A, never in the 25 runs of B: {UNBOUNDED}" in sentences


def unnoised_zero_count(dbs, rng):
    """A counting query that adds Laplace noise to every count but 0, which it releases exactly (ε = ∞)."""
    counts = dbs[:, :, 0].sum(axis=1)
    noisy = counts + rng.laplace(0.0, 1.0, size=len(counts))
    return np.where(counts == 0, 0.0, noisy)[:, None]


def test_an_exact_zero_count_is_refuted_and_named_unbounded_beside_the_certificate():
    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    spec = AuditSpec(mechanism=unnoised_zero_count, priors=(pair.prior(),), claim=parse_claim("dp:1"),
                     samples=1000, records=(0,), seed=0, arithmetic="ideal")  # the event test's own counts
    result = run_audit(spec)
    assert result.claim_verdict == "refuted"
    event = result.event_test
    # A rate-ratio certificate makes Poisson numbers of runs of each input (runs_made), else runs_per_input each.
    runs = event.runs_made or (event.runs_per_input, event.runs_per_input)
    # Database a (record 0 at 0) has count 0: released exactly in every run; b never (Laplace).
    (sentence,) = event.unbounded_differences
    found = re.fullmatch(r"value y\[0\] = 0 in (\d+) of (\d+) runs of a, never in the (\d+) runs of b: "
                         + re.escape(UNBOUNDED), sentence)
    assert found and found[1] == found[2] and sorted((int(found[1]), int(found[3]))) == sorted(runs)
    assert UNBOUNDED in event.description
    assert result.to_dict()["event_test"]["unbounded_differences"] == event.unbounded_differences


def test_a_sequential_audit_stops_at_its_first_look_on_an_exact_zero_count():
    from audit.gating.sequential import run_sequential_audit

    pair = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))
    spec = AuditSpec(mechanism=unnoised_zero_count, priors=(pair.prior(),), claim=parse_claim("dp:1"), records=(0,),
                     seed=0)
    audit = run_sequential_audit(spec, 60_000)
    assert audit.stopped == "refuted" and len(audit.looks) == 1 and len(audit.schedule) > 1
    first = audit.schedule[0]
    # The first look's runs: its MI sample and its two event tests' certification runs of the two inputs, and the
    # float-bit probe's runs where the probe output shows no bits below the grid (an exact zero count), no more.
    from audit.gating.look_runs import FLOAT_PROBE_RUNS

    assert first.early and audit.runs <= first.samples + 2 * 2 * first.event_runs + FLOAT_PROBE_RUNS
    assert audit.result.event_test.unbounded_differences
