"""The catalog entry: a ready mechanism with its claimed and true privacy guarantees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from estimators.validation import InputError, as_generator, check_int

from .guarantee import Guarantee
from mechanisms.priors import TwoPoint

from .neighbouring_pair import NeighbouringPair

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
        return {
            "name": self.name,
            "description": self.description,
            "claimed": self.claimed.to_dict(),
            "true": self.true.to_dict(),
            "buggy": self.buggy,
            "neighbouring": self.neighbouring,
            "record_shape": list(self.record_shape),
            "output_dim": self.output_dim,
            "output_encoding": self.output_encoding,
            "pairs": [p.to_dict() for p in self.pairs],
            "source": self.source,
        }
