"""The reference catalog: standard DP-testing mechanisms, correct and buggy.

Re-implemented from the public descriptions of the StatDP / DP-Sniper / DP-Auditorium
benchmark families. Each :class:`CatalogEntry` carries a batched mechanism
``mech(dbs, rng) -> (m, d)``, its claimed and known true guarantees, whether it is buggy,
the neighbouring input pairs that expose it, and a two-point prior on the first pair.
"""

from __future__ import annotations

from dataclasses import replace

from estimators.validation import InputError

from mechanisms.catalog import (calibrated, geometric, histogram, means, noisy_max, numerical_svt, parallel, prefix_sum,
               randomized_response, rappor, sparse_vector, sums)
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import NOT_PRIVATE, Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.catalog.parameters import build, defaults, split_spec

__all__ = ["CatalogEntry", "Guarantee", "NOT_PRIVATE", "NeighbouringPair", "catalog", "catalog_names", "get_entry", "parameters_of"]

# One factory per entry, module by module, in the order the catalog lists them.
_FACTORIES = {
    **sums.FACTORIES,
    **means.FACTORIES,
    **histogram.FACTORIES,
    **prefix_sum.FACTORIES,
    **noisy_max.FACTORIES,
    **sparse_vector.FACTORIES,
    **numerical_svt.FACTORIES,
    **parallel.FACTORIES,
    **geometric.FACTORIES,
    **randomized_response.FACTORIES,
    **rappor.FACTORIES,
    **calibrated.FACTORIES,  # last: the MI-calibrated mechanisms of mechanisms.calibration
}


def _factories(training: bool = True) -> dict:
    if not training:
        return _FACTORIES
    # The DP-SGD training runs (mechanisms.catalog.dpsgd), imported when first asked for.
    from mechanisms.catalog.dpsgd import FACTORIES as TRAINING

    return {**_FACTORIES, **TRAINING}


def _factory(name: str):
    factories = _factories()
    if name not in factories:
        raise InputError(f"argument 'name' must be one of {', '.join(sorted(factories))}, got {name!r}")
    return factories[name]


def catalog(training: bool = False) -> list:
    """The catalog entries at their default parameters, as a list of :class:`CatalogEntry`.

    ``training=True`` adds the DP-SGD training runs (:mod:`mechanisms.catalog.dpsgd`); they
    are left out by default, so the studies and tests that sweep the reference mechanisms
    (claimed ε against the exposing pairs' exact ε) do not train models.
    """
    return [get_entry(name) for name in _factories(training)]


def catalog_names(training: bool = True) -> list:
    """The names of the catalog entries (DP-SGD's included unless ``training=False``), building none."""
    return list(_factories(training))


def parameters_of(name: str) -> dict:
    """The settable parameters of entry ``name`` and their defaults."""
    return defaults(_factory(name))


def get_entry(spec: str, params: dict | None = None) -> CatalogEntry:
    """The entry a spec names, at the given parameters.

    Parameters
    ----------
    spec : str
        ``NAME`` or ``NAME?KEY=VALUE&KEY=VALUE``, e.g. ``"svt4?epsilon=0.1&queries=10"``
        (what follows ``catalog:`` in a mechanism spec).
    params : dict, optional
        More parameters (a configuration's ``[mechanism] params`` table); a key may not be
        given both here and in ``spec``.

    Raises
    ------
    InputError
        An unknown name (listing the names), an unknown parameter (listing the entry's), or an
        invalid value (naming the parameter).
    """
    name, spec_params = split_spec(spec)
    factory = _factory(name)
    if params is not None and not isinstance(params, dict):
        raise InputError(f"catalog parameters ([mechanism] params) must be a table of KEY = VALUE, got {params!r}")
    params = dict(params or {})
    twice = sorted(set(spec_params) & set(params))
    if twice:
        raise InputError(f"catalog parameter(s) {', '.join(map(repr, twice))} of catalog:{name} given both in "
                         "the spec and in params")
    entry, values = build(name, factory, {**spec_params, **params})
    changed = {k: v for k, v in values.items() if v != defaults(factory)[k]}
    if changed:  # the name says which instance it is, e.g. in an audit report
        name = name + "?" + "&".join(f"{k}={v:g}" for k, v in changed.items())
    return replace(entry, name=name, parameters=values)
