"""A scan's α split, planned before any run: α is shared only by the cases that can refute within the budget.

**Why.** A scan audits each of its K cases at α/K (Bonferroni, :mod:`audit.scan.running`). A case whose
sequential audit has no look that can refute its claim within ``max_runs`` runs at that level (a claim at
ε = 8, where a refutation needs tens of thousands of runs even for outputs that never agree) is skipped at
its audit, its share unspent: it lowered every other case's share for nothing. Whether a case can refute is
known before any run: :func:`audit.gating.sequential.refutation_runs` computes it from the case's audit
spec alone (its claim, its pair, the run budget and the level), with the runs its schedule needs at the
least (no float-bit event test's runs, no probe's runs: an audit that plans those needs more, so a case
that cannot refute without them cannot with them).

**The rule** (:func:`plan_split`). Let R(a) be the cases that can refute at level a. The scan takes the
smallest m ≥ 1 with |R(α/m)| ≤ m (it exists: |R(α/K)| ≤ K), and audits the cases of S = R(α/m), each at
α/|S| ≥ α/m. Where some case of S cannot refute at α/|S| (whether a case can refute is nearly always
monotone in its level, but the early looks' sizes grow as the level does, so not provably), S shrinks to
the cases that can, at the new level, until every case of S can. The other cases make no run: each is
listed as skipped with the runs its smallest refuting look would need at α/m. With a monotone R the
cases of S are every case that can refute at α/K and more, since m ≤ K.

**Validity.** S is a function of the cases, ``alpha`` and ``max_runs`` alone (no run of any case is made
before it is fixed), and each case of S is audited at α/|S|: by the union bound the probability that any
of them refutes a claim its entry point meets is at most |S| · α/|S| = α, whatever the dependence between
them — the scan's statement is the Bonferroni one over the |S| cases audited. A case of S skipped at its
audit (its call raises; the float-bit test's runs do not fit) leaves its share unspent, as before; so does a
case whose audit spec cannot be built here (its call or its claim), which is kept in S for its audit to say why.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class SplitPlan:
    """The cases audited, each one's α, and the cases left out of the split with their reasons (module docstring)."""

    audited: list
    case_alpha: float
    left_out: list  # (case, reason) pairs: no run is made for them
    level: float  # α/m: the level the cases left out were found unable to refute at


def case_spec(case, alpha: float, seed: int = 0, timeout: float | None = None):
    """The audit spec of ``case`` at ``alpha``, as :func:`audit.scan.case_audit.audit_case` builds it (no call of the
    entry point made). Building the case's call runs the library's code (OpenDP's constructor builds the
    measurement), bounded by ``timeout`` seconds as the case's audit bounds it (None: no bound); a
    :class:`~mechanisms.errors.MechanismError` naming the entry point where it does not return in time."""
    from mechanisms.adapters.callables import PerDatabaseMechanism
    from mechanisms.calls.user_call import call_user_code
    from mechanisms.errors import MechanismWarning
    from mechanisms.outputs.encoding import OutputEncoder

    from audit.gating.assertions import claim_spec

    function = call_user_code(case.function, who=f"entry point {case.entry.qualified}", timeout=timeout,
                              where=" while its call was built to plan the scan's α split",
                              hint="(the scan's --timeout)")
    mechanism = PerDatabaseMechanism(function, case.entry.qualified, encoder=OutputEncoder())
    with warnings.catch_warnings():  # the audit records them on the case; here they say nothing new
        warnings.simplefilter("ignore", MechanismWarning)
        return claim_spec(mechanism, case.claim, pairs=[(case.pair.first, case.pair.second)], relation=case.relation,
                          alpha=alpha, seed=seed, name=case.entry.qualified)


def plan_split(cases, alpha: float, max_runs: int, runs_of=None, timeout: float | None = None) -> SplitPlan:
    """The α split of ``cases`` within ``max_runs`` runs each, or ``runs_of(case)`` (module docstring's rule).

    Parameters
    ----------
    cases : list of Case
        The scan's cases, listed before any run.
    alpha : float
        The scan's family-wise error.
    max_runs : int
        Mechanism runs per case at most.
    runs_of : callable, optional
        A case's own budget, where cases differ (:func:`audit.scan.running.case_runs`); each case is planned within
        its own, as it is audited. None: ``max_runs`` for all.
    timeout : float, optional
        Seconds building each case's call may take (:func:`case_spec`; the scan's ``timeout``); a case whose call is
        not built in time, or not at all, is planned as one that can refute, and its audit says why. None: no bound.

    Returns
    -------
    SplitPlan
        The cases audited (in their order), each at ``case_alpha`` = α/|audited|, and those left out.
    """
    from audit.gating.sequential import refutation_runs
    from audit.scan.case_audit import LOOK_FRACTION

    if not cases:
        return SplitPlan([], alpha, [], alpha)
    specs = []
    for case in cases:
        try:
            specs.append(case_spec(case, alpha / len(cases), timeout=timeout))
        except Exception:  # noqa: BLE001 - its audit says why (the call or the claim cannot be built): kept as it was
            specs.append(None)
    budgets = [max_runs if runs_of is None else runs_of(case) for case in cases]
    memo = {}

    def check(number: int, level: float) -> tuple:
        """(can refute at ``level``, runs its smallest refuting look needs) of case ``number``."""
        if specs[number] is None:  # not plannable here: audited, and skipped there with its reason
            return True, 0
        if (number, level) not in memo:
            memo[number, level] = refutation_runs(specs[number], budgets[number], alpha=level,
                                                  look_fraction=LOOK_FRACTION, float_runs=False)
        return memo[number, level]

    chosen, smallest = choose_split(len(cases), lambda numbers, level: [n for n in numbers if check(n, level)[0]],
                                    alpha)
    level = alpha / smallest
    taken = set(chosen)
    left_out = [(cases[n], f"cannot refute within its {budgets[n]} runs (--max-runs, else its family's max_runs): "
                           f"at the scan's α share α/{smallest} = {level:.3g} one look of its audit needs at least "
                           f"{check(n, level)[1]} mechanism runs; "
                           "listed before any run, it takes no share of α (audit.scan.planning)")
                for n in range(len(cases)) if n not in taken]
    return SplitPlan([cases[n] for n in chosen], alpha / max(len(chosen), 1), left_out, level)


def choose_split(count: int, refutable, alpha: float) -> tuple:
    """(the numbers of the cases audited, m) by the module docstring's rule, for ``count`` cases numbered 0, 1, …
    where ``refutable(numbers, level)`` lists those of ``numbers`` that can refute at ``level``: m is the smallest
    m ≥ 1 with |R(α/m)| ≤ m (found by bisection on m, |R(α/m)| falling as m grows), then the cases of R(α/m) are
    kept while each can refute at α over their number."""
    everyone = range(count)
    low, high = 1, max(count, 1)  # m = count always qualifies: no more than count cases can refute
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if len(refutable(everyone, alpha / middle)) <= middle else (middle + 1, high)
    chosen = list(refutable(everyone, alpha / low))
    while chosen:
        kept = list(refutable(chosen, alpha / len(chosen)))
        if kept == chosen:
            break
        chosen = kept
    return chosen, low
