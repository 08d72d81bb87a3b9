"""How many runs an event test would need to refute a claim: the forecasts a report's "not refuted" gives.

:func:`runs_to_refute` is the fewest runs per input with which an event at given frequencies would refute a claim
(the event test's own prediction, :func:`audit.gating.refutation_runs.runs_to_refute`); :func:`forecast_runs` the range of it that an event's own
evidence supports, one standard error either side. Both are forecasts, not guarantees
(:func:`audit.report.content.claim_outcome` says them).
"""

from __future__ import annotations

import math

#: The most runs per input :func:`runs_to_refute` looks for.
MAX_RUNS_TO_REFUTE = 10**9


def runs_to_refute(claim, p_first: float, p_second: float, alpha: float, limit: int = MAX_RUNS_TO_REFUTE):
    """The fewest runs per input with which an event seen at frequencies (``p_first``, ``p_second``)
    would refute ``claim``, as the event test of a fresh audit predicts it
    (:func:`audit.gating.refutation_runs.runs_to_refute`: its certificates, the event or its complement),
    looked for up to ``limit``. ``None`` when no n up to ``limit`` does: at its frequencies the event lies
    (or nearly lies) within the claim's profile, and more runs of it cannot refute the claim.

    The frequencies are estimates, so the count is a forecast, not a guarantee.
    """
    from audit.gating.refutation_runs import runs_to_refute as predicted_runs

    return predicted_runs(claim, p_first, p_second, alpha, limit=limit)


def _one_standard_error(p: float, n: int) -> float:
    """The standard error √(p(1 − p)/n) of a frequency p of n runs (the binomial's)."""
    return math.sqrt(max(p * (1 - p), 0.0) / max(n, 1))


def _beyond_by_a_standard_error(claim, frequencies, runs) -> bool:
    """Whether an event's frequencies (first input, second) on ``runs`` draws of each lie outside the claim's privacy
    profile by more than their standard error: the pair with each frequency moved one standard error towards the
    claim (the first down, the second up) is still outside it (:meth:`~mechanisms.claims.claim.Claim.event_margin`
    > 0). The excess p₁ − e^ε′ p₂ − δ(ε′) then exceeds se₁ + e^ε′ se₂, at least its standard error."""
    (p1, p2), (n1, n2) = frequencies, runs
    low = max(p1 - _one_standard_error(p1, n1), 0.0)
    high = min(p2 + _one_standard_error(p2, n2), 1.0)
    return float(claim.event_margin(low, high)) > 0


def forecast_runs(claim, event, alpha: float) -> tuple | None:
    """(fewest, most) runs per input a refutation with ``event`` is forecast to need, or None without evidence.

    Evidence: the event's frequencies on the draws it was chosen on (``chosen_frequencies``, the selection's own
    estimate of its effect) and on its certification runs (fresh, so free of the choice's optimism) both lie outside
    the claim's profile by more than their standard error (:func:`_beyond_by_a_standard_error`). The range is
    :func:`runs_to_refute` at the certification frequencies moved one standard error towards the claim and away from
    it (a value over :data:`MAX_RUNS_TO_REFUTE` reads as that bound)."""
    if event.chosen_frequencies is None or event.chosen_runs is None:
        return None
    runs = event.runs_made or [event.runs_per_input] * 2
    certified = (event.p_first, event.p_second)
    if not (_beyond_by_a_standard_error(claim, event.chosen_frequencies, event.chosen_runs)
            and _beyond_by_a_standard_error(claim, certified, runs)):
        return None
    se = (_one_standard_error(event.p_first, runs[0]), _one_standard_error(event.p_second, runs[1]))
    fewest = runs_to_refute(claim, min(event.p_first + se[0], 1.0), max(event.p_second - se[1], 0.0), alpha)
    most = runs_to_refute(claim, max(event.p_first - se[0], 0.0), min(event.p_second + se[1], 1.0), alpha)
    return (fewest or MAX_RUNS_TO_REFUTE), (most or MAX_RUNS_TO_REFUTE)
