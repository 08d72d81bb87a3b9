"""The reference catalog: standard DP-testing mechanisms, correct and buggy.

Re-implemented from the public descriptions of the StatDP / DP-Sniper / DP-Auditorium
benchmark families. Each :class:`CatalogEntry` carries a batched mechanism
``mech(dbs, rng) -> (m, d)``, its claimed and known true guarantees, whether it is buggy,
the neighbouring input pairs that expose it, and a two-point prior on the first pair.
"""

from __future__ import annotations

from estimators.validation import InputError

from . import calibrated, geometric, histogram, means, noisy_max, randomized_response, rappor, sparse_vector, sums
from .entry import CatalogEntry
from .guarantee import NOT_PRIVATE, Guarantee
from .neighbouring_pair import NeighbouringPair

__all__ = ["CatalogEntry", "Guarantee", "NOT_PRIVATE", "NeighbouringPair", "catalog", "get_entry"]

# One builder per concept, in the order the catalog lists them.
_BUILDERS = (
    sums.entries,
    means.entries,
    histogram.entries,
    noisy_max.entries,
    sparse_vector.entries,
    geometric.entries,
    randomized_response.entries,
    rappor.entries,
    calibrated.entries,  # last: the MI-calibrated mechanisms of mechanisms.calibration
)


def catalog() -> list:
    """All catalog entries at their default parameters, as a list of :class:`CatalogEntry`."""
    return [entry for build in _BUILDERS for entry in build()]


def get_entry(name: str) -> CatalogEntry:
    """The entry called ``name``; raises :class:`InputError` listing the names otherwise."""
    entries = {e.name: e for e in catalog()}
    if name not in entries:
        raise InputError(f"argument 'name' must be one of {', '.join(sorted(entries))}, got {name!r}")
    return entries[name]
