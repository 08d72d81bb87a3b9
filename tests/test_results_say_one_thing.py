"""Issue 31 item 3 and issue 32 D: one headline about the claim, the MI notion's verdict named apart,
columns named for what they hold, a negative bound read as no evidence, the notes that matter printed,
and the limits of the event test said with the runs it would need.

Expected values are computed here with scipy.stats.beta (the Clopper–Pearson bounds, Clopper and
Pearson 1934) and the pure-DP condition p̲ > e^ε p̄ (Dwork and Roth 2014, Definition 2.4).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import replace

import pytest
from scipy import optimize, stats
from scipy.stats import beta

from audit.cli.audit_command import _text
from audit.cli.main import COMMANDS
from audit.report.content import bound_text, claim_outcome, mi_part, runs_to_refute, theorem_reference
from audit.report.table import summary_table
from audit.result import AuditResult, CrossCheck, EventTest
from mechanisms.claims.parsing import parse_claim


def _lower(k, n, a):
    return 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))


def _upper(k, n, a):
    return 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))


def _result(claim="dp:1", claim_alpha=None, event=None, notes=(), lower_bound=-0.51):
    parsed = parse_claim(claim)
    return AuditResult("no-violation-detected", "mi-dp", 0.5, 0.05, lower_bound, 0.0, None, None, None, [], [],
                       400, 0.2, 0, mechanism="m", notes=list(notes), claim=parsed.to_dict("mi-dp", 2),
                       claim_verdict="not-refuted", claim_alpha=dict(claim_alpha or {}), event_test=event)


def _event(p_first, p_second, runs):
    return EventTest("record 0", "E", 0.0, runs, p_first, p_second, p_first, p_second, 0.0, 0.0, None, alpha=0.05)


def _rate_ratio_refutes(p1, p2, n, alpha, epsilon):
    # The rate-ratio certificate at the expected Poisson counts: λ with P(Poisson(λ) > n) = 10⁻⁶ (the Poisson
    # design's run mean), θ̲ the α quantile of Beta(λp₁, λp₂ + 1), ρ̲ = θ̲/(1 − θ̲) > e^ε refutes pure ε-DP.
    lam = optimize.brentq(lambda m: stats.poisson.sf(n, m) - 1e-6, 1e-9, n + 1.0, xtol=1e-10)
    theta = stats.beta.ppf(alpha, p1 * lam, p2 * lam + 1)
    return math.log(theta / (1 - theta)) > epsilon


def test_runs_to_refute_is_the_fresh_event_tests_best_certificate():
    # Pure 1-DP, frequencies 0.5 and 0.1: the rate ratio (one test at α) needs fewer runs than the
    # Clopper–Pearson pair (at α/2 each; 163 runs by brute force) and the odds ratio (ψ = 9, log ψ/2 barely
    # above 1); the forecast is the event test's own prediction, at 1% resolution.
    claim, p1, p2, alpha = parse_claim("dp:1"), 0.5, 0.1, 0.05

    def pair_refutes(n):  # pure 1-DP is refuted when p̲ > e · p̄, both at α/2
        return _lower(round(p1 * n), n, alpha / 2) > math.e * _upper(round(p2 * n), n, alpha / 2)

    pair = next(n for n in range(1, 10_000) if pair_refutes(n))
    direct = next(n for n in range(1, 10_000) if _rate_ratio_refutes(p1, p2, n, alpha, 1.0))
    assert direct < pair == 163
    got = runs_to_refute(claim, p1, p2, alpha)
    assert direct <= got <= 1.02 * direct
    assert runs_to_refute(claim, 0.2, 0.1, alpha) is None  # 0.2 < e · 0.1 and ψ = 2.25 < e²: no n refutes


def test_runs_to_refute_reads_the_complement_too():
    # 0.74 against 0.28 lies inside the 1-DP profile (0.74 < e · 0.28, ψ = 7.32 < e²), but its complement with the
    # roles swapped, 0.72 against 0.26, does not (0.72 > e · 0.26): a fresh audit's event test considers it.
    claim, alpha = parse_claim("dp:1"), 0.05
    assert 0.74 < math.e * 0.28 and 0.72 > math.e * 0.26
    got = runs_to_refute(claim, 0.74, 0.28, alpha)
    assert got is not None and got == runs_to_refute(claim, 0.72, 0.26, alpha)
    lo, hi = 1_000, 1_000_000  # the complement's rate ratio, monotone in n: bisection
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _rate_ratio_refutes(0.72, 0.26, mid, alpha, 1.0) else (mid, hi)
    assert hi <= got <= 1.02 * hi


def test_a_claim_no_test_can_refute_reads_cannot_be_refuted_with_the_runs_needed():
    note = ("With 400 runs per input the event test at its share α = 0.05 cannot refute the claim 8-zCDP, even for perfectly "
            "separated inputs; it needs at least 24512 runs per input (raise --samples or --event-runs); it spends no α.")
    result = _result("zcdp:8", notes=[note, "an unrelated remark about critics"])
    assert claim_outcome(result) == ("cannot be refuted at this budget",
                                     "the event test needs at least 24512 runs per input (raise --samples or "
                                     "--event-runs)")
    text = _text(result)
    first = text.splitlines()[0]
    assert first == ("claim 8-zCDP: CANNOT BE REFUTED AT THIS BUDGET (neighbours: replace one record (n fixed)): the "
                     "event test needs at least 24512 runs per input (raise --samples or --event-runs)")
    # The note the statement refers to is printed, the unrelated one is not.
    assert "notes:\n- With 400 runs per input" in text and "unrelated remark" not in text
    assert "8-zCDP: cannot be refuted at this budget" in summary_table(result)


def test_an_event_inside_the_profile_says_it_cannot_refute_this_way():
    # 1-DP, event at 0.2 against 0.15 on 20000 runs: even the most favourable frequencies the runs allow (the
    # Clopper–Pearson bounds at α) stay inside the profile.
    n, alpha = 20_000, 0.05
    best_first, best_second = _upper(round(0.2 * n), n, alpha), _lower(round(0.15 * n), n, alpha)
    assert best_first < math.e * best_second  # inside: no number of runs of this event can refute 1-DP
    outcome, why = claim_outcome(_result(claim_alpha={"event": alpha}, event=_event(0.2, 0.15, n)))
    assert outcome == "not refuted" and why.startswith("it cannot be refuted this way")


def test_cannot_be_refuted_this_way_only_where_no_statistic_showed_evidence_and_names_those_tried():
    # The event of the test above (0.2 against 0.15 on 20000 runs, inside the 1-DP profile at its most
    # favourable frequencies), once with the statistics tried named, once with one that showed on its selection
    # draws frequencies outside the profile (0.5 against 0.1 > e · 0.1: evidence) that the certification did not confirm.
    n, alpha = 20_000, 0.05
    tried = dataclasses.replace(_event(0.2, 0.15, n), statistics_tried=["logistic log-odds(a | y)", "gap(y)"],
                                statistics_with_evidence=[])
    outcome, why = claim_outcome(_result(claim_alpha={"event": alpha}, event=tried))
    assert outcome == "not refuted" and why.startswith("it cannot be refuted this way")
    assert why.endswith("no statistic tried showed any evidence against it (statistics tried: logistic log-odds(a | y), "
                        "gap(y))")
    assert 0.5 > math.e * 0.1
    seen = dataclasses.replace(tried, statistics_with_evidence=["gap(y)"])
    outcome, why = claim_outcome(_result(claim_alpha={"event": alpha}, event=seen))
    assert outcome == "not refuted" and "cannot be refuted this way" not in why
    assert why.startswith("the draws the event was chosen on showed evidence against the claim (gap(y))")


def test_an_event_that_needs_more_runs_says_how_many():
    # Frequencies 0.4 and 0.1 on 400 runs (chosen on 400 draws of each too): each moved one standard error towards the
    # claim, 0.4 − 0.0245 > e · (0.1 + 0.015), so there is evidence; the range is at ± one standard error.
    n, alpha, claim = 400, 0.05, parse_claim("dp:1")
    se_first, se_second = math.sqrt(0.4 * 0.6 / n), math.sqrt(0.1 * 0.9 / n)
    assert 0.4 - se_first > math.e * (0.1 + se_second)
    fewest = runs_to_refute(claim, 0.4 + se_first, 0.1 - se_second, alpha)
    most = runs_to_refute(claim, 0.4 - se_first, 0.1 + se_second, alpha)
    event = replace(_event(0.4, 0.1, n), chosen_frequencies=[0.4, 0.1], chosen_runs=[n, n])
    outcome, why = claim_outcome(_result(claim_alpha={"event": alpha}, event=event))
    assert outcome == "not refuted" and f"would take {fewest:,} to {most:,} runs per input" in why


def test_an_event_within_a_standard_error_of_the_claim_forecasts_nothing():
    # 0.28 against 0.1 on 400 runs: outside the profile at its most favourable frequencies (a forecast before), but
    # 0.28 − 0.0224 < e · (0.1 + 0.015): no evidence.
    n = 400
    assert 0.28 - math.sqrt(0.28 * 0.72 / n) < math.e * (0.1 + math.sqrt(0.1 * 0.9 / n))
    event = replace(_event(0.28, 0.1, n), chosen_frequencies=[0.28, 0.1], chosen_runs=[n, n])
    assert claim_outcome(_result(claim_alpha={"event": 0.05}, event=event)) == (
        "not refuted", "no evidence against the claim at this pair")


def test_negative_bound_reads_as_no_evidence_and_json_keeps_it():
    result = _result()
    assert bound_text(-0.51) == "0 (no evidence)" and bound_text(-0.51, "nats") == "0 nats (no evidence)"
    assert bound_text(0.25) == "0.25"
    assert "0 (no evidence)" in summary_table(result) and "-0.51" not in summary_table(result)
    assert result.to_dict()["lower_bound"] == -0.51
    assert ("0 nats: no evidence (raw bound -0.51, below 0 through sampling noise: MI is never negative)"
            in result.mi_statement())


def test_columns_are_named_for_what_they_hold_and_the_mi_verdict_is_named():
    result = _result()
    header = summary_table(result).splitlines()[0]
    # The MI verdict's column says it is the MI test's alone: beside "refuted" it is no second verdict on the claim.
    for name in ("claim", "MI notion", "MI budget (nats)", "MI test alone", "MI certified lower bound (nats)",
                 "MI estimate (nats)"):
        assert name in header
    assert " ε (nats)" not in header and "verdict" not in header
    assert "\nAlso tested: MI-DP at ε = 0.5 nats: " in _text(result)
    assert "see the notes" not in _text(result)


def test_audit_help_leads_with_claims():
    assert COMMANDS["audit"].startswith("check a privacy claim (dp, ldp, zcdp, rdp, gdp")


@pytest.mark.parametrize("verdict,word", [("refuted", "REFUTED"), ("not-refuted", "NOT-REFUTED")])
def test_headline_words(verdict, word):
    result = _result(claim_alpha={"event": 0.05})
    result = AuditResult(**{**result.__dict__, "claim_verdict": verdict})
    assert _text(result).startswith(f"claim 1-DP: {word}")


def _refuted_by_the_event_test_only():
    """A 1-DP claim whose α is split between the MI test and the event test (α/2 each, written here), refuted by
    the event test while the MI test finds no violation."""
    half = 0.05 / 2
    mi = CrossCheck("1-DP", 0.5, False, True, [], "the claim 1-DP implies at most 0.5 nats; certified lower bound "
                    "-0.51 nats", test="mi", statistic=-0.51, threshold=0.5, alpha_spent=half)
    event = CrossCheck("1-DP", None, True, None, [], "ε ≥ 3 > the claimed ε = 1", test="event", statistic=0.4,
                       threshold=0.0, alpha_spent=half, epsilon_prime=1.0)
    result = _result(claim_alpha={"mi": half, "event": half})
    return AuditResult(**{**result.__dict__, "claim_verdict": "refuted", "cross_checks": [mi, event]})


def test_the_mi_verdict_beside_a_refuted_dp_claim_says_it_is_one_of_the_claims_tests():
    text = _text(_refuted_by_the_event_test_only())
    mi_line = next(line for line in text.splitlines() if "No violation of 0.5-MI-DP" in line)
    # Labelled as also tested, with the implication (Theorem 1: ε-DP ⇒ min(ε, ε²/2)-MI-DP, 1²/2 = 0.5) cited by its
    # paper and number, as docs/theorems.md names it, without quoting it; and its role: its own share of α, and that
    # it alone did not refute the claim.
    # The paper by its authors and year, no brackets within brackets, and the test that did refute the claim named.
    assert mi_line.startswith(
        "Also tested: MI-DP at ε = 0.5 nats: the MI level 1-DP implies (Nuradha and Goldfeld 2023, Theorem 1); one of "
        "the claim's tests, at α = 0.025 of 0.05: alone it did not refute the claim, the event test did. No violation "
        "of 0.5-MI-DP")
    label = mi_line.split(". No violation")[0]
    assert "Information-Theoretic Study" not in label and not re.search(r"\([^()]*\(", label)
    assert "⇒" not in text
    assert "MI notion:" not in text
    # The α split is stated once, before it, with both shares; the MI test's detail is not listed again below.
    assert text.count("α = 0.05 was split between the tests that can refute the claim: MI test at α = 0.025, "
                      "event test at α = 0.025.") == 1
    assert text.index("was split between") < text.index(mi_line)
    assert "- MI test of 1-DP" not in text and text.count("ε ≥ 3 > the claimed ε = 1") == 1


def test_the_mi_verdict_beside_a_claim_it_does_not_test_says_so():
    text = _text(_result(claim_alpha={"event": 0.05}))
    assert "Also tested: MI-DP at ε = 0.5 nats: the MI level 1-DP implies (Nuradha and Goldfeld 2023, Theorem 1); not " \
           "one of the claim's tests. No violation of 0.5-MI-DP" in text


def test_the_json_statement_keeps_its_words_and_the_terminal_says_the_verdict_once():
    result = _result(claim_alpha={"event": 0.05})
    # The statement the JSON carries, written out here: the claim, its verdict, what it means, the one test.
    assert result.claim_statement() == (
        "Claim 1-DP (neighbours: replace one record (n fixed)) (from --claim): not refuted. No test found evidence against it at 95% "
        "confidence; this is not a proof that the claim holds: a larger budget (--samples, AuditSpec.samples) or "
        "inputs it did not try may find evidence. The event test at α = 0.05 is the one test that can refute it.")
    text = _text(result)
    assert "Claim 1-DP" not in text and text.count("NOT-REFUTED") == 1
    assert text.count("No test found evidence against the claim at 95% confidence; this is not a proof that the claim "
                      "holds: a larger budget (--samples, AuditSpec.samples) or inputs it did not try may find "
                      "evidence. The event "
                      "test at α = 0.05 is the one test that can refute the claim.") == 1


_PAPER = "Nuradha and Goldfeld 2023"  # the Pufferfish paper by its authors and year (mechanisms.papers)


@pytest.mark.parametrize("claim,cited", [
    ("dp:1", f"{_PAPER}, Theorem 1"),
    ("ldp:1", f"{_PAPER}, Theorem 1"),
    ("zcdp:0.5", f"Bun and Steinke (2016), Definition 1.1 at α → 1; {_PAPER}, proof of Theorem 1, Eq. (9)"),
    ("gdp:1", f"Dong, Roth and Su (2022), Theorem 2.10; {_PAPER}, proof of Theorem 1, Eq. (9)"),
])
def test_the_mi_level_a_claim_implies_cites_its_theorems_by_name_and_number(claim, cited):
    # Each claim implies 0.5 nats here (1²/2, ρ, μ²/2): the level audited, so its sources are cited.
    _, role = mi_part(_result(claim))
    label = parse_claim(claim).label
    assert role.startswith(f"the MI level {label} implies ({cited}); ")
    for quoted in ("⇒", "KL ≤", "KL divergence", "average of KL"):  # the statements the sources quote
        assert quoted not in role


@pytest.mark.parametrize("source,reference", [
    ("Pufferfish paper, Theorem 1, Part 1: (ε, δ)-DP ⇒ ε*-MI DP with ε* = 2 h_b(δ′)", "Pufferfish paper, Theorem 1, Part 1"),
    ("--claim: dp:1 (add-remove) converted to replace-one by group privacy for 2 add/remove steps (a replacement is a "
     "removal and an addition) (Dwork and Roth 2014, Theorem 2.2: ε-DP ⇒ kε-DP for groups of k = 2)",
     "Dwork and Roth 2014, Theorem 2.2"),
    ("definition of ε-MI-DP (Pufferfish paper, Section II)", "definition of ε-MI-DP (Pufferfish paper, Section II)"),
])
def test_a_budget_source_is_cited_without_its_statement(source, reference):
    assert theorem_reference(source) == reference


def test_a_negative_mi_bound_reads_as_no_evidence_in_the_headline_as_in_the_table():
    # An MI test that alone tests the claim, with a raw certified bound below 0: the headline says what the table
    # says (0 nats, no evidence), not the raw -0.51, which the JSON keeps.
    check = CrossCheck("10-DP", 10.0, False, True, [], "bound -0.51 ≤ budget 10", test="mi", statistic=-0.51,
                       threshold=10.0, alpha_spent=0.05)
    result = replace(_result(claim="dp:10", claim_alpha={"mi": 0.05}), cross_checks=[check])
    headline = _text(result).splitlines()[0]
    assert "certified MI lower bound 0 nats (no evidence) ≤ the 10 nats the claim implies (MI test, α = 0.05)" in headline
    assert "-0.51" not in headline and result.to_dict()["lower_bound"] == -0.51
