"""The Markdown summary of one or more audits."""

from __future__ import annotations

import re

from audit.report.content import AuditSection, TextTable, as_result_list, audit_section, summary_rows
from audit.report.terminal import terminal_text


# Characters that make inline Markdown live, each escaped with a backslash (CommonMark §2.4: a
# backslash before ASCII punctuation makes it literal): links and images ``[ ] ( )`` need ``[``,
# emphasis ``* _``, strikethrough ``~``, code spans ``` ` ```, maths ``$`` (GitHub, Pandoc), table
# cells ``|``, the backslash itself; a ``<`` that could open an HTML tag, comment or autolink; an
# ``&`` that could start an entity. Other punctuation is left as it is, so that a plain
# "ε < 0.77" stays readable in the raw file.
_MARKDOWN_ACTIVE = re.compile(r"[\\|`*_\[\]$~]|<(?=[A-Za-z/!?])|&(?=#?\w+;)")
# What would start a block when it opens a line or a list item (CommonMark §4–5): an ATX heading,
# a block quote, a bullet or ordered list marker, a thematic break. A number such as -0.5 or
# 0.77 starts none of them and stays as it is.
_BLOCK_START = re.compile(r"^(?:#{1,6}(?=\s|$)|>|[-+](?=\s|$)|-{2,}|\d{1,9}(?=[.)](?:\s|$)))")


def escape(text) -> str:
    """Make user text inert inline in Markdown: no links, images, emphasis, maths, code, raw HTML
    or entities, no table breaks, one line, no control characters (for table cells and headings,
    where no block can start)."""
    text = " ".join(terminal_text(text).split())
    return _MARKDOWN_ACTIVE.sub(lambda m: "\\" + m.group(0), text)


def list_item(text) -> str:
    """``- text`` with ``text`` escaped (:func:`escape`) and unable to open a block inside the item."""
    text = escape(text)
    match = _BLOCK_START.match(text)
    if match:
        # "1." stays a number: only the punctuation after it is escaped.
        end = match.end()
        text = (text[:end] + "\\" + text[end:]) if match.group(0)[0].isdigit() else "\\" + text
    return "- " + text


def markdown_table(table: TextTable) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(escape(h) for h in table.headers) + " |",
             "|" + "|".join(" --- " for _ in table.headers) + "|"]
    lines += ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in table.rows]
    return "\n".join(lines)


def _section(section: AuditSection) -> str:
    parts = [f"## {escape(section.heading)}", "", f"**{escape(section.statement)}**", ""]
    for words in section.under_headline:
        parts += [escape(words), ""]
    if section.explanation:
        parts += [escape(section.explanation), ""]
    if section.mi_heading:
        parts += [f"### {escape(section.mi_heading)}", "", escape(section.mi_statement), ""]
    parts += [f"### {escape(section.limits_title)}", ""]
    parts += [list_item(item) for item in section.limits] + [""]
    parts += [markdown_table(TextTable("Key figures", ("quantity", "value"), section.facts)), ""]
    for table in section.tables:
        parts += [f"### {escape(table.caption)}", "", markdown_table(table), ""]
    if section.notes:
        parts += ["### Notes", ""] + [list_item(note) for note in section.notes] + [""]
    return "\n".join(parts)


def render_markdown(results, title: str = "miaudit audit report") -> str:
    """The Markdown report: a summary table listing every audit, then one section per audit.

    Parameters
    ----------
    results : AuditResult or list of AuditResult
    title : str

    Returns
    -------
    str
        Markdown text; figures are in the HTML report only.
    """
    results = as_result_list(results)
    parts = [f"# {escape(title)}", "", markdown_table(summary_rows(results)), "",
             "Each information value names its unit in its header or cell. The figures are in the HTML report.", ""]
    parts += [_section(audit_section(result, i)) for i, result in enumerate(results)]
    return "\n".join(parts).rstrip() + "\n"
