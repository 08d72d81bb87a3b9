"""Private mean under add/remove neighbours, correct (noisy count) and buggy (true count).

A database is a fixed table of n rows ``(value, present)`` with value ∈ [0, 1] and present
∈ {0, 1}: rows with present = 0 are absent records, so adding or removing a record flips
one row's ``present`` bit while n stays fixed. The sum S = Σ value·present and the count
C = Σ present each move by at most 1 when one row changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_generator, check_choice, check_int, check_positive

from mechanisms.catalog.batch import EpsilonRecordsMechanism, as_database_batch
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.catalog.exposure import integration_grid, laplace_log_pdf, log_integral, max_abs_log_ratio
from mechanisms.claims.guarantee import NOT_PRIVATE, Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.snapping import snap

__all__ = ["FACTORIES", "PresenceMean"]


@dataclass(frozen=True)
class PresenceMean(EpsilonRecordsMechanism):
    """Noisy mean of the present records, output ``(m, 1)``.

    Parameters
    ----------
    epsilon : float
        The claimed ε.
    records : int
        n, the table size.
    count : {"noisy", "true"}
        ``"noisy"``: (S + Lap(2/ε)) / max(C + Lap(2/ε), 1), the ε split evenly between sum and
        count (basic composition, Dwork-Roth 2014 Thm 3.16, then post-processing).
        ``"true"`` (the bug): (S + Lap(1/ε)) / max(C, 1): the division by the exact count
        is treated as post-processing although C is private.
    """

    count: str = "noisy"

    def __post_init__(self):
        super().__post_init__()
        check_choice(self.count, "count", ("noisy", "true"))

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=2)
        present = dbs[:, :, 1]
        if not np.all((present == 0.0) | (present == 1.0)):
            raise InputError("argument 'dbs' must have the 'present' column (attribute 1) in {0, 1}")
        rng = as_generator(rng)
        m = dbs.shape[0]
        total = np.sum(dbs[:, :, 0] * present, axis=1)
        count = present.sum(axis=1)
        if self.count == "noisy":
            noisy_total = snap(total + rng.laplace(0.0, 2.0 / self.epsilon, size=m))
            noisy_count = snap(count + rng.laplace(0.0, 2.0 / self.epsilon, size=m))
            return (noisy_total / np.maximum(noisy_count, 1.0))[:, None]
        noisy_total = snap(total + rng.laplace(0.0, 1.0 / self.epsilon, size=m))
        return (noisy_total / np.maximum(count, 1.0))[:, None]


def _pair(records: int) -> NeighbouringPair:
    first = np.zeros((records, 2))
    first[:-1, 1] = 1.0
    second = first.copy()
    second[-1, 1] = 1.0
    return NeighbouringPair(first, second, why="a record of value 0 is added: the sum stays 0, the count "
                            f"goes {records - 1} -> {records}, so a true-count mean is Lap(1/ε)/{records - 1} "
                            f"vs Lap(1/ε)/{records}, whose density ratio is unbounded in the tails")


NEIGHBOURING = "add/remove: one row's 'present' bit flips (rows are (value in [0,1], present in {0,1}))"
ENCODING = "the noisy mean, one column"


def _noisy_count_pair_epsilon(epsilon: float):
    """``pair -> ε`` attained by (S + L₁)/max(C + L₂, 1), L₁, L₂ ~ Lap(2/ε), by numerical integration.

    The density of Y at y is ∫ f(y·m(t) − S) m(t) f(t − C) dt with m(t) = max(t, 1) and f the
    Lap(2/ε) density (change of variables t = C + L₂); the sup of the log ratio is taken over a
    grid of y in ±60 scales of the noise.
    """
    scale = 2.0 / epsilon

    def attained(pair):
        stats = []
        for db in (pair.first, pair.second):
            present = db[:, 1]
            stats.append((float(np.sum(db[:, 0] * present)), float(present.sum())))
        t, log_w = integration_grid([1.0] + [c for _, c in stats], scale, points=2001)
        denom = np.maximum(t, 1.0)
        ys = np.linspace(-60.0 * scale, 60.0 * scale, 601)
        logs = []
        for total, count in stats:
            log_f = (laplace_log_pdf(ys[:, None] * denom[None, :] - total, scale) + np.log(denom)
                     + laplace_log_pdf(t - count, scale))
            logs.append(log_integral(log_f, log_w, axis=1))
        return max_abs_log_ratio(*logs)
    return attained


def _true_count_pair_epsilon(epsilon: float):
    """``pair -> ε``: ∞ when the counts differ (the scale of Lap(1/ε)/max(C,1) differs, so the log ratio
    of the two Laplace densities grows linearly in |y|), else |ΔS|·ε/max(C,1) (one Laplace shift)."""
    def attained(pair):
        (s1, c1), (s2, c2) = [(float(np.sum(db[:, 0] * db[:, 1])), float(db[:, 1].sum()))
                              for db in (pair.first, pair.second)]
        if max(c1, 1.0) != max(c2, 1.0):
            return math.inf
        return abs(s1 - s2) * epsilon / max(c1, 1.0)
    return attained


def mean_noisy_count(*, epsilon: float = 1.0, records: int = 3) -> CatalogEntry:
    """Noisy sum / max(noisy count, 1), Lap(2/ε) on each."""
    check_positive(epsilon, "epsilon")
    check_int(records, "records", minimum=2)
    return CatalogEntry(
        name="mean_noisy_count",
        description="noisy sum / max(noisy count, 1), Lap(2/ε) on each",
        mechanism=PresenceMean(epsilon, records, "noisy"), output_dim=1, output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="basic composition of two ε/2 Laplace releases"),
        true=Guarantee("dp", epsilon, note="an upper bound: composition plus post-processing"), true_exact=False,
        buggy=False, neighbouring=NEIGHBOURING, pairs=(_pair(records),),
        source="Dwork & Roth (2014) Thm 3.6 and 3.16", pair_epsilon=_noisy_count_pair_epsilon(epsilon))


def mean_true_count(*, epsilon: float = 1.0, records: int = 3) -> CatalogEntry:
    """Noisy sum / exact count: the wrong-count bug."""
    check_positive(epsilon, "epsilon")
    check_int(records, "records", minimum=2)
    return CatalogEntry(
        name="mean_true_count",
        description="noisy sum / exact count: the wrong-count bug (the count is not privatised)",
        mechanism=PresenceMean(epsilon, records, "true"), output_dim=1, output_encoding=ENCODING,
        claimed=Guarantee("dp", epsilon, note="Lap(1/ε) on the sum, division taken for post-processing"),
        true=NOT_PRIVATE("the exact count sets the noise scale: outputs Lap(1/ε)/c vs Lap(1/ε)/(c+1) "
                         "have an unbounded likelihood ratio"), true_exact=True,
        buggy=True, neighbouring=NEIGHBOURING, pairs=(_pair(records),),
        source="wrong-count mean bug (DP-testing benchmarks)", pair_epsilon=_true_count_pair_epsilon(epsilon))


FACTORIES = {f.__name__: f for f in (mean_noisy_count, mean_true_count)}
