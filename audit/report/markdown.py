"""The Markdown summary of one or more audits."""

from __future__ import annotations

import re

from audit.report.content import AuditSection, TextTable, as_result_list, audit_section, summary_rows


# A '<' that could open an HTML tag or comment, an '&' that could start an entity, and the
# characters that break table cells or start code spans. Backslash escapes of ASCII punctuation
# are CommonMark, so a plain "ε < 0.77" stays readable in the raw file.
_MARKDOWN_ACTIVE = re.compile(r"[\\|`*]|<(?=[A-Za-z/!?])|&(?=#?\w+;)")


def escape(text) -> str:
    """Make user text inert in Markdown: no raw HTML or entities, no table breaks, one line."""
    return " ".join(_MARKDOWN_ACTIVE.sub(lambda m: "\\" + m.group(0), str(text)).split())


def markdown_table(table: TextTable) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(escape(h) for h in table.headers) + " |",
             "|" + "|".join(" --- " for _ in table.headers) + "|"]
    lines += ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in table.rows]
    return "\n".join(lines)


def _section(section: AuditSection) -> str:
    parts = [f"## {escape(section.heading)}", "", f"**{escape(section.statement)}**", ""]
    parts += [f"### {escape(section.limits_title)}", ""]
    parts += [f"- {escape(item)}" for item in section.limits] + [""]
    parts += [markdown_table(TextTable("Key figures", ("quantity", "value"), section.facts)), ""]
    for table in section.tables:
        parts += [f"### {escape(table.caption)}", "", markdown_table(table), ""]
    if section.notes:
        parts += ["### Notes", ""] + [f"- {escape(note)}" for note in section.notes] + [""]
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
