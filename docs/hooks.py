"""MkDocs hooks of the documentation site (registered under ``hooks:`` in mkdocs.yml).

Each hook mends the HTML of a page after Markdown has rendered it, so the sources stay plain
Markdown that also reads well on GitHub:

- Sphinx roles in docstrings (``:func:`audit.engine.run_audit```), which mkdocstrings renders as
  the role's name before a code span, become a link to the object when the page documents it
  (an element with that id, as mkdocstrings writes) and plain code otherwise; ``~`` keeps the
  last part of the name, as Sphinx does.
- A pipe escaped inside a table cell's code span (`` `a\\|b` ``, which GitHub renders as ``a|b``)
  is shown as ``|``: Python-Markdown's tables keep the backslash.
- Maths written in prose the way one types it (``e^ε``, ``e^{2ε}``, ``e^(2 eps/d)``, ``2^-32``,
  ``z_{α/2}``, ``E_{P_X⊗P_Y}[e^T]``) is set with superscripts and subscripts (``<sup>``, ``<sub>``);
  code and program output are left as they are.

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


# Prose only: code, preformatted text and tags are kept whole.
_KEEP = re.compile(r"(<pre\b.*?</pre>|<code\b.*?</code>|<script\b.*?</script>|<[^>]+>)", re.DOTALL)
# A superscript: after a letter, digit or closing bracket, ^{...}, ^(...) or a token (a signed number,
# or letters and primes).
_SUP = re.compile(r"(?<=[\w)\]])\^(\{[^{}]*\}|\([^()]*\)|-?\d+(?:\.\d+)?|[^\W\d_]+′*)")
# A subscript: _{...}, or the letter of an expectation E_P[ / E_Q[.
_SUB = re.compile(r"(?<=[\w)])_(\{[^{}]*\}|[A-Z](?=\[))")
# Inside a subscript or superscript: P_X.
_INNER_SUB = re.compile(r"(?<=[^\W\d_])_([^\W_])")
# A one-letter name with a one-character index (α_k, g_i(x), t_k²), or an index after a superscript
# (δ^LIP_μ); names of more letters (d_in, p_first) are words, not maths.
_END = r"(?!(?![⁰¹²³⁴-⁹])\w)"  # the index ends the word (a superscript digit may follow: t_k²)
_INDEX = re.compile(rf"(?<!\w)([^\W\d_])_([^\W_]){_END}|(?<=</sup>)_([^\W_]){_END}")


def _script(tag: str, body: str) -> str:
    if body[0] in "{(":  # the group's brackets are for the plain text; the raised text shows the group
        body = body[1:-1]
    body = _INNER_SUB.sub(r"<sub>\1</sub>", body)
    return f"<{tag}>{body}</{tag}>"


def _index(match) -> str:
    letter, index, after_sup = match.groups()
    return f"{letter}<sub>{index}</sub>" if letter else f"<sub>{after_sup}</sub>"


def render_maths(content: str) -> str:
    """``content`` with the superscripts and subscripts of its prose set as such (code left alone)."""
    def prose(text: str) -> str:
        text = _SUB.sub(lambda match: _script("sub", match.group(1)), text)
        text = _INDEX.sub(_index, text)
        text = _SUP.sub(lambda match: _script("sup", match.group(1)), text)
        return _INDEX.sub(_index, text)
    return "".join(part if _KEEP.fullmatch(part) else prose(part) for part in _KEEP.split(content))


def on_page_content(html_text: str, page, config, files):  # noqa: ARG001 - MkDocs' hook signature
    """MkDocs event: the page's HTML before the theme wraps it (and before search indexes it)."""
    return render_maths(unescape_table_pipes(render_roles(html_text)))
