"""The event test: a likelihood-ratio statistic between two neighbouring databases, thresholded.

A statistic T(a, b, D, y) (the critic's T(a, y, rest) − T(b, y, rest) in an audit) separates the
output laws of two neighbouring databases, D_a and D_b, that differ only in one record (value a
or b). Selection runs of both choose the pair of values and the event E = {T > t} or {T ≤ t}
(:func:`audit.event_test.choose_threshold`); fresh certification runs bound P(M(D₁) ∈ E) from
below and P(M(D₂) ∈ E) from above, each at α/2 (Clopper–Pearson), which certifies
ε ≥ log((p̲ − δ)/p̄) (Dwork and Roth 2014, Definition 2.4) and is what a claim's profile is
checked against (:mod:`audit.crosscheck`).
"""

from __future__ import annotations

import numpy as np

from .event_test import choose_event, claim_objective, clopper_pearson, epsilon_from_bounds
from .result import EventTest

#: The fewest selection runs per input of a candidate pair.
MIN_SELECTION_RUNS = 100


def event_test(*, secret: str, record: int, base: np.ndarray, values: np.ndarray, statistic, runner,
               rng: np.random.Generator, runs: int, alpha: float, delta: float = 0.0, claim=None):
    """Choose and certify an event between two neighbours of ``base`` that differ in ``record``.

    Parameters
    ----------
    secret : str
        What the event is about, for the result (``"record 0"``).
    record : int
        The record that differs.
    base : ndarray of shape (n, k)
        The database whose ``record`` is switched.
    values : ndarray of shape (m, k)
        Candidate values of the record; every pair of them is a candidate neighbouring pair.
    statistic : callable
        ``statistic(a, b, dbs, outputs) -> (N,)`` scores, larger where the output looks
        produced with the record at ``a`` rather than ``b``.
    runner : MechanismRunner
        Runs the mechanism (every run is counted in the result).
    rng : numpy.random.Generator
        Seeds the mechanism runs.
    runs : int
        Certification runs per input; selection spends about ``runs`` in all, split over the
        candidate pairs and their two inputs (at least :data:`MIN_SELECTION_RUNS` per input).
    alpha : float
        The level: p̲ and p̄ each hold with probability ≥ 1 − α/2.
    delta : float
        The δ at which the ε bound is also reported (0: pure DP only).
    claim : Claim, optional
        With a claim, the event is chosen to refute it (:func:`audit.event_test.claim_objective`).

    Returns
    -------
    EventTest or None
        None when ``values`` holds fewer than two distinct values (no neighbouring pair).
    """
    if len(values) < 2:
        return None
    n_pairs = len(values) * (len(values) - 1) // 2
    select_runs = max(MIN_SELECTION_RUNS, runs // (2 * n_pairs))
    objective = None if claim is None else claim_objective(claim)

    def run(value, count):
        neighbour = np.array(base, dtype=np.float64, copy=True)
        neighbour[record] = value
        batch = np.repeat(neighbour[None], count, axis=0)
        return batch, runner.sample(batch, rng, what="event-test run")

    best = None
    used = 0
    for i in range(len(values)):
        for j in range(i + 1, len(values)):
            batch_a, y_a = run(values[i], select_runs)
            batch_b, y_b = run(values[j], select_runs)
            used += 2 * select_runs
            choice = choose_event(statistic(values[i], values[j], batch_a, y_a),
                                  statistic(values[i], values[j], batch_b, y_b),
                                  runs=runs, alpha=alpha, delta=delta, objective=objective)
            if best is None or choice.predicted > best[2].predicted:
                best = (values[i], values[j], choice)
    a, b, choice = best
    event = choice.event
    # A randomized event's boundary coins come from their own seeded generator (part of the event).
    coins = np.random.default_rng(rng.integers(2**63))
    batch_a, y_a = run(a, runs)
    batch_b, y_b = run(b, runs)
    in_a = int(event.contains(statistic(a, b, batch_a, y_a), coins).sum())
    in_b = int(event.contains(statistic(a, b, batch_b, y_b), coins).sum())
    hits_first, hits_second = (in_a, in_b) if event.first_is_a else (in_b, in_a)
    description = event.describe("T(a, y) − T(b, y)")
    p_lower = float(clopper_pearson(hits_first, runs, alpha / 2)[0])
    p_upper = float(clopper_pearson(hits_second, runs, alpha / 2)[1])
    description += (f"; neighbouring databases differ in record {record} "
                    f"(a = {np.array2string(np.asarray(a), precision=4)}, b = {np.array2string(np.asarray(b), precision=4)})")
    return EventTest(
        secret=secret, description=description, threshold=event.threshold, runs_per_input=runs,
        p_first=hits_first / runs, p_second=hits_second / runs, p_first_lower=p_lower, p_second_upper=p_upper,
        delta=delta, epsilon_lower_bound=epsilon_from_bounds(p_lower, p_upper, 0.0),
        epsilon_lower_bound_at_delta=epsilon_from_bounds(p_lower, p_upper, delta) if delta > 0 else None,
        alpha=alpha, selection_runs=used, event=event.to_dict(),
    )
