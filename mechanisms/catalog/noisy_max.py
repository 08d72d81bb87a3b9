"""Report-noisy-max with Laplace or exponential noise, returning the index or the value.

The scores are the k counting-query answers (column sums of records in [0, 1]^k); under
substitution every score moves by at most Δ = 1, in either direction, so the noise scale
is 2Δ/ε for both noise laws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from estimators.validation import as_generator, check_choice, check_int, check_positive

from mechanisms.catalog.batch import VectorizedMechanism, as_database_batch, column_sums
from mechanisms.catalog.entry import CatalogEntry
from mechanisms.snapping import snap
from mechanisms.catalog.exposure import integration_grid, laplace_log_cdf, laplace_log_pdf, log_integral, max_abs_log_ratio
from mechanisms.claims.guarantee import NOT_PRIVATE, Guarantee
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

__all__ = ["FACTORIES", "NoisyMax"]


@dataclass(frozen=True)
class NoisyMax(VectorizedMechanism):
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
        return snap(np.max(noisy, axis=1))[:, None]  # rounded to 2^-32: the float sum's low bits say nothing


def _pairs(records: int, scores: int) -> tuple:
    ones_zeros = np.array([float(i % 2 == 0) for i in range(scores)])
    mixed_first = np.stack([ones_zeros, 1.0 - ones_zeros])
    mixed_second = np.stack([ones_zeros, ones_zeros])
    up_first = np.stack([ones_zeros, np.zeros(scores)])
    up_second = np.stack([ones_zeros, np.ones(scores)])
    mixed = NeighbouringPair(mixed_first, mixed_second,
                             why="scores [1,1,1,...] vs [2,0,2,...] (StatDP style): the argmax law changes most")
    up = NeighbouringPair(up_first, up_second,
                          why="scores [1,0,1,...] vs [2,1,2,...]: every score rises by 1, which moves the "
                              "law of the noisy maximum value the most")
    return mixed, up


def _log_noise(noise: str, scale: float):
    """(log density, log CDF) of the noise law."""
    if noise == "laplace":
        return (lambda z: laplace_log_pdf(z, scale)), (lambda z: laplace_log_cdf(z, scale))
    with np.errstate(divide="ignore"):
        return ((lambda z: np.where(z >= 0, -np.log(scale) - np.maximum(z, 0.0) / scale, -np.inf)),
                (lambda z: np.where(z > 0, np.log(-np.expm1(-np.maximum(z, 1e-300) / scale)), -np.inf)))


def _pair_epsilon(noise: str, scale: float, release: str):
    """``pair -> ε`` attained by report-noisy-max, by numerical integration over the noisy maximum x.

    The maximum of independent noisy scores q_i + Z_i has density Σ_j f(x − q_j) Π_{i≠j} F(x − q_i),
    and the index j is reported with probability ∫ f(x − q_j) Π_{i≠j} F(x − q_i) dx (order
    statistics; e.g. Dwork and Roth 2014, proof of Claim 3.9). The value's ε is the sup of the log
    density ratio over a grid of x; for exponential noise a different maximum score moves the
    support's lower end, which gives ∞.
    """
    log_pdf, log_cdf = _log_noise(noise, scale)

    def attained(pair):
        answers = [column_sums(db[None])[0] for db in (pair.first, pair.second)]
        if noise == "exponential" and release == "value" and answers[0].max() != answers[1].max():
            return math.inf
        x, log_w = integration_grid(np.concatenate(answers), scale)
        per_index = []
        for q in answers:
            log_cdfs = log_cdf(x[None, :] - q[:, None])  # (k, grid)
            # log f(x − q_j) + Σ_{i≠j} log F(x − q_i)
            terms = log_pdf(x[None, :] - q[:, None]) + _sum_without(log_cdfs)
            per_index.append(terms)
        if release == "index":
            return max_abs_log_ratio(*(log_integral(t, log_w, axis=1) for t in per_index))
        return max_abs_log_ratio(*(logsumexp(t, axis=0) for t in per_index))
    return attained


def _sum_without(log_terms: np.ndarray) -> np.ndarray:
    """Σ_{i≠j} log_terms[i] for every j, exact where some term is −inf."""
    return np.stack([np.delete(log_terms, j, axis=0).sum(axis=0) for j in range(log_terms.shape[0])])


INDEX_CLAIM = {"laplace": "Dwork-Roth (2014) Claim 3.9 with scale 2Δ/ε",
               "exponential": "equals permute-and-flip (McKenna & Sheldon 2020; Ding et al. 2021)"}
SOURCES = {("laplace", "index"): "StatDP benchmark (Ding et al. 2018): NoisyMax",
           ("laplace", "value"): "StatDP benchmark (Ding et al. 2018): NoisyMax returning the value",
           ("exponential", "index"): "McKenna & Sheldon (2020); Ding et al. (2021)",
           ("exponential", "value"): "DP-Sniper benchmark (Bichsel et al. 2021): exponential noisy max value"}
NEIGHBOURING = "substitution: one record (row in [0,1]^k) replaced; every score moves by at most 1"


def _entry(noise: str, release: str, epsilon: float, scores: int) -> CatalogEntry:
    check_positive(epsilon, "epsilon")
    check_int(scores, "scores", minimum=2)
    records = 2
    mixed, up = _pairs(records, scores)
    is_index = release == "index"
    scale = 2.0 / epsilon
    if is_index:
        true, exact = Guarantee("dp", epsilon, note="an upper bound: " + INDEX_CLAIM[noise]), False
    elif noise == "laplace":
        true, exact = Guarantee("dp", scores * epsilon / 2.0,
                                note="(kε/2)-DP, exact: the density of the max is a sum of products of one "
                                     "Laplace density and k-1 CDFs, each log-(1/b)-Lipschitz; in the lower tail all "
                                     "k factors scale by e^(1/b) when every score rises by 1"), True
    else:
        true, exact = NOT_PRIVATE("the noisy max is at least the true max score: outputs in [1, 2) have positive "
                                  "probability on scores [1,0,1,0] and zero on [2,1,2,1]"), True
    return CatalogEntry(
        name=f"noisy_max_{noise}" + ("" if is_index else "_value"),
        description=f"report-noisy-max over {scores} scores, {'Lap' if noise == 'laplace' else 'Exp'}(2/ε) noise, "
                    f"returns the {'index' if is_index else 'max value'}",
        mechanism=NoisyMax(noise, scale, records, scores, release), output_dim=1,
        output_encoding=("index of the largest noisy score, as a float in {0, ..., k-1}" if is_index
                         else "the largest noisy score"),
        claimed=Guarantee("dp", epsilon, note=INDEX_CLAIM[noise] if is_index else
                          "as if releasing the value cost no more than the index"),
        true=true, true_exact=exact, buggy=not is_index, neighbouring=NEIGHBOURING,
        # The index law moves most on mixed moves, the value law on a common rise.
        pairs=(mixed, up) if is_index else (up, mixed),
        source=SOURCES[(noise, release)], pair_epsilon=_pair_epsilon(noise, scale, release))


def noisy_max_laplace(*, epsilon: float = 1.0, scores: int = 4) -> CatalogEntry:
    """Index of the largest score plus Lap(2/ε)."""
    return _entry("laplace", "index", epsilon, scores)


def noisy_max_laplace_value(*, epsilon: float = 1.0, scores: int = 4) -> CatalogEntry:
    """Largest score plus Lap(2/ε) (the value, not the index)."""
    return _entry("laplace", "value", epsilon, scores)


def noisy_max_exponential(*, epsilon: float = 1.0, scores: int = 4) -> CatalogEntry:
    """Index of the largest score plus Exp(2/ε)."""
    return _entry("exponential", "index", epsilon, scores)


def noisy_max_exponential_value(*, epsilon: float = 1.0, scores: int = 4) -> CatalogEntry:
    """Largest score plus Exp(2/ε) (the value)."""
    return _entry("exponential", "value", epsilon, scores)


FACTORIES = {f.__name__: f for f in (noisy_max_laplace, noisy_max_laplace_value, noisy_max_exponential,
                                     noisy_max_exponential_value)}
