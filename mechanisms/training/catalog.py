"""DP-SGD catalog entries: correct DP-SGD at a few (σ, q, T) and the classic implementation bugs.

Every entry trains logistic regression on a small generated training set whose last row is a
gradient canary, against the neighbour where it is a null record (add/remove of the canary,
:mod:`mechanisms.training.records`). The claim is the accountant's (ε, δ) at δ = 1e-5
(:mod:`mechanisms.training.accountant`).
"""

from __future__ import annotations

import math

from mechanisms.catalog.entry import CatalogEntry
from mechanisms.guarantee import NOT_PRIVATE, Guarantee
from mechanisms.neighbouring_pair import NeighbouringPair

from .accountant import dpsgd_epsilon
from .dpsgd import DPSGD
from .records import gaussian_training_set, gradient_canary, null_record, with_record

__all__ = ["CORRECT_SETTINGS", "canary_pair", "entries"]

DELTA = 1e-5
RECORDS, FEATURES = 16, 2
# (σ, q, T) of the correct entries.
CORRECT_SETTINGS = ((8.0, 1.0, 4), (1.0, 1.0, 4), (2.0, 0.25, 16), (0.8, 0.5, 8))
# The bugs' setting: σ = 8, full batch, T = 4 is (≈1.0, 1e-5)-DP when implemented correctly.
_BUG_SIGMA, _BUG_STEPS = 8.0, 4
_NEIGHBOURING = ("add/remove of the canary: its row is replaced by a null record (n fixed); rows are "
                 "[x_0 (canary coordinate), x_1, x_2, y, role]")
_SOURCE = "Abadi et al. (2016) Alg. 1; canaries and bugs as audited by Nasr et al. (2021, 2023)"


def canary_pair(records: int = RECORDS, features: int = FEATURES, seed: int = 0, canary=None) -> NeighbouringPair:
    """The training set with the canary (default: a gradient canary) in its last row vs a null record there."""
    base = gaussian_training_set(records - 1, features - 1, seed=seed)
    canary = gradient_canary(base) if canary is None else canary
    return NeighbouringPair(with_record(base, canary), with_record(base, null_record(base)),
                            why="the canary is present in the first training set and replaced by a null record in the second")


def _dp(sigma, q, steps, note):
    return Guarantee("dp", dpsgd_epsilon(sigma, q, steps, DELTA), DELTA, note=note)


def _entry(name, description, mechanism, claimed, true, buggy, pair):
    return CatalogEntry(name=name, description=description, mechanism=mechanism, output_dim=mechanism.output_dim,
                        output_encoding="the canary coordinate of each step's noisy clipped gradient sum (T columns)",
                        claimed=claimed, true=true, buggy=buggy, neighbouring=_NEIGHBOURING, pairs=(pair,),
                        source=_SOURCE,
                        # ∞ of a not-private entry is exact; every finite true ε here is an accountant's
                        # (or a composition) upper bound. The pair's attained ε is not computed.
                        true_exact=not true.private, pair_epsilon=None)


def entries() -> list:
    """The DP-SGD entries (white-box gradient-trace release: what DP-SGD's accounting covers)."""
    pair = canary_pair()

    def run(sigma, q, steps, **kwargs):
        return DPSGD(RECORDS, FEATURES, sigma, sampling_rate=q, steps=steps, release="gradient_trace", **kwargs)

    accountant = "dp-accounting RDP accountant, Poisson-subsampled Gaussian"
    out = []
    for sigma, q, steps in CORRECT_SETTINGS:
        claim = _dp(sigma, q, steps, accountant)
        out.append(_entry(f"dpsgd_s{sigma:g}_q{q:g}_t{steps}", f"correct DP-SGD, σ = {sigma:g}, q = {q:g}, T = {steps}",
                          run(sigma, q, steps), claim,
                          Guarantee("dp", claim.epsilon, DELTA, note="an upper bound: the accountant's"), False, pair))
    sigma, q, steps = _BUG_SIGMA, 1.0, _BUG_STEPS
    out.append(_entry(
        "dpsgd_no_clipping", "DP-SGD without per-sample clipping: a gradient of norm 10·C enters the sum as is",
        run(sigma, q, steps, bug="no-clipping"), _dp(sigma, q, steps, accountant),
        NOT_PRIVATE("the sum's sensitivity is unbounded: a record's unclipped gradient can be arbitrarily large "
                    "against noise σC"), True, pair))
    clip = 10.0
    out.append(_entry(
        "dpsgd_unscaled_noise", f"DP-SGD with noise std σ instead of σ·C (C = {clip:g})",
        run(sigma, q, steps, clip_norm=clip, bug="unscaled-noise"), _dp(sigma, q, steps, accountant),
        _dp(sigma / clip, q, steps, "the accountant at noise multiplier σ/C: noise σ against sensitivity C"), True, pair))
    q_reuse = 0.5
    out.append(_entry(
        "dpsgd_reused_noise", "DP-SGD drawing its noise once per run and adding it at every step",
        run(sigma, q_reuse, steps, bug="reused-noise"), _dp(sigma, q_reuse, steps, accountant),
        NOT_PRIVATE("the difference of two steps' noisy sums is noiseless: on the canary coordinate it is "
                    "C·(c_t − c_s), non-zero with probability 1 − q^T − (1 − q)^T with the canary and 0 without"),
        True, pair))
    sigma_s, q_s, steps_s = 1.0, 0.25, 8
    epochs = steps_s * q_s
    rho = epochs / (2.0 * sigma_s**2)
    out.append(_entry(
        "dpsgd_shuffle_as_poisson", "shuffled fixed-size batches accounted as Poisson sampling",
        run(sigma_s, q_s, steps_s, sampling="shuffle"), _dp(sigma_s, q_s, steps_s, accountant + " (wrongly)"),
        Guarantee("dp", rho + 2.0 * math.sqrt(rho * math.log(1.0 / DELTA)), DELTA,
                  note=(f"an upper bound with no amplification: each of the {epochs:g} epochs is one Gaussian "
                        f"release of the canary (ρ = E/(2σ²) zCDP, Bun-Steinke 2016 Prop. 1.3, 1.6, Lemma 2.3; "
                        f"the shuffle mixes them, and Rényi divergence is jointly quasi-convex); Chua et al. (2024) "
                        f"show shuffling can be much less private than the Poisson accountant says")),
        True, pair))
    q_true, q_fed = 0.5, 0.05
    out.append(_entry(
        "dpsgd_wrong_sampling_rate", f"DP-SGD at q = {q_true:g} whose accountant was fed q = {q_fed:g}",
        run(1.0, q_true, steps), _dp(1.0, q_fed, steps, accountant + f" at the wrong q = {q_fed:g}"),
        _dp(1.0, q_true, steps, f"the accountant at the true q = {q_true:g}"), True, pair))
    return out
