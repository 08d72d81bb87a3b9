"""Audit reports: self-contained HTML with embedded figures, a Markdown summary, JSON, and the
terminal summary table. Each accepts one :class:`~audit.result.AuditResult` or a list of them
(one section per audit, a summary table at the top).

Modules: :mod:`.content` (what a report says), :mod:`.plots` (figures), :mod:`.html`,
:mod:`.markdown`, :mod:`.table` (terminal), :mod:`.terminal` (text safe for a terminal),
:mod:`.writing` (checked locations, JSON and files written as one set).

The names below are loaded on first use (PEP 562), so that ``miaudit --help`` and usage errors
do not import the plotting stack.
"""

from estimators.lazy_exports import lazy_exports

_EXPORTS = {
    "render_html": "audit.report.html",
    "render_markdown": "audit.report.markdown",
    "summary_table": "audit.report.table",
    "render_json": "audit.report.writing",
    "write_atomic": "audit.report.writing",
    "write_reports": "audit.report.writing",
    "report_target": "audit.report.writing",
    "ReportTarget": "audit.report.writing",
    "check_output_location": "audit.report.writing",
    "terminal_text": "audit.report.terminal",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
