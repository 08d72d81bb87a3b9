"""The reference pages list every configuration key, every claim form and every JSON key."""

import dataclasses
import json
import re
from pathlib import Path

from docs_examples import DOCS

from audit.config.keys import KEYS
from audit.config.reference import END, START, keys_table, with_table
from audit.result import JSON_SCHEMA_VERSION, AuditResult
from mechanisms.claims.claim import CLAIM_SYNTAX

import pytest


def test_configuration_page_holds_the_current_table_of_keys():
    text = (DOCS / "reference" / "configuration.md").read_text()
    assert with_table(text, keys_table()) == text, "run: python -m audit.config.reference docs/reference/configuration.md"
    table = text.split(START)[1].split(END)[0]
    for key in KEYS:
        assert f"`[{key.table}] {key.name}`" in table


def test_every_critic_key_is_described_with_its_default():
    # The [critic] keys come from CriticConfig's fields; each row says what the field sets and its default.
    from estimators.neural import CriticConfig

    rows = {line.split("|")[1].strip(): line.split("|")[5].strip()
            for line in keys_table().splitlines() if line.startswith("| `[critic] ")}
    assert set(rows) == {f"`[critic] {f.name}`" for f in dataclasses.fields(CriticConfig)}
    for field in dataclasses.fields(CriticConfig):
        meaning = rows[f"`[critic] {field.name}`"]
        default = field.default
        shown = (": no projection" if default is None else
                 " [" + ", ".join(f"{v:g}" for v in default) + "]" if isinstance(default, tuple) else
                 f" '{default}'" if isinstance(default, str) else f" {default:g}")
        assert len(meaning) > 20 and f"(default{shown})" in meaning, (field.name, meaning)
    assert "cyclic shifts" in rows["`[critic] eval_shifts`"]


def test_keys_table_rows():
    from audit.config.schema import Key

    table = keys_table([Key("audit", "alpha", "number", above=0, below=1, flag="--alpha", help="a | b"),
                        Key("audit", "notion", "choice", choices=("mi-dp", "mi-pp"), notions=("mi-pp",))])
    assert table.splitlines()[2] == "| `[audit] alpha` | number (> 0, < 1) | `--alpha` | every notion | a \\| b |"
    assert table.splitlines()[3] == "| `[audit] notion` | `mi-dp` \\| `mi-pp` |  | mi-pp |  |"
    with pytest.raises(ValueError, match="markers"):
        with_table("no markers", table)


def test_claim_grammar_page_lists_every_form():
    text = (DOCS / "reference" / "claims.md").read_text()
    forms = re.split(r", | or ", CLAIM_SYNTAX)
    assert len(forms) == 8
    for form in forms:
        assert f"| `{form}` |" in text, form


def _page_tables(text: str) -> dict:
    """The key tables of a reference page: each section's heading (its text, and each `code` name in it) ->
    {key: its row}. A row's first cell may name several keys (`` `p_first`, `p_second` ``)."""
    tables, names = {}, []
    for line in text.splitlines():
        heading = re.match(r"^#{2,3} (.*)$", line)
        if heading:
            names = [heading.group(1), *re.findall(r"`([^`]+)`", heading.group(1))]
            continue
        row = re.match(r"^\| ((?:`[A-Za-z0-9_]+`(?:, )?)+) \|(.*)$", line)
        if row and names:
            for key in re.findall(r"`([A-Za-z0-9_]+)`", row.group(1)):
                for name in names:
                    tables.setdefault(name, {})[key] = line
    return tables


def test_json_page_documents_every_key_and_the_version():
    text = (DOCS / "reference" / "json-output.md").read_text()
    documented = set(_page_tables(text)["Keys"])
    fields = {f.name for f in dataclasses.fields(AuditResult)} - {"theta_statement"}
    produced = fields | {"theta", "refuted_by", "statement", "schema_version"}
    assert documented == produced
    assert set(AuditResult._JSON_ORDER) <= produced
    assert f"(now **{JSON_SCHEMA_VERSION}**)" in text


def _flags(parser) -> set:
    """Every option string of an argparse parser."""
    return {option for action in parser._actions for option in action.option_strings}  # noqa: SLF001


def test_json_page_says_an_audit_reports_nats_and_where_bits_exist():
    # The page says an audit's `unit` is always "nats" (nothing in an audit asks for bits) and names where bits
    # exist; each half is checked on the parsers, the spec and the configuration keys it speaks of.
    from audit.cli.flag_reference import _sub_commands
    from audit.cli.main import build_parser
    from audit.spec import AuditSpec
    from estimators.results import MIEstimate

    text = " ".join((DOCS / "reference" / "json-output.md").read_text().split())
    assert 'audit always sets to `"nats"`' in text and "no option for bits" in text
    commands = _sub_commands(build_parser()[0])
    assert "--bits" not in _flags(commands["audit"])
    assert not any(word in f.name for f in dataclasses.fields(AuditSpec) for word in ("unit", "bits"))
    assert not any(word in key.name for key in KEYS for word in ("unit", "bits"))
    assert AuditResult.__dataclass_fields__["unit"].default == "nats"
    assert "`miaudit estimate --bits`" in text and "--bits" in _flags(commands["estimate"])
    bounds = _sub_commands(commands["bounds"])
    assert "`miaudit bounds NAME --bits`" in text and bounds and all("--bits" in _flags(p) for p in bounds.values())
    assert '`MIEstimate.to("bits")`' in text and callable(MIEstimate.to)


#: Objects whose keys are data (names the audit or the estimator chose), not keys of the contract: key -> (the
#: section of the page whose row describes it, the words that row says so in).
_FREE_FORM = {"training_history": ("Keys", "not part of this contract"),
              "details": ("MIEstimate", "not part of this contract")}

#: The golden cases the page describes: case -> the section whose table holds the document's top-level keys.
_DOCUMENTED = {
    "audit_result": "Keys", "neighbouring_pair": "A neighbouring pair",
    "mi_estimate": "MIEstimate", "mi_estimate_details": "MIEstimate",
    "calibration": "Calibration", "calibration_laplace": "Calibration",
    "composition": "CompositionBound", "composition_inf": "CompositionBound",
    "mipp_to_pp": "MIPPToPP", "utility_bounds": "UtilityBounds", "kernel_leakage": "KernelLeakage",
    "gaussian_capacity": "GaussianCapacity", "leakage_geometry": "LeakageGeometry", "lip_bounds": "LIPBounds",
    "mixture_optimum": "MixtureOptimum", "mixture_approximate": "MixtureOptimum", "lip_design": "LIPDesign",
    "mean_estimate": "MeanEstimate", "minimax_risk": "MinimaxRiskBound", "kl_pp_levels": "KLPPLevels",
    "density_constants": "DensityConstants", "mi_budget": "MIBudget", "mi_budget_none": "MIBudget",
    "event_check": "EventCheck",
}

#: The golden cases the page leaves out, each with why (none now: every case is a public result's ``to_dict()``).
_UNDOCUMENTED: dict = {}


def _key_paths(value, parent=()):
    """Every key path of a JSON document, as (parent path, key); a list's items share the list's path."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield parent, key
            yield from _key_paths(child, (*parent, key))
    elif isinstance(value, list):
        for child in value:
            yield from _key_paths(child, parent)


def _description(tables: dict, top: str, parent: tuple, key: str) -> str | None:
    """The row of the page that describes ``key`` at ``parent``: the key's own row in the table of its parent's
    section (top level: the ``top`` section), or else a mention of `key` in its parent's own description."""
    if not parent:
        return tables.get(top, {}).get(key)
    if parent[-1] in tables:
        return tables[parent[-1]].get(key)
    row = _description(tables, top, parent[:-1], parent[-1])
    return row if row is not None and f"`{key}`" in row else None


def _golden_file() -> dict:
    """The golden file (tests/serialisation_cases.py writes it): case name -> its JSON text."""
    return json.loads((Path(__file__).parent / "data" / "serialisation_golden.json").read_text(encoding="utf-8"))


def _golden(name: str) -> dict:
    """The JSON document of case ``name`` of the golden file."""
    return json.loads(_golden_file()[name])


def _undescribed(text: str, document: dict, top: str, free_form=tuple(_FREE_FORM)) -> list:
    """The key paths (``parent.key``) of ``document`` that the page ``text`` does not describe, in order; its
    top-level keys are looked for in the section headed ``top``; the keys inside the ``free_form`` objects are
    not looked for."""
    tables = _page_tables(text)
    missing = []
    for parent, key in dict.fromkeys(_key_paths(document)):
        if parent and parent[0] in free_form:
            continue
        row = _description(tables, top, parent, key)
        # A description says something: more than the key's name in the row's last cell.
        if row is None or len(row.rsplit("|", 2)[1].strip()) < 20:
            missing.append(".".join((*parent, key)))
    return missing


def test_json_page_describes_every_key_path_of_the_golden_documents():
    # The golden file (tests/serialisation_cases.py) pins the audit document and a neighbouring pair's form whole:
    # each of their keys, at every depth, must be described on the page (a row of its object's table, or a
    # mention in its parent's row), so that a key added to the contract fails here until the page says it.
    text = (DOCS / "reference" / "json-output.md").read_text()
    audit_document, pair = _golden("audit_result"), _golden("neighbouring_pair")
    assert len(list(_key_paths(audit_document))) > 90
    assert _undescribed(text, audit_document, "Keys") == []
    assert _undescribed(text, pair, "A neighbouring pair") == []
    tables = _page_tables(text)
    for key, (section, words) in _FREE_FORM.items():
        assert words in tables[section][key], key


def test_every_golden_case_is_documented_or_listed_with_why():
    names = list(_golden_file())
    assert len(names) > 20
    assert not set(_DOCUMENTED) & set(_UNDOCUMENTED)
    assert set(_DOCUMENTED) | set(_UNDOCUMENTED) == set(names)
    assert all(len(why) > 20 for why in _UNDOCUMENTED.values())


@pytest.mark.parametrize("name", [name for name in _DOCUMENTED if name not in ("audit_result", "neighbouring_pair")])
def test_json_page_describes_every_key_path_of_the_other_golden_results(name):
    # Each result a command prints with --json, or a public to_dict() returns, has its section on the page: every
    # key of its golden document must have a row there (a key added to the result fails here until described).
    text = (DOCS / "reference" / "json-output.md").read_text()
    assert _DOCUMENTED[name] in _page_tables(text), _DOCUMENTED[name]
    assert _undescribed(text, _golden(name), _DOCUMENTED[name]) == []


@pytest.mark.train
def test_json_page_describes_every_key_an_estimate_writes_in_details():
    # `details` holds the estimator's keys, not the contract's (the golden case's are made up), so the golden test
    # leaves them out; the keys estimate_mi really writes, at every depth, are each described in its table, and
    # every row of that table is a key some estimator writes.
    import numpy as np

    from conftest import SMALL_CRITIC
    from estimators.estimate import estimate_mi
    from estimators.neural import CriticConfig

    text = (DOCS / "reference" / "json-output.md").read_text()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y, z = x + rng.normal(size=(400, 2)), x[:, :1] + rng.normal(size=(400, 1))
    chunked = CriticConfig(max_steps=20, max_critics_per_chunk=1)  # two slices' critics in two chunks
    runs = [dict(estimator="ksg"), dict(estimator="gaussian", sliced=True, slices=2),
            dict(estimator="dv", critic=SMALL_CRITIC), dict(estimator="nwj", sliced=True, slices=2, critic=chunked),
            dict(estimator="mine", z=z, conditional="chain", critic=SMALL_CRITIC)]
    written = set()
    for run in runs:
        document = {"details": estimate_mi(x, y, quiet=True, **run).to_dict(include_details=True)["details"]}
        assert _undescribed(text, document, "MIEstimate", free_form=()) == [], run
        written |= {key for parent, key in _key_paths(document) if parent == ("details",)}
    assert written == set(_page_tables(text)["details"])


def test_a_removed_description_is_caught():
    text = (DOCS / "reference" / "json-output.md").read_text()
    document = _golden("audit_result")
    row = next(line for line in text.splitlines() if line.startswith("| `pairs_considered` |"))
    assert _undescribed(text.replace(row + "\n", ""), document, "Keys") == ["event_test.pairs_considered"]
    emptied = text.replace(row, "| `pairs_considered` | a count |")
    assert _undescribed(emptied, document, "Keys") == ["event_test.pairs_considered"]
    # A key described by a mention in its parent's row: the mention removed, the key is undescribed.
    assert _undescribed(text.replace("keyed by test (`mi`, `event`,", "keyed by test (mi, event,"), document,
                        "Keys") == ["claim_alpha.mi", "claim_alpha.event"]
    assert _undescribed(text, {"event_test": {"no_such_key": 1}, "per_record": [{"other": 2}]}, "Keys") == [
        "event_test.no_such_key", "per_record.other"]


def test_a_removed_mention_inside_details_is_caught():
    text = (DOCS / "reference" / "json-output.md").read_text()
    document = {"details": {"critic": {"eval_shifts": 4}, "history": {"chunks": [{"steps": [1]}]}}}
    assert _undescribed(text, document, "MIEstimate", free_form=()) == []
    cut = text.replace("and `eval_shifts` (the", "and eval_shifts (the")
    cut = cut.replace("`chunks`: one such", "chunks: one such")
    assert _undescribed(cut, document, "MIEstimate", free_form=()) == [
        "details.critic.eval_shifts", "details.history.chunks", "details.history.chunks.steps"]
    assert _undescribed(cut, document, "MIEstimate") == []  # the golden test's view: details is the estimator's


def test_a_removed_description_of_another_result_is_caught():
    text = (DOCS / "reference" / "json-output.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `P1_lower` |"))
    assert _undescribed(text.replace(row + "\n", ""), _golden("lip_bounds"), "LIPBounds") == ["P1_lower"]
    shared = next(line for line in text.splitlines() if line.startswith("| `c1`, `c2` |"))
    assert _undescribed(text.replace(shared + "\n", ""), _golden("leakage_geometry"), "LeakageGeometry") == [
        "c1", "c2"]


#: Commands that print a documented result (or most of it) with --json: (their argv, with files written by the
#: test, the section of the page that describes the result). Every key they print must have a row in it.
_PRINTING_COMMANDS = [
    (["estimate", "--x", "{x}", "--y", "{y}", "--estimator", "ksg", "--sliced", "--slices", "3", "--slice-dim", "1"],
     "MIEstimate"),
    (["calibrate", "gaussian", "--notion", "mi-dp", "--epsilon", "0.5", "--l2-sensitivity", "1", "--dim", "3"],
     "Calibration"),
    (["bounds", "composition", "--mi-epsilons", "0.1,0.2", "--method", "non-adaptive", "--output-supports", "4,4"],
     "CompositionBound"),
    (["bounds", "mipp-to-pp", "--mi", "0.2", "--epsilon-prime", "0.1"], "MIPPToPP"),
    (["bounds", "utility", "--mi-epsilon", "0.3", "--h-f-given-g", "0.1", "--h-g-given-f", "0.2", "--h-g", "0.6"],
     "UtilityBounds"),
    (["bounds", "pml-kernel", "--kernel", "{kernel}", "--c", "0.2"], "KernelLeakage"),
    (["bounds", "gaussian-lmip-ci", "--sigma", "1", "--amplitude", "1", "--bits"], "GaussianCapacity"),
    (["bounds", "lip-design", "--pxgy", "{pxgy}", "--py", "{py}", "--epsilon", "0.1"], "miaudit bounds lip-design"),
    # The calculators that build their own JSON (no result object): each section is headed by the command.
    (["bounds", "pp-to-mipp", "--epsilon", "0.5"], "miaudit bounds pp-to-mipp"),
    (["bounds", "approx-pp-to-mipp", "--epsilon", "0.5", "--delta", "0.01", "--support", "4"],
     "miaudit bounds approx-pp-to-mipp"),
    (["bounds", "approx-pp-to-mipp", "--epsilon", "0.5", "--delta", "0.01", "--u", "2,3", "--ell", "1,1"],
     "miaudit bounds approx-pp-to-mipp"),
    (["bounds", "dp-epsilon-from-mi", "--mi", "0.1"], "miaudit bounds dp-epsilon-from-mi"),
    (["bounds", "bac-capacity", "--p0", "0.1", "--p1", "0.2"], "miaudit bounds bac-capacity"),
    (["bounds", "ldp-from-lmip", "--mu", "0.1", "--epsilon", "1"], "miaudit bounds ldp-from-lmip"),
    (["bounds", "ldp-floor", "--mu", "0.1"], "miaudit bounds ldp-floor"),
    (["bounds", "lip-from-lmip", "--mu", "0.1", "--epsilon", "1"], "miaudit bounds lip-from-lmip"),
    (["bounds", "lip-floor", "--mu", "0.1", "--bits"], "miaudit bounds lip-floor"),
    (["bounds", "lmip-from-ldp", "--pure-epsilon", "1"], "miaudit bounds lmip-from-ldp"),
    (["bounds", "lmip-from-ldp", "--gaussian-sigma", "2", "--sensitivity", "1"], "miaudit bounds lmip-from-ldp"),
    (["bounds", "lmip-from-ldp", "--laplace-scale", "2", "--sensitivity", "1"], "miaudit bounds lmip-from-ldp"),
    (["bounds", "lmip-from-lip", "--sigma", "1", "--support", "0,1", "--pmf", "0.5,0.5"],
     "miaudit bounds lmip-from-lip"),
    (["bounds", "gaussian-lmip-cd", "--sigma", "1", "--support", "0,1", "--pmf", "0.5,0.5"],
     "miaudit bounds gaussian-lmip-cd"),
    (["bounds", "gaussian-ldp", "--sigma", "2", "--sensitivity", "1", "--epsilon", "1"], "miaudit bounds gaussian-ldp"),
    (["bounds", "gaussian-lip", "--sigma", "1", "--support", "0,1", "--pmf", "0.5,0.5", "--epsilon", "1"],
     "miaudit bounds gaussian-lip"),
    (["bounds", "pml-dobrushin", "--epsilon", "1", "--c", "0.1", "--n", "3"], "miaudit bounds pml-dobrushin"),
    (["bounds", "pml-kl", "--epsilon", "1", "--c", "0.1", "--n", "3", "--tv", "0.2"], "miaudit bounds pml-kl"),
    (["bounds", "pml-hellinger", "--epsilon", "1", "--c", "0.1", "--n", "3", "--tv", "0.2", "--bits"],
     "miaudit bounds pml-hellinger"),
]


def test_every_bounds_calculator_is_run_with_json():
    from audit.cli.bounds_calculators import calculators

    assert {argv[1] for argv, _ in _PRINTING_COMMANDS if argv[0] == "bounds"} == set(calculators())


@pytest.mark.parametrize("argv, section", _PRINTING_COMMANDS, ids=[a[a[0] == "bounds"] for a, _ in _PRINTING_COMMANDS])
def test_every_key_a_command_prints_is_described(argv, section, tmp_path, capsys):
    import numpy as np

    from audit.cli.main import main

    files = {"kernel": np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]]), "pxgy": np.array([[0.8, 0.3], [0.2, 0.7]]),
             "py": np.array([0.4, 0.6]), "x": np.arange(40.0).reshape(20, 2) % 7,
             "y": np.arange(40.0).reshape(20, 2) % 5}
    for name, array in files.items():
        np.save(tmp_path / f"{name}.npy", array)
    paths = {name: str(tmp_path / f"{name}.npy") for name in files}
    assert main([arg.format(**paths) for arg in argv] + ["--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    text = (DOCS / "reference" / "json-output.md").read_text()
    assert section in _page_tables(text)
    # Every key path, at every depth (`parent.key`; a list's items share the list's path), has a row that says
    # something, as for the golden documents: an object a command nests in its output is described key by key.
    assert _undescribed(text, printed, section) == []


def test_a_nested_key_a_command_prints_undescribed_is_caught():
    text = (DOCS / "reference" / "json-output.md").read_text()
    section = "miaudit bounds lip-design"
    assert _undescribed(text, {"sigma_max": 1.0, "optimum": 0.1}, section) == []
    # An object nested in the output, and objects inside a documented list: each key named by its path.
    assert _undescribed(text, {"sigma_max": 1.0, "fit": {"steps": 3, "curve": {"last": 0.5}}}, section) == [
        "fit", "fit.steps", "fit.curve", "fit.curve.last"]
    assert _undescribed(text, {"px": [{"mass": 0.4}, {"mass": 0.6}]}, section) == ["px.mass"]
    # A key that its parent's row mentions is described by the mention.
    row = _page_tables(text)[section]["optimum_method"]
    assert "`method`" in row and _undescribed(text, {"optimum_method": {"method": "vertex"}}, section) == []


@pytest.mark.parametrize("argv, section", [(a, s) for a, s in _PRINTING_COMMANDS if a[0] == "bounds"],
                         ids=[a[1] for a, _ in _PRINTING_COMMANDS if a[0] == "bounds"])
def test_every_bounds_calculator_prints_its_unit_or_refuses_bits(argv, section, tmp_path, capsys):
    # A calculator that reads or prints an information value says its unit (`unit`, described on the page) and
    # gives it in bits with --bits; one that reads and prints none (its no_information says why) prints no `unit`
    # and refuses --bits, which would convert nothing.
    import numpy as np

    from audit.cli.bounds_calculators import calculators
    from audit.cli.main import main

    files = {"kernel": np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]]), "pxgy": np.array([[0.8, 0.3], [0.2, 0.7]]),
             "py": np.array([0.4, 0.6])}
    for name, array in files.items():
        np.save(tmp_path / f"{name}.npy", array)
    argv = [arg.format(**{name: str(tmp_path / f"{name}.npy") for name in files}) for arg in argv if arg != "--bits"]
    calc = calculators()[argv[1]]
    assert main(argv + ["--json"]) == 0
    nats = json.loads(capsys.readouterr().out)
    rows = _page_tables((DOCS / "reference" / "json-output.md").read_text())[section]
    status = main(argv + ["--json", "--bits"])
    out, err = capsys.readouterr()
    if calc.no_information:
        assert "unit" not in nats and "unit" not in rows
        assert status == 2 and out == ""
        assert err.strip() == (f"miaudit bounds: error: argument '--bits': miaudit bounds {argv[1]} reads and prints "
                               f"no information value ({calc.no_information}), so nothing is in nats or bits; "
                               "drop --bits")
    else:
        assert nats["unit"] == "nats" and status == 0 and json.loads(out)["unit"] == "bits"
        assert '`"bits"` with `--bits`' in rows["unit"]


def test_the_calculators_without_information_are_the_gaussian_curves():
    from audit.cli.bounds_calculators import calculators

    assert [name for name, calc in calculators().items() if calc.no_information] == ["gaussian-ldp", "gaussian-lip"]


def test_api_page_renders_every_public_name_of_audit():
    import audit

    text = (DOCS / "reference" / "api.md").read_text()
    rendered = {line.split()[1].rsplit(".", 1)[1] for line in text.splitlines() if line.startswith("::: ")}
    assert set(audit.__all__) <= rendered


def test_cli_page_holds_the_current_flag_tables():
    from audit.cli.flag_reference import END as FLAGS_END
    from audit.cli.flag_reference import START as FLAGS_START
    from audit.cli.flag_reference import flags_tables
    from audit.cli.main import COMMANDS

    text = (DOCS / "reference" / "cli.md").read_text()
    assert with_table(text, flags_tables(), FLAGS_START, FLAGS_END) == text, \
        "run: python -m audit.cli.flag_reference docs/reference/cli.md"
    tables = text.split(FLAGS_START)[1].split(FLAGS_END)[0]
    for command in COMMANDS:
        assert f"### `miaudit {command}`" in tables
    assert "| `--per-database` |" in tables and "| `--workers N\\|auto` |" in tables


def test_flag_table_of_a_parser():
    import argparse

    from audit.cli.flag_reference import command_table

    parser = argparse.ArgumentParser(description="do a <thing>")
    parser.add_argument("--json", action="store_true", help="common: left to the conventions")
    parser.add_argument("--wire", choices=("text", "npy"), default="text", help="format (default %(default)s)")
    parser.add_argument("--workers", metavar="N|auto", help="a | b")
    parser.add_argument("--fast", action="store_true", help="go *fast*")
    subs = parser.add_subparsers(dest="name")
    subs.add_parser("one", description="the first").add_argument("--x", help="x")
    lines = command_table("cmd", parser).splitlines()
    assert lines[:3] == ["### `miaudit cmd`", "", "do a &lt;thing>"]
    assert "| `--wire {text,npy}` | format (default text) |" in lines
    assert "| `--workers N\\|auto` | a \\| b |" in lines
    assert "| `--fast` | go \\*fast\\* |" in lines
    assert not any("--json" in line for line in lines)
    assert lines[-1] == "| `one` | the first | `--x X` |"
