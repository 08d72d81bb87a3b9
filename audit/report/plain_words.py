"""The terminal report's words for a first-time reader: symbols explained where first used, the runs in one line,
a function whose output never varied, how structured outputs became numbers, and what to do when it raised.

Everything here rewords what the result already holds (its JSON does not change): the certificates' symbols
(:mod:`audit.certificates.claim_tests` writes ``ρ̲``, ``ψ̲``, ``p̲``, ``p̄``, ``δ(ε′)``, ``μ̲`` into each test's
``detail``), the runs per purpose (:attr:`audit.result.AuditResult.samples_by_purpose`), the outputs one database
of the event's pair always gave and the other never did (:attr:`audit.result.EventTest.unbounded_differences`,
:mod:`mechanisms.outputs.unbounded`) and the names the output encoder gave the outputs' parts
(:mod:`mechanisms.outputs.encoding`).
"""

from __future__ import annotations

import re

from mechanisms.outputs.unbounded import never_varied
from mechanisms.papers import PUFFERFISH

#: Each symbol of a test's detail, in words, in the order a line is read. An ε-DP mechanism keeps the ratio of an
#: event's probabilities within e^ε, so its odds ratio within e^2ε (Dwork and Roth 2014, Definition 2.4).
SYMBOL_WORDS = (
    ("ρ̲", "ρ̲ is a lower bound, certified at the test's α, on how many times more often the event occurs on one "
          "database than on the other (ε-DP keeps that ratio at most e^ε)"),
    ("ψ̲", "ψ̲ is a lower bound, certified at the test's α, on the event's odds ratio, P/(1 − P) on one database over "
          "the same on the other (ε-DP keeps it at most e^2ε)"),
    # The event a claim that is not pure DP certifies (audit.search.claim_events), named in its test's line.
    ("δ-optimal", "the δ-optimal event is the event, among those tried on runs set aside, whose probabilities exceeded "
                  "what the claim allows by the most (chosen where those runs showed the claim violated)"),
    ("ε-optimal", "the ε-optimal event is the event, among those tried on runs set aside, that certifies the largest ε "
                  "(chosen where those runs showed no violation of the claim)"),
    ("p̲", "p̲ and p̄ bound the event's probability, certified together at the test's α: at least p̲ on the event's "
          "first input, at most p̄ on its second"),
    ("δ(ε′)", "δ(ε′) is the δ the claim allows at ε′ (its privacy profile: a δ for every ε′ ≥ 0); the claim is "
              "refuted where the first probability exceeds e^ε′ times the second by more than δ(ε′)"),
    ("μ̲", "μ̲ is a lower bound, certified at the test's α, on the μ of μ-GDP, read from how well the event's "
          "statistic tells the two databases apart"),
    # The rate-ratio certificate's design (audit.certificates.rate_ratio; Przyborowski and Wilenski 1940).
    ("Poisson numbers of runs", "Poisson numbers of runs: this certificate drew how many times to run each database "
                                "at random (from a Poisson law, before any run, within the budget), which makes the "
                                "event's two counts independent so that one exact test bounds their ratio; the two "
                                "numbers are the runs it made, and fewer than the budget is by design, not runs lost"),
)


#: The numbers the encoder makes of how an output's neighbouring numbers relate
#: (:mod:`mechanisms.outputs.relations`), in words where a fact first names one: each a pattern and its words, ``{0}``
#: the name met, ``{1}`` and ``{2}`` its parts.
RELATION_WORDS = (
    (re.compile(r"\(equal neighbours of ([^()]+?)\)"),
     "{0} is a number the audit made from the output: how many pairs of neighbouring values of {1} are equal (an "
     "array's entries side by side, a dict's values at neighbouring keys in sorted key order)"),
    (re.compile(r"\((y[^()]*?) - (y[^()]*?)\)"),
     "{0} is {1} minus {2}, the audit's difference between two neighbouring values of the output (its sign is "
     "their order)"),
)


def explain_symbols(lines: list, said: set | None = None, words: tuple = SYMBOL_WORDS) -> list:
    """``lines`` with, under the first line that uses a symbol of ``words`` (:data:`SYMBOL_WORDS`, or
    :data:`RELATION_WORDS`, whose symbols are patterns), one indented line saying what it means (``where ρ̲ is
    ...``); each symbol explained once. ``said``: symbols explained already (updated)."""
    said = set() if said is None else said
    out = []
    for line in lines:
        out.append(line)
        new = []
        for symbol, meaning in words:
            key = symbol if isinstance(symbol, str) else symbol.pattern
            found = None if key in said else (symbol in line if isinstance(symbol, str) else symbol.search(line))
            if found:
                new.append((key, meaning if isinstance(symbol, str) else meaning.format(found[0], *found.groups())))
        if new:
            said.update(key for key, _ in new)
            indent = len(line) - len(line.lstrip(" -"))
            out.append(" " * (indent + 2) + "where " + "; ".join(meaning for _, meaning in new))
    return out


def dp_bounds_words(results) -> str:
    """The summary table's "DP ε lower bounds" cell (``MI 0.5328 / event 5.128``) in words, for the line under the
    table: what each bound is and where it comes from, the MI one through Theorem 1 of the Pufferfish paper (ε-DP
    implies min(ε, ε²/2)-MI-DP; :func:`audit.bounds.pufferfish.dp_epsilon_lower_bound_from_mi`); "" where the cell
    holds no number. ``results``: one audit's result, or a table's results (``miaudit demo``: each kind of bound any
    row shows, said once)."""
    theorem = cited_by_year("Pufferfish paper, Theorem 1")
    words = (f"MI from the certified MI lower bound (ε-DP keeps the MI at most min(ε, ε²/2) nats: {theorem})",
             "event from the event test", "float bits from the float-bit event test")
    shown = [False] * len(words)
    for result in results if isinstance(results, (list, tuple)) else [results]:
        float_test = getattr(result, "float_event_test", None)
        bounds = (result.dp_epsilon_lower_bound_mi, result.dp_epsilon_lower_bound_event,
                  None if float_test is None else float_test.epsilon_lower_bound)
        shown = [seen or bound is not None for seen, bound in zip(shown, bounds)]
    said = [text for text, seen in zip(words, shown) if seen]
    if not said:
        return ""
    return ("where the DP ε lower bounds are values of ε below which the mechanism is certified not to be ε-DP: "
            + ", ".join(said))


#: The tests the runs of each purpose (:attr:`audit.result.AuditResult.samples_by_purpose`) served.
_RUNS_FOR = {"mi": "the critics (the audit's samples)", "pair_probe": "the event test",
             "event_selection": "the event test", "event_certification": "the event test", "event_statistics": "the float-bit event test",
             "float_selection": "the float-bit event test", "float_certification": "the float-bit event test"}


#: What the runner's probe is for (:attr:`audit.result.AuditResult.probe_calls`,
#: :func:`mechanisms.execution.worker.run_probe`), in words.
PROBE_WORDS = "the probe, two calls on one database with one seed, which check that the seed alone fixes the output"
#: Its third call, made where the first two outputs differ.
THIRD_PROBE_CALL_WORDS = ("and a third seeded as the first, as the two differed, to tell draws from numpy.random, random "
                          "or torch (which miaudit seeds) from other randomness")


def probe_words(probe_calls: int) -> str:
    """``"2 for the probe, ..."``: the probe's calls of the mechanism and what they check (:data:`PROBE_WORDS`, with
    :data:`THIRD_PROBE_CALL_WORDS` where it made a third call); "" where it made none."""
    if not probe_calls:
        return ""
    return f"{probe_calls} for {PROBE_WORDS}" + (f", {THIRD_PROBE_CALL_WORDS}" if probe_calls > 2 else "")


def runs_line(result) -> str:
    """The mechanism's calls in one short line, and why they exceed ``--samples``: the runs the critics trained on,
    then those each event test drew of its own to choose its pair and event and to certify it on fresh runs, then
    the runner's probe calls (:attr:`audit.result.AuditResult.probe_calls`, not among the runs). The count of each
    purpose stays in the reports and the JSON (``samples_by_purpose``, ``probe_calls``)."""
    served: dict = {}
    for purpose, count in result.samples_by_purpose.items():
        base = purpose.split(" (", 1)[0]  # a second relation's runs ("mi (add-remove)") serve the same test
        what = _RUNS_FOR.get(base, base)
        served[what] = served.get(what, 0) + count
    probe = probe_words(result.probe_calls)
    if len(served) <= 1 and not probe:
        return f"mechanism runs: {result.samples}"
    runs = " + ".join(f"{count} for {what}" for what, count in served.items()) if len(served) > 1 else ""
    why = ""
    if len(served) > 1:
        which = "each event test" if sum("event test" in what for what in served) > 1 else "an event test"
        why = f"{which} chooses its pair and event on runs of its own and certifies it on fresh ones"
    if not probe:
        return (f"mechanism runs: {result.samples} = {runs}: {why} (each purpose's count: the report, or "
                "samples_by_purpose in --json)")
    runs = f"{result.samples} runs" + (f" ({runs}: {why})" if runs else "")
    return (f"mechanism calls: {result.samples + result.probe_calls} = {runs} + {probe}; each count: the report, or "
            "samples_by_purpose and probe_calls in --json")


def _fact(sentence: str):
    """(name, value) of a support or unbounded sentence that starts "[value ]NAME = V in", else None."""
    match = re.match(r"^(?:value )?(?P<name>.+?) = (?P<value>\S+) in ", sentence)
    return (match["name"], match["value"]) if match else None


def outputs_lines(event) -> list:
    """The terminal's lines on the outputs one database of the event's pair gave and the other never did, each fact
    said once: what :func:`never_varied` says under the headline is left out, and so is a fact seen on one database
    only that the unbounded line says too (it is seen in every run of that database). A number the encoder made of
    how neighbouring values relate is said in words under the line that first names it (:data:`RELATION_WORDS`)."""
    if event is None:
        return []
    _, said = never_varied(event.unbounded_differences)
    unbounded = [s for s in event.unbounded_differences or [] if _fact(s) not in said]
    said = said | {_fact(s) for s in unbounded}
    seen = [s for s in event.support_differences or [] if _fact(s) is None or _fact(s) not in said]
    lines = ["  outputs seen on one database only, in the certification runs: " + "; ".join(seen)] if seen else []
    lines += ["  unbounded: " + "; ".join(unbounded)] if unbounded else []
    # A relation's name ("(equal neighbours of y)") is the encoder's, not the function's: said in words where first met.
    return explain_symbols(lines, words=RELATION_WORDS)


def encoding_words(encoder) -> str:
    """How the encoder turned a function's structured outputs (a dict, a tuple, a set of keys) into numbers, in one
    line, from the names it gave their parts in this process; "" for outputs of numbers and arrays alone, or names
    encoded elsewhere (:meth:`mechanisms.outputs.encoding.OutputEncoder.names_in`)."""
    if encoder is None:
        return ""
    names = [name for bucket in range(encoder.width) for name in encoder.names_in(bucket)[0]]
    keyed = [n for n in names if n.endswith("}") and "{" in n and not n.startswith("(")]
    positions = [n for n in names if re.match(r"^y\.\d+", n)]
    if not keyed and not positions:
        return ""
    parts = []
    if keyed:
        shown = ", ".join(sorted(keyed)[:3]) + (", …" if len(keyed) > 3 else "")
        parts.append(f"a dict's values (a set's keys) by their keys ({shown}), so the order of the keys does not "
                     "matter, with the number of keys (y.len) and the differences of the values at neighbouring keys "
                     "in sorted key order")
    if positions:
        shown = ", ".join(sorted({re.match(r"^y\.\d+", n)[0] for n in positions})[:3])
        parts.append(f"a tuple's parts by position ({shown}, …)")
    return ("outputs: each part became a named number, " + "; ".join(parts) + "; the names are hashed into "
            f"{encoder.width} buckets, each holding the sum of its values and the count of its names "
            "(how-to/relations-and-outputs)")


#: The words the mechanism runner writes for a database of the audit's sample that its function raised on.
_AUDIT_SAMPLE = re.compile(r"\baudit sample (\d+)\b")


def _ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``42nd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def failing_input_step(message: str, function: str, seed) -> str:
    """What to do next, for an error naming the audit sample a user's ``function`` raised on: which database that
    is, how to draw it again and see it, and the two fixes; "" for any other error."""
    match = _AUDIT_SAMPLE.search(message)
    if not match:
        return ""
    index = int(match.group(1))
    return (f"; next: audit sample {index} is the {_ordinal(index + 1)} database the prior drew, and --seed {seed} "
            f"draws it again: print db in {function} just before the line that raised to see it, then make "
            f"{function} accept every database the prior can draw, or narrow the prior (--prior, --low, --high) to "
            "the inputs it is written for")


#: The start of the note a per-database function's audit carries
#: (:func:`mechanisms.adapters.recognition.per_database_mechanism`).
ENCODING_NOTE = "per-database function: each output is encoded as"


def note_words(note: str) -> str:
    """A note as a report shows it: the per-database function's encoding note says how each kind of output was
    turned into named numbers (:func:`mechanisms.outputs.encoding.output_features`); any other note as it is."""
    if not note.startswith(ENCODING_NOTE):
        return note
    return (f"{note}: a dict's values are named by their keys (y{{'count'}}), so the order of its keys does not "
            "matter, with the number of keys (y.len) and the differences of the values at neighbouring keys in sorted "
            "key order; a tuple's parts by position (y.0, y.1); an array's entries by index (y[0]), with its shape; "
            "each name is hashed to a bucket that sums its values and counts its names")


#: "the Pufferfish paper's Theorem 1": a result of the paper the code calls by its short name, in the possessive.
_POSSESSIVE = re.compile(r"\b(?:the )?Pufferfish paper's ((?:Theorem|Proposition|Definition|Lemma|Corollary|Remark|"
                         r"Section|Eq\.) [^\s,;:)]+)")


def cited_by_year(text: str, name: str | None = None) -> str:
    """``text`` with the Pufferfish paper (the code's short name) named by its authors and year, as the terminal's
    other lines name it: "the Pufferfish paper's <result>" reads "<result> of Nuradha and Goldfeld 2023", and
    "Pufferfish paper, <result>" reads "Nuradha and Goldfeld 2023, <result>". ``name``: another name for it (the
    reports' authors and title, :data:`audit.result.PUFFERFISH_PAPER`)."""
    if name is None:
        year = re.search(r"(\d{4})\s*$", PUFFERFISH.where)
        name = PUFFERFISH.authors + (f" {year.group(1)}" if year else "")
    return _POSSESSIVE.sub(lambda m: f"{m.group(1)} of {name}", str(text)).replace("Pufferfish paper", name)



def claim_test_form(name: str, detail: str) -> tuple:
    """(form, rest) of a claim test's ``detail`` whose test is called ``name``: a detail that starts with the name and
    its form in brackets (``"event test (rate-ratio certificate): ρ̲ = …"``, :mod:`audit.certificates.claim_tests`)
    gives ``("rate-ratio certificate", "ρ̲ = …")``, so that a line that names the test says its name once; the name
    met later in a detail reads "its" form. A name without a form (a Clopper–Pearson pair's ``"event test: certified
    p̲ = …"``) is left out too, so that the line does not read ``event test …: not refuted (event test: …)``.
    ``("", detail)`` for a detail that does not start with the name."""
    detail = re.sub(rf"; {re.escape(name)} \(([^()]*)\): ", r"; its \1: ", str(detail))
    detail = re.sub(rf"; {re.escape(name)}: ", "; ", detail)
    match = re.match(rf"^{re.escape(name)}(?: \(([^()]*)\))?: ", detail)
    return (match.group(1) or "", detail[match.end():]) if match else ("", detail)
