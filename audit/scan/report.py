"""A scan's report: findings first, then controls (with their bounds), then the skipped cases.

Each finding gets a folder ``findings/NN-name/`` a maintainer can act on without miaudit's help:

- ``first.npy``, ``second.npy``: the pair of databases;
- ``mechanism.py``: the entry point called as the scan called it (the same call source,
  :meth:`audit.scan.profiles.base.Family.call_source`), for the ``miaudit audit`` command that
  reproduces the audit (same claim, relation, α share, budget and seed);
- ``reproduce.py``: a standalone script (the library and NumPy only) that runs the call on both
  databases and prints the outputs seen under one input only and the threshold event on the
  release's first number whose frequencies differ most, with its log-ratio beside the claim's ε:
  direct simulation, not a certificate (the certificate is the audit's). For a finding the float-bit event test
  refuted, it also counts, on every bit of each number, the float events that test reads (the round trip
  (y − c) + c ≠ y, and the finest power of two y is a multiple of), which the threshold event cannot show.

``scan.md``, ``scan.html`` and ``scan.json`` hold the whole scan (:class:`audit.scan.running.ScanResult`).
"""

from __future__ import annotations

import json
import platform
import re
from pathlib import Path

import numpy as np

from estimators.result_forms import to_jsonable

from audit.scan.words import certified_bound

#: Runs per input of the standalone reproduction script.
REPRODUCE_RUNS = 20000

_SCRIPT = '''"""{entry}({settings}) is not {claim} ({relation} relation): a direct simulation.

Found by `miaudit scan {target}` ({library} {version}). Needs only the library and NumPy:
    pip install {install}numpy
Runs the call {runs} times on each database of the pair (first.npy, second.npy: {pair_why}) and
prints the outputs seen under one input only, and the threshold event on the release's first number
whose frequencies differ most. Under {claim} no event's frequencies may differ by more than a
factor e^ε (plus δ), up to sampling error.
"""

import collections
import math
import sys
from pathlib import Path

import numpy as np
{import_lines}

HERE = Path(__file__).resolve().parent
FIRST, SECOND = np.load(HERE / "first.npy"), np.load(HERE / "second.npy")
RUNS = {runs}
EPSILON = {epsilon!r}


def release(db, rng):
    return {source}


def numbers(output, digits=9):
    """The release as a tuple of numbers (rounded to ``digits`` decimals; None: every bit kept): a fitted model's
    public attributes (ending in _), else the values; a dict's values in the order of its sorted keys."""
    def rounded(values):
        return tuple(float(x) if digits is None else round(float(x), digits) for x in values)

    if isinstance(output, dict):  # released keys and their values (an OpenDP threshold release): the keys as its shape
        keys = sorted(output, key=repr)
        return rounded(output[k] for k in keys), tuple(repr(k) for k in keys)
    if hasattr(output, "__dict__") and not isinstance(output, np.ndarray):
        parts = [np.ravel(np.asarray(v, dtype=float)) for k, v in sorted(vars(output).items())
                 if k.endswith("_") and not k.startswith("_") and np.asarray(v).dtype.kind in "biuf"]
        return rounded(np.concatenate(parts or [np.zeros(0)])), tuple(len(p) for p in parts)
    values = np.ravel(np.asarray(output, dtype=float))
    return rounded(values), (len(values),)


def simulate(db, seed, digits=9):
    rng = np.random.default_rng(seed)
    return [numbers(release(db, rng), digits) for _ in range(RUNS)]


first, second = simulate(FIRST, 1), simulate(SECOND, 2)
for name, mine, other in (("first", first, second), ("second", second, first)):
    theirs = collections.Counter(other)
    only = collections.Counter(o for o in mine if o not in theirs)
    shapes = collections.Counter(s for _, s in mine) - collections.Counter(s for _, s in other)
    if shapes:
        print(f"shapes seen only on the {{name}} database: {{dict(shapes)}}")
    if only and len(only) < 0.5 * RUNS:
        value, count = only.most_common(1)[0]
        rare = sum(only.values()) < 0.01 * RUNS  # a noise's far tail: the other database's runs may just have missed it
        print(f"{{sum(only.values())}} of {{RUNS}} runs on the {{name}} database released outputs never seen on the "
              f"other; e.g. {{value[0][:6]}} ({{count}} times)" + ("; so few may be rare noise values the other "
              "database's runs happened to miss: the event below weighs the evidence" if rare else ""))
a = np.array([o[0][0] if o[0] else math.nan for o in first])
b = np.array([o[0][0] if o[0] else math.nan for o in second])
best = (0.0, None, 0, 0)
for t in np.unique(np.quantile(np.r_[a, b][np.isfinite(np.r_[a, b])], np.linspace(0.01, 0.99, 99))):
    for side, ka, kb in (("<=", np.sum(a <= t), np.sum(b <= t)), (">", np.sum(a > t), np.sum(b > t))):
        ratio = abs(math.log(max(ka, 1) / max(kb, 1)))  # a count of 0 read as 1: the ratio is understated
        if ratio > best[0]:
            best = (ratio, f"{{side}} {{t:.6g}}", ka, kb)
if best[1] is not None:
    print(f"event 'first number {{best[1]}}': {{best[2]}} of {{RUNS}} runs on the first database, {{best[3]}} on the "
          f"second; log-ratio {{best[0]:.3f}} against the claim's epsilon {{EPSILON}}")
'''


#: The script's simulation line, and what replaces it for a case whose raises are outputs (:mod:`audit.scan.raised`):
#: a raise's category is its own output, and the script counts each database's raises.
_SIMULATED = "first, second = simulate(FIRST, 1), simulate(SECOND, 2)\n"
_RAISED_SIMULATED = '''_numbers = numbers


def numbers(output, digits=9):
    """A raised call's category ('raised: <type>: <message>') as an output of its own, else the numbers."""
    return ((), (output,)) if isinstance(output, str) else _numbers(output, digits)


first, second = simulate(FIRST, 1), simulate(SECOND, 2)
for name, outputs in (("first", first), ("second", second)):
    raised = collections.Counter(s[0] for _, s in outputs if s and isinstance(s[0], str))
    print(f"the call raised on {sum(raised.values())} of {RUNS} runs on the {name} database: {dict(raised)}")
'''


#: For a finding the float-bit event test refuted (Mironov 2012): the same runs with every bit kept, rounded as the
#: other scripts round them, and, at its end, :data:`_FLOAT_EVENTS`.
_FLOAT_SIMULATED = '''raw_first, raw_second = simulate(FIRST, 1, digits=None), simulate(SECOND, 2, digits=None)
first, second = ([(tuple(round(x, 9) for x in values), shape) for values, shape in raw]
                 for raw in (raw_first, raw_second))
'''
#: The float-bit events the finding's test reads, on each number of the release (Mironov 2012, Section 3): whether y
#: survives the round trip (y - c) + c in float64, c the two databases' median difference rounded to a power of two
#: (audit.statistics.float_bits' neighbour-grid residue), and the finest power of two y is a multiple of (its grid
#: exponent). A log-ratio far above ε where the threshold event above shows none: the float implementation leaks.
_FLOAT_EVENTS = '''

def grid_exponent(values):
    """The largest k with each value a multiple of 2^k (the lowest set bit of its significand); 0 for 0."""
    mantissa, exponent = np.frexp(values)
    significand = np.abs(mantissa * 2.0 ** 53).astype(np.int64)
    lowest = np.log2((significand & -significand).astype(float), where=significand > 0,
                     out=np.zeros(len(values)))
    return np.where(significand > 0, exponent - 53 + lowest, 0.0)


print("the finding's event reads the output's floating-point bits, which the threshold event above does not:")
width = min(min(len(v) for v, _ in raw_first + raw_second), 8)
for column in range(width):
    x = np.array([v[column] for v, _ in raw_first])
    z = np.array([v[column] for v, _ in raw_second])
    shift = float(np.median(z) - np.median(x))
    c = math.copysign(2.0 ** round(math.log2(abs(shift))), shift) if shift and math.isfinite(shift) else 1.0
    off = (np.sum((x - c) + c != x), np.sum((z - c) + c != z))
    events = [(f"(y - c) + c != y, c = {c:g}", *off)]
    gx, gz = grid_exponent(x), grid_exponent(z)
    for k in np.unique(np.r_[gx, gz])[:200]:
        events += [(f"y a multiple of 2^{k:g} and of no larger power", np.sum(gx == k), np.sum(gz == k)),
                   (f"y a multiple of no power of two above 2^{k:g}", np.sum(gx <= k), np.sum(gz <= k))]
    events = events[:1] + [e for e in events[1:] if e[1] + e[2] >= 20]  # a grid event seen in a few runs is noise
    name, ka, kb = max(events, key=lambda e: abs(math.log(max(e[1], 1) / max(e[2], 1))))
    keys = raw_first[0][1]  # a dict's keys (their reprs), else the release's length
    label = f"value {keys[column]}" if all(isinstance(k, str) for k in keys) else f"number {column}"
    print(f"{label}: event '{name}': {ka} of {RUNS} runs on the first database, {kb} on the second; "
          f"log-ratio {abs(math.log(max(ka, 1) / max(kb, 1))):.3f} (a count of 0 read as 1) against the claim's "
          f"epsilon {EPSILON}")
'''


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60]


def _import_lines(outcome: dict) -> str:
    lines = []
    if outcome.get("import_root"):
        lines.append(f"sys.path.insert(0, {outcome['import_root']!r})  # where the scanned module was imported from")
    lines.append(f"from {outcome['module']} import {outcome['name']} as entry")
    if outcome.get("preamble"):
        lines.append(outcome["preamble"])
    if outcome.get("setup"):  # built once, as the scan built it (an OpenDP measurement)
        lines.append(f"\nmeasurement = {outcome['setup']}")
    return "\n".join(lines)


def reproduce_command(outcome: dict, max_runs: int) -> str:
    """The ``miaudit audit`` command that audits the finding's case again (run in its folder), within the case's own
    budget (its family's, where it has one) or ``max_runs``."""
    return (f"miaudit audit --mechanism mechanism.py:mechanism --per-database --pair first.npy,second.npy "
            f"--claim {outcome['claim']} --relation {outcome['relation']} "
            f"--max-runs {outcome.get('max_runs', max_runs)} "
            f"--alpha {outcome['alpha']:.6g} --seed {outcome['seed']}")


def finding_files(outcome: dict, result) -> dict:
    """{file name: bytes} of one finding's folder (module docstring)."""
    import io

    def npy(values) -> bytes:
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(values, dtype=np.float64))
        return buffer.getvalue()

    imports = _import_lines(outcome)
    mechanism = (f'"""{outcome["entry"]}({outcome["settings"]}) as miaudit scan called it."""\n\nimport sys\n\n'
                 f"import numpy as np\n{imports}\n\n\ndef mechanism(db, rng):\n    return {outcome['source']}\n")
    epsilon = float(outcome["claim"].split(":")[1])
    script = _SCRIPT.format(entry=outcome["entry"], settings=outcome["settings"], claim=outcome["claim"],
                            relation=outcome["relation"], target=result.target, library=result.target,
                            version=result.version, install=f"{result.target} " if result.version[0].isdigit() else "",
                            runs=REPRODUCE_RUNS, pair_why=outcome["pair_why"], import_lines=imports,
                            source=outcome["source"], epsilon=epsilon)
    if outcome.get("raised_as_output"):  # its releases include raises' categories (audit.scan.raised)
        script = script.replace(_SIMULATED, _RAISED_SIMULATED)
    elif outcome.get("refuting_test") == "float":  # its event reads the bits that the rounded numbers drop
        script = script.replace(_SIMULATED, _FLOAT_SIMULATED) + _FLOAT_EVENTS
    return {"first.npy": npy(outcome["first"]), "second.npy": npy(outcome["second"]),
            "mechanism.py": mechanism.encode(), "reproduce.py": script.encode()}


def _counts(outcome: dict) -> str:
    if "hits" not in outcome:
        return "—"
    (h1, h2), (n1, n2) = outcome["hits"], outcome["runs_per_input"]
    return f"{h1}/{n1} vs {h2}/{n2}"


def _refuting(outcome: dict) -> str:
    """" of the <test>, <bound> at α = <its share> (of the case's α = …)" for a finding that names the test that
    refuted it (:func:`audit.scan.case_audit.refuting_test`), else ", <bound> at α = <the case's α>"."""
    from audit.scan.case_audit import TEST_NAMES

    test, share, alpha = outcome.get("refuting_test"), outcome.get("refuting_alpha"), outcome["alpha"]
    if test is None or share is None:
        return f", {certified_bound(outcome)} at α = {alpha:.3g}"
    return f" of the {TEST_NAMES[test]}, {certified_bound(outcome)} at α = {share:.3g} (its share of the case's α = {alpha:.3g})"


def _finding_items(outcome: dict, folder: str, max_runs: int) -> list:
    """The finding's items: its pair, event and counts (in this order), the test that refuted it with its symbols in
    words, what it means and its fix, the outputs seen on one database only, its notes and its reproductions."""
    from audit.scan.words import counts_words, event_item, meaning, outputs_items, pair_item, symbol_items

    items = [pair_item(outcome), event_item(outcome),
             f"counts {_counts(outcome)}{counts_words(outcome)}; certificate {outcome.get('certificate', '—')}"
             f"{_refuting(outcome)}; {outcome['looks']} of {outcome['looks_planned']} looks, {outcome['runs']} runs"]
    items += symbol_items([f"refuted by: {d}" for d in outcome.get("refuted_by", [])])
    items += [words for words in (meaning(outcome),) if words]
    items += outputs_items(outcome)
    items += [f"note: {n}" for n in outcome.get("notes", [])]
    items += [f"reproduce in {folder}: {reproduce_command(outcome, max_runs)}",
              f"without miaudit, in {folder}: python reproduce.py"]
    return items


def report_blocks(result, folders: dict) -> list:
    """The report as blocks (kind, content) both renderers read: ``h1``, ``h2``, ``h3``, ``p``, ``table``
    (a :class:`~audit.report.content.TextTable`), ``ul`` (a list of items); findings, controls, skipped."""
    from audit.report.content import TextTable
    from audit.scan.words import alpha_words, cost_words, skipped_items, verdict_words

    settings = result.settings
    own = ", ".join(f"{name}: {runs}" for name, runs in sorted(settings.get("entry_max_runs", {}).items()))
    runs = f"{settings['max_runs']} runs" + (f" ({own}: its family's own budget)" if own else "")
    blocks = [("h1", f"miaudit scan {result.target}"),
              ("p", f"{result.target} {result.version}; {result.cases} cases in {result.seconds:.0f} s on "
                    f"{platform.machine()}, Python {platform.python_version()}; per case at most {runs} "
                    f"and {settings['timeout']:g} s; ε grid {', '.join(f'{e:g}' for e in settings['epsilons'])}; "
                    f"seed {settings['seed']}."),
              ("p", result.statement()),
              ("p", alpha_words(result)),
              ("p", f"{_sentence(verdict_words(result))} {_sentence(cost_words(result)) + ' ' if result.cases else ''}A claim is written "
                    "as --claim takes it: dp:1.0 is 1-DP, dp:1.0:1e-05 is (1, 1e-05)-DP; replace-one: the two "
                    "databases differ in one record's value."),
              ("h2", f"Findings ({len(result.findings)})")]
    if result.findings:
        blocks.append(("table", TextTable("Findings", ("entry point", "parameters", "pair", "claim", "event counts",
                                                       "certified", "runs", "folder"),
                                          [[o["entry"], o["settings"], o["pair"], f"{o['claim']} ({o['relation']})",
                                            _counts(o), certified_bound(o), str(o["runs"]), folders.get(o["id"], "")]
                                           for o in result.findings])))
        for o in result.findings:
            blocks += [("h3", f"{o['entry']}({o['settings']}) on the {o['pair']} pair"),
                       ("ul", _finding_items(o, folders.get(o["id"], ""), settings["max_runs"]))]
    else:
        blocks.append(("p", "None."))
    blocks.append(("h2", f"Controls: not refuted ({len(result.controls)})"))
    if result.controls:
        blocks.append(("p", "Not refuted within each case's runs, which proves no privacy: a bug too small for these "
                            "runs to show can hide here. certified: the ε its event test certifies on its counts "
                            "(ε ≥ 0: the counts show no difference between the databases)."))
    blocks.append(("table", TextTable("Controls", ("entry point", "parameters", "pair", "claim", "event counts",
                                                   "certified", "runs"),
                                      [[o["entry"], o["settings"], o["pair"], o["claim"], _counts(o), certified_bound(o),
                                        str(o["runs"])] for o in result.controls]))
                  if result.controls else ("p", "None."))
    skipped = skipped_items(result)  # the cases of one entry point skipped for one reason in one row
    blocks.append(("h2", f"Skipped ({len(result.skipped_cases) + len(result.skipped)})"))
    blocks.append(("ul", skipped) if skipped else ("p", "None."))
    return [block for block in blocks if block != ("p", "")]


def _sentence(words: str) -> str:
    return words[:1].upper() + words[1:] + "."


def render_markdown(blocks: list) -> str:
    """The report's Markdown: user text escaped (:func:`audit.report.markdown.escape`)."""
    from audit.report.markdown import escape, list_item, markdown_table

    heads = {"h1": "# ", "h2": "## ", "h3": "### "}
    parts = []
    for kind, content in blocks:
        if kind in heads:
            parts.append(heads[kind] + escape(content))
        elif kind == "p":
            parts.append(escape(content))
        elif kind == "table":
            parts.append(markdown_table(content))
        else:
            parts.append("\n".join(list_item(item) for item in content))
    return "\n\n".join(parts) + "\n"


def render_html(blocks: list, title: str) -> str:
    """The report's self-contained HTML (:mod:`audit.report.html`'s style and escaping)."""
    from audit.report.html import STYLE, escape, html_table

    body = []
    for kind, content in blocks:
        if kind in ("h1", "h2", "h3", "p"):
            body.append(f"<{kind}>{escape(content)}</{kind}>")
        elif kind == "table":
            body.append(html_table(content, caption=False))
        else:
            body.append("<ul>" + "".join(f"<li>{escape(item)}</li>" for item in content) + "</ul>")
    return "\n".join(["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
                      f"<title>{escape(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>", *body,
                      "</body>", "</html>", ""])


def write_scan_report(result, out_dir) -> dict:
    """Write ``scan.md``, ``scan.html``, ``scan.json`` and one folder per finding under ``out_dir``; {kind: path}."""
    from audit.report.writing import write_file_set

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    folders = {}
    for number, outcome in enumerate(result.findings, start=1):
        folder = out / "findings" / f"{number:02d}-{_slug(outcome['entry'].rsplit('.', 1)[-1] + '-' + outcome['pair'])}"
        folder.mkdir(parents=True, exist_ok=True)
        write_file_set({folder / name: data for name, data in finding_files(outcome, result).items()},
                       flag="--out")
        folders[outcome["id"]] = str(folder.relative_to(out))
    payload = {"target": result.target, "version": result.version, "alpha": result.alpha, "cases": result.cases,
               "statement": result.statement(), "settings": result.settings, "seconds": result.seconds,
               "findings": [dict(o, folder=folders[o["id"]], reproduce=reproduce_command(o, result.settings["max_runs"]))
                            for o in result.findings],
               "controls": result.controls, "skipped": result.skipped_cases + result.skipped}
    paths = {"markdown": out / "scan.md", "html": out / "scan.html", "json": out / "scan.json"}
    blocks = report_blocks(result, folders)
    write_file_set({paths["markdown"]: render_markdown(blocks).encode(),
                    paths["html"]: render_html(blocks, f"miaudit scan {result.target}").encode(),
                    paths["json"]: json.dumps(to_jsonable(payload), indent=1).encode()}, flag="--out")
    return {**paths, "findings": [out / f for f in folders.values()]}
