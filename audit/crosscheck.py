"""Cross-checks: does the audit's evidence contradict what a claimed guarantee implies?

A claim (:mod:`mechanisms.claims`) implies an upper bound on the audited MI (its MI budget);
a certified lower bound above it refutes the claim (with the audit's confidence), and a point
estimate above it is inconsistent with it (no error guarantee). A claim with a privacy profile
is also checked against the event test's certified pair over its whole profile.
"""

from __future__ import annotations

from mechanisms.claims import Claim

from .result import CrossCheck

_EVENT_THEOREMS = ["privacy profile: P(M(D) ∈ E) ≤ e^ε′ P(M(D′) ∈ E) + δ(ε′) for every ε′ ≥ 0",
                   "Clopper–Pearson (1934)"]


def cross_checks(claim: Claim | None, notion: str, lower_bound, estimate: float, event=None,
                 record_support: int | None = None) -> list:
    """The cross-checks of an audit's evidence against ``claim`` (empty without a claim).

    Parameters
    ----------
    claim : Claim or None
    notion : {"mi-dp", "smi-dp", "mi-pp"}
        The audited MI notion.
    lower_bound : float or None
        The certified MI lower bound (nats).
    estimate : float
        The MI point estimate (nats).
    event : audit.result.EventTest, optional
        The event test's certified pair, checked against the claim's profile.
    record_support : int, optional
        Values a record can take under every audited prior (finite), for (ε, δ) claims.
    """
    if claim is None:
        return []
    checks = []
    budget = claim.implied_mi_budget(notion, record_support)
    if budget.value is not None:
        bound = budget.value
        contradiction = lower_bound is not None and lower_bound > bound
        detail = (f"the claim {claim.label} implies at most {bound:.4g} nats; certified lower bound "
                  f"{'none' if lower_bound is None else f'{lower_bound:.4g}'} nats, estimate {estimate:.4g} nats")
        checks.append(CrossCheck(claim.label, bound, contradiction, estimate <= bound, list(budget.theorems), detail))
    else:
        checks.append(CrossCheck(claim.label, None, False, None, [], budget.reason))
    if event is not None and claim.has_profile:
        check = claim.check_event(event.p_first_lower, event.p_second_upper)
        form = ("p̲ − e^ε′ p̄" if check.event == "E" else "(1 − p̄) − e^ε′ (1 − p̲)")
        detail = (f"event test: certified p̲ = {event.p_first_lower:.4g}, p̄ = {event.p_second_upper:.4g}; at "
                  f"ε′ = {check.epsilon_prime:.4g}, {form} = {check.statistic:.4g} "
                  f"{'>' if check.refuted else '≤'} δ(ε′) = {check.threshold:.4g}")
        checks.append(CrossCheck(claim.label, None, check.refuted, None, list(_EVENT_THEOREMS), detail))
    return checks
