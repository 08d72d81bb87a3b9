"""Basic RAPPOR and one-time RAPPOR (Erlingsson, Pihur and Korolova, CCS 2014).

Each record is a value from a domain of k items, one-hot encoded (basic RAPPOR: one hash,
h = 1, no Bloom-filter collisions). Permanent randomized response (PRR) sets each bit to 1
with probability f/2, to 0 with probability f/2, and keeps it otherwise. Instantaneous
randomized response (IRR) reports 1 with probability q where the PRR bit is 1 and p where
it is 0. One-time RAPPOR releases the PRR bits only. Changing a value flips two bits, so
(Erlingsson et al., Section 4, with h = 1):

- PRR / one-time RAPPOR: ε∞ = 2 ln((1 − f/2)/(f/2));
- one RAPPOR report: ε₁ = ln(q*(1 − p*)/(p*(1 − q*))) with
  q* = f(p + q)/2 + (1 − f)q and p* = f(p + q)/2 + (1 − f)p.

Each call draws fresh PRR bits: it is one client's first report (the memoisation across
reports does not arise within a single report).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_generator, check_int, check_probability

from .batch import as_database_batch
from .entry import CatalogEntry
from .guarantee import Guarantee
from .neighbouring_pair import NeighbouringPair

__all__ = ["Rappor", "entries", "one_report_epsilon", "permanent_epsilon"]


def permanent_epsilon(f: float) -> float:
    """ε∞ = 2 ln((1 − f/2)/(f/2)) of the PRR with one-hot encoding (Erlingsson et al. 2014, Thm 1, h = 1)."""
    f = check_probability(f, "f")
    return 2.0 * math.log((1.0 - f / 2.0) / (f / 2.0))


def one_report_epsilon(f: float, p: float, q: float) -> float:
    """ε₁ of one PRR+IRR report, one-hot encoding (Erlingsson et al. 2014, Section 4, h = 1)."""
    f = check_probability(f, "f")
    p = check_probability(p, "p")
    q = check_probability(q, "q")
    q_star = f * (p + q) / 2.0 + (1.0 - f) * q
    p_star = f * (p + q) / 2.0 + (1.0 - f) * p
    return math.log(q_star * (1.0 - p_star) / (p_star * (1.0 - q_star)))


@dataclass(frozen=True)
class Rappor:
    """Basic RAPPOR over one-hot records; output ``(m, n·k)`` of 0.0/1.0 bits, record by record.

    Parameters
    ----------
    f : float
        PRR noise level in (0, 1).
    records, items : int
        n and the domain size k.
    p, q : float or None
        IRR probabilities (0 < p < q < 1); both ``None`` for one-time RAPPOR (PRR only).
    """

    f: float
    records: int
    items: int
    p: float | None = None
    q: float | None = None

    def __post_init__(self):
        check_probability(self.f, "f")
        check_int(self.records, "records", minimum=1)
        check_int(self.items, "items", minimum=2)
        if (self.p is None) != (self.q is None):
            raise InputError("arguments 'p' and 'q' must both be given (RAPPOR) or both omitted (one-time RAPPOR)")
        if self.p is not None:
            check_probability(self.p, "p")
            check_probability(self.q, "q")
            if not self.p < self.q:
                raise InputError(f"argument 'q' must exceed 'p', got p={self.p!r}, q={self.q!r}")

    @property
    def epsilon(self) -> float:
        """ε₁ of one report (RAPPOR) or ε∞ (one-time RAPPOR)."""
        if self.p is None:
            return permanent_epsilon(self.f)
        return one_report_epsilon(self.f, self.p, self.q)

    def __call__(self, dbs, rng=None) -> np.ndarray:
        bits = as_database_batch(dbs, records=self.records, attributes=self.items, binary=True)
        if not np.all(bits.sum(axis=2) == 1.0):
            raise InputError("argument 'dbs' must hold one-hot records (exactly one 1 per row)")
        rng = as_generator(rng)
        u = rng.random(bits.shape)
        permanent = np.where(u < self.f / 2.0, 1.0, np.where(u < self.f, 0.0, bits))
        if self.p is not None:
            report_one = np.where(permanent == 1.0, self.q, self.p)
            permanent = (rng.random(bits.shape) < report_one).astype(np.float64)
        return permanent.reshape(bits.shape[0], -1)


def entries(f: float = 0.5, p: float = 0.5, q: float = 0.75) -> list:
    """RAPPOR and one-time RAPPOR on n = 2 records over k = 3 items (the paper's f, p, q)."""
    records, items = 2, 3
    first = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    second = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    pair = NeighbouringPair(first, second, why="record 0 changes item 0 -> 2: two bits flip")
    encoding = "n·k report bits (0.0/1.0), record by record"
    source = "Erlingsson, Pihur & Korolova (2014)"
    one_time = Rappor(f, records, items)
    full = Rappor(f, records, items, p, q)
    return [
        CatalogEntry(
            name="one_time_rappor", description=f"one-time RAPPOR (PRR only), f = {f:g}, one-hot over {items} items",
            mechanism=one_time, output_dim=records * items, output_encoding=encoding,
            claimed=Guarantee("ldp", one_time.epsilon, note="ε∞ = 2 ln((1-f/2)/(f/2)), Erlingsson et al. Thm 1"),
            true=Guarantee("ldp", one_time.epsilon, note="tight: two bits flip"),
            buggy=False, neighbouring="substitution: one record's value changes", pairs=(pair,), source=source),
        CatalogEntry(
            name="rappor", description=f"basic RAPPOR, one report, f = {f:g}, p = {p:g}, q = {q:g}, "
                                       f"one-hot over {items} items",
            mechanism=full, output_dim=records * items, output_encoding=encoding,
            claimed=Guarantee("ldp", full.epsilon, note="ε₁ of one report, Erlingsson et al. Section 4"),
            true=Guarantee("ldp", full.epsilon, note="tight: two bits flip"),
            buggy=False, neighbouring="substitution: one record's value changes", pairs=(pair,), source=source),
    ]
