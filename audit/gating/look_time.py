"""When a sequential audit's next look may start: the seconds it is predicted to take, against ``time_limit``.

:func:`audit.gating.sequential.run_sequential_audit` starts a look only while the seconds since the audit started
plus the look's predicted seconds (:func:`predicted_seconds`) are within its ``time_limit``, the first look included
(:func:`look_ends`). Stopping early keeps the audit's level: a look not run leaves its α_k unspent, and each look run
keeps its own level whatever came before (the union bound over the looks, :mod:`audit.gating.sequential`,
"Validity"), so an audit stopped for time is refuted by the looks it ran, at α, or not at all. Where even the first
look would end past the limit, no look runs and there is no verdict: :class:`FirstLookPastTimeLimit`.

The prediction is the last timed look's seconds scaled by the samples, as a look's work grows with them. Before
one (the first look, and after an early look the first ordinary one: the early look's seconds are mostly fixed
costs, fitting on 40 draws, and say little of a larger look's) it is the larger of the early look's seconds (those
fixed costs recur) and the calls still to make at ``seconds_per_run``, where the caller measured that (a scan's
probe, :mod:`audit.scan.case_audit`); without it, only the time already spent is checked.
"""

from __future__ import annotations

import time

from estimators.validation import InputError

#: The clock the looks' seconds are read on (a test gives it a fake one).
clock = time.perf_counter


class FirstLookPastTimeLimit(InputError):
    """A sequential audit's first look would end past its ``time_limit``: no look was run, so there is no verdict
    (``predicted``: the seconds after the audit's start at which the look was predicted to end)."""

    def __init__(self, message: str, predicted: float):
        super().__init__(message)
        self.predicted = predicted


def predicted_seconds(planned, outcomes, schedule, seconds_per_run: float | None, runs_made: int) -> float:
    """Seconds the look ``planned`` (a :class:`~audit.gating.sequential.Look`) is predicted to take (module docstring).

    Parameters
    ----------
    planned : Look
    outcomes : list of LookOutcome
        The looks run so far.
    schedule : tuple of Look
        All the looks planned (which one is the early look).
    seconds_per_run : float or None
        What one mechanism call takes, where measured.
    runs_made : int
        Mechanism calls the looks have made so far: the look's planned runs (``planned.planned_runs``) less
        these are the calls still to make.
    """
    timed = [o for o in outcomes if not schedule[o.look - 1].early]
    if timed:
        return timed[-1].seconds * planned.samples / timed[-1].samples
    fixed = outcomes[-1].seconds if outcomes else 0.0
    return max(fixed, (seconds_per_run or 0.0) * max(0, planned.planned_runs - runs_made))


def look_ends(planned, outcomes, schedule, seconds_per_run: float | None, runs_made: int, started: float,
              time_limit: float, first: bool) -> float:
    """Seconds after ``started`` (a reading of :data:`clock`) at which look ``planned`` is predicted to end
    (:func:`predicted_seconds`; its other arguments are that function's).

    Raises
    ------
    FirstLookPastTimeLimit
        Where it is the ``first`` look and that is past ``time_limit``.
    """
    ends = clock() - started + predicted_seconds(planned, outcomes, schedule, seconds_per_run, runs_made)
    if first and ends > time_limit:
        raise FirstLookPastTimeLimit(
            f"argument 'time_limit' (--time-limit) is {time_limit:g} s: the first look ({planned.samples} samples, at "
            f"most {planned.planned_runs} mechanism runs) is predicted to end {ends:.3g} s after the audit started, "
            "past it; no look was run, so there is no verdict: raise it", ends)
    return ends
