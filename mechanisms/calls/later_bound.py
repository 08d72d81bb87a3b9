"""The bound on user code's later calls where no ``--timeout`` is given: a multiple of its first calls' time.

A first call of user code is bounded by :data:`~mechanisms.calls.user_call.FIRST_CALL_TIMEOUT` (a minute) where no
``--timeout`` is given: the mechanism's probe, a prior's first draws, a secret function's first call. Each later
call is bounded by :func:`later_call_bound`: :data:`LATER_CALL_SLACK` × the measured seconds of one database in
those first calls × the databases of the call, at least :data:`LATER_CALL_FLOOR` and at most :data:`MAX_TIMEOUT_S`.
The mechanism's chunks (:func:`mechanisms.execution.chunks.bounded_by_first_calls`; an external program's batch
has the bound of the chunk it runs in, :class:`mechanisms.adapters.callables.ExternalCommandMechanism`), a prior's
later draws (:func:`mechanisms.inputs.bounded_draws.draw_bounded`), a secret function's later calls
(:class:`audit.frameworks.SecretFunction`) and a statistic's later calls on outputs after the runs (one output a
call, :class:`mechanisms.adapters.user_statistic.UserStatistic`) are bounded so: user code that stops returning
after its first calls is reported, never waited on for ever. The bound changes no result: it only stops a call
that outlives it.
"""

from __future__ import annotations

from mechanisms.calls.user_call import FIRST_CALL_TIMEOUT, TIMEOUT_HINT

__all__ = ["LATER_CALL_FLOOR", "LATER_CALL_SLACK", "MAX_TIMEOUT_S", "later_call_bound"]

#: The longest ``timeout`` (seconds, about 116 days): the interval timer that bounds a call cannot hold 1e300.
MAX_TIMEOUT_S = 1e7

#: Without ``--timeout``, a call on C databases may take this many times C × the first calls' seconds a database
#: (:func:`later_call_bound`). 50 = 4 × 12.5: a machine at load 7 on 2 cores makes a call about 4 times slower than
#: an idle one (the first calls may have run idle), and code whose cost depends on its data (a training run that
#: converges slowly on some databases, a solver's iterations, a sampler's rejection loop) may take ten times its
#: first calls' time or more on other databases; a call's total over many databases varies less than one
#: database's, which average out. The first call also carries one-off costs (imports, compilation), and a fixed
#: cost per call is counted once per database, both only widening the bound. A hang is still reported, after 50 ×
#: the call's expected time.
LATER_CALL_SLACK = 50.0

#: ... and at least this long (:data:`~mechanisms.calls.user_call.FIRST_CALL_TIMEOUT`, a minute): code of
#: microseconds a call is never stopped for a pause of the machine.
LATER_CALL_FLOOR = FIRST_CALL_TIMEOUT


def later_call_bound(timeout: float | None, first_seconds: float | None, databases: int, *, each: str = "chunk",
                     per: str = "call") -> tuple[float | None, str]:
    """The bound on a later call of user code on ``databases`` databases, and the words that end its timeout message.

    Parameters
    ----------
    timeout : float, optional
        The audit's ``--timeout``: where given, it is the bound, with its own words
        (:data:`~mechanisms.calls.user_call.TIMEOUT_HINT`).
    first_seconds : float, optional
        Seconds one database took in the code's first calls (the slower one where there were two); None where they
        were not timed: then no bound (None) is added.
    databases : int
        Databases of the call bounded.
    each, per : str
        What is bounded ("chunk", "draw", "call") and what ``first_seconds`` is of ("call", "database"), for the words.

    Returns
    -------
    (timeout, hint)
        ``timeout`` as it is where given or where ``first_seconds`` is None; else :data:`LATER_CALL_SLACK` ×
        ``first_seconds`` × ``databases``, at least :data:`LATER_CALL_FLOOR`, at most :data:`MAX_TIMEOUT_S`, with a
        hint that says so and to set ``--timeout`` if the code is slow rather than stuck.
    """
    if timeout is not None or first_seconds is None:
        return timeout, TIMEOUT_HINT
    limit = min(max(LATER_CALL_FLOOR, LATER_CALL_SLACK * first_seconds * databases), MAX_TIMEOUT_S)
    hint = (f"(no --timeout was given, so miaudit bounds each {each} at {LATER_CALL_SLACK:g} × its first calls' time, "
            f"{first_seconds:.2g} s a {per}, and at least {LATER_CALL_FLOOR:g} s): if it is slow rather than stuck, "
            "set --timeout")
    return limit, hint
