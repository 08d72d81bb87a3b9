"""The claims a DP-SGD run makes: what its privacy accountant says, as :mod:`mechanisms.claims`.

DP-SGD with Poisson sampling at rate q, noise multiplier σ and T steps is the T-fold
composition of the Poisson-subsampled Gaussian mechanism (Abadi et al. 2016). Its accountant:

- (ε, δ): dp-accounting's RDP accountant (``PoissonSampledDpEvent(q, GaussianDpEvent(σ))``
  self-composed T times; RDP of the subsampled Gaussian from Mironov, Talwar and Zhang 2019,
  converted to (ε, δ) by Canonne, Kamath and Steinke 2020 / Balle et al. 2020);
- (α, ε_α)-RDP at one order α: Opacus's ``compute_rdp`` (the same Mironov et al. 2019 bound);
- ρ-zCDP for full-batch training (q = 1) only: ρ = T/(2σ²) (Bun and Steinke 2016,
  Proposition 1.6 for one Gaussian step of sensitivity C and noise σC, Lemma 2.3 for composition).

These accountants are for add/remove neighbours, i.e. replacing the canary by a null record
(n fixed; :mod:`mechanisms.training.records`). For replacing one record by an arbitrary one the
sensitivity of the clipped sum doubles; group privacy then gives (2ε, (1 + e^ε)δ) from (ε, δ)
(Dwork and Roth 2014, Theorem 2.2 for pure DP; Vadhan 2017, Lemma 2.2 for approximate DP),
available as ``relation="replace-one"``.
"""

from __future__ import annotations

import math

from estimators.validation import InputError, check_choice, check_int, check_positive, check_probability
from mechanisms.claims import DifferentialPrivacy, RenyiDP, ZeroConcentratedDP

__all__ = ["ORDERS", "RELATIONS", "noise_for_epsilon", "dpsgd_claim", "dpsgd_epsilon", "dpsgd_rdp_claim", "dpsgd_zcdp_claim"]

RELATIONS = ("add-remove", "replace-one")
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


def dpsgd_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """ε of DP-SGD at δ from dp-accounting's RDP accountant (add/remove neighbours)."""
    _check(noise_multiplier, sampling_rate, steps)
    check_probability(delta, "delta")
    dp_accounting = _import("dp_accounting")
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)), steps)
    accountant = dp_accounting.rdp.RdpAccountant(list(ORDERS))
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def noise_for_epsilon(epsilon: float, sampling_rate: float, steps: int, delta: float = 1e-5) -> float:
    """The smallest σ (to 1e-4 relative, by bisection) whose accountant ε at δ is at most ``epsilon``."""
    check_positive(epsilon, "epsilon")
    low, high = 1e-2, 1.0
    while dpsgd_epsilon(high, sampling_rate, steps, delta) > epsilon:
        low, high = high, 2.0 * high
        if high > 1e4:
            raise InputError(f"argument 'epsilon' = {epsilon!r} needs noise multiplier > 1e4 at q = {sampling_rate}, T = {steps}")
    while high - low > 1e-4 * high:
        middle = 0.5 * (low + high)
        low, high = (middle, high) if dpsgd_epsilon(middle, sampling_rate, steps, delta) > epsilon else (low, middle)
    return high


def dpsgd_claim(noise_multiplier: float, sampling_rate: float, steps: int, delta: float = 1e-5,
                relation: str = "add-remove") -> DifferentialPrivacy:
    """The accountant's (ε, δ)-DP claim of DP-SGD, a ``dp:EPS:DELTA`` claim.

    ``relation="replace-one"`` applies group privacy over two add/remove steps.
    """
    check_choice(relation, "relation", RELATIONS)
    epsilon = dpsgd_epsilon(noise_multiplier, sampling_rate, steps, delta)
    origin = (f"dp-accounting RDP accountant: Poisson-subsampled Gaussian, σ = {noise_multiplier:g}, "
              f"q = {sampling_rate:g}, T = {steps}")
    if relation == "replace-one":
        return DifferentialPrivacy(2.0 * epsilon, (1.0 + math.exp(epsilon)) * delta,
                                   origin=origin + ", group privacy for replace-one")
    return DifferentialPrivacy(epsilon, delta, origin=origin + ", add/remove")


def dpsgd_rdp_claim(noise_multiplier: float, sampling_rate: float, steps: int, order: float) -> RenyiDP:
    """The accountant's (α, ε_α)-RDP claim at ``order`` α > 1 (Opacus's ``compute_rdp``)."""
    _check(noise_multiplier, sampling_rate, steps)
    check_positive(order, "order")
    if order <= 1:
        raise InputError(f"argument 'order' must be > 1, got {order!r}")
    rdp = _import("opacus.accountants.analysis.rdp")
    value = float(rdp.compute_rdp(q=sampling_rate, noise_multiplier=noise_multiplier, steps=steps, orders=[order])[0])
    return RenyiDP(order, value, origin=f"Opacus RDP accountant: σ = {noise_multiplier:g}, q = {sampling_rate:g}, "
                                       f"T = {steps}, add/remove")


def dpsgd_zcdp_claim(noise_multiplier: float, steps: int) -> ZeroConcentratedDP:
    """Full-batch DP-SGD (q = 1) is ρ-zCDP with ρ = T/(2σ²) (Bun and Steinke 2016, Prop. 1.6, Lemma 2.3)."""
    _check(noise_multiplier, 1.0, steps)
    return ZeroConcentratedDP(steps / (2.0 * noise_multiplier**2),
                              origin=f"full-batch DP-SGD: T/(2σ²), σ = {noise_multiplier:g}, T = {steps}, add/remove")
