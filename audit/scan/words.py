"""A scan's report and terminal in a newcomer's words: what a case, a finding, a control and a skipped case are, the
α statement said plainly, what the run cost, each finding's counts in their roles and what it means with its fix,
and for each skipped case what to do next.

Everything here rewords what the scan's outcomes already hold (:mod:`audit.scan.case_audit`); no statistic, verdict,
α share or JSON value is computed or changed. The words a finding shares with ``miaudit audit``'s terminal come from
the same places: the certificates' symbols (:func:`audit.report.plain_words.explain_symbols`), a release that never
varied (:func:`audit.report.plain_words.never_varied`), the outputs seen on one database only
(:func:`audit.report.plain_words.outputs_lines`) and what a refutation through the values or the floating-point bits
means (:mod:`audit.result`'s sentences).
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from mechanisms.outputs.unbounded import never_varied

#: The description's clause that lists the outputs seen under one input only; the report lists them once, below it
#: (:func:`audit.search.event_search.event_search` writes it after every other clause).
#: Symbols of the event's description, in words, beside it.
EVENT_WORDS = ("where y is the entry point's output; E is the event the test chose on the MI sample (the runs the "
               "audit drew first) and counted on fresh ones; its first input is the database E is more likely on")
_OUTPUTS_CLAUSE = "; in the certification runs: "
#: A scan audits one pair per case: the event's origin among the priors' pairs says nothing there.
_ONLY_PAIR = "; the pair of prior 0 of Θ"
#: The description's clause naming the pair's differing record (:func:`audit.search.event_search.pair_words`), which
#: the pair's item says.
_PAIR_CLAUSE = re.compile(r"; neighbouring databases differ in [^;]*")
_ROLES = re.compile(r"first input (?P<first>[ab]), second (?P<second>[ab])")


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 case``, ``2 cases``; ``words``: the plural where it is not ``word + "s"``."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def records(values) -> str:
    """A database of the pair in a few words: ``[0, 0, 0]`` (up to 8 records of one attribute), else its size."""
    rows = [list(row) if isinstance(row, (list, tuple)) else [row] for row in values]
    if rows and len(rows) <= 8 and all(len(row) == 1 for row in rows):
        return "[" + ", ".join(f"{float(row[0]):g}" for row in rows) + "]"
    width = len(rows[0]) if rows else 0
    return f"{plural(len(rows), 'record')} of {plural(width, 'attribute')}"


def pair_item(outcome: dict) -> str:
    """The finding's pair: why it was chosen, its relation, and both databases (a is first.npy, b second.npy)."""
    return (f"pair: {outcome['pair_why']} ({outcome['relation']}); databases first.npy, second.npy: "
            f"a = {records(outcome['first'])}, b = {records(outcome['second'])}")


def event_item(outcome: dict) -> str:
    """The event's description with its symbols in words (:data:`EVENT_WORDS`), less what other items say (the pair,
    the outputs seen under one input only) and the origin of a scan's only pair."""
    description = _PAIR_CLAUSE.sub("", outcome.get("event", "—").replace(_ONLY_PAIR, ""))
    if outcome.get("support_differences") or outcome.get("unbounded_differences"):
        description = description.split(_OUTPUTS_CLAUSE, 1)[0]
    return f"event: {description} ({EVENT_WORDS})"


def roles(outcome: dict) -> tuple:
    """(the event's first input, its second): ``("a", "b")`` or ``("b", "a")``, read from its description."""
    match = _ROLES.search(outcome.get("event", ""))
    return (match["first"], match["second"]) if match else ("a", "b")


def counts_words(outcome: dict) -> str:
    """The counts in their roles: the first count is on the event's first input, which may be b."""
    if "hits" not in outcome:
        return ""
    (h1, h2), (n1, n2) = outcome["hits"], outcome["runs_per_input"]
    first, second = roles(outcome)
    return (f" (E held in {h1} of {n1} certification runs on {first} and in {h2} of {n2} on {second}: fresh runs "
            "drawn after E was chosen; the case's runs also count those it chose E on)")


def meaning(outcome: dict) -> str:
    """What the finding means and what to fix: a release that never varied (no noise), a refutation through the
    floating-point bits alone, or one through the values (the noise too small); "" for a raise counted as an
    output, whose note says it."""
    from audit.result import _FLOAT_HOW_TO, _FLOAT_MEANING, _FLOAT_ONLY, _NOT_NOISE, _VALUE_MEANING

    if outcome.get("raised_as_output"):
        return ""
    if outcome.get("refuting_test") == "float":
        return f"what it means: refuted {_FLOAT_ONLY}, {_NOT_NOISE}: {_FLOAT_MEANING}; {_FLOAT_HOW_TO}"
    constant = never_varied(outcome.get("unbounded_differences"))[0]
    return f"what it means: {constant or _VALUE_MEANING}"


def outputs_items(outcome: dict) -> list:
    """The outputs one database gave and the other never did, each fact once (:func:`event_item` leaves them out)."""
    from audit.report.plain_words import outputs_lines

    event = SimpleNamespace(support_differences=outcome.get("support_differences"),
                            unbounded_differences=outcome.get("unbounded_differences"))
    return [line.strip() for line in outputs_lines(event)]


def symbol_items(items: list) -> list:
    """``items`` with each certificate symbol said in words once, under the first item that uses it."""
    from audit.report.plain_words import explain_symbols

    return [item.strip() for item in explain_symbols(items)]


def skipped_step(reason: str, entry: str, outcome: dict | None = None) -> str:
    """What to do about a skipped case or entry point, from its reason; "" where the reason says it already."""
    only = f"--only '{entry}'"
    if reason.startswith("unknown signature: no parameter 'epsilon'"):
        return ("next: the scan reads the claim from a parameter named epsilon (a user's module: epsilon or eps; and "
                "delta, for (ε, δ)-DP); a docstring or decorator is not read: rename the privacy parameter to epsilon "
                "and scan again")
    if reason.startswith("unknown signature: required parameter(s)"):
        return ("next: the scan passes only the data, epsilon (delta), bounds, weights, a seed named random_state and, "
                "in a user's module, the audit's numpy Generator as rng (or generator, a parameter annotated "
                "numpy.random.Generator, or the one parameter named like a generator: gen, random_generator); give the "
                "other parameters defaults, or draw the noise from rng")
    if reason.startswith("unknown signature"):
        return ("next: an entry point is a function whose first parameter is db (a user's module), array (data, "
                "values, sample, a) or value, taking epsilon, or a class taking epsilon with fit or randomise "
                "(how-to/scan-a-library)")
    if reason.startswith("the call raised") and outcome is not None:
        first, second = records(outcome["first"]), records(outcome["second"])
        where = "" if first.startswith("[") and second.startswith("[") else " (in scan.json: the case's first and second)"
        return (f"next: the pair's databases were a = {first} (the first) and b = {second}{where}; a DP entry point "
                "must return a release for every database of its domain (a raise on some databases only tells them "
                "apart); make it return there (one that raises whatever the data, as for a setting it lacks, needs "
                f"that setting's default to work), then scan it again with {only}")
    if "did not return within" in reason or "too slow to audit" in reason:
        return (f"next: if a call is meant to take this long, give it more with --timeout S; else call it once on "
                f"the pair's databases to see where it waits; then scan it again with {only}")
    if reason.startswith("cannot refute within"):
        return (f"next: no verdict was possible at this budget; give it the runs the reason names with --max-runs N "
                f"(and scan only it with {only}, so that it gets all of α)")
    if reason.startswith("import error"):
        return ("next: the module could not be imported, so none of its entry points was listed: install what it "
                "imports (pip install ...) or fix the error, check that `python -c 'import "
                f"{entry}'` works from this folder, then scan again")
    if "MemoryError" in reason:
        return f"next: allow it more memory with --memory-limit SIZE, or call it on smaller data; then {only}"
    return ""


def skipped_items(result) -> list:
    """The report's and the terminal's skipped rows, ``what: reason; next: ...``: the cases of one entry point skipped
    for the same reason in one row (its grid points alike), each reason and step said once."""
    rows = [(o["id"], o["reason"], o.get("entry", o["id"]), o) for o in result.skipped_cases]
    rows += [(s["what"], s["reason"], s["what"], None) for s in result.skipped]
    whats: dict = {}  # (entry, reason) -> the rows' names, in order
    first: dict = {}  # (entry, reason) -> its first row's outcome (the pair its step shows)
    for what, reason, entry, outcome in rows:
        whats.setdefault((entry, reason), []).append(what)
        first.setdefault((entry, reason), outcome)
    items = []
    for (entry, reason), names in whats.items():
        step = skipped_step(reason, entry, first[entry, reason])
        items.append(f"{', '.join(names)}: {reason}" + (f"; {step}" if step else ""))
    return items


def runs_made(result) -> int:
    """The audits' runs: the calls of the entry points the audited cases' audits made (findings and controls), each at
    most ``--max-runs``."""
    return sum(int(o.get("runs", 0)) for o in (*result.findings, *result.controls))


def calls_made(result) -> tuple:
    """(the audits' runs, the audited cases' ``probe_calls``, the skipped cases' ``calls``): every call of the entry
    points the cases made, counted by :func:`audit.scan.case_audit.audit_case` (a case killed in its process, or kept
    from a state file that did not count them, adds none)."""
    audited = (*result.findings, *result.controls)
    return (runs_made(result), sum(int(o.get("probe_calls", 0)) for o in audited),
            sum(int(o.get("calls", 0)) for o in result.skipped_cases))


def verdict_words(result) -> str:
    """What the counts of the scan's first line are."""
    return ("a case is one entry point at one ε on one pair of neighbouring databases; a finding: its claim "
            "refuted; a control: not refuted within its runs (no proof of privacy: a smaller bug can hide there); "
            "skipped: a case not audited, or an entry point whose cases could not be listed, with why and what to "
            "do")


def alpha_words(result) -> str:
    """The α statement in plain words, under it; "" where no case was audited."""
    if not result.cases:
        return ""
    looks = max((int(o.get("looks_planned", 1)) for o in (*result.findings, *result.controls)), default=1)
    return (f"In words: the chance that even one finding is a false alarm is at most {result.alpha:g} (--alpha), "
            + (f"shared equally by the {result.cases} cases" if result.cases > 1 else "all of it on its one case")
            + f"; each case checked its runs at up to "
            f"{plural(looks, 'point')} as they came (its looks) and stopped at the first that refuted its claim. "
            "A skipped case spent none of its share.")


def cost_words(result) -> str:
    """What the scan cost: every call of the entry points the cases made (:func:`calls_made`), the audits' runs among
    them, and its time: the cases' audits (their CPU time) and the rest."""
    audited = sum(float(o.get("seconds", 0.0)) for o in result.outcomes)
    cpu = sum(float(o.get("cpu_seconds", 0.0)) for o in result.outcomes)
    cap = result.settings["max_runs"]
    runs, probes, skipped = calls_made(result)
    per_case = sorted({int(o["probe_calls"]) for o in (*result.findings, *result.controls) if "probe_calls" in o})
    each = "" if not per_case else (f" ({per_case[0]} a case)" if len(per_case) == 1
                                    else f" ({per_case[0]} to {per_case[-1]} a case)")
    beyond = (f" and {probes:,} beyond --max-runs, the probe calls that time each case's call and check its outputs"
              f"{each}" + (f", and {skipped:,} by the skipped cases" if skipped else ""))
    calls = (f"cost: {runs + probes + skipped:,} calls of the entry points: {runs:,} the audits' runs (at most "
             f"{cap:,} a case, --max-runs; a case stops at the first look that refutes it){beyond}, ")
    at_once, resumed = getattr(result, "side_by_side", 1), int(result.settings.get("resumed_cases", 0))
    workers = "worker processes" if at_once > 1 else "worker process"
    start = "importing and listing the target" + (f", starting its {workers}" if getattr(result, "in_workers", True)
                                                  else "; the cases ran in this process, --in-process")
    if at_once == 1 and not resumed:  # the cases' seconds are a part of the scan's
        return (calls + f"{result.seconds:.0f} s in all: {audited:.1f} s auditing the cases ({cpu:.1f} s of CPU), "
                f"the rest the scan's own start ({start})")
    # Cases audited side by side, or kept from an earlier run, add up to more than the scan's own seconds.
    return (calls + f"{result.seconds:.0f} s in all, the scan's own start included ({start}); the cases' audits "
            f"took {audited:.1f} s summed over the cases"
            + (f", up to {at_once} at a time" if at_once > 1 else "")
            + (f", {plural(resumed, 'case')} of them kept from the state file, timed as they ran then" if resumed
               else "") + f" ({cpu:.1f} s of CPU)")


def finding_line(outcome: dict, folder) -> str:
    """The terminal's line of one finding: its case, the bound certified, how, and its folder."""
    parts = outcome.get("bit_parts")  # a dict release's keys whose bits differ most (audit.scan.case_audit)
    how = (f"through the floating-point bits of the output's {', '.join(parts)}" if parts and
           outcome.get("refuting_test") == "float" else "through the output's floating-point bits"
           if outcome.get("refuting_test") == "float" else "by the MI test" if outcome.get("refuting_test") == "mi"
           else "through the output's values")
    return f"  finding: {outcome['id']}: {outcome['claim']} refuted, certified {certified_bound(outcome)} {how} ({folder})"


def certified_bound(outcome: dict) -> str:
    """The bound a case's refuting test certified, in a few characters: "ε ≥ 1.85", "ε ≥ 1.2; δ ≥ 0.03", "I ≥ 0.1 nats"."""
    if outcome.get("refuting_test") == "mi":
        mi = outcome.get("mi_lower_bound")
        return "—" if mi is None else f"I ≥ {mi:.3g} nats"
    eps = outcome.get("epsilon_lower_bound")
    text = "ε ≥ ∞" if eps is None and outcome.get("event") else ("—" if eps is None else f"ε ≥ {eps:.3g}")
    delta = outcome.get("delta_lower_bound")
    if delta is not None and delta > 0:
        text += f"; δ ≥ {delta:.3g}"
    return text
