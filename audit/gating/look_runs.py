"""How many mechanism runs one look of a sequential audit makes, and where its chunks end.

A sequential audit (:mod:`audit.gating.sequential`) fixes its looks before any run from these
counts: the MI sample's runs per prior of Θ, the event tests' certification runs of the two inputs
of a pair, and, where the event test may choose on selection runs, those and the float-bit pilot's.

**The float-bit event test's runs.** Under ``arithmetic = "float"`` an audit whose outputs hold
bits below the coarse grid (:func:`audit.statistics.float_bits.has_fine_bits`) runs a second event
test, the float-bit one, which certifies on fresh runs of its own (``event_runs`` per input, as the
event test: :func:`audit.engine._event_tests`). An integer-valued mechanism never runs it. Whether
to plan for those runs is decided by :func:`plans_float_runs` on the runner's probe and, where that
one output shows no fine bits, :data:`FLOAT_PROBE_RUNS` more outputs on databases of the audit's first
prior, all under seeds of their own (no test sees those outputs, so the schedule is independent of
every look's data and each look keeps its level α_k; the extra runs are counted, and the looks are
planned within what is left of ``max_runs``). A mechanism whose probe outputs all show no fine bits
but whose MI sample does would make more runs than planned: its look then stops at the runner's call
limit and is not decided (:func:`audit.gating.sequential.run_sequential_audit`).

**Looks on different pairs.** A look's event runs are reused by the later looks only when they
certify the same pair (the databases' streams of runs). Where the event test has one candidate pair
(Θ of one two-point prior on a neighbouring pair, no selection runs) every look certifies it; where
it may have several (:func:`single_pair`), a look may certify another pair than the last, and its
event runs, at their most, are kept out of the last look's runs (:func:`event_part`,
:func:`audit.gating.sequential.look_schedule`), so that the last look always fits in ``max_runs``.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.claims.claim import RECORD_AUDIT_NOTIONS
from mechanisms.inputs.priors import TwoPoint

from audit.statistics.float_bits import has_fine_bits
from audit.statistics.pair_candidates import neighbouring_pair_of
from audit.search.prior_search import differing_record

__all__ = ["FLOAT_PROBE_RUNS", "event_part", "event_selection_possible", "single_pair", "look_boundaries", "look_run_counter", "look_runs", "plans_float_runs",
           "runs_per_sample", "theta_size"]


def _float_runs(spec, float_runs: bool | None) -> bool:
    # Without a probe (a forecast, a check of the flags), plan for the float-bit test wherever it may run.
    return spec.arithmetic == "float" if float_runs is None else bool(float_runs)


def theta_size(spec) -> int:
    """The priors of Θ an audit of ``spec`` draws its MI sample from: the declared priors, the pairs' two-point
    priors and the ``prior_search`` searched ones."""
    return len(spec.priors) + len(spec.pairs) + spec.prior_search


def runs_per_sample(spec, float_runs: bool | None = None) -> float:
    """Mechanism runs an audit of ``spec`` makes per database of its MI sample, at most.

    ``samples`` draws from each prior of Θ (the declared priors, the pairs' two-point priors and
    ``prior_search`` searched ones), plus, for the DP notions, ``event_runs`` certification runs
    per input of the event test's pair (:func:`audit.engine.run_audit`), and as many again for the
    float-bit event test where ``float_runs`` (``None``: under ``arithmetic = "float"``, before any
    probe; module docstring). The event test's selection runs (when not every candidate has held-out
    draws in the MI sample) and float-bit pilot runs are not counted here; a sequential audit counts
    the calls made.
    """
    theta = theta_size(spec)
    certifications = 2 if _float_runs(spec, float_runs) else 1
    event = 2.0 * certifications * spec.event_runs / spec.samples if spec.notion in RECORD_AUDIT_NOTIONS else 0.0
    return theta + event


def event_selection_possible(spec) -> bool:
    """Whether an audit of ``spec`` may make event-test selection runs and float-bit pilot runs.

    Its event test chooses among candidates on the MI sample's held-out draws, at no run's cost, when
    every prior of Θ is a two-point prior on a neighbouring pair (the declared pairs and searched ones
    are); a declared prior that is not leads to structured pairs chosen on selection runs
    (:func:`audit.engine._event_test`)."""
    if spec.notion not in RECORD_AUDIT_NOTIONS or not spec.event_runs:
        return False
    return any(not isinstance(prior, TwoPoint) or np.shape(prior.first) != np.shape(prior.second)
               or neighbouring_pair_of(prior, differing_record(prior)) is None for prior in spec.priors)


def single_pair(spec) -> bool:
    """Whether every look of a sequential audit of ``spec`` certifies the same pair: Θ is one prior, a two-point
    prior on a neighbouring pair (or one declared pair), and the event test makes no selection runs
    (:func:`event_selection_possible`), so that pair is its only candidate."""
    return theta_size(spec) == 1 and not event_selection_possible(spec)


def event_part(spec, samples: int, float_runs: bool | None = None) -> int:
    """The runs of a look of ``samples`` samples that are not its MI sample's (:func:`look_runs` less ``samples``
    draws of each prior of Θ): its event tests' selection, pilot and certification runs, at their most. A later
    look that certifies another pair reuses none of them."""
    return look_runs(spec, samples, float_runs) - samples * theta_size(spec)


def look_runs(spec, samples: int, float_runs: bool | None = None) -> int:
    """The most mechanism runs an audit of ``spec`` at ``samples`` (and the same ratio of event runs) makes.

    ``samples`` × :func:`runs_per_sample` (the MI sample and the event tests' certification runs), plus,
    where the event test may choose on selection runs (:func:`event_selection_possible`), those (at most
    ``event_runs`` in all: successive halving spends at most its budget,
    :func:`audit.search.event_search.event_search`; as many again for the float-bit event test's own selection
    where ``float_runs``), the float-bit pilot runs (at most
    2·min(``event_runs``, :data:`audit.search.event_candidates.BIT_PILOT_RUNS`)) and the probe of its structured
    pairs (one run of each database: 2·:data:`~audit.search.event_candidates.STRUCTURED_EVENT_PAIRS`,
    :func:`audit.search.event_candidates.accepted_structured_pairs`); and the probe of the ``prior_search`` searched
    pairs (2·``prior_search``, :func:`audit.search.pair_probe.probe_searched_pairs`). The probes' runs are on seeds of
    their own, the same at every look.
    """
    return look_run_counter(spec, float_runs)(samples)


def look_run_counter(spec, float_runs: bool | None = None):
    """:func:`look_runs` of ``spec`` as a function of the samples alone, its per-spec parts computed once
    (the schedule bisects on it)."""
    from audit.search.event_candidates import BIT_PILOT_RUNS, STRUCTURED_EVENT_PAIRS

    per_sample, selects = runs_per_sample(spec, float_runs), event_selection_possible(spec)
    probes = 2 * spec.prior_search + (2 * STRUCTURED_EVENT_PAIRS if selects else 0)
    # Each event test chooses on selection runs of its own (audit.engine._event_tests): the float-bit one too.
    selections = 2 if _float_runs(spec, float_runs) else 1

    def runs_at(samples: int) -> int:
        runs = samples * per_sample + probes
        if selects:
            event_runs = samples * spec.event_runs / spec.samples
            runs += selections * event_runs + 2 * min(event_runs, BIT_PILOT_RUNS)
        return int(math.floor(runs + 1e-9))

    return runs_at


def look_boundaries(schedule, early_float: bool = False) -> tuple:
    """The chunk boundaries that make the looks of ``schedule`` nested: every look's ``samples``
    (prior draws, MI-sample runs), ``event_runs`` (the event test's runs of each input) and float-bit
    pilot runs (:data:`audit.search.event_candidates.BIT_PILOT_RUNS`), and where ``early_float`` (the early look's plan gives the
    float-bit test a share, :func:`audit.gating.early_look.early_float_planned`) that test's last run of each input,
    twice the early look's ``event_runs``; for :class:`~mechanisms.execution.runner.MechanismRunner`."""
    from audit.search.event_candidates import BIT_PILOT_RUNS

    sizes = set()
    for look in schedule:
        sizes.add(look.samples)
        if look.event_runs:
            sizes.update((look.event_runs, min(look.event_runs, BIT_PILOT_RUNS)))
        if early_float and look.early:
            # The early look's float-bit test takes the next event_runs of each input's stream: a refutation there
            # makes no run past them (audit.gating.early_look).
            sizes.add(2 * look.event_runs)
    return tuple(sorted(sizes))


#: Databases of the audit's first prior (or pair) on which :func:`plans_float_runs` runs the mechanism once each,
#: on a seed of their own, when the runner's probe shows no fine bits: counted runs of the audit.
FLOAT_PROBE_RUNS = 64


def plans_float_runs(spec, runner) -> bool:
    """Whether a sequential audit of ``spec`` plans the float-bit event test's certification runs (module docstring).

    Under ``arithmetic = "float"``, for a notion with an event test: whether an output of the mechanism, on
    databases of the audit's first prior (or pair) drawn and run on seeds of their own, has bits below the coarse
    grid (:func:`audit.statistics.float_bits.has_fine_bits`). First the runner's probe
    (:meth:`mechanisms.execution.runner.MechanismRunner.probe`, one output, not counted); when it shows none,
    :data:`FLOAT_PROBE_RUNS` more databases, one run each, counted in the runner's ``calls``: a mechanism whose
    outputs hold fine bits only sometimes (a quotient of snapped values whose denominator is sometimes 1,
    ``mean_noisy_count``) shows none in one output often enough (about one seed in four there) that its looks,
    planned without the float-bit test's runs, would make more runs than planned, and its last look would stop
    at the call limit. An output fraction q with fine bits is missed with probability (1 − q)^65. The 64 runs are
    one job on the probe's seed, not a job of one database (``one_database``), so a prior whose draws are all one
    database gets 64 independent runs, none from that database's stream of runs that the looks read.
    """
    if spec.arithmetic != "float" or spec.notion not in RECORD_AUDIT_NOTIONS or not spec.event_runs:
        return False
    prior = spec.priors[0] if spec.priors else spec.pairs[0].prior()
    rng = np.random.default_rng([int(spec.seed), 0xF10A7])
    database = runner.draw(prior, 1, rng)[0]
    if has_fine_bits(runner.probe(database, int(rng.integers(2**63)))):
        return True
    databases = runner.draw(prior, FLOAT_PROBE_RUNS, rng)
    return has_fine_bits(runner.sample(databases, rng, what="float-bit probe run", budget=None))
