"""The evidence tables of an audit's report: per-secret bounds, the event tests, the tests of the claim, a
sequential audit's looks, and the μ-GDP certificate's rows."""

from __future__ import annotations

from audit.report.text import MISSING, TextTable, bound_text, estimate_text, number
from audit.result import AuditResult


GAUSSIAN_NOTIONS = ("gdp", "zcdp")


def gaussian_dp_rows(certificate, claim_notion: str | None = None) -> list:
    """The event test's μ certificate (:class:`audit.certificates.gaussian_dp.GDPCertificate`) as table rows.

    The ε read from μ̲ assumes the mechanism is exactly μ̲-GDP (Dong, Roth and Su 2022): shown as an
    estimate for a GDP or zCDP claim, and otherwise marked hypothetical (a Laplace mechanism's curve is not
    Gaussian's, and the figure would read as an ε the audit found).
    """
    if certificate is None:
        return []
    c = certificate
    rows = [("certified μ lower bound (Gaussian DP)",
             f"{number(c.mu_lower_bound)} (level α = {c.alpha:.3g}; {c.points} "
             f"trade-off point{'' if c.points == 1 else 's'} held at once by {c.method}; {c.evidence})")]
    gaussian = claim_notion in GAUSSIAN_NOTIONS
    hypothetical = "" if gaussian else "hypothetical, the claim is not GDP or zCDP: "
    if c.epsilon_estimate is not None:
        rows.append((f"{hypothetical}ε at δ = {c.delta:g} if exactly μ̲-GDP (estimate, not certified)",
                     number(c.epsilon_estimate)))
    if c.event_optimum is not None:
        rows.append((f"{hypothetical}best certifiable ε at δ = {c.delta:g} for a μ̲-GDP pair at these runs",
                     number(c.event_optimum)))
    return rows


def evidence_tables(result: AuditResult) -> list:
    """Per-secret evidence, the event test and the cross-checks, each where the result has them."""
    tables = []
    if result.per_record:
        # A negative estimate or bound as the summary table's cells give it (noise, no evidence); the JSON keeps it.
        rows = [(e.secret, MISSING if e.record is None else str(e.record), e.prior, e.strategy, estimate_text(e.estimate),
                 bound_text(e.lower_bound),
                 MISSING if e.lower_bound is None or result.epsilon is None else ("yes" if e.lower_bound > result.epsilon else "no"))
                for e in result.per_record]
        tables.append(TextTable(f"Per-secret evidence ({result.unit})",
                                ("secret", "record", "prior", "strategy", "estimate", "certified lower bound", "above ε"),
                                rows))
    notion = None if result.claim is None else result.claim.get("notion")
    for event, name in ((result.event_test, "DP event test"), (result.float_event_test, "Float-bit event test")):
        if event is not None:
            tables.append(_event_table(event, name, notion))
    if result.cross_checks:
        rows = [(c.claim, c.test, number(c.implied_mi_upper_bound), "yes" if c.certified_contradiction else "no",
                 MISSING if c.alpha_spent is None else f"{c.alpha_spent:.3g}",
                 MISSING if c.estimate_consistent is None else ("yes" if c.estimate_consistent else "no"),
                 ", ".join(str(t) for t in c.theorems), c.detail) for c in result.cross_checks]
        tables.append(TextTable("Tests of the claim",
                                ("claim", "test", f"implied MI upper bound ({result.unit})", "refutes the claim",
                                 "α spent", "estimate consistent", "theorems", "detail"), rows))
    if result.sequential:
        tables += sequential_tables(result.sequential)
    return tables


def sequential_tables(block: dict) -> list:
    """A sequential audit's looks, runs and why it stopped (the JSON ``sequential`` block), as two tables."""
    rows = [("looks", f"{block['looks_run']} of {block['looks_planned']} planned"),
            ("mechanism runs", f"{block['runs']} of at most {block['max_runs']}"),
            ("stopped because", block["stop_reason"]),
            ("overall α", f"{block['alpha']:g} (α-spending α·t^{block['rho']:g} over the looks; union bound)")]
    if block.get("time_limit") is not None:
        rows.append(("time limit", f"{block['time_limit']:g} s"))
    rows += [("note", note) for note in block.get("notes") or ()]
    if block.get("runs_to_refute_note"):
        rows.append(("runs to refute", block["runs_to_refute_note"]))
    looks = [(str(look["look"]), str(look["samples"]), f"{look['alpha']:.3g}", str(look["runs"]),
              str(look["reused_runs"]), look["claim_verdict"] or look["verdict"] or MISSING,
              number(look["dp_epsilon_lower_bound_event"])) for look in block["looks"]]
    return [TextTable("Sequential audit", ("quantity", "value"), rows),
            TextTable("Sequential audit: the looks", ("look", "samples", "level α_k", "runs made", "runs reused",
                                                      "verdict", "certified ε (event)"), looks)]


def _event_table(event, name: str, claim_notion: str | None) -> TextTable:
    """One event test's certified pair, event and certificate as a table titled ``name``."""
    # The first input is the one E is more likely on, a or b of the pair: named, as the event's description names it.
    first = (getattr(event, "event", None) or {}).get("first_input")
    first, second = (f" ({first})", f" ({'b' if first == 'a' else 'a'})") if first in ("a", "b") else ("", "")
    rows = [("secret", event.secret), ("event", event.description), ("threshold", number(event.threshold)),
            ("runs per input", str(event.runs_per_input)),
            (f"P(E) under first input{first}", f"{number(event.p_first)} (lower bound {number(event.p_first_lower)})"),
            (f"P(E) under second input{second}",
             f"{number(event.p_second)} (upper bound {number(event.p_second_upper)})"),
            ("δ", f"{event.delta:g}"), ("certified ε lower bound (δ = 0)", number(event.epsilon_lower_bound))]
    if event.delta > 0:  # at δ = 0 it is the row above (and read "certified ε lower bound at δ = 0: —" beside it)
        rows.append((f"certified ε lower bound at δ = {event.delta:g}", number(event.epsilon_lower_bound_at_delta)))
    if event.delta_lower_bound is not None:  # an (ε, δ) claim: δ̲ at its ε
        rows.append((f"certified δ lower bound at the claimed ε = {event.delta_epsilon:g}",
                     number(event.delta_lower_bound) + (" (≤ 0: certifies nothing)"
                                                        if not event.delta_lower_bound > 0 else "")))
    if event.certificate == "odds-ratio":
        rows.append(("certificate", f"odds ratio: ψ̲ = {number(event.odds_ratio_lower)} at level α, "
                                    "ε ≥ log(ψ̲)/2 (the two bounds above are reported only)"))
    elif event.certificate == "rate-ratio":
        rows.append(("certificate", f"rate ratio: Poisson numbers of runs {event.runs_made[0]} and "
                                    f"{event.runs_made[1]} (at most {event.runs_per_input} each), "
                                    f"ρ̲ = {number(event.rate_ratio_lower)} on p₁/p₂ at level α, ε ≥ log ρ̲ "
                                    "(the two bounds above are reported only)"))
    if event.alpha is not None:
        lower_level, upper_level = event.alpha * event.lower_share, event.alpha * (1 - event.lower_share)
        rows.append(("level α of this test", f"{event.alpha:.3g} (lower bound at {lower_level:.3g}, "
                                             f"upper bound at {upper_level:.3g})"))
    if event.selection_runs:
        rows.append(("runs spent choosing the event", str(event.selection_runs)))
    if name == "DP event test":  # the μ certificate is the event test's statistic's, not the bits'
        rows.extend(gaussian_dp_rows(event.gaussian_dp, claim_notion))
    title = f"{name} (" + {"odds-ratio": "odds ratio", "rate-ratio": "rate ratio"}.get(
        event.certificate, "Clopper–Pearson") + ")"
    return TextTable(title, ("quantity", "value"), rows)
