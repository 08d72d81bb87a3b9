"""Quick run of the study dpsgd-audit, checked against the accountant computed here."""

import numpy as np
import pytest

from experiments.framework import read_table
from experiments.registry import run

dp_accounting = pytest.importorskip("dp_accounting")
pytest.importorskip("opacus")


def _epsilon(sigma, steps, delta=1e-5):
    """Full-batch DP-SGD: T Gaussian mechanisms, through dp-accounting's PLD accountant (not the RDP one used)."""
    from dp_accounting.pld import PLDAccountant

    accountant = PLDAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(sigma), steps)
    return accountant.get_epsilon(delta)


@pytest.fixture(scope="module")
def dpsgd_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dpsgd_audit")
    result = run("dpsgd-audit", out_dir=out, quick=True, seed=0, device="cpu")
    return {name: read_table(out / f"{name}.csv") for name in ("dpsgd_epsilon", "dpsgd_dimension", "dpsgd_detection")}, result


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
    assert open(result.png_file, "rb").read(4) == b"\x89PNG"


@pytest.mark.train
def test_unclipped_variant_is_refuted_even_at_the_quick_budget(dpsgd_run):
    det = dpsgd_run[0]["dpsgd_detection"]
    rows = det["variant"] == "dpsgd_no_clipping"
    assert rows.any() and np.all(det["refuted"][rows])
    assert set(det["variant"]) == {"dpsgd_no_clipping", "dpsgd_reused_noise"}
    dim = dpsgd_run[0]["dpsgd_dimension"]
    assert set(dim["notion"]) == {"mi-dp", "smi-dp"} and np.all(np.isfinite(dim["mi_estimate"]))
