"""The pairs an audit's configuration adds from the mechanism's declared input domain.

The domain is the user's (``--domain``, ``[mechanism] domain``) or the one the mechanism declares
(:func:`audit.search.input_domain.declared_domain`). The audited records' reach is checked
(:func:`audit.search.input_domain.domain_check`); where they span less than the domain, a warning says so,
and a bounded domain's pair families are scored on pilot runs and the best pair joins Θ
(:func:`audit.search.family_pilot.domain_pairs_by_pilot`); an unbounded one gets the warning only. Records
that reach (or pass) the domain's ends add nothing (as before families existed: a pair added to Θ becomes
the event test's candidate in place of the structured pairs on the prior's own records).

Where neither the claim nor the mechanism states a neighbouring relation (:func:`tests_both_relations`), the
families are built and scored under each relation, and the audit becomes two, one per relation, each at
level α/2 (:func:`with_add_remove_companion`; Bonferroni, :mod:`audit.both_relations`).
"""

from __future__ import annotations

import dataclasses
import warnings

from estimators.validation import InputWarning
from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE
from audit.both_relations import BOTH_RELATIONS_NOTE, split_alpha
from audit.search.input_domain import declared_domain, domain_check


def domain_pairs(mechanism, user_domain, priors, given, shape, relation: str, claim, audit: dict, name: str,
                 execution, *, warn: bool = True) -> tuple[tuple, tuple, object]:
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
    warn : bool
        Whether a domain the records fall short of is said on the terminal (an :class:`InputWarning`) as well
        as in the notes; the second relation of an audit under both says it once.
    """
    from audit.critic_cost import AUDIT_MEMORY_NAMES
    from audit.search.family_pilot import domain_pairs_by_pilot  # SciPy: loaded only when pairs are built

    domain = declared_domain(mechanism, user_domain)
    seed = audit.get("seed", 0)
    # A note means the audited records fall short of the domain (records that reach or pass its ends get none).
    added, note = domain_check(mechanism, priors, given, shape, seed, user_domain=user_domain, ends_pair=False)
    notes = ()
    if note and warn:  # on the terminal (stderr) and in the result's notes
        warnings.warn(f"input domain: {note}", InputWarning, stacklevel=3)
    if note:
        notes += (note,)
    if note and domain.bounded:
        samples = audit.get("samples", 20000)
        delta = audit.get("delta", claim.delta if claim is not None else 0.0)
        added, family_note = domain_pairs_by_pilot(
            mechanism, domain, shape, relation, seed=seed, runs=max(1, audit.get("event_runs", samples)),
            alpha=audit.get("alpha", 0.05), delta=delta, claim=claim, budget=samples, label=name,
            execution=execution, allow_nan=audit.get("allow_nan", False), memory_names=AUDIT_MEMORY_NAMES)
        notes += (family_note,)
    return tuple(added), notes, domain


def tests_both_relations(mechanism, user_domain, claim, relation_given, entry, loaded, config: dict,
                         notion: str) -> bool:
    """Whether the audit tests ``claim`` under both relations (:mod:`audit.both_relations`): no relation is stated
    (neither ``relation_given``, from ``--relation`` / ``[claim] relation``, nor a claim object's add-remove, nor
    ``config``'s ``[[pairs]]``, whose row counts name one, nor the mechanism: a catalog ``entry`` or a ``loaded``
    library object with a privacy map), the claim may be read for add-remove neighbours (a DP-family claim: dp,
    zcdp, rdp, gdp), the notion is a DP notion, and the mechanism has a bounded declared domain whose pair
    families are built (``--domain``, a library object's bounds, a function's ``bounds=`` arguments)."""
    if relation_given is not None or entry is not None or getattr(loaded, "claim", None) is not None \
            or config.get("pairs") or notion not in ("mi-dp", "smi-dp") or claim is None:
        return False
    if claim.relation != REPLACE_ONE or not (claim.has_profile and claim.allows_add_remove):
        return False
    domain = declared_domain(mechanism, user_domain)
    return domain is not None and domain.bounded


def split_alpha_for_both(audit: dict, notes) -> tuple:
    """Set ``audit``'s level to α/2 (:func:`audit.both_relations.split_alpha`) and return ``notes`` with the note
    that says so."""
    audit["alpha"] = split_alpha(audit.get("alpha", 0.05))
    return tuple(notes) + (BOTH_RELATIONS_NOTE,)


def with_add_remove_companion(spec, user_domain, priors, shape, audit: dict, name: str, execution):
    """``spec`` (replace-one, at α/2) with its companion: the same audit under add-remove at α/2.

    The companion reads the claim for add-remove neighbours (the same parameters: the claim states no relation,
    so neither reading is converted from the other), audits the same declared priors with every record present
    (:class:`~mechanisms.inputs.relation.PresentRecords`), and gets the domain's families built and scored under
    add-remove (:func:`domain_pairs`); its MI level is the add-remove claim's unless ``[audit] epsilon`` gives one.
    """
    claim = dataclasses.replace(spec.claim, relation=ADD_REMOVE)
    added, notes, _ = domain_pairs(spec.mechanism, user_domain, priors, (), shape, ADD_REMOVE, claim,
                                   {**audit, "alpha": spec.alpha}, name, execution, warn=False)
    records = spec.records
    if added and records is not None and 0 not in records:  # the families change record 0
        records = tuple(sorted(set(records) | {0}))
    notes = tuple(note for note in spec.notes if "pilot runs of each database" not in note) + tuple(
        note for note in notes if note not in spec.notes)
    companion = dataclasses.replace(spec, relation=ADD_REMOVE, claim=claim, pairs=tuple(added), records=records,
                                    notes=notes, epsilon=audit.get("epsilon"), presence_column=None, companion=None)
    return dataclasses.replace(spec, companion=companion)
