"""Cross-checks: does the audit's evidence contradict what a claimed guarantee implies?

A claim implies an upper bound on the audited MI through the conversion theorems; a
certified lower bound above it refutes the claim (with the audit's confidence), and a point
estimate above it is inconsistent with it (no error guarantee).
"""

from __future__ import annotations

from mechanisms.catalog.guarantee import Guarantee

from .bounds.pufferfish import pp_to_mipp
from .result import CrossCheck

DP_NOTIONS = ("mi-dp", "smi-dp")


def _implied_mi_bound(claim: Guarantee, notion: str):
    """(bound on the audited MI in nats or None, theorems used, why not when None)."""
    if claim.notion in ("dp", "ldp"):
        if notion not in DP_NOTIONS:
            return None, [], "a DP claim is about records; this audit is about Pufferfish secrets"
        if claim.delta > 0:
            return None, [], ("Theorem 1's (ε, δ) conversion needs a finite support or the density constants "
                              "of formula (4); not applied")
        theorems = ["Pufferfish paper, Theorem 1: ε-DP ⇒ min(ε, ε²/2)-MI DP"]
        if notion == "smi-dp":
            theorems.append("Pufferfish paper, Proposition 2: ε-MI DP ⇒ ε-SMI DP")
        return pp_to_mipp(claim.epsilon), theorems, ""
    if claim.notion == "mi-dp":
        if notion == "mi-pp":
            return None, [], "an MI-DP claim is about records; this audit is about Pufferfish secrets"
        theorems = ["Pufferfish paper, Definition of ε-MI DP (Remark 2)"]
        if notion == "smi-dp":
            theorems.append("Pufferfish paper, Proposition 2: ε-MI DP ⇒ ε-SMI DP")
        return claim.epsilon, theorems, ""
    if claim.notion == "mi-pp":
        if notion != "mi-pp":
            return None, [], "an MI-PP claim is about Pufferfish secrets; this audit is about records"
        return claim.epsilon, ["Pufferfish paper, Definition 5 (ε-MI PP)"], ""
    return None, [], "the mechanism is claimed to be not private"


def cross_checks(claim: Guarantee | None, notion: str, lower_bound, estimate: float,
                 dp_event_lower_bound=None, dp_event_delta: float = 0.0) -> list:
    """The cross-checks of an audit's evidence against ``claim`` (empty without a claim)."""
    if claim is None:
        return []
    checks = []
    bound, theorems, why_not = _implied_mi_bound(claim, notion)
    if bound is not None:
        contradiction = lower_bound is not None and lower_bound > bound
        consistent = estimate <= bound
        detail = (f"the claim {claim.text} implies at most {bound:.4g} nats; certified lower bound "
                  f"{'none' if lower_bound is None else f'{lower_bound:.4g}'} nats, estimate {estimate:.4g} nats")
        checks.append(CrossCheck(claim.text, bound, contradiction, consistent, theorems, detail))
    else:
        checks.append(CrossCheck(claim.text, None, False, None, [], why_not))
    if claim.notion in ("dp", "ldp") and notion in DP_NOTIONS and dp_event_lower_bound is not None:
        delta_ok = abs(dp_event_delta - claim.delta) < 1e-15
        contradiction = delta_ok and dp_event_lower_bound > claim.epsilon
        detail = (f"event test certifies ε ≥ {dp_event_lower_bound:.4g} at δ = {dp_event_delta:g}"
                  + ("" if delta_ok else f" (the claim's δ is {claim.delta:g}: not comparable)"))
        checks.append(CrossCheck(claim.text, None, contradiction, None,
                                 ["(ε, δ)-DP: P(M(D) ∈ E) ≤ e^ε P(M(D′) ∈ E) + δ", "Clopper–Pearson (1934)"], detail))
    return checks
