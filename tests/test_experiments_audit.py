"""Quick runs of the studies audit-power and smi-dimension, checked against independent computations.

Expected values are computed here: the MI level a DP claim implies (Theorem 1, min(ε, ε²/2),
written out), the ε-DP bound √(2L) it yields, binomial slack for type-I rates, Gaussian-channel
MI by its formula and sliced MI by quadrature over the law of a slice's projection.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from experiments.framework import read_table
from experiments.registry import run
from mechanisms.catalog import get_entry

ALPHA = 0.05


@pytest.fixture(scope="module")
def power_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("audit_power")
    result = run("audit-power", out_dir=out, quick=True, seed=0, device="cpu")
    return {name: read_table(out / f"{name}.csv") for name in ("catalog_audit", "power", "power_runs")}, result


def test_power_tables_have_the_columns_and_finite_values(power_run):
    tables, result = power_run
    table = tables["catalog_audit"]
    assert set(table) >= {"mechanism", "claimed", "true_guarantee", "verdict", "mi_lower_bound", "mi_estimate",
                          "dp_epsilon_lower_bound_mi", "dp_epsilon_lower_bound_event", "samples", "seconds",
                          "flagged", "flagged_by_mi", "flagged_by_event"}
    for key in ("mi_lower_bound", "mi_estimate", "dp_epsilon_lower_bound_mi", "dp_epsilon_lower_bound_event",
                "seconds", "samples", "claimed_epsilon"):
        assert np.all(np.isfinite(table[key])), key
    assert set(table["verdict"]) <= {"violation", "no-violation-detected"}
    power = tables["power"]
    assert set(power) >= {"case", "kind", "budget", "repeats", "flagged", "rate", "rate_lower_95", "rate_upper_95"}
    assert set(power["kind"]) == {"buggy", "correct", "boundary"}
    assert open(result.png_file, "rb").read(4) == b"\x89PNG"
    assert any("weaker" in f for f in result.findings) and any("stronger" in f for f in result.findings)


def test_catalog_rows_agree_with_theorem_1_and_the_claims(power_run):
    table = power_run[0]["catalog_audit"]
    for i, name in enumerate(table["mechanism"]):
        entry = get_entry(str(name))
        eps = entry.claimed.epsilon
        assert table["claimed_epsilon"][i] == eps and table["buggy"][i] == entry.buggy
        # Theorem 1, written out: ε-DP ⇒ min(ε, ε²/2)-MI DP is the level the audit tests.
        assert table["audit_epsilon"][i] == pytest.approx(min(eps, eps * eps / 2))
        lower = table["mi_lower_bound"][i]
        expected_dp = math.sqrt(2 * lower) if 0 < lower <= 2 else (lower if lower > 2 else 0.0)
        assert table["dp_epsilon_lower_bound_mi"][i] == pytest.approx(expected_dp)
        assert table["flagged_by_mi"][i] == (lower > min(eps, eps * eps / 2))
        assert table["flagged_by_event"][i] == (table["dp_epsilon_lower_bound_event"][i] > eps)
        assert table["flagged"][i] == (table["flagged_by_mi"][i] or table["flagged_by_event"][i])
        # Certified lower bounds stay below the known true ε (each fails with probability ≤ α).
        if entry.true.private:
            assert table["dp_epsilon_lower_bound_event"][i] <= entry.true.epsilon + 1e-9


def test_buggy_histogram_is_flagged_and_correct_laplace_sum_keeps_its_level(power_run):
    tables, _ = power_run
    table = tables["catalog_audit"]
    assert table["flagged"][list(table["mechanism"]).index("histogram_buggy")]
    power = tables["power"]
    rows = {str(c): i for i, c in enumerate(power["case"])}
    buggy = rows["histogram_buggy"]
    assert power["rate"][buggy] >= 2 / 3
    for case in ("laplace_sum", "theorem4_gaussian_boundary"):
        i = rows[case]
        repeats = power["repeats"][i]
        # binomial slack: three standard deviations of a rate whose mean is at most α
        assert power["rate"][i] <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / repeats)


def test_power_summary_counts_the_runs(power_run):
    tables, _ = power_run
    runs, power = tables["power_runs"], tables["power"]
    for i, case in enumerate(power["case"]):
        rows = (runs["case"] == case) & (runs["budget"] == power["budget"][i])
        assert power["repeats"][i] == rows.sum() and power["flagged"][i] == runs["flagged"][rows].sum()
        assert power["rate_lower_95"][i] <= power["rate"][i] <= power["rate_upper_95"][i]
    boundary = runs["case"] == "theorem4_gaussian_boundary"
    # Theorem 4's calibration makes I(mean; M) exactly the target ε = 0.3 nats.
    np.testing.assert_allclose(runs["truth_mi"][boundary], 0.3, rtol=1e-12)
    np.testing.assert_allclose(runs["audit_epsilon"][boundary], 0.3, rtol=1e-12)
    assert len(set(runs["seed"].tolist())) == len(runs["seed"])  # independent audits


def test_catalog_spec_follows_each_claims_notion():
    from estimators.neural import CriticConfig
    from experiments.audit_power import catalog_spec

    critic = CriticConfig(max_steps=10)
    rr = catalog_spec(get_entry("randomized_response"), 1000, 1, critic, 1, "cpu")
    assert rr.notion == "mi-dp" and rr.epsilon == pytest.approx(0.5)  # 1-LDP: min(1, 1/2)
    gauss = catalog_spec(get_entry("gaussian_sum"), 1000, 1, critic, 1, "cpu")
    assert gauss.delta == 1e-5  # the event bound is compared at the claim's δ
    assert catalog_spec(get_entry("laplace_mi_dp_sum"), 1000, 1, critic, 1, "cpu").epsilon == 0.5
    pp = catalog_spec(get_entry("gaussian_mi_pp_count"), 1000, 1, critic, 1, "cpu")
    assert pp.notion == "mi-pp" and pp.epsilon == 0.5
    (_, pair), = pp.secret_pairs()
    dbs = np.arange(24, dtype=float).reshape(2, 4, 3)[:, :, :1]
    np.testing.assert_array_equal(pair.g(dbs), dbs[:, 0, :])  # the record the exposing pair changes
