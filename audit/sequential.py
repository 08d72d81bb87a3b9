"""Sequential audits: rounds of growing size that stop at the first refutation, with α spent across them.

A fixed-budget audit (:func:`audit.engine.run_audit`) spends its whole budget whatever the
mechanism. :func:`run_sequential_audit` runs the audit in **rounds**, each an independent audit
(:func:`~audit.engine.run_audit`) on fresh mechanism runs at its own level α_k, and stops at the
first round that refutes the claim (or, without a claim, certifies an MI violation), when the run
budget ``max_runs`` is spent, or when the next round would end past ``time_limit``.

**Schedule** (:func:`round_schedule`, fixed before any run): the early rounds double in size from
the smallest round that can refute the claim (``growth`` = 2) while together they spend at most
``look_fraction`` (default 0.2) of ``max_runs``; the last round gets the rest, so a mechanism
that is not refuted early is audited at 80% or more of the budget in one piece.

**α-spending** (:func:`power_alpha_spending`): the power family α(t) = α·t^ρ of Kim and DeMets
(1987), ρ = 2 by default, in the spending-function approach of Lan and DeMets (1983), with t the
fraction of the planned runs done and the looks combined by the union bound (Bonferroni) rather
than by the joint normal law of cumulative statistics: round k spends α_k = α·(t_k^ρ − t_{k−1}^ρ),
so Σ α_k = α. Early rounds that plan a fraction f of the runs spend α·f² together (2% of α at
f = 0.14, the default schedule's), so the last round keeps nearly all of α: its one-sided normal
quantile is within 0.6% of the fixed audit's (linear spending, ρ = 1, would leave it 14% of α
short and 4.4% wider). What an unrefuted audit's last round still loses to a fixed audit at ``max_runs`` is
its runs' shortfall, the fraction f the looks used: its confidence bounds are wider by about
1/√(1 − f) (7.8% at f = 0.14), the price of looking early. The exponent trades that against the
early rounds' power: a refutation in round k needs runs growing as log(1/α_k); with ρ = 3 (α_k of
10⁻⁷ to 10⁻⁴) half of the buggy ``dp-epsilon-benchmark`` entries stay unrefuted until the last
round, while with ρ = 2 they are refuted in the same early rounds as with ρ = 1 (measured over
5 seeds each; ``experiments/sequential_audit.py`` measures the default).

**Validity.** Each round is a complete audit whose false refutation has probability ≤ α_k given
everything before it (its runs and its internal randomness are fresh; its seed is derived from
the audit's seed and the round's number). The overall false refutation is the union of the
rounds' events, so by the union bound its probability is at most Σ_k α_k ≤ α, whatever the
rounds' sizes — which may therefore depend on earlier rounds (the last round shrinks to the
runs or the time left), as long as the α_k are fixed in advance. A round that is not run (the
audit stopped earlier, or the time ran out) leaves its α unspent: the audit is then conservative.
For independent rounds the exact overall level is 1 − Πₖ(1 − α_k) ≤ Σ α_k (tests/test_sequential.py
checks it by enumeration for a Bernoulli case).

**Refutation at the observed effect.** When the audit stops unrefuted,
:func:`runs_to_refute` says how many runs a fresh fixed-budget audit would need to refute the
claim if the last round's event had the frequencies it showed there (the event test's predicted
certificate, :func:`audit.event_test.predicted_objective`), or that none would: the event did
not exceed the claim.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from estimators.result_forms import fields_to_dict, to_jsonable
from estimators.validation import InputError, check_int, check_positive
from mechanisms.claims import RECORD_AUDIT_NOTIONS

from .crosscheck import smallest_certifying_runs, smallest_refutable_runs
from .event_test import claim_objective, predicted_objective

#: Early rounds together spend at most this fraction of ``max_runs`` (module docstring).
LOOK_FRACTION = 0.2
#: Size ratio of consecutive early rounds.
GROWTH = 2.0
#: Exponent ρ of the power spending function α(t) = α·t^ρ (:func:`power_alpha_spending`).
SPENDING_POWER = 2.0
#: The most runs per input :func:`runs_to_refute` looks for.
MAX_REFUTATION_RUNS = 10**12


def power_alpha_spending(sizes, alpha: float, rho: float = SPENDING_POWER) -> list:
    """The levels of rounds of planned sizes n_k under the power spending function α(t) = α·t^ρ.

    Round k spends α_k = α·(t_k^ρ − t_{k−1}^ρ), where t_k = (n_1 + … + n_k) / (n_1 + … + n_K) is
    the fraction of the planned runs done by its end (the information fraction), so the α_k sum
    to α(1) = α. This is the ρ-family of spending functions of Kim and DeMets (1987, "Design and
    analysis of group sequential tests based on the type I error spending rate function",
    Biometrika 74(1), 149–154) in the spending-function approach of Lan and DeMets (1983); see
    also Jennison and Turnbull (2000), *Group Sequential Methods with Applications to Clinical
    Trials*, Chapter 7 (error spending). Here the looks are combined by the union bound (Bonferroni), not by
    the joint law of cumulative statistics, which the union bound needs no independence for.
    ρ = 1 is linear spending (α_k ∝ n_k); a larger ρ keeps more of α for the last, largest
    round: rounds that together plan a fraction f of the runs spend α·f^ρ of it.

    Parameters
    ----------
    sizes : sequence of positive numbers
        The rounds' planned sizes, in order.
    alpha : float
        The overall level.
    rho : float > 0
        The exponent ρ.

    Returns
    -------
    list of float
    """
    sizes = [float(s) for s in sizes]
    if not sizes or any(not s > 0 for s in sizes):
        raise InputError(f"argument 'sizes' must be positive, got {sizes}")
    if not rho > 0:
        raise InputError(f"argument 'rho' must be > 0, got {rho}")
    total = math.fsum(sizes)
    spent = [alpha * (math.fsum(sizes[:k + 1]) / total) ** rho for k in range(len(sizes))]
    spent[-1] = alpha  # t_K = 1 exactly, whatever the rounding
    return [b - a for a, b in zip([0.0] + spent[:-1], spent)]


@dataclass(frozen=True)
class Round:
    """One planned round: its audit's ``samples`` and ``event_runs``, its level and its planned runs."""

    samples: int
    event_runs: int
    alpha: float
    planned_runs: int

    def to_dict(self) -> dict:
        return fields_to_dict(self)


def runs_per_sample(spec) -> float:
    """Mechanism runs an audit of ``spec`` makes per database of its MI sample, at most.

    ``samples`` draws from each prior of Θ (the declared priors, the pairs' two-point priors and
    ``prior_search`` searched ones), plus, for the DP notions, ``event_runs`` certification runs
    per input of the event test's pair (:func:`audit.engine.run_audit`). The event test's
    selection runs (neural critics only) are not counted here; the rounds count the runs made.
    """
    theta = len(spec.priors) + len(spec.pairs) + spec.prior_search
    event = 2.0 * spec.event_runs / spec.samples if spec.notion in RECORD_AUDIT_NOTIONS else 0.0
    return theta + event


def smallest_round_samples(spec, alpha: float) -> int:
    """The smallest round: enough held-out draws to certify (:data:`audit.engine.MIN_TEST_SAMPLES`) and,
    for a claim the event test tests, enough event runs to refute it at ``alpha`` even for perfectly
    separated inputs (:func:`audit.crosscheck.smallest_refutable_runs`)."""
    from .engine import MIN_TEST_SAMPLES

    samples = math.ceil(MIN_TEST_SAMPLES / spec.critic.split[2])
    if spec.notion in RECORD_AUDIT_NOTIONS and spec.event_runs > 0:
        ratio = spec.event_runs / spec.samples
        need = smallest_certifying_runs(alpha)
        if spec.claim is not None and spec.claim.has_profile:
            need = max(need, smallest_refutable_runs(spec.claim, alpha) or need)
        samples = max(samples, math.ceil(need / ratio))
    return samples


def round_schedule(spec, max_runs: int, *, growth: float = GROWTH, look_fraction: float = LOOK_FRACTION,
                   rho: float = SPENDING_POWER) -> tuple:
    """The rounds of a sequential audit of ``spec`` within ``max_runs`` runs, and their levels.

    Early rounds grow by ``growth`` from the smallest round that can refute (at its own level),
    while together they plan at most ``look_fraction · max_runs`` runs; the last round plans the
    rest. Round k gets α_k = α·(t_k^ρ − t_{k−1}^ρ), t_k the fraction of the planned runs done by
    its end (power α-spending, :func:`power_alpha_spending`; module docstring). An early round too small to refute at its α_k is dropped and the levels are
    recomputed, until every round can.

    Parameters
    ----------
    spec : AuditSpec
        The audit; ``spec.event_runs / spec.samples`` is kept in every round, ``spec.alpha`` is split.
    max_runs : int
        Mechanism runs the rounds may make in all.
    growth : float > 1
    look_fraction : float in [0, 1)
    rho : float > 0
        The spending function's exponent.

    Returns
    -------
    tuple of Round

    Raises
    ------
    InputError
        When ``max_runs`` is too small for one round that can refute, naming the smallest that is.
    """
    max_runs = check_int(max_runs, "max_runs", 1)
    if not growth > 1:
        raise InputError(f"argument 'growth' must be > 1, got {growth}")
    if not 0 <= look_fraction < 1:
        raise InputError(f"argument 'look_fraction' must be in [0, 1), got {look_fraction}")
    cost = runs_per_sample(spec)
    ratio = spec.event_runs / spec.samples
    smallest_alone = smallest_round_samples(spec, spec.alpha)
    if math.floor(max_runs / cost) < smallest_alone:
        raise InputError(f"argument 'max_runs' (--max-runs) is {max_runs}: one round of this audit needs at least "
                         f"{math.ceil(smallest_alone * cost)} mechanism runs ({smallest_alone} samples, "
                         f"{cost:g} runs per sample) to be able to refute at α = {spec.alpha:g}")
    sizes = []
    size = smallest_round_samples(spec, spec.alpha * 0.01)  # a first guess at an early round's level
    while (sum(sizes) + size) * cost <= look_fraction * max_runs:
        sizes.append(size)
        size = math.ceil(size * growth)
    while True:
        last = math.floor(max_runs / cost) - sum(sizes)
        if sizes and last < sizes[-1]:
            sizes.pop()  # the last round is never smaller than an early one
            continue
        rounds = sizes + [last]
        alphas = power_alpha_spending(rounds, spec.alpha, rho)
        small = [i for i, (s, a) in enumerate(zip(rounds[:-1], alphas)) if s < smallest_round_samples(spec, a)]
        if not small:
            break
        sizes.pop(small[0])
        # Dropping the smallest round leaves the later ones the same sizes: they keep doubling from it.
    return tuple(Round(s, max(1, int(round(s * ratio))) if spec.event_runs else 0, a, int(math.floor(s * cost)))
                 for s, a in zip(rounds, alphas))


@dataclass(frozen=True)
class RoundOutcome:
    """What one round did: its size, level, the runs it made, its time and what it decided."""

    round: int
    samples: int
    alpha: float
    runs: int
    seconds: float
    seed: int
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
        The last round's audit: the refuting one, or the last one run. Its ``alpha`` is that
        round's level α_k; the sequential audit's type-I error is at most ``alpha``.
    rounds : list of RoundOutcome
        The rounds run, in order.
    schedule : tuple of Round
        The rounds planned before any run (with their levels).
    alpha : float
        The overall level: Σ α_k over the schedule.
    max_runs : int
    time_limit : float or None
    stopped : {"refuted", "violation", "budget", "time"}
        Why it stopped: the claim was refuted, an MI violation certified (no claim), the runs
        were spent, or the next round would have ended past ``time_limit``.
    runs_to_refute : int or None
        When it stopped unrefuted: total runs a fixed-budget audit at level ``alpha`` would need to
        refute the claim if the last round's event had the frequencies it showed
        (:func:`runs_to_refute`); ``None`` when none would or there was no event.
    runs_to_refute_note : str
        That number, or why there is none, in words.
    """

    result: object
    rounds: list
    schedule: tuple
    alpha: float
    max_runs: int
    time_limit: float | None
    stopped: str
    runs_to_refute: int | None = None
    runs_to_refute_note: str = ""
    notes: list = field(default_factory=list)
    rho: float = SPENDING_POWER

    @property
    def runs(self) -> int:
        """Mechanism runs made in all rounds."""
        return sum(r.runs for r in self.rounds)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.rounds)

    @property
    def refuted(self) -> bool:
        return self.stopped == "refuted"

    @property
    def claim_verdict(self) -> str | None:
        return self.result.claim_verdict

    @property
    def verdict(self) -> str | None:
        return self.result.verdict

    def summary(self) -> str:
        """One paragraph: rounds, runs, why it stopped, and what a refutation would need."""
        done = len(self.rounds)
        if self.stopped == "time":
            why = f"the next round would have ended past the time limit of {self.time_limit:g} s"
        else:
            why = {"refuted": f"the claim was refuted in round {done}",
                   "violation": f"an MI violation was certified in round {done}",
                   "budget": "the run budget was spent"}[self.stopped]
        levels = ", ".join(f"{r.alpha:.3g}" for r in self.schedule)
        text = (f"Sequential audit: {done} of {len(self.schedule)} planned rounds, {self.runs} mechanism runs of at "
                f"most {self.max_runs}, {self.seconds:.1f} s; stopped because {why}. The rounds are independent "
                f"audits at levels α_k = {levels} (α-spending α·t^{self.rho:g} over the fraction t of the planned runs, summing to α = {self.alpha:g}), so a "
                f"refutation has type-I error at most {self.alpha:g}.")
        if self.runs_to_refute_note:
            text += " " + self.runs_to_refute_note
        return text

    def to_dict(self) -> dict:
        """The last round's JSON form (:meth:`AuditResult.to_dict`) with a ``sequential`` entry."""
        out = self.result.to_dict()
        out["sequential"] = to_jsonable({
            "alpha": self.alpha, "rho": self.rho, "max_runs": self.max_runs, "time_limit": self.time_limit,
            "stopped": self.stopped, "rounds_run": len(self.rounds), "rounds_planned": len(self.schedule),
            "runs": self.runs, "seconds": self.seconds, "runs_to_refute": self.runs_to_refute,
            "runs_to_refute_note": self.runs_to_refute_note, "summary": self.summary(),
            "schedule": [r.to_dict() for r in self.schedule], "rounds": [r.to_dict() for r in self.rounds]})
        return out

    def __repr__(self) -> str:
        return (f"SequentialAudit(stopped={self.stopped!r}, rounds={len(self.rounds)}/{len(self.schedule)}, "
                f"runs={self.runs}, claim_verdict={self.claim_verdict!r}, verdict={self.verdict!r}, "
                f"alpha={self.alpha:g})")


def round_seed(seed: int, index: int) -> int:
    """The seed of round ``index`` (from 1) of an audit seeded ``seed``: fresh randomness per round."""
    return int(np.random.default_rng([int(seed), int(index), 0x5E0]).integers(2**31))


def _decides(result) -> str | None:
    if result.claim is not None:
        return "refuted" if result.refuted else None
    return "violation" if result.violation and not result.estimate_only else None


def run_sequential_audit(spec, max_runs: int, *, time_limit: float | None = None, growth: float = GROWTH,
                         look_fraction: float = LOOK_FRACTION, rho: float = SPENDING_POWER,
                         progress=None) -> SequentialAudit:
    """Audit ``spec`` in rounds that stop at the first refutation, within ``max_runs`` runs and ``time_limit``.

    Parameters
    ----------
    spec : AuditSpec
        The audit. ``spec.samples`` and ``spec.event_runs`` set only the ratio of event runs to
        samples; ``max_runs`` sets the size. ``spec.alpha`` is the overall type-I error, split
        over the rounds (module docstring).
    max_runs : int
        Mechanism runs in all rounds together, at most (the planned runs; a round's event test
        with neural critics also makes selection runs, and the last round shrinks to what is left).
    time_limit : float, optional
        Seconds: a round that would end past it (at the cost per sample of the rounds before) is
        shrunk to fit, or not run when even the smallest round would not fit. The first round always runs.
    growth, look_fraction, rho : float
        The schedule and its α-spending (:func:`round_schedule`).
    progress : callable, optional
        Called with one line after each round.

    Returns
    -------
    SequentialAudit
    """
    from .engine import run_audit

    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    schedule = round_schedule(spec, max_runs, growth=growth, look_fraction=look_fraction, rho=rho)
    ratio = spec.event_runs / spec.samples
    outcomes, result, stopped = [], None, "budget"
    started = time.perf_counter()
    for index, planned in enumerate(schedule, start=1):
        samples = planned.samples
        if outcomes:
            made = sum(o.runs for o in outcomes)
            per_sample = max(runs_per_sample(spec), made / sum(o.samples for o in outcomes))
            by_budget = math.floor((max_runs - made) / per_sample)
            by_time = math.inf
            if time_limit is not None:
                seconds_per_sample = sum(o.seconds for o in outcomes) / sum(o.samples for o in outcomes)
                by_time = math.floor((time_limit - (time.perf_counter() - started)) / max(seconds_per_sample, 1e-12))
            samples = min(samples, by_budget, by_time)
            if samples < smallest_round_samples(spec, planned.alpha):
                stopped = "time" if by_time < min(planned.samples, by_budget) else "budget"
                break
        seed = round_seed(spec.seed, index)
        round_spec = dataclasses.replace(spec, samples=samples, alpha=planned.alpha, seed=seed,
                                         event_runs=max(1, int(round(samples * ratio))) if spec.event_runs else 0)
        result = run_audit(round_spec)
        event = result.event_test
        outcome = RoundOutcome(index, samples, planned.alpha, int(result.samples), float(result.seconds), seed,
                               result.claim_verdict, result.verdict,
                               None if event is None else float(event.epsilon_lower_bound))
        outcomes.append(outcome)
        if progress is not None:
            progress(f"round {index}/{len(schedule)}: {outcome.runs} runs at α = {planned.alpha:.3g}, "
                     f"{outcome.seconds:.1f} s: " + (result.claim_verdict or result.verdict or "no verdict"))
        decision = _decides(result)
        if decision is not None:
            stopped = decision
            break
    needed, note = None, ""
    if stopped not in ("refuted", "violation"):
        needed, note = _refutation_at_observed(spec, result)
    total = sum(r.alpha for r in schedule)
    # The round's own statement would quote its level α_k; the refutation, chosen as the first of the
    # rounds', holds at the overall level only.
    result = dataclasses.replace(result, alpha=total, notes=list(result.notes) + [
        f"Round {len(outcomes)} of a sequential audit (audit.sequential): its tests spent α_k = "
        f"{schedule[len(outcomes) - 1].alpha:.3g} of the overall α = {total:g}, which the verdicts are stated at."])
    return SequentialAudit(result, outcomes, schedule, total, int(max_runs), time_limit, stopped, needed, note,
                           rho=float(rho))


def runs_to_refute(claim, p_first: float, p_second: float, alpha: float,
                   limit: int = MAX_REFUTATION_RUNS) -> int | None:
    """The fewest certification runs per input predicted to refute ``claim`` with an event of these frequencies.

    The prediction is the event test's own (:func:`audit.event_test.predicted_objective` with the
    claim's objective, :func:`audit.event_test.claim_objective`): the certificates a fresh audit
    at level ``alpha`` would choose among (Clopper–Pearson pair; for pure DP also the odds ratio
    and the rate ratio with Poisson runs), evaluated at the expected counts. ``None`` when no
    number of runs up to ``limit`` is predicted to refute (the frequencies do not exceed the
    claim's profile).
    """
    objective = claim_objective(claim)
    pure = claim.pure_epsilon is not None

    def refutes(n: int) -> bool:
        return bool(predicted_objective(p_first, p_second, n, alpha, objective, pure_dp=pure) > 1.0)

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


def _refutation_at_observed(spec, result) -> tuple[int | None, str]:
    """(total runs a fixed audit would need to refute at the last round's observed event, the sentence)."""
    event = None if result is None else result.event_test
    if spec.claim is None or not spec.claim.has_profile:
        return None, ""
    if event is None:
        return None, "There was no event test, so no number of runs to refute at the observed effect is predicted."
    per_input = runs_to_refute(spec.claim, event.p_first, event.p_second, spec.alpha)
    if per_input is None:
        return None, (f"The last round's event (frequencies {event.p_first:.4g} and {event.p_second:.4g} under the two "
                      f"inputs) does not exceed the claim {spec.claim.label}: no number of runs is predicted to "
                      "refute it at this effect.")
    total = int(math.ceil(per_input * runs_per_sample(spec) * spec.samples / spec.event_runs))
    return total, (f"A refutation at the last round's observed effect (event frequencies {event.p_first:.4g} and "
                   f"{event.p_second:.4g}) would need about {total} mechanism runs in one audit at α = {spec.alpha:g} "
                   f"({per_input} certification runs per input).")
