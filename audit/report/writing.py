"""Writing the report files: each one atomically, so no reader ever sees a half-written file.

A file is written to a temporary file in the same folder and renamed over the target with
:func:`os.replace` (atomic on POSIX and Windows within one file system). On any failure the
temporary file is removed and the previous file, if any, is left as it was.
"""

from __future__ import annotations

import json
import os
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from audit.report.content import as_result_list
from audit.report.html import render_html
from audit.report.markdown import render_markdown
from estimators.validation import InputError

FORMATS = {"html": "report.html", "md": "report.md", "json": "report.json"}


def write_atomic(path, chunks) -> None:
    """Write the byte strings ``chunks`` (an iterable) to ``path`` atomically.

    Parameters
    ----------
    path : str or Path
        The target; its folder must exist.
    chunks : iterable of bytes
        The content, possibly produced lazily: an exception while producing it leaves
        ``path`` untouched and no temporary file behind.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp creates 0600; give the permissions a plain open() would
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def generated_by() -> str:
    """``miaudit <version>`` of the installed distribution."""
    try:
        return f"miaudit {version('miaudit')}"
    except PackageNotFoundError:
        return "miaudit (version unknown: not installed as a distribution)"


def render_json(results, title: str = "miaudit audit report") -> str:
    """The JSON report: ``{"title", "generated_by", "audits": [result.to_dict(), ...]}``."""
    document = {"title": str(title), "generated_by": generated_by(),
                "audits": [r.to_dict() for r in as_result_list(results)]}
    # allow_nan=False: to_dict maps inf/NaN to null, and a stray one must fail loudly, not write invalid JSON.
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


RENDERERS = {"html": render_html, "md": render_markdown, "json": render_json}


def write_reports(results, out_dir, *, title: str = "miaudit audit report",
                  formats=("html", "md", "json")) -> dict:
    """Write ``report.html``, ``report.md`` and ``report.json`` (those in ``formats``) to ``out_dir``.

    Every format is rendered before any file is written, so a rendering error writes nothing;
    each file is then written atomically (:func:`write_atomic`).

    Parameters
    ----------
    results : AuditResult or list of AuditResult
        One section per audit, a summary table at the top.
    out_dir : str or Path
        Created (with parents) if missing.
    title : str
    formats : sequence of {"html", "md", "json"}

    Returns
    -------
    dict
        Format → path of the written file.
    """
    results = as_result_list(results)
    if isinstance(formats, str):
        formats = (formats,)
    formats = tuple(formats)
    if not formats:
        raise InputError("argument 'formats' is empty: choose from " + ", ".join(FORMATS))
    for fmt in formats:
        if fmt not in FORMATS:
            raise InputError(f"argument 'formats' has {fmt!r}; choose from {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"argument 'out_dir' is not a folder: {out_dir}")
    texts = {fmt: RENDERERS[fmt](results, title) for fmt in dict.fromkeys(formats)}
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for fmt, text in texts.items():
        paths[fmt] = out_dir / FORMATS[fmt]
        write_atomic(paths[fmt], [text.encode("utf-8")])
    return paths
