"""dp-epsilon-benchmark: the quick run, the run budget split, and the classifier baseline on known mechanisms.

Expected values are computed here: the split of 70,000 runs written out, Clopper–Pearson by
scipy's beta quantiles, and the true ε of the audited entries from their closed forms.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from experiments.dp_epsilon_benchmark import (classifier_audit, dp_entries, miaudit_split, one_database_at_a_time,
                                              split_runs, targets)
from mechanisms.adapters.callables import PerDatabaseMechanism
from experiments.framework import read_table
from experiments.registry import run
from mechanisms.catalog import catalog, get_entry


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dp_benchmark")
    result = run("dp-epsilon-benchmark", out_dir=out, quick=True, seed=0, device="cpu")
    names = ("benchmark", "targets", "benchmark_runs", "svt_budget", "benchmark_per_database",
             "targets_per_database", "benchmark_per_database_runs")
    return {name: read_table(out / f"{name}.csv") for name in names}, result


@pytest.mark.integration
@pytest.mark.train
def test_quick_run_tables_and_equal_runs(quick_run):
    tables, result = quick_run
    rows = tables["benchmark_runs"]
    assert set(rows["mechanism"]) == {"histogram_buggy", "laplace_sum"}
    # the budget: baseline 1750 training + 2·875 selection + 2·1750 certification runs; miaudit 2334 prior draws
    # + 2·2333 certification runs (2334 if it skips the event test; fewer with a rate-ratio certificate, which runs
    # each input a Poisson number of times within the 2333)
    assert set(rows["baseline_runs"]) == {7000} and all(2334 <= runs <= 7000 for runs in rows["miaudit_runs"])
    for runs, certificate in zip(rows["miaudit_runs"], rows["miaudit_certificate"]):
        assert certificate in ("clopper-pearson", "odds-ratio", "rate-ratio", "none")
        # Only the rate ratio's Poisson numbers of runs, or no event test at all, make fewer than the budget.
        assert runs == 7000 or certificate in ("rate-ratio", "none")
    assert any(f.startswith("Vectorized: miaudit's certificates: ") for f in result.findings)
    for i, name in enumerate(rows["mechanism"]):
        true_eps = {"histogram_buggy": 1 / 0.5, "laplace_sum": 1.0}[str(name)]  # Laplace: Δ₁/b
        assert rows["true_epsilon"][i] == pytest.approx(true_eps)
        for who in ("miaudit", "baseline"):
            assert 0.0 <= rows[f"{who}_epsilon"][i] <= rows["pair_epsilon"][i] + 1e-9, (name, who)
    summary = tables["benchmark"]
    for i, name in enumerate(summary["mechanism"]):
        ours = np.asarray(rows["miaudit_epsilon"])[np.asarray(rows["mechanism"]) == name]
        assert summary["miaudit_median"][i] == pytest.approx(np.median(ours))
        assert summary["miaudit_min"][i] == pytest.approx(ours.min())
    assert list(tables["targets"]["result"]) and set(tables["targets"]["result"]) <= {"PASS", "FAIL"}
    assert set(tables["svt_budget"]["mechanism"]) == {"svt4"}
    assert any("seed-to-seed spread" in f for f in result.findings)
    spread = np.asarray(summary["miaudit_max"]) - np.asarray(summary["miaudit_min"])
    np.testing.assert_allclose(summary["miaudit_spread"], spread)


@pytest.mark.integration
@pytest.mark.train
def test_quick_run_one_database_at_a_time_regime(quick_run):
    """The one-database-at-a-time regime is labelled, audits laplace_sum at the same runs and seed as the
    vectorized one."""
    tables, result = quick_run
    rows, vectorized = tables["benchmark_per_database_runs"], tables["benchmark_runs"]
    assert list(rows["mechanism"]) == ["laplace_sum"]
    assert set(rows["baseline_runs"]) == {7000} and all(2334 <= runs <= 7000 for runs in rows["miaudit_runs"])
    first = list(vectorized["mechanism"]).index("laplace_sum")
    assert rows["seed"][0] == vectorized["seed"][first]
    for who in ("miaudit", "baseline"):
        assert 0.0 <= rows[f"{who}_epsilon"][0] <= 1.0 + 1e-9  # laplace_sum's true ε
    assert set(tables["targets_per_database"]["result"]) <= {"PASS", "FAIL"}
    assert any(f.startswith("One database at a time (headline):") for f in result.findings)
    assert any(f.startswith("Vectorized:") for f in result.findings)


def test_split_of_the_runs_matches_the_audit_budget():
    train, select, certify = split_runs(70000)
    assert (train, select, certify) == (17500, 8750, 17500)
    assert train + 2 * select + 2 * certify == 70000
    # miaudit: R/3 prior draws and R/3 certification runs per input, exactly R in all
    for total in (7000, 70000, 140000):
        samples, event_runs = miaudit_split(total)
        assert samples + 2 * event_runs == total and abs(samples - total / 3) <= 2 and abs(event_runs - total / 3) <= 1


def test_dp_entries_are_exactly_the_dp_and_ldp_claims():
    expected = [e.name for e in catalog() if e.claimed.notion in ("dp", "ldp")]
    assert dp_entries() == expected and "laplace_mi_dp_sum" not in expected and "svt34_parallel" in expected


def test_classifier_baseline_stays_under_the_true_epsilon_and_finds_randomized_response():
    entry = get_entry("randomized_response")
    result = classifier_audit(entry, 35000, seed=4)
    assert result["runs"] == 35000
    # one flipped bit: the best event is that report; 10,000 runs per input certify close to ε = 1
    assert 0.6 < result["epsilon"] <= 1.0
    # the bound is what Clopper–Pearson at α/2 gives at the ideal event's frequencies, at most
    p, n = 1 / (1 + math.exp(-1.0)), 10000
    lower, upper = stats.beta.ppf(0.025, p * n, n - p * n + 1), stats.beta.ppf(0.975, (1 - p) * n + 1, p * n)
    assert result["epsilon"] <= math.log(lower / upper) + 0.1


def test_one_database_at_a_time_calls_the_mechanism_per_database():
    entry = get_entry("laplace_sum")
    calls = []

    def counting(dbs, rng):
        calls.append(len(dbs))
        return entry.mechanism(dbs, rng)
    wrapped = one_database_at_a_time(replace(entry, mechanism=counting))
    assert isinstance(wrapped.mechanism, PerDatabaseMechanism)
    db = entry.pairs[0].first
    outputs = wrapped.mechanism(np.repeat(db[None], 4000, axis=0), np.random.default_rng(0))
    assert calls == [1] * 4000 and outputs.shape == (4000, entry.output_dim)
    # Laplace noise on the column sums: the mean output is the database's column sums (closed form), within
    # 4 standard errors (Lap(b = k/ε = 2): standard deviation 2√2).
    np.testing.assert_allclose(outputs.mean(axis=0), db.sum(axis=0), atol=4 * 2 * math.sqrt(2) / math.sqrt(4000))


def test_stage_seconds_parts_fit_within_their_stages():
    # A profile by stage of two small audits of each auditor: every stage within its auditor's total, the event
    # test's parts within it, the μ certificate's within it, and the joint binomial test run (laplace_sum's μ
    # certificate tests its point jointly).
    from estimators.neural import CriticConfig
    from experiments.dp_epsilon_benchmark import stage_seconds

    seconds = stage_seconds(["laplace_sum", "histogram_buggy"], total_runs=9000, critic=CriticConfig(max_steps=200))
    for who in ("miaudit", "baseline"):
        stages = {stage: value for (owner, stage), value in seconds.items() if owner == who}
        assert all(value >= 0 for value in stages.values()) and stages["rest"] >= 0
        top = [value for stage, value in stages.items() if stage not in ("total", "rest") and not stage.startswith(" ")]
        assert sum(top) + stages["rest"] == pytest.approx(stages["total"])
    parts = {stage.strip(): value for (owner, stage), value in seconds.items() if owner == "miaudit"}
    event_parts = ("event choice on held-out draws", "certification runs", "μ certificate")  # disjoint calls
    assert sum(parts[name] for name in event_parts) <= parts["event test"] * (1 + 1e-9)
    assert 0 < parts["ideal rounding of the runs scored"] <= parts["event test"]  # some of it within the μ certificate
    assert 0 < parts["its joint binomial test"] <= parts["μ certificate"]
    assert parts["its choice of points"] + parts["its event optimum"] <= parts["μ certificate"]
    assert seconds[("baseline", "logistic regression fit")] > 0


@pytest.mark.parametrize("above, verdict", [(5, "PASS"), (12, "PASS"), (13, "FAIL")])
def test_bounds_above_the_true_epsilon_are_judged_by_a_binomial_limit(above, verdict):
    """90 audits at α = 0.05, each above its true ε with probability at most α: a correct auditor's count is
    Binomial(90, 0.05), and 5 or more happen about half the time. The limit is its 99.9% point, the smallest k
    with P(X <= k) >= 0.999, summed here from the binomial pmf: 12."""
    n, alpha = 90, 0.05
    cdf = np.cumsum([math.comb(n, k) * alpha**k * (1 - alpha)**(n - k) for k in range(n + 1)])
    limit = int(np.argmax(cdf >= 0.999))
    assert limit == 12
    rows = {"mechanism": ["m"] * n, "true_epsilon": [1.0] * n,
            "miaudit_epsilon": [2.0] * above + [0.5] * (n - above), "baseline_epsilon": [0.5] * n,
            "miaudit_seconds": [1.0] * n, "baseline_seconds": [1.0] * n}
    summary = {"mechanism": ["m"], "miaudit_at_least_baseline": [True]}
    result = targets(rows, summary)
    assert result["measured"][1].startswith(f"{above} of {n} audits")
    assert result["threshold"][1].startswith(f"<= {limit} ")
    assert result["result"][1] == verdict
