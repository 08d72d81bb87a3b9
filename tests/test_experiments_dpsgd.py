"""Quick run of the study dpsgd-audit, checked against the accountant computed here."""

import numpy as np
import pytest

from conftest import needs
from experiments.framework import read_table
from experiments.registry import run

#: Every test here runs the experiment (quick budget) and writes its files.
pytestmark = [pytest.mark.integration, needs("dp_accounting", "opacus")]


def _epsilon(sigma, steps, delta=1e-5):
    """Full-batch DP-SGD: T Gaussian mechanisms, through dp-accounting's PLD accountant (not the RDP one used)."""
    from dp_accounting import GaussianDpEvent
    from dp_accounting.pld import PLDAccountant

    accountant = PLDAccountant()
    accountant.compose(GaussianDpEvent(sigma), steps)
    return accountant.get_epsilon(delta)


@pytest.fixture(scope="module")
def dpsgd_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dpsgd_audit")
    result = run("dpsgd-audit", out_dir=out, quick=True, seed=0, device="cpu")
    return {name: read_table(out / f"{name}.csv") for name in ("dpsgd_epsilon", "dpsgd_dimension", "dpsgd_detection",
                                                                    "dpsgd_gaussian_dp", "dpsgd_one_run")}, result


@pytest.mark.train
def test_accountant_column_and_validity_of_certified_bounds(dpsgd_run):
    tables, result = dpsgd_run
    eps = tables["dpsgd_epsilon"]
    assert set(eps["release"]) == {"gradient_trace", "loss"}
    for target, sigma, accountant, bound in zip(eps["target_epsilon"], eps["sigma"], eps["accountant_epsilon"],
                                                eps["dp_epsilon_lower_bound_event"]):
        assert accountant <= target + 1e-9 and accountant == pytest.approx(target, rel=0.01)
        # RDP is looser than the exact (PLD) accounting of T Gaussians: the PLD ε is at most the claim.
        assert _epsilon(sigma, 4) <= accountant + 1e-6
        assert bound <= accountant  # correct DP-SGD: a certified lower bound stays below the truth
    np.testing.assert_allclose(eps["pld_epsilon"], [_epsilon(s, 4) for s in eps["sigma"]], rtol=1e-3)
    assert open(result.png_file, "rb").read(4) == b"\x89PNG"


@pytest.mark.train
def test_unclipped_variant_is_refuted_even_at_the_quick_budget(dpsgd_run):
    det = dpsgd_run[0]["dpsgd_detection"]
    rows = det["variant"] == "dpsgd_no_clipping"
    assert rows.any() and np.all(det["refuted"][rows])
    assert set(det["variant"]) == {"dpsgd_no_clipping", "dpsgd_reused_noise"}
    dim = dpsgd_run[0]["dpsgd_dimension"]
    assert set(dim["notion"]) == {"mi-dp", "smi-dp"} and np.all(np.isfinite(dim["mi_estimate"]))


@pytest.mark.train
def test_mu_rows_stay_below_the_true_mu_and_optimum_matches_its_definition(dpsgd_run):
    from scipy import stats

    from experiments.dpsgd_audit import IDEAL_LABEL

    table = dpsgd_run[0]["dpsgd_gaussian_dp"]
    is_ideal = table["canary"] == IDEAL_LABEL
    ideal = {k: v[is_ideal] for k, v in table.items()}
    gdp = {k: v[~is_ideal] for k, v in table.items()}
    assert list(gdp["runs"]) == [1000] * 5 and gdp["canary"][0] == "gradient (white-box)"
    # The reference rows certify μ on simulated N(2, 1) vs N(0, 1) scores at the audit's share of α: each exceeds the
    # true μ = 2 with probability at most that share, so more than 4 of 20 would be a 1-in-10⁴ event (binomial tail).

    assert len(ideal["runs"]) == 20 and set(ideal["gdp_alpha"]) == {gdp["gdp_alpha"][0]}
    assert stats.binom.sf(int(np.sum(ideal["mu_lower_bound"] > 2.0)) - 1, 20, 0.025) > 1e-4
    assert np.mean(ideal["mu_lower_bound"]) > 1.6  # about 1.85 at 10³ runs and 300 selection scores per input
    # The black-box search's row names the candidate its pilot chose, out of the 3 canaries × 2 initialisations.
    from experiments.dpsgd_audit import SEARCH_LABEL

    (searched,) = [s for c, s in zip(gdp["canary"], gdp["search"]) if c == SEARCH_LABEL]
    assert searched.startswith("chosen: ") and searched.split("pilot predicted")[1].count(" init ") == 6
    # Exactly 2-GDP (white-box), at most 2-GDP (the black-box input canary's clipped gradient): certified μ ≤ 2.
    assert np.all(gdp["mu_lower_bound"] <= 2.0) and np.all(gdp["mu_lower_bound"] > 1.0)
    # The event optimum at μ = 2, 1000 runs, the event test's level (its share of α), δ = 1e-5, by a direct
    # search over upper-tail thresholds and splits of α (scipy.stats).
    alpha, runs, best = gdp["event_alpha"][0], 1000, 0.0
    assert alpha == gdp["gdp_alpha"][0] == pytest.approx(0.025)  # the event and μ tests split α
    for t in np.linspace(0.5, 5.0, 451):
        k1, k2 = runs * stats.norm.sf(t - 2.0), runs * stats.norm.sf(t)
        for share in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
            lower = stats.beta.ppf(alpha * share, k1, runs - k1 + 1)
            upper = stats.beta.ppf(1 - alpha * (1 - share), k2 + 1, runs - k2)
            if lower > 1e-5:
                best = max(best, np.log((lower - 1e-5) / upper))
    assert gdp["event_optimum"][0] == pytest.approx(best, abs=0.02)
    # The runs are at most 2-GDP: no certified (ε, 1e-5) bound may exceed 2-GDP's ε at 1e-5 (Dong, Roth and Su,
    # Corollary 2.13: about 10.0); the optimum is an expectation, which a realised certificate may exceed.
    assert np.all(gdp["event_epsilon_at_delta"] < 9.9)


@pytest.mark.train
def test_one_run_rows_certify_below_the_claim(dpsgd_run):
    one = dpsgd_run[0]["dpsgd_one_run"]
    assert set(one["canary"]) == {"gradient", "input"} and set(one["canaries"]) == {1000, 800}
    # A correct DP-SGD run: the one-run certificate stays below the accountant's ε; post-hoc choice is at least it.
    assert np.all(one["epsilon_lower_bound"] < one["claimed_epsilon"])
    assert np.all(one["hindsight_best_not_certified"] >= one["epsilon_lower_bound"] - 1e-9)
    np.testing.assert_allclose(one["ratio"], one["epsilon_lower_bound"] / one["claimed_epsilon"])


@pytest.mark.train
def test_the_gpu_grid_trains_with_torch_and_an_mlp(monkeypatch, tmp_path):
    """The GPU grid's code path, shrunk and run on the CPU (the CUDA run itself needs a GPU)."""
    import experiments.dpsgd_audit as study
    from estimators.neural import CriticConfig
    from experiments.framework import read_table

    small = study.DPSGDGrid(epsilons=(8.0,), steps=2, runs=400, dims=(3,), dimension_sigma=0.5, budgets=(400,),
                            repeats=1, critic=CriticConfig(max_steps=20), slices=2, variants=("dpsgd_no_clipping",),
                            hidden=4, torch=True)
    monkeypatch.setattr(study, "quick_grid", lambda: small)
    run("dpsgd-audit", out_dir=tmp_path, quick=True, seed=0, device="cpu")
    dim = read_table(tmp_path / "dpsgd_dimension.csv")
    assert set(dim["parameters_d"]) == {4 * 3 + 2 * 4 + 1}  # the MLP's parameters, not logistic regression's
    assert study.gpu_grid().torch and study.gpu_grid().hidden > 0
