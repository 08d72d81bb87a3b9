"""Refuted audits with and without one part of miaudit: the shared loop of the ablation studies
(``python -m experiments.delta_events``, ``python -m experiments.rare_events``).

Each study audits one mechanism on one neighbouring pair against one claim, on the same seeds, once
as miaudit audits it and once with a part of the audit switched off by a context manager, and
compares how many of the audits refute the claim.
"""

from __future__ import annotations

from audit import AuditSpec, run_audit


def refuted_counts_by_variant(mechanism, pair, claim, samples: int, seeds: int, variants) -> dict:
    """{variant name: how many of the audits on seeds 0, ..., ``seeds`` − 1 refute ``claim``}.

    Parameters
    ----------
    mechanism : callable
        The audited mechanism, ``mechanism(dbs, rng)``.
    pair : NeighbouringPair
        The pair audited: its two-point prior is the audit's one prior, and the pair its one pair.
    claim : Claim
        The claim audited.
    samples : int
        The audit's sample budget (``AuditSpec.samples``).
    seeds : int
        How many audits per variant, on seeds 0 to ``seeds`` − 1 (the same seeds for every variant).
    variants : sequence of (str, callable)
        Per variant its name and a context-manager factory under which its audits run
        (``contextlib.nullcontext`` for miaudit as it is).

    Returns
    -------
    dict
        Variant name -> refuted audits, in the order of ``variants``.
    """
    counts = {}
    for name, context in variants:
        with context():
            counts[name] = sum(run_audit(AuditSpec(mechanism=mechanism, priors=[pair.prior()], pairs=(pair,),
                                                   claim=claim, samples=samples, seed=seed)).claim_verdict == "refuted"
                               for seed in range(seeds))
    return counts
