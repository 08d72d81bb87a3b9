"""Tests of the audit reports (HTML, Markdown, JSON, terminal table) built from synthetic AuditResults."""

from __future__ import annotations

import base64
import html
import json
import os
import re
from html.parser import HTMLParser
from importlib.metadata import version

import pytest

from audit.report import render_html, render_markdown, summary_table, write_atomic, write_reports
from audit.report.plots import training_curves
from audit.report import writing
from audit.result import AuditResult, CrossCheck, EventTest, SecretEvidence
from estimators.validation import InputError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
HOSTILE_NAME = '<script>alert("x")</script> sum | v2 & co'


def violation_result() -> AuditResult:
    evidence = [SecretEvidence(f"record {i}", i, "Bernoulli(0.5)^4", "certify", 0.30 + 0.1 * i, 0.20 + 0.1 * i,
                               [0.2, 0.3 + 0.05 * i, 0.45]) for i in range(3)]
    event = EventTest("record 2", "T > 0.4 on input 1", 0.4, 5000, 0.61, 0.19, 0.59, 0.21, 1e-5, 1.03, 1.02)
    check = CrossCheck("1-DP", 0.5, True, False, ["Pufferfish Thm 1"], "certified bound exceeds min(ε, ε²/2)")
    return AuditResult("violation", "mi-dp", 0.1, 0.05, 0.40, 0.50, 0.46, 0.894, 1.03, evidence, [check],
                       20000, 12.3, 7, mechanism=HOSTILE_NAME, priors=["Bernoulli(0.5)^4"], event_test=event,
                       slices=3, certified_secret="record 2",
                       training_history={"chunks": [{"steps": [10, 20, 30], "validation_mean": [0.1, 0.3, 0.4]}]},
                       notes=["buggy on purpose & <loud>"])


def clean_result() -> AuditResult:
    evidence = [SecretEvidence("g ~ w", None, "Gaussian(0, 1)", "certify", 0.05, 0.01)]
    return AuditResult("no-violation-detected", "mi-pp", 0.5, 0.05, 0.01, 0.05, None, None, None, evidence, [],
                       40000, 3.5, 1, mechanism="laplace (correct)", priors=["Gaussian(0, 1)"])


def estimate_only_result() -> AuditResult:
    # Nothing optional: no per-secret evidence, no event test, no slices, no history, no bound.
    return AuditResult("no-violation-detected", "smi-dp", 0.2, 0.1, None, 0.07, None, None, None, [], [],
                       1000, 0.4, 0, estimate_only=True)


@pytest.fixture(scope="module")
def three():
    return [violation_result(), clean_result(), estimate_only_result()]


@pytest.fixture(scope="module")
def html_text(three):
    return render_html(three, "weekly <audit>")


class _TagBalance(HTMLParser):
    """Records unbalanced tags: every non-void start tag must be closed in order."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.images = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)


def _markdown_cells(line: str) -> list:
    # Split a Markdown table row on pipes that are not backslash-escaped.
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


@pytest.mark.integration
def test_write_reports_writes_every_format_parseable(tmp_path, three):
    paths = write_reports(three, tmp_path / "new" / "dir", title="weekly")
    assert set(paths) == {"html", "md", "json"}
    assert {p.name for p in paths.values()} == {"report.html", "report.md", "report.json"}
    document = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert document["title"] == "weekly"
    assert document["generated_by"] == "miaudit " + version("miaudit")
    assert document["audits"] == [r.to_dict() for r in three]
    assert paths["html"].read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert paths["md"].read_text(encoding="utf-8").startswith("# weekly\n")


def test_write_reports_accepts_one_result_and_chosen_formats(tmp_path):
    paths = write_reports(clean_result(), tmp_path, formats=("json",))
    assert list(paths) == ["json"]
    assert sorted(os.listdir(tmp_path)) == ["report.json"]
    assert len(json.loads(paths["json"].read_text())["audits"]) == 1


@pytest.mark.integration
def test_html_is_self_contained_with_embedded_png_figures(html_text):
    parser = _TagBalance()
    parser.feed(html_text)
    assert parser.errors == [] and parser.stack == []
    sources = [img["src"] for img in parser.images]
    # Violation: per-secret, per-slice, training, DP bounds; clean: per-secret only; estimate-only: none.
    assert len(sources) == 5
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_SIGNATURE)
    assert "http://" not in html_text and "https://" not in html_text
    assert html_text.lower().count("<script") == 0


@pytest.mark.integration
def test_html_escapes_every_user_string(html_text):
    assert HOSTILE_NAME not in html_text
    assert html.escape(HOSTILE_NAME) in html_text
    assert "&lt;loud&gt;" in html_text and "<loud>" not in html_text
    assert "<title>weekly &lt;audit&gt;</title>" in html_text


@pytest.mark.integration
def test_statements_match_result_statement(three, html_text):
    markdown = render_markdown(three, "t")
    for result in three:
        assert html.escape(result.statement()) in html_text
        # Markdown escapes active characters ([secret] -> \[secret\]); the words are the same.
        escaped = re.sub(r"([_\[\]])", r"\\\1", result.statement())
        assert f"**{escaped}**" in markdown
    violation, clean = three[0], three[1]
    assert violation.statement().startswith("With probability at least 95%")
    assert "not a proof of privacy" in clean.statement()


def test_markdown_summary_table_lists_every_audit(three):
    markdown = render_markdown(three, "t")
    lines = markdown.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("| # |")))
    body = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        body.append(_markdown_cells(line))
    assert len(body) == len(three)
    header = _markdown_cells(lines[start])
    assert all(len(row) == len(header) for row in body)
    assert [row[0] for row in body] == ["1", "2", "3"]
    assert [row[header.index("MI test alone")] for row in body] == [r.verdict for r in three]
    assert [row[header.index("claim")] for row in body] == ["—"] * 3  # no claims in these results
    # The hostile name cannot open a tag nor split the row; the unnamed audit gets a name.
    assert body[0][1] == r'\<script>alert("x")\</script> sum \| v2 & co'
    assert body[2][1] == "audit 3"
    assert re.search(r"(?<!\\)<script", markdown) is None


def test_nothing_found_says_what_was_not_shown_and_the_power():
    result = clean_result()
    markdown = render_markdown(result, "t")
    assert "What this audit did not show" in markdown
    assert "not a proof of privacy" in markdown
    margin = result.estimate - result.lower_bound  # 0.04 nats: the certificate's distance below the estimate
    assert f"above about ε + {margin:.4g} = {result.epsilon + margin:.4g} nats" in markdown
    assert "40000 mechanism runs in all" in markdown


def test_result_without_optional_parts_renders(tmp_path):
    result = estimate_only_result()
    paths = write_reports(result, tmp_path)
    page = paths["html"].read_text(encoding="utf-8")
    assert "data:image/png;base64," not in page
    for reason in ("lists no per-secret evidence", "no per-slice values", "no critic training history",
                   "No positive DP ε lower bound"):
        assert reason in page
    markdown = paths["md"].read_text(encoding="utf-8")
    assert "No certificate was possible" in markdown
    assert "### Per-secret evidence" not in markdown and "### DP event test" not in markdown


def test_summary_table_for_the_terminal(three):
    lines = summary_table(three).splitlines()
    assert len(lines) == 2 + len(three)
    assert set(lines[1]) <= {"-", " "}
    for header in ("mechanism", "MI notion", "MI budget (nats)", "MI test alone", "MI certified lower bound (nats)",
                   "MI estimate (nats)", "DP ε lower bounds", "seconds"):
        assert header in lines[0]
    assert "violation" in lines[2] and "0.4 " in lines[2] and "MI 0.894 / event 1.03" in lines[2]
    assert lines[2].endswith("12.3")
    assert lines[3].startswith("2  laplace (correct)") and "no-violation-detected" in lines[3]
    assert "MI — / event —" in lines[4]
    assert summary_table(three[1]) == summary_table([three[1]])


def test_mixed_units_put_the_unit_in_each_cell():
    nats = clean_result()
    bits = AuditResult("no-violation-detected", "mi-pp", 0.5, 0.05, 0.02, 0.06, None, None, None, [], [],
                       100, 1.0, 0, unit="bits")
    header, _, first, second = summary_table([nats, bits]).splitlines()
    assert "(nats)" not in header and "(bits)" not in header
    assert "0.01 nats" in first and "0.02 bits" in second


def test_atomic_write_failure_mid_write_keeps_old_file_and_no_temp(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("old report")

    def chunks():
        yield b"<html>half a new rep"
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_atomic(target, chunks())
    assert target.read_text() == "old report"
    assert os.listdir(tmp_path) == ["report.html"]


@pytest.mark.integration
def test_write_reports_failure_at_rename_keeps_old_files(tmp_path, monkeypatch):
    write_reports(estimate_only_result(), tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}

    def failing_replace(src, dst):
        raise OSError("rename interrupted")

    monkeypatch.setattr(writing.os, "replace", failing_replace)
    with pytest.raises(InputError, match="argument '--out': could not write .*rename interrupted"):
        write_reports(clean_result(), tmp_path, flag="--out")
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before


@pytest.mark.integration
def test_rendering_error_writes_nothing(tmp_path, monkeypatch):
    def broken(results, title):
        raise RuntimeError("renderer failed")

    monkeypatch.setitem(writing.RENDERERS, "json", broken)
    with pytest.raises(RuntimeError, match="renderer failed"):
        write_reports(clean_result(), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_atomic_write_gives_plain_file_permissions(tmp_path):
    target = tmp_path / "r.json"
    write_atomic(target, [b"{}"])
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize("kwargs, argument", [
    ({"results": []}, "results"),
    ({"results": [clean_result(), {"verdict": "violation"}]}, "results"),
    ({"results": 3}, "results"),
    ({"results": clean_result(), "formats": ("html", "pdf")}, "formats"),
    ({"results": clean_result(), "formats": ()}, "formats"),
])
def test_bad_input_names_the_argument(tmp_path, kwargs, argument):
    with pytest.raises(InputError, match=f"'{argument}'"):
        write_reports(out_dir=tmp_path, **kwargs)


def test_out_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "taken").write_text("x")
    with pytest.raises(InputError, match="'out_dir'"):
        write_reports(clean_result(), tmp_path / "taken")


def test_training_curves_flatten_estimator_histories():
    history = {"record 0": {"chunks": [{"steps": [5, 10], "validation_mean": [0.1, 0.2]},
                                       {"steps": [5], "validation_mean": [0.3]}]},
               "loss": [1.0, 0.5, 0.25]}
    curves = training_curves(history)
    assert [label for label, _, _ in curves] == ["record 0 chunks 1 validation_mean",
                                                  "record 0 chunks 2 validation_mean", "loss"]
    assert curves[0][1].tolist() == [5.0, 10.0] and curves[0][2].tolist() == [0.1, 0.2]
    assert curves[2][1].tolist() == [0.0, 1.0, 2.0] and curves[2][2].tolist() == [1.0, 0.5, 0.25]
    assert training_curves({}) == [] and training_curves({"steps": []}) == []


@pytest.mark.integration
def test_figures_handle_many_secrets_several_priors_and_array_slices():
    # Engine-like evidence: 25 secrets under two priors, per-slice values as NumPy arrays,
    # some secrets estimate-only (no bound); the figures must still render as PNGs.
    import numpy as np

    from audit.report.plots import per_record_figure, per_slice_figure

    evidence = [SecretEvidence(f"record {i}", i, f"prior {i % 2}", "certify" if i % 3 else "estimate-only",
                               0.1 * i, 0.05 * i if i % 3 else None, np.linspace(0, 0.2 * i, 4) if i % 4 else None)
                for i in range(25)]
    result = AuditResult("no-violation-detected", "smi-dp", 5.0, 0.05, 0.2, 0.4, None, None, None, evidence, [],
                         100, 1.0, 0, priors=["prior 0", "prior 1"], slices=4)
    for figure in (per_record_figure(result), per_slice_figure(result)):
        assert figure.png.startswith(PNG_SIGNATURE) and figure.absent == ""


@pytest.mark.integration
def test_dollar_signs_in_user_names_are_not_mathtext():
    # An unbalanced or odd '$' in a name would make matplotlib's mathtext parser fail.
    from audit.report.plots import audit_figures

    evidence = [SecretEvidence("rec $x^{$", 1, "prior $x^{", "certify", 0.3, 0.2, [0.1, 0.5])]
    result = AuditResult("violation", "smi-dp", 0.1, 0.05, 0.2, 0.3, None, None, None, evidence, [], 10, 1.0, 0,
                         training_history={"$bad{$": {"steps": [1, 2], "validation_mean": [0.1, 0.2]}})
    figures = audit_figures(result)
    assert all(f.png.startswith(PNG_SIGNATURE) for f in figures[:3])


def test_estimate_only_violation_claims_no_certificate():
    # The engine calls an uncertifiable audit a violation when the estimate exceeds ε; the report
    # must then say the verdict has no error guarantee, never speak of a certified bound.
    result = AuditResult("violation", "mi-pp", 0.2, 0.05, None, 0.9, None, None, None,
                         [SecretEvidence("g ~ w", None, "Gaussian", "estimate-only", 0.9, None)], [], 500, 1.0, 0,
                         estimate_only=True)
    markdown = render_markdown(result, "t")
    section = markdown[markdown.index("## 1."):]
    assert "### What this audit did not show" in section and "### Limits" not in section
    assert "No certificate: the verdict 'violation' rests on the point estimate 0.9 nats only" in section
    assert "certified value is a lower bound" not in section
    assert 'class="statement estimate-only"' in render_html(result, "t")


@pytest.mark.integration
def test_claim_tradeoff_figure_draws_a_curve_only_for_claims_with_a_profile():
    from types import SimpleNamespace

    from audit.report.plots import claim_tradeoff_figure

    event = SimpleNamespace(alpha=0.025, p_second_upper=0.1, p_first_lower=0.6, p_second=0.08, p_first=0.65)
    drawn = claim_tradeoff_figure(SimpleNamespace(claim={"text": "gdp:1"}, event_test=event))
    assert drawn.png is not None and drawn.png.startswith(b"\x89PNG") and "Type-I error" in drawn.caption
    no_event = claim_tradeoff_figure(SimpleNamespace(claim={"text": "dp:1"}, event_test=None))
    assert no_event.png is not None and "no point is drawn" in no_event.caption
    none = claim_tradeoff_figure(SimpleNamespace(claim={"text": "mi-dp:0.5"}, event_test=None))
    assert none.png is None and "has no trade-off curve" in none.absent
    assert claim_tradeoff_figure(SimpleNamespace(claim=None, event_test=None)).png is None


def test_a_rate_ratio_event_test_says_its_certificate_and_its_runs():
    from dataclasses import replace

    result = violation_result()
    event = replace(result.event_test, delta=0.0, epsilon_lower_bound_at_delta=None, certificate="rate-ratio",
                    rate_ratio_lower=2.8, runs_made=[4871, 4902])
    markdown = render_markdown([replace(result, event_test=event)], "rate ratio")
    assert "### DP event test (rate ratio)" in markdown
    assert "Poisson numbers of runs 4871 and 4902 (at most 5000 each)" in markdown and "ρ̲ = 2.8" in markdown
