"""One headline per audit (issue 41 §6): the claim's verdict, the certified bound against the claim, the pair and
the event in one sentence, in the terminal, Markdown and HTML; the MI notion's verdict in a part of its own; papers
named by title; the ε read from μ̲ under the GDP assumption marked hypothetical unless the claim is GDP or zCDP."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from audit.cli.audit_command import _text
from audit.engine import run_audit
from audit.report import render_html, render_markdown
from audit.report.content import claim_headline, dp_bounds_text
from audit.report.markdown import escape
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint
from mechanisms.snapping import snap


def _gaussian(sigma):
    def mechanism(dbs, rng):  # snapped: the float-bit test has nothing to read, the event test all of α
        return snap(dbs[:, :, 0].sum(axis=1, keepdims=True) + rng.normal(0.0, sigma, (len(dbs), 1)))
    return mechanism


def _audit(claim, sigma):
    return run_audit(AuditSpec(mechanism=_gaussian(sigma), priors=[TwoPoint(np.zeros((1, 1)), np.ones((1, 1)))],
                               claim=parse_claim(claim), samples=2000, event_runs=2000, seed=0, name="gauss"))


@pytest.fixture(scope="module")
def refuted():
    # Gaussian noise of σ = 0.25 on a sensitivity-1 sum: the ε at which a single event shows it is far above 0.5.
    return _audit("dp:0.5", 0.25)


@pytest.fixture(scope="module")
def reports(refuted):
    return render_markdown(refuted, "t"), render_html(refuted, "t")


def test_the_headline_is_one_sentence_with_the_verdict_bound_pair_and_event(refuted):
    assert refuted.refuted
    line = claim_headline(refuted)
    # The bound against the claim is the refuting event test's, read from the result itself.
    bound = refuted.event_test.epsilon_lower_bound
    assert line.startswith("claim 0.5-DP: REFUTED (neighbours: replace one record (n fixed)): ")
    assert f"certified ε ≥ {bound:.4g} > the claimed ε = 0.5 (event test, α = 0.05)" in line
    assert "on the pair whose databases differ in record 0 (a = [0.], b = [1.])" in line
    assert "with the event E = {" in line
    assert "\n" not in line
    assert _text(refuted).splitlines()[0] == line  # the terminal leads with it


def test_reports_carry_one_headline_and_the_mi_verdict_in_its_own_part(refuted, reports):
    markdown, page = reports
    headings = re.findall(r"^## (.*)$", markdown, flags=re.M)
    assert headings == ["1. gauss — claim 0.5-DP: refuted"]  # no MI verdict, no second vocabulary, in the heading
    assert "violation" not in headings[0]
    headline = claim_headline(refuted)
    assert markdown.count("**") == 2 and f"**{escape(headline)}**" in markdown
    assert "### Also tested: MI-DP at ε = " in markdown and "MI notion:" not in markdown
    assert html.escape(headline) in page and page.count('class="statement ') == 1
    assert "<h3>Also tested: MI-DP at ε = " in page


def test_papers_are_named_by_their_title(refuted, reports):
    for text in (*reports, _text(refuted)):
        assert "Pufferfish paper" not in text and "Thm 1" not in text
    assert "Nuradha and Goldfeld, Pufferfish Privacy: An Information-Theoretic Study" in reports[0]


def _gdp_rows(result):
    return [line for line in render_markdown(result, "t").splitlines() if "if exactly μ̲-GDP" in line
            or "for a μ̲-GDP pair" in line]


def test_gdp_derived_rows_are_hypothetical_unless_the_claim_is_gdp_or_zcdp(refuted):
    rows = _gdp_rows(refuted)
    assert rows and all("hypothetical, the claim is not GDP or zCDP" in row for row in rows)
    gaussian = _audit("gdp:1", 1.0)
    rows = _gdp_rows(gaussian)
    assert rows and not any("hypothetical" in row for row in rows)


@pytest.fixture(scope="module")
def float_only():
    # The textbook Laplace mean (records in [0, 1], n = 10, ε = 1) in float64: refuted through its bits only.
    first = np.zeros((10, 1))
    second = first.copy()
    second[0, 0] = 1.0

    def mean(dbs, rng):
        return dbs[:, :, 0].mean(axis=1, keepdims=True) + rng.laplace(0.0, 0.1, (len(dbs), 1))
    result = run_audit(AuditSpec(mechanism=mean, priors=[TwoPoint(first, second)], claim=parse_claim("dp:1"),
                                 samples=2000, seed=0, name="mean"))
    assert result.refuted_through_float_only
    return result


def test_the_summary_cell_carries_the_float_bit_bound(float_only):
    cell = dp_bounds_text(float_only)
    assert cell.endswith(f" / float bits {float_only.float_event_test.epsilon_lower_bound:.4g}")


def test_a_float_refutation_keeps_its_headline_short_and_explains_it_on_the_line_below(float_only):
    lines = _text(float_only).splitlines()
    headline, below = lines[0], lines[1]
    assert headline == claim_headline(float_only)
    # One clause names the float representation; the bound, the pair and the event follow as for any refutation.
    assert headline.startswith("claim 1-DP: REFUTED (neighbours: replace one record (n fixed)) through the "
                               "floating-point representation of the output: certified ε ≥ ")
    for word in ("Mironov", "snapping", "exact sampler", "how-to/floating-point", "algorithm holds"):
        assert word not in headline
    assert below == ("  not the noise distribution (Mironov 2012): the algorithm holds its claim; its float "
                     "implementation does not (the tests that read no bits, on outputs rounded to 32 significant bits, "
                     "did not refute it); fix: round the noisy release onto a power-of-two grid (snapping, Mironov 2012 "
                     "Section 5.2) or use an exact sampler (e.g. OpenDP's); a zero's sign (-0.0 against 0.0) goes by adding "
                     "0.0; see how-to/floating-point")
    markdown = render_markdown(float_only, "t")
    bold = f"**{escape(headline)}**"
    assert f"{bold}\n\n{escape('N' + below.strip()[1:] + '.')}\n" in markdown
    page = render_html(float_only, "t")
    assert f"{html.escape(headline)}</p>\n<p>{html.escape('N' + below.strip()[1:] + '.')}</p>" in page
    # The JSON's statement keeps its words, the verdict and what it means in one clause.
    assert ("REFUTED through the floating-point representation of the output, not the noise distribution (Mironov "
            "2012): see how-to/floating-point; the algorithm holds its claim; its float implementation does not") in (
        float_only.to_dict()["statement"])


def test_the_dp_bound_is_said_once_beside_a_claim(float_only):
    bound = float_only.float_event_test.epsilon_lower_bound
    text, markdown = _text(float_only), render_markdown(float_only, "t")
    # Not in the MI part: the table's DP ε lower bounds and the refuting test's line carry it.
    for report in (text, markdown):
        assert "It is not ε-DP for any" not in report
        assert f"float bits {bound:.4g}" in report
    refuted_line = next(line for line in text.splitlines() if line.startswith("  refuted by the float-bit event test ("))
    assert f"{bound:.4g}" in refuted_line
    # The JSON's statement, read apart from any table, still says it.
    assert f"It is not ε-DP for any ε < {bound:.4g} (from the float-bit event test" in float_only.to_dict()["statement"]


def test_without_a_claim_the_mi_verdict_still_states_the_dp_bound():
    from audit.result import AuditResult

    result = AuditResult("violation", "mi-dp", 0.5, 0.05, 0.7, 0.8, None, 1.2, None, [], [], 400, 0.2, 0,
                         mechanism="m")
    assert _text(result).count("It is not ε-DP for any ε < 1.2 (from the MI bound") == 1


def test_the_event_is_explained_from_the_event_as_data_not_from_its_description(refuted):
    from dataclasses import replace

    from audit.report.content import event_explanation

    event = refuted.event_test
    label = event.event["statistic"]
    # The event's data agree with its words: the description thresholds the same statistic, one the search tried.
    assert event.description.startswith(f"E = {{{label} ") and label in event.statistics_tried
    explained = event_explanation(refuted)
    assert explained
    # Another description changes nothing; other data change the words; no data, no explanation.
    assert event_explanation(replace(refuted, event_test=replace(event, description="E"))) == explained
    renamed = {**event.event, "statistic": "s(y)", "statistic_words": "a statistic written here"}
    assert "; s(y) is the statistic the audit chose: a statistic written here; " in event_explanation(
        replace(refuted, event_test=replace(event, event=renamed)))
    swapped = {**event.event, "first_input": "b" if event.event["first_input"] == "a" else "a"}
    first = swapped["first_input"]
    assert event_explanation(replace(refuted, event_test=replace(event, event=swapped))).endswith(
        f"first input {first}: E is more likely on {first} than on {'a' if first == 'b' else 'b'}")
    assert event_explanation(replace(refuted, event_test=replace(event, event=None))) == ""


def test_the_headline_says_the_pair_and_the_event_from_their_data_not_from_the_description(refuted):
    from dataclasses import replace

    event = refuted.event_test
    line = claim_headline(refuted)
    # The data say what the description says: its first part is the event, its second the pair.
    words = event.description.split("; ")
    assert line.endswith(f", on the pair whose {words[1][len('neighbouring '):]}, with the event {words[0]}")
    # Another description changes nothing.
    assert claim_headline(replace(refuted, event_test=replace(event, description="E"))) == line
    # Other data change the words: a two-tailed event with b first on a user-level pair of records 1 and 2.
    data = {**event.event, "form": "two-tailed", "threshold": -0.25, "second_threshold": 1.5, "boundary_weight": 0.0,
            "first_input": "b", "statistic": "s(y)", "record": 1, "differing_records": [1, 2],
            "record_values": {"a": "[0.5]", "b": "[2.]"}}
    other = claim_headline(replace(refuted, event_test=replace(event, event=data, description="E")))
    assert other.endswith(", on the pair whose databases differ in records [1, 2] together (record 1: a = [0.5], "
                          "b = [2.]), with the event E = {s(y) ≤ -0.25} ∪ {s(y) > 1.5}, first input b, second a")
    # Without the pair as data (a result built by hand) the description's words are read.
    bare = replace(event, event=None, description="E = {t > 2}, first input a, second b; neighbouring databases differ "
                                                  "in record 3 (a = [1.], b = [4.]); chosen on 10 runs")
    assert claim_headline(replace(refuted, event_test=bare)).endswith(
        ", on the pair whose databases differ in record 3 (a = [1.], b = [4.]), with the event E = {t > 2}, first input "
        "a, second b")


def test_the_demo_prints_the_headline_the_audit_command_prints(refuted, tmp_path, monkeypatch, capsys):
    import audit.demo
    import audit.engine
    from audit.cli.main import main

    # The demo's loop over its audits, on this audit (run once, above) instead of the built-in three.
    monkeypatch.setattr(audit.demo, "demo_specs", lambda *args: [None])
    monkeypatch.setattr(audit.engine, "run_audit", lambda spec: refuted)
    assert main(["demo", "--out", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if line.startswith(("- gauss: ", "  the output's values", "  the event: "))]
    assert said[0].startswith("- gauss: claim 0.5-DP: REFUTED (neighbours: replace one record (n fixed)): certified ε ≥ ")
    # Refuted by a test that reads no bits: what to check comes first, then what the event's symbols mean.
    assert said[1].endswith("the noise is too small for what one record changes; check the sensitivity (how far one "
                            "record can move the output before noise), the noise scale, and that every released value "
                            "is noised")
    assert said[2].startswith("  the event: y is the mechanism's output, a and b the pair's two databases; ")
    # The same lines lead `miaudit audit`'s terminal summary; the JSON statement's DP sentence is not printed.
    assert _text(refuted).splitlines()[:3] == [said[0][len("- gauss: "):], *said[1:3]]
    assert "It is not ε-DP for any ε <" in refuted.statement() and "It is not ε-DP for any ε <" not in out
    # The table's "DP ε lower bounds" cell said in words on the line under the table, as `miaudit audit` says it.
    lines = out.splitlines()
    (under,) = [i for i, line in enumerate(lines) if line.startswith("  where the DP ε lower bounds are ")]
    assert lines[under - 1].startswith("1  gauss") and lines[under + 1] == ""
    assert lines[under].startswith("  where the DP ε lower bounds are values of ε below which the mechanism is "
                                   "certified not to be ε-DP: ") and "event from the event test" in lines[under]


def _before_table(text):
    return text.split("\n\n")[0]


def test_the_terminal_says_the_verdict_and_each_refuting_test_once(refuted):
    text = _text(refuted)
    verdict = _before_table(text)
    # The verdict word and the claim's sentence once (no second "Claim 0.5-DP (...): REFUTED ..." line).
    assert verdict.count("REFUTED") == 1 and "Claim 0.5-DP" not in text
    assert text.count("the mechanism does not satisfy 0.5-DP") == 1
    # Each refuting test's evidence once: on its "refuted by" line, not again in the list of the claim's tests.
    assert refuted.refuted_by
    names = {"mi": "MI test", "event": "event test", "float": "float-bit event test", "gdp": "μ-GDP test"}
    for refutation in refuted.refuted_by:
        # The test named once, its certificate's form beside its α: "event test (rate-ratio certificate, α = …): ρ̲ …".
        name = names[refutation["test"]]
        form, _, rest = refutation["detail"].partition("): ")
        assert form.startswith(f"{name} (") and text.count(rest) == 1
        assert text.count(f"refuted by the {name} ({form[len(name) + 2:]}, α = ") == 1
        assert f"- {name} of 0.5-DP" not in text
    # The α split is still stated, once, with every test's share of the claim's α.
    split = "α = 0.05 was split between" if len(refuted.claim_alpha) > 1 else "is the one test that can refute the claim"
    assert text.count(split) == 1
    for name, share in refuted.claim_alpha.items():
        assert f"{names[name]} at α = {share:.3g}" in verdict


def test_the_reports_state_the_verdict_once_and_explain_it(refuted, reports):
    markdown, page = reports
    # The headline carries the verdict; the explanation below it says what it means, without repeating the verdict.
    assert markdown.count("REFUTED") == 1 and "Claim 0.5-DP" not in markdown
    explanation = refuted.claim_explanation()
    assert explanation.startswith("With probability at least 95% over this audit's randomness")
    # The JSON's statement keeps its words: the claim, its verdict, what to check, then the explanation ("it").
    check = refuted.value_explanation()
    assert refuted.claim_statement() == (f"Claim 0.5-DP (neighbours: replace one record (n fixed)) (from --claim): REFUTED. "
                                         f"{check[0].upper()}{check[1:]}. " + refuted.claim_explanation(standalone=False))
    assert escape(explanation) in markdown and html.escape(explanation) in page


def test_the_event_is_explained_under_the_headline(refuted, reports):
    lines = _text(refuted).splitlines()
    # Under the headline of a refutation by the tests that read no bits: what to check, then the event.
    headline, explained = lines[0], lines[2]
    assert lines[1] == "  " + refuted.value_explanation()
    event = refuted.event_test
    # The statistic the event thresholds, found independently: the label of the statistics tried that the
    # headline's event is written with.
    labels = [label for label in event.statistics_tried if f"E = {{{label} " in headline]
    assert len(labels) == 1
    label = labels[0]
    assert explained.startswith("  the event: y is the mechanism's output, a and b the pair's two databases; ")
    assert f"; {label} is the statistic the audit chose: " in explained
    if label == "T(a, y) − T(b, y)":
        assert "T is a model the MI test fitted on its own runs to tell the databases' outputs apart" in explained
        assert "log p(y | a) − log p(y | b)" in explained
    first = event.event["first_input"]
    second = {"a": "b", "b": "a"}[first]
    assert explained.endswith(f"; first input {first}: E is more likely on {first} than on {second}")
    # The reports carry the same words, as a sentence of their own.
    sentence = explained.strip()
    sentence = sentence[0].upper() + sentence[1:] + "."
    assert escape(sentence) in reports[0] and html.escape(sentence) in reports[1]


def test_the_reports_say_what_to_check_as_the_terminal_does(refuted, reports, float_only):
    import json

    from audit.report import render_json

    markdown, page = reports
    # The terminal's line under the headline, written here: the three things to check.
    line = _text(refuted).splitlines()[1]
    assert line.endswith("check the sensitivity (how far one record can move the output before noise), the noise "
                         "scale, and that every released value is noised")
    sentence = line.strip()
    sentence = sentence[0].upper() + sentence[1:] + "."
    # Markdown and HTML: a sentence of its own, under the headline and before the event's symbols, as in the terminal.
    assert markdown.count(escape(sentence)) == 1 and page.count(html.escape(sentence)) == 1
    assert markdown.index(escape(sentence)) < markdown.index(escape("The event: y is the mechanism's output"))
    assert page.index(html.escape(sentence)) < page.index(html.escape("The event: y is the mechanism's output"))
    # JSON: the statement says it right after the verdict.
    assert f"REFUTED. {sentence} With probability" in json.loads(render_json(refuted))["audits"][0]["statement"]
    # A refutation through the float bits alone says the float fix instead, in every form.
    for text in (render_markdown(float_only, "t"), render_html(float_only, "t"), render_json(float_only)):
        assert "every released value is noised" not in text and "snapping" in text


def test_a_refutation_by_both_event_tests_says_real_arithmetic_in_the_headline_and_the_float_below(float_only):
    from dataclasses import replace

    # The float-only audit, with its event test's check made refuting too: both tests refute the claim.
    checks = [replace(c, certified_contradiction=True) if c.test == "event" else c for c in float_only.cross_checks]
    both = replace(float_only, cross_checks=checks)
    assert {r["test"] for r in both.refuted_by} >= {"event", "float"}
    lines = _text(both).splitlines()
    # Unbracketed after the neighbours' brackets, as "through the floating-point representation" is.
    assert lines[0].startswith("claim 1-DP: REFUTED (neighbours: replace one record (n fixed)) by the tests that read "
                               "no bits, so in real arithmetic too: ")
    # What to check for the values first, then that the float bits refute it as well.
    assert lines[1].startswith("  the output's values, not only their float bits, tell neighbouring databases apart")
    assert lines[2] == "  the floating-point representation of the output refutes it as well: see how-to/floating-point"
    # A refutation through the float bits alone has the float line and not this one.
    assert float_only.value_explanation() == "" and float_only.float_explanation()
    # The JSON's statement keeps the clause it had.
    assert ("REFUTED (by the tests that read no bits, so in real arithmetic too; the floating-point representation of "
            "the output refutes it as well: see how-to/floating-point).") in both.to_dict()["statement"]


@pytest.mark.train
def test_an_mi_pp_claim_says_its_secrets_and_prior_not_neighbours():
    from audit.frameworks import attribute_privacy
    from audit.report.content import facts
    from mechanisms.inputs.priors import ProductBernoulli

    def noisy_bit(dbs, rng):  # the one record's bit, plus a fair coin: discrete, no critic to train
        return dbs[:, :, 0].sum(axis=1, keepdims=True) + rng.integers(0, 2, (len(dbs), 1))

    # ε-MI PP bounds I(g(X); M(X) | w(X)) over the framework's secret pairs and the priors (Pufferfish paper,
    # Definition 5), not over neighbouring databases: the headline names those, as the JSON and the report do.
    result = run_audit(AuditSpec(mechanism=noisy_bit, priors=[ProductBernoulli(0.5, shape=(1, 1))], notion="mi-pp",
                                 framework=attribute_privacy(1, 1), claim=parse_claim("mi-pp:0.5"), samples=1000,
                                 slices=0, seed=0, name="coin"))
    scope = "secrets: attribute 0, under the declared prior"
    assert claim_headline(result).startswith(f"claim 0.5-MI-PP (nats): NOT-REFUTED ({scope}): certified MI lower bound ")
    assert "neighbours" not in claim_headline(result) and "neighbours" not in result.statement()
    assert result.statement().startswith(f"Claim 0.5-MI-PP (nats) ({scope}) (from --claim): not refuted.")
    claim = result.to_dict()["claim"]
    assert (claim["relation"], claim["relation_text"], claim["secrets"]) == (
        None, None, "attribute 0, under the declared prior")
    assert ("secrets", "attribute 0, under the declared prior") in facts(result)
    assert not any(label == "neighbouring relation" for label, _ in facts(result))


def test_the_secrets_are_named_three_at_most_with_the_priors_counted():
    from audit.frameworks import attribute_privacy

    # Five attributes, no public information: five secrets g_j alone (Remark 2 part 2), of which the first 3 are named.
    assert attribute_privacy(2, 5).secrets_words(2) == (
        "attribute 0, attribute 1, attribute 2 and 2 more, under each of the 2 declared priors")
    # A claim about records keeps its neighbours, whatever secrets are given; an MI-PP claim audited as another
    # notion (whose secrets are records, not the claim's) says neither.
    for text in ("dp:1", "mi-dp:1"):
        assert parse_claim(text).to_dict("mi-dp", secrets="record 0")["relation_text"] == "replace one record (n fixed)"
        assert parse_claim(text).to_dict("mi-dp", secrets="record 0")["secrets"] is None
    assert parse_claim("mi-pp:1").to_dict("mi-dp", secrets="record 0")["secrets"] is None


def test_an_epsilon_delta_headline_says_the_certified_delta_against_the_claims():
    import math

    result = _audit("dp:0.5:1e-5", 0.25)
    check = next(c for c in result.cross_checks if c.test == "event")
    assert result.refuted and check.certified_contradiction
    # The certified δ is the event's p̲ on one input minus e^ε′ times its p̄ on the other, recomputed here.
    event = result.event_test
    assert math.isclose(check.statistic, event.p_first_lower - math.exp(check.epsilon_prime) * event.p_second_upper,
                        rel_tol=1e-9, abs_tol=1e-12)
    line = claim_headline(result)
    # ε′ is said in words where the headline first shows it, before the δ it reads the claim at.
    assert (f": certified δ ≥ {check.statistic:.4g} > the δ = 1e-05 the claim allows at ε′ = {check.epsilon_prime:g} "
            "(ε′ is the ε, of all ε ≥ 0 at which the claim allows a δ, where the event's δ most exceeds the claim's or "
            "falls least short of it; the event's δ is its probability on one database minus e^ε′ times its "
            "probability on the other; event test") in line
    assert "certified pair exceeds" not in line


def test_the_claims_other_tests_are_headed_below_the_run_count(float_only):
    lines = _text(float_only).splitlines()
    at = lines.index("tests that did not refute the claim:")
    assert lines[at - 1].startswith("mechanism calls: ")  # the run-count line, the probe's calls named
    # Each test named once, with its certificate's form: "event test" is not said again inside the brackets.
    assert re.match(r"^- event test of 1-DP \((odds|rate)-ratio certificate\): not refuted \(", lines[at + 1])
    assert "(event test" not in lines[at + 1]


def test_outputs_seen_on_one_database_only_are_said_in_plain_words(float_only):
    from dataclasses import replace

    seen = "y = 0 in 2000 of 2000 runs on a, never in the 2000 on b"
    result = replace(float_only, event_test=replace(float_only.event_test, support_differences=[seen]))
    assert f"  outputs seen on one database only, in the certification runs: {seen}" in _text(result).splitlines()


def test_no_mi_level_names_the_flag_that_gives_one(float_only):
    from dataclasses import replace

    text = replace(float_only, epsilon=None).mi_statement()
    assert text.startswith("No MI level was audited (the claim implies no MI budget, and no MI level was given with "
                           "--epsilon): ")
