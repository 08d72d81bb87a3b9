"""The audit plan: which critics a claim trains, which secrets are skipped, slices, the run budget."""

import math
import re

import numpy as np
import pytest

import estimators.critic_problems as critic_problems
from audit.engine import run_audit
from audit.audit_plan import DEFAULT_SMI_SLICES, deterministic_records, plan_audit
from audit.spec import AuditSpec
from estimators.neural import CriticConfig
from mechanisms.catalog import get_entry
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import FixedRest, ProductBernoulli, TwoPoint
from mechanisms.inputs.user_priors import UserPrior

import separated_bounds as separated

FAST = CriticConfig(max_steps=200)


def _plan(spec):
    return plan_audit(spec, [(prior, None) for prior in spec.priors])


def _laplace_sum(**kwargs):
    entry = get_entry("laplace_sum")
    settings = dict(mechanism=entry.mechanism, priors=[entry.prior], samples=2000, critic=FAST, seed=3)
    settings.update(kwargs)
    return entry, AuditSpec(**settings)


def _switching_records(prior):
    """Records a two-point prior can switch, counted here row by row."""
    return [i for i in range(prior.shape[0])
            if not np.array_equal(prior.first[i], prior.second[i]) and 0 < prior.p[i] < 1]


@pytest.mark.parametrize("mi_critic, claim_tests", [
    # dp:1 implies min(1, 1/2) = 0.5 nats < log 2 (a record of two values): with neural critics both tests
    # can refute and split α; with classifier critics the event test, thresholding their log-odds, gets all.
    # Under float arithmetic (the default) the float-bit event test takes a fifth of the event test's share
    # (docs/explanation/statistical-core.md states these shares).
    ("neural", {"mi": 0.05 / 2, "event": 0.8 * 0.05 / 2, "float": 0.2 * 0.05 / 2}),
    ("auto", {"event": 0.8 * 0.05, "float": 0.2 * 0.05}),
])
def test_dp_claim_on_a_two_point_prior_trains_one_full_critic_for_the_switching_record(mi_critic, claim_tests):
    entry, spec = _laplace_sum(claim=parse_claim("dp:1"), mi_critic=mi_critic)
    plan = _plan(spec)
    assert [s.record for s in plan.trained] == _switching_records(entry.prior) == [0]
    assert plan.slices == 0 and plan.full_critics and plan.critics_per_secret == 1
    assert [s.record for s in plan.secrets if s.deterministic] == [1, 2]
    assert spec.alpha == 0.05 and plan.claim_tests.alpha_spent == pytest.approx(claim_tests)
    assert sum(plan.claim_tests.alpha_spent.values()) == pytest.approx(spec.alpha)
    assert plan.mi_runs == 2000 and plan.event_runs == 2000
    assert any("never changes under its prior" in note for note in plan.notes)


def test_classifier_critics_leave_the_mi_test_to_a_separate_statement_only_where_the_event_test_can_refute():
    # With too few runs per input for the event test to refute the claim even for perfectly separated
    # inputs, the MI test keeps α (else no test could refute the claim at all).
    _, spec = _laplace_sum(claim=parse_claim("dp:1"), event_runs=6)
    plan = _plan(spec)
    assert plan.mi_critic == "classifier" and set(plan.claim_tests.alpha_spent) == {"mi"}


def test_dp_claim_the_mi_test_cannot_refute_says_the_critics_serve_the_event_test():
    # dp:2 implies min(2, 2) = 2 nats > log 2: only the event test can refute it.
    _, spec = _laplace_sum(claim=parse_claim("dp:2"), mi_critic="neural")
    plan = _plan(spec)
    assert set(plan.claim_tests.alpha_spent) == {"event", "float"}  # the float-bit test: float arithmetic
    assert any("give the event test its likelihood-ratio statistic" in note for note in plan.notes)


@pytest.mark.parametrize("claim", ["zcdp:0.5", "gdp:1", "rdp:2:0.5", "ldp:1"])
def test_every_dp_family_claim_gets_no_slices_by_default(claim):
    _, spec = _laplace_sum(claim=parse_claim(claim))
    assert _plan(spec).slices == 0


def test_mi_dp_audit_without_claim_trains_every_record_and_no_slices():
    prior = ProductBernoulli(np.full((4, 1), 0.5))
    spec = AuditSpec(mechanism=get_entry("laplace_sum").mechanism, priors=[ProductBernoulli(np.full((3, 2), 0.5))],
                     notion="mi-dp", epsilon=0.1, samples=2000)
    plan = _plan(spec)
    assert [s.record for s in plan.trained] == [0, 1, 2]
    assert plan.slices == 0 and plan.full_critics
    assert plan.claim_tests.alpha_spent == {}
    assert deterministic_records(prior) == frozenset()


def test_smi_dp_trains_slices_only():
    _, spec = _laplace_sum(notion="smi-dp", epsilon=0.1)
    plan = _plan(spec)
    assert plan.slices == DEFAULT_SMI_SLICES == 32
    assert not plan.full_critics and plan.critics_per_secret == 32


@pytest.mark.parametrize("slices", [0, 4])
def test_explicit_slices_are_honoured(slices):
    _, spec = _laplace_sum(claim=parse_claim("dp:1"), slices=slices)
    assert _plan(spec).slices == slices
    _, spec = _laplace_sum(notion="smi-dp", epsilon=0.1, slices=max(slices, 1))
    assert _plan(spec).slices == max(slices, 1)


def test_explicit_slices_from_the_configuration_reach_the_plan():
    from audit.config.building import build_spec

    config = {"mechanism": {"spec": "catalog:laplace_sum"}, "audit": {"samples": 2000, "slices": 3}}
    assert _plan(build_spec(config)).slices == 3
    del config["audit"]["slices"]
    assert _plan(build_spec(config)).slices == 0


def test_deterministic_records_read_from_the_prior_definition():
    first = np.zeros((4, 2))
    second = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    # record 1: equal rows; record 3: P(second) = 1; records 0 and 2 switch.
    assert deterministic_records(TwoPoint(first, second, p=[0.5, 0.5, 0.3, 1.0])) == {1, 3}
    assert deterministic_records(FixedRest(np.zeros((3, 1)), 1, ProductBernoulli(np.full((1, 1), 0.5)))) == {0, 2}
    assert deterministic_records(ProductBernoulli(np.array([[0.0, 1.0], [0.5, 1.0], [1.0, 1.0]]))) == {0, 2}


def test_a_searched_prior_is_examined_at_its_switching_record_only():
    entry, spec = _laplace_sum(claim=parse_claim("dp:1"))
    pair_prior = TwoPoint(np.zeros((3, 2)), np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]]))
    plan = plan_audit(spec, [(entry.prior, None), (pair_prior, 2)])
    assert [(s.prior_index, s.record) for s in plan.trained] == [(0, 0), (1, 2)]
    assert plan.mi_runs == 2 * 2000


def _count_critics(monkeypatch):
    trained = []
    original = critic_problems.fit_critics

    def counting(u, v, **kwargs):
        trained.append(len(u))
        return original(u, v, **kwargs)
    monkeypatch.setattr(critic_problems, "fit_critics", counting)
    return trained


@pytest.mark.parametrize("mi_critic, neural_critics", [
    pytest.param("neural", [1], marks=pytest.mark.train),
    ("auto", []),  # the DP claim's MI test gets the switching record's classifier critic instead
])
def test_dp_claim_audit_of_laplace_sum_trains_one_critic_for_the_switching_record(monkeypatch, mi_critic,
                                                                                  neural_critics):
    trained = _count_critics(monkeypatch)
    entry, spec = _laplace_sum(claim=entry_claim(), event_runs=2000, mi_critic=mi_critic)
    result = run_audit(spec)
    assert trained == neural_critics
    assert ("critic)" in result.certified_secret) and result.certified_secret.startswith("record 0")
    constant = [e for e in result.per_record if e.strategy == "constant"]
    assert [(e.record, e.estimate, e.lower_bound) for e in constant] == [(1, 0.0, None), (2, 0.0, None)]
    assert result.candidates_certified == 1 and result.slices is None
    assert result.event_test is not None
    # Every run is accounted for, by purpose.
    assert result.samples_by_purpose["mi"] == 2000
    assert result.samples == sum(result.samples_by_purpose.values())
    # A rate-ratio certificate makes a Poisson number of runs of each input, at most the 2,000 budgeted.
    made = result.event_test.runs_made
    assert result.samples_by_purpose["event_certification"] == (2 * 2000 if made is None else sum(made))
    assert made is None or max(made) <= 2000


def entry_claim():
    return get_entry("laplace_sum").claimed


def _first_record_fixed(m, rng):
    dbs = rng.integers(0, 2, size=(m, 3, 2)).astype(float)
    dbs[:, 0] = 1.0
    return dbs


@pytest.mark.train
def test_a_secret_constant_over_the_samples_gets_no_critic(monkeypatch):
    trained = _count_critics(monkeypatch)
    prior = UserPrior(_first_record_fixed, independent_rows=True, discrete=True)
    spec = AuditSpec(mechanism=get_entry("laplace_sum").mechanism, priors=[prior], notion="mi-dp", epsilon=0.1,
                     samples=2000, event_runs=0, critic=FAST, seed=1)
    assert _plan(spec).trained == list(_plan(spec).secrets)  # not known from the definition
    result = run_audit(spec)
    assert trained == [2]
    first = result.per_record[0]
    assert (first.record, first.strategy, first.estimate, first.lower_bound) == (0, "constant", 0.0, None)
    assert any("took one value in all 2000 samples" in note for note in result.notes)


def test_all_secrets_constant_gives_zero_leakage_and_no_critic(monkeypatch):
    trained = _count_critics(monkeypatch)
    spec = AuditSpec(mechanism=get_entry("laplace_sum").mechanism, priors=[get_entry("laplace_sum").prior],
                     notion="mi-dp", epsilon=0.1, records=(1, 2), samples=2000, critic=FAST)
    result = run_audit(spec)
    assert trained == [] and result.estimate == 0.0 and result.lower_bound is None
    assert result.verdict == "no-violation-detected" and not result.estimate_only
    assert result.event_test is None and math.isclose(result.samples, 2000)


@pytest.mark.train
def test_terminal_summary_states_where_the_runs_went(capsys, tmp_path):
    from audit.cli.main import main

    report = tmp_path / "out.md"
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--samples", "2000", "--event-runs", "1500",
                 "--set", "critic.max_steps=200", "--quiet", "--report", str(report)]) == 0
    lines = capsys.readouterr().out.splitlines()
    runs = [line for line in lines if line.startswith("mechanism calls: ")]
    assert len(runs) == 1
    # One short line: the critics' runs, the event test's, why they exceed --samples, and the runner's probe calls.
    line = re.fullmatch(r"mechanism calls: (\d+) = (\d+) runs \(2000 for the critics \(the audit's samples\) \+ (\d+) for "
                        r"the event test: an event test chooses its pair and event on runs of its own and certifies it "
                        r"on fresh ones\) \+ 2 for the probe, two calls on one database with one seed, which check that "
                        r"the seed alone fixes the output; each count: the report, or samples_by_purpose and "
                        r"probe_calls in --json", runs[0])
    assert line is not None, runs[0]
    calls, total, event = int(line.group(1)), int(line.group(2)), int(line.group(3))
    assert total == 2000 + event and calls == total + 2
    # The report keeps each purpose's count: 1500 runs on each of the two neighbouring inputs, or Poisson numbers of
    # runs within that budget.
    fact = next(row for row in report.read_text().splitlines() if row.startswith("| mechanism runs |"))
    assert "MI sample (trains and certifies the critics) 2000" in fact
    made = re.search(r"certifying the event (\d+)( = (\d+) \+ (\d+), Poisson numbers of runs of the two inputs "
                     r"within the budget of 1500 each)?\)", fact)
    assert made is not None, fact
    if made.group(2) is None:
        assert made.group(1) == "3000"
    else:
        first, second = int(made.group(3)), int(made.group(4))
        assert int(made.group(1)) == first + second and max(first, second) <= 1500
    breakdown = fact.split("|")[2].strip()
    assert int(breakdown.split()[0]) == total
    counts = [int(re.search(r" (\d+)(?: = .*)?$", part.rstrip(")")).group(1))
              for part in breakdown.split("(", 1)[1].split(";")]
    assert total == sum(counts)


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2, 0.25])
def test_smallest_certifying_runs_matches_the_closed_form(alpha):
    from audit.certificates.claim_tests import smallest_certifying_runs

    # All n hits against none, each Clopper–Pearson bound at α/2: p̲ = (α/2)^(1/n) and
    # p̄ = 1 − (α/2)^(1/n) give log(p̲/p̄) > 0 iff (α/2)^(1/n) > 1/2, i.e. n > log2(2/α); no other split does
    # better (tried here). With the odds and rate ratios (a pure claim or none, at δ = 0): fewer, tried n by n.
    pair = math.floor(math.log2(2 / alpha)) + 1
    assert pair == separated.smallest(lambda n: max(separated.cp_epsilon(n, alpha, s) for s in separated.SHARES) > 0)
    assert smallest_certifying_runs(alpha) == pair
    ratios = separated.smallest(lambda n: separated.refutes_pure(n, alpha, 0.0))
    assert smallest_certifying_runs(alpha, ratio_certificates=True) == ratios
    if alpha == 0.05:
        assert ratios == 4 and separated.odds_epsilon(4, alpha) == pytest.approx(0.3475, abs=1e-4)  # the review's number


def test_an_event_budget_that_can_certify_nothing_is_an_error_before_any_run():
    from estimators.validation import InputError

    calls = []

    def mechanism(dbs, rng):
        calls.append(len(dbs))
        return dbs.sum(axis=1)

    prior = ProductBernoulli(np.full((3, 1), 0.5))
    # At δ > 0 only the Clopper–Pearson pair certifies: α = 0.05 needs n > log2(40) = 5.3.
    common = dict(mechanism=mechanism, priors=[prior], notion="mi-dp", epsilon=0.1, samples=2000, delta=1e-6)
    with pytest.raises(InputError, match=r"'event_runs' \(--event-runs.*is 5.*at least 6.*or 0 to skip"):
        AuditSpec(event_runs=5, **common)
    assert calls == []
    assert AuditSpec(event_runs=6, **common).event_runs == 6
    assert AuditSpec(event_runs=0, **common).event_runs == 0
    # At δ = 0 (no claim, or a pure one) the odds ratio certifies ε > 0 from 4 runs (test above).
    pure = {**common, "delta": 0.0}
    with pytest.raises(InputError, match=r"'event_runs' \(--event-runs.*is 3.*at least 4"):
        AuditSpec(event_runs=3, **pure)
    assert AuditSpec(event_runs=4, **pure).event_runs == 4
    with pytest.raises(InputError, match="'event_runs'"):
        AuditSpec(event_runs=3, claim=parse_claim("dp:1"), mechanism=mechanism, priors=[prior], samples=2000)
    # A claim no ratio certificate bounds: the pair's 6.
    with pytest.raises(InputError, match="at least 6"):
        AuditSpec(event_runs=5, claim=parse_claim("zcdp:0.5"), mechanism=mechanism, priors=[prior], samples=2000)


def test_the_cli_refuses_a_useless_event_budget_with_status_2(capsys):
    from audit.cli.main import main

    # laplace_sum's claim is pure DP: the odds ratio certifies from 4 runs per input at α = 0.05, not from 3.
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--samples", "2000", "--event-runs", "3"]) == 2
    assert "--event-runs" in capsys.readouterr().err
