"""A prior's draws as the audit makes them: every call bounded in time, with or without ``--timeout``.

A user's sampler (:class:`~mechanisms.inputs.user_priors.UserPrior`) answers a first call of 2 databases when it is
built, bounded by the first-call limit, and keeps that call's seconds a database (``first_seconds``, which a prior
holding user priors passes on: a mixture, the add/remove wrapper). Each later draw of the audit (its sample, a
stratum's fresh draws, the secret's probe) is bounded by ``--timeout``, else by
:func:`~mechanisms.calls.later_bound.later_call_bound` from those seconds: a sampler that stops returning after its
first call is reported, never waited on for ever. miaudit's own priors hold no ``first_seconds`` and are not bounded
without ``--timeout`` (their draws are vectorised NumPy), nor is a ``Prior`` object of the user's own class, which
answers no first call when it is loaded.
"""

from __future__ import annotations

import numpy as np

from mechanisms.base import mechanism_name
from mechanisms.calls.later_bound import later_call_bound
from mechanisms.calls.user_call import call_user_code

__all__ = ["draw_bounded", "prior_who"]


def prior_who(prior) -> str:
    """How messages name ``prior``: ``prior 'LABEL'`` (its label, else its description, else its name)."""
    label = getattr(prior, "label", None)
    if not isinstance(label, str):
        label = prior.describe() if hasattr(prior, "describe") else mechanism_name(prior)
    return f"prior '{label}'"


def draw_bounded(prior, m: int, rng: np.random.Generator, *, timeout: float | None, where: str) -> np.ndarray:
    """``prior(m, rng)``, bounded by ``timeout`` (``--timeout``), else, where the prior holds its first call's
    seconds a database (``first_seconds``), by :func:`~mechanisms.calls.later_bound.later_call_bound` of them.

    Raises
    ------
    MechanismError
        Naming the prior (:func:`prior_who`) where it outlives the bound or calls ``sys.exit``
        (:func:`~mechanisms.calls.user_call.call_user_code`); ``where`` ends the message.
    """
    bound, hint = later_call_bound(timeout, getattr(prior, "first_seconds", None), m, each="draw", per="database")
    return call_user_code(prior, (m, rng), who=prior_who(prior), timeout=bound, where=where, hint=hint)
