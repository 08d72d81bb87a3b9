"""The profile of a user's module (``FILE.py``, ``package.module`` or a package and its public submodules).

Entry points are recognised by their signatures, with the names diffprivlib uses
(:mod:`audit.scan.profiles.base`): a function whose first parameter is ``db`` (or ``database``) is a function of
one database, called as ``miaudit audit --per-database`` calls ``f(db, rng)``; a function whose first parameter is
``array`` (or ``data``, ``values``, ``sample``, ``a``) is a tool on an array; a class taking ε with a ``fit`` method
is a model fitted on (X, y); a class taking ε with a ``randomise`` (``privatise``, ``perturb``) method, or a
function whose first parameter is ``value``, is a local randomizer; a function whose first parameter is ``input_tuple`` is a local
randomizer of one tuple (two attributes, each in [0, 1]). The privacy parameter is one of :data:`EPSILON_NAMES`
and δ one of :data:`DELTA_NAMES`; a parameter ``rng`` (``generator``, :data:`~audit.scan.profiles.base.GENERATOR_NAMES`),
or one annotated ``numpy.random.Generator``, or else the one parameter named like a generator (``gen``,
``random_generator``: :meth:`audit.scan.profiles.base.Family.generator_arguments`) is given the audit's
``numpy.random.Generator``, and ``random_state`` an integer seed drawn from it. ``bounds``
(or ``range``) is given as (0, 10) and left out; ``weights`` as 4 per record and left out; ``classes`` as
(0, 1, 2) and left out.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys

from audit.scan.profiles.base import (GENERATOR_NAMES, ArrayTool, FittedModel, LocalRandomizer, OptionalArgument,
                                     PerDatabase, PerRecord, Profile, TupleRandomizer)

#: The names a user's privacy parameter may have, in the order read: the grid's ε is given to the first the entry
#: point takes, and the claim read from it (``def count(db, rng, eps=1.0)`` claims ``dp:1.0`` at the grid's ε = 1).
EPSILON_NAMES = ("epsilon", "eps")
#: The names a user's δ parameter may have, read as :data:`EPSILON_NAMES` are (δ > 0 makes the claim (ε, δ)-DP).
DELTA_NAMES = ("delta",)

#: The optional arguments a user's entry point is scanned with, where it has them.
USER_OPTIONAL = (OptionalArgument("weights", (None, PerRecord(4.0))),
                 OptionalArgument("classes", (None, (0.0, 1.0, 2.0))))

#: What every family of a user's module reads and gives: its privacy parameters' names and the audit's generator.
_NAMES = {"epsilon_names": EPSILON_NAMES, "delta_names": DELTA_NAMES, "generator_names": GENERATOR_NAMES}

FAMILIES = (PerDatabase(optional=USER_OPTIONAL, **_NAMES), ArrayTool(optional=USER_OPTIONAL, **_NAMES),
            FittedModel(optional=USER_OPTIONAL, **_NAMES), LocalRandomizer(**_NAMES), TupleRandomizer(**_NAMES))


def user_profile(target: str, imported: bool = True) -> Profile:
    """The profile of ``target``: a ``FILE.py`` (one module), a module, or a package with its submodules
    whose names do not start with an underscore. ``imported=False``: ``target`` is not imported (its trial
    import failed, :func:`audit.scan.processes.import_blocked`), so its profile names it alone."""
    from estimators.validation import InputError

    from audit.scan.profiles import LIBRARIES

    if target.endswith(".py"):
        from pathlib import Path

        if not Path(target).is_file():
            raise InputError(f"argument 'target': no file {target}")
        return Profile(name=Path(target).stem, modules=(Path(target).stem,), families=FAMILIES)
    modules = [target]
    if not imported:
        return Profile(name=target, modules=(target,), families=FAMILIES, distribution="")
    try:
        with contextlib.redirect_stdout(sys.stderr):  # what it prints as it is imported is not the scan's output
            package = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name is not None and target.startswith(exc.name) and target.split(".")[0] == exc.name.split(".")[0]:
            raise InputError(f"argument 'target': {target!r} is neither a library with a scan profile "
                             f"({', '.join(sorted(LIBRARIES))}) nor a module that can be imported from here "
                             f"(a FILE.py, or a module on PYTHONPATH)") from None
        package = None  # the module imports something missing: the scan lists the import error as skipped
    except Exception:  # noqa: BLE001 - the scan lists the import error as a skipped module
        package = None
    if package is not None and hasattr(package, "__path__"):
        modules = [f"{target}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
    return Profile(name=target, modules=tuple(modules), families=FAMILIES, distribution="")
