"""The ε-optimal and the δ-optimal event of a claim that is not pure DP, and which one is certified.

For an approximate claim ((ε, δ)-DP with δ > 0) and for the profile claims (zCDP, RDP, GDP, each
checked through its privacy profile δ(ε′)), the event test's objective
(:func:`audit.certificates.event_bounds.claim_objective`) ranks events predicted to refute the
claim by their excess over the profile. The others it ranks by the ε they certify: the
*ε-optimal* event, the tightest ε statement when the claim looks true. Where the selection runs
show the claim violated but the pessimistic prediction does not yet refute it, that event is
often a far tail that certifies a large ε and no δ at the claim's ε. The *δ-optimal* event ranks
them by their excess instead (``rank="delta"``): it maximises the certified δ̲ at the claim's ε,
or the excess at the best point of the profile.

Which one is certified is decided on the selection runs (or held-out draws) alone, so the choice
costs no α and the certificate keeps the event test's whole share: the δ-optimal event when its
selection frequencies (point estimates, not the pessimistic prediction) exceed the claim's profile
at some ε′, i.e. when the selection runs say that the claim is violated; else the ε-optimal one.
When some event is predicted to refute the claim both rankings choose the same event (the one of
largest predicted excess). The result names which (``event_test.event_objective``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from audit.certificates.event_bounds import claim_objective
from audit.search.event_choice import choose_event

__all__ = ["DELTA_OPTIMAL", "EPSILON_OPTIMAL", "choose_events", "ranks_by_delta"]

#: The names of the two events in a result.
EPSILON_OPTIMAL, DELTA_OPTIMAL = "ε-optimal", "δ-optimal"


def ranks_by_delta(claim) -> bool:
    """Whether ``claim`` has a δ-optimal event: it has a privacy profile and is not pure (local) DP."""
    return claim is not None and claim.has_profile and claim.pure_epsilon is None


def choose_events(scores: dict, settings: dict, claim) -> dict:
    """The event choice per candidate: ``scores`` maps a candidate to its (first input's, second's) selection
    scores, ``settings`` are :func:`audit.search.event_choice.choose_event`'s keyword arguments.

    Without a δ-optimal event (:func:`ranks_by_delta`) each candidate's choice is ``choose_event``'s. Otherwise
    both events are chosen for every candidate, and one ranking serves all of them, so that their predicted
    scores compare: the δ-optimal events when the selection frequencies of some candidate's δ-optimal event
    exceed the claim's profile (:meth:`mechanisms.claims.claim.Claim.event_margin` at the frequencies
    themselves), else the ε-optimal ones. Each choice carries ``objective`` (:data:`EPSILON_OPTIMAL` or
    :data:`DELTA_OPTIMAL`).
    """
    by_epsilon = {key: replace(choose_event(*pair, **settings), objective=EPSILON_OPTIMAL)
                  for key, pair in scores.items()}
    if not ranks_by_delta(claim):
        return by_epsilon
    delta_settings = dict(settings, objective=claim_objective(claim, rank="delta"))
    by_delta = {key: replace(choose_event(*pair, **delta_settings), objective=DELTA_OPTIMAL)
                for key, pair in scores.items()}
    violated = any(float(claim.event_margin(np.array([c.p_first]), np.array([c.p_second]))[0]) > 0
                   for c in by_delta.values())
    return by_delta if violated else by_epsilon
