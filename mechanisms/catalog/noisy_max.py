"""Report-noisy-max with Laplace or exponential noise, returning the index or the value.

The scores are the k counting-query answers (column sums of records in [0, 1]^k); under
substitution every score moves by at most Δ = 1, in either direction, so the noise scale
is 2Δ/ε for both noise laws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import as_generator, check_choice, check_int, check_positive

from .batch import as_database_batch, column_sums
from .entry import CatalogEntry
from .guarantee import NOT_PRIVATE, Guarantee
from .neighbouring_pair import NeighbouringPair

__all__ = ["NoisyMax", "entries"]


@dataclass(frozen=True)
class NoisyMax:
    """argmax or max of the scores plus i.i.d. noise, output ``(m, 1)``.

    Parameters
    ----------
    noise : {"laplace", "exponential"}
        Laplace(0, ``scale``) or one-sided Exponential(``scale``) noise on each score.
    scale : float
        Noise scale b.
    records, queries : int
        n and k of the accepted databases.
    release : {"index", "value"}
        ``"index"``: the argmax as a float in {0, ..., k-1} (ties have probability 0);
        ``"value"``: the largest noisy score.
    """

    noise: str
    scale: float
    records: int
    queries: int
    release: str = "index"

    def __post_init__(self):
        check_choice(self.noise, "noise", ("laplace", "exponential"))
        check_positive(self.scale, "scale")
        check_int(self.records, "records", minimum=1)
        check_int(self.queries, "queries", minimum=1)
        check_choice(self.release, "release", ("index", "value"))

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_database_batch(dbs, records=self.records, attributes=self.queries)
        rng = as_generator(rng)
        scores = column_sums(dbs)
        if self.noise == "laplace":
            noisy = scores + rng.laplace(0.0, self.scale, size=scores.shape)
        else:
            noisy = scores + rng.exponential(self.scale, size=scores.shape)
        if self.release == "index":
            return np.argmax(noisy, axis=1).astype(np.float64)[:, None]
        return np.max(noisy, axis=1)[:, None]


def _pairs() -> tuple:
    mixed_first = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]])
    mixed_second = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]])
    up_first = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    up_second = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    mixed = NeighbouringPair(mixed_first, mixed_second,
                             why="scores [1,1,1,1] vs [2,0,2,0] (StatDP style): the argmax law changes most")
    up = NeighbouringPair(up_first, up_second,
                          why="scores [1,0,1,0] vs [2,1,2,1]: every score rises by 1, which moves the "
                              "law of the noisy maximum value the most")
    return mixed, up


def entries(epsilon: float = 1.0) -> list:
    """The four report-noisy-max entries (k = 4 scores)."""
    records, queries = 2, 4
    mixed, up = _pairs()
    index_claim = {"laplace": "Dwork-Roth (2014) Claim 3.9 with scale 2Δ/ε",
                   "exponential": "equals permute-and-flip (McKenna & Sheldon 2020; Ding et al. 2021)"}
    value_truth = {
        "laplace": Guarantee("dp", queries * epsilon / 2.0,
                             note="(kε/2)-DP, tight: the density of the max is a sum of products of one Laplace "
                                  "density and k-1 CDFs, each log-(1/b)-Lipschitz; in the lower tail all k "
                                  "factors scale by e^(1/b) when every score rises by 1"),
        "exponential": NOT_PRIVATE("the noisy max is at least the true max score: outputs in [1, 2) have "
                                   "positive probability on scores [1,0,1,0] and zero on [2,1,2,1]"),
    }
    sources = {("laplace", "index"): "StatDP benchmark (Ding et al. 2018): NoisyMax",
               ("laplace", "value"): "StatDP benchmark (Ding et al. 2018): NoisyMax returning the value",
               ("exponential", "index"): "McKenna & Sheldon (2020); Ding et al. (2021)",
               ("exponential", "value"): "DP-Sniper benchmark (Bichsel et al. 2021): exponential noisy max value"}
    out = []
    for noise in ("laplace", "exponential"):
        for release in ("index", "value"):
            is_index = release == "index"
            out.append(CatalogEntry(
                name=f"noisy_max_{noise}" + ("" if is_index else "_value"),
                description=f"report-noisy-max, {'Lap' if noise == 'laplace' else 'Exp'}(2/ε) noise, "
                            f"returns the {'index' if is_index else 'max value'}",
                mechanism=NoisyMax(noise, 2.0 / epsilon, records, queries, release), output_dim=1,
                output_encoding=("index of the largest noisy score, as a float in {0, ..., k-1}" if is_index
                                 else "the largest noisy score"),
                claimed=Guarantee("dp", epsilon, note=index_claim[noise] if is_index else
                                  "as if releasing the value cost no more than the index"),
                true=(Guarantee("dp", epsilon, note="an upper bound: " + index_claim[noise]) if is_index
                      else value_truth[noise]),
                buggy=not is_index,
                neighbouring="substitution: one record (row in [0,1]^k) replaced; every score moves by at most 1",
                # The index law moves most on mixed moves, the value law on a common rise.
                pairs=(mixed, up) if is_index else (up, mixed),
                source=sources[(noise, release)]))
    return out
