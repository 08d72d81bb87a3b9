"""Plan an audit's budget before running it: which tests can refute the claim, and the runs each needs.

:func:`plan_budget` runs only a small **pilot** audit (``pilot_runs`` mechanism runs, on its own
seed) and answers, for each test of the claim (:func:`audit.certificates.claim_tests.plan_claim_tests`):

- whether it can refute the claim at the audit's budget at all (the best case: perfectly
  separated inputs, :func:`audit.certificates.claim_tests.refutable_with`);
- the mechanism runs one audit at level α would need to refute it **at a stated excess**: a
  mechanism whose privacy parameter (ε, ρ, μ) is ``excess`` (default 20%) above the claim's;
- the runs it would need **at the pilot's observed effect**;
- the time those runs take at the pilot's measured seconds per run (which includes the pilot's
  fixed costs, so it errs long for large budgets).

**The event test.** The pilot chooses its event for the budget's certification runs, not for
its own (:class:`audit.spec.AuditSpec`'s ``pilot_for_runs``, :func:`audit.search.event_search.event_search`'s
``predict_runs``), and keeps its event statistic's scores. At the stated excess: a mechanism
exactly at a DP-family claim's privacy profile δ(ε′) can give an event of probability p₂ under one
input and p₁ = min(1, min over ε′ of e^ε′ p₂ + δ(ε′)) under its neighbour (the profile is attained:
Kairouz, Oh and Viswanath 2015 for (ε, δ)-DP); the excess scenario takes p₂ from the pilot's event
(its frequency under the second input, at least one hit) and p₁ from the profile of the claim with
its parameter raised by ``excess``, and the runs per input are the fewest the event test's own
certificate predictor says would refute (:func:`audit.gating.refutation_runs.runs_to_refute`), times the runs
per sample of the audit (:func:`audit.gating.look_runs.runs_per_sample`, the float-bit event test's
runs counted where a probe of the mechanism shows float bits), and at least the runs of the
smallest audit that can refute (:func:`audit.gating.sequential.smallest_round_samples`).

**The float-bit event test.** Where the pilot's outputs hold bits below the coarse grid, its audit
runs the float-bit event test too (:mod:`audit.statistics.float_bits`), at its own share of α; the
plan forecasts it as the event test, from the pilot's float-bit event test's scores, and names it
apart (test ``"float"``; it has no excess scenario: it reads the outputs' low bits, not a larger
privacy parameter). An audit refutes when any of its tests does, so the runs the plan predicts at
the pilot's effect are the fewest over its tests (:attr:`BudgetPlan.runs_at_pilot`). On
``mean_true_count`` (a snapped noisy sum divided by the exact count, 2 or 3) the event test's
forecast is tens of thousands of runs (the real-arithmetic leak is in the tails), while the low
bits tell the counts apart in two outputs of three and the float-bit test refutes at the smallest
audit (400 samples, 2,000 runs).

At the pilot's effect, the runs are a **forecast** (:func:`forecast_refutation`): an audit of R runs
chooses its event on its own draws for its own runs, so a larger audit refutes with rarer, stronger
events than a smaller one, and no single event of the pilot stands for every budget. The forecast
simulates audits of each size R on a grid on the pilot's scores (each choosing its event, for its
own runs, on part of them and predicting its refutation from the event's frequencies on the rest)
and answers the smallest R at which half of them refute. The pilot's runs are not any audit's, and
its choices only decide what the plan says, so nothing about α changes.

**How far a pilot reaches.** The forecast uses the pilot's event statistic, trained on the pilot's
draws. An audit much larger than the pilot trains its statistic on more and chooses its event on
more draws, so it may find stronger events than the pilot's statistic shows: beyond ``PILOT_REACH``
= 2 times the pilot's runs (or with no forecast), the plan says so in a note. On ``svt34_parallel``
(true ε up to 4.25 against a claimed 1), half of the fixed audits refute at about 7,400 runs (12 of
30 seeds at 6,788 runs, 21 of 30 at 9,600), and a 3,000-run pilot is too small to forecast it:
its forecasts (8 pilot seeds, budget 60,000) were within 2 times of that on 1 seed (5 forecast none),
on 6 of 8 with 6,000-run pilots and 7 of 8 with 12,000. The limit is the pilot's statistic, not its
number of scores: the same 3,000-run pilots' statistics scored on 20,000 certification runs per input
forecast 9,600 to 16,146 runs, or none on 3 of 8 seeds, while the audits that refute at 6,788 runs
train theirs on 2,262 draws and find events of frequencies about 0.04 to 0.17 against 0.008 to 0.05
(ratios 3.6 to 5). So where the first pilot's event exceeds the claim at its observed frequencies
(some fixed audit is predicted to refute it) but its forecast gives none or reaches beyond
``PILOT_REACH`` times its runs, the plan runs a **second pilot** on fresh runs with the rest of
``PILOT_BUDGET_SHARE`` = 20% of the budget (9,000 runs of a 60,000 budget after a 3,000-run pilot),
and forecasts from it (:func:`_larger_pilot_runs`), but no fewer runs than the first pilot's reach:
audits that small train statistics like the first pilot's, whose forecast did not refute there,
while the second pilot's statistic, trained on more draws, would forecast them too well (a second
pilot of ``svt34_parallel`` forecast 2,855 runs where half of the fixed audits refute at about 7,400).
A correct mechanism's event rarely exceeds its claim: of 18 plans of ``laplace_sum``, ``svt1`` and
``noisy_max_laplace`` (6 seeds each), 1 ran a second pilot; of 8 of ``svt4``, 5 did, forecasting
5,535 to 9,600 runs (or none on 1), and of 8 of ``svt34_parallel`` 2 did (forecasting 5,381 and 5,533
runs: the others' first events did not exceed the claim). A
plan whose forecast still reaches beyond its pilot is best rerun with a ``--pilot-runs`` of about
half the forecast (``experiments/sequential_audit.py`` measures the predictions).

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
from mechanisms.claims.claim import RECORD_AUDIT_NOTIONS

from audit.certificates.claim_tests import record_support, refutable_with
from audit.search.event_search import choice_settings
from audit.search.claim_events import choose_events
from audit.search.event_choice import event_frequency, predicted_objective
from audit.certificates.event_bounds import claim_objective
from audit.gating.look_runs import plans_float_runs, runs_per_sample
from audit.gating.refutation_runs import runs_to_refute
from audit.gating.sequential import smallest_round_samples

#: The default excess: a true privacy parameter 20% above the claim's.
EXCESS = 0.2
#: The largest excess: beyond it the excess scenario's parameter overflows the profile's computations (1e308
#: did), and no audit needs the runs to refute a claim wrong by more.
MAX_EXCESS = 100.0
#: The pilot's mechanism runs by default.
PILOT_RUNS = 3000
#: The pilot's event stands for an audit's up to this many times the pilot's runs (module docstring).
PILOT_REACH = 2.0
#: The pilots of one plan together make at most this share of the budget's runs (:func:`_larger_pilot_runs`).
PILOT_BUDGET_SHARE = 0.2
#: The tests a plan names, by their key in the claim's plan (:class:`audit.certificates.claim_tests.ClaimPlan`).
_TEST_NAMES = {"event": "event test", "float": "float-bit event test", "mi": "MI test"}
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

    @property
    def runs_at_pilot(self) -> int | None:
        """The fewest runs at which some test is predicted to refute the claim at the pilot's effect (an audit
        refutes when any of its tests does); ``None`` when none is."""
        return _fewest(t.runs_at_pilot for t in self.tests)

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
            lines.append(f"  {_TEST_NAMES.get(t.test, t.test + ' test')} ({share}): {can}")
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


def round_seed(seed: int, index: int) -> int:
    """A seed derived from ``seed`` and ``index`` (from 1): fresh randomness for a pilot, independent of the
    audit's runs. The looks of a sequential audit all use the audit's own seed."""
    return int(np.random.default_rng([int(seed), int(index), 0x5E0]).integers(2**31))


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


def plan_budget(spec, *, budget_runs: int | None = None, pilot_runs: int | None = None,
                excess: float = EXCESS) -> BudgetPlan:
    """Plan the audit ``spec``'s budget from a pilot of ``pilot_runs`` mechanism runs (module docstring).

    Parameters
    ----------
    spec : AuditSpec
        The audit (with a claim).
    budget_runs : int, optional
        The budget to plan for (a sequential audit's ``max_runs``); default: the runs ``spec``
        makes (``samples`` × its runs per sample).
    pilot_runs : int, optional
        Mechanism runs of the pilot audit (its ``samples`` follow from the runs per sample), at most
        ``budget_runs``; default :data:`PILOT_RUNS`.
    excess : float > 0
        The stated excess: a true privacy parameter this fraction above the claim's.

    Returns
    -------
    BudgetPlan
    """
    from audit.engine import MIN_TEST_SAMPLES, audit_runner, run_audit

    if spec.claim is None:
        raise InputError("--plan needs a claim to plan the refutation of (--claim, or a catalog mechanism's own)")
    if not (isinstance(excess, (int, float)) and 0 < excess <= MAX_EXCESS):  # NaN and inf fail too
        raise InputError(f"argument 'excess' (--excess) must be a number > 0 and at most {MAX_EXCESS:g} (a true "
                         f"parameter {MAX_EXCESS + 1:g} times the claim's), got {excess}")
    with audit_runner(spec) as runner:  # the float-bit event test's runs count where the probe shows float bits
        cost = runs_per_sample(spec, plans_float_runs(spec, runner))
    if budget_runs is None:
        budget_runs = int(math.floor(spec.samples * cost))
    budget_runs = check_int(budget_runs, "budget_runs", 1)
    if pilot_runs is None:
        pilot_runs = PILOT_RUNS
    elif isinstance(pilot_runs, bool) or not isinstance(pilot_runs, (int, np.integer)) or not 1 <= pilot_runs <= budget_runs:
        raise InputError(f"argument 'pilot_runs' (--pilot-runs) must be an integer from 1 to the budget it plans, "
                         f"{budget_runs} mechanism runs (--max-runs, else --samples × {cost:g} runs per sample), got "
                         f"{pilot_runs!r}")
    ratio = spec.event_runs / spec.samples
    budget_samples = max(1, int(budget_runs / cost))
    budget_spec = dataclasses.replace(spec, samples=budget_samples,
                                      event_runs=max(1, int(round(budget_samples * ratio))) if spec.event_runs else 0)
    claim_plan = claim_tests(budget_spec)
    claim = spec.claim
    plans_event = claim.has_profile and spec.notion in RECORD_AUDIT_NOTIONS and spec.event_runs > 0
    level = claim_plan.alpha_spent.get("event", spec.alpha)

    def run_pilot(runs: int, index: int):
        samples = max(int(runs / cost), math.ceil(MIN_TEST_SAMPLES / spec.critic.split[2]))
        # The pilot chooses its event for the budget's certification runs and keeps its scores for the forecast.
        pilot_spec = dataclasses.replace(spec, samples=samples, seed=round_seed(spec.seed, index),
                                         event_runs=max(1, int(round(samples * ratio))) if spec.event_runs else 0,
                                         pilot_for_runs=budget_spec.event_runs or None)
        started = time.perf_counter()
        pilot = run_audit(pilot_spec)
        seconds = time.perf_counter() - started
        per_run = seconds / max(1, pilot.samples)
        budgets = []
        if plans_event:
            # Outputs no float-bit statistic suits (the pilot ran no float-bit test): the event test spends both shares.
            spent = claim_plan if pilot.float_event_test is not None else claim_plan.without_float_test()
            for test in ("event", "float") if "float" in spent.alpha_spent else ("event",):
                budgets.append(_event_budget(test, claim, spent, budget_spec, pilot, excess, per_run, cost / ratio,
                                             spec.alpha, spec, budget_runs, pilot_spec, cost))
        return pilot_spec, pilot, seconds, per_run, budgets

    pilot_spec, pilot, pilot_seconds, per_run, event_budgets = run_pilot(pilot_runs, 0)
    first_runs, notes = int(pilot.samples), list(claim_plan.notes)
    pilots_runs = first_runs
    larger = _larger_pilot_runs(claim, pilot, event_budgets, level, first_runs, budget_runs)
    if larger is not None:
        first = event_budgets[0].runs_at_pilot
        pilot_spec, pilot, seconds, per_run, event_budgets = run_pilot(larger, 1)
        pilot_seconds += seconds
        pilots_runs += int(pilot.samples)
        notes.append(f"the first pilot's event exceeded the claim but its forecast ({first or 'none'}) reached beyond "
                     f"{PILOT_REACH:g} times its {first_runs} runs, so a second pilot of "
                     f"{int(pilot.samples)} runs (fresh runs; the pilots together at most {PILOT_BUDGET_SHARE:.0%} of "
                     "the budget) made the forecast")
        # Audits within the first pilot's reach train statistics like the first pilot's, whose forecast did not
        # refute there; the second pilot's statistic, trained on more draws, would forecast them too well.
        reach = int(PILOT_REACH * first_runs) + 1
        event_budgets = [dataclasses.replace(
            b, runs_at_pilot=reach, seconds_at_pilot=_times(reach, per_run),
            note=b.note + f"; raised to {reach} runs: the first pilot forecast no refutation within "
                          f"{PILOT_REACH:g} times its runs")
            if b.runs_at_pilot is not None and b.runs_at_pilot < reach else b for b in event_budgets]
    tests = list(event_budgets)
    budget = claim.implied_mi_budget(spec.notion, record_support(spec.priors))
    if "mi" in claim_plan.alpha_spent or budget.value is not None:
        tests.append(_mi_budget(claim_plan, budget.value, pilot, pilot_spec, excess, per_run, cost))
    event = pilot.event_test
    return BudgetPlan(claim.label, spec.alpha, float(excess), int(budget_runs), pilots_runs, pilot_seconds,
                      per_run, tests, notes, None if event is None else (float(event.p_first), float(event.p_second)))


def _larger_pilot_runs(claim, pilot, event_budgets, level: float, pilot_runs: int, budget_runs: int) -> int | None:
    """The runs of a second, larger pilot, or None when the first one's forecast stands (module docstring).

    A second pilot runs when the first one's event exceeds the claim at its observed frequencies (a fixed
    audit is predicted to refute it at some number of runs, :func:`audit.gating.refutation_runs.runs_to_refute`) while
    its forecast gives none or reaches beyond :data:`PILOT_REACH` times its runs, and when the pilots
    together can stay within :data:`PILOT_BUDGET_SHARE` of the budget with the second at least twice the
    first; it gets the rest of that share. A correct mechanism's event rarely exceeds its claim, so its
    plan keeps one pilot.
    """
    event = pilot.event_test
    if not event_budgets or event is None:
        return None
    forecast = _fewest(b.runs_at_pilot for b in event_budgets)
    if forecast is not None and forecast <= PILOT_REACH * pilot_runs:
        return None
    if runs_to_refute(claim, float(event.p_first), float(event.p_second), level) is None:
        return None
    larger = int(PILOT_BUDGET_SHARE * budget_runs) - pilot_runs
    return larger if larger >= 2 * pilot_runs else None


def _event_budget(test, claim, claim_plan, budget_spec, pilot, excess, per_run, runs_per_input_run, alpha,
                  spec, budget_runs, pilot_spec, cost) -> TestBudget:
    """What ``test`` (``"event"``, or ``"float"``: the float-bit event test) needs, from the pilot's own test of
    that kind, at its share of α (module docstring)."""
    share = claim_plan.alpha_spent.get(test)
    level = share if share is not None else alpha
    can = share is not None and refutable_with(claim, share, budget_spec.event_runs, delta=budget_spec.delta)
    event = pilot.event_test if test == "event" else pilot.float_event_test
    if event is None:
        return TestBudget(test, share, can, None, None, None, None, f"the pilot ran no {_TEST_NAMES[test]}")
    # No audit of this spec runs less than the smallest that can refute at this test's level.
    smallest = math.ceil(smallest_round_samples(spec, level) * cost)
    notes = []
    p_second = max(event.p_second, 1.0 / max(1, event.runs_per_input))
    stronger = excess_claim(claim, excess)
    at_excess = None
    if test == "float":
        notes.append("no excess scenario: the float-bit event test reads the outputs' low bits, not a larger privacy "
                     "parameter, which the event test's excess scenario stands for")
    elif stronger is None:
        notes.append(f"the excess scenario is defined for dp, ldp, zcdp, rdp and gdp claims, not {claim.notion}")
    else:
        p_first = profile_event(stronger, p_second)
        per_input = runs_to_refute(claim, p_first, p_second, level)
        at_excess = None if per_input is None else max(smallest, int(math.ceil(per_input * runs_per_input_run)))
        notes.append(f"excess scenario: event frequencies {p_first:.4g} and {p_second:.4g} (p₂ from the pilot's event)")
    # An audit of R runs chooses on held-out draws in proportion to its samples, R / cost, or on selection runs in
    # proportion to its certification runs, R / runs_per_input_run, as the pilot did.
    per_pilot_run = (pilot_spec.samples * cost if event.selection_runs == 0
                     else pilot_spec.event_runs * runs_per_input_run)
    forecast = forecast_refutation(event.scores, claim, alpha=level, delta=spec.delta,
                                   runs_per_input_run=runs_per_input_run,
                                   selection_per_run=[len(s) / per_pilot_run for s in event.scores["chosen_on"]],
                                   smallest=smallest, budget_runs=budget_runs, seed=spec.seed)
    at_pilot = forecast.runs
    notes.append(forecast.note)
    if at_pilot is None or at_pilot > PILOT_REACH * pilot.samples:
        notes.append(f"this reaches beyond {PILOT_REACH:g} times the pilot's {pilot.samples} runs: a larger audit trains "
                     "its statistic and chooses its event on more draws than the pilot, so it may find stronger events "
                     "and refute with fewer runs than forecast (a larger --pilot-runs forecasts further)")
    return TestBudget(test, share, can, at_excess, at_pilot, _times(at_excess, per_run), _times(at_pilot, per_run),
                      "; ".join(notes))


@dataclass(frozen=True)
class RefutationForecast:
    """What :func:`forecast_refutation` predicts from a pilot's event scores.

    Attributes
    ----------
    runs : int or None
        Mechanism runs of the smallest audit on the forecast's grid that refutes the claim in at
        least half of the simulated audits (None: none up to ``reach`` runs).
    share : float
        The share of simulated audits that refute at ``runs`` (at ``reach`` when ``runs`` is None).
    p_first, p_second : float
        The median frequencies, on the held-back scores, of the events the simulated audits at
        ``runs`` (``reach``) chose.
    reach : int
        The largest audit on the grid (runs).
    capped : bool
        Whether an audit at ``runs`` (``reach``) chooses its event on more draws than half the
        pilot's scores hold, so that the simulated audits chose on fewer.
    note : str
        The forecast in words, for the plan.
    """

    runs: int | None
    share: float
    p_first: float
    p_second: float
    reach: int
    capped: bool
    note: str


#: Random splits of the pilot's scores on which :func:`forecast_refutation` simulates audits.
FORECAST_SPLITS = 16
#: The forecast's grid of audit sizes steps by this factor.
FORECAST_STEP = 2 ** 0.25
#: The forecast's grid reaches this many times the planned budget.
FORECAST_REACH = 4.0
#: The fewest scores of each input a simulated audit chooses its event on (:func:`audit.search.event_choice.choose_event`
#: compares its families of events on halves of at least 4).
MIN_FORECAST_SCORES = 4


def forecast_refutation(scores: dict, claim, *, alpha: float, delta: float, runs_per_input_run: float,
                        selection_per_run, smallest: int, budget_runs: int, seed: int,
                        splits: int = FORECAST_SPLITS) -> RefutationForecast:
    """The smallest audit predicted to refute ``claim``, from a pilot's event-statistic scores.

    An audit of R mechanism runs chooses its event on its own draws of the two inputs (held-out
    draws or selection runs: m(R) per input, in proportion to R as in the pilot) for its own
    N(R) = R / ``runs_per_input_run`` certification runs per input (:func:`audit.search.event_choice.choose_event`),
    and refutes when that event's fresh counts certify an excess over the claim. A larger audit
    chooses among rarer events than a smaller one can see, so the pilot's own event does not stand
    for it. The forecast simulates the audit on the pilot's scores instead: the pilot statistic's
    scores on the draws its event was chosen on and on its certification runs (``scores``, from
    :func:`audit.search.event_search.event_search`'s ``keep_scores``) are pooled per input, both fresh to
    the statistic; each of ``splits`` random splits holds half of each pool back, chooses an event
    for N(R) runs on m(R) of the other half (at most all of it), and predicts whether N(R) runs
    at the event's frequencies on the held-back half refute the claim (the event test's own
    predictor, :func:`audit.search.event_choice.predicted_objective`, at the expected counts). Frequencies
    on held-back scores are unbiased for the chosen event (no winner's curse). The forecast is the
    smallest R on a grid (from ``smallest``, steps of :data:`FORECAST_STEP`, up to
    :data:`FORECAST_REACH` × ``budget_runs``) at which at least half of the splits refute: the
    budget at which half of such audits refute, as ``experiments/sequential_audit.py`` measures
    the runs audits need.

    It is made on the pilot's runs only, which no audit's certificate uses, so it changes no α.
    Where m(R) exceeds half the pool (``capped``), the simulated audits chose on fewer draws than
    the audit would, and may miss its rarer events: the forecast then errs long.

    Parameters
    ----------
    scores : dict
        ``{"chosen_on": (first's, second's), "certification": (first's, second's)}``.
    claim : Claim
    alpha : float
        The event test's share of α at the budget.
    delta : float
        The audit's δ (the certificates it may choose among, :func:`audit.search.event_search.choice_settings`).
    runs_per_input_run : float
        Mechanism runs of the audit per certification run of one input.
    selection_per_run : (float, float)
        The draws of each input an audit chooses its event on, per mechanism run of the audit
        (m(R) = ``selection_per_run`` × R).
    smallest : int
        Runs of the smallest audit that can refute the claim (the grid's start).
    budget_runs : int
        The planned budget (runs).
    seed : int
        Seeds the splits.
    splits : int

    Returns
    -------
    RefutationForecast
    """
    chosen_on, certification = scores["chosen_on"], scores["certification"]
    pools = [np.concatenate((np.asarray(chosen_on[i], dtype=np.float64), np.asarray(certification[i], np.float64)))
             for i in (0, 1)]
    reach = int(FORECAST_REACH * budget_runs)
    if min(len(p) for p in pools) < 2 * MIN_FORECAST_SCORES:
        return RefutationForecast(None, 0.0, 0.0, 0.0, reach, True, f"no forecast: the pilot's event statistic has "
                                  f"{len(pools[0])} and {len(pools[1])} scores of the two inputs (too few)")
    halves = [len(p) // 2 for p in pools]  # the first half of each split chooses, the second is held back
    rng = np.random.default_rng([int(seed), 0xF0CA])
    orders = [[rng.permutation(len(p)) for p in pools] for _ in range(splits)]
    objective = claim_objective(claim)
    budget = float(smallest)
    while True:
        runs = max(1, int(budget / runs_per_input_run))
        settings = choice_settings(runs, alpha, delta, claim)
        wanted = [max(MIN_FORECAST_SCORES, int(round(c * budget))) for c in selection_per_run]
        capped = any(w > h for w, h in zip(wanted, halves))
        refuting, found = 0, []
        for order in orders:
            select = [pools[i][order[i][:min(wanted[i], halves[i])]] for i in (0, 1)]
            held = [pools[i][order[i][halves[i]:]] for i in (0, 1)]
            event = choose_events({0: select}, settings, claim)[0].event  # the audit's choice (ε- or δ-optimal)
            p_a, p_b = event_frequency(event, held[0]), event_frequency(event, held[1])
            p_first, p_second = (p_a, p_b) if event.first_is_a else (p_b, p_a)
            found.append((p_first, p_second))
            refuting += predicted_objective(p_first, p_second, runs, alpha, objective,
                                            pure_dp=settings["pure_dp"], split_alpha=True) > objective.refutes_above
        share = refuting / splits
        frequencies = tuple(float(np.median([f[k] for f in found])) for k in (0, 1))
        if 2 * refuting >= splits or budget * FORECAST_STEP > reach:
            break
        budget *= FORECAST_STEP
    at = int(math.ceil(budget))
    refutes = 2 * refuting >= splits
    words = (f"forecast ({splits} audits simulated on the pilot's {len(pools[0])} and {len(pools[1])} event scores, "
             "each choosing its event for its own runs): ")
    if refutes:
        words += f"{100 * share:.0f}% of audits of {at} runs refute (median event frequencies "
    else:
        words += (f"fewer than half of the audits of each size up to {at} runs refute ({100 * share:.0f}% at {at}, "
                  "median event frequencies ")
    words += f"{frequencies[0]:.4g} and {frequencies[1]:.4g})"
    return RefutationForecast(at if refutes else None, share, *frequencies, reach, capped, words)


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


def _fewest(runs) -> int | None:
    """The smallest of ``runs`` that is not None, else None."""
    known = [r for r in runs if r is not None]
    return min(known) if known else None


def _times(runs, per_run):
    return None if runs is None else runs * per_run


def claim_tests(spec):
    """The claim's tests and α shares as the audit ``spec`` plans them (:func:`audit.audit_plan.plan_audit`) over Θ's
    declared priors and pairs (the prior search's random pairs change no test's share)."""
    from audit.audit_plan import plan_audit
    from audit.search.prior_search import search_priors

    theta = [(prior, None) for prior in spec.priors] + search_priors(spec.pairs)
    return plan_audit(spec, theta).claim_tests


def unrefutable_warnings(spec) -> list:
    """What the claim's plan says up front about tests that cannot refute it at this budget (for the terminal)."""
    if spec.claim is None:
        return []
    notes = claim_tests(spec).notes
    return [n for n in notes if "cannot refute" in n or n.startswith("No test of this audit")]
