"""The plain-text summary table printed on the terminal (``miaudit demo``)."""

from __future__ import annotations

from audit.report.content import TextTable, as_result_list, summary_rows
from audit.report.terminal import format_columns


def format_text_table(table: TextTable) -> str:
    """Left-aligned columns separated by two spaces, with a dashed rule under the header
    (:func:`~audit.report.terminal.format_columns`)."""
    return format_columns(table.headers, table.rows)


def summary_table(results) -> str:
    """One line per audit: mechanism, notion, ε, verdict, certified lower bound, estimate,
    certified DP ε lower bounds (from MI and from the event test) and seconds.

    Parameters
    ----------
    results : AuditResult or list of AuditResult

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    return format_text_table(summary_rows(as_result_list(results)))
