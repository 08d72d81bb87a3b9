"""How many runs a fixed-budget audit would need to refute a claim at an event's observed frequencies.

When a sequential audit (:mod:`audit.gating.sequential`) stops unrefuted, :func:`runs_to_refute` says how many runs a fresh fixed-budget audit would need to refute the
claim if the last look's event had the frequencies it showed there (the event test's predicted
certificate, :func:`audit.search.event_choice.predicted_objective`), or that none would: the event did
not exceed the claim.
"""

from __future__ import annotations

import math

from audit.certificates.claim_tests import uses_ratio_certificates
from audit.certificates.event_bounds import claim_objective
from audit.gating.look_runs import runs_per_sample
from audit.search.event_choice import predicted_objective

__all__ = ["MAX_REFUTATION_RUNS", "refutation_at_observed", "runs_to_refute"]

#: The most runs per input :func:`runs_to_refute` looks for.
MAX_REFUTATION_RUNS = 10**12


def runs_to_refute(claim, p_first: float, p_second: float, alpha: float,
                   limit: int = MAX_REFUTATION_RUNS) -> int | None:
    """The fewest certification runs per input predicted to refute ``claim`` with an event of these frequencies.

    The prediction is the event test's own (:func:`audit.search.event_choice.predicted_objective` with the
    claim's objective, :func:`audit.certificates.event_bounds.claim_objective`): the certificates a fresh audit
    at level ``alpha`` would choose among (Clopper–Pearson pair; for pure DP also the odds ratio
    and the rate ratio with Poisson runs), evaluated at the expected counts, for the event and for
    its complement with the roles swapped (frequencies 1 − ``p_second`` and 1 − ``p_first``): a
    fresh audit considers both as events of their own, and the claim binds both (Dwork and Roth
    2014, Definition 2.4, for both orders of the pair). ``None`` when no number of runs up to
    ``limit`` is predicted to refute (the frequencies do not exceed the claim's profile). The
    report's forecasts (:mod:`audit.report.forecast`) and the sequential audit's last-look
    prediction both read this one function.
    """
    objective = claim_objective(claim)
    pure = uses_ratio_certificates(claim)  # a fresh audit at δ = 0
    forms = ((p_first, p_second), (1.0 - p_second, 1.0 - p_first))

    def refutes(n: int) -> bool:
        return any(predicted_objective(first, second, n, alpha, objective, pure_dp=pure) > 1.0
                   for first, second in forms)

    n = 16
    while not refutes(n):
        n *= 2
        if n > limit:
            return None
    lo, hi = n // 2, n
    while hi - lo > max(1, lo // 100):  # 1% resolution: a prediction, not a certificate
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if refutes(mid) else (mid, hi)
    return hi


def refutation_at_observed(spec, result) -> tuple[int | None, str]:
    """(total runs a fixed audit would need to refute at the last look's observed event, the sentence)."""
    event = None if result is None else result.event_test
    if spec.claim is None or not spec.claim.has_profile:
        return None, ""
    if event is None:
        return None, "There was no event test, so no number of runs to refute at the observed effect is predicted."
    per_input = runs_to_refute(spec.claim, event.p_first, event.p_second, spec.alpha)
    if per_input is None:
        return None, (f"The last look's event (frequencies {event.p_first:.4g} and {event.p_second:.4g} under the two "
                      f"inputs) does not exceed the claim {spec.claim.label}: no number of runs is predicted to "
                      "refute it at this effect.")
    total = int(math.ceil(per_input * runs_per_sample(spec) * spec.samples / spec.event_runs))
    return total, (f"A refutation at the last look's observed effect (event frequencies {event.p_first:.4g} and "
                   f"{event.p_second:.4g}) would need about {total} mechanism runs in one audit at α = {spec.alpha:g} "
                   f"({per_input} certification runs per input).")
