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
    assert "### MI notion: MI-DP at ε = " in markdown
    assert html.escape(headline) in page and page.count('class="statement ') == 1
    assert "<h3>MI notion: MI-DP at ε = " in page


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


def test_the_summary_cell_carries_the_float_bit_bound():
    # The textbook Laplace mean (records in [0, 1], n = 10, ε = 1) in float64: refuted through its bits only.
    first = np.zeros((10, 1))
    second = first.copy()
    second[0, 0] = 1.0

    def mean(dbs, rng):
        return dbs[:, :, 0].mean(axis=1, keepdims=True) + rng.laplace(0.0, 0.1, (len(dbs), 1))
    result = run_audit(AuditSpec(mechanism=mean, priors=[TwoPoint(first, second)], claim=parse_claim("dp:1"),
                                 samples=2000, seed=0))
    assert result.refuted_through_float_only
    cell = dp_bounds_text(result)
    assert cell.endswith(f" / float bits {result.float_event_test.epsilon_lower_bound:.3g}")
