"""Quick runs of the studies audit-power and smi-dimension, checked against independent computations.

Expected values are computed here: the MI level a DP claim implies (Theorem 1, min(ε, ε²/2),
written out), the ε-DP bound √(2L) it yields, binomial slack for type-I rates, Gaussian-channel
MI by its formula and sliced MI by quadrature over the law of a slice's projection.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from experiments.framework import read_table
from experiments.registry import run
from mechanisms.catalog import get_entry

ALPHA = 0.05


@pytest.fixture(scope="module")
def power_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("audit_power")
    result = run("audit-power", out_dir=out, quick=True, seed=0, device="cpu")
    names = ("catalog_audit", "power", "power_runs", "claim_boundary", "claim_boundary_runs")
    return {name: read_table(out / f"{name}.csv") for name in names}, result


@pytest.mark.integration
@pytest.mark.train
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


@pytest.mark.integration
@pytest.mark.train
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
        if entry.true.notion in ("dp", "ldp"):  # a DP ε bound compares with a DP ε only
            assert table["dp_epsilon_lower_bound_event"][i] <= entry.true.epsilon + 1e-9


@pytest.mark.integration
@pytest.mark.train
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


@pytest.mark.integration
@pytest.mark.train
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


@pytest.mark.integration
@pytest.mark.train
def test_claim_boundary_count_is_reported_with_its_one_sided_interval(power_run):
    tables, result = power_run
    runs = tables["claim_boundary_runs"]
    assert len(tables["claim_boundary"]["case"]) == 1
    row = {key: values[0] for key, values in tables["claim_boundary"].items()}
    k, n = int(row["refuted"]), int(row["repeats"])
    assert n == len(runs["repeat"]) >= 5 and k == int((runs["claim_verdict"] == "refuted").sum())
    assert set(runs["claim_verdict"]) <= {"refuted", "not-refuted"} and set(runs["claim"]) == {"gdp:1"}
    assert len(set(runs["seed"].tolist())) == n  # independent audits
    assert row["alpha"] == ALPHA and row["confidence"] == 0.99
    # One-sided Clopper–Pearson, from the binomial tails it inverts: P(Bin(n, L) >= k) = 1 %, P(Bin(n, U) <= k) = 1 %.
    lower, upper = row["rate_lower_one_sided"], row["rate_upper_one_sided"]
    if k == 0:
        assert lower == 0 and upper == pytest.approx(1 - 0.01 ** (1 / n))
    else:
        assert stats.binom.sf(k - 1, n, lower) == pytest.approx(0.01, rel=1e-6)
        assert stats.binom.cdf(k, n, upper) == pytest.approx(0.01, rel=1e-6)
    assert row["within_alpha"] == (lower <= ALPHA)
    # The Gaussian count is exactly 1-GDP: its claim holds with equality, so refutations are rare
    # (binomial slack: three standard deviations of a rate of at most α).
    assert k / n <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / n)
    assert any(f"refuted {k}/{n} at the claim boundary" in f and f"α = {ALPHA}" in f and "Clopper–Pearson" in f
               for f in result.findings)


def test_catalog_spec_follows_each_claims_notion(small_critic):
    from experiments.audit_power import catalog_spec

    critic = small_critic
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


# ----------------------------------------------------------------------------- smi-dimension

NOISE_STD = 1.0  # the study's σ


def _gaussian_mi_by_determinants(dim: int) -> float:
    """½ log(det Σ_X det Σ_Y / det Σ) for X ~ N(0, 1), Y = X·1_d + σZ, the covariance built as a matrix."""
    ones = np.ones((dim, 1))
    cov = np.block([[np.ones((1, 1)), ones.T], [ones, ones @ ones.T + NOISE_STD**2 * np.eye(dim)]])
    return 0.5 * (np.linalg.slogdet(cov[1:, 1:])[1] - np.linalg.slogdet(cov)[1])


def _sliced_mi_by_quadrature(dim: int) -> float:
    """E[½ log(1 + d t²/σ²)] with t = φᵀ1_d/√d, whose density on (−1, 1) is ∝ (1 − t²)^{(d−3)/2}."""
    weight = lambda t: (1.0 - t * t) ** ((dim - 3) / 2.0)
    norm = integrate.quad(weight, -1.0, 1.0)[0]
    return integrate.quad(lambda t: 0.5 * math.log1p(dim * t * t / NOISE_STD**2) * weight(t), -1.0, 1.0)[0] / norm


@pytest.fixture(scope="module")
def smi_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("smi_dimension")
    result = run("smi-dimension", out_dir=out, quick=True, seed=0, device="cpu")
    return read_table(out / "smi_dimension_estimates.csv"), read_table(out / "smi_dimension_audits.csv"), result


@pytest.mark.integration
@pytest.mark.train
def test_smi_tables_have_the_columns_and_finite_values(smi_run):
    est, aud, result = smi_run
    assert set(est) >= {"d", "estimator", "target", "truth", "truth_drawn_slices", "estimate", "abs_error",
                        "lower_bound", "seconds"}
    assert set(est["estimator"]) == {"dv", "ksg", "sliced dv"} and set(est["d"]) == {2, 16}
    for key in ("truth", "truth_drawn_slices", "estimate", "abs_error", "seconds"):
        assert np.all(np.isfinite(est[key])), key
    np.testing.assert_allclose(est["abs_error"], np.abs(est["estimate"] - est["truth"]))
    neural = est["estimator"] != "ksg"
    assert np.all(np.isfinite(est["lower_bound"][neural])) and np.all(np.isnan(est["lower_bound"][~neural]))
    assert set(aud["notion"]) == {"mi-dp", "smi-dp"}
    assert np.all(np.isfinite(aud["lower_bound"])) and np.all(np.isfinite(aud["estimate"]))
    assert open(result.png_file, "rb").read(4) == b"\x89PNG"


@pytest.mark.integration
@pytest.mark.train
def test_smi_truths_match_independent_computations(smi_run):
    est, aud, _ = smi_run
    for table in (est, aud):
        full = (table["target"] == "I") if "target" in table else (table["notion"] == "mi-dp")
        for i in np.flatnonzero(full):
            assert table["truth"][i] == pytest.approx(_gaussian_mi_by_determinants(int(table["d"][i])), rel=1e-9)
        for i in np.flatnonzero(~full):
            # Monte Carlo over 20,000 slices: standard error below 0.003 nats.
            assert table["truth"][i] == pytest.approx(_sliced_mi_by_quadrature(int(table["d"][i])), abs=0.012)
    sliced = est["target"] == "SI"
    # Data processing: every slice's MI is at most I(X; Y) = ½ log(1 + d/σ²).
    assert np.all(est["truth_drawn_slices"][sliced] <= 0.5 * np.log1p(est["d"][sliced] / NOISE_STD**2))


@pytest.mark.integration
@pytest.mark.train
def test_smi_audit_verdicts_follow_the_certified_bounds(smi_run):
    _, aud, _ = smi_run
    np.testing.assert_array_equal(aud["detected"], aud["lower_bound"] > aud["epsilon"])
    full = aud["notion"] == "mi-dp"
    assert np.all(aud["lower_bound"][full] <= aud["truth"][full])  # certified lower bounds on I
    np.testing.assert_allclose(aud["paper_statistic"][~full], aud["estimate"][~full])  # Eq. (8) is the estimate
    assert np.all(aud["detected"][full & (aud["d"] == 2)])  # I = ½ log 3 ≈ 0.55 ≫ ε = 0.05


def test_copied_record_release_has_the_stated_covariance():
    from experiments.smi_dimension import CopiedRecordRelease

    rng = np.random.default_rng(3)
    x = rng.standard_normal((200_000, 1, 1))
    y = CopiedRecordRelease(3)(x, rng)
    joint = np.cov(np.hstack([x[:, 0], y]).T)
    expected = np.block([[np.ones((1, 1)), np.ones((1, 3))], [np.ones((3, 1)), np.ones((3, 3)) + np.eye(3)]])
    np.testing.assert_allclose(joint, expected, atol=0.03)
