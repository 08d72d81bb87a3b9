"""Every internal link of the documentation site and the README points at a page that exists, and
every ``#anchor`` at a heading of that page (the check ``mkdocs build --strict`` also makes, here
without building, so it runs in the quick loop)."""

import re
import unicodedata
from pathlib import Path

import pytest
from docs_examples import DOCS, ROOT, doc_pages

_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
_FENCED = re.compile(r"^ *```.*?^ *```", re.S | re.M)
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """Python-Markdown's ``toc`` slug of a heading (its default ``slugify``), which MkDocs uses."""
    text = re.sub(r"`|\*", "", heading)  # inline markup (code, emphasis) is not part of the text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set:
    text = _FENCED.sub("", page.read_text())
    return {slug(heading) for heading in _HEADING.findall(text)}


def links(page: Path) -> list:
    text = _FENCED.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [target for target in _LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def broken_links(page: Path) -> list:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target} (no heading #{anchor})")
    return broken


@pytest.mark.parametrize("page", [*doc_pages(), ROOT / "README.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_internal_links_resolve(page):
    assert broken_links(page) == [], f"{page.relative_to(ROOT)}: broken links"


def test_slug_matches_python_markdown():
    # Expected slugs written out by hand from Python-Markdown's rules (lower case, punctuation
    # dropped, runs of spaces and hyphens to one hyphen, accents stripped to ASCII).
    assert slug("Set-up: two commands") == "set-up-two-commands"
    assert slug("The `schema_version` key") == "the-schema_version-key"
    assert slug("Clopper–Pearson pair (ε, δ)") == "clopperpearson-pair"


def test_a_broken_link_is_reported(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("# Title\n\n[ok](a.md#title) [gone](b.md) [bad anchor](a.md#nope) [web](https://x.org)\n"
                    "```\n[in code](c.md)\n```\n")
    assert broken_links(page) == ["b.md (no such file)", "a.md#nope (no heading #nope)"]
    assert DOCS.is_dir()
