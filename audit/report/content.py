"""What a report says about each audit, as plain strings, independent of the output format.

The Markdown and HTML renderers draw the same :class:`AuditSection` objects, so both formats
carry the same words and numbers. Nothing here escapes text: each renderer escapes for its
own format. Every string that comes from an :class:`~audit.result.AuditResult` (mechanism
names, prior descriptions, notes) is user input and must be escaped by the renderer.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from audit.mi_statement import NOTION_NAMES, level_number
from audit.report.evidence import evidence_tables
from audit.report.forecast import MAX_RUNS_TO_REFUTE, forecast_runs, runs_to_refute
from audit.report.limits import limits
from audit.report.plain_words import cited_by_year, note_words, probe_words
from audit.report.text import MISSING, TextTable, bound_text, estimate_text, number
from audit.result import PUFFERFISH_PAPER, TEST_NAMES, AuditResult, as_sentence, named_papers
from estimators.ranges import value_range
from estimators.validation import InputError
from mechanisms.calls.printed import NOTE_WORDS as PRINTED_NOTE_WORDS
from mechanisms.execution.chunks import GLOBAL_DRAWS_WORDS
from mechanisms.outputs.encoding import NONE_NOTE_WORDS

# What each entry of ``samples_by_purpose`` paid for, in words.
RUN_PURPOSES = {"mi": "MI sample (trains and certifies the critics)",
                "pair_probe": "probing the searched and structured pairs (one run of each database)",
                "event_statistics": "fitting the float-bit statistics", "event_selection": "choosing the event",
                "event_certification": "certifying the event",
                "float_selection": "choosing the float-bit event", "float_certification": "certifying the float-bit event"}


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
        The one headline: the claim's verdict, the certified bound against it, the pair and the event in one
        sentence (:func:`claim_headline`); without a claim, the MI notion's verdict.
    explanation : str
        What the claim's verdict means beyond the headline (:meth:`AuditResult.claim_explanation`: the confidence,
        each refuting test's evidence, the split of α); "" without a claim.
    mi_heading, mi_statement : str
        With a claim, the MI notion's verdict in a part of its own, labelled as also tested with its role among the
        claim's tests (:func:`mi_part`), without the DP ε lower bound, which the summary table and the tests'
        evidence state (:meth:`AuditResult.mi_statement`); "" without a claim.
    under_headline : tuple of str
        The sentences under the headline, the terminal's lines under it (:func:`headline_explanations`): what to
        check after a refutation through the output's values, what a float-bit refutation means and its fix, what
        the event's symbols mean; each only where it applies.
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
    explanation: str = ""
    mi_heading: str = ""
    mi_statement: str = ""
    under_headline: tuple = ()

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


def mechanism_name(result: AuditResult, index: int) -> str:
    """The mechanism's declared name, or ``audit <n>`` when it has none."""
    return result.mechanism or f"audit {index + 1}"


def level_text(value, unit: str = "") -> str:
    """The audited MI level ε, or :data:`MISSING` when none was audited."""
    return MISSING if value is None else level_number(value) + (f" {unit}" if unit else "")


def claim_text(result: AuditResult) -> str:
    """The claim and its outcome in a cell: ``1-DP: refuted``; :data:`MISSING` without a claim."""
    return MISSING if result.claim is None else f"{result.claim['label']}: {claim_outcome(result)[0]}"


#: The note :func:`audit.certificates.claim_tests.plan_claim_tests` writes when the event test's runs are too few.
_RUNS_NEEDED = re.compile(r"it needs at least (\d+) runs per input")

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
        clearance = max((c for c in (_clearance(result, check) for check in result.cross_checks
                                     if check.certified_contradiction) if c is not None), default=None)
        if clearance is not None and clearance < NARROW_MARGIN:
            return "refuted", (f"the certified bound clears the claim by only {100 * clearance:.2g}% (less than "
                               f"{100 * NARROW_MARGIN:g}%): a mechanism exactly at its claim is refuted with probability "
                               f"at most α = {result.alpha:g}, and a refutation this close may be that chance")
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
            if needed is None and event.statistics_with_evidence:  # some statistic saw more than the claim allows
                return ("not refuted", "the draws the event was chosen on showed evidence against the claim ("
                                       f"{', '.join(event.statistics_with_evidence)}) that its {n} certification runs "
                                       "did not confirm: more runs may refute it")
            if needed is None:
                tried = f" (statistics tried: {', '.join(event.statistics_tried)})" if event.statistics_tried else ""
                return ("not refuted",
                        f"it cannot be refuted this way: even at the most favourable frequencies its {n} runs allow "
                        f"(P = {number(best_first)} against {number(best_second)}), the best event found is too close "
                        f"to the claim's privacy profile for any practical number of runs (up to "
                        f"{MAX_RUNS_TO_REFUTE:.0e} per input) to refute it, and no statistic tried showed any evidence "
                        f"against it{tried}")
            forecast = forecast_runs(claim, event, event_alpha)
            if forecast is not None:
                return ("not refuted", f"the best event's effect exceeds the claim by more than its standard error on "
                                       f"the draws it was chosen on and on its {n} certification runs: refuting it would "
                                       f"take {value_range(*forecast, 'runs per input')} (a forecast from its frequencies "
                                       "± one standard error; an audit with new runs spends α again)")
        return "not refuted", "no evidence against the claim at this pair"
    return "not refuted", ""


#: A refutation whose certified bound clears the claim by less than this fraction of it says so (:func:`claim_outcome`).
NARROW_MARGIN = 0.05


def _clearance(result: AuditResult, check) -> float | None:
    """How far a test's certified bound lies beyond the claim, as a fraction of the claim's value: (ε̲ − ε)/ε for the
    event tests of a pure ε-DP claim, (statistic − threshold)/threshold for the others; None where the threshold is 0."""
    claimed = _pure_epsilon(result)
    statistic, threshold = check.statistic, check.threshold
    if claimed is not None and check.test in ("event", "float"):
        event = result.float_event_test if check.test == "float" else result.event_test
        statistic, threshold = (statistic if event is None else event.epsilon_lower_bound), claimed
    if statistic is None or threshold is None or not threshold > 0:
        return None
    return (statistic - threshold) / threshold


#: Words of the notes that change what a user should do: the budget, the pairs' reach, the relation, a test left out,
#: what the mechanism printed (kept off the terminal during the runs) and the NaN it returned.
_ACTION_WORDS = ("runs per input", "cannot refute", "does not test the claim", "can refute", "declares records in",
                 "neighbour", "relation", "raise --samples", "is off", PRINTED_NOTE_WORDS, "returned NaN in",
                 GLOBAL_DRAWS_WORDS, NONE_NOTE_WORDS)


def action_notes(result: AuditResult) -> list:
    """The notes that change what a user should do next: a budget too small for a test (with the runs
    it needs), pairs that cannot reach the declared input domain, the neighbouring relation assumed, a
    test that does not test the claim, what the mechanism printed and the NaN it returned
    (:meth:`mechanisms.execution.runner.MechanismRunner.call_notes`), its draws from the global generators
    (:func:`mechanisms.execution.chunks.global_draws_note`) and a None it returned
    (:func:`mechanisms.outputs.encoding.none_note`). The terminal prints these; every note is in
    the JSON and reports."""
    return [note for note in result.notes if any(word in note for word in _ACTION_WORDS)]


_HEADLINE_WORDS = {"refuted": "REFUTED", "not refuted": "NOT-REFUTED",
                   "cannot be refuted at this budget": "CANNOT BE REFUTED AT THIS BUDGET"}


def claim_headline(result: AuditResult) -> str:
    """The one sentence about the claim: its verdict (:func:`claim_outcome`), the certified bound against it,
    the test, the pair and the event (:func:`deciding_evidence`); empty without a claim. A refutation the float-bit
    event test took part in is named in a few words (:meth:`AuditResult.float_headline_words`), explained on the
    line below (:meth:`AuditResult.float_explanation`)."""
    outcome, why = claim_outcome(result)
    if not outcome:
        return ""
    scope = result.claim_scope()  # the neighbours of a claim about records, an MI-PP claim's secrets
    head = (f"claim {result.claim['label']}: {_HEADLINE_WORDS[outcome]}" + (f" ({scope})" if scope else "")
            + result.float_headline_words())
    # A claim no test could refute has no deciding test: the headline says what would make one.
    evidence = deciding_evidence(result) if result.claim_alpha else ""
    said = "; ".join(part for part in (evidence, why) if part)
    return head + (f": {said}" if said else "")




#: ε′ in words where an (ε, δ) claim's headline first shows it: the claim allows a δ at every ε′ ≥ 0 (its privacy
#: profile), and the test reads it at the ε′ that is worst for the claim
#: (:meth:`mechanisms.claims.claim.Claim.check_event`).
EPSILON_PRIME_WORDS = ("ε′ is the ε, of all ε ≥ 0 at which the claim allows a δ, where the event's δ most exceeds the "
                       "claim's or falls least short of it")


def deciding_evidence(result: AuditResult) -> str:
    """The certified bound of the test that decided the claim against the claim, with the pair and the event it
    was certified on: the first refuting test, else the event test (else the MI test); "" where none ran."""
    check = _deciding_check(result)
    if check is None:
        return ""
    above = ">" if check.statistic > check.threshold else "≤"
    if check.test == "mi":
        # A negative bound reads as the table reads it, 0 (no evidence): bound_text.
        bound = (f"certified MI lower bound {bound_text(check.statistic, 'nats')} {above} the "
                 f"{level_number(check.threshold)} nats the claim implies")
    elif check.test == "gdp":
        bound = f"certified μ ≥ {number(check.statistic)} {above} the claimed μ = {check.threshold:g}"
    elif _pure_epsilon(result) is not None:  # the event tests of pure ε-DP: the certified ε against the claimed ε
        event = result.float_event_test if check.test == "float" else result.event_test
        epsilon = check.statistic if event is None else event.epsilon_lower_bound
        above = ">" if check.certified_contradiction or epsilon > _pure_epsilon(result) else "≤"
        bound = f"certified ε ≥ {number(epsilon)} {above} the claimed ε = {_pure_epsilon(result):g}"
    else:
        # The (ε, δ) check in the words of the event: P[E | first] − e^ε′ P[E | second] against the δ the claim allows.
        bound = (f"certified δ ≥ {bound_text(check.statistic)} {above} the δ = {number(check.threshold)} the claim "
                 f"allows at ε′ = {number(check.epsilon_prime)}")
    alpha = "" if check.alpha_spent is None else f", α = {check.alpha_spent:.3g}"
    # One bracket: what ε′ and the (ε, δ) bound are, ε′ where it is first shown (Claim.check_event chooses it), then
    # the test that certified it.
    said = (EPSILON_PRIME_WORDS + "; the event's δ is its probability on one database minus e^ε′ times its probability "
            "on the other; " if check.test not in ("mi", "gdp") and _pure_epsilon(result) is None else "")
    text = f"{bound} ({said}{TEST_NAMES.get(check.test, check.test)}{alpha})"
    if check.test == "mi":
        return text + (f", on {result.certified_secret}" if result.certified_secret else "")
    event = result.float_event_test if check.test == "float" else result.event_test
    if event is None:
        return text
    data = event.event or {}
    if "record_values" in data:  # the event and its pair as data (audit.result.EventTest.event)
        # Imported here: the event search pulls in SciPy, which `miaudit audit --help` must not load.
        from audit.search.event_choice import ScoreEvent
        from audit.search.event_search import pair_words

        return (text + f", on the pair whose databases differ in {pair_words(data)}, with the event "
                + ScoreEvent.from_dict(data).describe(data["statistic"]))
    # An event test without its pair as data (built by hand, or read from an older JSON): its description's words.
    parts = event.description.split("; ")
    pair = next((p for p in parts[1:] if p.startswith("neighbouring databases")), None)
    return text + (f", on the pair whose {pair[len('neighbouring '):]}" if pair else "") + f", with the event {parts[0]}"


def _deciding_check(result: AuditResult):
    """The test whose bound the headline shows (:func:`deciding_evidence`): the first refuting test in the order
    event, float, gdp, mi; else the first with an α share; else any that ran; ``None`` where none ran."""
    checks = [c for c in result.cross_checks if c.statistic is not None]
    refuting = [c for c in checks if c.certified_contradiction]
    order = {"event": 0, "float": 1, "gdp": 2, "mi": 3}
    pool = refuting or [c for c in checks if c.alpha_spent is not None] or checks
    return min(pool, key=lambda c: order.get(c.test, 4)) if pool else None


def mi_part(result: AuditResult) -> tuple:
    """The label of the MI notion's verdict beside a claim's verdict, and its role in words: ``("Also tested:
    MI-DP at ε = 0.5 nats", "the MI level 1-DP implies (<its sources, by authors and year>); one of the claim's
    tests, at α = 0.025 of 0.05: alone it did not refute the claim, the event test did")``; ``("", "")`` without a
    claim. The MI verdict is the MI notion's own statement; this says which of the claim's tests it is (the α split
    is :meth:`AuditResult.claim_explanation`'s), so that "no violation" of the MI notion beside a refuted claim does
    not read as a second verdict on the claim. Papers are cited by authors and year (:func:`short_papers`)."""
    if result.claim is None:
        return "", ""
    level = NOTION_NAMES[result.notion] + ("" if result.epsilon is None else f" at ε = {level_number(result.epsilon)} {result.unit}")
    budget = result.claim.get("implied_mi_budget")
    implied = ""
    if budget is not None and result.epsilon is not None and result.notion == "mi-dp" and math.isclose(budget, result.epsilon):
        references = list(dict.fromkeys(theorem_reference(source)
                                        for source in result.claim.get("implied_mi_budget_source") or []))
        implied = f"the MI level {result.claim['label']} implies" + (f" ({'; '.join(references)})" if references else "")
    tests = [c for c in result.cross_checks if c.test == "mi" and c.alpha_spent is not None]
    under = ""
    if result.relations is not None:
        # Under both relations the MI notion's verdict is the shown relation's audit's: its MI test, at its share of
        # that relation's α/2 (the other relation's MI test is listed with the tests that did not refute the claim).
        shown = result.relations.get("relation") or result.relations["tested"][0]
        tests, under = [c for c in tests if c.relation in (None, shown)], f" under {shown}"
        level += under
    if not tests:
        role = "not one of the claim's tests" + under
    else:
        shares = " and ".join(f"{c.alpha_spent:.3g}" for c in tests)
        role = f"one of the claim's tests{under}, at α = {shares} of {result.alpha:g}: "
        if any(c.certified_contradiction for c in tests):
            role += "it refutes the claim"
        else:
            others = list(dict.fromkeys(TEST_NAMES.get(r["test"], r["test"]) for r in result.refuted_by
                                        if r["test"] != "mi"))
            role += "alone it did not refute the claim" + (f", the {' and the '.join(others)} did" if others else "")
    return f"Also tested: {level}", short_papers("; ".join(part for part in (implied, role) if part))


def short_papers(text: str) -> str:
    """``text`` with "Pufferfish paper" (the code's short name) written as its authors and year, for a line that
    cites it in passing (:func:`audit.report.plain_words.cited_by_year`); the reports' facts name it by its title
    (:func:`audit.result.named_papers`)."""
    return cited_by_year(text)


#: A result's name in a source of the MI budget (:attr:`mechanisms.claims.claim.MIBudget.theorems`): a paper's result
#: before the colon that starts its statement ("Pufferfish paper, Theorem 1: ε-DP ⇒ ...").
_RESULT_WORDS = re.compile(r"\b(?:Theorem|Definition|Proposition|Lemma|Corollary|Remark|Section|Eq\.)")
_CITED_IN_PARENTHESES = re.compile(r"\(([^():]*\b(?:Theorem|Definition|Proposition|Lemma|Corollary)\b[^():]*):")


def theorem_reference(source: str) -> str:
    """A source of a claim's MI budget by its paper and result alone, without the statement it quotes:
    ``"<paper>, <result>: <statement>"`` reads ``"<paper>, <result>"`` (as docs/theorems.md names the result); a
    claim converted to another relation cites the result its conversion names; a source that names no result stays
    as it is. The paper's short name is written out by :func:`audit.result.named_papers`."""
    head = source.split(": ", 1)[0]
    if ": " in source and _RESULT_WORDS.search(head):
        return head
    cited = _CITED_IN_PARENTHESES.search(source)
    return cited.group(1).strip() if cited else source


#: The label of the critic's statistic (:func:`audit.search.event_candidates.pair_statistics`), which no description part explains.
CRITIC_STATISTIC = "T(a, y) − T(b, y)"


def event_explanation(result: AuditResult) -> str:
    """The symbols of the event the headline shows (:func:`deciding_evidence`), in words: y, the databases a
    and b, the statistic the audit chose and what it is, and what "first input" means; "" where the headline shows
    no event. Read from the event as data (:attr:`audit.result.EventTest.event`: its ``statistic``,
    ``statistic_words`` and ``first_input``), never from its description; "" for an event test without it.

    The critic T of the MI test is a Donsker–Varadhan critic (Belghazi et al. 2018, MINE), whose optimum is
    log p(y | x) − log p(y) up to a constant, so T(a, y) − T(b, y) estimates log p(y | a) − log p(y | b).
    """
    check = None if result.claim is None or not result.claim_alpha else _deciding_check(result)
    if check is None or check.test == "mi":
        return ""
    event = result.float_event_test if check.test == "float" else result.event_test
    form = None if event is None else event.event
    if not form or not form.get("statistic") or form.get("first_input") not in ("a", "b"):
        return ""
    label, what = form["statistic"], form.get("statistic_words")
    if label == CRITIC_STATISTIC:
        words = ("T is a model the MI test fitted on its own runs to tell the databases' outputs apart (its critic), "
                 "and T(a, y) − T(b, y) estimates how much more likely y is on a than on b, the log-likelihood ratio "
                 "log p(y | a) − log p(y | b)" + (f" ({what})" if what else ""))
    else:
        words = what or "a statistic of the output"
    first = form["first_input"]
    second = "b" if first == "a" else "a"
    return (f"the event: y is the mechanism's output, a and b the pair's two databases; {label} is the statistic the "
            f"audit chose: {words}; first input {first}: E is more likely on {first} than on {second}")


def headline_explanations(result: AuditResult) -> list:
    """What the lines under a claim's headline say, in order, the terminal's and the reports' alike: what to check
    after a refutation through the output's values (:meth:`AuditResult.value_explanation`), what a float-bit
    refutation means and its fix (:meth:`AuditResult.float_explanation`), what the event's symbols mean
    (:func:`event_explanation`); each only where it applies. Where the output, or a part of it, never varied on either
    database of the event's pair, that is what to check, said plainly (:func:`audit.report.plain_words.never_varied`)."""
    explanations = (result.value_explanation(), result.float_explanation(), event_explanation(result))
    return [words for words in explanations if words]


def _pure_epsilon(result: AuditResult):
    """The claimed ε of a pure ε-DP claim (from the result's claim), else None."""
    parameters = result.claim.get("parameters") or {}
    if result.claim.get("notion") == "dp" and not parameters.get("delta"):
        return parameters.get("epsilon")
    return None


def dp_bounds_text(result: AuditResult) -> str:
    """The certified DP ε lower bounds in one cell: ``MI 0.7714 / event 1.105`` (and ``/ float bits 4.978`` with a
    float-bit test), to 4 significant figures as the headline's ``certified ε ≥ 4.978`` writes the same bound."""
    text = f"MI {number(result.dp_epsilon_lower_bound_mi)} / event {number(result.dp_epsilon_lower_bound_event)}"
    if result.float_event_test is not None:  # the float-bit event test's, through the output's float representation
        text += f" / float bits {number(result.float_event_test.epsilon_lower_bound)}"
    return text


def summary_rows(results: list) -> TextTable:
    """The summary table at the top of a report (and on the terminal): one row per audit."""
    units = {r.unit for r in results}
    unit = f" ({units.pop()})" if len(units) == 1 else ""

    def info(value, result):
        # With mixed units no header can name the unit, so every cell carries its own.
        return estimate_text(value, "" if unit else result.unit)

    def lower(value, result):
        return bound_text(value, "" if unit else result.unit)

    # The MI columns are the MI notion's (its budget ε, its verdict), named apart from the claim's verdict.
    rows = [(str(i + 1), mechanism_name(r, i), claim_text(r), NOTION_NAMES[r.notion], level_text(r.epsilon),
             r.verdict or MISSING, lower(r.lower_bound, r), info(r.estimate, r), dp_bounds_text(r), f"{r.seconds:.1f}")
            for i, r in enumerate(results)]
    # "MI test alone": beside a claim refuted by another test, the MI test's own "no-violation-detected" is its verdict
    # alone, not a second verdict on the claim (the MI line under the table says its role: mi_part).
    headers = ("#", "mechanism", "claim", "MI notion", "MI budget" + unit, "MI test alone",
               "MI certified lower bound" + unit, "MI estimate" + unit, "DP ε lower bounds", "seconds")
    return TextTable("Summary", headers, rows)


def facts(result: AuditResult) -> list:
    """The headline numbers of one audit, labelled, as strings."""
    unit = result.unit
    pairs = []
    if result.claim is not None:
        claim = result.claim
        budget = claim["implied_mi_budget"]
        pairs += [
            ("claim", f"{claim['label']}" + (f" (from {claim['origin']})" if claim.get("origin") else "")),
            ("secrets", claim["secrets"]) if claim.get("secrets")
            else ("neighbouring relation", claim.get("relation_text") or MISSING),
            ("claim verdict", ": ".join(part for part in claim_outcome(result) if part)),
            # Each test by the name the headline and the terminal give it (float-bit event test, not "float test").
            ("refuted by", "; ".join(TEST_NAMES.get(r["test"], f"{r['test']} test")
                                    + (f" under {r['relation']}" if r.get("relation") else "")
                                    + f" (α = {r['alpha_spent']:.3g})" for r in result.refuted_by)
             or MISSING),
            ("α split between the claim's tests", _alpha_split_text(result)),
            ("MI budget the claim implies", MISSING if budget is None else f"{level_number(budget)} nats"),
            ("claim's privacy profile", claim["profile_source"] or MISSING),
        ]
    pairs += [
        ("MI verdict (the MI notion's, not the claim's)", result.verdict or MISSING),
        ("MI notion", NOTION_NAMES[result.notion]),
        ("MI budget ε", level_text(result.epsilon, unit)),
        ("confidence", f"{100 * (1 - result.alpha):.4g}% (α = {result.alpha:g})"),
        ("MI certified lower bound", bound_text(result.lower_bound, unit)),
        ("certified secret", result.certified_secret or MISSING),
        ("point estimate", estimate_text(result.estimate, unit)),
        (f"paper statistic (Eq. 8 of {PUFFERFISH_PAPER}, estimate)", number(result.paper_statistic)),
        (f"DP ε lower bound from MI ({PUFFERFISH_PAPER}, Theorem 1)", number(result.dp_epsilon_lower_bound_mi)),
        ("DP ε lower bound from the event test", number(result.dp_epsilon_lower_bound_event)),
        ("mechanism runs", runs_text(result)),
    ]
    if result.probe_calls:  # the runner's probe calls, beyond the runs (AuditResult.probe_calls)
        pairs.append(("mechanism calls", f"{result.samples + result.probe_calls} = {result.samples} runs + "
                                         f"{probe_words(result.probe_calls)}"))
    pairs += [
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


def _alpha_split_text(result: AuditResult) -> str:
    """The claim's α shares in a cell, each test named as the terminal names it (``MI test 0.025, event test 0.02,
    float-bit event test 0.005``); under both relations each relation's level and its tests' shares, by relation
    (``replace-one (α = 0.025): MI test 0.0125, event test 0.0125; add-remove …``)."""
    def named(test: str) -> str:  # a second relation's test ("event (add-remove)") keeps its relation
        base, _, relation = test.partition(" (")
        return TEST_NAMES.get(base, base) + (f" ({relation}" if relation else "")

    def shares(claim_alpha: dict) -> str:
        return ", ".join(f"{named(t)} {a:.3g}" for t, a in claim_alpha.items()) or "no test could refute the claim"

    if result.relations is None:
        return shares(result.claim_alpha)
    return "; ".join(f"{r['relation']} (α = {r['alpha']:.3g}): {shares(r['claim_alpha'])}"
                     for r in result.relations["results"])


#: Claim notions whose mechanisms are (close to) Gaussian, for which ε read from μ̲ under the GDP assumption is a fair estimate.
def audit_section(result: AuditResult, index: int) -> AuditSection:
    """Everything one audit's section of a report says: one headline (the claim's sentence, :func:`claim_headline`,
    or without a claim the MI notion's verdict), and the MI notion's verdict in a part of its own."""
    name = mechanism_name(result, index)
    mi_level = f"{NOTION_NAMES[result.notion]}" + ("" if result.epsilon is None else f" at ε = {level_number(result.epsilon)} {result.unit}")
    if result.claim is not None:
        heading = f"{index + 1}. {name} — claim {result.claim['label']}: {claim_outcome(result)[0]}"
        # The headline states the verdict and its deciding evidence; the explanation adds what it does not.
        statement, explanation = claim_headline(result), result.claim_explanation()
        mi_heading, role = mi_part(result)
        mi_text = f"{as_sentence(role)} {result.mi_statement(dp_bounds=False)}"
        flagged = result.refuted
    else:
        heading = f"{index + 1}. {name} — {mi_level}: {(result.verdict or 'no MI level audited').replace('-', ' ')}"
        statement, explanation, mi_heading, mi_text = result.mi_statement(), "", "", ""
        flagged = result.violation
    return AuditSection(anchor=f"audit-{index + 1}", heading=heading,
                        verdict="violation" if flagged else "no-violation-detected",
                        statement=named_papers(statement), explanation=named_papers(explanation),
                        mi_heading=mi_heading, mi_statement=named_papers(mi_text), limits=limits(result),
                        under_headline=tuple(as_sentence(words) for words in headline_explanations(result)),
                        facts=facts(result), tables=[_named_table(t) for t in evidence_tables(result)],
                        notes=[cited_by_year(note_words(n), PUFFERFISH_PAPER) for n in result.notes],
                        estimate_only=result.estimate_only)


def _named_table(table: TextTable) -> TextTable:
    return TextTable(table.caption, table.headers, [tuple(named_papers(cell) for cell in row) for row in table.rows])
