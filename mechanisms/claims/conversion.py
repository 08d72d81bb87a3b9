"""A claim restated for another neighbouring relation, by the group-privacy theorem that allows it.
"""

from __future__ import annotations

from dataclasses import replace

from estimators.validation import InputError

from mechanisms.inputs.relation import check_relation, group_steps, relation_distance, relation_kind

__all__ = ["convert_claim"]


def convert_claim(claim, relation: str):
    """``claim`` restated for neighbours under ``relation``, by the theorem that allows it.

    Returns the claim itself when its relation is ``relation``. Otherwise a pair under ``relation``
    is a chain of g pairs under the claim's relation (:func:`mechanisms.inputs.relation.group_steps`:
    ⌈b / a⌉ steps from distance a to distance b of one kind, 2 ⌈b / a⌉ from add/remove to replace), and
    the claim is restated for groups of g (:meth:`mechanisms.claims.claim.Claim.group_form`: kε, (kε,
    δ Σ e^{iε}), k²ρ, kμ, and Rényi DP where Mironov's Proposition 2 applies); at g = 1 (a claim stated
    for a distance at least the audited one) the parameters stay as they are. The new claim's
    ``origin`` names the conversion and its theorem (the relations are described in
    :mod:`mechanisms.inputs.relation`).

    Raises
    ------
    InputError
        When no theorem converts the claim, with the reason.
    """
    relation = check_relation(relation)
    if claim.relation == relation:
        return claim
    stated = f"{claim.text} ({claim.relation})"
    steps = group_steps(claim.relation, relation)
    if steps is None and not claim.allows_add_remove:  # no add/remove claim of this notion exists to state
        raise InputError(f"the claim {stated} says nothing about add/remove neighbours, and {claim.notion} is defined "
                         "for replace-one neighbours only, so no add/remove claim of it can be stated: audit it on "
                         "replace-one neighbours (no --relation), or audit add/remove neighbours against a DP-family "
                         "claim (--claim dp:EPS, zcdp, rdp or gdp with --relation add-remove)")
    if steps is None:
        raise InputError(f"the claim {stated} says nothing about add/remove neighbours: on unbounded data a "
                         "replace guarantee does not bound what adding or removing records reveals (a mechanism "
                         "that releases the number of records is 0-DP under replace-one); state the claim for "
                         "add/remove (--relation add-remove or add-remove:K), or audit replace pairs")
    if steps == 1:
        how = (f"a claim for neighbours at distance {relation_distance(claim.relation)} covers those at distance "
               f"{relation_distance(relation)}")
        theorem = "the same parameters"
        converted = claim
    else:
        if relation_kind(claim.relation) == relation_kind(relation):
            how = f"group privacy for {steps} steps of {claim.relation}"
        elif relation_distance(relation) == 1 and relation_distance(claim.relation) == 1:
            how = "group privacy for 2 add/remove steps (a replacement is a removal and an addition)"
        else:
            how = (f"group privacy for {steps} steps of {claim.relation} (replacing records is removing them and "
                   "adding others)")
        converted, theorem = claim.group_form(steps)
    origin = f"{claim.origin or 'the claim'}: {stated} converted to {relation} by {how} ({theorem})"
    return replace(converted, origin=origin, relation=relation)

