"""Claims: parsing, implied MI budgets and privacy profiles against independent truth.

Expected values come from closed forms written here, brute-force hockey-stick divergences of
explicit worst-case distributions, numerical integration, or Google's dp_accounting (PLD
accountant; the RDP accountant where the claim's profile is defined by that conversion).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from estimators.validation import InputError
from mechanisms.catalog import catalog
from mechanisms.claims.guarantee import Guarantee
from mechanisms.claims.claim import AUDIT_NOTIONS, CLAIM_NOTIONS
from mechanisms.claims.notions import (MIDP, MIPP, DifferentialPrivacy, GaussianDP, LocalDP, RenyiDP, ZeroConcentratedDP)
from mechanisms.claims.parsing import claim_from_table, parse_claim

EPS_PRIMES = [0.0, 0.1, 0.5, 1.0, 2.0, 3.5]


# ---------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, cls, params", [
    ("dp:1", DifferentialPrivacy, {"epsilon": 1.0}),
    ("dp:0.5:1e-5", DifferentialPrivacy, {"epsilon": 0.5, "delta": 1e-5}),
    ("zcdp:0.5", ZeroConcentratedDP, {"rho": 0.5}),
    ("rdp:2:0.3", RenyiDP, {"order": 2.0, "epsilon": 0.3}),
    ("gdp:1.5", GaussianDP, {"mu": 1.5}),
    ("ldp:2", LocalDP, {"epsilon": 2.0}),
    ("mi-dp:0.1", MIDP, {"epsilon": 0.1}),
    ("mi-pp:0.2", MIPP, {"epsilon": 0.2}),
    (" ZCDP:0.5 ", ZeroConcentratedDP, {"rho": 0.5}),
])
def test_parse_claim_every_form(text, cls, params):
    claim = parse_claim(text)
    assert type(claim) is cls and claim.parameters() == params
    assert claim.origin == "--claim"
    assert parse_claim(claim.text) == claim  # the written form round-trips


def test_every_notion_has_a_form():
    assert {parse_claim(t).notion for t in ("dp:1", "ldp:1", "zcdp:1", "rdp:2:1", "gdp:1", "mi-dp:1", "mi-pp:1")} \
        == set(CLAIM_NOTIONS)


@pytest.mark.parametrize("text, fragment", [
    ("zcdp", "zcdp:RHO"),
    ("zcdp:-1", "RHO in zcdp:RHO must be > 0"),
    ("zcdp:abc", "RHO in zcdp:RHO must be a number"),
    ("rdp:1:0.5", "ALPHA in rdp:ALPHA:EPS (the Rényi order) must be > 1"),
    ("rdp:2", "rdp:ALPHA:EPS"),
    ("dp:1:1", "DELTA in dp:EPS:DELTA must be in [0, 1)"),
    ("dp:inf", "finite"),
    ("dp:1:2:3", "dp:EPS or dp:EPS:DELTA"),
    ("gdp:1:2", "gdp:MU"),
    ("renyi:2", "unknown notion 'renyi'"),
    ("", "must be a claim such as"),
])
def test_parse_errors_name_the_flag_not_internal_names(text, fragment):
    with pytest.raises(InputError) as info:
        parse_claim(text)
    message = str(info.value)
    assert message.startswith("argument '--claim'") and fragment in message
    assert "'epsilon'" not in message and "'notion'" not in message


def test_claim_table_forms_and_errors():
    assert claim_from_table({"spec": "gdp:1"}) == GaussianDP(1.0)
    assert claim_from_table({"notion": "rdp", "order": 3, "epsilon": 0.2}) == RenyiDP(3.0, 0.2)
    assert claim_from_table({"notion": "dp", "epsilon": 1, "delta": 1e-6}) == DifferentialPrivacy(1.0, 1e-6)
    with pytest.raises(InputError, match=r"^\[claim\] rho: RHO in zcdp:RHO must be > 0"):
        claim_from_table({"notion": "zcdp", "rho": 0})
    with pytest.raises(InputError, match=r"\[claim\] needs 'rho'"):
        claim_from_table({"notion": "zcdp"})
    with pytest.raises(InputError, match=r"unknown key\(s\) epsilon"):
        claim_from_table({"notion": "zcdp", "rho": 1, "epsilon": 1})
    with pytest.raises(InputError, match=r"argument '\[claim\] spec'"):
        claim_from_table({"spec": "zcdp:x"})
    with pytest.raises(InputError, match=r"^\[claim\]: unknown notion 'approx'"):
        claim_from_table({"notion": "approx", "epsilon": 1})


def test_guarantee_makes_its_claim():
    assert Guarantee("dp", 1.0, 1e-5).as_claim("x") == DifferentialPrivacy(1.0, 1e-5)
    assert Guarantee("ldp", 2.0).as_claim() == LocalDP(2.0)
    assert Guarantee("mi-pp", 0.5).as_claim() == MIPP(0.5)
    assert Guarantee("none", math.inf).as_claim() is None
    with pytest.raises(InputError, match="'delta'"):
        Guarantee("mi-dp", 0.5, 0.1)
    for entry in catalog():
        claim = entry.claimed.as_claim(entry.name)
        assert claim is not None and claim.origin == entry.name


# ---------------------------------------------------------------------------------------------
# implied MI budgets (nats) against the theorems
# ---------------------------------------------------------------------------------------------

def _binary_entropy(p):
    return 0.0 if p in (0.0, 1.0) else -p * math.log(p) - (1 - p) * math.log(1 - p)


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.0, 3.0])
def test_dp_budget_is_theorem_1(eps):
    assert parse_claim(f"dp:{eps}").implied_mi_budget().value == pytest.approx(min(eps, eps ** 2 / 2))
    assert parse_claim(f"ldp:{eps}").implied_mi_budget().value == pytest.approx(min(eps, eps ** 2 / 2))
    # The randomized response at ε (an ε-DP mechanism) has MI with a uniform bit below the budget.
    p = math.exp(eps) / (1 + math.exp(eps))
    mi = math.log(2) - _binary_entropy(p)
    assert mi <= min(eps, eps ** 2 / 2)


def test_approx_dp_budget_needs_finite_support():
    claim = parse_claim("dp:1:0.001")
    budget = claim.implied_mi_budget()
    assert budget.value is None and "finite" in budget.reason
    d_prime = 1 - 2 * (1 - 0.001) / (math.e + 1)
    expected = 2 * _binary_entropy(d_prime) + 2 * d_prime * math.log(4 + 1)
    assert claim.implied_mi_budget(record_support=4).value == pytest.approx(expected)


def test_other_budgets():
    assert parse_claim("zcdp:0.3").implied_mi_budget().value == pytest.approx(0.3)
    assert parse_claim("rdp:4:0.7").implied_mi_budget().value == pytest.approx(0.7)
    assert parse_claim("mi-dp:0.2").implied_mi_budget("smi-dp").value == pytest.approx(0.2)
    assert parse_claim("mi-pp:0.2").implied_mi_budget("mi-pp").value == pytest.approx(0.2)
    mu = 1.3
    # KL(N(0,1) ‖ N(μ,1)) by numerical integration: the GDP budget is this KL (data processing).
    kl = integrate.quad(lambda x: stats.norm.pdf(x) * (stats.norm.logpdf(x) - stats.norm.logpdf(x, mu)), -20, 20)[0]
    assert parse_claim(f"gdp:{mu}").implied_mi_budget().value == pytest.approx(kl, rel=1e-6)


def test_budget_is_none_across_frameworks():
    assert parse_claim("dp:1").implied_mi_budget("mi-pp").value is None
    assert parse_claim("mi-pp:1").implied_mi_budget("mi-dp").value is None
    with pytest.raises(InputError, match="audit_notion"):
        parse_claim("dp:1").implied_mi_budget("dp")
    assert set(AUDIT_NOTIONS) == {"mi-dp", "smi-dp", "mi-pp"}


# ---------------------------------------------------------------------------------------------
# privacy profiles δ(ε′) against closed forms, brute force and dp_accounting
# ---------------------------------------------------------------------------------------------

def _hockey_stick(p, q, eps_prime):
    """sup_E P(E) − e^ε′ Q(E) for discrete P, Q, by brute force over the support."""
    return float(np.maximum(np.asarray(p) - math.exp(eps_prime) * np.asarray(q), 0).sum())


@pytest.mark.parametrize("eps, delta", [(1.0, 0.0), (0.5, 1e-3), (2.0, 0.05)])
def test_dp_profile_is_the_four_point_worst_case(eps, delta):
    # The (ε, δ)-DP worst case (Kairouz, Oh and Viswanath 2015): four outcomes.
    e = math.exp(eps)
    p = [delta, (1 - delta) * e / (1 + e), (1 - delta) / (1 + e), 0.0]
    q = [0.0, (1 - delta) / (1 + e), (1 - delta) * e / (1 + e), delta]
    claim = DifferentialPrivacy(eps, delta)
    for eps_prime in EPS_PRIMES:
        assert claim.privacy_profile(eps_prime) == pytest.approx(_hockey_stick(p, q, eps_prime), abs=1e-12)


@pytest.mark.parametrize("eps, delta", [(1.0, 0.0), (0.5, 1e-3)])
def test_dp_profile_matches_dp_accounting(eps, delta):
    from dp_accounting.pld import common, privacy_loss_distribution

    pld = privacy_loss_distribution.from_privacy_parameters(common.DifferentialPrivacyParameters(eps, delta))
    claim = DifferentialPrivacy(eps, delta)
    got = claim.privacy_profile(EPS_PRIMES)
    assert got.shape == (len(EPS_PRIMES),)
    for eps_prime, value in zip(EPS_PRIMES, got):
        assert value == pytest.approx(pld.get_delta_for_epsilon(eps_prime), abs=1e-6)


@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_gdp_profile_matches_dp_accounting_and_integration(mu):
    from dp_accounting.pld import privacy_loss_distribution

    pld = privacy_loss_distribution.from_gaussian_mechanism(1.0 / mu, value_discretization_interval=1e-3)
    claim = GaussianDP(mu)
    for eps_prime in EPS_PRIMES:
        # E_P[(1 − e^{ε′} q/p)_+] for P = N(μ, 1), Q = N(0, 1), integrated numerically.
        # The normal densities written out: quad calls the integrand point by point, where a
        # scipy.stats call costs tens of microseconds.
        scale = math.exp(eps_prime) / math.sqrt(2 * math.pi)
        integrand = lambda x: max(math.exp(-0.5 * (x - mu) ** 2) / math.sqrt(2 * math.pi)  # noqa: E731
                                  - scale * math.exp(-0.5 * x * x), 0.0)
        truth = integrate.quad(integrand, -30, 30, points=[mu / 2 + eps_prime / mu], limit=200)[0]
        assert claim.privacy_profile(eps_prime) == pytest.approx(truth, abs=1e-8)
        # dp_accounting's PLD is pessimistic by its discretisation: an upper bound, and close.
        assert pld.get_delta_for_epsilon(eps_prime) - 2e-3 <= claim.privacy_profile(eps_prime)
        assert claim.privacy_profile(eps_prime) <= pld.get_delta_for_epsilon(eps_prime) + 1e-9


@pytest.mark.parametrize("rho", [0.05, 0.5, 2.0])
def test_zcdp_profile_is_the_rdp_conversion(rho):
    import dp_accounting

    accountant = dp_accounting.rdp.RdpAccountant()
    accountant.compose(dp_accounting.ZCDpEvent(rho))
    claim = ZeroConcentratedDP(rho)

    def log_cks(alpha, eps_prime):  # Canonne, Kamath and Steinke (2020), Proposition 12, written here
        return (alpha - 1) * (rho * alpha - eps_prime) + (alpha - 1) * math.log1p(-1 / alpha) - math.log(alpha)

    gaussian = GaussianDP(math.sqrt(2 * rho))  # the Gaussian mechanism with ρ = Δ²/(2σ²) is ρ-zCDP
    for eps_prime in EPS_PRIMES:
        value = claim.privacy_profile(eps_prime)
        assert value == pytest.approx(accountant.get_delta(eps_prime), rel=1e-9)
        # The conversion optimised over continuous orders is at most the grid's value, and close.
        best = math.exp(optimize.minimize_scalar(lambda a: log_cks(a, eps_prime), bounds=(1.0001, 1e4),
                                                 method="bounded").fun)
        kl = math.sqrt(1 - math.exp(-rho))
        assert min(best, kl, 1.0) <= value + 1e-12
        assert value <= 1.05 * min(best, kl, 1.0) + 1e-9
        if eps_prime > rho:  # Bun and Steinke (2016), Proposition 1.3 is weaker than the conversion
            assert value <= math.exp(-(eps_prime - rho) ** 2 / (4 * rho)) + 1e-12
        # A ρ-zCDP mechanism's exact profile lies below the claim's.
        assert gaussian.privacy_profile(eps_prime) <= value + 1e-12


@pytest.mark.parametrize("order, eps", [(2.0, 0.3), (10.0, 1.0), (1.5, 0.05)])
def test_rdp_profile_single_order(order, eps):
    from dp_accounting.rdp.rdp_privacy_accountant import compute_delta

    claim = RenyiDP(order, eps)
    for eps_prime in EPS_PRIMES:
        formula = min(math.sqrt(1 - math.exp(-eps)),
                      math.exp((order - 1) * (eps - eps_prime + math.log1p(-1 / order)) - math.log(order)), 1.0)
        assert claim.privacy_profile(eps_prime) == pytest.approx(formula, rel=1e-9)
        assert claim.privacy_profile(eps_prime) == pytest.approx(compute_delta([order], [eps], eps_prime)[0], rel=1e-9)


def test_mi_claims_have_no_profile():
    for claim in (MIDP(0.5), MIPP(0.5)):
        assert not claim.has_profile and claim.profile_source is None
        with pytest.raises(InputError, match="no privacy profile"):
            claim.privacy_profile(1.0)


def test_profile_rejects_negative_epsilon():
    with pytest.raises(InputError, match="epsilon_prime"):
        GaussianDP(1.0).privacy_profile(-0.1)


# ---------------------------------------------------------------------------------------------
# trade-off curves and checks of certified event pairs
# ---------------------------------------------------------------------------------------------

def test_tradeoff_curves_match_closed_forms():
    a = np.linspace(0, 1, 41)
    eps, delta = 1.2, 0.01
    dp = np.maximum.reduce([np.zeros_like(a), 1 - delta - math.exp(eps) * a, math.exp(-eps) * (1 - delta - a)])
    assert DifferentialPrivacy(eps, delta).tradeoff(a) == pytest.approx(dp, abs=1e-12)
    mu = 1.0
    gaussian = stats.norm.cdf(stats.norm.ppf(1 - a) - mu)  # G_μ, Dong, Roth and Su (2022), Eq. (2.4)
    got = GaussianDP(mu).tradeoff(a)
    assert np.all(got <= gaussian + 1e-9) and np.max(gaussian - got) < 5e-3


@settings(max_examples=200, deadline=None)
@given(p=st.floats(0, 1), q=st.floats(0, 1), eps=st.floats(0.05, 4))
def test_pure_dp_event_check_is_the_two_inequalities(p, q, eps):
    # ε-DP for both orders of the pair: p ≤ e^ε q and 1 − q ≤ e^ε (1 − p).
    violated_by = max(p - math.exp(eps) * q, (1 - q) - math.exp(eps) * (1 - p))
    if abs(violated_by) < 1e-9:
        return
    assert DifferentialPrivacy(eps).check_event(p, q).refuted == (violated_by > 0)


@settings(max_examples=100, deadline=None)
@given(q=st.floats(0.001, 0.999), gap=st.floats(-0.3, 0.3), mu=st.floats(0.2, 3))
def test_gdp_event_check_is_the_gaussian_tradeoff(q, gap, mu):
    # The pair (type-I q, type-II 1 − p) is possible under μ-GDP iff 1 − p ≥ G_μ(q).
    boundary = 1 - stats.norm.cdf(stats.norm.ppf(1 - q) - mu)  # the largest p allowed at q
    p = boundary + gap
    if not 0 <= p <= 1 or abs(gap) < 2e-3:
        return
    assert GaussianDP(mu).check_event(p, q).refuted == (gap > 0)


@pytest.mark.parametrize("text", ["dp:1", "dp:0.3:0.01", "dp:3:0.2", "ldp:2", "zcdp:0.5", "rdp:8:0.5", "gdp:1"])
def test_event_margin_is_the_grid_maximum(text):
    # Brute force: every grid ε′, both orders of the pair, the largest excess over δ(ε′).
    claim = parse_claim(text)
    rng = np.random.default_rng(3)
    lower = np.concatenate((rng.random((50, 7)).ravel(), [0.0, 1.0, 0.5, 1e-9]))
    upper = np.concatenate(((rng.random((50, 7)) * rng.random((50, 7))).ravel(), [0.0, 1.0, 1e-9, 0.5]))
    eps, delta = claim._grid
    excess = [np.maximum(lower - math.exp(e) * upper - d, (1 - upper) - math.exp(e) * (1 - lower) - d)
              for e, d in zip(eps, delta)]
    np.testing.assert_allclose(claim.event_margin(lower, upper), np.max(excess, axis=0), rtol=0, atol=1e-12)
    assert claim.event_margin(lower.reshape(-1, 2), upper.reshape(-1, 2)).shape == (len(lower) // 2, 2)


def test_event_check_reports_where_and_how():
    check = DifferentialPrivacy(1.0).check_event(0.99, 0.5)
    # log(0.99/0.5) < 1, yet the complement event refutes: 0.5 > e · 0.01.
    assert check.refuted and check.event == "complement"
    assert check.statistic == pytest.approx(0.5 - math.exp(check.epsilon_prime) * 0.01)
    assert check.threshold == pytest.approx(DifferentialPrivacy(1.0).privacy_profile(check.epsilon_prime))
    assert not DifferentialPrivacy(1.0).check_event(0.5, 0.3).refuted


def test_to_dict():
    out = parse_claim("zcdp:0.5").to_dict()
    assert out["notion"] == "zcdp" and out["parameters"] == {"rho": 0.5}
    assert out["implied_mi_budget"] == 0.5 and "dp_accounting" in out["profile_source"]
    out = parse_claim("dp:1:1e-5").to_dict()
    assert out["implied_mi_budget"] is None and "finite" in out["implied_mi_budget_source"]
    assert parse_claim("mi-dp:0.5").to_dict()["profile_source"] is None
