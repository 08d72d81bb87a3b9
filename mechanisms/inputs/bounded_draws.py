"""A prior's draws as the audit makes them: every call bounded in time, with or without ``--timeout``.

A user's sampler (:class:`~mechanisms.inputs.user_priors.UserPrior`) answers a first call of 2 databases when it is
built, bounded by the first-call limit, and keeps that call's seconds a database (``first_seconds``, which a prior
holding user priors passes on: a mixture, the add/remove wrapper). Each later draw of the audit (its sample, a
stratum's fresh draws, the secret's probe, the prior search's) is bounded by ``--timeout``, else by
:func:`~mechanisms.calls.later_bound.later_call_bound` from those seconds: a sampler that stops returning after its
first call is reported, never waited on for ever. A prior that holds no ``first_seconds`` (a ``Prior`` object of the
user's own class, loaded without a call; miaudit's own priors) has its first draw of the audit timed instead
(:data:`_FIRST_DRAWS`): that draw is bounded by ``--timeout`` only, and each later one as a sampler's are.
"""

from __future__ import annotations

import time
import weakref

import numpy as np

from mechanisms.base import mechanism_name
from mechanisms.calls.later_bound import later_call_bound
from mechanisms.calls.user_call import call_user_code

__all__ = ["draw_bounded", "prior_who"]

#: Seconds a database of the first draw made here of each prior that holds no ``first_seconds``, by prior (held
#: weakly: a prior that is gone is forgotten): they bound its later draws where no ``--timeout`` is given.
_FIRST_DRAWS = weakref.WeakKeyDictionary()


def prior_who(prior) -> str:
    """How messages name ``prior``: ``prior 'LABEL'`` (its label, else its description, else its name)."""
    label = getattr(prior, "label", None)
    if not isinstance(label, str):
        label = prior.describe() if hasattr(prior, "describe") else mechanism_name(prior)
    return f"prior '{label}'"


def draw_bounded(prior, m: int, rng: np.random.Generator, *, timeout: float | None, where: str) -> np.ndarray:
    """``prior(m, rng)``, bounded by ``timeout`` (``--timeout``), else by
    :func:`~mechanisms.calls.later_bound.later_call_bound` of the prior's first call's seconds a database: its
    ``first_seconds``, else its first draw's here (module docstring), which is bounded by ``timeout`` only.

    Raises
    ------
    MechanismError
        Naming the prior (:func:`prior_who`) where it outlives the bound or calls ``sys.exit``
        (:func:`~mechanisms.calls.user_call.call_user_code`); ``where`` ends the message.
    """
    first = getattr(prior, "first_seconds", None)
    timed = first is None and timeout is None
    if timed:
        first = _first_draw(prior)
        timed = first is None
    bound, hint = later_call_bound(timeout, first, m, each="draw", per="database")
    started = time.perf_counter()
    draws = call_user_code(prior, (m, rng), who=prior_who(prior), timeout=bound, where=where, hint=hint)
    if timed:
        try:
            _FIRST_DRAWS[prior] = (time.perf_counter() - started) / m
        except TypeError:  # a callable that cannot be held weakly or hashed: its draws keep --timeout's bound only
            pass
    return draws


def _first_draw(prior) -> float | None:
    """:data:`_FIRST_DRAWS`' seconds a database of ``prior``, None where none were recorded."""
    try:
        return _FIRST_DRAWS.get(prior)
    except TypeError:  # not weakly referable or not hashable: never recorded
        return None
