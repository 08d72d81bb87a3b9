"""Plan an audit's budget before running it: which tests can refute the claim, and the runs each needs.

:func:`plan_budget` runs only a small **pilot** audit (``pilot_runs`` mechanism runs, on its own
seed) and answers, for each test of the claim (:func:`audit.crosscheck.plan_claim_tests`):

- whether it can refute the claim at the audit's budget at all (the best case: perfectly
  separated inputs, :func:`audit.crosscheck.refutable_with`);
- the mechanism runs one audit at level α would need to refute it **at a stated excess**: a
  mechanism whose privacy parameter (ε, ρ, μ) is ``excess`` (default 20%) above the claim's;
- the runs it would need **at the pilot's observed effect**;
- the time those runs take at the pilot's measured seconds per run (which includes the pilot's
  fixed costs, so it errs long for large budgets).

**The event test.** A mechanism exactly at a DP-family claim's privacy profile δ(ε′) can give an
event of probability p₂ under one input and p₁ = min(1, min over ε′ of e^ε′ p₂ + δ(ε′)) under its
neighbour (the profile is attained: Kairouz, Oh and Viswanath 2015 for (ε, δ)-DP). The excess
scenario takes p₂ from the pilot's event (its frequency under the second input, at least one
hit) and p₁ from the profile of the claim with its parameter raised by ``excess``; the observed
scenario takes the pilot event's two frequencies. The runs per input are the fewest the event
test's own certificate predictor says would refute (:func:`audit.sequential.runs_to_refute`), and
the audit's total is that times the runs per sample of the audit (:func:`audit.sequential.runs_per_sample`),
and at least the runs of the smallest audit that can refute (:func:`audit.sequential.smallest_round_samples`).

**How far a pilot reaches.** An audit chooses its event on its own held-out draws, for its own
runs: a larger audit finds rarer, more extreme events than the pilot can see, and the pilot's
event frequencies carry the noise of few runs. So a prediction well beyond the pilot's own runs
(more than ``PILOT_REACH`` = 2 times, or none) tends to be pessimistic: on ``svt34_parallel``
(true ε up to 4.25 against a claimed 1) pilots of 3,000 runs predicted none or 8 to 300 times the
runs that fixed audits needed (about 6,800), and second pilots of 5,600 runs did little better
(their events, like those of the audits at 6,800 runs that failed, did not exceed the claim). The plan then
says so in a note (``experiments/sequential_audit.py`` measures the predictions).

**The MI test.** Its certified lower bound is the estimate minus a half-width that shrinks as
1/√n in the held-out draws (a CLT-rate approximation of the certificates of
:mod:`estimators.certify`); from the pilot's half-width w₀ at n₀ draws, refuting a budget b at a
true MI of (1 + excess)·b needs n = n₀ (w₀ / (excess · b))², and at the observed estimate Î,
n = n₀ (w₀ / (Î − b))² when Î > b.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from estimators.result_forms import fields_to_dict, to_jsonable
from estimators.validation import InputError, check_int
from mechanisms.claims import RECORD_AUDIT_NOTIONS

from .crosscheck import record_support, refutable_with
from .sequential import round_seed, runs_per_sample, runs_to_refute, smallest_round_samples

#: The default excess: a true privacy parameter 20% above the claim's.
EXCESS = 0.2
#: The pilot's mechanism runs by default.
PILOT_RUNS = 3000
#: The pilot's event stands for an audit's up to this many times the pilot's runs (module docstring).
PILOT_REACH = 2.0
#: The claim parameter the excess scenario raises, by notion.
_SCALED_PARAMETER = {"dp": "epsilon", "ldp": "epsilon", "zcdp": "rho", "gdp": "mu", "rdp": "epsilon"}


@dataclass(frozen=True)
class TestBudget:
    """What one test of the claim needs (:func:`plan_budget`).

    Attributes
    ----------
    test : {"event", "mi"}
    alpha : float or None
        Its share of α at the planned budget (``None``: it does not test the claim there).
    refutable_at_budget : bool
        Whether it can refute the claim at the planned budget at all (best case).
    runs_at_excess, runs_at_pilot : int or None
        Mechanism runs of one audit predicted to refute the claim at the stated excess and at the
        pilot's observed effect (``None``: not predicted to refute; ``note`` says why).
    seconds_at_excess, seconds_at_pilot : float or None
        Those runs at the pilot's seconds per run.
    note : str
    """

    test: str
    alpha: float | None
    refutable_at_budget: bool
    runs_at_excess: int | None
    runs_at_pilot: int | None
    seconds_at_excess: float | None
    seconds_at_pilot: float | None
    note: str = ""

    def to_dict(self) -> dict:
        return fields_to_dict(self)


@dataclass(frozen=True)
class BudgetPlan:
    """The plan of an audit's budget (:func:`plan_budget`)."""

    claim: str
    alpha: float
    excess: float
    budget_runs: int
    pilot_runs: int
    pilot_seconds: float
    seconds_per_run: float
    tests: list
    notes: list = field(default_factory=list)
    pilot_event: tuple | None = None  # the pilot event's frequencies under the two inputs

    @property
    def refutable(self) -> bool:
        """Whether any test can refute the claim at the budget (best case)."""
        return any(t.refutable_at_budget for t in self.tests)

    def text(self) -> str:
        """The plan as terminal lines."""
        lines = [f"plan for claim {self.claim} at α = {self.alpha:g}, budget {self.budget_runs} mechanism runs "
                 f"(pilot: {self.pilot_runs} runs in {self.pilot_seconds:.2f} s, {1e6 * self.seconds_per_run:.3g} µs "
                 "per run)"]
        if not self.refutable:
            lines.append(f"  NO test of this audit can refute the claim at {self.budget_runs} runs: see below")
        for t in self.tests:
            share = "no α" if t.alpha is None else f"α = {t.alpha:.3g}"
            can = "can refute at the budget" if t.refutable_at_budget else "CANNOT refute at the budget"
            lines.append(f"  {t.test} test ({share}): {can}")
            for label, runs, seconds in ((f"true parameter {100 * self.excess:.0f}% above the claim", t.runs_at_excess,
                                          t.seconds_at_excess),
                                         ("the pilot's observed effect", t.runs_at_pilot, t.seconds_at_pilot)):
                if runs is not None:
                    lines.append(f"    at {label}: about {runs} runs (~{_duration(seconds)})")
            if t.note:
                lines.append(f"    {t.note}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return to_jsonable({"plan": {**fields_to_dict(self, exclude=("tests",)), "refutable": self.refutable,
                                     "tests": [t.to_dict() for t in self.tests]}})


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


def excess_claim(claim, excess: float):
    """``claim`` with its privacy parameter (ε, ρ, μ; an RDP claim's ε) raised by the factor 1 + ``excess``."""
    name = _SCALED_PARAMETER.get(claim.notion)
    if name is None:
        return None
    return dataclasses.replace(claim, **{name: getattr(claim, name) * (1.0 + excess)})


def profile_event(claim, p_second: float) -> float:
    """The largest P(M(D) ∈ E) a mechanism exactly at ``claim``'s profile allows when P(M(D′) ∈ E) = ``p_second``:
    min(1, min over ε′ ≥ 0 of e^ε′ p₂ + δ(ε′)) (the profile bounds every event; module docstring).

    The minimum is taken on a grid of ε′ from 0 to well past the profile's scale (20 001 points) and the
    profile's kinks (where a piecewise profile such as (ε, δ)-DP's has its minimum)."""
    grid = np.union1d(np.linspace(0.0, 4.0 * claim._profile_scale() + 1.0, 20001), np.asarray(claim._kinks(), float))
    return float(min(1.0, np.min(np.exp(grid) * p_second + claim.privacy_profile(grid))))


def plan_budget(spec, *, budget_runs: int | None = None, pilot_runs: int = PILOT_RUNS,
                excess: float = EXCESS) -> BudgetPlan:
    """Plan the audit ``spec``'s budget from a pilot of ``pilot_runs`` mechanism runs (module docstring).

    Parameters
    ----------
    spec : AuditSpec
        The audit (with a claim).
    budget_runs : int, optional
        The budget to plan for (a sequential audit's ``max_runs``); default: the runs ``spec``
        makes (``samples`` × its runs per sample).
    pilot_runs : int
        Mechanism runs of the pilot audit (its ``samples`` follow from the runs per sample).
    excess : float > 0
        The stated excess: a true privacy parameter this fraction above the claim's.

    Returns
    -------
    BudgetPlan
    """
    from .engine import MIN_TEST_SAMPLES, run_audit

    if spec.claim is None:
        raise InputError("--plan needs a claim to plan the refutation of (--claim, or a catalog mechanism's own)")
    if not excess > 0:
        raise InputError(f"argument 'excess' (--excess) must be > 0, got {excess}")
    cost = runs_per_sample(spec)
    check_int(pilot_runs, "pilot_runs", 1)
    if budget_runs is None:
        budget_runs = int(math.floor(spec.samples * cost))
    budget_runs = check_int(budget_runs, "budget_runs", 1)
    ratio = spec.event_runs / spec.samples
    budget_samples = max(1, int(budget_runs / cost))
    budget_spec = dataclasses.replace(spec, samples=budget_samples,
                                      event_runs=max(1, int(round(budget_samples * ratio))) if spec.event_runs else 0)
    claim_plan = claim_tests(budget_spec)
    pilot_samples = max(int(pilot_runs / cost), math.ceil(MIN_TEST_SAMPLES / spec.critic.split[2]))
    pilot_spec = dataclasses.replace(spec, samples=pilot_samples, seed=round_seed(spec.seed, 0),
                                     event_runs=max(1, int(round(pilot_samples * ratio))) if spec.event_runs else 0)
    started = time.perf_counter()
    pilot = run_audit(pilot_spec)
    pilot_seconds = time.perf_counter() - started
    per_run = pilot_seconds / max(1, pilot.samples)
    tests = []
    claim = spec.claim
    if claim.has_profile and spec.notion in RECORD_AUDIT_NOTIONS and spec.event_runs > 0:
        level = claim_plan.alpha_spent.get("event", spec.alpha)
        smallest = math.ceil(smallest_round_samples(spec, level) * cost)  # no audit of this spec runs less
        tests.append(_event_budget(claim, claim_plan, budget_spec, pilot, excess, per_run, cost / ratio, spec.alpha,
                                   smallest))
    budget = claim.implied_mi_budget(spec.notion, record_support(spec.priors))
    if "mi" in claim_plan.alpha_spent or budget.value is not None:
        tests.append(_mi_budget(claim_plan, budget.value, pilot, pilot_spec, excess, per_run, cost))
    event = pilot.event_test
    return BudgetPlan(claim.label, spec.alpha, float(excess), int(budget_runs), int(pilot.samples), pilot_seconds,
                      per_run, tests, list(claim_plan.notes),
                      None if event is None else (float(event.p_first), float(event.p_second)))


def _event_budget(claim, claim_plan, budget_spec, pilot, excess, per_run, runs_per_input_run, alpha,
                  smallest) -> TestBudget:
    share = claim_plan.alpha_spent.get("event")
    level = share if share is not None else alpha
    can = share is not None and refutable_with(claim, share, budget_spec.event_runs)
    event = pilot.event_test
    if event is None:
        return TestBudget("event", share, can, None, None, None, None, "the pilot ran no event test")
    notes = []
    p_second = max(event.p_second, 1.0 / max(1, event.runs_per_input))
    stronger = excess_claim(claim, excess)
    at_excess = None
    if stronger is None:
        notes.append(f"the excess scenario is defined for dp, ldp, zcdp, rdp and gdp claims, not {claim.notion}")
    else:
        p_first = profile_event(stronger, p_second)
        per_input = runs_to_refute(claim, p_first, p_second, level)
        at_excess = None if per_input is None else max(smallest, int(math.ceil(per_input * runs_per_input_run)))
        notes.append(f"excess scenario: event frequencies {p_first:.4g} and {p_second:.4g} (p₂ from the pilot's event)")
    per_input = runs_to_refute(claim, event.p_first, event.p_second, level)
    at_pilot = None if per_input is None else max(smallest, int(math.ceil(per_input * runs_per_input_run)))
    if at_pilot is None:
        notes.append(f"the pilot's event (frequencies {event.p_first:.4g} and {event.p_second:.4g}) does not exceed the "
                     "claim")
    if at_pilot is None or at_pilot > PILOT_REACH * pilot.samples:
        notes.append(f"the pilot's event was chosen for its own {event.runs_per_input} runs per input; a larger audit "
                     "chooses among rarer events and may refute with fewer runs than this predicts (a larger "
                     "--pilot-runs predicts for a larger audit)")
    return TestBudget("event", share, can, at_excess, at_pilot, _times(at_excess, per_run), _times(at_pilot, per_run),
                      "; ".join(notes))


def _mi_budget(claim_plan, budget, pilot, pilot_spec, excess, per_run, cost) -> TestBudget:
    share = claim_plan.alpha_spent.get("mi")
    if share is None or budget is None:
        return TestBudget("mi", share, False, None, None, None, None,
                          "the MI test does not test the claim here (the notes say why)")
    held = pilot_spec.samples * pilot_spec.critic.split[2]
    if pilot.lower_bound is None:
        return TestBudget("mi", share, True, None, None, None, None, "the pilot certified no MI bound")
    width = max(pilot.estimate - pilot.lower_bound, 1e-12)

    def runs(gap):
        return None if gap <= 0 else int(math.ceil(held * (width / gap) ** 2 / pilot_spec.critic.split[2] * cost))

    at_excess, at_pilot = runs(excess * budget), runs(pilot.estimate - budget)
    return TestBudget("mi", share, True, at_excess, at_pilot, _times(at_excess, per_run), _times(at_pilot, per_run),
                      f"the MI certificate's half-width at the pilot: {width:.4g} nats (shrinking as 1/√n)")


def _times(runs, per_run):
    return None if runs is None else runs * per_run


def claim_tests(spec):
    """The claim's tests and α shares as the audit ``spec`` plans them (:func:`audit.plan.plan_audit`) over Θ's
    declared priors and pairs (the prior search's random pairs change no test's share)."""
    from .plan import plan_audit
    from .prior_search import search_priors

    theta = [(prior, None) for prior in spec.priors] + search_priors(spec.pairs)
    return plan_audit(spec, theta).claim_tests


def unrefutable_warnings(spec) -> list:
    """What the claim's plan says up front about tests that cannot refute it at this budget (for the terminal)."""
    if spec.claim is None:
        return []
    notes = claim_tests(spec).notes
    return [n for n in notes if "cannot refute" in n or n.startswith("No test of this audit")]
