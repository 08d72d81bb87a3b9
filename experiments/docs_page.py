"""A documentation page written by an experiment run (``miaudit experiment NAME --page PATH``).

The benchmark pages of the documentation site (``docs/benchmarks/``) are written by the commands
that measure them, never by hand: the page is the run's summary (what ran, the machine, the date,
the miaudit version, the findings) followed by its tables in Markdown.
"""

from __future__ import annotations

import math

__all__ = ["MAX_ROWS", "benchmark_page", "markdown_table"]

#: Rows of a table shown on the page; the CSV beside the run holds them all.
MAX_ROWS = 60


def _cell(value) -> str:
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.4g}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(columns: dict, max_rows: int = MAX_ROWS) -> str:
    """``columns`` (name → equal-length sequence) as a Markdown table of at most ``max_rows`` rows."""
    names = list(columns)
    rows = len(columns[names[0]]) if names else 0
    lines = ["| " + " | ".join(names) + " |", "| " + " | ".join("---" for _ in names) + " |"]
    lines += ["| " + " | ".join(_cell(columns[name][i]) for name in names) + " |" for i in range(min(rows, max_rows))]
    if rows > max_rows:
        lines.append(f"\n({rows - max_rows} more rows in the CSV file.)")
    return "\n".join(lines) + "\n"


def benchmark_page(summary: str, tables: list, command: str, run_on: str | None = None) -> str:
    """The page: a notice that ``command`` wrote it, the run's ``summary`` (Markdown), then ``tables``.

    The summary's first line (``# NAME``) stays the page's title. ``run_on`` (the date, machine,
    load average and version of the run) is named in the notice, so the page's first lines say
    what the numbers were measured on.
    """
    title, _, rest = summary.partition("\n")
    where = f" (from the repository root) on {run_on}" if run_on else ""
    notice = (f"*This page was written by `{command}`{where}; do not edit it by hand: run the command again.*")
    parts = [title, "", notice, rest.rstrip("\n"), "", "## Tables", ""]
    for table in tables:
        parts += [f"### {table.name}", "", markdown_table(table.columns)]
    return "\n".join(parts).rstrip("\n") + "\n"
