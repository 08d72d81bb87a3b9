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
  into place (the commit point), and then the old files are removed and each temporary file is
  renamed onto its target (:func:`os.replace`, atomic within one file system). A failure before
  the commit leaves the previous files as they were; a kill after it is completed by the next run, which also removes
  temporary files left by an interrupted one (:func:`recover_file_set`). No run ever leaves a
  new ``report.html`` beside an old ``report.md``.

Four more for writers that meet (issue 32, part A):

- **One writer at a time per folder.** Repairing, writing and renaming a set happen under an
  exclusive lock on the target folder (``flock`` on the folder itself: no lock file is left), so
  two audits writing the same ``--report`` serialize: the later set replaces the earlier whole,
  and neither run deletes or renames the other's temporary files or journal.
- **Only our own temporary files are ever deleted**: their names carry ``miaudit-`` and the
  8-character random part :func:`tempfile.mkstemp` makes (``.<file name>.miaudit-XXXXXXXX.tmp``);
  a user's ``.report.html.notes.tmp`` is left alone.
- **A set is stamped and its renames are not split by a catchable signal.** Every file of a set
  names the set (``report_set`` in JSON, a ``miaudit-report-set`` meta tag in HTML, a comment in
  Markdown), so a reader can check that the files it took belong together; SIGINT, SIGTERM, SIGHUP
  and SIGQUIT arriving during the publish (a few milliseconds) are held and delivered after it.
- **No instant shows files of two runs.** After the commit the old set's files are all removed
  first, and only then are the new files renamed in (:func:`_publish`): at every instant the
  targets present are a subset of the old set or a subset of the new one, never a mix, even
  under an uncatchable kill (SIGKILL, power loss). A reader may find some files momentarily
  absent; a kill inside that window leaves the journal, and the next run completes the new set.

Paths are made absolute when they are checked (:func:`report_target`), so a mechanism that calls
:func:`os.chdir` cannot move the report, and a report's folder that has disappeared meanwhile is
an error, never created anew.

The journal is ``.<first file>.set-journal`` in the target folder; temporary files are
``.<file name>.miaudit-<random>.tmp``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import stat
import tempfile
import threading
import time
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
_TEMP_TAG = "miaudit-"  # in every temporary file's name: what proves a file ours (:func:`_is_our_temporary`)
_JOURNAL_SUFFIX = ".set-journal"
#: How long a writer waits for another writer of the same folder (seconds) before giving up.
LOCK_WAIT_S = 120.0
#: Signals held during a set's renames (:func:`_signals_held`): those a user or a CI runner sends.
_HELD_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")
                      if hasattr(signal, name))


def _is_our_temporary(name: str, target: str) -> bool:
    """Whether ``name`` is a temporary file :func:`_write_temporary` made for ``target``:
    ``.<target>.miaudit-`` then :func:`tempfile.mkstemp`'s 8 random characters, then ``.tmp``."""
    prefix = f".{target}.{_TEMP_TAG}"
    return (name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)
            and re.fullmatch(r"[a-z0-9_]{8}", name[len(prefix):-len(_TEMP_SUFFIX)]) is not None)


@contextlib.contextmanager
def _folder_lock(folder: Path, flag: str):
    """Hold an exclusive lock on ``folder`` (``flock`` on the folder itself), waiting at most
    :data:`LOCK_WAIT_S` seconds for another writer; without ``fcntl`` (Windows) there is no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError as exc:
        raise InputError(f"argument '{flag}': cannot open folder '{folder}' ({exc.strerror})") from None
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise InputError(f"argument '{flag}': another process has been writing a report in '{folder}' "
                                     f"for over {LOCK_WAIT_S:.0f} s; try again when it has finished") from None
                time.sleep(0.02)
            except OSError:
                break  # a file system without locks: write as before
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def _signals_held():
    """Hold :data:`_HELD_SIGNALS` while the block runs, then deliver those that arrived.

    Python handlers run in the main thread only, so elsewhere (a worker thread) nothing is held.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived, previous = [], {}
    for number in _HELD_SIGNALS:
        try:
            previous[number] = signal.signal(number, lambda signum, frame: arrived.append(signum))
        except (OSError, ValueError):
            pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(arrived):
            os.kill(os.getpid(), number)


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
    """Our temporary files (:func:`_is_our_temporary`) for ``paths`` and their journal; called
    under the folder lock, when no other writer of the folder is running, so every one is stale."""
    found = []
    for path in (*map(Path, paths), _journal_path(paths)):
        try:
            names = os.listdir(path.parent)
        except OSError:
            continue
        found += [path.parent / n for n in names if _is_our_temporary(n, path.name)]
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


def _journal_entries(journal: Path) -> list:
    """The (temporary name, target name) pairs a set's journal lists; none where it cannot be read."""
    try:
        entries = json.loads(journal.read_text(encoding="utf-8"))["files"]
        return [(str(temporary), str(target)) for temporary, target in entries]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _journals_of(paths: list) -> list:
    """The journals in the folder of ``paths`` of sets that hold one of them: this set's own, and any other
    set's that lists one of ``paths`` as a target (an HTML report's set, journal named after ``r.html``,
    holds the ``r.md`` that a later ``--report r.md`` writes)."""
    own, names = _journal_path(paths), {p.name for p in paths}
    try:
        listing = sorted(os.listdir(own.parent))
    except OSError:
        return []
    return [own.parent / name for name in listing if name.startswith(".") and name.endswith(_JOURNAL_SUFFIX)
            and (name == own.name or any(target in names for _, target in _journal_entries(own.parent / name)))]


def recover_file_set(paths) -> None:
    """Finish or undo what an interrupted :func:`write_file_set` of ``paths`` left behind.

    A journal (written only after every temporary file was complete) means the set was
    committed: its publish is completed (:func:`_publish`: the old files whose replacements are
    still waiting are removed, then those replacements renamed in), also for another set that
    shares a file with ``paths`` (:func:`_journals_of`). Temporary files without a journal belong
    to a set that was never committed: they are removed, and the previous files stay as they
    were. Either way no mix of two runs' files is left, at any instant.
    """
    paths = [Path(p) for p in paths]
    for journal in _journals_of(paths):
        # Only our own temporary files, each renamed onto the name it was made for, inside this folder.
        _publish(journal.parent, [(temporary, target) for temporary, target in _journal_entries(journal)
                                  if Path(temporary).name == temporary and Path(target).name == target
                                  and _is_our_temporary(temporary, target)], journal)
    for temporary in _stale_temporaries(paths):
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass


def _publish_step(action, *paths) -> None:
    """One file-system step of a set's commit and publish (``os.replace`` or ``os.unlink`` of ``paths``);
    every step goes through here, so that a test can kill the process after any one of them."""
    action(*paths)


def _publish(folder: Path, entries: list, journal: Path) -> None:
    """Put a committed set in place: (temporary name, target name) ``entries`` in ``folder``.

    First every target whose replacement is still waiting (its temporary file exists) is removed,
    then every waiting temporary file is renamed onto its target, then the journal is removed. The
    targets present are therefore, at every instant, a subset of the old set (while removing) or
    of the new one (while renaming), never a mix of the two, whatever kills the process between
    two steps. The same call completes an interrupted publish (:func:`recover_file_set`): a target
    whose temporary file is gone is already new, and the others are removed before any rename.
    """
    waiting = [(folder / temporary, folder / target) for temporary, target in entries if (folder / temporary).exists()]
    for _, target in waiting:
        if os.path.lexists(target):
            _publish_step(os.unlink, target)
    for temporary, target in waiting:
        _publish_step(os.replace, temporary, target)
    _publish_step(os.unlink, journal)


def _write_temporary(path: Path, data: bytes) -> Path:
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.{_TEMP_TAG}", suffix=_TEMP_SUFFIX, dir=path.parent)
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
    into place (the commit point); remove every old target, then rename each temporary file onto
    its target (:func:`_publish`: no instant shows old and new files together); delete the journal.
    A failure before the commit removes the temporary files and leaves the old set; after it, the
    renames are retried at once and otherwise by the next run.
    """
    paths = [Path(os.path.abspath(p)) for p in contents]
    contents = dict(zip(paths, contents.values()))
    if not paths:
        raise InputError("argument 'contents' is empty: give at least one file")
    if len({p.parent.resolve() for p in paths}) != 1:
        raise InputError("argument 'contents': all files of a set must be in one folder")
    folder = paths[0].parent
    if not folder.is_dir():
        raise InputError(f"argument '{flag}': folder '{folder}' does not exist (any more)")
    with _folder_lock(folder, flag):
        recover_file_set(paths)
        for path in paths:
            check_output_location(path, flag)
        _write_set(paths, contents)
    return paths


def _write_set(paths: list, contents: dict) -> None:
    """:func:`write_file_set`'s steps after the checks, under the folder lock."""
    written = []
    journal = _journal_path(paths)
    committed = False
    try:
        for path in paths:
            written.append((_write_temporary(path, contents[path]), path))
        record = {"files": [[temporary.name, path.name] for temporary, path in written]}
        journal_temporary = _write_temporary(journal, json.dumps(record).encode("utf-8"))
        written.append((journal_temporary, journal))
        with _signals_held():  # a Ctrl-C or SIGTERM must not split the publish
            _publish_step(os.replace, journal_temporary, journal)
            committed = True
            _publish(journal.parent, [(temporary.name, path.name) for temporary, path in written[:-1]], journal)
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


def stamp_report_set(fmt: str, text: str, set_id: str) -> str:
    """``text`` (a rendered report in format ``fmt``) naming the set it belongs to, ``set_id``:
    ``"report_set"`` in JSON, a ``miaudit-report-set`` meta tag in HTML, a last-line comment in Markdown."""
    if fmt == "json":
        document = json.loads(text)
        document["report_set"] = set_id
        return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt == "html":
        return text.replace("<head>", f'<head>\n<meta name="miaudit-report-set" content="{set_id}">', 1)
    return text + f"\n<!-- miaudit-report-set: {set_id} -->\n"


def report_set_of(path) -> str | None:
    """The set a written report file belongs to (:func:`stamp_report_set`), or None when unstamped."""
    text = Path(path).read_text(encoding="utf-8")
    found = re.search(r'"report_set": "([0-9a-f]+)"|miaudit-report-set" content="([0-9a-f]+)"'
                      r"|<!-- miaudit-report-set: ([0-9a-f]+) -->", text)
    return None if found is None else next(g for g in found.groups() if g)


def _write_rendered(results, paths: dict, title: str, flag: str, create_folder: bool = True) -> dict:
    """Render every format (so a rendering error writes nothing), create the folder if missing
    (``create_folder``; else a missing folder is an error), then write the files as one set,
    each stamped with the set's id; a write failure becomes an error naming ``flag``."""
    from audit.report.content import as_result_list

    results = as_result_list(results)
    set_id = secrets.token_hex(8)
    texts = {paths[fmt]: stamp_report_set(fmt, RENDERERS[fmt](results, title), set_id).encode("utf-8")
             for fmt in paths}
    try:
        if create_folder:
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
        """Render and write the report set; return format → path. The folder was checked to exist
        (:func:`report_target`): one that has disappeared since is an error, not created anew."""
        return _write_rendered(results, self.paths, title, self.flag, create_folder=False)


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
    path = Path(os.path.abspath(path))  # now: a mechanism calling os.chdir must not move the report
    suffix = path.suffix.lower()
    if suffix not in REPORT_SUFFIXES:
        raise InputError(f"argument '{flag}': '{path}' must end in .html (HTML with .md and .json beside it), "
                         f".md or .json (that format alone)")
    paths = {fmt: path if fmt == REPORT_SUFFIXES[suffix][0] else path.with_suffix(_SUFFIX_OF_FORMAT[fmt])
             for fmt in REPORT_SUFFIXES[suffix]}
    for target in paths.values():
        check_output_location(target, flag)
    try:
        with _folder_lock(path.parent, flag):  # not while another run writes its set there
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
    out_dir = Path(os.path.abspath(check_output_location(out_dir, flag, folder=True)))
    return _write_rendered(results, {fmt: out_dir / FORMATS[fmt] for fmt in dict.fromkeys(formats)}, title, flag)
