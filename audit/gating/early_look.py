"""A sequential audit's early look: a few dozen runs per input in which the event test alone may refute.

A deterministic difference between neighbouring inputs (an output value seen in every run of one and
never in the other: ε = ∞) shows in the first runs, yet the smallest ordinary look of
:func:`audit.gating.sequential.look_schedule` is a few hundred samples: the MI test's floor
(:data:`audit.engine.MIN_TEST_SAMPLES` held-out draws) and as many event runs. Where the claim is one the
event test tests and its candidates are chosen on the MI sample's held-out draws (classifier critics
under two-point priors on neighbouring pairs: :func:`early_look_possible`), the schedule starts with an
**early look** (:func:`early_look`) of :data:`EARLY_LOOK_SAMPLES` draws per prior of Θ and ``event_runs``
certification runs per input, at most :data:`EARLY_LOOK_RUNS_PER_INPUT` runs per input in all:

- its MI sample (about 20 draws of each database) is the event test's selection: the classifiers are
  cross-fitted on it and the event is chosen on their out-of-fold scores, with a floor of
  :data:`audit.statistics.pair_candidates.EARLY_LOOK_SELECTION_RUNS` draws per input instead of
  :data:`audit.statistics.pair_candidates.MIN_SELECTION_RUNS`;
- the MI test, below its floor, is skipped (no MI bound or verdict; it never tests the claim at this
  look) and the float-bit event test is not run, a rule fixed before any run
  (:func:`audit.certificates.claim_tests.plan_claim_tests` with ``early``): the look's whole level α_0 is the
  event test's (halved with the μ certificate for a GDP claim);
- its level is its share of the power α-spending of all the looks
  (:func:`audit.gating.sequential.power_alpha_spending`), α_0 = α·t_0^ρ with t_0 its planned runs over
  the last look's (the fraction of the runs it sees), fixed before any run; the later looks spend
  α·(t_k^ρ − t_{k−1}^ρ) from t_0 on, so all the looks' levels still sum to α and the union bound keeps
  the overall type-I error ≤ α (:mod:`audit.gating.sequential`, "Validity");
- its event runs are the fewest with which the event test at α_0 could refute the claim on a pair with
  one miss (all but one of the runs of one input in the event, none of the other's: Clopper–Pearson
  bounds at α_0/2 each outside the claim's profile, :func:`refutes_with_one_miss`), so a statistic fitted on
  a few dozen draws that misses one certification run of a deterministic difference still refutes.

Where that many runs exceed :data:`EARLY_LOOK_RUNS_PER_INPUT` per input (a claim of large ε such as
``dp:4``, whose refutation needs hundreds of perfectly separated runs; or a budget so large that α_0 is
tiny) there is no early look and the schedule is the ordinary one: for a pure ε-DP claim under one two-point
prior, an early look is planned up to ε ≈ 1.9 at ``max_runs`` = 6,000, 1.5 at 60,000 and 1.15 at 10⁶.
"""

from __future__ import annotations

import dataclasses

from audit.audit_plan import resolve_slices
from audit.certificates.claim_tests import plan_claim_tests, smallest_certifying_runs
from audit.certificates.event_bounds import clopper_pearson
from audit.gating.look_runs import event_selection_possible, theta_size

__all__ = ["EARLY_LOOK_RUNS_PER_INPUT", "EARLY_LOOK_SAMPLES", "early_look", "early_look_possible", "early_look_runs",
           "refutes_with_one_miss"]

#: MI-sample draws per prior of Θ at the early look: about 20 of each database of a balanced two-point prior.
EARLY_LOOK_SAMPLES = 40
#: The most runs per input of the pair an early look makes: its MI sample's and its certification runs
#: (issue 39: a deterministic difference refuted in ≤ 100 runs per input).
EARLY_LOOK_RUNS_PER_INPUT = 100


def early_look_possible(spec) -> bool:
    """Whether a sequential audit of ``spec`` may start with an early look (module docstring).

    A claim with a privacy profile, which the event test tests; the notion ``mi-dp`` without slices and
    critics not forced neural, every declared prior a two-point prior on a neighbouring pair
    (:func:`audit.gating.look_runs.event_selection_possible` is false), so the MI test's critics are the event
    test's cross-fitted classifiers (:func:`audit.audit_plan.resolve_mi_critic`) and the event is chosen on the
    MI sample; the event test on; not a budget plan's pilot.
    """
    claim = spec.claim
    return bool(claim is not None and claim.has_profile and spec.notion == "mi-dp" and spec.event_runs > 0
                and spec.mi_critic != "neural" and not resolve_slices(spec.notion, spec.slices)
                and spec.pilot_for_runs is None and not event_selection_possible(spec))


def early_look_runs(spec, samples: int, event_runs: int) -> int:
    """The mechanism runs of an early look: ``samples`` draws of each prior of Θ and ``event_runs`` certification
    runs of each input of the event test's pair (no selection runs: the event is chosen on the MI sample; no
    float-bit test)."""
    return int(samples * theta_size(spec) + 2 * event_runs)


def refutes_with_one_miss(claim, alpha: float, runs: int) -> bool:
    """Whether ``runs`` certification runs per input at level ``alpha`` refute ``claim`` when the event holds in
    all but one run of one input and in none of the other's: the Clopper–Pearson (1934) lower bound of
    (runs − 1)/runs and upper bound of 0/runs, each at α/2 (the event test's even split), outside the claim's
    privacy profile (:meth:`mechanisms.claims.claim.Claim.check_event`)."""
    if runs < 2:
        return False
    lower = float(clopper_pearson(runs - 1, runs, alpha / 2)[0])
    upper = float(clopper_pearson(0, runs, alpha / 2)[1])
    return bool(claim.check_event(lower, upper).refuted)


def early_look(spec, level_at, last_runs: int) -> tuple | None:
    """The early look of a sequential audit of ``spec`` whose last look plans ``last_runs`` runs: (samples, event
    runs per input, its level α_0, its planned runs), or None (module docstring).

    ``level_at(runs)`` is the level of a first look of that many planned runs: the schedule's power spending's
    first level α·t_0^ρ, t_0 = runs / ``last_runs`` (:func:`audit.gating.sequential.power_alpha_spending`). The
    event runs are the fewest, up to :data:`EARLY_LOOK_RUNS_PER_INPUT` per input in all, at which
    :func:`refutes_with_one_miss` holds at the event test's share of α_0, and the look's own claim plan
    (:func:`audit.certificates.claim_tests.plan_claim_tests`) has the event test test the claim.
    """
    if not early_look_possible(spec):
        return None
    claim, samples = spec.claim, EARLY_LOOK_SAMPLES
    share = 0.5 if claim.notion == "gdp" else 1.0  # the μ certificate takes half of a GDP claim's α_k
    runs = smallest_certifying_runs(spec.alpha)
    while early_look_runs(spec, samples, runs) <= 2 * EARLY_LOOK_RUNS_PER_INPUT:
        planned = early_look_runs(spec, samples, runs)
        if planned >= last_runs:
            return None
        alpha = level_at(planned)
        if runs >= smallest_certifying_runs(alpha) and refutes_with_one_miss(claim, share * alpha, runs):
            look_spec = dataclasses.replace(spec, samples=samples, event_runs=runs, alpha=alpha)
            if "event" not in plan_claim_tests(look_spec, classifier_critics=True, early=True).alpha_spent:
                return None
            return samples, runs, alpha, planned
        runs += 1
    return None
