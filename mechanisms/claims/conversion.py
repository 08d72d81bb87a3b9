"""A claim restated for another neighbouring relation, by the group-privacy theorem that allows it.
"""

from __future__ import annotations

from dataclasses import replace

from estimators.validation import InputError

from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE, check_relation

__all__ = ["convert_claim"]


def convert_claim(claim, relation: str):
    """``claim`` restated for neighbours under ``relation``, by the theorem that allows it.

    Returns the claim itself when its relation is ``relation``; otherwise a new claim whose
    ``origin`` names the conversion and its theorem (:meth:`mechanisms.claims.claim.Claim.replace_one_form`; the relations are
    described in :mod:`mechanisms.inputs.relation`).

    Raises
    ------
    InputError
        When no theorem converts the claim, with the reason.
    """
    relation = check_relation(relation)
    if claim.relation == relation:
        return claim
    stated = f"{claim.text} ({claim.relation})"
    if relation == ADD_REMOVE:
        raise InputError(f"the claim {stated} says nothing about add/remove neighbours: on unbounded data a "
                         "replace-one guarantee does not bound what adding or removing a record reveals (a mechanism "
                         "that releases the number of records is 0-DP under replace-one); state the claim for "
                         "add/remove (--relation add-remove), or audit replace-one pairs")
    how = "group privacy for 2 add/remove steps (a replacement is a removal and an addition)"
    converted, theorem = claim.replace_one_form()
    origin = f"{claim.origin or 'the claim'}: {stated} converted to replace-one by {how} ({theorem})"
    return replace(converted, origin=origin, relation=REPLACE_ONE)
