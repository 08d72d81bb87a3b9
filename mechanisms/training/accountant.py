"""The claims a DP-SGD run makes: what its privacy accountant says, as :mod:`mechanisms.claims.claim`.

DP-SGD with Poisson sampling at rate q, noise multiplier σ and T steps is the T-fold
composition of the Poisson-subsampled Gaussian mechanism (Abadi et al. 2016). Its accountant:

- (ε, δ): dp-accounting's RDP accountant (``PoissonSampledDpEvent(q, GaussianDpEvent(σ))``
  self-composed T times; RDP of the subsampled Gaussian from Mironov, Talwar and Zhang 2019,
  converted to (ε, δ) by Canonne, Kamath and Steinke 2020 / Balle et al. 2020), or with
  ``accountant="pld"`` dp-accounting's privacy loss distribution (PLD) accountant on the same
  event (Koskela, Jälkö and Honkela 2020; Doroshenko et al. 2022, "Connect the dots"). The PLD
  accountant is tight up to its discretisation, and its pessimistic estimate (dp-accounting's
  default) stays an upper bound on the true ε; the RDP route is an upper bound with the slack of
  the RDP-to-(ε, δ) conversion (Mironov 2017, Prop. 3; Canonne, Kamath and Steinke 2020, Prop. 12),
  so ε_PLD ≤ ε_RDP up to the discretisation: the exact ε(δ) is the smallest valid one and RDP's
  is a valid one (Koskela, Jälkö and Honkela 2020 compare the two on DP-SGD's subsampled Gaussian);
- (α, ε_α)-RDP at one order α: Opacus's ``compute_rdp`` (the same Mironov et al. 2019 bound);
- ρ-zCDP for full-batch training (q = 1) only: ρ = T/(2σ²) (Bun and Steinke 2016,
  Proposition 1.6 for one Gaussian step of sensitivity C and noise σC, Lemma 2.3 for composition).

These accountants are for add/remove neighbours, i.e. replacing the canary by a null record
(n fixed; :mod:`mechanisms.training.records`). For replacing one record by an arbitrary one the
sensitivity of the clipped sum doubles; group privacy then gives (2ε, (1 + e^ε)δ) from (ε, δ)
(Dwork and Roth 2014, Theorem 2.2 for pure DP; Vadhan 2017, Lemma 2.2 for approximate DP),
available as ``relation="replace-one"``. Each claim carries its relation
(:attr:`mechanisms.claims.claim.Claim.relation`): an audit of replace-one pairs converts an add/remove
claim by group privacy (:func:`mechanisms.claims.conversion.convert_claim`).
"""

from __future__ import annotations

import functools
import math

from estimators.validation import InputError, check_choice, check_int, check_positive, check_probability
from mechanisms.claims.notions import DifferentialPrivacy, RenyiDP, ZeroConcentratedDP
from mechanisms.inputs.relation import ADD_REMOVE

__all__ = ["ACCOUNTANTS", "ORDERS", "RELATIONS", "noise_for_epsilon", "dpsgd_claim", "dpsgd_epsilon", "dpsgd_rdp_claim", "dpsgd_zcdp_claim"]

RELATIONS = ("add-remove", "replace-one")
ACCOUNTANTS = ("rdp", "pld")
# Rényi orders of the (ε, δ) conversion: dp-accounting's series for fractional orders below 2
# fails to converge for the subsampled Gaussian at moderate q (it drops them with a warning), so
# the grid starts at 2. Fewer orders can only raise ε: the claim stays an upper bound.
ORDERS = tuple(2.0 + 0.25 * i for i in range(36)) + tuple(range(11, 257))


def _check(noise_multiplier, sampling_rate, steps):
    check_positive(noise_multiplier, "noise_multiplier")
    if sampling_rate != 1.0:
        check_probability(sampling_rate, "sampling_rate")
    check_int(steps, "steps", minimum=1)


def _import(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"the DP-SGD accountant needs {module.split('.')[0]}: pip install 'miaudit[opacus]'") from None


def dpsgd_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float,
                  accountant: str = "rdp") -> float:
    """ε of DP-SGD at δ from dp-accounting's RDP (default) or PLD accountant (add/remove neighbours).

    ``accountant="pld"``: ``dp_accounting.pld.PLDAccountant`` at its default discretisation
    interval 1e-4, pessimistic estimate (an upper bound; at most the RDP ε up to discretisation,
    see the module docstring).
    """
    _check(noise_multiplier, sampling_rate, steps)
    check_probability(delta, "delta")
    check_choice(accountant, "accountant", ACCOUNTANTS)
    return _accountant_epsilon(float(noise_multiplier), float(sampling_rate), int(steps), float(delta), accountant)


#: Accountant answers kept (a few hundred bytes each): :func:`noise_for_epsilon`'s bisection asks ~20 of them.
_CACHED_EPSILONS = 4096


@functools.lru_cache(maxsize=_CACHED_EPSILONS)
def _accountant_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float,
                        accountant: str) -> float:
    """:func:`dpsgd_epsilon` of checked arguments, each setting's accountant run once a process: the one-run stage
    of ``dpsgd-audit`` bisected for the same σ at every repeat (its PLD bisection ~1 s each, a third of the quick
    run's 16 s), and the catalog asks the same entries' ε again. The accountants are deterministic: a kept answer
    is the one a new run gives."""
    dp_accounting = _import("dp_accounting")
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)), steps)
    if accountant == "pld":
        ledger = dp_accounting.pld.PLDAccountant()
    else:
        ledger = dp_accounting.rdp.RdpAccountant(list(ORDERS))
    ledger.compose(event)
    return float(ledger.get_epsilon(delta))


def noise_for_epsilon(epsilon: float, sampling_rate: float, steps: int, delta: float = 1e-5,
                      accountant: str = "rdp") -> float:
    """The smallest σ (to 1e-4 relative, by bisection) whose accountant ε at δ is at most ``epsilon``."""
    check_positive(epsilon, "epsilon")
    check_choice(accountant, "accountant", ACCOUNTANTS)

    def above(sigma):
        return dpsgd_epsilon(sigma, sampling_rate, steps, delta, accountant) > epsilon

    low, high = 1e-2, 1.0
    while above(high):
        low, high = high, 2.0 * high
        if high > 1e4:
            raise InputError(f"argument 'epsilon' = {epsilon!r} needs noise multiplier > 1e4 at q = {sampling_rate}, T = {steps}")
    while high - low > 1e-4 * high:
        middle = 0.5 * (low + high)
        low, high = (middle, high) if above(middle) else (low, middle)
    return high


def dpsgd_claim(noise_multiplier: float, sampling_rate: float, steps: int, delta: float = 1e-5,
                relation: str = "add-remove", accountant: str = "rdp") -> DifferentialPrivacy:
    """The accountant's (ε, δ)-DP claim of DP-SGD, a ``dp:EPS:DELTA`` claim.

    ``accountant``: ``"rdp"`` or ``"pld"`` (:func:`dpsgd_epsilon`). ``relation="replace-one"``
    applies group privacy over two add/remove steps.
    """
    check_choice(relation, "relation", RELATIONS)
    epsilon = dpsgd_epsilon(noise_multiplier, sampling_rate, steps, delta, accountant)
    origin = (f"dp-accounting {accountant.upper()} accountant: Poisson-subsampled Gaussian, σ = {noise_multiplier:g}, "
              f"q = {sampling_rate:g}, T = {steps}")
    if relation == "replace-one":
        return DifferentialPrivacy(2.0 * epsilon, (1.0 + math.exp(epsilon)) * delta,
                                   origin=origin + ", group privacy for replace-one")
    return DifferentialPrivacy(epsilon, delta, origin=origin + ", add/remove", relation=ADD_REMOVE)


def dpsgd_rdp_claim(noise_multiplier: float, sampling_rate: float, steps: int, order: float) -> RenyiDP:
    """The accountant's (α, ε_α)-RDP claim at ``order`` α > 1 (Opacus's ``compute_rdp``)."""
    _check(noise_multiplier, sampling_rate, steps)
    check_positive(order, "order")
    if order <= 1:
        raise InputError(f"argument 'order' must be > 1, got {order!r}")
    rdp = _import("opacus.accountants.analysis.rdp")
    value = float(rdp.compute_rdp(q=sampling_rate, noise_multiplier=noise_multiplier, steps=steps, orders=[order])[0])
    return RenyiDP(order, value, origin=f"Opacus RDP accountant: σ = {noise_multiplier:g}, q = {sampling_rate:g}, "
                                       f"T = {steps}, add/remove", relation=ADD_REMOVE)


def dpsgd_zcdp_claim(noise_multiplier: float, steps: int) -> ZeroConcentratedDP:
    """Full-batch DP-SGD (q = 1) is ρ-zCDP with ρ = T/(2σ²) (Bun and Steinke 2016, Prop. 1.6, Lemma 2.3)."""
    _check(noise_multiplier, 1.0, steps)
    return ZeroConcentratedDP(steps / (2.0 * noise_multiplier**2),
                              origin=f"full-batch DP-SGD: T/(2σ²), σ = {noise_multiplier:g}, T = {steps}, add/remove",
                              relation=ADD_REMOVE)
