"""scan-type-one: the summary's counts, intervals and shares on recorded rows made here, and the look recorder."""

from __future__ import annotations

import pytest
from scipy import stats

import audit.engine as engine
from experiments import scan_type_one


def _case(scan, name, status, test="", certificate="odds-ratio"):
    return {"scan": scan, "case": name, "status": status, "case_alpha": 0.15, "refuting_test": test,
            "certificate": certificate}


def _look(scan, name, number, share, refuted=(), float_share=None, ran=("event",), float_certificate=""):
    shares = {"event": share} if float_share is None else {"event": share, "float": float_share}
    return {"scan": scan, "case": name, "look": number, "shares": shares, "refuted": list(refuted), "ran": list(ran),
            "float_certificate": float_certificate}


def _two_sided_clopper_pearson(k, n, confidence=0.95):
    """Clopper and Pearson (1934) from SciPy's Beta quantiles, written out here."""
    tail = (1 - confidence) / 2
    low = 0.0 if k == 0 else stats.beta.ppf(tail, k, n - k + 1)
    high = 1.0 if k == n else stats.beta.ppf(1 - tail, k + 1, n - k)
    return low, high


def test_summary_counts_scans_cases_and_looks_against_their_shares():
    scans, cases, looks = 10, [], []
    # Case A refuted in scans 0-5 (at look 2), case B in scans 5 and 6: 7 scans with a finding (scan 5 has both).
    for scan in range(scans):
        a_refutes, b_refutes = scan <= 5, scan in (5, 6)
        cases.append(_case(scan, "A", "finding" if a_refutes else "control", "event" if a_refutes else "",
                           "rate-ratio" if scan < 4 else "odds-ratio"))
        cases.append(_case(scan, "B", "finding" if b_refutes else "control", "event" if b_refutes else ""))
        for name, refutes in (("A", a_refutes), ("B", b_refutes)):
            looks += [_look(scan, name, 1, 0.001), _look(scan, name, 2, 0.149, ["event"] if refutes else [])]
    rows = scan_type_one.summarize(cases, looks, scans)
    by_name = {c: {k: rows[k][i] for k in rows} for i, c in enumerate(rows["component"])}
    expected = {"scans with a finding": (7, 10, 0.3), "A: finding": (6, 10, 0.15), "B: finding": (2, 10, 0.15),
                "A: event test, any look": (6, 10, 0.15), "A: look 1, event test": (0, 10, 0.001),
                "A: look 2, event test": (6, 10, 0.149),
                "A: event test by its rate-ratio certificate": (4, 4, 0.15),
                "A: event test by its odds-ratio certificate": (2, 6, 0.15)}
    for component, (k, n, share) in expected.items():
        row = by_name[component]
        low, high = _two_sided_clopper_pearson(k, n)
        assert (row["refuted"], row["of"]) == (k, n)
        assert row["alpha_share"] == pytest.approx(share)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-9)
        assert row["exceeds"] == (low > share)
    # 6 of 10 against 0.15: the interval's lower end (0.26) is above the share; 4 of 4 too; 2 of 10 is not.
    assert by_name["A: finding"]["exceeds"] and by_name["A: event test by its rate-ratio certificate"]["exceeds"]
    assert not by_name["B: finding"]["exceeds"]


def test_recorder_reads_each_look_and_puts_the_audit_back(monkeypatch):
    class Result:
        claim_alpha = {"event": 0.1, "mi": 0.05}
        refuted_by = [{"test": "event"}]

        class event_test:  # noqa: N801 - an attribute of the result, as AuditResult names it
            certificate = "odds-ratio"

        class float_event_test:  # noqa: N801
            certificate, runs_per_input = "rate-ratio", 600

    class Spec:
        name, alpha, event_runs = "case", 0.15, 978

    monkeypatch.setattr(engine, "_run_audit", lambda spec, runner, early=False, stop_at_refutation=False: Result())
    original, sink = engine._run_audit, []
    with scan_type_one.recorded_looks(sink):
        assert engine._run_audit(Spec(), None, early=True, stop_at_refutation=True) is not None
    assert engine._run_audit is original
    assert sink == [{"case": "case", "level": 0.15, "early": True, "event_runs": 978, "certificate": "odds-ratio",
                     "shares": {"event": 0.1, "mi": 0.05}, "ran": ["event", "float"], "float_certificate": "rate-ratio",
                     "float_runs": 600, "refuted": ["event"]}]
    with pytest.raises(ZeroDivisionError), scan_type_one.recorded_looks(sink):
        1 / 0
    assert engine._run_audit is original


def test_boundary_sizes_are_the_certificates_own_rejections_summed_over_every_outcome():
    """The page's exact sizes (SciPy's laws, conditional on the total) against miaudit's certificates run on every
    pair of counts of 30 runs per input, weighted by their joint law (binomial, or Poisson for the rate ratio's runs):
    the same sizes by another route, and each at most its level."""
    import math

    import numpy as np

    from audit.certificates.event_bounds import certified_epsilon, clopper_pearson
    from audit.certificates.odds_ratio import odds_ratio_epsilon, odds_ratio_lower_bound
    from audit.certificates.rate_ratio import poisson_run_mean, rate_ratio_epsilon, rate_ratio_lower_bound

    runs, level, epsilon = 30, 0.15, 1.0
    p_first, p_second = math.e / (1 + math.e), 1 / (1 + math.e)
    counts = np.arange(runs + 1)
    first, second = stats.binom.pmf(counts, runs, p_first), stats.binom.pmf(counts, runs, p_second)
    odds = pair = 0.0
    for x1 in counts:
        low = float(clopper_pearson(x1, runs, level / 2)[0])
        for x2 in counts:
            weight = first[x1] * second[x2]
            if odds_ratio_epsilon(odds_ratio_lower_bound(int(x1), runs, int(x2), runs, level)) > epsilon:
                odds += weight
            if certified_epsilon(low, float(clopper_pearson(x2, runs, level / 2)[1])) > epsilon:
                pair += weight
    mean = poisson_run_mean(runs)
    hits = np.arange(60)  # P(Poisson(λ·p) ≥ 60) < 1e-20 at λ < 30
    rate = sum(stats.poisson.pmf(x1, mean * p_first) * stats.poisson.pmf(x2, mean * p_second)
               for x1 in hits for x2 in hits
               if rate_ratio_epsilon(rate_ratio_lower_bound(int(x1), int(x2), level)) > epsilon)
    sizes = scan_type_one.boundary_sizes(runs, level, epsilon)
    assert sizes == pytest.approx({"odds-ratio": odds, "rate-ratio": rate, "clopper-pearson": pair}, abs=1e-9)
    assert all(0 < size <= level for size in sizes.values())


def test_summary_holds_the_float_bit_test_to_its_share_where_it_ran():
    """One case, 10 scans, float share 0.03 at look 2: the event test refutes in scans 0-1 (the float-bit test is then
    not run), the float-bit test in scans 2-4 of the 8 where it ran (odds ratio in scans 2-6, rate ratio in 7-9)."""
    scans, cases, looks = 10, [], []
    for scan in range(scans):
        test = "event" if scan < 2 else "float" if scan < 5 else ""
        cases.append(_case(scan, "A", "finding" if test else "control", test))
        looks += [_look(scan, "A", 1, 0.001),
                  _look(scan, "A", 2, 0.119, [test] if test else [], float_share=0.03,
                        ran=("event",) if scan < 2 else ("event", "float"),
                        float_certificate="" if scan < 2 else "odds-ratio" if scan < 7 else "rate-ratio")]
    rows = scan_type_one.summarize(cases, looks, scans)
    by_name = {c: {k: rows[k][i] for k in rows} for i, c in enumerate(rows["component"])}
    expected = {"A: float test, any look": (3, 10, 0.03), "A: look 2, float test": (3, 10, 0.03),
                "A: look 2, float test, where it ran": (3, 8, 0.03),
                "A: look 2, float test by its odds-ratio certificate": (3, 5, 0.03),
                "A: look 2, float test by its rate-ratio certificate": (0, 3, 0.03),
                "A: event test, any look": (2, 10, 0.12), "A: look 2, event test": (2, 10, 0.119)}
    for component, (k, n, share) in expected.items():
        row = by_name[component]
        low, high = _two_sided_clopper_pearson(k, n)
        assert (row["refuted"], row["of"], row["alpha_share"]) == (k, n, pytest.approx(share))
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-9)
        assert row["exceeds"] == (low > share)
    assert "A: look 2, event test, where it ran" not in by_name  # the event test ran at every look


@pytest.mark.integration
def test_float_grid_gives_the_float_bit_test_a_fifth_of_each_case_share(tmp_path, monkeypatch):
    """``--grid float`` (cut to one scan here): both cases of planted_lib._float_exact audited at α/2, and at every
    look, the early look included (at α/2 = 0.15 both tests refute a pair with one miss on its runs there), the
    float-bit test gets FLOAT_TEST_SHARE = 0.2 of the event test's part of the look's level, so the two shares add
    to the level."""
    from experiments.framework import read_table
    from experiments.registry import run

    monkeypatch.setitem(scan_type_one.GRIDS, "float", lambda: scan_type_one.Grid(1, scan_type_one.FLOAT_TARGET))
    run("scan-type-one", out_dir=tmp_path, grid="float", seed=0)
    cases, looks = read_table(tmp_path / "cases.csv"), read_table(tmp_path / "looks.csv")
    assert sorted(cases["case"]) == ["JitteredResponse", "jittered_count"] and set(cases["case_alpha"]) == {0.15}
    assert any(looks["early"])
    for case, level, shares in zip(looks["case"], looks["level"], looks["shares"]):
        parts = {test: float(share) for test, share in (part.split(" ") for part in shares.split("; "))}
        assert parts == pytest.approx({"event": 0.8 * level, "float": 0.2 * level}, rel=1e-3), case  # 4 digits
    components = read_table(tmp_path / "components.csv")
    float_rows = [c for c in components["component"] if "float test" in c]
    assert {c.split(":")[0] for c in float_rows} == {"JitteredResponse", "jittered_count"}
    assert set(read_table(tmp_path / "boundary.csv")["test"]) == {"event", "float"}


@pytest.mark.integration
def test_quick_run_counts_what_its_cases_hold(tmp_path):
    from experiments.framework import read_table
    from experiments.registry import run

    run("scan-type-one", out_dir=tmp_path, quick=True, seed=0)
    cases, components = read_table(tmp_path / "cases.csv"), read_table(tmp_path / "components.csv")
    assert len(cases["scan"]) == 2 * 12 and set(cases["case"]) == {"Response", "exact_count"}
    with_finding = {int(s) for s, status in zip(cases["scan"], cases["status"]) if status == "finding"}
    row = list(components["component"]).index("scans with a finding")
    assert int(components["refuted"][row]) == len(with_finding) and components["alpha_share"][row] == 0.3
    target = read_table(tmp_path / "target.csv")
    bound = int(stats.binom.ppf(0.999, 12, 0.3))
    assert int(target["bound"][0]) == bound and target["result"][0] == ("PASS" if len(with_finding) <= bound else "FAIL")
    assert set(read_table(tmp_path / "boundary.csv")["runs_per_input"]) == {978}
