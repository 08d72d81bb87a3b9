"""Writing report files safely: checked before the run, written as one set, never over a device.

Three rules, each for a failure seen in practice (issue 12, part B):

- **Only regular files are replaced.** A target that exists must be a regular file; a device
  (``/dev/null``), FIFO, socket, folder or symbolic link is refused with an error naming the
  flag, so running as root can never turn ``/dev/null`` into a file.
- **Locations are checked before any work** (:func:`check_output_location`): the folder must
  exist (for a file) and accept a new file (probed by writing one), so a 50-second audit never
  ends with its result lost to a missing or read-only folder.
- **A report is written as one set** (:func:`write_file_set`): every file goes to a temporary
  file in the target folder first; only when all are complete is a journal naming them renamed
  into place (the commit point), and then each temporary file is renamed over its target
  (:func:`os.replace`, atomic within one file system). A failure before the commit leaves the
  previous files as they were; a kill after it is completed by the next run, which also removes
  temporary files left by an interrupted one (:func:`recover_file_set`). No run ever leaves a
  new ``report.html`` beside an old ``report.md``.

The journal is ``.<first file>.set-journal`` in the target folder; temporary files are
``.<file name>.<random>.tmp``.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from estimators.validation import InputError

FORMATS = {"html": "report.html", "md": "report.md", "json": "report.json"}

# ``--report PATH``: the suffix decides what is written. An HTML report brings the Markdown and
# JSON reports beside it (one set); a .md or .json path asks for that format alone.
REPORT_SUFFIXES = {".html": ("html", "md", "json"), ".htm": ("html", "md", "json"), ".md": ("md",),
                   ".json": ("json",)}
_SUFFIX_OF_FORMAT = {"md": ".md", "json": ".json"}
_TEMP_SUFFIX = ".tmp"
_JOURNAL_SUFFIX = ".set-journal"


def _describe_kind(mode: int) -> str:
    kinds = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((text for test, text in kinds if test(mode)), "not a regular file")


def _probe_folder(folder: Path, flag: str) -> None:
    """Create, write, flush and delete a small file in ``folder``: the one sure test of writability
    (``os.access`` says yes to root on a read-only file system, and nothing else sees a full disk)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".miaudit-probe-", suffix=_TEMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise InputError(f"argument '{flag}': cannot create a file in folder '{folder}' ({exc.strerror})") from None
    try:
        try:
            os.write(fd, b"\0" * 4096)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise InputError(f"argument '{flag}': cannot write in folder '{folder}' ({exc.strerror})") from None
    finally:
        try:
            os.unlink(probe)
        except OSError:
            pass


def check_output_location(path, flag: str, *, folder: bool = False) -> Path:
    """Check, before any work, that ``path`` can be written; return it as a :class:`Path`.

    Parameters
    ----------
    path : str or Path
        A file to be written (or replaced), or with ``folder=True`` a folder to write files into.
    flag : str
        The user's name for the location (``--report``, ``--out``), used in every error.
    folder : bool
        ``path`` is a folder: it may be missing (it is then created with its parents later), in
        which case its nearest existing ancestor must be a writable folder. A file's own folder
        must exist.

    Raises
    ------
    InputError
        Naming ``flag``: the file exists and is not a regular file (device, FIFO, socket,
        folder, symbolic link); the folder is missing, is not a folder, or does not accept a
        new file (permissions, read-only or full file system).
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InputError(f"argument '{flag}' must be a path, got {path!r}")
    path = Path(path)
    if folder:
        existing = path
        while not existing.exists() and existing != existing.parent:
            if existing.is_symlink():
                raise InputError(f"argument '{flag}': '{existing}' is a broken symbolic link")
            existing = existing.parent
        if not existing.is_dir():
            where = "is" if existing == path else f"is inside '{existing}', which is"
            raise InputError(f"argument '{flag}': '{path}' {where} {_describe_kind(existing.stat().st_mode)}, "
                             f"not a folder")
        _probe_folder(existing, flag)
        return path
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise InputError(f"argument '{flag}': cannot inspect '{path}' ({exc.strerror})") from None
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(f"argument '{flag}': '{path}' exists and is {_describe_kind(mode)}; "
                         f"only a regular file is ever replaced — give a file path")
    parent = path.parent
    if not parent.is_dir():
        what = "does not exist" if not parent.exists() else "is not a folder"
        raise InputError(f"argument '{flag}': folder '{parent}' {what}")
    _probe_folder(parent, flag)
    return path


def _journal_path(paths) -> Path:
    first = Path(paths[0])
    return first.parent / f".{first.name}{_JOURNAL_SUFFIX}"


def _stale_temporaries(paths) -> list:
    found = []
    for path in (*map(Path, paths), _journal_path(paths)):
        prefix = f".{path.name}."
        try:
            names = os.listdir(path.parent)
        except OSError:
            continue
        found += [path.parent / n for n in names if n.startswith(prefix) and n.endswith(_TEMP_SUFFIX)]
    return found


def _fsync_folder(folder: Path) -> None:
    # Makes the renames durable on POSIX; Windows cannot open a folder, and then there is nothing to do.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def recover_file_set(paths) -> None:
    """Finish or undo what an interrupted :func:`write_file_set` of ``paths`` left behind.

    A journal (written only after every temporary file was complete) means the set was
    committed: its remaining temporary files are renamed into place. Temporary files without a
    journal belong to a set that was never committed: they are removed, and the previous files
    stay as they were. Either way no mix of two runs' files is left.
    """
    paths = [Path(p) for p in paths]
    journal = _journal_path(paths)
    if journal.exists():
        folder = journal.parent
        try:
            entries = json.loads(journal.read_text(encoding="utf-8"))["files"]
        except (OSError, ValueError, KeyError, TypeError):
            entries = []
        targets = {p.name for p in paths}
        for temporary, target in entries:
            # Only our own temporary files, renamed onto names of this set, inside this folder.
            if (target in targets and Path(temporary).name == temporary and temporary.startswith(f".{target}.")
                    and temporary.endswith(_TEMP_SUFFIX) and (folder / temporary).exists()):
                os.replace(folder / temporary, folder / target)
        os.unlink(journal)
    for temporary in _stale_temporaries(paths):
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass


def _write_temporary(path: Path, data: bytes) -> Path:
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=_TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)  # mkstemp creates 0600; give the permissions a plain open() would
    except BaseException:
        os.unlink(temporary)
        raise
    return Path(temporary)


def write_file_set(contents: dict, *, flag: str = "path") -> list:
    """Write several files in one folder as one set: all new, or (after a failure) all old.

    Parameters
    ----------
    contents : dict of Path to bytes
        Target path → content. All targets must be in one folder, which must exist.
    flag : str
        The user's name for the location, used in errors.

    Returns
    -------
    list of Path
        The written paths, in the order given.

    Notes
    -----
    Steps: remove what an interrupted earlier run left (:func:`recover_file_set`); check every
    target is a regular file or missing; write every temporary file (``fsync``); rename a journal
    into place (the commit point); rename each temporary file over its target; delete the journal.
    A failure before the commit removes the temporary files and leaves the old set; after it, the
    renames are retried at once and otherwise by the next run.
    """
    paths = [Path(p) for p in contents]
    if not paths:
        raise InputError("argument 'contents' is empty: give at least one file")
    if len({p.parent.resolve() for p in paths}) != 1:
        raise InputError("argument 'contents': all files of a set must be in one folder")
    recover_file_set(paths)
    for path in paths:
        check_output_location(path, flag)
    written = []
    journal = _journal_path(paths)
    committed = False
    try:
        for path in paths:
            written.append((_write_temporary(path, contents[path]), path))
        record = {"files": [[temporary.name, path.name] for temporary, path in written]}
        journal_temporary = _write_temporary(journal, json.dumps(record).encode("utf-8"))
        written.append((journal_temporary, journal))
        os.replace(journal_temporary, journal)
        committed = True
        for temporary, path in written[:-1]:
            os.replace(temporary, path)
        os.unlink(journal)
    except BaseException:
        if committed:
            try:
                recover_file_set(paths)  # roll forward: the set was complete when the journal landed
            except OSError:
                pass  # the journal stays; the next run completes the set
        else:
            for temporary, _ in written:
                if temporary.exists():
                    os.unlink(temporary)
        raise
    _fsync_folder(paths[0].parent)
    return paths


def write_atomic(path, chunks) -> None:
    """Write the byte strings ``chunks`` (an iterable) to ``path`` atomically.

    Parameters
    ----------
    path : str or Path
        The target; its folder must exist; if it exists it must be a regular file.
    chunks : iterable of bytes
        The content, possibly produced lazily: an exception while producing it leaves
        ``path`` untouched and no temporary file behind.
    """
    path = Path(path)
    data = b"".join(chunks)
    write_file_set({path: data}, flag="path")


def generated_by() -> str:
    """``miaudit <version>`` of the installed distribution."""
    try:
        return f"miaudit {version('miaudit')}"
    except PackageNotFoundError:
        return "miaudit (version unknown: not installed as a distribution)"


def render_json(results, title: str = "miaudit audit report") -> str:
    """The JSON report: ``{"title", "generated_by", "audits": [result.to_dict(), ...]}``."""
    from audit.report.content import as_result_list

    document = {"title": str(title), "generated_by": generated_by(),
                "audits": [r.to_dict() for r in as_result_list(results)]}
    # allow_nan=False: to_dict maps inf/NaN to null, and a stray one must fail loudly, not write invalid JSON.
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _render(fmt: str, results, title: str) -> str:
    # Imported here: the renderers pull in plotting, which a usage error or --help must not load.
    if fmt == "html":
        from audit.report.html import render_html
        return render_html(results, title)
    if fmt == "md":
        from audit.report.markdown import render_markdown
        return render_markdown(results, title)
    return RENDERERS["json"](results, title)


RENDERERS = {"html": lambda results, title: _render("html", results, title),
             "md": lambda results, title: _render("md", results, title),
             "json": render_json}


def _write_rendered(results, paths: dict, title: str, flag: str) -> dict:
    """Render every format (so a rendering error writes nothing), create the folder if missing,
    then write the files as one set; a write failure becomes an error naming ``flag``."""
    from audit.report.content import as_result_list

    results = as_result_list(results)
    texts = {paths[fmt]: RENDERERS[fmt](results, title).encode("utf-8") for fmt in paths}
    try:
        next(iter(paths.values())).parent.mkdir(parents=True, exist_ok=True)
        write_file_set(texts, flag=flag)
    except OSError as exc:
        where = exc.filename or next(iter(paths.values()))
        raise InputError(f"argument '{flag}': could not write the report to '{where}' ({exc.strerror or exc}); "
                         f"the previous report, if any, is unchanged or completed by the next run") from None
    return dict(paths)


@dataclass(frozen=True)
class ReportTarget:
    """Where ``--report PATH`` writes, checked before the audit runs (:func:`report_target`).

    Attributes
    ----------
    paths : dict
        Format (``html``, ``md``, ``json``) → path.
    flag : str
        The user's flag, named in errors.
    """

    paths: dict
    flag: str = "--report"

    def write(self, results, title: str = "miaudit audit report") -> dict:
        """Render and write the report set; return format → path."""
        return _write_rendered(results, self.paths, title, self.flag)


def report_target(path, flag: str = "--report") -> ReportTarget:
    """The files ``--report PATH`` writes, with every location checked now, before any work.

    The suffix decides: ``.html`` (or ``.htm``) writes the HTML report there and the Markdown
    and JSON reports beside it (``PATH`` with ``.md`` and ``.json``); ``.md`` or ``.json``
    writes that report alone. Any other suffix is refused, so that no name is guessed.
    What an interrupted earlier run left there is repaired now (:func:`recover_file_set`).

    Raises
    ------
    InputError
        Naming ``flag``, for an unknown suffix or a location :func:`check_output_location` refuses.
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InputError(f"argument '{flag}' must be a path, got {path!r}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in REPORT_SUFFIXES:
        raise InputError(f"argument '{flag}': '{path}' must end in .html (HTML with .md and .json beside it), "
                         f".md or .json (that format alone)")
    paths = {fmt: path if fmt == REPORT_SUFFIXES[suffix][0] else path.with_suffix(_SUFFIX_OF_FORMAT[fmt])
             for fmt in REPORT_SUFFIXES[suffix]}
    for target in paths.values():
        check_output_location(target, flag)
    try:
        recover_file_set(list(paths.values()))  # what a killed earlier run left, repaired at the start
    except OSError as exc:
        raise InputError(f"argument '{flag}': cannot repair what an interrupted run left beside '{path}' "
                         f"({exc.strerror or exc})") from None
    return ReportTarget(paths, flag)


def write_reports(results, out_dir, *, title: str = "miaudit audit report",
                  formats=("html", "md", "json"), flag: str = "out_dir") -> dict:
    """Write ``report.html``, ``report.md`` and ``report.json`` (those in ``formats``) to ``out_dir``.

    Every format is rendered before any file is written, so a rendering error writes nothing;
    the files are then written as one set (:func:`write_file_set`).

    Parameters
    ----------
    results : AuditResult or list of AuditResult
        One section per audit, a summary table at the top.
    out_dir : str or Path
        Created (with parents) if missing.
    title : str
    formats : sequence of {"html", "md", "json"}
    flag : str
        The user's name for ``out_dir`` in errors (``--out`` for ``miaudit demo``).

    Returns
    -------
    dict
        Format → path of the written file.
    """
    if isinstance(formats, str):
        formats = (formats,)
    formats = tuple(formats)
    if not formats:
        raise InputError("argument 'formats' is empty: choose from " + ", ".join(FORMATS))
    for fmt in formats:
        if fmt not in FORMATS:
            raise InputError(f"argument 'formats' has {fmt!r}; choose from {', '.join(FORMATS)}")
    out_dir = check_output_location(out_dir, flag, folder=True)
    return _write_rendered(results, {fmt: out_dir / FORMATS[fmt] for fmt in dict.fromkeys(formats)}, title, flag)
