"""MkDocs hooks of the documentation site (registered under ``hooks:`` in mkdocs.yml).

Each hook mends the HTML of a page after Markdown has rendered it, so the sources stay plain
Markdown that also reads well on GitHub:

- Sphinx roles in docstrings (``:func:`audit.engine.run_audit```), which mkdocstrings renders as
  the role's name before a code span, become a link to the object when the page documents it
  (an element with that id, as mkdocstrings writes) and plain code otherwise; ``~`` keeps the
  last part of the name, as Sphinx does.
- A pipe escaped inside a table cell's code span (`` `a\\|b` ``, which GitHub renders as ``a|b``)
  is shown as ``|``: Python-Markdown's tables keep the backslash.

``tests/test_docs_site.py`` checks the built site for what these hooks remove.
"""

from __future__ import annotations

import html
import re

#: The Sphinx cross-reference roles docstrings use (``:py:func:`` and the like included).
ROLE = re.compile(r":(?:py:)?(?:func|mod|class|meth|data|attr|obj|exc|const|term):<code>([^<]*)</code>")
_ID = re.compile(r'\sid="([^"]+)"')
_TABLE = re.compile(r"<table>.*?</table>", re.DOTALL)
_CODE = re.compile(r"<code>([^<]*)</code>")


def role_html(text: str, ids: set) -> str:
    """The HTML of one role's target ``text`` (``~pkg.mod.name`` shows ``name``): a link if ``ids`` holds it."""
    shown = text.split(".")[-1] if text.startswith("~") else text
    target = html.unescape(text.lstrip("~").removesuffix("()"))
    code = f"<code>{shown.lstrip('~')}</code>"
    return f'<a href="#{target}">{code}</a>' if target in ids else code


def render_roles(content: str) -> str:
    """``content`` with every Sphinx role rendered as a link to an object of the page, or as code."""
    ids = set(_ID.findall(content))
    return ROLE.sub(lambda match: role_html(match.group(1), ids), content)


def unescape_table_pipes(content: str) -> str:
    r"""``content`` with ``\|`` inside the code spans of its tables shown as ``|``."""
    def table(match):
        return _CODE.sub(lambda code: "<code>" + code.group(1).replace("\\|", "|") + "</code>", match.group(0))
    return _TABLE.sub(table, content)


def on_page_content(html_text: str, page, config, files):  # noqa: ARG001 - MkDocs' hook signature
    """MkDocs event: the page's HTML before the theme wraps it (and before search indexes it)."""
    return unescape_table_pipes(render_roles(html_text))
