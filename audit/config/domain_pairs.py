"""The pairs an audit's configuration adds from the mechanism's declared input domain.

The domain is the user's (``--domain``, ``[mechanism] domain``) or the one the mechanism declares
(:func:`audit.search.input_domain.declared_domain`). The audited records' reach is checked
(:func:`audit.search.input_domain.domain_check`); where they span less than the domain, a warning says so,
and a bounded domain's pair families are scored on pilot runs and the best pair joins Θ
(:func:`audit.search.family_pilot.domain_pairs_by_pilot`); an unbounded one gets the warning only. Records
that reach (or pass) the domain's ends add nothing (as before families existed: a pair added to Θ becomes
the event test's candidate in place of the structured pairs on the prior's own records).
"""

from __future__ import annotations

import warnings

from estimators.validation import InputWarning
from audit.search.input_domain import declared_domain, domain_check


def domain_pairs(mechanism, user_domain, priors, given, shape, relation: str, claim, audit: dict, name: str,
                 execution) -> tuple[tuple, tuple, object]:
    """(pairs to add to Θ, notes, the declared domain or None) for an audit of ``mechanism``.

    Parameters
    ----------
    mechanism : callable
        The audited mechanism (a library object's adapter declares its domain).
    user_domain : DeclaredDomain or None
        ``--domain`` / ``[mechanism] domain``; it wins over what the mechanism declares.
    priors, given : sequence
        The declared priors and the given pairs (the audited records).
    shape : (int, int)
        The databases' (n, k), without a presence column.
    relation : str
        The audit's neighbouring relation; the pairs follow it.
    claim : Claim or None
        What the pairs are ranked for, with the ``[audit]`` table's ``samples``, ``event_runs``, ``alpha``,
        ``delta`` and ``seed`` in ``audit``: the pilot runs are seeded by the audit's seed (a separate
        stream) and are at most ``samples`` in all.
    name : str
        The mechanism's name, in messages.
    execution : ExecutionSettings
        How the pilot runs the mechanism (in this process, with the mechanism's timeout).
    """
    from audit.search.family_pilot import domain_pairs_by_pilot  # SciPy: loaded only when pairs are built

    domain = declared_domain(mechanism, user_domain)
    seed = audit.get("seed", 0)
    # A note means the audited records fall short of the domain (records that reach or pass its ends get none).
    added, note = domain_check(mechanism, priors, given, shape, seed, user_domain=user_domain, ends_pair=False)
    notes = ()
    if note:  # on the terminal (stderr) and in the result's notes
        warnings.warn(f"input domain: {note}", InputWarning, stacklevel=3)
        notes += (note,)
    if note and domain.bounded:
        samples = audit.get("samples", 20000)
        delta = audit.get("delta", claim.delta if claim is not None else 0.0)
        added, family_note = domain_pairs_by_pilot(
            mechanism, domain, shape, relation, seed=seed, runs=max(1, audit.get("event_runs", samples)),
            alpha=audit.get("alpha", 0.05), delta=delta, claim=claim, budget=samples, label=name,
            execution=execution)
        notes += (family_note,)
    return tuple(added), notes, domain
