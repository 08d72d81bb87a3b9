"""DP-SGD catalog entries: correct DP-SGD at a few (σ, q, T) and the classic implementation bugs.

Every entry trains logistic regression on a small generated training set whose last row is a
gradient canary, against the neighbour where it is a null record (add/remove of the canary,
:mod:`mechanisms.training.records`), and releases the canary coordinate of every step's noisy
clipped gradient sum (``release="gradient_trace"``: the white-box threat model DP-SGD's
accounting covers). The claim is the accountant's (ε, δ) (:mod:`mechanisms.training.accountant`).

Each factory's keyword arguments are the entry's settable parameters (``miaudit audit
--mechanism 'catalog:dpsgd_no_clipping?steps=8'``, :mod:`mechanisms.catalog.parameters`).

True guarantees. With full batches (q = 1) the canary coordinate of step t is
C·[canary present] + N(0, σ²C²), independently over the steps, and T adaptively composed
Gaussian mechanisms of sensitivity C and noise σC are exactly μ-GDP with μ = √T/σ (Dong, Roth
and Su 2022, Corollary 3.3); this pair attains it, so the true ε(δ) is the Gaussian profile of
Balle and Wang (2018), Theorem 8, at sensitivity √T and noise σ (exact). With Poisson sampling
(q < 1) the true ε is only bounded above by the accountant.
"""

from __future__ import annotations

import math

from mechanisms.catalog.entry import CatalogEntry
from mechanisms.catalog.sums import gaussian_exact_epsilon
from mechanisms.claims.guarantee import NOT_PRIVATE, Guarantee
from mechanisms.claims.zcdp_to_dp import zcdp_epsilon_bun_steinke
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

from estimators.validation import InputError, check_probability

from mechanisms.training.accountant import dpsgd_epsilon
from mechanisms.training.dpsgd import DPSGD
from mechanisms.training.records import gaussian_training_set, gradient_canary, null_record, with_record

__all__ = ["CORRECT_SETTINGS", "FACTORIES", "canary_pair", "entries"]

DELTA = 1e-5
RECORDS, FEATURES = 16, 2
# (σ, q, T) of the correct entries.
CORRECT_SETTINGS = ((8.0, 1.0, 4), (1.0, 1.0, 4), (2.0, 0.25, 16), (0.8, 0.5, 8))
_NEIGHBOURING = ("add/remove of the canary: its row is replaced by a null record (n fixed); rows are "
                 "[x_0 (canary coordinate), x_1, y, role]")
_SOURCE = "Abadi et al. (2016) Alg. 1; canaries and bugs as audited by Nasr et al. (2021, 2023)"
_ACCOUNTANT = "dp-accounting RDP accountant, Poisson-subsampled Gaussian"


def canary_pair(records: int = RECORDS, features: int = FEATURES, seed: int = 0, canary=None) -> NeighbouringPair:
    """The training set with the canary (default: a gradient canary) in its last row vs a null record there."""
    base = gaussian_training_set(records - 1, features - 1, seed=seed)
    canary = gradient_canary(base) if canary is None else canary
    return NeighbouringPair(with_record(base, canary), with_record(base, null_record(base)),
                            why="the canary is present in the first training set and replaced by a null record in the second")


def _accountant(sigma, q, steps, delta, note=_ACCOUNTANT) -> Guarantee:
    return Guarantee("dp", dpsgd_epsilon(sigma, q, steps, delta), delta, note=note)


def _full_batch_epsilon(noise: float, sensitivity: float, steps: int, delta: float) -> float:
    """ε(δ) of T Gaussian steps of sensitivity ``sensitivity`` and noise std ``noise``: μ = √T·Δ/σ
    (Dong, Roth and Su 2022, Cor. 3.3), through Balle and Wang (2018), Thm 8."""
    return gaussian_exact_epsilon(delta, noise, sensitivity * math.sqrt(steps))


def _entry(name, description, mechanism, claimed, true, pair, *, exact, pair_epsilon=None):
    # The pair's attained ε is given where it has a closed form (full batches; the noiseless
    # differences of reused noise); elsewhere it is not computed.
    return CatalogEntry(name=name, description=description, mechanism=mechanism, output_dim=mechanism.output_dim,
                        output_encoding="the canary coordinate of each step's noisy clipped gradient sum (T columns)",
                        claimed=claimed, true=true,
                        buggy=not true.private or true.epsilon > claimed.epsilon + 1e-12,
                        neighbouring=_NEIGHBOURING, pairs=(pair,), source=_SOURCE, true_exact=exact,
                        pair_epsilon=None if pair_epsilon is None else (lambda _pair: pair_epsilon))


def _run(sigma, q, steps, records, **kwargs) -> DPSGD:
    return DPSGD(records, FEATURES, sigma, sampling_rate=q, steps=steps, release="gradient_trace", **kwargs)


def _check_records(records):
    if not isinstance(records, int) or records < 2:
        raise InputError(f"argument 'records' must be an integer >= 2 (the canary and at least one example), "
                         f"got {records!r}")


def _correct_factory(sigma0: float, q0: float, steps0: int):
    def factory(*, noise_multiplier: float = sigma0, sampling_rate: float = q0, steps: int = steps0,
                records: int = RECORDS, delta: float = DELTA) -> CatalogEntry:
        _check_records(records)
        claim = _accountant(noise_multiplier, sampling_rate, steps, delta)
        mechanism = _run(noise_multiplier, sampling_rate, steps, records)
        description = f"correct DP-SGD, σ = {noise_multiplier:g}, q = {sampling_rate:g}, T = {steps}"
        if sampling_rate == 1.0:
            epsilon = _full_batch_epsilon(noise_multiplier, 1.0, steps, delta)
            true = Guarantee("dp", epsilon, delta, note="exact: T Gaussian steps are √T/σ-GDP (Dong-Roth-Su 2022 "
                                                        "Cor. 3.3), Balle-Wang (2018) Thm 8 profile")
            return _entry(factory.__name__, description, mechanism, claim, true, canary_pair(records),
                          exact=True, pair_epsilon=epsilon)
        true = Guarantee("dp", claim.epsilon, delta, note="an upper bound: the accountant's")
        return _entry(factory.__name__, description, mechanism, claim, true, canary_pair(records), exact=False)

    factory.__name__ = f"dpsgd_s{sigma0:g}_q{q0:g}_t{steps0}"
    factory.__doc__ = f"Correct DP-SGD, by default at σ = {sigma0:g}, q = {q0:g}, T = {steps0}."
    return factory


def dpsgd_no_clipping(*, noise_multiplier: float = 8.0, sampling_rate: float = 1.0, steps: int = 4,
                      records: int = RECORDS, delta: float = DELTA) -> CatalogEntry:
    """DP-SGD without per-sample clipping: the canary's gradient of norm 10·C enters the sum as is."""
    _check_records(records)
    mechanism = _run(noise_multiplier, sampling_rate, steps, records, bug="no-clipping")
    attained = None
    if sampling_rate == 1.0:  # the pair: T Gaussian steps of sensitivity canary_scale·C, noise σC
        attained = _full_batch_epsilon(noise_multiplier, mechanism.canary_scale, steps, delta)
    return _entry(
        "dpsgd_no_clipping", "DP-SGD without per-sample clipping: a gradient of norm 10·C enters the sum as is",
        mechanism, _accountant(noise_multiplier, sampling_rate, steps, delta),
        NOT_PRIVATE("the sum's sensitivity is unbounded: a record's unclipped gradient can be arbitrarily large "
                    "against noise σC"), canary_pair(records), exact=True, pair_epsilon=attained)


def dpsgd_unscaled_noise(*, noise_multiplier: float = 8.0, sampling_rate: float = 1.0, steps: int = 4,
                         clip_norm: float = 10.0, records: int = RECORDS, delta: float = DELTA) -> CatalogEntry:
    """DP-SGD adding noise of std σ instead of σ·C: it is DP-SGD at noise multiplier σ/C."""
    _check_records(records)
    mechanism = _run(noise_multiplier, sampling_rate, steps, records, clip_norm=clip_norm, bug="unscaled-noise")
    claim = _accountant(noise_multiplier, sampling_rate, steps, delta)
    if sampling_rate == 1.0:
        epsilon = _full_batch_epsilon(noise_multiplier, clip_norm, steps, delta)
        true = Guarantee("dp", epsilon, delta, note="exact: T Gaussian steps of sensitivity C and noise σ "
                                                    "(Dong-Roth-Su 2022 Cor. 3.3, Balle-Wang 2018 Thm 8)")
        exact, attained = True, epsilon
    else:
        true = _accountant(noise_multiplier / clip_norm, sampling_rate, steps, delta,
                           "an upper bound: the accountant at noise multiplier σ/C (noise σ against sensitivity C)")
        exact, attained = False, None
    return _entry("dpsgd_unscaled_noise", f"DP-SGD with noise std σ instead of σ·C (C = {clip_norm:g})",
                  mechanism, claim, true, canary_pair(records), exact=exact, pair_epsilon=attained)


def dpsgd_reused_noise(*, noise_multiplier: float = 8.0, sampling_rate: float = 0.5, steps: int = 4,
                       records: int = RECORDS, delta: float = DELTA) -> CatalogEntry:
    """DP-SGD drawing its noise once per run and adding it at every step (needs q < 1 and T >= 2)."""
    _check_records(records)
    if sampling_rate >= 1.0:
        raise InputError("argument 'sampling_rate' must be < 1 for dpsgd_reused_noise: with full batches every "
                         "step adds the same C and the reused noise hides it like one Gaussian step")
    if steps < 2:
        raise InputError(f"argument 'steps' must be >= 2 for dpsgd_reused_noise, got {steps!r}")
    check_probability(sampling_rate, "sampling_rate")
    # With the canary two steps differ by C·(c_t − c_s) ≠ 0 with this probability; without it never.
    exposed = 1.0 - sampling_rate**steps - (1.0 - sampling_rate)**steps
    return _entry(
        "dpsgd_reused_noise", "DP-SGD drawing its noise once per run and adding it at every step",
        _run(noise_multiplier, sampling_rate, steps, records, bug="reused-noise"),
        _accountant(noise_multiplier, sampling_rate, steps, delta),
        NOT_PRIVATE(f"the difference of two steps' noisy sums is noiseless: on the canary coordinate it is "
                    f"C·(c_t − c_s), non-zero with probability 1 − q^T − (1 − q)^T = {exposed:.3g} with the canary "
                    f"and 0 without"),
        canary_pair(records), exact=True, pair_epsilon=math.inf if exposed > delta else None)


def dpsgd_shuffle_as_poisson(*, noise_multiplier: float = 1.0, sampling_rate: float = 0.25, steps: int = 8,
                             records: int = RECORDS, delta: float = DELTA) -> CatalogEntry:
    """Shuffled fixed-size batches accounted as Poisson sampling."""
    _check_records(records)
    mechanism = _run(noise_multiplier, sampling_rate, steps, records, sampling="shuffle")
    # Each epoch of n // b batches of b = round(q·n) rows holds the canary at most once.
    epochs = math.ceil(steps / (records // mechanism.batch_size))
    rho = epochs / (2.0 * noise_multiplier**2)
    # Proposition 1.3, not the tighter zcdp_epsilon: this truth's ε is documented (docs/benchmarks/dpsgd-gpu.md).
    true = Guarantee("dp", zcdp_epsilon_bun_steinke(rho, delta), delta,
                     note=(f"an upper bound with no amplification: each of the {epochs} epochs releases the canary "
                           f"at most once through a Gaussian step (ρ = E/(2σ²) zCDP, Bun-Steinke 2016 Prop. 1.3, "
                           f"1.6, Lemma 2.3; the shuffle mixes them, and Rényi divergence is jointly quasi-convex); "
                           f"Chua et al. (2024) show shuffling can be much less private than the Poisson accountant "
                           f"says"))
    return _entry("dpsgd_shuffle_as_poisson", "shuffled fixed-size batches accounted as Poisson sampling", mechanism,
                  _accountant(noise_multiplier, sampling_rate, steps, delta, _ACCOUNTANT + " (wrongly)"), true,
                  canary_pair(records), exact=False)


def dpsgd_wrong_sampling_rate(*, noise_multiplier: float = 1.0, sampling_rate: float = 0.5, steps: int = 4,
                              accounted_sampling_rate: float = 0.05, records: int = RECORDS,
                              delta: float = DELTA) -> CatalogEntry:
    """DP-SGD at rate q whose accountant was fed another rate (buggy when that rate is smaller)."""
    _check_records(records)
    claim = _accountant(noise_multiplier, accounted_sampling_rate, steps, delta,
                        _ACCOUNTANT + f" at the wrong q = {accounted_sampling_rate:g}")
    true = _accountant(noise_multiplier, sampling_rate, steps, delta,
                       f"an upper bound: the accountant at the true q = {sampling_rate:g}")
    return _entry("dpsgd_wrong_sampling_rate",
                  f"DP-SGD at q = {sampling_rate:g} whose accountant was fed q = {accounted_sampling_rate:g}",
                  _run(noise_multiplier, sampling_rate, steps, records), claim, true, canary_pair(records),
                  exact=False)


FACTORIES = {f.__name__: f for f in (*(_correct_factory(*s) for s in CORRECT_SETTINGS), dpsgd_no_clipping,
                                     dpsgd_unscaled_noise, dpsgd_reused_noise, dpsgd_shuffle_as_poisson,
                                     dpsgd_wrong_sampling_rate)}


def entries() -> list:
    """The DP-SGD entries at their default parameters."""
    return [factory() for factory in FACTORIES.values()]
