"""RAPPOR and one-time RAPPOR, one-hot or with a Bloom filter (Erlingsson, Pihur and Korolova, CCS 2014).

Each record is a value from a domain of k items, one-hot encoded (basic RAPPOR: one hash,
h = 1, no Bloom-filter collisions). Permanent randomized response (PRR) sets each bit to 1
with probability f/2, to 0 with probability f/2, and keeps it otherwise. Instantaneous
randomized response (IRR) reports 1 with probability q where the PRR bit is 1 and p where
it is 0. One-time RAPPOR releases the PRR bits only. Changing a value flips two bits, so
(Erlingsson et al., Section 4, with h = 1):

- PRR / one-time RAPPOR: ε∞ = 2 ln((1 − f/2)/(f/2));
- one RAPPOR report: ε₁ = ln(q*(1 − p*)/(p*(1 − q*))) with
  q* = f(p + q)/2 + (1 − f)q and p* = f(p + q)/2 + (1 − f)p.

With a Bloom filter (Step 1 of the paper) each item sets the bits of h hash functions in a
filter of b bits, and the bounds scale by h (Erlingsson et al., Thm 1 and Section 4); where the
hashes of two items collide, fewer bits differ and the true ε is smaller, which the entries
compute by enumerating the item pairs.

Each call draws fresh PRR bits: it is one client's first report (the memoisation across
reports does not arise within a single report).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from estimators.validation import InputError, as_generator, check_int, check_probability

from mechanisms.catalog.batch import VectorizedMechanism, as_database_batch
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

__all__ = ["FACTORIES", "Rappor", "bloom_bit", "one_report_epsilon", "permanent_epsilon"]


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
class Rappor(VectorizedMechanism):
    """Basic RAPPOR over one-hot records; output ``(m, n·k)`` of 0.0/1.0 bits, record by record.

    Parameters
    ----------
    f : float
        PRR noise level in (0, 1).
    records, items : int
        n and the domain size k.
    p, q : float or None
        IRR probabilities (0 < p < q < 1); both ``None`` for one-time RAPPOR (PRR only).
    hashes, filter_size : int
        Bloom-filter encoding with h = ``hashes`` hash functions into ``filter_size`` bits
        (Erlingsson et al., Section 3, Step 1); ``hashes=0`` is the one-hot encoding of basic
        RAPPOR (one bit per item).
    """

    f: float
    records: int
    items: int
    p: float | None = None
    q: float | None = None
    hashes: int = 0
    filter_size: int = 0

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
        check_int(self.hashes, "hashes", minimum=0)
        if self.hashes:
            check_int(self.filter_size, "filter_size", minimum=1)

    @cached_property
    def encoding(self) -> np.ndarray:
        """(items, bits) 0/1 matrix: the bits each item sets (identity for one-hot); read-only.

        Computed once per mechanism (items x filter_size x hashes hashes, about 0.2 ms for the
        catalog's Bloom entries), not on every call."""
        if not self.hashes:
            matrix = np.eye(self.items)
        else:
            matrix = np.array([[float(any(bloom_bit(item, j, self.filter_size) == b for j in range(self.hashes)))
                                for b in range(self.filter_size)] for item in range(self.items)])
        matrix.setflags(write=False)
        return matrix

    @property
    def bit_probabilities(self) -> tuple[float, float]:
        """(P(report 1 | bit 1), P(report 1 | bit 0)): (q*, p*) for RAPPOR, (1 − f/2, f/2) for one-time RAPPOR."""
        if self.p is None:
            return 1.0 - self.f / 2.0, self.f / 2.0
        f, p, q = self.f, self.p, self.q
        return f * (p + q) / 2.0 + (1.0 - f) * q, f * (p + q) / 2.0 + (1.0 - f) * p

    def pair_log_ratio_extremes(self, first_bits, second_bits) -> tuple[float, float]:
        """(sup log P/Q, sup log Q/P) of the reports on two encoded bit vectors.

        Report bits are independent given the encoded bits; a bit that is 1 in the first and 0
        in the second contributes at most A = log(q*/p*) one way and B = log((1−p*)/(1−q*)) the
        other (Erlingsson et al., Section 4), so with a such bits and b the other way round the
        extremes are aA + bB and bA + aB.
        """
        high, low = self.bit_probabilities
        up, down = math.log(high / low), math.log((1.0 - low) / (1.0 - high))
        a = float(np.sum((first_bits == 1) & (second_bits == 0)))
        b = float(np.sum((first_bits == 0) & (second_bits == 1)))
        return a * up + b * down, b * up + a * down

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
        bits = bits @ self.encoding  # (m, n, bits): each record's encoded bits
        u = rng.random(bits.shape)
        permanent = np.where(u < self.f / 2.0, 1.0, np.where(u < self.f, 0.0, bits))
        if self.p is not None:
            report_one = np.where(permanent == 1.0, self.q, self.p)
            permanent = (rng.random(bits.shape) < report_one).astype(np.float64)
        return permanent.reshape(bits.shape[0], -1)


def bloom_bit(item: int, index: int, filter_size: int) -> int:
    """The bit that hash function ``index`` maps ``item`` to: BLAKE2b of ``"index:item"`` modulo the filter size.

    Any fixed family of hash functions fits RAPPOR's Bloom filter (Erlingsson et al. use MD5);
    DP-Sniper's benchmark uses MurmurHash3 with seed ``index``.
    """
    digest = hashlib.blake2b(f"{index}:{item}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % filter_size


def _encoded(mech: Rappor, db: np.ndarray) -> np.ndarray:
    return db @ mech.encoding


def _pair_epsilon(mech: Rappor):
    """``pair -> ε``: the larger extreme of :meth:`Rappor.pair_log_ratio_extremes` over the records' encoded bits."""
    return lambda pair: max(mech.pair_log_ratio_extremes(_encoded(mech, pair.first), _encoded(mech, pair.second)))


def _worst_pair(mech: Rappor, records: int) -> tuple[NeighbouringPair, float]:
    """The neighbouring pair (record 0 changes item) whose encodings differ most, and its ε (enumeration)."""
    eye = np.eye(mech.items)
    best = None
    for i in range(mech.items):
        for j in range(mech.items):
            if i != j:
                eps = max(mech.pair_log_ratio_extremes(mech.encoding[i], mech.encoding[j]))
                if best is None or eps > best[0] + 1e-12:
                    best = (eps, i, j)
    eps, i, j = best
    first = np.stack([eye[i]] + [eye[(i + 1 + r) % mech.items] for r in range(records - 1)])
    second = first.copy()
    second[0] = eye[j]
    return NeighbouringPair(first, second, why=f"record 0 changes item {i} -> {j}: the encodings differ most"), eps


ENCODING_TEXT = "n·b report bits (0.0/1.0), record by record"
SOURCE = "Erlingsson, Pihur & Korolova (2014)"
NEIGHBOURING = "substitution: one record's value changes"
RECORDS = 2


def _entry(name, mech: Rappor, description: str, claimed: float, claim_note: str) -> CatalogEntry:
    pair, exact = _worst_pair(mech, RECORDS)
    collision = "" if exact >= claimed - 1e-12 else "; below the claim: hash collisions make the encodings overlap"
    return CatalogEntry(
        name=name, description=description, mechanism=mech, output_dim=RECORDS * mech.encoding.shape[1],
        output_encoding=ENCODING_TEXT, claimed=Guarantee("ldp", claimed, note=claim_note),
        true=Guarantee("ldp", exact, note="exact: the largest over item pairs of the differing encoded bits' "
                                          "ratios (enumerated)" + collision),
        true_exact=True, buggy=exact > claimed + 1e-12, neighbouring=NEIGHBOURING, pairs=(pair,), source=SOURCE,
        pair_epsilon=_pair_epsilon(mech))


def one_time_rappor(*, f: float = 0.5, items: int = 3) -> CatalogEntry:
    """One-time RAPPOR (PRR only), one-hot over k items."""
    mech = Rappor(f, RECORDS, check_int(items, "items", minimum=2))
    return _entry("one_time_rappor", mech, f"one-time RAPPOR (PRR only), f = {f:g}, one-hot over {items} items",
                  permanent_epsilon(f), "ε∞ = 2 ln((1-f/2)/(f/2)), Erlingsson et al. Thm 1")


def rappor(*, f: float = 0.5, p: float = 0.5, q: float = 0.75, items: int = 3) -> CatalogEntry:
    """Basic RAPPOR, one report, one-hot over k items."""
    mech = Rappor(f, RECORDS, check_int(items, "items", minimum=2), p, q)
    return _entry("rappor", mech, f"basic RAPPOR, one report, f = {f:g}, p = {p:g}, q = {q:g}, one-hot over "
                  f"{items} items", one_report_epsilon(f, p, q), "ε₁ of one report, Erlingsson et al. Section 4")


def bloom_one_time_rappor(*, f: float = 0.95, hashes: int = 4, filter_size: int = 20, items: int = 4) -> CatalogEntry:
    """One-time RAPPOR with a Bloom filter (DP-Sniper's defaults f = 0.95, h = 4, 20 bits)."""
    mech = Rappor(f, RECORDS, check_int(items, "items", minimum=2), hashes=check_int(hashes, "hashes", minimum=1),
                  filter_size=filter_size)
    return _entry("bloom_one_time_rappor", mech,
                  f"one-time RAPPOR (PRR only), f = {f:g}, Bloom filter of {filter_size} bits with {hashes} hashes, "
                  f"{items} items", hashes * permanent_epsilon(f), "ε∞ = 2h ln((1-f/2)/(f/2)), Erlingsson et al. Thm 1")


def bloom_rappor(*, f: float = 0.75, p: float = 0.45, q: float = 0.55, hashes: int = 4, filter_size: int = 20,
                 items: int = 4) -> CatalogEntry:
    """RAPPOR with a Bloom filter, one report (DP-Sniper's defaults f = 0.75, p = 0.45, q = 0.55, h = 4, 20 bits)."""
    mech = Rappor(f, RECORDS, check_int(items, "items", minimum=2), p, q,
                  hashes=check_int(hashes, "hashes", minimum=1), filter_size=filter_size)
    return _entry("bloom_rappor", mech,
                  f"RAPPOR, one report, f = {f:g}, p = {p:g}, q = {q:g}, Bloom filter of {filter_size} bits with "
                  f"{hashes} hashes, {items} items", hashes * one_report_epsilon(f, p, q),
                  "ε₁ = h ln(q*(1-p*)/(p*(1-q*))), Erlingsson et al. Section 4")


FACTORIES = {f.__name__: f for f in (one_time_rappor, rappor, bloom_one_time_rappor, bloom_rappor)}
