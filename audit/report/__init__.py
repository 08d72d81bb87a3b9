"""Audit reports: self-contained HTML with embedded figures, a Markdown summary, JSON, and the
terminal summary table. Each accepts one :class:`~audit.result.AuditResult` or a list of them
(one section per audit, a summary table at the top).

Modules: :mod:`.content` (what a report says), :mod:`.plots` (figures), :mod:`.html`,
:mod:`.markdown`, :mod:`.table` (terminal), :mod:`.writing` (JSON and atomic files).
"""

from audit.report.html import render_html
from audit.report.markdown import render_markdown
from audit.report.table import summary_table
from audit.report.writing import render_json, write_atomic, write_reports

__all__ = ["render_html", "render_json", "render_markdown", "summary_table", "write_atomic", "write_reports"]
