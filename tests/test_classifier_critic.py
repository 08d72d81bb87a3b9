"""Classifier critics (audit/statistics/classifier_critic.py): the Barber–Agakov critic of a two-valued record,
its DV value against closed-form and numerically integrated MI, its certificate, and the plan that
chooses it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from audit.statistics.classifier_critic import ClassifierCritic
from audit.engine import run_audit
from audit.audit_plan import plan_audit, resolve_mi_critic
from audit.spec import AuditSpec
from estimators.critic_config import CriticConfig
from estimators.neural import product_shifts
from estimators.validation import InputError
from mechanisms.catalog import get_entry
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import ProductBernoulli, TwoPoint

FIRST, SECOND = np.zeros((2, 1)), np.array([[1.0], [0.0]])  # neighbours differing in record 0


def test_critic_is_log_posterior_over_prior_clipped():
    # q(a | y) = σ(ℓ), ℓ = statistic + offset: for ℓ = log 3, q(a | y) = 3/4 and q(b | y) = 1/4; with π̂ = 0.6 the critic is
    # log(0.75/0.6) on a draw of a and log(0.25/0.4) on a draw of b.
    critic = ClassifierCritic("test", lambda y: np.full(len(y), math.log(3.0) - 0.5), 0.5, 0.6)
    values = critic(np.array([True, False]), np.zeros((2, 1)), -8.0, 3.0)
    np.testing.assert_allclose(values, [math.log(0.75 / 0.6), math.log(0.25 / 0.4)], rtol=1e-12)
    # An extremely confident wrong posterior is clipped at lo, never -inf.
    sure = ClassifierCritic("test", lambda y: np.full(len(y), 800.0), 0.0, 0.5)
    assert sure(np.array([False]), np.zeros((1, 1)), -8.0, 3.0)[0] == -8.0


def _gaussian_shift(mu):
    def mechanism(dbs, rng):
        return (2 * mu * dbs[:, 0, :] - mu) + rng.normal(size=(len(dbs), 1))
    return mechanism


def _binary_gaussian_mi(mu: float) -> float:
    """I(X; Y) for X uniform on {−1, +1} and Y = μX + N(0, 1), by quadrature: h(Y) − h(N(0, 1))."""
    def density(y):
        return 0.5 * (stats.norm.pdf(y, -mu) + stats.norm.pdf(y, mu))
    h_y = integrate.quad(lambda y: -density(y) * np.log(density(y)), -mu - 12, mu + 12, limit=200)[0]
    return h_y - 0.5 * math.log(2 * math.pi * math.e)


def test_gaussian_shift_mi_by_the_logistic_critic_no_neural_network():
    # The log-likelihood ratio of N(±μ, 1) is linear in y: the logistic regression is the true posterior,
    # so the Barber–Agakov estimate is the MI. Not marked `train`: tests/conftest.py fails this test if the
    # audit trains a neural critic.
    mu = 1.0
    truth = _binary_gaussian_mi(mu)
    result = run_audit(AuditSpec(mechanism=_gaussian_shift(mu), priors=[TwoPoint(FIRST, SECOND)], notion="mi-dp",
                                 epsilon=0.5, samples=20000, event_runs=0, mi_critic="classifier", seed=4))
    evidence = result.per_record[0]
    assert result.certified_secret == "record 0 (logistic critic)"
    assert abs(result.estimate - truth) < 0.02  # about 3 standard errors at 10,000 test draws
    assert result.lower_bound <= truth and result.lower_bound > truth - 0.06
    assert evidence.lower_bound == result.lower_bound  # one candidate: α/1 both ways


def test_randomized_response_mi_by_the_empirical_log_ratio_critic():
    # Randomized response keeps the bit with probability p = e/(1 + e) (ε = 1): I = log 2 − H_b(p).
    p = math.e / (1 + math.e)
    truth = math.log(2) + p * math.log(p) + (1 - p) * math.log(1 - p)

    def randomized_response(dbs, rng):
        bit = dbs[:, 0, :]
        return np.where(rng.random(bit.shape) < p, bit, 1 - bit)

    result = run_audit(AuditSpec(mechanism=randomized_response, priors=[TwoPoint(FIRST, SECOND)],
                                 notion="mi-dp", epsilon=0.5, samples=20000, event_runs=0, mi_critic="classifier",
                                 seed=2))
    assert abs(result.estimate - truth) < 0.015
    assert result.lower_bound <= truth


def test_dp_claim_audit_of_a_catalog_entry_trains_no_neural_critic_and_refutes_a_buggy_one():
    entry = get_entry("histogram_buggy")
    result = run_audit(AuditSpec(mechanism=entry.mechanism, priors=[entry.prior], claim=entry.claimed,
                                 samples=6000, event_runs=6000, seed=1))
    assert "classifier" in " ".join(result.notes) and "critic)" in result.certified_secret
    assert result.claim_verdict == "refuted" and result.training_history["full"]["classifiers"]
    assert result.estimator == "classifier"  # not the neural objective the spec names (dv)


def _spec(**kwargs):
    entry = get_entry("laplace_sum")
    settings = dict(mechanism=entry.mechanism, priors=[entry.prior], samples=2000, seed=0)
    settings.update(kwargs)
    return AuditSpec(**settings)


def _resolve(spec):
    theta = [(prior, None) for prior in spec.priors]
    plan = plan_audit(spec, theta)
    return plan.mi_critic


@pytest.mark.parametrize("claim", ["dp:1", "zcdp:0.5", "gdp:1", "dp:1:1e-5"])
def test_auto_gives_a_dp_family_claim_under_a_two_point_prior_classifier_critics(claim):
    assert _resolve(_spec(claim=parse_claim(claim))) == "classifier"


@pytest.mark.parametrize("settings", [
    dict(notion="mi-dp", epsilon=0.5),                                     # no claim: the MI question itself
    dict(claim=parse_claim("dp:1"), slices=4),                              # slices asked for
    dict(claim=parse_claim("dp:1"), mi_critic="neural"),                    # asked for
    dict(claim=parse_claim("mi-dp:0.5")),                                   # an MI claim: no event profile
    dict(claim=parse_claim("dp:1"), priors=[ProductBernoulli(0.5, shape=(3, 1))]),  # not a two-point prior
])
def test_auto_keeps_neural_critics_where_the_question_is_not_a_dp_claim_on_two_points(settings):
    assert _resolve(_spec(**settings)) == "neural"


def test_classifier_critics_asked_for_where_they_cannot_serve_is_an_error_naming_the_argument():
    spec = _spec(notion="mi-dp", epsilon=0.5, priors=[ProductBernoulli(0.5, shape=(3, 1))], mi_critic="classifier")
    with pytest.raises(InputError, match="mi_critic.*two-point prior"):
        _resolve(spec)


def test_unknown_mi_critic_is_an_error_naming_the_argument():
    with pytest.raises(InputError, match="mi_critic"):
        _spec(claim=parse_claim("dp:1"), mi_critic="forest")


def test_resolve_mi_critic_says_why_in_a_note():
    spec = _spec(claim=parse_claim("dp:1"))
    theta = [(prior, None) for prior in spec.priors]
    plan = plan_audit(spec, theta)
    critic, why = resolve_mi_critic(spec, 0, plan.secrets, theta)
    assert critic == "classifier" and why in plan.notes and "no neural network is trained" in why


def _variance_leak(dbs, rng):
    """N(0, 1) on the first database, N(0, 3²) on the second: a leak no linear log-odds sees."""
    scale = np.where(dbs[:, 0, :] == 1, 3.0, 1.0)
    return scale * rng.normal(size=scale.shape)


def _gaussian_pair_mi(sigma: float) -> float:
    """I(X; Y) for X uniform on two inputs and Y ~ N(0, 1) or N(0, σ²), by quadrature: h(Y) − h(Y | X)."""
    def density(y):
        return 0.5 * (stats.norm.pdf(y) + stats.norm.pdf(y, scale=sigma))
    h_y = integrate.quad(lambda y: -density(y) * np.log(density(y)), -12 * sigma, 12 * sigma, limit=200)[0]
    return h_y - 0.5 * (0.5 * math.log(2 * math.pi * math.e) + 0.5 * math.log(2 * math.pi * math.e * sigma**2))


def test_a_change_of_spread_is_seen_by_the_quadratic_logistic_critic():
    # The log-likelihood ratio log 3 − y²(1/2 − 1/18) is quadratic: the linear logistic sees nothing, the
    # quadratic one is the true posterior, so its estimate is the MI; the likelihood ratio is unbounded, so
    # the 1-DP claim is false and the event test refutes it. Not marked `train`: no neural critic.
    truth = _gaussian_pair_mi(3.0)
    result = run_audit(AuditSpec(mechanism=_variance_leak, priors=[TwoPoint(FIRST, SECOND)], claim=parse_claim("dp:1"),
                                 samples=20000, event_runs=4000, seed=0))
    assert result.certified_secret == "record 0 (quadratic logistic critic)"
    assert abs(result.estimate - truth) < 0.02 and result.lower_bound <= truth
    # Two event statistics, the linear and the quadratic logistic (no neural critic, continuous outputs), beside the
    # four float-bit ones of the float-bit test (audit.statistics.float_bits): both tails of either logistic gather
    # the large |y| that only the wider Gaussian gives.
    assert result.claim_verdict == "refuted" and result.event_test.pairs_considered == 2
    assert result.float_event_test.pairs_considered == 4
    # The MI test is a separate statement (audit.certificates.claim_tests); the event tests share α, a fifth to the bits.
    assert result.claim_alpha == pytest.approx({"event": 0.04, "float": 0.01})


def test_the_event_test_gets_the_classifiers_cross_fitted(monkeypatch):
    # Per classifier kind and cell: one fit for the MI critic (training split) and one per fold for the event
    # statistic (every fold but one), and the event is chosen on the out-of-fold scores of all 3,000 draws.
    from audit.statistics import classifier_critic, classifier as classifier_statistic

    calls = []
    original = classifier_statistic.LogOdds._solve  # every logistic fit solves once; QuadraticLogOdds inherits it

    def counting(self, *args, **kwargs):
        calls.append(type(self).__name__)
        original(self, *args, **kwargs)
    monkeypatch.setattr(classifier_statistic.LogOdds, "_solve", counting)
    result = run_audit(AuditSpec(mechanism=_gaussian_shift(1.0), priors=[TwoPoint(FIRST, SECOND)],
                                 claim=parse_claim("dp:1"), samples=3000, event_runs=2000, seed=1))
    folds = classifier_critic.CROSS_FIT_FOLDS
    assert sorted(calls) == ["LogOdds"] * (1 + folds) + ["QuadraticLogOdds"] * (1 + folds)
    # The two logistic statistics, and the four float-bit ones in the float-bit test (audit.statistics.float_bits; no
    # logistic fit among them).
    assert result.event_test.pairs_considered == 2 and result.float_event_test.pairs_considered == 4
    assert "chosen among 2 candidates on 3000 held-out draws" in result.event_test.description
    assert f"on {folds} folds of the MI sample (cross-fitted" in result.event_test.description


def test_the_summary_says_the_event_test_alone_decides_and_the_mi_bound_is_a_separate_statement():
    from audit.cli.audit_command import _check_status

    # Ideal arithmetic: no float-bit test shares the event test's α.
    result = run_audit(AuditSpec(mechanism=_gaussian_shift(1.0), priors=[TwoPoint(FIRST, SECOND)],
                                 claim=parse_claim("dp:1"), samples=3000, event_runs=2000, seed=1, arithmetic="ideal"))
    assert "The event test at α = 0.05 is the one test that can refute it." in result.statement()
    mi_check, event_check = result.cross_checks
    assert mi_check.test == "mi" and mi_check.alpha_spent is None and "a separate statement" in mi_check.detail
    assert _check_status(mi_check) == "not a test of the claim"
    assert _check_status(event_check) == ("REFUTED" if event_check.certified_contradiction else "not refuted")


@pytest.mark.train
def test_outputs_no_classifier_suits_get_neural_critics_and_a_note(monkeypatch, small_critic):
    # Both classifiers refuse (as for a model's parameters: too wide, too many values): the audit says so
    # and trains neural critics instead.
    from audit.statistics import classifier as classifier_statistic

    monkeypatch.setattr(classifier_statistic.FeatureDesign, "build", classmethod(lambda cls, *args, **kwargs: None))
    monkeypatch.setattr(classifier_statistic.LogOdds, "fit", classmethod(lambda cls, *args, **kwargs: None))
    monkeypatch.setattr(classifier_statistic.EmpiricalLogRatio, "fit", classmethod(lambda cls, *args, **kwargs: None))
    result = run_audit(AuditSpec(mechanism=_gaussian_shift(1.0), priors=[TwoPoint(FIRST, SECOND)],
                                 claim=parse_claim("dp:1"), samples=2000, event_runs=0, critic=small_critic, seed=0))
    assert any("no classifier critic could be fitted" in note for note in result.notes)
    assert result.certified_secret == "record 0 (full critic)"


def test_the_fallback_to_neural_critics_is_memory_checked_before_they_train(monkeypatch):
    # The classifier plan counts no critic memory before sampling (classifier critics train no network); where no
    # classifier fits, the neural critics trained instead are checked before they train. One full critic of
    # record 0 (record 1 is constant) on (record, output, other record), 3 numbers, 2,000 samples, the default
    # shallow critic of hidden width 32 and batch 256 (estimators.memory.critic_memory_parts), counted by hand.
    import re

    from audit import engine
    from audit.statistics import classifier as classifier_statistic
    from mechanisms.execution import memory

    monkeypatch.setattr(classifier_statistic.FeatureDesign, "build", classmethod(lambda cls, *args, **kwargs: None))
    monkeypatch.setattr(classifier_statistic.LogOdds, "fit", classmethod(lambda cls, *args, **kwargs: None))
    monkeypatch.setattr(classifier_statistic.EmpiricalLogRatio, "fit", classmethod(lambda cls, *args, **kwargs: None))
    samples, width, hidden = 2000, 3, 32
    base = 2 * samples * (2 * 1 * 8) + 2 * samples * 8  # databases of 2 x 1 and one output each, chunks and joined
    features = 8 * samples * width + samples * width * (8 + 4 + 4)
    models = 4 * (5 * (width * hidden + 2 * hidden + 1 + width) + max(2 * 256 * hidden, samples * hidden))
    monkeypatch.setattr(memory, "available_memory", lambda: base + features)
    trained = []
    monkeypatch.setattr(engine, "fit_secret_critics", lambda *args, **kwargs: trained.append(1))
    spec = AuditSpec(mechanism=_gaussian_shift(1.0), priors=[TwoPoint(FIRST, SECOND)], claim=parse_claim("dp:1"),
                     samples=samples, event_runs=0, device="cpu", seed=0)
    assert plan_audit(spec, [(prior, None) for prior in spec.priors]).mi_critic == "classifier"
    with pytest.raises(InputError, match=rf"'samples' \(2000\).*at least {re.escape(memory.format_bytes(base + features + models))}"
                                         r".*critic features .*" + re.escape(
                                             "lower argument 'samples' (--samples, [audit] samples) or argument "
                                             "'slices' (--slices, [audit] slices), or audit fewer records: argument "
                                             "'records' (--records, [audit] records)")):
        run_audit(spec)
    assert trained == []


@pytest.mark.parametrize("mi_critic", ["classifier", "neural"])
def test_eval_shifts_not_below_the_test_split_is_an_error_naming_the_key(mi_critic):
    """400 samples split (0.4, 0.1, 0.5) leave a test split of 200 draws, the audit's floor of held-out draws:
    eval_shifts = 200 rolls the outputs by 1, 2, ..., 200, and the roll by 200 ≡ 0 would pair each output with
    its own record's value as a 'product' sample, inflating the DV estimate's second term. The audit says so
    before running the mechanism (the critics check again before fitting: the neural ones would otherwise name
    fit_critics' arguments 'u' and 'v')."""
    samples, shifts = 400, 200
    split = CriticConfig().split
    assert samples - round(split[0] * samples) - round(split[1] * samples) == shifts
    # The fewest samples whose test split holds more than 200 draws (and every split at least 4), by brute force.
    need = next(n for n in range(samples, 1000)
                if min(round(split[0] * n), round(split[1] * n)) >= 4
                and n - round(split[0] * n) - round(split[1] * n) > shifts)
    calls = []

    def counted(dbs, rng):
        calls.append(len(dbs))
        return _gaussian_shift(1.0)(dbs, rng)

    spec = AuditSpec(mechanism=counted, priors=[TwoPoint(FIRST, SECOND)], notion="mi-dp", epsilon=0.5,
                     samples=samples, event_runs=0, mi_critic=mi_critic, seed=1,
                     critic=CriticConfig(eval_shifts=shifts))
    with pytest.raises(InputError) as info:
        run_audit(spec)
    assert str(info.value) == (
        f"argument 'samples' (--samples, [audit] samples) is 400: the critics' test split must hold more draws than "
        f"[critic] eval_shifts = 200; use at least {need} samples or fewer eval_shifts")
    assert calls == []
    assert need == 401  # 401 - round(160.4) - round(40.1) = 201 held-out draws


def test_product_shifts_stay_distinct_and_off_zero_below_the_test_split():
    # Every roll in 1..n_test - 1 and no two alike: each rolled pair joins two different draws.
    for n_test in range(2, 80):
        for eval_shifts in range(1, n_test):
            rolls = product_shifts(n_test, eval_shifts)
            assert len(rolls) == len({s % n_test for s in rolls}) == eval_shifts
            assert all(0 < s % n_test for s in rolls)
