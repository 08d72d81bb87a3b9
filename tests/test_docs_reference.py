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
