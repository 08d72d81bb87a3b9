"""The catalog entry: a ready mechanism with its claimed and true privacy guarantees."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from estimators.validation import InputError, as_generator, check_int

from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.priors import TwoPoint

from mechanisms.inputs.neighbouring_pair import NeighbouringPair

__all__ = ["CatalogEntry"]


@dataclass(frozen=True, eq=False)
class CatalogEntry:
    """One reference mechanism of the catalog.

    Attributes
    ----------
    name : str
        Registry key.
    description : str
        What the mechanism computes and, for a buggy one, what the bug is.
    mechanism : callable
        ``mechanism(dbs, rng) -> (m, output_dim)`` float array, batched over ``(m, n, k)``.
    output_dim : int
        d, the number of output columns.
    output_encoding : str
        How indices, ⊤/⊥ and released values are encoded as floats.
    claimed : Guarantee
        What the mechanism (or its author) claims.
    true : Guarantee
        The known true guarantee (``notion="none"`` when not private).
    buggy : bool
        Whether the implementation fails its claim.
    neighbouring : str
        The neighbouring relation both guarantees refer to.
    pairs : tuple of NeighbouringPair
        Neighbouring input pairs that expose the mechanism; the first one builds ``prior``.
    source : str
        The publication or benchmark the mechanism and its guarantees come from.
    true_exact : bool
        Whether ``true.epsilon`` is the mechanism's exact ε (the smallest that holds) rather
        than only an upper bound on it. A not-private entry's ∞ is exact.
    pair_epsilon : callable or None
        ``pair_epsilon(pair) -> float``: the ε a neighbouring pair attains on this mechanism
        (the largest |log-likelihood ratio| between its two output laws, at ``true.delta`` for
        approximate DP); ``None`` where it is not computed (the MI notions).
    parameters : dict
        The parameter values the entry was built with (settable as ``catalog:NAME?KEY=VALUE``).
    """

    name: str
    description: str
    mechanism: Callable
    output_dim: int
    output_encoding: str
    claimed: Guarantee
    true: Guarantee
    buggy: bool
    neighbouring: str
    pairs: tuple
    source: str
    true_exact: bool
    pair_epsilon: Callable | None
    parameters: dict = field(default_factory=dict)

    def __post_init__(self):
        check_int(self.output_dim, "output_dim", minimum=1)
        if not self.pairs or not all(isinstance(p, NeighbouringPair) for p in self.pairs):
            raise InputError("argument 'pairs' must be a non-empty tuple of NeighbouringPair")
        shapes = {p.record_shape for p in self.pairs}
        if len(shapes) != 1:
            raise InputError(f"argument 'pairs' must share one record shape, got {sorted(shapes)}")

    @property
    def record_shape(self) -> tuple[int, int]:
        """``(n, k)`` of the databases the mechanism accepts."""
        return self.pairs[0].record_shape

    @cached_property
    def exposing_epsilon(self) -> float | None:
        """The largest ε any of ``pairs`` attains (computed once); ``None`` if not computed.

        At most ``true.epsilon`` (a pair attains no more than the mechanism's ε); equal to it
        when a pair is a worst case.
        """
        if self.pair_epsilon is None:
            return None
        attained = [self.pair_epsilon(pair) for pair in self.pairs]
        if any(value is None for value in attained):  # too many outputs to enumerate
            return None
        return max(float(value) for value in attained)

    @property
    def true_kind(self) -> str:
        """``"exact"`` or ``"upper bound"``: what ``true.epsilon`` is."""
        return "exact" if self.true_exact else "upper bound"

    @property
    def prior(self) -> TwoPoint:
        """Two-point prior on the first exposing pair (each database with probability 1/2)."""
        return self.pairs[0].prior()

    def sample(self, m: int, seed=None) -> tuple[np.ndarray, np.ndarray]:
        """Draw m databases from ``prior`` and run the mechanism once on each.

        Returns
        -------
        dbs : ndarray, shape (m, n, k)
        outputs : ndarray, shape (m, output_dim)
        """
        rng = as_generator(seed)
        dbs = self.prior(m, rng)
        return dbs, self.mechanism(dbs, rng)

    def to_dict(self) -> dict:
        """JSON-ready summary (the mechanism itself is left out)."""
        # Not the field walk of estimators.result_forms: callables are left out and half the keys
        # are computed (true_epsilon_is, exposing_pair_epsilon, record_shape).
        return {
            "name": self.name,
            "description": self.description,
            "claimed": self.claimed.to_dict(),
            "true": self.true.to_dict(),
            "true_epsilon_is": self.true_kind,
            "exposing_pair_epsilon": _json_number(self.exposing_epsilon),
            "parameters": dict(self.parameters),
            "buggy": self.buggy,
            "neighbouring": self.neighbouring,
            "record_shape": list(self.record_shape),
            "output_dim": self.output_dim,
            "output_encoding": self.output_encoding,
            "pairs": [p.to_dict() for p in self.pairs],
            "source": self.source,
        }


def _json_number(value):
    """``None`` stays ``None``; ∞ becomes the string ``"inf"`` (JSON has no infinity)."""
    if value is None:
        return None
    return "inf" if math.isinf(value) else value
