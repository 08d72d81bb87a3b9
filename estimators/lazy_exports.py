"""A package's public names, loaded on first use (PEP 562).

``miaudit --help`` imports the packages; their exports (which pull in torch, scipy or
matplotlib) must wait until a name is actually used.
"""

from __future__ import annotations

import importlib

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict, namespace: dict):
    """``(__all__, __getattr__, __dir__)`` for ``package``, whose ``exports`` map name → module.

    Parameters
    ----------
    package : str
        The package's ``__name__`` (for error messages).
    exports : dict
        Public name → the module that defines it.
    namespace : dict
        The package's ``globals()`` (for ``dir()``).
    """

    def __getattr__(name):
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return sorted(exports), __getattr__, __dir__
