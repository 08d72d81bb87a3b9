"""The scan's α split planned before any run (audit.scan.planning): the cases that cannot refute within the run
budget at their share are left out of it, and the rest share α."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from audit.scan.case_audit import audit_case
from audit.scan.cases import build_cases, discover
from audit.scan.planning import choose_split
from audit.scan.profiles import profile_for
from audit.scan.running import scan

import separated_bounds as separated

TESTS = Path(__file__).resolve().parent


def _linear_rule(thresholds, alpha):
    """The split by the rule written out directly: m from 1 upward until no more than m cases refute at α/m (a case
    refutes at a level at or above its threshold), then shrunk until each kept case refutes at α over their number."""
    for m in range(1, len(thresholds) + 1):
        kept = [n for n, t in enumerate(thresholds) if t <= alpha / m]
        if len(kept) <= m:
            break
    while kept and not all(thresholds[n] <= alpha / len(kept) for n in kept):
        kept = [n for n in kept if thresholds[n] <= alpha / len(kept)]
    return kept, m


@pytest.mark.parametrize("seed", range(40))
def test_the_split_rule_matches_its_statement_and_spends_at_most_alpha(seed):
    rng = np.random.default_rng(seed)
    count, alpha = int(rng.integers(1, 60)), 0.05
    # Each case's smallest level it can refute at: many never (inf), some only with a large share.
    thresholds = [math.inf if rng.random() < 0.3 else alpha / float(rng.integers(1, 2 * count + 1))
                  for _ in range(count)]
    calls = []

    def refutable(numbers, level):
        calls.append(level)
        return [n for n in numbers if thresholds[n] <= level]

    chosen, m = choose_split(count, refutable, alpha)
    expected, expected_m = _linear_rule(thresholds, alpha)
    assert (chosen, m) == (expected, expected_m)
    assert all(thresholds[n] <= alpha / len(chosen) for n in chosen)  # each kept case can refute at its share
    assert len(chosen) * (alpha / max(len(chosen), 1)) <= alpha + 1e-15  # Bonferroni over the cases kept
    # every case that can refute at the plain split α/K is kept
    assert {n for n, t in enumerate(thresholds) if t <= alpha / count} <= set(chosen)
    assert len(calls) <= math.ceil(math.log2(count)) + 3  # bisection, not a pass per m


def test_a_scan_leaves_out_the_cases_that_cannot_refute_and_splits_alpha_over_the_rest(tmp_path):
    sys.path.insert(0, str(TESTS))
    try:
        epsilons, max_runs, alpha = (1.0, 10.0), 3000, 0.05
        cases, _ = build_cases(discover(profile_for("planted_lib._exact"))[0], epsilons)
        small = [c for c in cases if c.settings["epsilon"] == 1.0]
        large = [c for c in cases if c.settings["epsilon"] == 10.0]
        assert small and large
        # A claim at ε = 10 is out of reach of the event test within the budget even when the outputs never agree,
        # whatever share a ≤ α it gets: at max_runs runs per input (more than it makes) and a = α, the best outcome
        # (all hits against none) certifies less than 10 by every certificate it may use (tests/separated_bounds.py).
        assert max(separated.cp_epsilon(max_runs, alpha, s) for s in separated.SHARES) < 10.0
        assert max(separated.odds_epsilon(max_runs, alpha), separated.rate_epsilon(max_runs, alpha)) < 10.0
        # ... and its audit, at the plain split's share, is indeed skipped for it, before any run of its looks
        outcome = audit_case(large[0], alpha=alpha / len(cases), max_runs=max_runs, timeout=30, seed=0)
        assert outcome["status"] == "skipped" and "max_runs" in outcome["reason"]
        result = scan("planted_lib._exact", epsilons=epsilons, alpha=alpha, max_runs=max_runs, timeout=30, seed=1,
                      in_process=True)
    finally:
        sys.path.remove(str(TESTS))
    assert result.cases == len(small)
    audited = [o for o in result.outcomes if o["status"] != "skipped"]
    assert audited and all(o["alpha"] == pytest.approx(alpha / len(small)) for o in audited)
    left = [row for row in result.skipped
            if "cannot refute within its 3000 runs (--max-runs, else its family's max_runs)" in row["reason"]]
    assert sorted(row["what"] for row in left) == sorted(c.id for c in large)
    assert result.settings["left_out_of_split"] == len(large)
    assert f"{len(large)} more cannot refute within the run budget" in result.statement()


def test_a_family_budget_is_planned_and_audited_for_its_cases_alone(tmp_path):
    """A family's own ``max_runs`` (diffprivlib's Bingham) is each of its cases' budget where the scan is given no
    --max-runs: the plan counts a case that can refute within its own budget only (run-free: no case is audited)."""
    from dataclasses import replace

    from audit.scan.planning import plan_split
    from audit.scan.report import reproduce_command
    from audit.scan.running import case_runs

    sys.path.insert(0, str(TESTS))
    try:
        epsilons, alpha = (1.0, 10.0), 0.05
        cases, _ = build_cases(discover(profile_for("planted_lib._exact"))[0], epsilons)
        large = [c.id for c in cases if c.settings["epsilon"] == 10.0]
        # ε = 10 is out of reach within 3,000 runs (the test above) and within reach of 10^7
        runs_of = lambda case: 10**7 if case.settings["epsilon"] == 10.0 else 3000  # noqa: E731
        plain, budgeted = plan_split(cases, alpha, 3000), plan_split(cases, alpha, 3000, runs_of)
    finally:
        sys.path.remove(str(TESTS))
    assert sorted(case.id for case, _ in plain.left_out) == sorted(large)
    assert not budgeted.left_out and len(budgeted.audited) == len(cases)
    assert budgeted.case_alpha == pytest.approx(alpha / len(cases))
    # the budget rule: --max-runs where given, else the family's, else the profile's default
    case = cases[0]
    family = replace(case.entry.family, max_runs=60000)
    own = replace(case, entry=replace(case.entry, family=family))
    assert (case_runs(case, None, 6000), case_runs(own, None, 6000), case_runs(own, 2000, 6000)) == (6000, 60000, 2000)
    # a finding's reproduction runs within its case's own budget
    outcome = {"claim": "dp:1.0", "relation": "replace-one", "alpha": 0.000204, "seed": 7, "max_runs": 60000}
    assert "--max-runs 60000 " in reproduce_command(outcome, 6000)
    older = {key: value for key, value in outcome.items() if key != "max_runs"}  # a state file from before
    assert "--max-runs 6000 " in reproduce_command(older, 6000)


def test_building_a_case_call_to_plan_the_split_is_bounded_by_the_timeout():
    """Planning builds each case's call (the family's setup runs the library's code: OpenDP builds its measurement):
    a build that does not return within the scan's timeout leaves the case planned as one that can refute (its audit
    says why), and the plan returns instead of waiting on it."""
    import time
    from dataclasses import replace

    from audit.scan.planning import case_spec, plan_split
    from mechanisms.errors import MechanismError

    sys.path.insert(0, str(TESTS))
    try:
        cases, _ = build_cases(discover(profile_for("planted_lib._exact"))[0], (1.0,))
    finally:
        sys.path.remove(str(TESTS))
    hanging = replace(cases[0], setup="__import__('time').sleep(60)")
    with pytest.raises(MechanismError, match=r"entry point .* while its call was built to plan the scan's α split"):
        case_spec(hanging, 0.05, timeout=0.2)
    started = time.perf_counter()
    plan = plan_split([hanging, *cases[1:]], 0.05, 3000, timeout=0.2)
    assert time.perf_counter() - started < 30  # the build sleeps 60 s
    # the unbuilt case counts among those that can refute: α is shared by all the cases, as without it
    assert [case.id for case in plan.audited] == [case.id for case in cases]
    assert plan.case_alpha == pytest.approx(0.05 / len(cases))
