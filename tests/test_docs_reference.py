"""The reference pages list every configuration key, every claim form and every JSON key."""

import dataclasses
import re

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


def test_json_page_documents_every_key_and_the_version():
    text = (DOCS / "reference" / "json-output.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.M))
    fields = {f.name for f in dataclasses.fields(AuditResult)} - {"theta_statement"}
    produced = fields | {"theta", "refuted_by", "statement", "schema_version"}
    assert documented == produced
    assert set(AuditResult._JSON_ORDER) <= produced
    assert f"(now **{JSON_SCHEMA_VERSION}**)" in text


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
