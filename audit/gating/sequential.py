"""Sequential audits: nested looks at growing prefixes of one stream of runs, stopping at the first refutation.

A fixed-budget audit (:func:`audit.engine.run_audit`) spends its whole budget whatever the
mechanism. :func:`run_sequential_audit` looks at the evidence several times as it grows: look k
is the audit of the **first** n_k samples (and the first event runs) of one stream of mechanism
runs, at its own level α_k, and the last look is the audit of all N samples whose runs fit in
``max_runs``: the fixed audit of the full budget, on the same seed, at α_K (about 0.97 α). It
stops at the first look that refutes the claim (or, without a claim, certifies an MI violation),
when the looks are done, or when the next look, the first included, would end past ``time_limit``.

**Nested runs.** Every look is :func:`audit.engine._run_audit` on one
:class:`~mechanisms.execution.runner.MechanismRunner` with the audit's own seed. The runner ends a
chunk at every look's ``samples`` and ``event_runs`` (its ``boundaries``,
:func:`mechanisms.execution.chunks.plan_chunks`), so each job of a smaller look — the prior's
draws, the mechanism's runs on them, the event test's runs of a pair — is the first chunks of the
larger look's job with the same seed, and its :class:`~mechanisms.execution.chunk_cache.ChunkCache`
gives a chunk already run its outputs again instead of calling the mechanism. The runs counted
(``runs``) are the mechanism calls made: cache misses. The event test's runs of an input come from
that database's own stream of runs (per-database streams of the cache), so a look re-uses the
earlier looks' runs of the pair whatever its generator drew in between (a randomized event's coins,
a Poisson number of runs) and whichever statistic it chose; a look whose event test certifies
another pair than the looks before makes those runs anew: real calls, counted.

**Schedule** (:func:`look_schedule`, fixed before any look's run): the last look has the most samples N
whose runs fit in ``max_runs`` (:func:`look_runs`: the MI sample, the event tests' certification runs,
and where they may choose on selection runs, those and the float-bit pilot's at their most; the
float-bit event test's runs where the probe's outputs, on seeds of their own, show float bits, the
probe's runs counted; where the looks may certify different pairs, the early looks' event runs too:
:mod:`audit.gating.look_runs`), so the last look always fits; the
early looks double in size from the smallest look that can refute the claim (``growth`` = 2) up to
``look_fraction`` (default 0.2) of N, which is all their runs together, as they are nested.

**The early look** (:mod:`audit.gating.early_look`): for a claim the event test tests, under two-point priors on
neighbouring pairs, the schedule starts with a look of 40 samples per prior and a few dozen certification runs
per input (at most 100 runs per input in all), below the MI test's floor: its MI sample is the event test's
selection (cross-fitted classifiers, the event chosen on their out-of-fold scores) and the MI test is skipped: its
level α_0 (its share of the spending below, t_0 its runs over the last look's) is the event test's, split with the
float-bit test where both refute with one miss within it. A deterministic difference is refuted there.

**α-spending** (:func:`power_alpha_spending`): the power family α(t) = α·t^ρ of Kim and DeMets
(1987), ρ = 2 by default, in the spending-function approach of Lan and DeMets (1983), with
t_k = n_k / N the fraction of the runs look k sees, and the looks combined by the union bound
(Bonferroni) rather than by the joint normal law of cumulative statistics: look k spends
α_k = α·(t_k^ρ − t_{k−1}^ρ), so Σ α_k = α. Early looks up to a fraction f of the runs spend α·f²
together (2.6% of α at f = 0.16, the default schedule's on ``dp-epsilon-benchmark``), so the last
look keeps nearly all of α: its one-sided normal quantile is within 0.8% of the fixed audit's
(linear spending, ρ = 1, would leave it f of α short). The last look has all N samples: what an
unrefuted sequential audit loses to the fixed audit of the same budget is that small part of α,
nothing of its runs. The exponent trades that against the early looks' power: a refutation at
look k needs runs growing as log(1/α_k).

**Validity.** Look k, if it is run, is the audit of a sample of a size fixed before any run, at
level α_k, on runs that are independent as a fixed audit's are (within a look no run serves twice:
a database's stream gives each job of the look its next runs): whatever the looks before found, and
however its data overlap theirs, its false refutation has probability ≤ α_k. The overall false refutation is the union of the looks' events,
so by the union bound its probability is at most Σ_k α_k = α — no independence between the looks is
needed (the Bonferroni bound, conservative against the exact joint law of the looks). Only whether a look is run may depend on what came before: an audit
that stops, or a look not run for the time limit or the budget, leaves its α unspent. So no look is
resized after the runs start: a look that would end past ``time_limit`` is not run (the first one included: then
there is no verdict, :class:`~audit.gating.look_time.FirstLookPastTimeLimit`), nor one whose plan,
with the float-bit event test's runs that an earlier look made unplanned (the probe saw no fine
bits), passes ``max_runs``; a look whose runs would pass it anyway (the runner's ``call_limit``) stops before the
call that would pass it, and its verdict is never formed; the audit then reports the look before.
For a small Bernoulli case tests/test_sequential.py computes the exact overall level of nested
looks by dynamic programming over the cumulative counts and checks it against α.

**Refutation at the observed effect.** When the audit stops unrefuted, it says how many runs a fresh
fixed-budget audit would need to refute the claim at the last look's event (:mod:`audit.gating.refutation_runs`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from estimators.result_forms import fields_to_dict, to_jsonable
from estimators.validation import InputError, check_int, check_positive
from mechanisms.claims.claim import RECORD_AUDIT_NOTIONS

from audit.certificates.claim_tests import smallest_certifying_runs, smallest_refutable_runs, uses_ratio_certificates
from audit.gating.refutation_runs import MAX_REFUTATION_RUNS, refutation_at_observed, runs_to_refute  # noqa: F401
from audit.gating import look_time
from audit.gating.early_look import EARLY_LOOK_RUNS_PER_INPUT, early_float_planned, early_look, early_look_possible
from audit.gating.look_time import FirstLookPastTimeLimit, look_ends, predicted_seconds  # noqa: F401
from audit.gating.look_runs import (event_selection_possible, look_boundaries, look_run_counter, look_runs,  # noqa: F401
                                    plans_float_runs, runs_per_sample, single_pair, event_part)

#: The early looks see at most this fraction of the last look's samples (module docstring).
LOOK_FRACTION = 0.2
#: Size ratio of consecutive early looks.
GROWTH = 2.0
#: Exponent ρ of the power spending function α(t) = α·t^ρ (:func:`power_alpha_spending`).
SPENDING_POWER = 2.0


def power_alpha_spending(sizes, alpha: float, rho: float = SPENDING_POWER) -> list:
    """The levels of nested looks at sizes n_1 < … < n_K under the power spending function α(t) = α·t^ρ.

    Look k sees the first n_k of the n_K runs, the fraction t_k = n_k / n_K of them (the
    information fraction), and spends α_k = α·(t_k^ρ − t_{k−1}^ρ), so the α_k sum to α(1) = α.
    This is the ρ-family of spending functions of Kim and DeMets (1987, "Design and analysis of
    group sequential tests based on the type I error spending rate function", Biometrika 74(1),
    149–154) in the spending-function approach of Lan and DeMets (1983); see also Jennison and
    Turnbull (2000), *Group Sequential Methods with Applications to Clinical Trials*, Chapter 7
    (error spending). Here the looks are combined by the union bound (Bonferroni), not by the joint
    law of the cumulative statistics: the union bound needs no independence between the looks.
    ρ = 1 is linear spending (α_k ∝ n_k − n_{k−1}); a larger ρ keeps more of α for the last look:
    looks up to a fraction f of the runs spend α·f^ρ of it.

    Parameters
    ----------
    sizes : sequence of positive numbers
        The looks' cumulative sizes n_k, increasing.
    alpha : float
        The overall level.
    rho : float > 0
        The exponent ρ.

    Returns
    -------
    list of float
    """
    sizes = [float(s) for s in sizes]
    if not sizes or any(not s > 0 for s in sizes) or any(b <= a for a, b in zip(sizes, sizes[1:])):
        raise InputError(f"argument 'sizes' must be positive and increasing, got {sizes}")
    if not rho > 0:
        raise InputError(f"argument 'rho' must be > 0, got {rho}")
    spent = [alpha * (n / sizes[-1]) ** rho for n in sizes]
    spent[-1] = alpha  # t_K = 1 exactly, whatever the rounding
    return [b - a for a, b in zip([0.0] + spent[:-1], spent)]


@dataclass(frozen=True)
class Look:
    """One planned look: the audit of the first ``samples`` samples and ``event_runs`` event runs, at level
    ``alpha``; ``planned_runs``: the most runs that audit makes (:func:`look_runs`; reused and new together);
    ``early``: the early look, whose event test alone tests the claim (:mod:`audit.gating.early_look`)."""

    samples: int
    event_runs: int
    alpha: float
    planned_runs: int
    early: bool = False

    def to_dict(self) -> dict:
        return fields_to_dict(self)


def smallest_round_samples(spec, alpha: float) -> int:
    """The smallest look: enough held-out draws to certify (:data:`audit.engine.MIN_TEST_SAMPLES`) and,
    for a claim the event test tests, enough event runs to refute it at ``alpha`` even for perfectly
    separated inputs (:func:`audit.certificates.claim_tests.smallest_refutable_runs`)."""
    from audit.engine import MIN_TEST_SAMPLES

    samples = math.ceil(MIN_TEST_SAMPLES / spec.critic.split[2])
    if spec.notion in RECORD_AUDIT_NOTIONS and spec.event_runs > 0:
        ratio = spec.event_runs / spec.samples
        need = smallest_certifying_runs(alpha, ratio_certificates=uses_ratio_certificates(spec.claim, spec.delta))
        if spec.claim is not None and spec.claim.has_profile:
            need = max(need, smallest_refutable_runs(spec.claim, alpha, delta=spec.delta) or need)
        samples = max(samples, math.ceil(need / ratio))
    return samples


def _last_look(spec, max_runs: int, growth: float, look_fraction: float, float_runs, spent: int, alpha: float) -> tuple:
    """(N, the smallest look that can refute alone, the runs of a schedule as a function of its last look's samples,
    the early looks' sizes as a function of N) of :func:`look_schedule` (its docstring) at level ``alpha``: no run is
    made."""
    max_runs = check_int(max_runs, "max_runs", 1)
    if not growth > 1:
        raise InputError(f"argument 'growth' must be > 1, got {growth}")
    if not 0 <= look_fraction < 1:
        raise InputError(f"argument 'look_fraction' must be in [0, 1), got {look_fraction}")
    smallest_alone = smallest_round_samples(spec, alpha)
    runs_at = look_run_counter(spec, float_runs)
    first_size = smallest_round_samples(spec, alpha * 0.01)  # a first guess at an early look's level

    def early_sizes(total: int) -> list:
        sizes, size = [], first_size
        while size <= look_fraction * total:
            sizes.append(size)
            size = math.ceil(size * growth)
        return sizes

    one_pair = single_pair(spec)
    early_reserve = 2 * EARLY_LOOK_RUNS_PER_INPUT if early_look_possible(spec) else 0

    def needed(total: int) -> int:
        """The runs a schedule whose last look has ``total`` samples makes at most (docstring)."""
        if one_pair:
            return runs_at(total)
        return runs_at(total) + early_reserve + sum(event_part(spec, s, float_runs) for s in early_sizes(total))

    budget = max_runs - spent
    low, high = 0, max(0, math.floor(budget / runs_per_sample(spec, float_runs)))  # needed grows with the samples
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if needed(middle) <= budget else (low, middle - 1)
    return low, smallest_alone, needed, early_sizes


def refutation_runs(spec, max_runs: int, *, alpha: float | None = None, growth: float = GROWTH,
                    look_fraction: float = LOOK_FRACTION, float_runs: bool | None = None, spent: int = 0) -> tuple:
    """(whether a sequential audit of ``spec`` at level ``alpha`` (default ``spec.alpha``) within ``max_runs`` runs has
    a look that can refute, the mechanism runs the smallest such look's schedule needs): :func:`look_schedule` raises
    where it has none. Computed from ``spec`` alone, before any run (a scan plans its α split with it,
    :mod:`audit.scan.planning`)."""
    alpha = spec.alpha if alpha is None else alpha
    total, smallest_alone, needed, _ = _last_look(spec, max_runs, growth, look_fraction, float_runs, spent, alpha)
    return total >= smallest_alone, needed(smallest_alone) + spent


def look_schedule(spec, max_runs: int, *, growth: float = GROWTH, look_fraction: float = LOOK_FRACTION,
                  rho: float = SPENDING_POWER, float_runs: bool | None = None, spent: int = 0) -> tuple:
    """The nested looks of a sequential audit of ``spec`` within ``max_runs`` runs, and their levels.

    The last look has the most samples N whose runs (:func:`look_runs`) fit in ``max_runs`` less ``spent``, and, where
    the looks may certify different pairs (not :func:`audit.gating.look_runs.single_pair`), less the early looks'
    event runs at their most (:func:`audit.gating.look_runs.event_part`; an early look's at most
    2 · :data:`audit.gating.early_look.EARLY_LOOK_RUNS_PER_INPUT`), which the last look then reuses none of. The early looks grow by
    ``growth`` from the smallest look that can refute (at its own level), up to
    ``look_fraction`` · N samples (nested, they make no more runs than the largest of them). Look k
    gets α_k = α·(t_k^ρ − t_{k−1}^ρ), t_k = n_k / N (power α-spending, :func:`power_alpha_spending`;
    module docstring). An early look too small to refute at its α_k is dropped and the levels are
    recomputed, until every look can. Where :func:`audit.gating.early_look.early_look` plans one, the
    schedule starts with the early look (``early``), a few dozen runs per input below the MI test's floor,
    whose t_0 is its planned runs over the last look's; the later looks spend from t_0 on.

    Parameters
    ----------
    spec : AuditSpec
        The audit; ``spec.event_runs / spec.samples`` is kept in every look, ``spec.alpha`` is split.
    max_runs : int
        Mechanism runs of the last look, which every earlier look's runs are part of.
    growth : float > 1
    look_fraction : float in [0, 1)
    rho : float > 0
        The spending function's exponent.
    float_runs : bool, optional
        Whether the float-bit event test's certification runs are counted (:mod:`audit.gating.look_runs`);
        ``None``: under ``arithmetic = "float"``.
    spent : int
        Runs of ``max_runs`` made before the looks (the float-bit probe's, :func:`audit.gating.look_runs.plans_float_runs`).

    Returns
    -------
    tuple of Look

    Raises
    ------
    InputError
        When ``max_runs`` is too small for one look that can refute, naming the smallest that is.
    """
    total, smallest_alone, needed, early_sizes = _last_look(spec, max_runs, growth, look_fraction, float_runs, spent,
                                                            spec.alpha)
    if total < smallest_alone:
        raise InputError(f"argument 'max_runs' (--max-runs) is {max_runs}: one look of this audit needs at least "
                         f"{needed(smallest_alone) + spent} mechanism runs ({smallest_alone} samples) to be able to "
                         f"refute at α = {spec.alpha:g}")
    ratio = spec.event_runs / spec.samples
    runs_at = look_run_counter(spec, float_runs)
    sizes = early_sizes(total)
    first = early_look(spec, lambda runs: power_alpha_spending([runs / runs_at(total) * total, total], spec.alpha, rho)[0],
                       runs_at(total), float_runs)
    ratio_runs = max(1, int(round((sizes or [total])[0] * ratio))) if spec.event_runs else 0
    if first is not None and not (first[0] < (sizes or [total])[0] and first[1] <= ratio_runs
                                  and first[3] < runs_at((sizes or [total])[0])):
        first = None  # not below the first ordinary look: nothing to gain
    # The early look's size on the samples' scale: its fraction of the last look's runs, times N.
    head = [] if first is None else [first[3] / runs_at(total) * total]
    while True:
        looks = sizes + [total]
        alphas = power_alpha_spending(head + looks, spec.alpha, rho)[len(head):]
        small = [i for i, (s, a) in enumerate(zip(looks[:-1], alphas)) if s < smallest_round_samples(spec, a)]
        if not small:
            break
        sizes.pop(small[0])
        # Dropping the smallest look leaves the later ones their sizes: they keep doubling from it.
    ordinary = tuple(Look(s, max(1, int(round(s * ratio))) if spec.event_runs else 0, a, runs_at(s))
                     for s, a in zip(looks, alphas))
    return ordinary if first is None else (Look(*first, early=True),) + ordinary


def _stream_seed(spec) -> int:
    """The seed of the audit's streams of runs per database (:class:`~mechanisms.execution.chunk_cache.ChunkCache`)."""
    return int(np.random.default_rng([int(spec.seed), 0x57E4]).integers(2**63))


def _look_runner(spec):
    """The runner :func:`audit.engine.run_audit` would make for ``spec``, with a cache of the audit's streams of runs
    (its chunk boundaries are set by :func:`_planned_looks`)."""
    from mechanisms.execution.chunk_cache import ChunkCache

    from audit.engine import audit_runner

    return audit_runner(spec, cache=ChunkCache(_stream_seed(spec)))


def spec_of_look(spec, look):
    """The audit of ``look`` (a :func:`look_schedule` entry): ``spec`` at its samples, event runs and level."""
    return dataclasses.replace(spec, samples=look.samples, event_runs=look.event_runs, alpha=look.alpha)


def _planned_looks(spec, runner, max_runs: int, **settings) -> tuple:
    """(:func:`look_schedule` of ``spec``, whether it plans the float-bit event test's runs): those are counted where
    the probe's outputs show float bits (:func:`audit.gating.look_runs.plans_float_runs`), before any look's run,
    within what its counted runs leave of ``max_runs``; the runner's chunks then end at the looks' sizes
    (:func:`look_boundaries`)."""
    float_runs = plans_float_runs(spec, runner)  # its probe runs, if any, are counted: the looks get the rest
    schedule = look_schedule(spec, max_runs, float_runs=float_runs, spent=runner.calls, **settings)
    runner.boundaries = look_boundaries(schedule, bool(float_runs) and early_float_planned(spec, schedule[0]))
    return schedule, float_runs


def run_audit_on_look_runs(spec, max_runs: int, *, growth: float = GROWTH, look_fraction: float = LOOK_FRACTION,
                           rho: float = SPENDING_POWER):
    """The fixed audit of the last look's size on the runs a sequential audit's last look would make.

    :func:`audit.engine.run_audit` of ``spec`` at the samples and event runs of the last look of
    ``run_sequential_audit(spec, max_runs, ...)``, with the chunk boundaries of its looks
    (:func:`look_boundaries`) and the same seed: its data are the last look's, and only the level differs
    (``spec.alpha`` against α_K), which isolates what looking early costs. ``spec.samples`` and
    ``spec.event_runs`` set only the ratio of event runs to samples, as in :func:`run_sequential_audit`.
    """
    from audit.engine import _run_audit

    with _look_runner(spec) as runner:
        schedule, _ = _planned_looks(spec, runner, max_runs, growth=growth, look_fraction=look_fraction, rho=rho)
        runner.cache.start_look(final=True)
        last = schedule[-1]
        return _run_audit(dataclasses.replace(spec, samples=last.samples, event_runs=last.event_runs), runner)


@dataclass(frozen=True)
class LookOutcome:
    """What one look did: its size, level, the mechanism calls it made and reused, its time and decision.

    ``runs`` are the calls it made (cache misses; a stream's chunk is made whole, so they may include runs
    only later looks use), ``reused_runs`` the runs of its audit that came from earlier looks' calls."""

    look: int
    samples: int
    event_runs: int
    alpha: float
    runs: int
    reused_runs: int
    seconds: float
    claim_verdict: str | None
    verdict: str | None
    dp_epsilon_lower_bound_event: float | None

    def to_dict(self) -> dict:
        return fields_to_dict(self)


@dataclass(frozen=True)
class SequentialAudit:
    """The outcome of a sequential audit (:func:`run_sequential_audit`).

    Attributes
    ----------
    result : AuditResult
        The deciding look's audit: the refuting one, or the last one completed. Its ``alpha`` is the
        overall level (its own tests spent α_k, said in its notes).
    looks : list of LookOutcome
        The looks completed, in order.
    schedule : tuple of Look
        The looks planned before any run (with their levels).
    alpha : float
        The overall level: Σ α_k over the schedule.
    max_runs : int
    time_limit : float or None
    stopped : {"refuted", "violation", "budget", "time"}
        Why it stopped: the claim was refuted, an MI violation certified (no claim), the looks were
        done or the next one would have passed ``max_runs``, or the next look would have ended past
        ``time_limit``.
    runs : int
        Mechanism calls made in all (at most ``max_runs``): each run once, whichever looks used it, and the
        float-bit probe's (``probe_runs``).
    seconds : float
    runs_to_refute : int or None
        When it stopped unrefuted: total runs a fixed-budget audit at level ``alpha`` would need to
        refute the claim if the last look's event had the frequencies it showed
        (:func:`runs_to_refute`); ``None`` when none would or there was no event.
    runs_to_refute_note : str
        That number, or why there is none, in words.
    notes : list of str
        What else the looks met (a look not completed within ``max_runs``).
    """

    result: object
    looks: list
    schedule: tuple
    alpha: float
    max_runs: int
    time_limit: float | None
    stopped: str
    runs: int
    seconds: float
    runs_to_refute: int | None = None
    runs_to_refute_note: str = ""
    notes: list = field(default_factory=list)
    rho: float = SPENDING_POWER
    probe_runs: int = 0  # runs of the float-bit probe (audit.gating.look_runs.plans_float_runs), before the looks

    @property
    def refuted(self) -> bool:
        return self.stopped == "refuted"

    @property
    def claim_verdict(self) -> str | None:
        return self.result.claim_verdict

    @property
    def verdict(self) -> str | None:
        return self.result.verdict

    def stop_reason(self) -> str:
        """Why the audit stopped, in words (``stopped`` explained)."""
        done = len(self.looks)
        if self.stopped == "time":
            return f"the next look would have ended past the time limit of {self.time_limit:g} s"
        if self.stopped == "budget" and done < len(self.schedule):
            return f"look {done + 1} would have passed the run budget"
        return {"refuted": f"the claim was refuted at look {done}", "budget": "the looks were done",
                "violation": f"an MI violation was certified at look {done}"}[self.stopped]

    def summary(self) -> str:
        """One paragraph: looks, runs, why it stopped, and what a refutation would need."""
        done, why = len(self.looks), self.stop_reason()
        levels = ", ".join(f"{r.alpha:.3g}" for r in self.schedule)
        sizes = ", ".join(str(r.samples) for r in self.schedule)
        probe = f" ({self.probe_runs} of them the float-bit probe's)" if self.probe_runs else ""
        text = (f"Sequential audit: {done} of {len(self.schedule)} planned looks, {self.runs} mechanism runs{probe} of at "
                f"most {self.max_runs}, {self.seconds:.1f} s; stopped because {why}. The looks audit the first "
                f"{sizes} samples of one stream of runs (each run made once) at levels α_k = {levels} (α-spending "
                f"α·t^{self.rho:g} over the fraction t of the runs seen, summing to α = {self.alpha:g}; union bound), "
                f"so a refutation has type-I error at most {self.alpha:g}.")
        head = self.schedule[0]
        if head.early:
            text += (f" Look 1 is the early look: {head.samples} samples, which choose the event, and {head.event_runs} "
                     "certification runs per input; its event tests alone test the claim (the MI test is skipped "
                     "below its sample floor).")
        for note in self.notes:
            text += " " + note
        if self.runs_to_refute_note:
            text += " " + self.runs_to_refute_note
        return text

    def block(self) -> dict:
        """The looks, runs and why it stopped, JSON-ready: the deciding result's ``sequential`` entry."""
        return to_jsonable({
            "alpha": self.alpha, "rho": self.rho, "max_runs": self.max_runs, "time_limit": self.time_limit,
            "stopped": self.stopped, "stop_reason": self.stop_reason(), "looks_run": len(self.looks),
            "looks_planned": len(self.schedule), "runs": self.runs, "probe_runs": self.probe_runs, "seconds": self.seconds,
            "runs_to_refute": self.runs_to_refute, "runs_to_refute_note": self.runs_to_refute_note,
            "notes": list(self.notes), "summary": self.summary(),
            "schedule": [r.to_dict() for r in self.schedule], "looks": [r.to_dict() for r in self.looks]})

    def to_dict(self) -> dict:
        """The deciding look's JSON form (:meth:`AuditResult.to_dict`) with its ``sequential`` entry (:meth:`block`)."""
        return {**self.result.to_dict(), "sequential": self.block()}

    def __repr__(self) -> str:
        return (f"SequentialAudit(stopped={self.stopped!r}, looks={len(self.looks)}/{len(self.schedule)}, "
                f"runs={self.runs}, claim_verdict={self.claim_verdict!r}, verdict={self.verdict!r}, "
                f"alpha={self.alpha:g})")


def _decides(result) -> str | None:
    if result.claim is not None:
        return "refuted" if result.refuted else None
    return "violation" if result.violation and not result.estimate_only else None


def run_sequential_audit(spec, max_runs: int, *, time_limit: float | None = None, seconds_per_run: float | None = None,
                         growth: float = GROWTH,
                         look_fraction: float = LOOK_FRACTION, rho: float = SPENDING_POWER,
                         progress=None, stop_at_refutation: bool = False) -> SequentialAudit:
    """Audit ``spec`` in nested looks that stop at the first refutation, within ``max_runs`` runs and ``time_limit``.

    Parameters
    ----------
    spec : AuditSpec
        The audit. ``spec.samples`` and ``spec.event_runs`` set only the ratio of event runs to
        samples; ``max_runs`` sets the size. ``spec.alpha`` is the overall type-I error, split
        over the looks; ``spec.seed`` seeds every look (module docstring).
    max_runs : int
        Mechanism calls in all, at most: the last look's runs, which every earlier look's are part of.
        A look whose calls would pass it (earlier looks made calls it could not reuse, or its
        event test's selection runs) is not completed.
    time_limit : float, optional
        Seconds from the start: a look predicted to end past it (:mod:`audit.gating.look_time`) is not run, the
        first included; where that is the first look, :class:`~audit.gating.look_time.FirstLookPastTimeLimit` is
        raised (no verdict).
    seconds_per_run : float, optional
        What one mechanism call takes (a scan's probe measures it): the looks before the first ordinary look has
        been timed are predicted from it (:func:`audit.gating.look_time.predicted_seconds`).
    growth, look_fraction, rho : float
        The schedule and its α-spending (:func:`look_schedule`).
    progress : callable, optional
        Called with one line after each look.
    stop_at_refutation : bool
        Within each look, the tests after the first that refutes the claim are not run
        (:func:`audit.engine._run_audit`): the same looks refute, with the refuting test's certificate. A scan's
        cases use it (:mod:`audit.scan.case_audit`).

    Returns
    -------
    SequentialAudit
    """
    from mechanisms.execution.runner import RunLimitReached

    from audit.critic_cost import shared_gpu_start
    from audit.engine import _run_audit
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    if seconds_per_run is not None and not seconds_per_run >= 0:
        raise InputError(f"argument 'seconds_per_run' must be >= 0, got {seconds_per_run}")
    outcomes, result, stopped, notes = [], None, "budget", []
    started = look_time.clock()
    with _look_runner(spec) as runner:
        schedule, float_runs = _planned_looks(spec, runner, max_runs, growth=growth, look_fraction=look_fraction,
                                              rho=rho)
        runner.call_limit, probe_runs = int(max_runs), runner.calls
        # The looks' neural critics weigh the GPU's start together, then once one has started it (critic_device).
        gpu_started = shared_gpu_start([spec_of_look(spec, look) for look in schedule if not look.early],
                                       "the looks' critic trainings repay it together")
        unplanned_float = None  # the first look that ran the float-bit event test the schedule did not plan
        for index, planned in enumerate(schedule, start=1):
            if time_limit is not None:
                ends = look_ends(planned, outcomes, schedule, seconds_per_run, runner.calls - probe_runs, started,
                                 time_limit, first=result is None)
                if ends > time_limit:
                    stopped = "time"
                    break
            # With the float-bit test's runs this look's plan (look_runs) passes max_runs: run, it would most likely stop
            # at the call limit (its certification runs are Poisson numbers at most), its work spent for no verdict.
            # Not running it leaves its α unspent (module docstring).
            with_float = look_runs(spec, planned.samples, True)
            if unplanned_float is not None and with_float > max_runs:
                notes.append(f"Look {index} was not run: look {unplanned_float} ran the float-bit event test, whose runs "
                             "the schedule did not plan (the probe's outputs showed no fine bits), and with them this "
                             f"look plans {with_float} mechanism runs, past --max-runs; the audit's verdict is "
                             f"look {index - 1}'s.")
                break
            look_spec = spec_of_look(spec, planned)
            calls, hits, look_started = runner.calls, runner.cache.hits, look_time.clock()
            runner.cache.start_look(final=index == len(schedule))
            try:
                look = _run_audit(look_spec, runner, early=planned.early, stop_at_refutation=stop_at_refutation,
                                  gpu_started=gpu_started)
            except RunLimitReached as exc:
                if result is None:
                    raise InputError(f"argument 'max_runs' (--max-runs) is {max_runs}: the first look's audit needs "
                                     f"{runner.calls + exc.needed} mechanism runs or more (its event test's selection "
                                     "runs are not in the plan); raise it") from None
                notes.append(f"Look {index} was not completed: after {runner.calls - calls} new mechanism calls it "
                             f"would have made {exc.needed} more, {exc.needed - exc.left} past --max-runs (more runs "
                             "than planned: the float-bit event test's, where the probe's outputs showed no fine "
                             f"bits), so it gives no verdict and the audit's is look {index - 1}'s.")
                break
            result = look
            if gpu_started is None and look.device.startswith("cuda"):
                gpu_started = f"look {index} started it"
            if unplanned_float is None and not float_runs and look.float_event_test is not None:
                unplanned_float = index
            made = runner.calls - calls
            event = result.event_test
            outcome = LookOutcome(index, planned.samples, planned.event_runs, planned.alpha, made,
                                  runner.cache.hits - hits, look_time.clock() - look_started,
                                  result.claim_verdict, result.verdict,
                                  None if event is None else float(event.epsilon_lower_bound))
            outcomes.append(outcome)
            if progress is not None:
                progress(f"look {index}/{len(schedule)}: {planned.samples} samples at α = {planned.alpha:.3g}, "
                         f"{outcome.runs} new runs ({outcome.reused_runs} reused), {outcome.seconds:.1f} s: "
                         + (result.claim_verdict or result.verdict or "no verdict"))
            decision = _decides(result)
            if decision is not None:
                stopped = decision
                break
        runs = runner.calls
    needed, note = None, ""
    if stopped not in ("refuted", "violation"):
        needed, note = refutation_at_observed(spec, result)
    total = sum(r.alpha for r in schedule)
    # The look's own statement would quote its level α_k; the refutation, chosen as the first of the
    # looks', holds at the overall level only.
    deciding = len(outcomes)
    result = dataclasses.replace(result, alpha=total, notes=list(result.notes) + [
        f"Look {deciding} of {len(schedule)} of a sequential audit (audit.gating.sequential): the audit of the first "
        f"{schedule[deciding - 1].samples} samples of the runs, whose tests spent α_k = "
        f"{schedule[deciding - 1].alpha:.3g} of the overall α = {total:g}, which the verdicts are stated at."])
    audit = SequentialAudit(result, outcomes, schedule, total, int(max_runs), time_limit, stopped, runs,
                            look_time.clock() - started, needed, note, notes, rho=float(rho), probe_runs=probe_runs)
    return dataclasses.replace(audit, result=dataclasses.replace(result, sequential=audit.block()))  # for --report
