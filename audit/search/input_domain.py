"""The input domain a library mechanism declares, the pairs at its ends, and whether an audit reaches it.

A DP guarantee is over every pair of neighbouring databases of the mechanism's input domain. An
OpenDP measurement declares that domain (``input_domain``: a vector domain whose atom domain may
carry ``bounds``); a diffprivlib object may carry ``bounds``. A prior whose records span less than
the domain tests only part of it: a pipeline whose noise covers records in [0, 10] but whose
domain is [0, 100] leaks only for records more than 10 apart, which a 0/1 prior never draws
(issue 29, item 4). A pipeline on an unbounded domain that clamps its records (``then_clamp``)
declares the clamp's bounds instead, read from the construction record OpenDP keeps
(:func:`opendp_clamp_bounds`). :func:`domain_check` says so in a note, and where the domain is bounded adds
the pair at its two ends (one record at the low end vs the high end, the others at the low end) to
the audit's pairs: it joins Θ as a two-point prior like a ``--pair``, and its critic is a
candidate of the MI test's union bound as every searched prior's is (:mod:`audit.search.prior_search`),
so the α spent stays the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mechanisms.inputs.neighbouring_pair import NeighbouringPair

#: Prior draws read to find the span of the audited records.
SPAN_DRAWS = 1000


@dataclass(frozen=True)
class DeclaredDomain:
    """A record's declared range [low, high] (each end may be infinite) and where it was read."""

    low: float
    high: float
    source: str

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def text(self) -> str:
        return f"[{self.low:g}, {self.high:g}]"


def declared_domain(mechanism) -> DeclaredDomain | None:
    """The record domain ``mechanism`` declares, or None where it declares none that miaudit can read.

    An OpenDP dataset measurement (not one on an aggregate: its domain is the query's) gives its
    input domain's atom ``bounds``; else the bounds of the clamps inside the pipeline that act on
    its input domain (:func:`opendp_clamp_bounds`); else (−∞, ∞) for a float or integer atom domain;
    a diffprivlib object its ``bounds`` (a (low, high) pair of numbers).
    """
    if getattr(mechanism, "library", None) == "OpenDP":
        if mechanism.aggregate:
            return None
        domain = mechanism.measurement.input_domain
        element = getattr(domain, "element_domain", domain)
        bounds = getattr(element, "bounds", None)
        if bounds is not None:
            return DeclaredDomain(float(bounds[0]), float(bounds[1]), f"OpenDP input domain {domain!r}")
        if "bool" in str(getattr(element, "carrier_type", "")).lower():
            return None
        clamps = opendp_clamp_bounds(mechanism.measurement)
        if clamps:
            low, high = min(c[0] for c in clamps), max(c[1] for c in clamps)
            return DeclaredDomain(low, high, f"the clamp inside the OpenDP pipeline (make_clamp, bounds "
                                             f"{', '.join(f'({a:g}, {b:g})' for a, b in clamps)}) on its input "
                                             f"domain {domain!r}")
        return DeclaredDomain(-math.inf, math.inf, f"OpenDP input domain {domain!r} (no bounds)")
    template = getattr(mechanism, "_template", None)
    bounds = getattr(template, "bounds", None)
    if getattr(mechanism, "library", None) == "diffprivlib" and bounds is not None:
        low, high = np.min(np.asarray(bounds[0], dtype=np.float64)), np.max(np.asarray(bounds[1], dtype=np.float64))
        return DeclaredDomain(float(low), float(high), f"diffprivlib bounds {bounds!r}")
    return None


#: Nodes of an OpenDP pipeline's construction record that :func:`opendp_clamp_bounds` reads at most.
MAX_PIPELINE_NODES = 10_000


def opendp_clamp_bounds(measurement) -> list[tuple[float, float]]:
    """The bounds of every ``make_clamp`` in an OpenDP pipeline that acts on the pipeline's own input
    domain (the records as given), read from the construction record OpenDP keeps on each object.

    OpenDP's Python constructors (0.16) record the call that built each Transformation and
    Measurement, with its arguments, in ``__opendp_dict__`` (``__function__``, ``__kwargs__``: what
    ``opendp.prelude.serialize`` writes); a chain's record holds its components. A clamp whose
    ``input_domain`` is the measurement's is a clamp of the records themselves (a clamp after a cast
    or a map acts on other values and is left out). [] where the object keeps no such record (another
    OpenDP version) or the record holds no such clamp; at most :data:`MAX_PIPELINE_NODES` nodes read.
    """
    target = repr(getattr(measurement, "input_domain", None))
    found, seen, stack = [], set(), [measurement]
    while stack and len(seen) < MAX_PIPELINE_NODES:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        record = getattr(node, "__opendp_dict__", None)
        if not isinstance(record, dict) or not isinstance(record.get("__kwargs__"), dict):
            continue
        arguments = record["__kwargs__"]
        if record.get("__function__") == "make_clamp" and repr(arguments.get("input_domain")) == target:
            try:
                low, high = (float(v) for v in arguments["bounds"])
            except (KeyError, TypeError, ValueError):
                low = high = math.nan
            if low <= high and (low, high) not in found:
                found.append((low, high))
        stack.extend(value for value in arguments.values() if hasattr(value, "__opendp_dict__"))
    return found


def audited_span(priors, pairs, rng: np.random.Generator) -> tuple[float, float]:
    """(smallest, largest) record value among :data:`SPAN_DRAWS` draws of each prior and the given pairs."""
    values = [np.asarray(p(SPAN_DRAWS, rng), dtype=np.float64).ravel() for p in priors]
    values += [np.concatenate([pair.first.ravel(), pair.second.ravel()]) for pair in pairs]
    values = np.concatenate(values)
    return float(values.min()), float(values.max())


def domain_check(mechanism, priors, pairs, shape, seed: int = 0) -> tuple[tuple, str | None]:
    """(pairs to add, note or None) for an audit of ``mechanism`` under ``priors`` and ``pairs``.

    The note says when the audited records (the priors' draws and the pairs) span less than the
    declared domain (:func:`declared_domain`), and what the audit does about it: a bounded domain
    gets the pair at its ends (record 0 at the low end vs the high end, the other records at the
    low end; added unless a given pair already reaches both ends); an unbounded one cannot be
    reached by any finite pair, so the note says to give ``--pair`` with records at the clamp bounds
    the pipeline applies. ``seed`` seeds the prior draws that read the span.
    """
    domain = declared_domain(mechanism)
    if domain is None:
        return (), None
    low, high = audited_span(priors, pairs, np.random.default_rng(seed))
    if low <= domain.low and high >= domain.high:
        return (), None
    reach = f"the audited records span [{low:g}, {high:g}] but the mechanism declares records in {domain.text()} " \
            f"({domain.source})"
    if not domain.bounded:
        return (), (reach + ": a leak that needs records further apart than the audited ones (a clamp wider than "
                    "the noise covers) cannot be seen; give --pair with records at the ends of the range the "
                    "pipeline clamps to")
    first = np.full(shape, domain.low, dtype=np.float64)
    second = first.copy()
    second[0] = domain.high
    pair = NeighbouringPair(first, second, why=f"the ends of the declared input domain {domain.text()}")
    return (pair,), (reach + f"; the pair at the domain's ends (record 0 at {domain.low:g} vs {domain.high:g}, the "
                             "others at the low end) joins Θ as a two-point prior")
