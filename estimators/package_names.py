"""miaudit's top-level package names, and one line naming a user's module that shadows one.

miaudit installs four top-level packages: ``audit``, ``mechanisms``, ``estimators`` and
``experiments``. Python imports a name from the first place on ``sys.path`` that holds it, and a
script's own folder comes first: a user's ``audit.py`` or ``mechanisms/`` folder beside their
script is imported instead of miaudit's package, and miaudit's own imports then fail with
"'mechanisms' is not a package" or "partially initialized module". :func:`check_package_names`
finds such a module before that happens and says which file to rename.

This module uses the standard library only: it runs first in ``audit``'s and ``mechanisms``'
``__init__`` (and in the pytest plugin and the CLI), before anything that could be shadowed.
"""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder
from pathlib import Path

__all__ = ["PACKAGES", "ShadowedPackageError", "check_package_names", "hidden_modules", "shadowing_path"]

#: miaudit's top-level packages.
PACKAGES = ("audit", "mechanisms", "estimators", "experiments")
#: The folder that holds miaudit's packages (this file is ``ROOT/estimators/package_names.py``).
ROOT = Path(__file__).resolve().parent.parent


class ShadowedPackageError(ImportError):
    """A module that is not miaudit's is imported, or would be, under one of miaudit's package names."""


def _same(path, other: Path) -> bool:
    try:
        return Path(path).resolve() == other.resolve()
    except (OSError, RuntimeError):
        return False


def shadowing_path(name: str) -> str | None:
    """The file or folder Python imports ``name`` from when it is not miaudit's package, else None.

    A module already imported under ``name`` is judged by where it came from; otherwise the
    first match on ``sys.path`` is (:class:`importlib.machinery.PathFinder`, the finder Python
    asks before an editable install's own). A folder without ``__init__.py`` counts: it becomes a
    namespace package that hides an editable install. ``None`` when ``name`` is miaudit's or
    nothing on ``sys.path`` holds it (miaudit's then comes from its installed finder).
    """
    ours = ROOT / name
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None) if module is not None else PathFinder.find_spec(name)
    if spec is None:
        found = getattr(module, "__file__", None)
        return None if found is None or _same(Path(found).parent, ours) else found
    if spec.origin and spec.has_location:
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            return None if _same(origin.parent, ours) else str(origin.parent)
        return str(origin)
    locations = list(spec.submodule_search_locations or ())
    if not locations or any(_same(location, ours) for location in locations):
        return None
    return str(locations[0])


def check_package_names(names=PACKAGES, *, error=ShadowedPackageError) -> None:
    """Raise ``error`` with one line when a module that is not miaudit's holds one of ``names``.

    Parameters
    ----------
    names : sequence of str
        Package names to check (of :data:`PACKAGES`): those the caller is about to import.
    error : type
        The exception raised (the CLI raises its ``InputError``).

    Raises
    ------
    ShadowedPackageError
        Naming the file or folder that shadows the package and what to rename.
    """
    __tracebackhide__ = True  # under pytest: the line, not this function
    for name in names:
        path = shadowing_path(name)
        if path is not None:
            raise error(f"{path} shadows miaudit's package '{name}': rename it (and delete the __pycache__ beside "
                        f"it); miaudit's packages are {', '.join(PACKAGES)}, installed at {ROOT}")


def hidden_modules() -> list:
    """(name, path) of the user's modules that miaudit's packages, imported first, hide in this process.

    The reverse of :func:`shadowing_path`: when miaudit's ``audit`` is imported before a folder
    holding the user's ``audit.py`` joins ``sys.path`` (pytest loads its plugins before it imports
    the tests), ``import audit`` in the user's code gets miaudit's package. Folders without
    ``__init__.py`` are left out: they hide nothing from a regular package.
    """
    hidden = []
    for name in PACKAGES:
        module = sys.modules.get(name)
        if module is None or shadowing_path(name) is not None:
            continue
        for entry in sys.path:
            spec = PathFinder.find_spec(name, [entry or "."])
            if spec is not None and spec.origin and spec.has_location:
                origin = Path(spec.origin)
                path = origin.parent if origin.name == "__init__.py" else origin
                if not _same(path, ROOT / name):
                    hidden.append((name, str(path)))
                break
    return hidden
