"""A sequential audit's early look: a few dozen runs per input in which the event tests alone may refute.

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
  look), a rule fixed before any run (:func:`audit.certificates.claim_tests.plan_claim_tests` with ``early``):
  the look's whole level α_0 is the event test's (halved with the μ certificate for a GDP claim), split with
  the float-bit event test as at every look (:data:`audit.certificates.claim_tests.FLOAT_TEST_SHARE` of it)
  under the rule below;
- its level is its share of the power α-spending of all the looks
  (:func:`audit.gating.sequential.power_alpha_spending`), α_0 = α·t_0^ρ with t_0 its planned runs over
  the last look's (the fraction of the runs it sees), fixed before any run; the later looks spend
  α·(t_k^ρ − t_{k−1}^ρ) from t_0 on, so all the looks' levels still sum to α and the union bound keeps
  the overall type-I error ≤ α (:mod:`audit.gating.sequential`, "Validity");
- its event runs are the fewest with which the event test at α_0 refutes the claim on a pair with one miss (all
  but one of the runs of one input in the event, none of the other's), so a statistic fitted on a few dozen draws
  that misses one certification run of a deterministic difference still refutes (:func:`early_look_refutes`): by
  the Clopper–Pearson bounds at α_0/2 each outside the claim's profile (:func:`refutes_with_one_miss`), or, for a
  pure ε-DP claim, by the odds ratio (:mod:`audit.certificates.odds_ratio`), which refutes a one-miss pair with
  about 40% fewer runs, where the event test's choice of certificate on the look's ~20 held-out draws of each
  input picks the odds ratio but for a chance of at most :data:`ODDS_CHOICE_RISK` (1%), summed exactly over the
  split's binomial law (:func:`odds_choice_risk`), only where the pair gives no look within the cap: ``dp:1.9`` at
  0.05/245 within 6,000 runs, 73 (none by the pair). Where the pair gives one it stands, though the odds ratio's
  count is smaller: the one-miss model is exact only for perfectly separated outputs, and a smaller look tolerates
  fewer misses (the tutorial's snapped mean with too little noise: the pair's 224-run look refuted 10 of 10 seeds,
  the odds ratio's 180-run look 6 of 10); and at the odds ratio's own one-miss count the choice often picks the
  pair, which then refutes nothing (always for ``dp:0.5`` at α = 0.05, 18 runs; for ``dp:1`` at α = 0.05/245 with
  60,000 runs, 42, once the smaller side has ≤ 16 draws, probability 0.27) (``tests/test_early_look_odds_choice.py``).

**The float-bit test** (``arithmetic = "float"``; :mod:`audit.statistics.float_bits`). Its statistics are
cross-fitted on the same MI sample (they need no more draws than the classifiers: a fit on the draws of both
inputs, :mod:`audit.statistics.classifier_critic`), and it certifies on ``event_runs`` fresh runs of each input of
its own. Where its runs are planned (the probe's outputs show bits below 2⁻³²,
:func:`audit.gating.look_runs.plans_float_runs`), the look is first sized with them: the fewest ``event_runs``
c, the look's 40 + 4c runs still at most :data:`EARLY_LOOK_RUNS_PER_INPUT` per input in all, at which the event
test at 0.8 α_0 and the float-bit test at 0.2 α_0 both refute with one miss by the rule above
(:func:`audit.certificates.claim_tests.early_float_test`, which the look's claim plan applies to its own sizes and
level, so the plan and the size agree); where no c does, the look is sized and planned without the float-bit
test, whose part the event test keeps. The float-bit test chooses its certificate on its own statistics' held-out
scores as the event test does (:func:`audit.search.event_search.event_search`), so on a difference its bits
separate, the rule's sum over the split is its choice too. Measured on a count whose lowest significand bit is its
parity, 20 seeds each within 6,000 runs: refuted at the early look in 20 of 20 where the pair sizes a float look
(``dp:0.9`` at α = 0.05: 196 runs; that look stands, the rule sizes only where the pair gives none) and in 19 or
20 of 20 where the pair sizes none (``dp:1`` at 0.05: 148
runs, 0 of 20 before, refuted at look 2 after 5,655 to 6,000); the textbook float Laplace count and the exactly
ε-DP jittered releases: 0 of 20 either way (``tests/test_early_look_float_sizing.py``). Both are decided from
the spec and the probe, before any look's run. Where
the look's MI sample shows no fine bits, the event test gets both parts before its runs
(:meth:`audit.certificates.claim_tests.ClaimPlan.without_float_test`). Under one two-point prior that sizing
exists for pure ε-DP claims up to ε = 1.5 at α = 0.05 and ``max_runs`` = 6,000 (1.2 at 60,000), and up to 1.15
at a scan case's α ≈ 2·10⁻⁴ (0.2 at 60,000); above, the early look is the event test's alone. It refutes a leak
that the float bits show in (nearly) every run: a planted count whose lowest significand bit is its parity
(``tests/planted_lib/_float_leak.py``) is refuted there, in 132 runs at ``dp:0.1`` (2,224 runs at look 2
before). The textbook float Laplace at its claim is not: its float event has probability 1 − e^{−ε/2} per run
(0.05 at ε = 0.1, Mironov 2012), far from the one-miss pair such a look needs; it is refuted at the ordinary looks.

Where that many runs exceed :data:`EARLY_LOOK_RUNS_PER_INPUT` per input (a claim of large ε such as
``dp:4``, whose refutation needs hundreds of perfectly separated runs; or a budget so large that α_0 is
tiny) there is no early look and the schedule is the ordinary one: for a pure ε-DP claim under one two-point
prior, an early look is planned at α = 0.05 up to ε ≈ 2.35 at ``max_runs`` = 6,000, 2.05 at 60,000 and 1.75 at 10⁶
(at a scan case's α = 0.05/245: 2.0, 1.75 and 1.5).
"""

from __future__ import annotations

import dataclasses
import functools

from audit.audit_plan import resolve_slices
from audit.certificates.claim_tests import (early_float_test, plan_claim_tests, refutes_with_one_miss,  # noqa: F401
                                            smallest_certifying_runs, uses_ratio_certificates)
from audit.gating.look_runs import event_selection_possible, theta_size
from audit.search.early_choice import (EARLY_LOOK_SAMPLES, ODDS_CHOICE_RISK, early_look_refutes,  # noqa: F401
                                       early_rule, odds_choice_risk)

__all__ = ["EARLY_LOOK_RUNS_PER_INPUT", "EARLY_LOOK_SAMPLES", "ODDS_CHOICE_RISK", "early_look", "early_look_possible",
           "early_look_refutes", "early_look_runs", "early_float_planned", "odds_choice_risk", "plans_float_test",
           "refutes_with_one_miss"]

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


def early_look_runs(spec, samples: int, event_runs: int, float_test: bool = False) -> int:
    """The mechanism runs of an early look: ``samples`` draws of each prior of Θ and ``event_runs`` certification
    runs of each input of the event test's pair (no selection runs: the event is chosen on the MI sample), and as
    many again for the float-bit event test where ``float_test``."""
    return int(samples * theta_size(spec) + (4 if float_test else 2) * event_runs)


def plans_float_test(spec, float_runs: bool | None) -> bool:
    """Whether the early look of ``spec`` is first sized with the float-bit event test (module docstring): under
    ``arithmetic = "float"`` where the float-bit test's runs are planned (``float_runs``, the probe's answer,
    :func:`audit.gating.look_runs.plans_float_runs`; ``None``, before any probe: wherever it may run)."""
    return spec.arithmetic == "float" and (float_runs is None or bool(float_runs))


def early_float_planned(spec, look) -> bool:
    """Whether ``look`` (a schedule's entry) is the early look of a sequential audit of ``spec`` and gives the float-bit
    event test a share: its own claim plan's answer (:func:`audit.certificates.claim_tests.plan_claim_tests` with
    ``early``, as :func:`audit.engine._run_audit` plans it), from its sizes and level alone."""
    if not look.early:
        return False
    look_spec = dataclasses.replace(spec, samples=look.samples, event_runs=look.event_runs, alpha=look.alpha)
    return "float" in plan_claim_tests(look_spec, classifier_critics=True, early=True,
                                       early_refutes=early_rule(spec)).alpha_spent


def early_look(spec, level_at, last_runs: int, float_runs: bool | None = None) -> tuple | None:
    """The early look of a sequential audit of ``spec`` whose last look plans ``last_runs`` runs: (samples, event
    runs per input, its level α_0, its planned runs), or None (module docstring).

    ``level_at(runs)`` is the level of a first look of that many planned runs: the schedule's power spending's
    first level α·t_0^ρ, t_0 = runs / ``last_runs`` (:func:`audit.gating.sequential.power_alpha_spending`). The
    event runs are the fewest, the look's runs at most :data:`EARLY_LOOK_RUNS_PER_INPUT` per input in all, at which
    the event test at its share of α_0 refutes on a pair with one miss by the Clopper–Pearson pair
    (:func:`early_look_refutes` without the ratio certificates) and the look's own claim plan
    (:func:`audit.certificates.claim_tests.plan_claim_tests`, with the audit's rule
    :func:`audit.search.early_choice.early_rule`, as the audit plans the look) has the event test test the claim.
    Where :func:`plans_float_test`, the look is first sized with the float-bit test's runs and the split of the event
    test's share (:func:`audit.certificates.claim_tests.early_float_test` at the look's level, both tests by the pair
    at their parts); where no size within the cap allows that, it is sized without them, as for a mechanism whose
    outputs hold no fine bits. Only where no size within the cap lets the pair refute, with the float-bit test or
    without, are the two sized again (in the same order) by the odds ratio's one-miss count, where the test's
    certificate choice picks the odds ratio but for a chance of at most :data:`ODDS_CHOICE_RISK`
    (:func:`early_look_refutes` with the ratio certificates; ``tests/test_early_look_float_sizing.py`` for the
    float-bit test): a look for claims that would get none (the event test: ``dp:1.5`` to ``dp:2.35`` at α = 0.05;
    the float-bit test alongside it up to ``dp:1.5``), never a smaller one in place of the pair's. The odds ratio's
    smaller look tolerates fewer misses: on the tutorial's snapped mean with too little noise (an event chosen on the
    look's ~20 held-out draws per input misses a few of the certification runs) the pair's 224-run look refuted 10
    of 10 seeds, the odds ratio's 180-run look 6 of 10, the others at the next look (1,264 runs).

    The event runs are also at least the fewest with which the look's event test can certify any ε > 0
    (:func:`audit.certificates.claim_tests.smallest_certifying_runs`), counting the odds- and rate-ratio
    certificates where the look's event test may certify by them
    (:func:`audit.certificates.claim_tests.uses_ratio_certificates` of the audit's claim and δ), as the ordinary
    looks' smallest size does. A refutation with one miss implies that its certificate certifies ε > 0 (p̲ > p̄ for
    the pair, ψ̲ > 1 for the odds ratio), so that floor never binds below the one-miss rule. The size is a function of the spec and the schedule alone, fixed
    before any run, so it changes the look's power only: its level α_0 and the union bound over the looks are as above.
    """
    if not early_look_possible(spec):
        return None
    planned_float = plans_float_test(spec, float_runs)
    odds_too = uses_ratio_certificates(spec.claim, spec.delta)
    for float_test in ((True, False) if planned_float else (False,)):
        for odds in ((False, True) if odds_too else (False,)):
            found = _sized(spec, level_at, last_runs, float_test, planned_float, odds=odds)
            if found is not None:
                return found
    return None


def _sized(spec, level_at, last_runs: int, float_test: bool, planned_float: bool, odds: bool) -> tuple | None:
    """:func:`early_look`'s look with the float-bit test's runs and share (``float_test``) or without, or None. Sized
    without them where they are planned (``planned_float``), a size whose own plan would still split the share (its
    float-bit runs past the cap) is passed over: the float-bit test runs at an early look only within the cap. With
    ``odds`` the event test's one-miss refutation may be the odds ratio's (:func:`early_look_refutes`)."""
    claim, samples = spec.claim, EARLY_LOOK_SAMPLES
    share = 0.5 if claim.notion == "gdp" else 1.0  # the μ certificate takes half of a GDP claim's α_k
    # The look's event test may certify by the odds or rate ratio where the audit's does (its claim and δ): the
    # certificates it chooses among, as the ordinary looks' smallest size counts them.
    ratios = uses_ratio_certificates(claim, spec.delta)
    rule = early_rule(spec)
    pair_rule = functools.partial(early_look_refutes, ratio_certificates=False)
    runs = smallest_certifying_runs(spec.alpha, ratio_certificates=ratios)
    while early_look_runs(spec, samples, runs, float_test) <= 2 * EARLY_LOOK_RUNS_PER_INPUT:
        planned = early_look_runs(spec, samples, runs, float_test)
        if planned >= last_runs:
            return None
        alpha = level_at(planned)
        # The look's size: the pair's one-miss rule, or with ``odds`` the audit's (the odds ratio's where its choice
        # picks it); its claim plan reads the audit's rule, as the audit's own plan of the look does (audit_plan).
        fits_rule = rule if odds else pair_rule
        fits = (early_float_test(claim, share * alpha, runs, fits_rule) if float_test
                else fits_rule(claim, share * alpha, runs))
        if runs >= smallest_certifying_runs(alpha, ratio_certificates=ratios) and fits:
            look_spec = dataclasses.replace(spec, samples=samples, event_runs=runs, alpha=alpha)
            spent = plan_claim_tests(look_spec, classifier_critics=True, early=True, early_refutes=rule).alpha_spent
            if "event" not in spent or float_test and "float" not in spent:
                return None
            if float_test or not planned_float or "float" not in spent:
                return samples, runs, alpha, planned
        runs += 1
    return None
