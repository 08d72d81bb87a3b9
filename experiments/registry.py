"""The registry of experiments, by name.

Every module of the ``experiments`` package (other than this one, :mod:`.framework` and
modules whose name starts with ``_``) that defines ``EXPERIMENTS`` — a list of
:class:`experiments.framework.Experiment` — is registered. A new experiment therefore plugs
in by adding a module; nothing here changes. An experiment that trains declares
``trains=True`` and receives the resolved ``--device``.
"""

from __future__ import annotations

import importlib
import pkgutil

from estimators.validation import InputError

from .framework import Experiment, ExperimentResult, run_experiment

__all__ = ["experiments", "get_experiment", "run"]

_NOT_EXPERIMENT_MODULES = {"registry", "framework"}


def _discover() -> dict:
    package = importlib.import_module("experiments")
    found: dict = {}
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module_info.name in _NOT_EXPERIMENT_MODULES or module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"experiments.{module_info.name}")
        for experiment in getattr(module, "EXPERIMENTS", ()):
            if not isinstance(experiment, Experiment):
                raise TypeError(f"experiments.{module_info.name}.EXPERIMENTS holds {experiment!r}, not an Experiment")
            if experiment.name in found:
                raise ValueError(f"experiment name {experiment.name!r} is registered twice")
            found[experiment.name] = experiment
    return found


def experiments() -> list:
    """All registered experiments, sorted by name."""
    registered = _discover()
    return [registered[name] for name in sorted(registered)]


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name``; :class:`InputError` listing the names otherwise."""
    registered = _discover()
    if name not in registered:
        raise InputError(f"argument 'name': unknown experiment {name!r}; available: {', '.join(sorted(registered))}")
    return registered[name]


def run(name: str, *, out_dir=None, quick: bool = False, seed: int = 0, device: str = "auto",
        page=None, grid: str | None = None, workers: int = 1) -> ExperimentResult:
    """Run the experiment ``name`` (see :func:`experiments.framework.run_experiment`)."""
    return run_experiment(get_experiment(name), out_dir=out_dir, quick=quick, seed=seed, device=device, page=page,
                          grid=grid, workers=workers)
