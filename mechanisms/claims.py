"""Privacy claims: the one vocabulary of privacy notions, and what each claim implies.

A claim is a privacy guarantee a mechanism is said to have, written ``NOTION:PARAMETERS``:

=================  ===========================================================================
``dp:EPS``         ε-differential privacy (pure)
``dp:EPS:DELTA``   (ε, δ)-differential privacy
``zcdp:RHO``       ρ-zero-concentrated DP (Bun and Steinke 2016)
``rdp:ALPHA:EPS``  (α, ε)-Rényi DP, α > 1 (Mironov 2017)
``gdp:MU``         μ-Gaussian DP (Dong, Roth and Su 2022)
``ldp:EPS``        ε-local DP of each record's report
``mi-dp:EPS``      ε-MI DP (nats; Pufferfish paper, Section II / Remark 2)
``mi-pp:EPS``      ε-MI Pufferfish privacy (nats; Pufferfish paper, Definition 5)
=================  ===========================================================================

A DP-family claim is about a neighbouring relation (:mod:`mechanisms.relation`): databases of n
records that differ in one record (``replace-one``, n fixed; the default), or databases that differ
by one record added or removed (``add-remove``), its :attr:`Claim.relation`. Local DP and the MI
notions are replace-one only. Every :class:`Claim` knows

- the MI budget it implies (:meth:`Claim.implied_mi_budget`): the largest conditional mutual
  information I(X_i; M(X) | X_−i) (nats) a mechanism with the claim can have, with the theorem
  that says so, or ``None`` with the reason;
- its privacy profile δ(ε′) for every ε′ ≥ 0 (:meth:`Claim.privacy_profile`), equivalently its
  trade-off curve (:meth:`Claim.tradeoff`): sup over neighbours and events E of
  P(M(D) ∈ E) − e^{ε′} P(M(D′) ∈ E) is at most δ(ε′) for every mechanism with the claim;
- whether a certified event pair (p̲, p̄) contradicts it (:meth:`Claim.check_event`).

This module also owns the other tuples of notion names (what the audit tests, what the
calibrations meet, what the catalog states), so that one list changes in one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.validation import InputError, parse_decimal

from .relation import ADD_REMOVE, REPLACE_ONE, check_relation, relation_words

__all__ = [
    "AUDIT_NOTIONS", "CALIBRATION_NOTIONS", "CLAIM_NOTIONS", "CLAIM_SYNTAX", "GUARANTEE_NOTIONS",
    "RECORD_AUDIT_NOTIONS", "Claim", "DifferentialPrivacy", "EventCheck", "GaussianDP", "LocalDP", "MIBudget",
    "MIDP", "MIPP", "RenyiDP", "ZeroConcentratedDP", "claim_from_table", "parse_claim",
]

# The notions a claim can be stated in.
CLAIM_NOTIONS = ("dp", "ldp", "zcdp", "rdp", "gdp", "mi-dp", "mi-pp")
CLAIM_SYNTAX = "dp:EPS, dp:EPS:DELTA, zcdp:RHO, rdp:ALPHA:EPS, gdp:MU, ldp:EPS, mi-dp:EPS or mi-pp:EPS"
# The MI notions an audit tests (its `verdict`): ε-MI DP, ε-SMI DP (Pufferfish paper, Eq. (6)), ε-MI PP.
AUDIT_NOTIONS = ("mi-dp", "smi-dp", "mi-pp")
# The audit notions whose secrets are records (the DP framework).
RECORD_AUDIT_NOTIONS = ("mi-dp", "smi-dp")
# The notions the noise calibrations meet (``miaudit calibrate --notion``).
CALIBRATION_NOTIONS = ("mi-dp", "mi-pp", "dp", "approx-dp")
# The notions a catalog entry's guarantee is stated in (ε-parameterised), and "none": not private.
GUARANTEE_NOTIONS = ("dp", "ldp", "mi-dp", "mi-pp", "none")

_PUFFERFISH_THM1 = "Pufferfish paper, Theorem 1: ε-DP ⇒ min(ε, ε²/2)-MI DP"
_PROPOSITION_2 = "Pufferfish paper, Proposition 2: ε-MI DP ⇒ ε-SMI DP"
_KL_CONVEXITY = ("conditional MI is an average of KL divergences between output laws on neighbouring "
                 "databases (joint convexity, as in the proof of the Pufferfish paper's Theorem 1, Eq. (9))")


@dataclass(frozen=True)
class MIBudget:
    """The MI budget a claim implies for the audited secrets.

    Attributes
    ----------
    value : float or None
        Upper bound on the audited MI in nats; ``None`` when the claim implies none.
    theorems : tuple of str
        What makes ``value`` a bound (empty when ``value`` is ``None``).
    reason : str
        Why there is no budget (empty when ``value`` is a number).
    """

    value: float | None
    theorems: tuple = ()
    reason: str = ""
    unit: ClassVar[str] = "nats"

    def to_dict(self) -> dict:
        return fields_to_dict(self, order=("value", "unit"), extra={"unit": self.unit}, null_nonfinite=False)


@dataclass(frozen=True)
class EventCheck:
    """A certified event pair checked against a claim's whole privacy profile.

    For an event E and neighbours D, D′, certified p̲ ≤ P(M(D) ∈ E) and p̄ ≥ P(M(D′) ∈ E)
    contradict the claim when p̲ > e^{ε′} p̄ + δ(ε′) for some ε′ ≥ 0, or, for the complement
    event with the roles swapped, 1 − p̄ > e^{ε′} (1 − p̲) + δ(ε′) (the claim holds for both
    orders of every neighbouring pair).

    Attributes
    ----------
    refuted : bool
        Whether some ε′ on the checked grid is violated.
    epsilon_prime : float
        The ε′ of the largest excess ``statistic − threshold``.
    statistic : float
        p̲ − e^{ε′} p̄ (or its complement form) at ``epsilon_prime``.
    threshold : float
        δ(ε′) of the claim at ``epsilon_prime``.
    event : {"E", "complement"}
        Which of the two forms gave the largest excess.
    """

    refuted: bool
    epsilon_prime: float
    statistic: float
    threshold: float
    event: str

    def to_dict(self) -> dict:
        return fields_to_dict(self, null_nonfinite=False)


#: The largest ε′ a claim's checking grid holds (:attr:`Claim._grid`): e^700 ≈ 1e304 is still finite.
MAX_GRID_EPSILON = 700.0


def _finite(value, what: str, argument: str) -> float:
    try:
        out = parse_decimal(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise InputError(f"argument '{argument}': {what} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(out):
        raise InputError(f"argument '{argument}': {what} must be a finite number, got {value!r}")
    return out


def _positive(value, what: str, argument: str) -> float:
    out = _finite(value, what, argument)
    if out <= 0:
        raise InputError(f"argument '{argument}': {what} must be > 0, got {value!r}")
    return out


def _epsilon_primes(epsilon_prime) -> np.ndarray:
    eps = np.asarray(epsilon_prime, dtype=np.float64)
    if not np.all(np.isfinite(eps)) or np.any(eps < 0):
        raise InputError(f"argument 'epsilon_prime' must be finite and >= 0, got {epsilon_prime!r}")
    return eps


def _shaped(values: np.ndarray, like):
    return float(values) if np.ndim(like) == 0 else values


@dataclass(frozen=True)
class Claim:
    """Base class of the claims; see the module docstring for the notions.

    Attributes
    ----------
    origin : str
        Where the claim came from (``"--claim"``, ``"catalog entry laplace_sum"``, a library's
        privacy map); reported beside the verdict.
    relation : {"replace-one", "add-remove"}
        The neighbouring relation the claim is stated for (:mod:`mechanisms.relation`).
    """

    origin: str = field(default="", kw_only=True, compare=False)
    relation: str = field(default=REPLACE_ONE, kw_only=True)

    notion: ClassVar[str] = ""
    #: How :meth:`privacy_profile` is computed; ``None`` when the claim has no profile.
    profile_source: ClassVar[str | None] = None
    #: Whether the claim is about records (the DP framework) rather than Pufferfish secrets.
    about_records: ClassVar[bool] = True

    # -- what every notion defines -------------------------------------------------------------
    def parameters(self) -> dict:
        """The claim's parameters by name (e.g. ``{"epsilon": 1.0, "delta": 0.0}``)."""
        raise NotImplementedError

    @property
    def text(self) -> str:
        """The claim as it is written on the command line, e.g. ``"zcdp:0.5"``."""
        return ":".join([self.notion] + [f"{v:g}" for v in self.parameters().values()])

    @property
    def label(self) -> str:
        """Human form, e.g. ``"0.5-zCDP"``."""
        raise NotImplementedError

    def _record_budget(self, record_support: int | None) -> MIBudget:
        raise NotImplementedError

    def _profile(self, eps: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _profile_scale(self) -> float:
        """An ε′ beyond which δ(ε′) is negligible (the end of the plotting/selection grid)."""
        raise NotImplementedError

    def _kinks(self) -> tuple:
        """ε′ values where the profile is not smooth (always on the checking grid)."""
        return ()

    # -- derived -------------------------------------------------------------------------------
    #: Whether the notion may be stated for add/remove neighbours (local DP and the MI notions may not).
    allows_add_remove: ClassVar[bool] = True

    def _check_relation(self):
        check_relation(self.relation, "relation")
        if self.relation == ADD_REMOVE and not self.allows_add_remove:
            raise InputError(f"argument 'relation': {self.notion} claims are stated for replace-one neighbours only, "
                             f"got {self.relation!r} (add/remove applies to dp, zcdp, rdp and gdp)")

    @property
    def relation_text(self) -> str:
        """The neighbouring relation in words, e.g. ``"add or remove one record (n varies)"``."""
        return relation_words(self.relation)

    @property
    def default_audit_notion(self) -> str:
        """The MI notion an audit of this claim tests when none is given."""
        return "mi-dp" if self.about_records else "mi-pp"

    @property
    def has_profile(self) -> bool:
        """Whether the claim bounds every event probability (a DP-family claim)."""
        return self.profile_source is not None

    @property
    def delta(self) -> float:
        """The claim's δ (0 unless the claim is approximate DP)."""
        return 0.0

    @property
    def pure_epsilon(self) -> float | None:
        """The ε of a pure ε-DP or ε-LDP claim (δ = 0), else None: such a claim is refuted exactly by
        a certified ε-DP lower bound above its ε, whatever certifies it (an event's two probabilities,
        its odds ratio, :mod:`audit.odds_ratio`, or its rate ratio, :mod:`audit.rate_ratio`)."""
        return None

    def implied_mi_budget(self, audit_notion: str = "mi-dp", record_support: int | None = None) -> MIBudget:
        """The MI budget (nats) this claim implies for an audit of ``audit_notion``.

        Parameters
        ----------
        audit_notion : {"mi-dp", "smi-dp", "mi-pp"}
            The audited notion. Record claims bound the records' conditional MI (and by the
            Pufferfish paper's Proposition 2 its sliced version); they say nothing about a
            Pufferfish secret's, and an MI-PP claim nothing about the records'.
        record_support : int, optional
            The number of values a record can take under every audited prior, when finite and
            known; (ε, δ)-DP implies an MI budget only then (Theorem 1, Part 1).
        """
        if audit_notion not in AUDIT_NOTIONS:
            raise InputError(f"argument 'audit_notion' must be one of {', '.join(AUDIT_NOTIONS)}, got {audit_notion!r}")
        if self.about_records != (audit_notion in RECORD_AUDIT_NOTIONS):
            about = "records" if self.about_records else "Pufferfish secrets"
            audited = "Pufferfish secrets" if self.about_records else "records"
            return MIBudget(None, reason=f"a {self.label} claim is about {about}; this audit is about {audited}")
        if self.relation == ADD_REMOVE:
            # Any two values of a record (present with either value, or absent) are at most two add/remove
            # steps apart, so the MI budget is that of the claim's replace-one form (group privacy).
            from .relation import convert_claim

            try:
                replace_one = convert_claim(self, REPLACE_ONE)
            except InputError as exc:
                return MIBudget(None, reason=f"a record's values are up to two add/remove steps apart and {exc}")
            budget = replace_one.implied_mi_budget(audit_notion, record_support)
            if budget.value is None:
                return budget
            return MIBudget(budget.value, (replace_one.origin,) + budget.theorems)
        budget = self._record_budget(record_support)
        if budget.value is not None and audit_notion == "smi-dp":
            budget = MIBudget(budget.value, budget.theorems + (_PROPOSITION_2,))
        return budget

    def privacy_profile(self, epsilon_prime):
        """δ(ε′): the largest P(M(D) ∈ E) − e^{ε′} P(M(D′) ∈ E) the claim allows, for ε′ ≥ 0.

        Accepts a scalar or an array; see :attr:`profile_source` for how it is computed.

        Raises
        ------
        InputError
            For a claim with no profile (an MI notion bounds an average over the prior, not
            every neighbouring pair), or ε′ < 0.
        """
        if not self.has_profile:
            raise InputError(f"the claim {self.text} has no privacy profile: {self.no_profile_reason}")
        eps = _epsilon_primes(epsilon_prime)
        out = np.clip(np.asarray(self._profile(np.atleast_1d(eps)), dtype=np.float64), 0.0, 1.0)
        return _shaped(out.reshape(eps.shape), eps)

    @property
    def no_profile_reason(self) -> str:
        """Why the claim has no profile (empty if it has one)."""
        if self.has_profile:
            return ""
        return ("an MI notion bounds an average over the prior, not every neighbouring pair, so it implies "
                "no (ε′, δ) guarantee for a given pair and event")

    @cached_property
    def _grid(self) -> tuple:
        """(ε′ grid, δ on it) for the trade-off curve and event selection."""
        # Beyond the scale δ(ε′) < e^−28 while e^ε′ p̄ only grows: no larger ε′ matters. Nor does any ε′ above
        # MAX_GRID_EPSILON, whatever the claim: there e^ε′ p̄ > 1 for every p̄ > e^−700 (a Clopper–Pearson upper
        # bound is at least 1 − (α/2)^{1/n} ≈ log(2/α)/n), so no pair's excess is positive, and e^ε′ overflows.
        scale = min(self._profile_scale(), MAX_GRID_EPSILON)
        kinks = np.asarray([k for k in self._kinks() if k <= MAX_GRID_EPSILON], dtype=float)
        eps = np.union1d(np.linspace(0.0, scale, 401), kinks)
        return eps, self.privacy_profile(eps)

    def tradeoff(self, type_one_error):
        """The trade-off curve f(a): the smallest type-II error of any test at type-I error a.

        f(a) = sup_{ε′ ≥ 0} max(0, 1 − δ(ε′) − e^{ε′} a, e^{−ε′} (1 − δ(ε′) − a)), the
        intersection of the (ε′, δ(ε′)) regions (Dong, Roth and Su 2022, Section 2.4,
        primal–dual view; Kairouz, Oh and Viswanath 2015, privacy region of (ε, δ)-DP),
        evaluated on a grid of ε′ (a valid curve, at most the exact one).
        """
        a = np.asarray(type_one_error, dtype=np.float64)
        if not np.all((a >= 0) & (a <= 1)):
            raise InputError(f"argument 'type_one_error' must be in [0, 1], got {type_one_error!r}")
        eps, delta = self._grid
        flat = a.reshape(-1, 1)
        curve = np.maximum(1 - delta - np.exp(eps) * flat, np.exp(-eps) * (1 - delta - flat)).max(axis=1)
        return _shaped(np.maximum(curve, 0.0).reshape(a.shape), a)

    def event_margin(self, p_lower, p_upper) -> np.ndarray:
        """max over the grid ε′ of the excess over δ(ε′) for arrays of certified pairs (> 0: refuted).

        A fast form of :meth:`check_event` on the claim's coarse grid, used to choose events. The
        excess of the event, p̲ − e^ε′ p̄ − δ(ε′), is p̲ plus a function of p̄ alone, so its maximum
        over the grid is p̲ + G(p̄) with G(x) = max_ε′ (−e^ε′ x − δ(ε′)), the upper envelope of one
        line per grid point (likewise (1 − p̄) + G(1 − p̲) for the complement with the roles
        swapped); G is evaluated on the envelope (:attr:`_margin_envelope`) at O(log grid) per pair.
        """
        breaks, growth, delta = self._margin_envelope
        lo = np.asarray(p_lower, dtype=np.float64)
        hi = np.asarray(p_upper, dtype=np.float64)
        j = np.searchsorted(breaks, hi, side="right")
        direct = lo - growth[j] * hi - delta[j]
        k = np.searchsorted(breaks, 1 - lo, side="right")
        swapped = (1 - hi) - growth[k] * (1 - lo) - delta[k]
        return np.maximum(direct, swapped)

    @cached_property
    def _margin_envelope(self) -> tuple:
        """(breakpoints, e^ε′, δ(ε′)) of the upper envelope of the lines x ↦ −e^ε′ x − δ(ε′) over the grid.

        The lines in order of increasing slope (decreasing ε′), each kept only where it is the
        maximum (the monotone-chain construction of an upper envelope, a convex hull of the dual
        points; de Berg et al. 2008, Section 11.4): line i of the envelope is the maximum on
        [breakpoints[i − 1], breakpoints[i]).
        """
        eps, delta = self._grid
        order = np.lexsort((-delta, -eps))  # by slope −e^ε′ increasing; equal slopes: the higher line first
        slopes, intercepts = -np.exp(eps[order]), -np.asarray(delta, dtype=np.float64)[order]
        kept = []
        for i in range(len(order)):
            if kept and slopes[kept[-1]] == slopes[i]:
                continue  # parallel and not higher
            while len(kept) >= 2:
                a, b = kept[-2], kept[-1]
                # b is nowhere the maximum when i overtakes a no later than b does.
                if (intercepts[a] - intercepts[i]) * (slopes[b] - slopes[a]) <= \
                        (intercepts[a] - intercepts[b]) * (slopes[i] - slopes[a]):
                    kept.pop()
                else:
                    break
            kept.append(i)
        kept = np.asarray(kept)
        s, c = slopes[kept], intercepts[kept]
        breaks = (c[:-1] - c[1:]) / (s[1:] - s[:-1])
        return breaks, -s, -c

    def check_event(self, p_lower: float, p_upper: float) -> EventCheck:
        """Check a certified pair (p̲ on D, p̄ on D′ for one event) against the whole profile.

        The claim implies P(M(D) ∈ E) ≤ e^{ε′} P(M(D′) ∈ E) + δ(ε′) for every ε′ ≥ 0 and both
        orders of the pair (definition of the profile; Dwork and Roth 2014, Definition 2.4 at
        each ε′). ε′ is searched on the claim's grid (0 to where δ(ε′) is negligible, with the
        profile's kinks), then refined around the best grid point (bounded Brent search); only
        points where the profile is evaluated exactly are compared, so a reported refutation is
        valid whatever the grid.
        """
        p_lower, p_upper = float(p_lower), float(p_upper)
        if not (0 <= p_lower <= 1 and 0 <= p_upper <= 1):
            raise InputError(f"arguments 'p_lower' and 'p_upper' must be probabilities, got {p_lower!r}, {p_upper!r}")
        if not self.has_profile:
            raise InputError(f"the claim {self.text} has no privacy profile: {self.no_profile_reason}")

        def forms(eps):
            return p_lower - math.exp(eps) * p_upper, (1 - p_upper) - math.exp(eps) * (1 - p_lower)

        def profile(eps):
            # privacy_profile(eps) for one ε′ of the grid's range (finite, ≥ 0), without its argument checks.
            return float(np.clip(np.asarray(self._profile(np.array([eps], dtype=np.float64)), dtype=np.float64),
                                 0.0, 1.0)[0])

        def excess(eps):
            return max(forms(eps)) - profile(eps)

        grid, delta = self._grid
        direct, swapped = p_lower - np.exp(grid) * p_upper, (1 - p_upper) - np.exp(grid) * (1 - p_lower)
        i = int(np.argmax(np.maximum(direct, swapped) - delta))
        best = float(grid[i])
        if 0 < i < len(grid) - 1:
            from scipy.optimize import minimize_scalar

            refined = minimize_scalar(lambda e: -excess(e), bounds=(grid[i - 1], grid[i + 1]), method="bounded",
                                      options={"xatol": 1e-6}).x
            best = max((best, float(refined)), key=excess)
        first, second = forms(best)
        threshold = profile(best)
        statistic = max(first, second)
        return EventCheck(refuted=bool(statistic - threshold > 0), epsilon_prime=best, statistic=statistic,
                          threshold=threshold, event="E" if first >= second else "complement")

    def to_dict(self, audit_notion: str | None = None, record_support: int | None = None) -> dict:
        """JSON form: notion, parameters, implied MI budget (nats or ``None``) and profile source."""
        # Not the field walk of estimators.result_forms: the parameters live in subclass fields
        # and the budget is computed for the audited notion.
        budget = self.implied_mi_budget(audit_notion or self.default_audit_notion, record_support)
        return {
            "notion": self.notion,
            "parameters": self.parameters(),
            "text": self.text,
            "label": self.label,
            "relation": self.relation,
            "relation_text": self.relation_text,
            "implied_mi_budget": budget.value,
            "implied_mi_budget_unit": "nats",
            "implied_mi_budget_source": list(budget.theorems) if budget.value is not None else budget.reason,
            "profile_source": self.profile_source,
            "origin": self.origin,
        }


def _pure_dp_budget(epsilon: float, theorems=(_PUFFERFISH_THM1,)) -> MIBudget:
    return MIBudget(min(epsilon, epsilon * epsilon / 2), tuple(theorems))


def _approx_dp_profile(eps: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    """δ(ε′) = δ + (1 − δ)(e^ε − e^{ε′})₊ / (1 + e^ε): the hockey-stick divergence of the
    four-point worst case of (ε, δ)-DP (Kairouz, Oh and Viswanath 2015, privacy region R(ε, δ);
    Dong, Roth and Su 2022, f_{ε,δ})."""
    # (e^ε − e^{ε′}) / (1 + e^ε), written to stay finite for large ε.
    gap = np.where(eps < epsilon, -np.expm1(np.minimum(eps - epsilon, 0.0)) / (1 + np.exp(-epsilon)), 0.0)
    return delta + (1 - delta) * gap


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
        from .dp_curves import gaussian_dp_delta

        return np.asarray(gaussian_dp_delta(eps, 1.0, self.mu))

    def _profile_scale(self):
        return self.mu * self.mu / 2 + 8 * self.mu  # mu * mu: inf for a huge μ, where ** raises


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


# notion -> (class, parameter names in the order of the written form, their symbols)
_FORMS = {
    "dp": (DifferentialPrivacy, ("epsilon", "delta"), ("EPS", "DELTA")),
    "ldp": (LocalDP, ("epsilon",), ("EPS",)),
    "zcdp": (ZeroConcentratedDP, ("rho",), ("RHO",)),
    "rdp": (RenyiDP, ("order", "epsilon"), ("ALPHA", "EPS")),
    "gdp": (GaussianDP, ("mu",), ("MU",)),
    "mi-dp": (MIDP, ("epsilon",), ("EPS",)),
    "mi-pp": (MIPP, ("epsilon",), ("EPS",)),
}


def _checked(notion: str, name: str, value, label: str, shown: str) -> float:
    """One parameter of a written claim, checked; errors start with ``label`` and name the symbol."""
    _, names, symbols = _FORMS[notion]
    symbol = symbols[names.index(name)]
    form = ":".join((notion,) + symbols)
    try:
        # Written text must be a plain ASCII decimal: float() would read "1_0" as 10 and accept full-width digits.
        number = parse_decimal(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise InputError(f"{label}: {symbol} in {form} must be a number in ASCII decimal notation, "
                         f"got {shown}") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise InputError(f"{label}: {symbol} in {form} must be a finite number, got {shown}")
    if name == "delta":
        if not 0 <= number < 1:
            raise InputError(f"{label}: DELTA in {form} must be in [0, 1), got {shown}")
    elif name == "order":
        if number <= 1:
            raise InputError(f"{label}: ALPHA in {form} (the Rényi order) must be > 1, got {shown}")
    elif number <= 0:
        raise InputError(f"{label}: {symbol} in {form} must be > 0, got {shown}")
    return number


def parse_claim(text, *, argument: str = "--claim", origin: str | None = None, relation: str | None = None) -> Claim:
    """Parse a written claim, e.g. ``"dp:1"``, ``"dp:1:1e-5"``, ``"zcdp:0.5"``, ``"rdp:2:0.3"``.

    Parameters
    ----------
    text : str
        ``NOTION:PARAMETERS`` in one of the forms of the module docstring.
    argument : str
        The user's name for the value, used in errors (``--claim``, ``[claim] spec``).
    origin : str, optional
        Where the claim came from (default: ``argument``).
    relation : {"replace-one", "add-remove"}, optional
        The neighbouring relation the claim is stated for (default replace-one;
        :mod:`mechanisms.relation`).

    Raises
    ------
    InputError
        Naming ``argument``, for an unknown notion, a wrong number of parameters or a value
        out of range.

    Examples
    --------
    >>> claim = parse_claim("dp:1")
    >>> claim.label, claim.implied_mi_budget("mi-dp").value  # min(ε, ε²/2) nats
    ('1-DP', 0.5)
    """
    if isinstance(text, Claim):
        return text if relation is None or relation == text.relation else _with_relation(text, relation, argument)
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"argument '{argument}' must be a claim such as {CLAIM_SYNTAX}; got {text!r}")
    notion, *parts = [p.strip() for p in text.strip().split(":")]
    notion = notion.lower()
    if notion not in _FORMS:
        raise InputError(f"argument '{argument}': unknown notion {notion!r} in {text!r}; "
                         f"choose from {', '.join(CLAIM_NOTIONS)} ({CLAIM_SYNTAX})")
    _, names, symbols = _FORMS[notion]
    optional = 1 if notion == "dp" else 0
    if not len(names) - optional <= len(parts) <= len(names):
        forms = " or ".join(":".join((notion,) + symbols[:k]) for k in range(len(names) - optional, len(names) + 1))
        raise InputError(f"argument '{argument}' must be {forms}, got {text!r}")
    values = {name: _checked(notion, name, part, f"argument '{argument}'", repr(text)) for name, part in zip(names, parts)}
    return _build(notion, values, origin if origin is not None else argument, relation, argument)


def _build(notion: str, values: dict, origin: str, relation: str | None, argument: str) -> Claim:
    """The claim of ``notion`` at ``values`` stated for ``relation``; errors name ``argument``."""
    cls = _FORMS[notion][0]
    _relation_applies(cls, relation, argument)
    return cls(**values, origin=origin, relation=relation or REPLACE_ONE)


def _relation_applies(cls, relation: str | None, argument: str) -> None:
    if relation is None:
        return
    if relation not in (REPLACE_ONE, ADD_REMOVE):
        raise InputError(f"argument '{argument}': the relation must be replace-one or add-remove, got {relation!r}")
    if relation == ADD_REMOVE and not cls.allows_add_remove:
        raise InputError(f"argument '{argument}': {cls.notion} claims are stated for replace-one neighbours only "
                         "(add/remove applies to dp, zcdp, rdp and gdp)")


def _with_relation(claim: Claim, relation: str, argument: str) -> Claim:
    """``claim`` stated for ``relation`` instead (the same parameters)."""
    from dataclasses import replace

    _relation_applies(type(claim), relation, argument)
    return replace(claim, relation=relation)


def claim_from_table(table: dict, *, where: str = "[claim]", origin: str | None = None) -> Claim:
    """A claim from a configuration table: ``spec = "zcdp:0.5"``, or ``notion`` plus the
    parameters by name (``epsilon``, ``delta``, ``rho``, ``order``, ``mu``); optional
    ``relation`` (``"replace-one"``, the default, or ``"add-remove"``).

    Errors name the table's keys (e.g. ``[claim] rho``).
    """
    if not isinstance(table, dict):
        raise InputError(f"configuration entry '{where}' must be a table")
    origin = origin if origin is not None else where
    relation = table.get("relation")
    table = {key: value for key, value in table.items() if key != "relation"}
    if "spec" in table:
        extra = sorted(set(table) - {"spec"})
        if extra:
            raise InputError(f"{where}: give either 'spec' or 'notion' with its parameters, not both ({', '.join(extra)})")
        return parse_claim(table["spec"], argument=f"{where} spec", origin=origin, relation=relation)
    if "notion" not in table:
        raise InputError(f"{where} needs 'spec' (e.g. \"dp:1\") or 'notion' with its parameters")
    notion = table["notion"]
    if notion not in _FORMS:
        raise InputError(f"{where}: unknown notion {notion!r}; choose from {', '.join(CLAIM_NOTIONS)}")
    _, names, _ = _FORMS[notion]
    unknown = sorted(set(table) - {"notion", *names})
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} for notion {notion!r}; "
                         f"its parameters are {', '.join(names)}")
    for name in names:
        if name != "delta" and name not in table:
            raise InputError(f"{where} needs '{name}' for notion {notion!r}")
    values = {name: _checked(notion, name, table[name], f"{where} {name}", repr(table[name]))
              for name in names if name in table}
    return _build(notion, values, origin, relation, f"{where} relation")
