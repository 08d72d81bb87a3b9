"""The plain-text summary table printed on the terminal (``miaudit demo``)."""

from __future__ import annotations

from audit.report.content import TextTable, as_result_list, summary_rows
from audit.report.terminal import terminal_text


def format_text_table(table: TextTable) -> str:
    """Left-aligned columns separated by two spaces, with a dashed rule under the header.

    Every cell is made terminal-safe and kept to one line (:func:`terminal_text`): cells hold
    user input such as mechanism names.
    """
    cells = [tuple(terminal_text(cell, keep_newlines=False) for cell in row)
             for row in [table.headers, *table.rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(table.headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


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
