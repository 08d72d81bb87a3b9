"""The claims of each notion: (ε, δ)-DP and local DP, ρ-zCDP, Rényi DP, μ-GDP, MI-DP and MI-PP,
with the MI budget and the privacy profile each implies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from estimators.validation import InputError

from mechanisms.claims.claim import Claim, MIBudget, _KL_CONVEXITY, _PUFFERFISH_THM1, _approx_dp_profile, _finite, _positive, _pure_dp_budget

__all__ = ["DifferentialPrivacy", "GaussianDP", "LocalDP", "MIDP", "MIPP", "RenyiDP", "ZeroConcentratedDP"]


#: The largest δ a converted claim states (a claim's δ must be < 1; (1 + e^ε)δ may reach 1, which says nothing).
_BELOW_ONE = math.nextafter(1.0, 0.0)


@dataclass(frozen=True)
class DifferentialPrivacy(Claim):
    """(ε, δ)-differential privacy: P(M(D) ∈ E) ≤ e^ε P(M(D′) ∈ E) + δ for neighbours D, D′
    (Dwork and Roth 2014, Definition 2.4); pure ε-DP when δ = 0.

    Profile: δ(ε′) = δ + (1 − δ)(e^ε − e^{ε′})₊ / (1 + e^ε), exact (Kairouz, Oh and Viswanath
    2015: every (ε, δ)-DP mechanism's privacy region lies in R(ε, δ), attained by a four-point
    mechanism). MI budget: min(ε, ε²/2) nats for pure DP (Pufferfish paper, Theorem 1); for
    δ > 0 only when a record's support is finite, 2 h_b(δ′) + 2 δ′ log(s + 1) with
    δ′ = 1 − 2(1 − δ)/(e^ε + 1) (Theorem 1, Part 1; s values per record).
    """

    epsilon: float
    delta: float = 0.0

    notion: ClassVar[str] = "dp"
    profile_source: ClassVar[str] = ("closed form: δ(ε′) = δ + (1 − δ)(e^ε − e^ε′)₊/(1 + e^ε) "
                                     "(Kairouz, Oh and Viswanath 2015, privacy region of (ε, δ)-DP)")

    def __post_init__(self):
        self._check_relation()
        _positive(self.epsilon, "ε", "epsilon")
        d = _finite(self.delta, "δ", "delta")
        if not 0 <= d < 1:
            raise InputError(f"argument 'delta' must be in [0, 1), got {self.delta!r}")

    def parameters(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta} if self.delta > 0 else {"epsilon": self.epsilon}

    @property
    def pure_epsilon(self) -> float | None:
        return self.epsilon if self.delta == 0 else None

    @property
    def label(self) -> str:
        return f"({self.epsilon:.4g}, {self.delta:.3g})-DP" if self.delta > 0 else f"{self.epsilon:.4g}-DP"

    def _record_budget(self, record_support):
        if self.delta == 0:
            return _pure_dp_budget(self.epsilon)
        if record_support is None:
            return MIBudget(None, reason=(
                "(ε, δ)-DP bounds the MI only under the finite-support condition of the Pufferfish paper's "
                "Theorem 1 (a record or the output takes finitely many values); the audited prior's record "
                "support is not known to be finite, so the claim implies no MI budget here"))
        s = int(record_support)
        # 1 − 2(1 − δ)/(e^ε + 1), written with e^−ε so that it stays finite for any ε.
        delta_prime = 1 - 2 * (1 - self.delta) * math.exp(-self.epsilon) / (1 + math.exp(-self.epsilon))
        h = 0.0 if delta_prime in (0.0, 1.0) else (-delta_prime * math.log(delta_prime)
                                                   - (1 - delta_prime) * math.log1p(-delta_prime))
        value = 2 * h + 2 * delta_prime * math.log(s + 1)
        return MIBudget(value, (f"Pufferfish paper, Theorem 1, Part 1: (ε, δ)-DP ⇒ ε*-MI DP with "
                                f"ε* = 2 h_b(δ′) + 2 δ′ log(|Im g| + 1), |Im g| = {s} values per record",))

    def _profile(self, eps):
        return _approx_dp_profile(eps, self.epsilon, self.delta)

    def _profile_scale(self):
        return 1.5 * self.epsilon

    def _kinks(self):
        return (self.epsilon,)

    def group_form(self, steps: int) -> tuple:
        """Group privacy for groups of g = ``steps``: ε-DP ⇒ gε-DP (Dwork and Roth 2014, Theorem 2.2), and
        (ε, δ)-DP ⇒ (gε, δ Σ_{i<g} e^{iε})-DP: chaining the definition along the g steps,
        P[M(x₀) ∈ S] ≤ e^ε P[M(x₁) ∈ S] + δ ≤ … ≤ e^{gε} P[M(x_g) ∈ S] + δ (1 + e^ε + … + e^{(g−1)ε}), the proof of
        Vadhan 2017, Lemma 2.2, and at most the g e^{(g−1)ε} δ that Dwork and Roth 2014 state after Theorem 2.2
        (g = 2: (2ε, (1 + e^ε)δ))."""
        if steps == 1:
            return self, "the claim itself (one step)"
        if self.delta == 0:
            return (DifferentialPrivacy(steps * self.epsilon),
                    f"Dwork and Roth 2014, Theorem 2.2: ε-DP ⇒ kε-DP for groups of k = {steps}")
        chained = self.delta * math.fsum(math.exp(i * self.epsilon) for i in range(steps))
        return (DifferentialPrivacy(steps * self.epsilon, min(chained, _BELOW_ONE)),
                f"Vadhan 2017, Lemma 2.2 (its proof, chained over k = {steps} steps): (ε, δ)-DP ⇒ "
                "(kε, δ Σ_{i<k} e^{iε})-DP, at most Dwork and Roth 2014's k e^{(k−1)ε} δ")


@dataclass(frozen=True)
class LocalDP(DifferentialPrivacy):
    """ε-local DP of each record's report. Under miaudit's relation (replace one record) it
    implies ε-DP of the collected reports (Dwork and Roth 2014, Section 12.1; only that
    record's report changes), so its profile and MI budget are those of ε-DP; the MI of a
    record with its own report is at most min(ε, ε²/2) (Pufferfish paper, Theorem 1)."""

    notion: ClassVar[str] = "ldp"
    allows_add_remove: ClassVar[bool] = False
    profile_source: ClassVar[str] = DifferentialPrivacy.profile_source + "; ε-LDP ⇒ ε-DP"

    def __post_init__(self):
        super().__post_init__()
        if self.delta != 0:
            raise InputError(f"argument 'delta' does not apply to local DP (ldp:EPS), got {self.delta!r}")

    @property
    def label(self) -> str:
        return f"{self.epsilon:.4g}-LDP"

    def _record_budget(self, record_support):
        return _pure_dp_budget(self.epsilon, (_PUFFERFISH_THM1 + " (ε-LDP ⇒ ε-DP)",))


def _rdp_delta(orders, rdp, eps: np.ndarray) -> np.ndarray:
    """δ(ε′) from RDP guarantees through dp_accounting's conversion (Canonne, Kamath and
    Steinke 2020, Proposition 12, with the KL bound δ ≤ √(1 − e^{−ε_α}), min over orders)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_delta

    return np.array([compute_delta(orders, rdp, float(e))[0] for e in eps])


@dataclass(frozen=True)
class ZeroConcentratedDP(Claim):
    """ρ-zCDP: D_α(M(D) ‖ M(D′)) ≤ ρα for every α > 1 (Bun and Steinke 2016, Definition 1.1).

    Profile: Google's ``dp_accounting`` RDP accountant on a ``ZCDpEvent(ρ)`` (its default
    orders), i.e. the RDP-to-(ε, δ) conversion of Canonne, Kamath and Steinke (2020),
    Proposition 12. MI budget: ρ nats — letting α → 1 bounds the KL divergence between output
    laws on neighbours by ρ (Bun and Steinke 2016, Definition 1.1 and the limit α → 1), and
    the conditional MI is an average of such KL divergences.
    """

    rho: float

    notion: ClassVar[str] = "zcdp"
    profile_source: ClassVar[str] = ("dp_accounting RDP-to-(ε, δ) conversion of ZCDpEvent(ρ) at the RDP "
                                     "accountant's default orders (Canonne, Kamath and Steinke 2020, Proposition 12)")

    def __post_init__(self):
        self._check_relation()
        _positive(self.rho, "ρ", "rho")

    def parameters(self) -> dict:
        return {"rho": self.rho}

    @property
    def label(self) -> str:
        return f"{self.rho:.4g}-zCDP"

    def _record_budget(self, record_support):
        return MIBudget(self.rho, ("Bun and Steinke (2016), Definition 1.1 at α → 1: KL ≤ ρ", _KL_CONVEXITY))

    def _profile(self, eps):
        # What RdpAccountant().compose(ZCDpEvent(ρ)).get_delta(ε′) computes: the RDP curve ρα at
        # the accountant's default orders through compute_delta (without rebuilding it per ε′).
        from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

        orders = [float(a) for a in DEFAULT_RDP_ORDERS]  # plain floats: compute_delta loops in Python
        return _rdp_delta(orders, [self.rho * a for a in orders], eps)

    def _profile_scale(self):
        # Bun and Steinke (2016), Proposition 1.3: δ ≤ exp(−(ε′ − ρ)²/(4ρ)) < 1e-12 beyond here.
        return self.rho + math.sqrt(4 * self.rho * 28.0)

    def group_form(self, steps: int) -> tuple:
        """Group privacy for groups of k = ``steps`` (Bun and Steinke 2016, Proposition 1.9: ρ-zCDP ⇒ k²ρ-zCDP)."""
        if steps == 1:
            return self, "the claim itself (one step)"
        return (ZeroConcentratedDP(steps * steps * self.rho),
                f"Bun and Steinke 2016, Proposition 1.9: ρ ⇒ k²ρ for groups of k = {steps}")


@dataclass(frozen=True)
class RenyiDP(Claim):
    """(α, ε)-Rényi DP: D_α(M(D) ‖ M(D′)) ≤ ε for neighbours (Mironov 2017, Definition 4), α > 1.

    Profile: ``dp_accounting.rdp.compute_delta`` at the single order α (Canonne, Kamath and
    Steinke 2020, Proposition 12, and the KL bound δ ≤ √(1 − e^{−ε})). MI budget: ε nats,
    since Rényi divergence increases with its order (van Erven and Harremoës 2014, Theorem 3)
    so KL ≤ D_α ≤ ε, and the conditional MI averages such KL divergences.
    """

    order: float
    epsilon: float

    notion: ClassVar[str] = "rdp"
    profile_source: ClassVar[str] = ("dp_accounting.rdp.compute_delta at the claim's order: RDP-to-(ε, δ) "
                                     "conversion (Canonne, Kamath and Steinke 2020, Proposition 12)")

    def __post_init__(self):
        self._check_relation()
        order = _finite(self.order, "α", "order")
        if order <= 1:
            raise InputError(f"argument 'order': α must be > 1, got {self.order!r}")
        _positive(self.epsilon, "ε", "epsilon")

    def parameters(self) -> dict:
        return {"order": self.order, "epsilon": self.epsilon}

    @property
    def label(self) -> str:
        return f"({self.order:.4g}, {self.epsilon:.4g})-RDP"

    def _record_budget(self, record_support):
        return MIBudget(self.epsilon, ("van Erven and Harremoës (2014), Theorem 3: KL ≤ D_α ≤ ε", _KL_CONVEXITY))

    def _profile(self, eps):
        return _rdp_delta([self.order], [self.epsilon], eps)

    def _profile_scale(self):
        # log δ ≤ (α − 1)(ε − ε′ + log(1 − 1/α)) − log α: below e^{−28} past this ε′.
        return self.epsilon + 28.0 / (self.order - 1)

    def group_form(self, steps: int) -> tuple:
        """Group privacy for groups of g = ``steps`` (Mironov 2017, Proposition 2): a 2^c-stable transformation of
        an (α, ε)-RDP mechanism with α ≥ 2^{c+1} is (α/2^c, 3^c ε)-RDP; a group of g ≤ 2^c records is 2^c-stable,
        so c = ⌈log₂ g⌉ (g = 2: (α/2, 3ε) at α ≥ 4).

        Raises
        ------
        InputError
            When α < 2^{c+1}: no theorem converts the claim (it names the notions to state instead).
        """
        if steps == 1:
            return self, "the claim itself (one step)"
        c = (steps - 1).bit_length()  # ⌈log₂ g⌉ for g ≥ 2
        if self.order < 2 ** (c + 1):
            raise InputError(f"the claim {self.text} ({self.relation}) cannot be converted for groups of {steps} "
                             f"records: group privacy for Rényi DP (Mironov 2017, Proposition 2) needs order "
                             f"α ≥ {2 ** (c + 1)} (2^(c+1), c = {c}) for groups of up to 2^c = {2 ** c}; state the claim at a "
                             "higher order, as zCDP (zcdp:RHO, k²ρ for groups of k) or (ε, δ)-DP, or at the audited "
                             "relation (--relation)")
        return (RenyiDP(self.order / 2 ** c, 3 ** c * self.epsilon),
                f"Mironov 2017, Proposition 2 (c = {c}, groups of up to {2 ** c}): (α, ε)-RDP ⇒ (α/2^c, 3^c ε)-RDP")


@dataclass(frozen=True)
class GaussianDP(Claim):
    """μ-Gaussian DP: telling M(D) from M(D′) is at least as hard as telling N(0, 1) from
    N(μ, 1) (Dong, Roth and Su 2022, Definition 2.6).

    Profile: δ(ε′) = Φ(−ε′/μ + μ/2) − e^{ε′} Φ(−ε′/μ − μ/2) (Dong, Roth and Su 2022,
    Corollary 2.13; the same curve as Balle and Wang 2018, Theorem 8). MI budget: μ²/2 nats —
    by Blackwell's theorem (Dong, Roth and Su 2022, Theorem 2.10) the pair is a post-processing
    of (N(0, 1), N(μ, 1)), whose KL divergence is μ²/2, and KL obeys data processing.
    """

    mu: float

    notion: ClassVar[str] = "gdp"
    profile_source: ClassVar[str] = ("closed form: δ(ε′) = Φ(−ε′/μ + μ/2) − e^ε′ Φ(−ε′/μ − μ/2) "
                                     "(Dong, Roth and Su 2022, Corollary 2.13)")

    def __post_init__(self):
        self._check_relation()
        _positive(self.mu, "μ", "mu")

    def parameters(self) -> dict:
        return {"mu": self.mu}

    @property
    def label(self) -> str:
        return f"{self.mu:.4g}-GDP"

    def _record_budget(self, record_support):
        return MIBudget(self.mu * self.mu / 2, ("Dong, Roth and Su (2022), Theorem 2.10: a post-processing of "
                                           "N(0, 1) vs N(μ, 1), whose KL divergence is μ²/2", _KL_CONVEXITY))

    def _profile(self, eps):
        from mechanisms.claims.dp_curves import gaussian_dp_delta

        return np.asarray(gaussian_dp_delta(eps, 1.0, self.mu))

    def _profile_scale(self):
        return self.mu * self.mu / 2 + 8 * self.mu  # mu * mu: inf for a huge μ, where ** raises

    def group_form(self, steps: int) -> tuple:
        """Group privacy for groups of k = ``steps`` (Dong, Roth and Su 2022, Theorem 2.14: μ-GDP ⇒ kμ-GDP)."""
        if steps == 1:
            return self, "the claim itself (one step)"
        return GaussianDP(steps * self.mu), f"Dong, Roth and Su 2022, Theorem 2.14: μ ⇒ kμ for groups of k = {steps}"


@dataclass(frozen=True)
class _MIClaim(Claim):
    """An MI notion at ε nats: its budget is ε by definition and it has no profile."""

    epsilon: float

    definition: ClassVar[str] = ""
    allows_add_remove: ClassVar[bool] = False

    def __post_init__(self):
        self._check_relation()
        _positive(self.epsilon, "ε", "epsilon")

    def parameters(self) -> dict:
        return {"epsilon": self.epsilon}

    @property
    def label(self) -> str:
        return f"{self.epsilon:.4g}-{self.notion.upper()} (nats)"

    def _record_budget(self, record_support):
        return MIBudget(self.epsilon, (f"definition of ε-{self.notion.upper()} ({self.definition})",))


@dataclass(frozen=True)
class MIDP(_MIClaim):
    """ε-MI DP: I(X_i; M(X) | X_−i) ≤ ε nats for every record and prior (Pufferfish paper,
    Section II, the MI DP of Cuff and Yu 2016). MI budget: ε by definition; no profile."""

    notion: ClassVar[str] = "mi-dp"
    definition: ClassVar[str] = "Pufferfish paper, Section II"


@dataclass(frozen=True)
class MIPP(_MIClaim):
    """ε-MI Pufferfish privacy: I(g(X); M(X) | w(X)) ≤ ε nats for every secret pair and prior
    (Pufferfish paper, Definition 5). MI budget: ε by definition; no profile."""

    notion: ClassVar[str] = "mi-pp"
    definition: ClassVar[str] = "Pufferfish paper, Definition 5"
    about_records: ClassVar[bool] = False
