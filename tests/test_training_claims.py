"""The DP-SGD accountant's claims against Opacus and closed forms; the entries audited with their claims."""

import math

import numpy as np
import pytest

from audit.engine import run_audit
from audit.spec import AuditSpec
from conftest import needs
from estimators.neural import CriticConfig
from estimators.validation import InputError
from mechanisms.training import dpsgd_claim, dpsgd_epsilon, dpsgd_rdp_claim, dpsgd_zcdp_claim
from mechanisms.training.accountant import noise_for_epsilon
from mechanisms.catalog.dpsgd import FACTORIES

pytestmark = needs("opacus", "dp_accounting")


@pytest.mark.parametrize("sigma, q, steps", [(1.0, 1.0, 4), (2.0, 0.25, 16), (1.1, 0.01, 1000)])
def test_epsilon_agrees_with_opacus_rdp_accountant(sigma, q, steps):
    from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    accountant.history = [(sigma, q, steps)]
    # Two implementations of the same RDP bound on different order grids and conversions.
    assert dpsgd_epsilon(sigma, q, steps, 1e-5) == pytest.approx(accountant.get_epsilon(1e-5), rel=0.03)


def test_claims_are_stated_in_the_claims_vocabulary():
    claim = dpsgd_claim(1.0, 0.5, 8, delta=1e-5)
    assert claim.notion == "dp" and claim.delta == 1e-5 and "dp-accounting" in claim.origin
    replace = dpsgd_claim(1.0, 0.5, 8, delta=1e-5, relation="replace-one")
    # group privacy over remove-then-add, written out: (2ε, (1 + e^ε) δ)
    assert replace.parameters()["epsilon"] == pytest.approx(2 * claim.parameters()["epsilon"])
    assert replace.delta == pytest.approx((1 + math.exp(claim.parameters()["epsilon"])) * 1e-5)
    with pytest.raises(InputError, match="'relation'"):
        dpsgd_claim(1.0, 0.5, 8, relation="swap")


@pytest.mark.parametrize("order", [2.0, 8.0, 32.0])
def test_full_batch_rdp_and_zcdp_are_the_gaussian_closed_form(order):
    sigma, steps = 1.5, 10
    # Mironov 2017, Prop. 7: the Gaussian mechanism of sensitivity 1 and noise σ is (α, α/(2σ²))-RDP.
    assert dpsgd_rdp_claim(sigma, 1.0, steps, order).parameters()["epsilon"] == pytest.approx(steps * order / (2 * sigma**2))
    assert dpsgd_zcdp_claim(sigma, steps).parameters()["rho"] == pytest.approx(steps / (2 * sigma**2))


def test_subsampled_rdp_agrees_with_dp_accounting():
    from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent, SelfComposedDpEvent
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant([4.0])
    accountant.compose(SelfComposedDpEvent(PoissonSampledDpEvent(0.1, GaussianDpEvent(1.2)), 50))
    assert dpsgd_rdp_claim(1.2, 0.1, 50, 4.0).parameters()["epsilon"] == pytest.approx(float(accountant._rdp[0]), rel=1e-6)


def test_noise_for_epsilon_inverts_the_accountant():
    # Full batch (q = 1): the bisection is the same at any q, and dp-accounting's RDP of T
    # Gaussians is its closed form, so the forty accountant calls take milliseconds.
    sigma = noise_for_epsilon(2.0, 1.0, 8)
    assert dpsgd_epsilon(sigma, 1.0, 8, 1e-5) <= 2.0 < dpsgd_epsilon(sigma * 0.99, 1.0, 8, 1e-5)


def test_each_accountant_setting_runs_once_and_gives_what_a_fresh_run_gives(monkeypatch):
    import dp_accounting

    from mechanisms.training import accountant

    accountant._accountant_epsilon.cache_clear()
    composed = []
    original = dp_accounting.rdp.RdpAccountant.compose
    monkeypatch.setattr(dp_accounting.rdp.RdpAccountant, "compose",
                        lambda self, *a, **k: composed.append(1) or original(self, *a, **k))
    first = noise_for_epsilon(3.0, 1.0, 6)
    runs = len(composed)
    assert runs > 10  # the bisection's evaluations
    assert noise_for_epsilon(3.0, 1.0, 6) == first and len(composed) == runs  # the second: no accountant run
    # Its ε is the one a fresh accountant gives (dp-accounting called here directly).
    fresh = dp_accounting.rdp.RdpAccountant(list(accountant.ORDERS))
    fresh.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(first), 6))
    assert dpsgd_epsilon(np.float64(first), 1, 6, 1e-5) == float(fresh.get_epsilon(1e-5))


@pytest.mark.integration  # forty subsampled-RDP and PLD accountings in dp-accounting: seconds
@pytest.mark.parametrize("sampling_rate, steps, accountant", [(0.5, 8, "rdp"), (1.0, 4, "pld")])
def test_noise_for_epsilon_inverts_the_subsampled_and_pld_accountants(sampling_rate, steps, accountant):
    sigma = noise_for_epsilon(2.0, sampling_rate, steps, accountant=accountant)
    assert (dpsgd_epsilon(sigma, sampling_rate, steps, 1e-5, accountant=accountant) <= 2.0
            < dpsgd_epsilon(sigma * 0.99, sampling_rate, steps, 1e-5, accountant=accountant))


@pytest.mark.parametrize("name", list(FACTORIES))
def test_entries_run_seeded_with_truth_flags(name):
    entry = FACTORIES[name]()  # built here, not at collection: its claim runs dp-accounting
    dbs, out = entry.sample(64, seed=3)
    assert out.shape == (64, entry.output_dim) and np.all(np.isfinite(out))
    np.testing.assert_array_equal(out, entry.sample(64, seed=3)[1])
    assert entry.buggy == (not entry.true.private or entry.true.epsilon > entry.claimed.epsilon + 1e-12)


FAST = CriticConfig(max_steps=600)


def _audit(name, runs):
    entry = FACTORIES[name]()
    eps = entry.claimed.epsilon
    return run_audit(AuditSpec(mechanism=entry.mechanism, priors=[entry.prior], notion="mi-dp", epsilon=min(eps, eps**2 / 2),
                               samples=runs, slices=2, event_runs=runs, delta=entry.claimed.delta, claim=entry.claimed,
                               critic=FAST, seed=2, name=name))


@pytest.mark.slow  # two audits with critics: about a minute on a loaded 2-core machine
@pytest.mark.train
def test_unclipped_dpsgd_refuted_on_a_small_run_budget_and_correct_one_not():
    unclipped, correct_entry = FACTORIES["dpsgd_no_clipping"](), FACTORIES["dpsgd_s8_q1_t4"]()
    assert unclipped.claimed.epsilon == pytest.approx(1.0, abs=0.05)
    buggy = _audit("dpsgd_no_clipping", 3000)
    assert any(c.certified_contradiction for c in buggy.cross_checks)
    assert buggy.dp_epsilon_lower_bound_event > unclipped.claimed.epsilon
    correct = _audit("dpsgd_s8_q1_t4", 3000)
    assert not any(c.certified_contradiction for c in correct.cross_checks)
    assert correct.dp_epsilon_lower_bound_event <= correct_entry.true.epsilon


def _direct_pld_epsilon(sigma, q, steps, delta):
    """dp-accounting's PLD built directly (not through its accountant or DpEvents): the
    subsampled Gaussian's privacy loss distribution, self-composed T times."""
    from dp_accounting.pld import privacy_loss_distribution

    pld = privacy_loss_distribution.from_gaussian_mechanism(sigma, sampling_prob=q)
    return pld.self_compose(steps).get_epsilon_for_delta(delta)


@pytest.mark.integration  # dp-accounting's PLD built and composed twice a case: seconds
@pytest.mark.parametrize("sigma, q, steps", [(1.0, 1.0, 4), (2.0, 0.25, 16), (1.1, 0.05, 200)])
def test_pld_accountant_agrees_with_direct_pld_and_is_below_rdp(sigma, q, steps):
    pld = dpsgd_epsilon(sigma, q, steps, 1e-5, accountant="pld")
    assert pld == pytest.approx(_direct_pld_epsilon(sigma, q, steps, 1e-5), rel=1e-3)
    # Tight accounting (up to discretisation) never exceeds the RDP conversion's upper bound.
    assert pld <= dpsgd_epsilon(sigma, q, steps, 1e-5, accountant="rdp")
    if q == 1.0:  # T Gaussians are √T/σ-GDP: the PLD is exact up to discretisation (Balle-Wang 2018, Thm 8)
        from scipy import optimize, stats

        mu = math.sqrt(steps) / sigma
        exact = optimize.brentq(lambda e: stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu)
                                - 1e-5, 0.0, 100.0)
        assert pld == pytest.approx(exact, rel=1e-3) and pld >= exact - 1e-9


def test_pld_claim():
    claim = dpsgd_claim(2.0, 0.25, 16, accountant="pld")
    assert "PLD" in claim.origin and claim.parameters()["epsilon"] < dpsgd_claim(2.0, 0.25, 16).parameters()["epsilon"]
    with pytest.raises(InputError, match="'accountant'"):
        dpsgd_claim(2.0, 0.25, 16, accountant="prv")
