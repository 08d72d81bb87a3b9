"""The configuration reference's table of keys, generated from :data:`audit.config.keys.KEYS`.

``python -m audit.config.reference docs/reference/configuration.md`` rewrites the table between
the page's ``<!-- keys:start -->`` and ``<!-- keys:end -->`` markers; a test checks the page holds
the current table, so a new key cannot be left undocumented.
"""

from __future__ import annotations

import sys
from pathlib import Path

START, END = "<!-- keys:start -->", "<!-- keys:end -->"


def _kind(key) -> str:
    """The key's type and allowed values in words."""
    if key.kind == "choice":
        return " \\| ".join(f"`{choice}`" for choice in key.choices)
    bounds = [f"> {key.above:g}" if key.above is not None else "", f"≥ {key.at_least:g}" if key.at_least is not None else "",
              f"< {key.below:g}" if key.below is not None else "", f"≤ {key.at_most:g}" if key.at_most is not None else ""]
    text = {"numbers": f"{key.length} numbers" if key.length else "numbers"}.get(key.kind, key.kind)
    shown = ", ".join(b for b in bounds if b)
    return f"{text} ({shown})" if shown else text


def keys_table(keys=None) -> str:
    """A Markdown table with one row per configuration key: key, type, flag, applies to, meaning."""
    if keys is None:
        from audit.config.keys import KEYS as keys
    rows = ["| key | type | flag | applies to | meaning |", "| --- | --- | --- | --- | --- |"]
    for key in keys:
        applies = ", ".join(key.notions or ()) or "every notion"
        if key.priors:
            applies += "; priors: " + ", ".join(key.priors)
        meaning = key.help.replace("|", "\\|") if key.help else ""
        flag = f"`{key.flag}`" if key.flag else ""
        rows.append(f"| `[{key.table}] {key.name}` | {_kind(key)} | {flag} | {applies} | {meaning} |")
    return "\n".join(rows) + "\n"


def with_table(page_text: str, table: str, start: str = START, end: str = END) -> str:
    """``page_text`` with the text between the markers ``start`` and ``end`` replaced by ``table``."""
    if start not in page_text or end not in page_text:
        raise ValueError(f"the page has no {start} ... {end} markers")
    head, rest = page_text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{table}{end}{tail}"


if __name__ == "__main__":
    page = Path(sys.argv[1])
    page.write_text(with_table(page.read_text(), keys_table()))
