"""One claim stated for no relation, audited under both: replace-one and add-remove, α split in two.

A DP claim is about a neighbouring relation (:mod:`mechanisms.inputs.relation`). Where neither the user
(``--relation``, ``[claim] relation``, ``[[pairs]]`` of one relation) nor the mechanism (a library's privacy
map, a catalog entry) states one, the claim's words fit either, and a mechanism can hold it under one and
break it under the other: releasing the number of records exactly is 0-DP under replace-one and not DP
at all under add-remove; a histogram with Laplace noise of scale 1/ε is ε-DP under add-remove and 2ε-DP
under replace-one. The configuration (:func:`audit.config.building.build_spec`) then builds two audits of
the same mechanism, priors and declared domain, one per relation, each with the claim read for its own
neighbours (the claim "dp:1" as 1-DP for replace-one neighbours and as 1-DP for add-remove ones; no
group-privacy conversion: neither reading is stated, so neither is derived from the other), each at level
α/2. The claim is refuted when either audit refutes it; by Bonferroni's inequality (the union bound:
P(A ∪ B) ≤ P(A) + P(B)) a claim that holds under both readings is refuted with probability at most
α/2 + α/2 = α. The verdict names the relation whose audit refuted it.

:func:`merge_relation_results` turns the two results into the one the user sees
(:attr:`audit.result.AuditResult.relations` keeps both).
"""

from __future__ import annotations

import dataclasses

from mechanisms.inputs.relation import RELATIONS, relation_words

from audit.result import AuditResult

__all__ = ["BOTH_RELATIONS_NOTE", "merge_relation_results", "run_both_relations", "split_alpha"]

#: What the result's notes say of the split.
BOTH_RELATIONS_NOTE = ("neither the claim nor the mechanism states a neighbouring relation, so the claim is audited "
                       "under both, each audit at α/2 (Bonferroni: a claim that holds under both is refuted with "
                       "probability at most α/2 + α/2 = α); --relation or [claim] relation audits one")


def split_alpha(alpha: float) -> float:
    """Each relation's level when both are audited: α/2 (Bonferroni's inequality over the two audits)."""
    return alpha / 2


def _tagged(result: AuditResult, relation: str) -> AuditResult:
    """``result`` with each of its claim tests labelled with the relation it ran under (in ``relation`` and after
    the claim's words, so that tables of the tests tell the two audits apart)."""
    return dataclasses.replace(result, cross_checks=[dataclasses.replace(c, relation=relation,
                                                                         claim=f"{c.claim} ({relation})")
                                                     for c in result.cross_checks])


def _summary(result: AuditResult, relation: str) -> dict:
    """What the JSON's ``relations`` entry says of one relation's audit."""
    return {"relation": relation, "relation_text": relation_words(relation), "alpha": result.alpha,
            "claim": None if result.claim is None else result.claim.get("label"),
            "claim_verdict": result.claim_verdict, "claim_alpha": dict(result.claim_alpha),
            "refuted_by": result.refuted_by, "verdict": result.verdict,
            "dp_epsilon_lower_bound_event": result.dp_epsilon_lower_bound_event, "samples": result.samples}


def run_both_relations(spec, audit_runner, run_one) -> AuditResult:
    """The audits of ``spec`` and of its companion (the other relation's), one after another in this process, merged
    (:func:`merge_relation_results`). Under ``device = "auto"`` their neural critics weigh the GPU's start together
    (:func:`audit.critic_cost.shared_gpu_start`), and where the first audit's critics started the GPU, the second's
    count its start as paid.

    ``audit_runner`` and ``run_one`` are :func:`audit.engine.audit_runner` and ``audit.engine._run_audit``, handed in
    by the engine, which calls this: importing them here would make the two modules import each other."""
    from audit.critic_cost import shared_gpu_start

    results = {}
    started = shared_gpu_start([spec, spec.companion], "both relations' audits' critic trainings repay it together")
    for one in (spec, spec.companion):
        with audit_runner(one) as runner:
            results[one.relation] = run_one(one, runner, gpu_started=started)
        if started is None and results[one.relation].device.startswith("cuda"):
            started = "the other relation's audit started it"
    return merge_relation_results(results)


def merge_relation_results(results: dict) -> AuditResult:
    """The result of a claim audited under both relations from each relation's result at α/2.

    Parameters
    ----------
    results : dict
        Relation name (``"replace-one"``, ``"add-remove"``) → its :class:`~audit.result.AuditResult`, each
        audited at level α/2 (:func:`split_alpha`).

    Returns
    -------
    AuditResult
        The refuting relation's result (the first in :data:`~mechanisms.inputs.relation.RELATIONS` order where
        both refute; replace-one's where neither does), with: ``alpha`` the sum of the two levels (α);
        ``claim_verdict`` "refuted" when either refuted; ``cross_checks`` both audits' tests, each labelled with
        its relation (``refuted_by`` names it); ``claim_alpha`` the chosen relation's shares as they are and the
        other's with the relation in the key ("event (add-remove)"), so that the shares sum to α; ``samples``,
        ``probe_calls`` and ``seconds`` the two audits' together; the notes of both; and ``relations`` (the
        relations tested, each one's level, the relations under which the claim was refuted, and each audit's
        summary).
    """
    order = [relation for relation in RELATIONS if relation in results]
    refuted = [relation for relation in order if results[relation].refuted]
    chosen = refuted[0] if refuted else order[0]
    others = [relation for relation in order if relation != chosen]
    main = results[chosen]
    claim_alpha, notes = dict(main.claim_alpha), list(main.notes)
    by_purpose, checks = dict(main.samples_by_purpose), list(_tagged(main, chosen).cross_checks)
    for relation in others:  # the other audit's entries, keyed or prefixed with its relation
        other = results[relation]
        claim_alpha.update({f"{test} ({relation})": share for test, share in other.claim_alpha.items()})
        notes += [f"{relation}: {note}" for note in other.notes if note not in main.notes]
        by_purpose.update({f"{purpose} ({relation})": runs for purpose, runs in other.samples_by_purpose.items()})
        checks += _tagged(other, relation).cross_checks
    relations = {"tested": order, "alpha_each": {r: results[r].alpha for r in order},
                 "split": "bonferroni", "refuted_under": refuted, "relation": chosen if refuted else None,
                 "results": [_summary(results[r], r) for r in order]}
    merged = dataclasses.replace(
        main, alpha=sum(results[r].alpha for r in order), claim_alpha=claim_alpha, cross_checks=checks,
        claim_verdict="refuted" if refuted else main.claim_verdict, notes=notes,
        samples=sum(results[r].samples for r in order), samples_by_purpose=by_purpose,
        probe_calls=sum(results[r].probe_calls for r in order),
        seconds=sum(results[r].seconds for r in order), relations=relations)
    if merged.claim is None:
        return merged
    # The headline's "neighbours: ..." names the refuting relation, or both where neither refuted.
    return dataclasses.replace(merged, claim={**merged.claim, "relation_text": merged.relations_words()})
