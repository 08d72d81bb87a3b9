"""The self-contained HTML report: inline CSS, figures embedded as base64 PNG, no scripts,
no external resources. Every string from a result is HTML-escaped (mechanism names are user input).
"""

from __future__ import annotations

import base64
import html

from audit.report.content import AuditSection, TextTable, as_result_list, audit_section, summary_rows
from audit.report.plots import ReportFigure, audit_figures

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 980px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
.statement { padding: 0.8em 1em; border-left: 5px solid; margin: 1em 0; }
.violation { border-color: #c62828; background: #fdecea; }
.no-violation-detected { border-color: #2e7d32; background: #edf7ed; }
.estimate-only { border-color: #b26a00; background: #fff4e5; }
figure { margin: 1em 0; }
figcaption { font-size: 0.9em; color: #555; }
.absent { color: #777; font-style: italic; }
section { border-top: 1px solid #ddd; margin-top: 2em; }
"""


def escape(text) -> str:
    """HTML-escape any value for text and attribute positions."""
    return html.escape(str(text), quote=True)


def html_table(table: TextTable, *, caption: bool = True, link_first_column: bool = False) -> str:
    """An HTML table of escaped cells; optionally the first cell of each row links to ``#audit-<cell>``."""
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    rows = []
    for row in table.rows:
        cells = [f"<td>{escape(cell)}</td>" for cell in row]
        if link_first_column:
            cells[0] = f'<td><a href="#audit-{escape(row[0])}">{escape(row[0])}</a></td>'
        rows.append("<tr>" + "".join(cells) + "</tr>")
    title = f"<caption>{escape(table.caption)}</caption>" if caption else ""
    return f"<table>{title}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def figure_html(figure: ReportFigure) -> str:
    """An embedded PNG with its caption, or a sentence saying why there is no figure."""
    if figure.png is None:
        return f'<p class="absent">{escape(figure.title)}: {escape(figure.absent)}</p>'
    data = base64.b64encode(figure.png).decode("ascii")
    return (f'<figure><img alt="{escape(figure.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption><strong>{escape(figure.title)}.</strong> {escape(figure.caption)}</figcaption></figure>")


def _section(section: AuditSection, figures: list) -> str:
    # An estimate-only verdict is neither red nor green: it has no error guarantee.
    style = "estimate-only" if section.estimate_only else section.verdict
    parts = [f'<section id="{escape(section.anchor)}">', f"<h2>{escape(section.heading)}</h2>",
             f'<p class="statement {escape(style)}">{escape(section.statement)}</p>',
             *(f"<p>{escape(words)}</p>" for words in section.under_headline),
             *([f"<p>{escape(section.explanation)}</p>"] if section.explanation else []),
             *([f"<h3>{escape(section.mi_heading)}</h3>", f"<p>{escape(section.mi_statement)}</p>"]
               if section.mi_heading else []),
             f"<h3>{escape(section.limits_title)}</h3>", "<ul>" + "".join(f"<li>{escape(item)}</li>" for item in section.limits) + "</ul>",
             html_table(TextTable("Key figures", ("quantity", "value"), section.facts))]
    parts += [figure_html(figure) for figure in figures]
    parts += [html_table(table) for table in section.tables]
    if section.notes:
        parts += ["<h3>Notes</h3>", "<ul>" + "".join(f"<li>{escape(n)}</li>" for n in section.notes) + "</ul>"]
    parts.append("</section>")
    return "\n".join(parts)


def render_html(results, title: str = "miaudit audit report") -> str:
    """The HTML report: a summary table linking to one section per audit, each with its figures
    (per-secret bounds against ε, per-slice distribution, training curves, DP ε bounds).

    Parameters
    ----------
    results : AuditResult or list of AuditResult
    title : str

    Returns
    -------
    str
        A complete HTML document with no external resources.
    """
    results = as_result_list(results)
    sections = [_section(audit_section(r, i), audit_figures(r)) for i, r in enumerate(results)]
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{escape(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        f"<h1>{escape(title)}</h1>", html_table(summary_rows(results), link_first_column=True),
        *sections, "</body>", "</html>", ""])
