"""The DP-SGD entries in the global catalog and through ``miaudit audit --mechanism catalog:NAME``."""

import json
import math
import pickle
import re

import numpy as np
import pytest
from scipy import optimize, stats

from audit.cli.main import main
from conftest import needs

pytestmark = needs("dp_accounting", "opacus")

DPSGD_NAMES = {"dpsgd_s8_q1_t4", "dpsgd_s1_q1_t4", "dpsgd_s2_q0.25_t16", "dpsgd_s0.8_q0.5_t8", "dpsgd_no_clipping",
               "dpsgd_unscaled_noise", "dpsgd_reused_noise", "dpsgd_shuffle_as_poisson", "dpsgd_wrong_sampling_rate"}


def _json(capsys, argv, status=0):
    code = main(argv)
    captured = capsys.readouterr()
    assert code == status, captured.err
    return json.loads(captured.out) if status == 0 else captured.err


def _rdp_epsilon(sigma, q, steps, delta=1e-5):
    """Opacus's RDP accountant (another implementation of the bound, on other orders and conversion)."""
    from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    accountant.history = [(sigma, q, steps)]
    return accountant.get_epsilon(delta)


def _gaussian_epsilon(mu, delta):
    """ε(δ) of μ-GDP from the closed form δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) (Balle and Wang 2018, Thm 8)."""
    profile = lambda eps: stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu) - delta
    return optimize.brentq(profile, 0.0, 100.0, xtol=1e-12)


@pytest.mark.integration
def test_catalog_json_lists_dpsgd_entries_with_accountant_claims_and_true_guarantees(capsys):
    payload = _json(capsys, ["catalog", "--json"])
    rows = {row["name"]: row for row in payload["mechanisms"] if row["name"].startswith("dpsgd")}
    assert set(rows) == DPSGD_NAMES
    correct = rows["dpsgd_s8_q1_t4"]
    assert correct["claimed"]["epsilon"] == pytest.approx(_rdp_epsilon(8.0, 1.0, 4), rel=0.03)
    # Full batches: T Gaussian steps of sensitivity C, noise σC are exactly √T/σ-GDP.
    assert correct["true"]["epsilon"] == pytest.approx(_gaussian_epsilon(2.0 / 8.0, 1e-5), rel=1e-6)
    assert correct["true_epsilon_is"] == "exact" and not correct["buggy"]
    assert correct["true"]["epsilon"] < correct["claimed"]["epsilon"]
    unscaled = rows["dpsgd_unscaled_noise"]  # noise σ = 8 against sensitivity C = 10, 4 steps
    assert unscaled["true"]["epsilon"] == pytest.approx(_gaussian_epsilon(10.0 * 2.0 / 8.0, 1e-5), rel=1e-6)
    assert unscaled["exposing_pair_epsilon"] == pytest.approx(unscaled["true"]["epsilon"])
    wrong = rows["dpsgd_wrong_sampling_rate"]
    assert wrong["claimed"]["epsilon"] == pytest.approx(_rdp_epsilon(1.0, 0.05, 4), rel=0.03)
    assert wrong["true"]["epsilon"] == pytest.approx(_rdp_epsilon(1.0, 0.5, 4), rel=0.03)
    assert rows["dpsgd_no_clipping"]["true"]["epsilon"] is None and rows["dpsgd_reused_noise"]["buggy"]
    assert rows["dpsgd_reused_noise"]["exposing_pair_epsilon"] == "inf"
    assert all(rows[name]["buggy"] == (re.match(r"dpsgd_s\d", name) is None) for name in rows)


def test_catalog_parameters_change_the_accountant_claim(capsys):
    payload = _json(capsys, ["catalog", "--name", "dpsgd_s2_q0.25_t16?steps=32&noise_multiplier=3", "--json"])
    (row,) = payload["mechanisms"]
    assert row["name"] == "dpsgd_s2_q0.25_t16?noise_multiplier=3&steps=32"
    assert row["parameters"]["steps"] == 32 and row["output_dim"] == 32
    assert row["claimed"]["epsilon"] == pytest.approx(_rdp_epsilon(3.0, 0.25, 32), rel=0.03)
    err = _json(capsys, ["audit", "--mechanism", "catalog:dpsgd_reused_noise?sampling_rate=1", "--samples", "10"],
                status=2)
    assert "sampling_rate" in err and err.count("\n") <= 2


def test_dpsgd_catalog_mechanisms_pickle_and_stay_out_of_the_reference_sweep():
    from mechanisms.catalog import catalog, catalog_names, get_entry

    assert DPSGD_NAMES <= set(catalog_names()) and not DPSGD_NAMES & {e.name for e in catalog()}
    entry = get_entry("dpsgd_shuffle_as_poisson")
    clone = pickle.loads(pickle.dumps(entry.mechanism))
    dbs = entry.prior(8, np.random.default_rng(0))
    np.testing.assert_array_equal(clone(dbs, np.random.default_rng(1)), entry.mechanism(dbs, np.random.default_rng(1)))


@pytest.mark.train
def test_cli_audit_refutes_the_unclipped_variant_on_a_small_budget(capsys):
    """The command of docs/explanation/dpsgd-study.md."""
    payload = _json(capsys, ["audit", "--mechanism", "catalog:dpsgd_no_clipping?steps=4", "--samples", "400",
                             "--event-runs", "300", "--slices", "2", "--set", "critic.max_steps=60", "--seed", "1",
                             "--json"])
    claimed = _rdp_epsilon(8.0, 1.0, 4)
    assert payload["claim"]["notion"] == "dp" and "dpsgd_no_clipping" in payload["claim"]["origin"]
    assert payload["claim"]["parameters"]["epsilon"] == pytest.approx(claimed, rel=0.03)
    assert payload["claim_verdict"] == "refuted"
    assert payload["dp_epsilon_lower_bound_event"] > claimed
    assert any(r["test"] == "event" and r["alpha_spent"] <= 0.05 for r in payload["refuted_by"])
