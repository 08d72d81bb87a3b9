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

A DP-family claim is about a neighbouring relation (:mod:`mechanisms.inputs.relation`): databases of n
records that differ in one record (``replace-one``, n fixed; the default), or databases that differ
by one record added or removed (``add-remove``), its :attr:`Claim.relation`; or, stated at a distance
K (``replace:K``, ``add-remove:K``), a user-level claim about databases that differ in up to K
records. Local DP and the MI notions are replace-one only. Every :class:`Claim` knows

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

from mechanisms.inputs.relation import REPLACE_ONE, check_relation, relation_words

__all__ = [
    "AUDIT_NOTIONS", "CALIBRATION_NOTIONS", "CLAIM_NOTIONS", "CLAIM_SYNTAX", "GUARANTEE_NOTIONS", "RECORD_AUDIT_NOTIONS", "Claim", "EventCheck", "MIBudget",
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
_KL_CONVEXITY = ("Pufferfish paper, proof of Theorem 1, Eq. (9): conditional MI is an average of KL divergences "
                 "between output laws on neighbouring databases (joint convexity)")


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
    relation : str
        The neighbouring relation the claim is stated for (:mod:`mechanisms.inputs.relation`):
        ``"replace-one"``, ``"add-remove"``, or a user-level ``"replace:K"`` / ``"add-remove:K"``.
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
        relation = check_relation(self.relation, "relation")
        if relation != REPLACE_ONE and not self.allows_add_remove:
            raise InputError(f"argument 'relation': {self.notion} claims are stated for replace-one neighbours only, "
                             f"got {self.relation!r} (add/remove and user-level relations apply to dp, zcdp, rdp "
                             "and gdp)")
        object.__setattr__(self, "relation", relation)  # one written form: replace:1 is replace-one

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
        its odds ratio, :mod:`audit.certificates.odds_ratio`, or its rate ratio, :mod:`audit.certificates.rate_ratio`)."""
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
        if self.relation != REPLACE_ONE:
            # Any two values of a record (present with either value, or absent) are at most two add/remove
            # steps apart (one step of a relation at a distance K ≥ 2 for replace:K), so the MI budget is that of
            # the claim's replace-one form (group privacy; the claim itself for replace:K).
            from mechanisms.claims.conversion import convert_claim

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

    def group_form(self, steps: int) -> tuple:
        """(claim, theorem): this claim restated for groups of ``steps`` neighbours chained (group privacy: a pair
        at ``steps`` steps of the claim's relation). Each notion that has such a theorem overrides it
        (:mod:`mechanisms.claims.notions`); :func:`mechanisms.claims.conversion.convert_claim` calls it.

        Raises
        ------
        InputError
            When the notion has no group form.
        """
        raise InputError(f"the claim {self.text} ({self.relation}) has no group-privacy form: {self.notion} claims "
                         "are stated for replace-one neighbours only")

    def replace_one_form(self) -> tuple:
        """(claim, theorem): this claim, stated for add/remove neighbours, restated for replace-one ones by group
        privacy for 2 steps (a replacement is a removal and an addition): :meth:`group_form` at 2."""
        return self.group_form(2)

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

    def event_margin(self, p_lower, p_upper, complement: bool = True) -> np.ndarray:
        """max over the grid ε′ of the excess over δ(ε′) for arrays of certified pairs (> 0: refuted).

        A fast form of :meth:`check_event` on the claim's coarse grid, used to choose events. The
        excess of the event, p̲ − e^ε′ p̄ − δ(ε′), is p̲ plus a function of p̄ alone, so its maximum
        over the grid is p̲ + G(p̄) with G(x) = max_ε′ (−e^ε′ x − δ(ε′)), the upper envelope of one
        line per grid point (likewise (1 − p̄) + G(1 − p̲) for the complement with the roles
        swapped); G is evaluated on the envelope (:attr:`_margin_envelope`) at O(log grid) per pair.
        ``complement=False``: the event's own excess only (its complement is an event of its own where
        events are chosen, so ranking an event by its complement would only tie the two).
        """
        breaks, growth, delta = self._margin_envelope
        lo = np.asarray(p_lower, dtype=np.float64)
        hi = np.asarray(p_upper, dtype=np.float64)
        j = np.searchsorted(breaks, hi, side="right")
        direct = lo - growth[j] * hi - delta[j]
        if not complement:
            return direct
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

    def to_dict(self, audit_notion: str | None = None, record_support: int | None = None,
                secrets: str | None = None) -> dict:
        """JSON form: notion, parameters, what the claim is stated over, implied MI budget (nats or ``None``) and
        profile source.

        What it is stated over: a claim about records, over neighbouring databases, names its relation
        (``relation``, ``relation_text``); an MI-PP claim bounds I(g(X); M(X) | w(X)) for every secret pair
        g ~ w and prior of its framework (Pufferfish paper, Definition 5), not over neighbours, so its
        ``relation`` and ``relation_text`` are None and ``secrets`` says them, as the audit gives them
        (:meth:`audit.frameworks.PufferfishFramework.secrets_words`) where it audits ``mi-pp`` (the secrets of
        another audit's framework are records, not the claim's); ``secrets`` is None otherwise.
        """
        # Not the field walk of estimators.result_forms: the parameters live in subclass fields
        # and the budget is computed for the audited notion.
        budget = self.implied_mi_budget(audit_notion or self.default_audit_notion, record_support)
        return {
            "notion": self.notion,
            "parameters": self.parameters(),
            "text": self.text,
            "label": self.label,
            "relation": self.relation if self.about_records else None,
            "relation_text": self.relation_text if self.about_records else None,
            "secrets": secrets if not self.about_records and audit_notion == "mi-pp" else None,
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


