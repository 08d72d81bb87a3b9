"""Load a user object (mechanism, prior, secret function) from ``FILE.py:NAME`` or ``package.module:NAME``.

The command line names user code this way (DESIGN.md, "Command line contract"):

- ``path/to/file.py:NAME`` executes the file as a fresh module and takes ``NAME`` from it;
- ``package.module:NAME`` imports the module (it must be importable from ``sys.path``).

``NAME`` may be dotted (``module:Class.attribute``). Every failure — a malformed
specification, a missing file, a file or module that fails to import, a missing name,
an object that is not callable — is one :class:`~estimators.validation.InputError`
naming the specification.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

from estimators.validation import InputError, closest_word
from mechanisms.errors import exception_text, raised_in_file

__all__ = ["load_object", "resolve_spec", "split_spec"]


def split_spec(spec: str, what: str = "object") -> tuple[str, str]:
    """Split ``"SOURCE:NAME"`` at its last colon (so Windows drive letters survive).

    Raises
    ------
    InputError
        When ``spec`` is not a string of that form.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise InputError(f"{what} must be given as FILE.py:NAME or package.module:NAME, got {spec!r}")
    source, name = spec.rsplit(":", 1)
    if not source or not name:
        raise InputError(f"{what} must be given as FILE.py:NAME or package.module:NAME, got {spec!r}")
    if ":" in source and not source.endswith(".py"):  # no module name holds one: a second NAME (f.py:a:b)
        raise InputError(f"{what} {spec!r}: holds more than one ':'; give FILE.py:NAME or package.module:NAME, "
                         "NAME dotted for an attribute of an object (Class.method)")
    if not all(part.isidentifier() for part in name.split(".")):
        raise InputError(f"{what} {spec!r}: {name!r} is not a Python name")
    return source, name


def resolve_spec(spec: str, base_dir: str | None) -> str:
    """``spec`` with the FILE part of ``FILE.py:NAME`` made relative to ``base_dir`` (a configuration file's folder)
    and a leading ``~`` expanded (quoted, or from a TOML file, the shell did not expand it)."""
    source, sep, name = spec.rpartition(":")
    if source.startswith("~") and source.endswith(".py"):
        source = str(Path(source).expanduser())
    if base_dir and source.endswith(".py") and not Path(source).is_absolute():
        return str(Path(base_dir) / source) + sep + name
    return source + sep + name if source else spec


def _missing_file(source: str, name: str, spec: str, what: str, base_dir: str | None) -> InputError:
    """The error for ``FILE.py`` (``source`` as typed) that does not exist: the folder a relative path was read from
    (``base_dir``, a configuration file's, else the working directory) and, where a file of that name is nearby (in
    that folder, or the path typed, or the name, in the working directory), the spec that names it."""
    message = f"{what} {spec!r}: file {source!r} does not exist"
    typed = Path(source).expanduser()
    if typed.is_absolute():
        return InputError(message)
    folder, here = (Path(base_dir), "the configuration file's folder") if base_dir else (Path.cwd(), "the working directory")
    message += f" in {here} {str(folder)!r}"
    asked = folder / typed
    for nearby in (folder / typed.name, Path.cwd() / typed, Path.cwd() / typed.name):
        if nearby != asked and nearby.is_file():
            place = "is there" if nearby.parent == folder else f"is in the working directory {str(Path.cwd())!r}"
            written = f"{os.path.relpath(nearby, folder)}:{name}"
            flag = re.search(r"--[a-z][a-z-]*", what)  # "[prior] spec (--prior)": the flag that takes the spec
            return InputError(f"{message}; {nearby.name} {place}: here "
                              + (f"{flag.group()} {written}" if flag else repr(written)))
    return InputError(message)


def _module_from_file(path: Path, spec: str, what: str, missing=None):
    if not path.is_file():
        raise missing() if missing is not None else InputError(f"{what} {spec!r}: file {str(path)!r} does not exist")
    # A unique module name per file, so two user files called mech.py do not collide,
    # and registered in sys.modules so that dataclasses and pickling inside it work.
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"_miaudit_user_{path.stem}_{digest}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise InputError(f"{what} {spec!r}: cannot load {str(path)!r} as Python source")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        with _folder_importable(path.resolve().parent):
            _run_bounded(module_spec.loader.exec_module, module, f"{what} {spec!r}: executing {str(path)!r}")
    except Exception as exc:  # noqa: BLE001 - user code may raise anything on import
        sys.modules.pop(module_name, None)
        if isinstance(exc, InputError):  # out of time or sys.exit (a MechanismError): named already
            raise
        raise InputError(f"{what} {spec!r}: executing {str(path)!r} failed: {_raised(exc)}"
                         f"{raised_in_file(exc, str(path), folder=True)}") from exc
    return module


def _raised(exc: BaseException) -> str:
    """``TYPE: message`` of an exception user code raised on import; a :class:`SyntaxError`'s message without the
    ``(FILE, line N)`` it appends, which :func:`~mechanisms.errors.raised_in_file` says as for any other error."""
    text = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc)
    return f"{type(exc).__name__}{exception_text(text)}"


def _raised_in_module(exc: BaseException, module_name: str) -> str:
    """Where in the module ``module_name``'s file ``exc`` was raised (:func:`~mechanisms.errors.raised_in_file`)."""
    try:
        origin = importlib.util.find_spec(module_name).origin
    except Exception:  # noqa: BLE001 - the location is a courtesy; the error it decorates must still be raised
        origin = None
    return raised_in_file(exc, origin) if origin else ""


def _run_bounded(fn, argument, who: str):
    """``fn(argument)`` for user code run at load time: bounded by the audit's ``--timeout`` (else
    :data:`~mechanisms.calls.user_call.FIRST_CALL_TIMEOUT`), a ``sys.exit`` in it one error
    naming ``who`` (it ended the process silently with the file's status). Both are the
    :class:`~mechanisms.errors.MechanismError` of a user's code that hung or quit (exit status 1,
    as for a mechanism that hangs when called), not bad input."""
    from mechanisms.calls.user_call import FIRST_CALL_TIMEOUT, call_user_code, first_call_timeout

    return call_user_code(fn, (argument,), who=who, timeout=first_call_timeout(),
                          hint=f"(--timeout, else {FIRST_CALL_TIMEOUT:g} s at load time); raise --timeout if "
                               "it is merely slow")


@contextmanager
def _folder_importable(folder: Path):
    """Let a user file import the modules beside it, as ``python FILE.py`` would.

    While the file executes, its folder is first on ``sys.path`` (so ``import helpers``
    finds ``helpers.py`` beside it, as for a script). Afterwards the folder stays importable
    but moves to the end of ``sys.path``: imports the file makes later (inside a function,
    at call time) still find its neighbours, and no module beside it shadows an installed
    package or the standard library for the rest of the process.
    """
    entry = str(folder)
    already = entry in sys.path
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        sys.path.remove(entry)  # removes the first occurrence: the one inserted above
        if not already:
            sys.path.append(entry)


def _module_by_import(module_name: str, spec: str, what: str):
    try:
        if module_name in sys.modules:  # imported already: nothing of the user's runs
            return importlib.import_module(module_name)
        return _run_bounded(importlib.import_module, module_name, f"{what} {spec!r}: importing {module_name!r}")
    except InputError:
        raise
    except ModuleNotFoundError as exc:
        raise InputError(f"{what} {spec!r}: no module named {exc.name!r}") from exc
    except Exception as exc:  # noqa: BLE001 - user code may raise anything on import
        raise InputError(f"{what} {spec!r}: importing {module_name!r} failed: {_raised(exc)}"
                         f"{_raised_in_module(exc, module_name)}") from exc


def load_object(spec: str, what: str = "object", *, require_callable: bool = True, base_dir: str | None = None):
    """Load the object named by ``spec``.

    Parameters
    ----------
    spec : str
        ``FILE.py:NAME`` (a path ending in ``.py``) or ``package.module:NAME``.
    what : str
        What is loaded, for error messages (e.g. ``"--mechanism"``).
    require_callable : bool
        Raise unless the object is callable (default True).
    base_dir : str, optional
        The folder a relative ``FILE.py`` is read from (a configuration file's, :func:`resolve_spec`); default the
        working directory. Errors name ``spec`` as typed.

    Returns
    -------
    object
        The loaded object.

    Raises
    ------
    InputError
        Naming ``what`` and ``spec`` for every failure.
    """
    source, name = split_spec(spec, what)
    if source.endswith(".py"):
        path = Path(resolve_spec(spec, base_dir).rpartition(":")[0])
        module = _module_from_file(path, spec, what, lambda: _missing_file(source, name, spec, what, base_dir))
    else:
        module = _module_by_import(source, spec, what)
    obj, holder, found = module, source, []
    for part in name.split("."):
        if not hasattr(obj, part):  # named as the user wrote it: the file or module, then its attributes so far
            raise InputError(f"{what} {spec!r}: {holder!r} has no attribute {part!r}"
                             f"{_closest_name(obj, part, what, f'{source}:' + '.'.join(found))}")
        obj = getattr(obj, part)
        found.append(part)
        holder = f"{holder}:{part}" if holder == source else f"{holder}.{part}"
    if require_callable and not callable(obj):
        raise InputError(f"{what} {spec!r}: {name!r} is a {type(obj).__name__}, not callable")
    return obj


def _closest_name(holder, typed: str, what: str, prefix: str) -> str:
    """For a name ``holder`` lacks: the public name of it closest to ``typed`` (a typo,
    :func:`estimators.validation.closest_word`) as the spec to type, ``; did you mean 'count'? here --mechanism f.py:count``
    (``prefix``: the spec up to it), else the names it defines (up to 8), ``""`` where it has none. A module's
    names are the functions and classes it defines, not those it imports."""
    import inspect

    try:
        names = [name for name, value in vars(holder).items() if not name.startswith("_")
                 and (not inspect.ismodule(holder) or getattr(value, "__module__", None) == holder.__name__)]
    except TypeError:  # no __dict__: its attributes are not listed
        return ""
    close = closest_word(typed, names)
    if close is None:
        return f"; it defines {', '.join(names[:8])}{', ...' if len(names) > 8 else ''}" if names else ""
    written = prefix + ("." if not prefix.endswith(":") else "") + close
    flag = re.search(r"--[a-z][a-z-]*", what)  # "[prior] spec (--prior)": the flag that takes the spec
    return f"; did you mean {close!r}? here " + (f"{flag.group()} {written}" if flag else repr(written))
