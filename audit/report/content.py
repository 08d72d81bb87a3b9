"""What a report says about each audit, as plain strings, independent of the output format.

The Markdown and HTML renderers draw the same :class:`AuditSection` objects, so both formats
carry the same words and numbers. Nothing here escapes text: each renderer escapes for its
own format. Every string that comes from an :class:`~audit.result.AuditResult` (mechanism
names, prior descriptions, notes) is user input and must be escaped by the renderer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from audit.result import AuditResult
from estimators.validation import InputError

NOTION_NAMES = {"mi-dp": "MI-DP", "smi-dp": "SMI-DP", "mi-pp": "MI-PP"}
MISSING = "—"
# What each entry of ``samples_by_purpose`` paid for, in words.
RUN_PURPOSES = {"mi": "MI sample (trains and certifies the critics)",
                "event_statistics": "fitting the float-bit statistics", "event_selection": "choosing the event",
                "event_certification": "certifying the event"}


def runs_text(result: AuditResult) -> str:
    """How many mechanism runs the audit made and where they went: ``"87500 (MI sample ... 17500; ...)"``."""
    parts = [f"{RUN_PURPOSES.get(purpose, purpose)} {count}" for purpose, count in result.samples_by_purpose.items()]
    event = result.event_test
    if event is not None and event.runs_made is not None and "event_certification" in result.samples_by_purpose:
        # A rate-ratio certificate runs each input a Poisson number of times, within the budget (audit.certificates.rate_ratio).
        i = list(result.samples_by_purpose).index("event_certification")
        parts[i] += (f" = {event.runs_made[0]} + {event.runs_made[1]}, Poisson numbers of runs of the two inputs "
                     f"within the budget of {event.runs_per_input} each")
    return f"{result.samples}" + (f" ({'; '.join(parts)})" if parts else "")


@dataclass(frozen=True)
class TextTable:
    """A table of plain strings: a caption, column headers and rows of equal length."""

    caption: str
    headers: tuple
    rows: list

    def __post_init__(self):
        for row in self.rows:
            if len(row) != len(self.headers):
                raise InputError(f"table '{self.caption}' has a row of {len(row)} cells for {len(self.headers)} columns")


@dataclass(frozen=True)
class AuditSection:
    """One audit's part of a report.

    Attributes
    ----------
    anchor : str
        A stable identifier (``audit-1``) for links from the summary table.
    heading : str
        Mechanism, the claim and its verdict (when there is one), notion and ε in a line.
    verdict : str
        ``"violation"`` (a refuted claim or a certified MI violation) or ``"no-violation-detected"``.
    statement : str
        :meth:`AuditResult.statement`, the guarantee in plain words.
    limits : list of str
        What the audit did not show (and, with no violation found, the power it had).
    facts : list of (str, str)
        The headline numbers, labelled.
    tables : list of TextTable
        Per-secret evidence, the event test and the cross-checks, where present.
    notes : list of str
        The audit's own notes.
    estimate_only : bool
        Whether the verdict rests on a point estimate alone (no certificate).
    """

    anchor: str
    heading: str
    verdict: str
    statement: str
    limits: list
    facts: list
    tables: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    estimate_only: bool = False

    @property
    def limits_title(self) -> str:
        """``Limits`` for a certified violation, else ``What this audit did not show``."""
        return "Limits" if self.verdict == "violation" and not self.estimate_only else "What this audit did not show"


def as_result_list(results) -> list:
    """One :class:`AuditResult` or a sequence of them, as a non-empty list."""
    items = [results] if isinstance(results, AuditResult) else results
    try:
        items = list(items)
    except TypeError:
        raise InputError(f"argument 'results' must be an AuditResult or a list of them, got {type(results).__name__}")
    if not items:
        raise InputError("argument 'results' is empty: give at least one AuditResult")
    for index, item in enumerate(items):
        if not isinstance(item, AuditResult):
            raise InputError(f"argument 'results' item {index} is a {type(item).__name__}, not an AuditResult")
    return items


def number(value, digits: int = 4) -> str:
    """``value`` to ``digits`` significant figures; :data:`MISSING` for ``None``."""
    return MISSING if value is None else f"{value:.{digits}g}"


def mechanism_name(result: AuditResult, index: int) -> str:
    """The mechanism's declared name, or ``audit <n>`` when it has none."""
    return result.mechanism or f"audit {index + 1}"


def level_text(value, unit: str = "") -> str:
    """The audited MI level ε, or :data:`MISSING` when none was audited."""
    return MISSING if value is None else f"{value:g}" + (f" {unit}" if unit else "")


def claim_text(result: AuditResult) -> str:
    """The claim and its outcome in a cell: ``1-DP: refuted``; :data:`MISSING` without a claim."""
    return MISSING if result.claim is None else f"{result.claim['label']}: {claim_outcome(result)[0]}"


def bound_text(value, unit: str = "") -> str:
    """A certified lower bound for reading: a negative one reads as 0 (no evidence; the JSON keeps the raw value)."""
    if value is None:
        return MISSING
    suffix = f" {unit}" if unit else ""
    return f"0{suffix} (no evidence)" if value < 0 else f"{number(value)}{suffix}"


#: The note :func:`audit.certificates.claim_tests.plan_claim_tests` writes when the event test's runs are too few.
_RUNS_NEEDED = re.compile(r"it needs at least (\d+) runs per input")

#: The most runs per input :func:`runs_to_refute` looks for.
MAX_RUNS_TO_REFUTE = 10**9


def runs_to_refute(claim, p_first: float, p_second: float, alpha: float, limit: int = MAX_RUNS_TO_REFUTE):
    """The fewest runs per input with which an event seen at frequencies (``p_first``, ``p_second``)
    would refute ``claim``: Clopper–Pearson bounds (Clopper and Pearson 1934) at α/2 each on
    round(p n) hits of n runs, checked against the claim's profile
    (:meth:`~mechanisms.claims.claim.Claim.event_margin`, positive: outside it). ``None`` when no n up to
    ``limit`` does: at its frequencies the event lies (or nearly lies) within the claim's profile,
    and more runs of it cannot refute the claim.

    The frequencies are estimates, so the count is a forecast, not a guarantee.
    """
    from audit.certificates.claim_tests import _smallest_runs

    from audit.certificates.event_bounds import clopper_pearson

    def works(n):
        lower = clopper_pearson(round(p_first * n), n, alpha / 2)[0]
        upper = clopper_pearson(round(p_second * n), n, alpha / 2)[1]
        return float(claim.event_margin(lower, upper)) > 0

    return _smallest_runs(works, limit)


def claim_outcome(result: AuditResult) -> tuple:
    """(outcome, why) of the audit's claim, the one headline about it.

    The outcome is ``"refuted"``, ``"not refuted"`` or ``"cannot be refuted at this budget"`` (no test
    of this audit could refute it: ``why`` gives the runs per input the event test would need, when
    known). For "not refuted", ``why`` says when the event the audit found could not refute the claim
    at this budget even at the most favourable frequencies its runs allow (with the runs it would
    need), or at any practical budget (the claim cannot be refuted this way: issue 32 D).
    ``("", "")`` without a claim. The JSON's ``claim_verdict`` stays ``refuted`` or ``not-refuted``.
    """
    if result.claim is None:
        return "", ""
    if result.refuted:
        return "refuted", ""
    if not result.claim_alpha:
        needed = [int(m.group(1)) for note in result.notes for m in [_RUNS_NEEDED.search(note)] if m]
        if needed:
            return ("cannot be refuted at this budget",
                    f"the event test needs at least {min(needed)} runs per input (raise --samples or --event-runs)")
        return "cannot be refuted at this budget", "no test of this audit can refute it (the notes say why)"
    event, event_alpha = result.event_test, result.claim_alpha.get("event")
    if event is not None and event_alpha is not None:
        from audit.certificates.event_bounds import clopper_pearson
        from mechanisms.claims.parsing import parse_claim

        try:
            claim = parse_claim(result.claim["text"])
        except InputError:  # a claim written by hand into a result: no profile to compare with
            claim = None
        if claim is not None and claim.has_profile:
            # The most favourable frequencies the certification runs allow (Clopper–Pearson at the test's level):
            # if even those need more runs than the budget, or no practical number, more of this event cannot help.
            n = event.runs_per_input
            best_first = clopper_pearson(round(event.p_first * n), n, event_alpha)[1]
            best_second = clopper_pearson(round(event.p_second * n), n, event_alpha)[0]
            needed = runs_to_refute(claim, best_first, best_second, event_alpha)
            if needed is None:
                return ("not refuted",
                        f"it cannot be refuted this way: even at the most favourable frequencies its {n} runs allow "
                        f"(P = {number(best_first)} against {number(best_second)}), the best event found is too close "
                        f"to the claim's privacy profile for any practical number of runs (up to "
                        f"{MAX_RUNS_TO_REFUTE:.0e} per input) to refute it")
            if needed > n:
                return ("not refuted", f"refuting it with the best event found would take about {needed} runs per "
                                       f"input (a forecast at the most favourable frequencies its {n} runs allow)")
    return "not refuted", ""


#: Words of the notes that change what a user should do: the budget, the pairs' reach, the relation, a test left out.
_ACTION_WORDS = ("runs per input", "cannot refute", "does not test the claim", "can refute", "declares records in",
                 "neighbour", "relation", "raise --samples", "is off")


def action_notes(result: AuditResult) -> list:
    """The notes that change what a user should do next: a budget too small for a test (with the runs
    it needs), pairs that cannot reach the declared input domain, the neighbouring relation assumed, a
    test that does not test the claim. The terminal prints these; every note is in the JSON and reports."""
    return [note for note in result.notes if any(word in note for word in _ACTION_WORDS)]


_HEADLINE_WORDS = {"refuted": "REFUTED", "not refuted": "NOT-REFUTED",
                   "cannot be refuted at this budget": "CANNOT BE REFUTED AT THIS BUDGET"}


def claim_headline(result: AuditResult) -> str:
    """One line about the claim (:func:`claim_outcome`); empty without a claim."""
    outcome, why = claim_outcome(result)
    if not outcome:
        return ""
    relation = result.claim.get("relation_text")
    head = f"claim {result.claim['label']}: {_HEADLINE_WORDS[outcome]}"
    return head + (f" (neighbours: {relation})" if relation else "") + (f": {why}" if why else "")


def dp_bounds_text(result: AuditResult) -> str:
    """Both certified DP ε lower bounds in one cell: ``MI 0.77 / event 1.1``."""
    return f"MI {number(result.dp_epsilon_lower_bound_mi, 3)} / event {number(result.dp_epsilon_lower_bound_event, 3)}"


def summary_rows(results: list) -> TextTable:
    """The summary table at the top of a report (and on the terminal): one row per audit."""
    units = {r.unit for r in results}
    unit = f" ({units.pop()})" if len(units) == 1 else ""

    def info(value, result):
        # With mixed units no header can name the unit, so every cell carries its own.
        return number(value) if unit or value is None else f"{number(value)} {result.unit}"

    def lower(value, result):
        return bound_text(value, "" if unit else result.unit)

    # The MI columns are the MI notion's (its budget ε, its verdict), named apart from the claim's verdict.
    rows = [(str(i + 1), mechanism_name(r, i), claim_text(r), NOTION_NAMES[r.notion], level_text(r.epsilon),
             r.verdict or MISSING, lower(r.lower_bound, r), info(r.estimate, r), dp_bounds_text(r), f"{r.seconds:.1f}")
            for i, r in enumerate(results)]
    headers = ("#", "mechanism", "claim", "MI notion", "MI budget" + unit, "MI verdict",
               "MI certified lower bound" + unit, "MI estimate" + unit, "DP ε lower bounds", "seconds")
    return TextTable("Summary", headers, rows)


def _claim_limits(result: AuditResult) -> list:
    if result.claim is None:
        return []
    label = result.claim["label"]
    if result.refuted:
        return [f"The refutation of {label} is shown for the neighbouring inputs and event (or prior) named in the "
                "evidence; how far the mechanism is from the claim elsewhere is not measured."]
    return [f"Not refuted is not a proof that {label} holds: the tests examined only the inputs, events and priors "
            "named here, with this sample budget."]


def limits(result: AuditResult) -> list:
    """What the audit did not show; with no violation found, also the power it had."""
    return _claim_limits(result) + _mi_limits(result)


def _mi_limits(result: AuditResult) -> list:
    unit = result.unit
    examined = (f"Only the declared prior(s) were examined ({', '.join(result.priors)})" if result.priors
                else "Only the declared prior was examined")
    critics = (f"The {result.estimator} critics form a restricted class: leakage they cannot represent is "
               f"invisible to this audit.")
    if result.estimate_only:
        # The verdict then rests on the point estimate alone (either way), with no type-I error control.
        return [f"No certificate: the verdict '{result.verdict}' rests on the point estimate "
                f"{number(result.estimate)} {unit} only and carries no error guarantee (the public information "
                f"is continuous and was not declared independent of the secret, so no secret could be certified).",
                "Neither a violation nor privacy is shown.", critics, f"{examined}."]
    if result.violation:
        return [f"The certified value is a lower bound: the actual leakage may be larger than "
                f"{number(result.lower_bound)} {unit}.",
                f"{examined}; the violation is shown for them."]
    out = ["This is not a proof of privacy. A lower bound that stays below ε says only that this audit "
           "found no evidence of a violation."]
    if result.lower_bound is not None and result.epsilon is not None:
        margin = result.estimate - result.lower_bound
        k = result.candidates_certified
        level = result.claim_alpha.get("mi", result.alpha)  # the MI test's share of α when it tests a claim
        candidates = (f"one candidate certified at level {level:.3g}" if k == 1
                      else f"{k} candidates certified at {level:.3g}/{k} each")
        out.append(
            f"Power: with {result.samples} mechanism runs in all and {candidates}, the certified bound sat {number(margin)} {unit} "
            f"below the point estimate, so a leakage would have needed a point estimate above about "
            f"ε + {number(margin)} = {number(result.epsilon + margin)} {unit} to be flagged. "
            f"More samples narrow this margin.")
    else:
        out.append(f"No certified lower bound was produced with {result.samples} samples.")
    out += [critics, f"{examined}; other priors may leak more."]
    return out


def facts(result: AuditResult) -> list:
    """The headline numbers of one audit, labelled, as strings."""
    unit = result.unit
    pairs = []
    if result.claim is not None:
        claim = result.claim
        budget = claim["implied_mi_budget"]
        pairs += [
            ("claim", f"{claim['label']}" + (f" (from {claim['origin']})" if claim.get("origin") else "")),
            ("neighbouring relation", claim.get("relation_text") or MISSING),
            ("claim verdict", ": ".join(part for part in claim_outcome(result) if part)),
            ("refuted by", "; ".join(f"{r['test']} test (α = {r['alpha_spent']:.3g})" for r in result.refuted_by)
             or MISSING),
            ("α split between the claim's tests", ", ".join(f"{t} {a:.3g}" for t, a in result.claim_alpha.items())
             or "no test could refute the claim"),
            ("MI budget the claim implies", MISSING if budget is None else f"{budget:.4g} nats"),
            ("claim's privacy profile", claim["profile_source"] or MISSING),
        ]
    pairs += [
        ("MI verdict (the MI notion's, not the claim's)", result.verdict or MISSING),
        ("MI notion", NOTION_NAMES[result.notion]),
        ("MI budget ε", level_text(result.epsilon, unit)),
        ("confidence", f"{100 * (1 - result.alpha):.4g}% (α = {result.alpha:g})"),
        ("MI certified lower bound", bound_text(result.lower_bound, unit)),
        ("certified secret", result.certified_secret or MISSING),
        ("point estimate", f"{number(result.estimate)} {unit}"),
        ("paper statistic (Eq. 8, estimate)", number(result.paper_statistic)),
        ("DP ε lower bound from MI (Pufferfish paper Thm 1)", number(result.dp_epsilon_lower_bound_mi)),
        ("DP ε lower bound from the event test", number(result.dp_epsilon_lower_bound_event)),
        ("mechanism runs", runs_text(result)),
        ("candidates certified (union bound)", str(result.candidates_certified)),
        ("slices", MISSING if result.slices is None else str(result.slices)),
        ("estimator", result.estimator),
        ("device", result.device),
        ("seed", str(result.seed)),
        ("seconds", f"{result.seconds:.2f}"),
        ("priors", ", ".join(result.priors) if result.priors else MISSING),
    ]
    if result.theta_statement:
        pairs.append(("Θ", result.theta_statement))
    return pairs


def gaussian_dp_rows(certificate) -> list:
    """The event test's μ certificate (:class:`audit.certificates.gaussian_dp.GDPCertificate`) as table rows."""
    if certificate is None:
        return []
    c = certificate
    rows = [("certified μ lower bound (Gaussian DP)",
             f"{number(c.mu_lower_bound)} (level α = {c.alpha:.3g}; {c.points} "
             f"trade-off points held at once by {c.method}; {c.evidence})")]
    if c.epsilon_estimate is not None:
        rows.append((f"ε at δ = {c.delta:g} if exactly μ̲-GDP (estimate, not certified)", number(c.epsilon_estimate)))
    if c.event_optimum is not None:
        rows.append((f"best certifiable ε at δ = {c.delta:g} for a μ̲-GDP pair at these runs",
                     number(c.event_optimum)))
    return rows


def evidence_tables(result: AuditResult) -> list:
    """Per-secret evidence, the event test and the cross-checks, each where the result has them."""
    tables = []
    if result.per_record:
        rows = [(e.secret, MISSING if e.record is None else str(e.record), e.prior, e.strategy, number(e.estimate),
                 number(e.lower_bound),
                 MISSING if e.lower_bound is None or result.epsilon is None else ("yes" if e.lower_bound > result.epsilon else "no"))
                for e in result.per_record]
        tables.append(TextTable(f"Per-secret evidence ({result.unit})",
                                ("secret", "record", "prior", "strategy", "estimate", "certified lower bound", "above ε"),
                                rows))
    event = result.event_test
    if event is not None:
        rows = [("secret", event.secret), ("event", event.description), ("threshold", number(event.threshold)),
                ("runs per input", str(event.runs_per_input)),
                ("P(E) under first input", f"{number(event.p_first)} (lower bound {number(event.p_first_lower)})"),
                ("P(E) under second input", f"{number(event.p_second)} (upper bound {number(event.p_second_upper)})"),
                ("δ", f"{event.delta:g}"), ("certified ε lower bound (δ = 0)", number(event.epsilon_lower_bound)),
                (f"certified ε lower bound at δ = {event.delta:g}", number(event.epsilon_lower_bound_at_delta))]
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
        rows.extend(gaussian_dp_rows(event.gaussian_dp))
        title = "DP event test (" + {"odds-ratio": "odds ratio", "rate-ratio": "rate ratio"}.get(
            event.certificate, "Clopper–Pearson") + ")"
        tables.append(TextTable(title, ("quantity", "value"), rows))
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


def audit_section(result: AuditResult, index: int) -> AuditSection:
    """Everything one audit's section of a report says."""
    level = ("no MI level" if result.epsilon is None else f"at ε = {result.epsilon:g} {result.unit}")
    claim = "" if result.claim is None else f"claim {result.claim['label']} {result.claim_verdict} — "
    heading = f"{index + 1}. {mechanism_name(result, index)} — {claim}{NOTION_NAMES[result.notion]} {level}"
    flagged = result.refuted or result.violation
    return AuditSection(anchor=f"audit-{index + 1}", heading=heading,
                        verdict="violation" if flagged else "no-violation-detected",
                        statement=result.statement(), limits=limits(result), facts=facts(result),
                        tables=evidence_tables(result), notes=[str(n) for n in result.notes],
                        estimate_only=result.estimate_only)
