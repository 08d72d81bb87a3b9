"""The audit engine: power on buggy mechanisms, validity on correct ones, MI-PP, reliability."""

import math

import numpy as np
import pytest

from audit.engine import run_audit
from audit.frameworks import attribute_privacy
from audit.spec import AuditSpec
from estimators.neural import CriticConfig
from estimators.validation import InputError
from mechanisms.base import MechanismError
from mechanisms.calibration import gaussian_mi_pp
from mechanisms.catalog import get_entry
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import ProductBernoulli, ProductGaussian

from conftest import SMALL_CRITIC

FAST = CriticConfig(max_steps=800)


def catalog_audit(name, **kwargs):
    entry = get_entry(name)
    eps = entry.claimed.epsilon
    mi_eps = min(eps, eps**2 / 2)  # Theorem 1, written out here: ε-DP ⇒ min(ε, ε²/2)-MI DP
    settings = dict(mechanism=entry.mechanism, priors=[entry.prior], notion="mi-dp", epsilon=mi_eps,
                    samples=8000, slices=4, event_runs=8000, claim=entry.claimed, name=name, critic=FAST, seed=1)
    settings.update(kwargs)
    return run_audit(AuditSpec(**settings))


@pytest.mark.train
def test_buggy_histogram_is_flagged_with_dp_bounds_below_the_truth():
    # At 8,000 samples the certified MI bound sits at the 0.125-nat budget (0.11-0.14 over seeds 1-3);
    # at 16,000 it clears it (0.16-0.19 over seeds 1-4).
    result = catalog_audit("histogram_buggy", samples=16000, event_runs=16000)
    assert result.verdict == "violation"
    assert result.lower_bound > result.epsilon
    # Both DP ε bounds are certified lower bounds on the true ε = 2 of the buggy histogram.
    assert 0.5 < result.dp_epsilon_lower_bound_event <= 2.0
    assert 0 < result.dp_epsilon_lower_bound_mi <= 2.0
    assert result.dp_epsilon_lower_bound_mi == pytest.approx(math.sqrt(2 * result.lower_bound))
    assert any(c.certified_contradiction for c in result.cross_checks)
    assert "is not 0.125-MI-DP" in result.statement()


@pytest.mark.train
def test_correct_laplace_sum_is_not_flagged():
    result = catalog_audit("laplace_sum")
    assert result.verdict == "no-violation-detected"
    assert result.dp_epsilon_lower_bound_event <= 1.0  # its true ε
    assert not any(c.certified_contradiction for c in result.cross_checks)
    assert "not a proof of privacy" in result.statement()


@pytest.mark.train
def test_smi_dp_notion_on_scalar_records():
    """One-attribute records and scalar output: every slice is ± the variable, so SI = I and the
    off-by-one mean (MI ≈ 0.17 nats under its exposing prior) violates 0.03-SMI-DP."""
    result = catalog_audit("mean_off_by_one_count", notion="smi-dp", epsilon=0.03, slices=8)
    assert result.notion == "smi-dp"
    assert result.paper_statistic == pytest.approx(result.estimate)  # Eq. (8) is the SMI-DP estimate
    assert result.verdict == "violation"


@pytest.mark.parametrize("name", ["noisy_max_laplace_value", "mean_true_count"])
@pytest.mark.train
def test_buggy_mechanisms_refuted_by_the_event_test(name):
    """Their MI under the exposing prior stays below min(ε, ε²/2), but the critic's event refutes
    the claimed 1-DP: its certified pair lies outside the claim's privacy profile (at the event
    test's share α/2 of α, so the ε bound alone can sit near 1 at this budget)."""
    result = catalog_audit(name, slices=2, event_runs=16000, arithmetic="ideal")  # the event test alone: no float bits
    assert result.claim_verdict == "refuted"
    assert [r["test"] for r in result.refuted_by] == ["event"]
    assert result.refuted_by[0]["statistic"] > result.refuted_by[0]["threshold"]
    assert result.dp_epsilon_lower_bound_event > 0.5


@pytest.mark.train
def test_per_record_evidence_singles_out_the_changed_record():
    result = catalog_audit("histogram_buggy", event_runs=0)
    records = {e.record: e for e in result.per_record}
    changed = int(np.flatnonzero((get_entry("histogram_buggy").pairs[0].first
                                  != get_entry("histogram_buggy").pairs[0].second).any(axis=1))[0])
    assert records[changed].estimate > 0.1
    for record, evidence in records.items():
        if record != changed:
            # The exposing prior never switches the other records: MI 0 exactly, no critic, no bound.
            assert (evidence.strategy, evidence.estimate, evidence.lower_bound) == ("constant", 0.0, None)
    assert result.event_test is None and result.dp_epsilon_lower_bound_event is None


def _mi_pp_setting(epsilon, n=5):
    """Column-mean release f(X) = mean of n N(0,1) records, Theorem 4 noise for ε-MI PP:
    the secret g = f has I(g; M) = ½ log(1 + (1/n)/σ²), which the calibration makes ε."""
    prior = ProductGaussian.iid_rows([0.0], [[1.0]], n)
    calibration = gaussian_mi_pp(epsilon, [1.0 / n])
    mechanism = calibration.mechanism(lambda dbs: dbs.mean(axis=1))
    framework = attribute_privacy(n, 1, statistic=lambda col: col.mean(axis=1, keepdims=True))
    truth = 0.5 * math.log(1 + (1.0 / n) / calibration.scale**2)
    return prior, mechanism, framework, truth


@pytest.mark.train
def test_mi_pp_attribute_privacy_violation_and_truth():
    prior, mechanism, framework, truth = _mi_pp_setting(0.6)
    assert truth == pytest.approx(0.6)
    flagged = run_audit(AuditSpec(mechanism=mechanism, priors=[prior], notion="mi-pp", epsilon=0.2,
                                  framework=framework, samples=8000, slices=4, critic=FAST, seed=2))
    assert flagged.verdict == "violation"
    assert flagged.lower_bound < truth  # a certified lower bound, below the exact MI
    assert abs(flagged.estimate - truth) < 0.08
    assert flagged.dp_epsilon_lower_bound_mi is None  # DP bounds are for the DP notions


@pytest.mark.train
def test_mi_pp_with_dependent_continuous_public_part_is_estimate_only():
    n = 4
    prior = ProductGaussian.iid_rows([0.0, 0.0], [[1.0, 0.8], [0.8, 1.0]], n)
    framework = attribute_privacy(n, 2, statistic=lambda col: col.mean(axis=1, keepdims=True), public_rest=True)

    def release(dbs, rng):
        return dbs[:, :, 0].mean(axis=1, keepdims=True) + rng.normal(0, 0.3, (dbs.shape[0], 1))

    result = run_audit(AuditSpec(mechanism=release, priors=[prior], notion="mi-pp", epsilon=0.1,
                                 framework=framework, samples=4000, slices=0, critic=FAST, seed=3))
    assert result.estimate_only and result.lower_bound is None
    assert all(e.strategy == "estimate-only" for e in result.per_record)
    assert "estimate only" in result.statement()


@pytest.mark.train
def test_same_seed_same_result():
    a = catalog_audit("histogram", samples=3000, slices=2, event_runs=2000, critic=SMALL_CRITIC)
    b = catalog_audit("histogram", samples=3000, slices=2, event_runs=2000, critic=SMALL_CRITIC)
    assert a.to_dict()["per_record"] == b.to_dict()["per_record"]
    assert a.lower_bound == b.lower_bound and a.dp_epsilon_lower_bound_event == b.dp_epsilon_lower_bound_event


def _small_spec(mechanism, **kwargs):
    settings = dict(mechanism=mechanism, priors=[ProductBernoulli(0.5, shape=(3, 1))], notion="mi-dp",
                    epsilon=0.1, samples=1000, slices=0, event_runs=0, critic=SMALL_CRITIC)
    settings.update(kwargs)
    return AuditSpec(**settings)


def test_mechanism_that_raises_is_named_with_the_sample():
    def broken(dbs, rng):
        if dbs.shape[0] > 1:
            raise RuntimeError("boom")
        return dbs.sum(axis=1)

    with pytest.raises(MechanismError, match="broken.*boom"):
        run_audit(_small_spec(broken, name="broken"))


@pytest.mark.parametrize("bad_output,match", [
    (lambda dbs: np.ones((dbs.shape[0] - 1, 1)), "shape|rows"),
    (lambda dbs: np.full((dbs.shape[0], 1), np.nan), "NaN|inf|finite"),
])
def test_mechanism_wrong_shape_or_nan(bad_output, match):
    with pytest.raises(MechanismError, match=match):
        run_audit(_small_spec(lambda dbs, rng: bad_output(dbs), name="bad"))


def test_budget_too_small_says_so():
    with pytest.raises(InputError, match="'samples'.*too small"):
        run_audit(_small_spec(lambda dbs, rng: dbs.sum(axis=1), samples=100))


@pytest.mark.parametrize("kwargs,match", [
    ({"epsilon": 0.0}, "'epsilon'"),
    ({"alpha": 1.0}, "'alpha'"),
    ({"notion": "dp"}, "'notion'"),
    ({"notion": "mi-pp"}, "'framework'"),
    ({"notion": "smi-dp", "slices": 0}, "'slices'"),
    ({"records": [7]}, "'records'"),
    ({"estimator": "ksg"}, "'estimator'"),
])
def test_bad_specs(kwargs, match):
    with pytest.raises(InputError, match=match):
        _small_spec(lambda dbs, rng: dbs.sum(axis=1), **kwargs)


@pytest.mark.slow
@pytest.mark.train
def test_type_one_error_at_the_boundary():
    """True MI exactly ε (Theorem 4 Gaussian on Gaussian data): violations in at most about α of runs."""
    prior, mechanism, framework, truth = _mi_pp_setting(0.3)
    runs, alpha = 30, 0.2
    violations = 0
    for seed in range(runs):
        result = run_audit(AuditSpec(mechanism=mechanism, priors=[prior], notion="mi-pp", epsilon=truth,
                                     framework=framework, samples=3000, slices=0, alpha=alpha,
                                     critic=CriticConfig(max_steps=400), seed=100 + seed))
        violations += result.verdict == "violation"
    assert violations <= alpha * runs + 3 * math.sqrt(alpha * (1 - alpha) * runs)


def _salaries_by_department(m, rng):
    """Three records (salary s, department d ∈ {0, 1}) with s | d ~ N(d, 1)."""
    dept = rng.integers(0, 2, (m, 3)).astype(float)
    return np.stack((dept + rng.standard_normal((m, 3)), dept), axis=2)


def _salary_given_department():
    from audit.frameworks import PufferfishFramework, SecretFunction, SecretPair

    g = SecretFunction("salary 0", lambda dbs: dbs[:, 0, 0:1])
    w = SecretFunction("department 0", lambda dbs: dbs[:, 0, 1:2], always_discrete=True)
    return PufferfishFramework("salary given department", (g,), (w,), (SecretPair(g, w, "unknown"),))


def _release_salary_0(dbs, rng):
    return dbs[:, 0, 0:1] + rng.standard_normal((dbs.shape[0], 1))


@pytest.mark.train
def test_fresh_prior_draws_of_a_stratified_certificate_obey_the_timeout():
    """The stratum's mass is bounded from fresh prior draws: a sampler that hangs on that large
    request is named after --timeout instead of stalling the audit (issue 12, E)."""
    import time

    from mechanisms.execution.runner import ExecutionSettings
    from mechanisms.inputs.user_priors import UserPrior

    def sampler(m, rng):
        if m > 50000:
            time.sleep(30)  # long enough to see the timeout, short enough that a regression fails, not hangs
        return _salaries_by_department(m, rng)

    framework, release = _salary_given_department(), _release_salary_0
    spec = AuditSpec(mechanism=release, priors=[UserPrior(sampler, "hangs when asked for many")], notion="mi-pp",
                     epsilon=0.05, framework=framework, samples=4000, slices=0, critic=SMALL_CRITIC,
                     seed=4, execution=ExecutionSettings(timeout=1))
    started = time.perf_counter()
    with pytest.raises(MechanismError, match="prior .*did not return within 1 s drawing 100000 fresh databases"):
        run_audit(spec)
    assert time.perf_counter() - started < 25


@pytest.mark.train
def test_mi_pp_stratifies_on_a_discrete_dependent_public_part():
    """Salary s depends on the public department d ∈ {0, 1}: s | d ~ N(d, 1). The release
    s₀ + N(0, 1) leaks I(s₀; M | d₀) = ½ log 2 within each department, so ½ log 2 in all.
    The certificate is P̲(d = v) · L_v for one stratum, below the truth and above ε = 0.05."""
    from mechanisms.inputs.user_priors import UserPrior

    sampler, framework, release = _salaries_by_department, _salary_given_department(), _release_salary_0

    result = run_audit(AuditSpec(mechanism=release, priors=[UserPrior(sampler, "salary by department")],
                                 notion="mi-pp", epsilon=0.05, framework=framework, samples=10000, slices=0,
                                 critic=FAST, seed=4))
    truth = 0.5 * math.log(2)
    assert result.per_record[0].strategy == "stratify"
    assert not result.estimate_only
    assert abs(result.estimate - truth) < 0.08
    assert 0.05 < result.lower_bound < truth
    assert result.verdict == "violation"
    assert "stratum" in result.certified_secret


@pytest.mark.train
def test_prior_search_finds_the_leak_a_flat_prior_dilutes():
    """A count whose noise is far too small, audited under a product-Bernoulli prior on 6 records
    for record 0 only: the two-point priors of the search concentrate on neighbouring pairs, are
    named in Θ, and their candidates are paid for in the union bound."""
    def leaky(dbs, rng):
        return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 0.3, (dbs.shape[0], 1))

    base = dict(mechanism=leaky, priors=[ProductBernoulli(0.5, shape=(6, 1))], notion="mi-dp", epsilon=0.2,
                samples=4000, slices=0, event_runs=0, critic=FAST, seed=5, records=(0,))
    plain = run_audit(AuditSpec(**base))
    searched = run_audit(AuditSpec(**base, prior_search=2))
    assert len(searched.priors) == 3 and "prior search" in searched.theta_statement
    assert "prior search" not in plain.theta_statement
    assert searched.lower_bound > plain.lower_bound
    assert searched.verdict == "violation"


def test_prior_search_is_for_dp_notions_only():
    prior, mechanism, framework, _ = _mi_pp_setting(0.3)
    with pytest.raises(InputError, match="'prior_search'"):
        AuditSpec(mechanism=mechanism, priors=[prior], notion="mi-pp", epsilon=0.1, framework=framework,
                  prior_search=2)


def _half_dp_claim_on_record_zero(mechanism, records: int, seed: int):
    """An audit of the claim 0.5-DP under the two-point prior on record 0 = 1 against all zeros (binary
    records): 3000 prior draws, 2000 certification runs per input, 20-step neural critics (asked for: the
    event test then weighs the critic's statistic against the classifiers')."""
    from mechanisms.inputs.priors import TwoPoint

    first, second = np.zeros((records, 1)), np.zeros((records, 1))
    first[0] = 1.0
    return run_audit(AuditSpec(mechanism=mechanism, priors=[TwoPoint(first, second)], notion="mi-dp",
                               claim=parse_claim("dp:0.5"), samples=3000, event_runs=2000, slices=0,
                               critic=SMALL_CRITIC, mi_critic="neural", seed=seed,
                               arithmetic="ideal"))  # no float-bit test, whose own runs would count too


def _one_coordinate_among_many(dbs, rng):
    """Record 0 (a bit) flips the sign of a unit shift on coordinate 0 of 24 Gaussian coordinates:
    N(±1, 1) there, N(0, 1) elsewhere. The log-likelihood ratio between the two values is 2·y₀,
    linear in the output, so a logistic regression on the outputs is the exact family."""
    y = rng.normal(size=(len(dbs), 24))
    y[:, 0] += 2.0 * dbs[:, 0, 0] - 1.0
    return y


@pytest.mark.train
def test_a_two_point_audit_chooses_its_statistic_and_event_on_held_out_draws():
    """Under the exposing pair's two-point prior the event is chosen on the MI sample's held-out draws: no
    selection run is made, every run is counted, and the logistic statistic beats a 20-step critic on a
    one-coordinate leak among 24 coordinates. The Gaussian shift is no pure-DP mechanism (its privacy loss
    2·y₀ is unbounded), and the event {y₀ > 1.5} alone has probabilities Φ(0.5) = 0.69 and Φ(−2.5) = 0.0062
    (log-ratio 4.7), so the 0.5-DP claim is refuted with ε > 1 certified at 2,000 runs per input.
    """
    result = _half_dp_claim_on_record_zero(_one_coordinate_among_many, records=3, seed=3)
    event = result.event_test
    assert event.selection_runs == 0 and "held-out draws of the MI sample" in event.description
    assert "event_selection" not in result.samples_by_purpose
    made = event.runs_made  # a rate-ratio certificate's Poisson numbers of runs, within the 2,000 per input
    assert result.samples == 3000 + (2 * 2000 if made is None else sum(made))
    assert made is None or max(made) <= 2000
    assert "logistic" in event.description
    assert result.claim_verdict == "refuted" and event.epsilon_lower_bound > 1.0


@pytest.mark.train
@pytest.mark.parametrize("seed", [1, 2])
def test_a_slice_chosen_by_the_mi_test_leaves_the_full_critic_among_the_event_statistics(seed):
    """With slices, the MI test may certify with a slice critic; the event test then also offers the record's
    full critic and the logistic statistics, linear and quadratic (four candidates; the float-bit statistics of
    audit.statistics.float_bits are not offered, as the catalog's releases are multiples of 2^-32), scored on draws none
    of them was trained on."""
    entry = get_entry("laplace_sum")
    spec = AuditSpec(mechanism=entry.mechanism, priors=[entry.prior], notion="mi-dp", claim=entry.claimed,
                     samples=3000, event_runs=2000, slices=4, critic=SMALL_CRITIC, seed=seed)
    result = run_audit(spec)
    event = result.event_test
    assert "slice" in result.certified_secret  # 20-step critics: a slice certifies best at these seeds
    assert event.pairs_considered == 4
    held = int(event.description.split(" held-out draws")[0].rsplit(" ", 1)[1])
    # the full and the sliced fits each train on their own 40% of the 3000 draws: about 36% is left
    assert 0.25 * 3000 < held < 0.6 * 3000


def _parity_of_three_bits(dbs, rng):
    """Three output bits, each a fair coin whatever the record (record 0, a bit s), whose parity is s flipped
    with probability 0.2: P(y₀ ⊕ y₁ ⊕ y₂ = s) = 0.8. The log-likelihood ratio ±log 4 depends on the parity
    only. A score additive over the bits orders the rows by a weighted count of ones, so its tails (one or
    both) cannot gather the parity class: they reach ratio 4 only on single rows (probabilities 0.2 and 0.05)."""
    u = rng.integers(0, 2, (len(dbs), 2))
    parity = dbs[:, 0, 0].astype(int) ^ (rng.random(len(dbs)) < 0.2)
    return np.column_stack([u, u[:, 0] ^ u[:, 1] ^ parity]).astype(float)


@pytest.mark.train
def test_outputs_with_few_values_get_their_empirical_log_ratio_as_a_statistic():
    """The event {parity = s} has probabilities 0.8 and 0.2 (ε = log 4 = 1.39). With outputs of 8 values the event
    test offers four statistics (critic, logistic regression, empirical log-ratio: its power on parity is
    tested in tests/test_classifier_statistic.py; and the empirical log-ratio of the output's support, offered
    because the outputs are discrete); the chosen event separates the parity classes, and the 0.5-DP claim
    is refuted with ε > 0.9 certified."""
    result = _half_dp_claim_on_record_zero(_parity_of_three_bits, records=2, seed=5)
    event = result.event_test
    assert event.pairs_considered == 4 and "logistic" not in event.description
    assert abs(event.p_first - 0.8) < 0.04 and abs(event.p_second - 0.2) < 0.04  # 4.5 standard errors at 2000 runs
    assert result.claim_verdict == "refuted" and 0.9 < event.epsilon_lower_bound <= math.log(4)
