"""``miaudit scan opendp``: the OpenDP profile's recipes, grid, claims and pairs, and a small real scan.

Expected values are computed here from the samplers' laws, independently of OpenDP's privacy maps: OpenDP's
Laplace on integers is the discrete Laplace, P(X = x) = (1 − q)/(1 + q) q^|x| with q = e^(−1/scale), so
P(X ≥ k) = q^k/(1 + q) for k ≥ 1 and 1/(1 + q) for k = 0; its randomized response keeps a bit with
probability p, ε = log(p/(1 − p)).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

pytest.importorskip("opendp")

from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE  # noqa: E402

from audit.scan.cases import EntryPoint, build_cases, discover  # noqa: E402
from audit.scan.profiles import profile_for  # noqa: E402
from audit.scan.profiles.base import Profile  # noqa: E402
from audit.scan.profiles.opendp import MEASUREMENTS, NOT_SCANNED, PIPELINES, OpenDPMeasurement  # noqa: E402


def _entry(module: str, name: str, family=None) -> EntryPoint:
    import importlib

    return EntryPoint(module, name, getattr(importlib.import_module(module), name), family or OpenDPMeasurement())


def _by_id(cases) -> dict:
    return {c.id: c for c in cases}


def _recipe(table: dict, name: str, label_start: str):
    return next(r for r in table[name] if r.label.startswith(label_start))


def _parameter(case_id: str, name: str) -> float:
    return float(re.search(rf"\b{name}=([0-9.e+-]+)", case_id).group(1))


def discrete_laplace_tail(k: int, scale: float) -> float:
    """P(X ≥ k) of the discrete Laplace of ``scale``."""
    q = math.exp(-1 / scale)
    return q ** k / (1 + q) if k >= 1 else 1 - discrete_laplace_tail(1 - k, scale)


def test_every_measurement_constructor_is_an_entry_point_or_skipped_with_its_reason():
    from opendp import measurements

    entries, _ = discover(profile_for("opendp"))
    names = {e.qualified: e for e in entries}
    constructors = [n for n in measurements.__all__ if n.startswith(("make_", "then_"))]
    assert {f"opendp.measurements.{n}" for n in constructors} <= set(names)
    assert {f"opendp.transformations.{n}" for n in PIPELINES} <= set(names)
    assert all(isinstance(e.family, OpenDPMeasurement) for e in entries)
    # then_*, the query engines, queryables and user measurements are listed as skipped, with why
    family = OpenDPMeasurement()
    for name in [n for n in constructors if n.startswith("then_") or n in NOT_SCANNED]:
        with pytest.raises(Exception) as caught:
            family.settings(getattr(measurements, name))
        assert str(caught.value)
    cases, unbuilt = build_cases([names["opendp.measurements.then_laplace"],
                                  names["opendp.measurements.make_user_measurement"]], (1.0,))
    assert not cases and [s.reason.split(":")[0] for s in unbuilt] == [
        "the chainable form of make_laplace (its input domain and metric are those of the transformation before it)",
        NOT_SCANNED["make_user_measurement"].split(":")[0]]
    assert {f"opendp.measurements.{n}" for n in MEASUREMENTS} <= set(names)


def test_the_noise_parameter_is_calibrated_through_the_privacy_map_and_the_claim_read_from_it():
    names = ("make_laplace", "make_gaussian", "make_randomized_response_bool")
    family = OpenDPMeasurement(measurements={"make_laplace": MEASUREMENTS["make_laplace"][1:2],
                                             "make_gaussian": MEASUREMENTS["make_gaussian"][:1],
                                             names[2]: MEASUREMENTS[names[2]][:1]})
    cases, unbuilt = build_cases([_entry("opendp.measurements", n, family) for n in names], (0.1, 1.0, 4.0))
    assert not unbuilt
    by_id = _by_id(cases)
    # discrete Laplace on integers, the pair 0 vs 1 (distance 1): scale = 1/ε, claim ε
    for scale, epsilon in ((10.0, 0.1), (1.0, 1.0), (0.25, 4.0)):
        case = by_id[f"opendp.measurements.make_laplace(input=atom_domain(T=int) · absolute_distance, scale={scale}) "
                     "/ ends"]
        assert case.claim == f"dp:{epsilon}" and case.relation == REPLACE_ONE
        np.testing.assert_array_equal(case.pair.first, [[0.0]])
        np.testing.assert_array_equal(case.pair.second, [[1.0]])
        assert case.source == "measurement(int(db[0, 0]))"
        assert case.setup == f"entry(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale={scale})"
    # Gaussian: zCDP at ρ = ε²/2, ρ = (Δ/σ)²/2 with Δ = 1
    gaussian = [c for c in cases if c.entry.name == "make_gaussian"]
    assert sorted(c.claim for c in gaussian) == ["zcdp:0.005", "zcdp:0.5", "zcdp:8.0"]
    for case in gaussian:
        rho = float(case.claim.split(":")[1])
        assert (1 / _parameter(case.id, "scale")) ** 2 / 2 == pytest.approx(rho)
    # randomized response: prob rounded to 3 digits where that still meets ε, the claim is log(p/(1 − p))
    responses = [c for c in cases if c.entry.name == "make_randomized_response_bool"]
    for case, epsilon in zip(responses, (0.1, 1.0, 4.0)):
        p = _parameter(case.id, "prob")
        assert len(repr(p)) <= 5 and float(case.claim.split(":")[1]) == pytest.approx(math.log(p / (1 - p)))
        assert 0.9 * epsilon < math.log(p / (1 - p)) <= epsilon


def test_a_pipeline_gets_replace_one_pairs_beyond_its_clamp_and_an_add_remove_pair_with_their_own_claims():
    recipe = _recipe(PIPELINES, "make_sum", "clamp(0, 10) >> sum >> laplace (int)")
    family = OpenDPMeasurement(pipelines={"make_sum": (recipe,)})
    cases, unbuilt = build_cases([_entry("opendp.transformations", "make_sum", family)], (1.0,))
    assert not unbuilt
    pairs = {c.pair.family: c for c in cases}
    assert set(pairs) == {"ends", "beyond", "removed"}
    # add/remove: one record of range 10 removed, scale 10 gives ε = 1 (d_in = 1); replace-one is d_in = 2
    assert pairs["removed"].claim == "dp:1.0" and pairs["removed"].relation == ADD_REMOVE
    assert pairs["ends"].claim == pairs["beyond"].claim == "dp:2.0"
    np.testing.assert_array_equal(pairs["ends"].pair.second[:, 0], [10, 0, 0])
    np.testing.assert_array_equal(pairs["beyond"].pair.second[:, 0], [110, 0, 0])  # ten widths past the clamp
    np.testing.assert_array_equal(pairs["removed"].pair.first[:, 0], [10, 0, 0])
    np.testing.assert_array_equal(pairs["removed"].pair.second[:, 0], [0, 0])
    setup = pairs["ends"].setup
    assert "(before := dp.t.make_clamp(" in setup and ">> entry(before.output_domain" in setup
    function = pairs["ends"].function()
    assert isinstance(function(np.array([[3.0], [4.0], [50.0]]), np.random.default_rng(0)), int)


def test_a_grid_point_or_pair_that_cannot_be_built_is_skipped_with_the_libraries_error():
    family = OpenDPMeasurement(pipelines={"make_count_by_categories": PIPELINES["make_count_by_categories"],
                                          "make_count_by": PIPELINES["make_count_by"]})
    entries = [_entry("opendp.transformations", n, family) for n in ("make_count_by_categories", "make_count_by")]
    cases, unbuilt = build_cases(entries, (4.0,))
    reasons = {s.what: s.reason for s in unbuilt}
    assert not any(">> gaussian" in w for w in reasons)  # built with L2 counts (MO=L2Distance[int])
    # the threshold at δ = 0.05, ε = 4 is below the L∞ distance 2 of a replaced record: that pair alone is skipped
    ends = next(r for w, r in reasons.items() if "make_count_by(" in w and w.endswith("/ ends"))
    assert "must not be smaller than l-infinity sensitivity 2" in ends
    assert any(c.entry.name == "make_count_by" and c.pair.family == "removed" and "threshold=1)" in c.id for c in cases)


def test_a_finding_of_an_opendp_case_reproduces_with_the_measurement_built_as_the_scan_built_it(tmp_path):
    from audit.scan.report import finding_files
    from audit.scan.case_audit import _described
    from audit.scan.running import ScanResult

    family = OpenDPMeasurement(measurements={"make_randomized_response": MEASUREMENTS["make_randomized_response"]})
    cases, _ = build_cases([_entry("opendp.measurements", "make_randomized_response", family)], (1.0,))
    case = next(c for c in cases if c.pair.family == "outside")
    outcome = dict(_described(case, 0), status="finding", alpha=0.05)
    result = ScanResult("opendp", "0.16.0", 0.05, 1, [outcome], [], {"max_runs": 100}, 1.0)
    files = finding_files(outcome, result)
    mechanism = files["mechanism.py"].decode()
    assert "import opendp.prelude as dp" in mechanism
    assert "\nmeasurement = entry(categories=[0, 1, 2], prob=" in mechanism
    namespace = {}
    exec(compile(mechanism, "mechanism.py", "exec"), namespace)  # noqa: S102 - the file the report writes
    assert namespace["mechanism"](np.array([[3.0]]), np.random.default_rng(0)) in (0, 1, 2)
    assert "measurement = entry(" in files["reproduce.py"].decode()


def test_a_small_opendp_scan_finds_the_threshold_bug_and_leaves_the_exact_samplers_unrefuted(monkeypatch):
    """OpenDP 0.16's Laplace threshold on integer counts (OpenDP issue #2922): its privacy map states
    δ = P(X ≥ T), but a key held once is released when 1 + X ≥ T, with probability P(X ≥ T − 1)."""
    from audit.scan import running

    family = OpenDPMeasurement(
        measurements={"make_laplace": MEASUREMENTS["make_laplace"][1:2],
                      "make_randomized_response_bool": MEASUREMENTS["make_randomized_response_bool"][:1],
                      "make_laplace_threshold": (_recipe(MEASUREMENTS, "make_laplace_threshold",
                                                         "map_domain(str → int)"),)},
        pipelines={})
    profile = Profile(name="opendp", modules=("opendp.measurements",), families=(family,), distribution="opendp")
    monkeypatch.setattr(running, "profile_for", lambda target: profile)
    # OpenDP's noise takes no seed. The Laplace and randomized-response controls are exactly at their claims, so each
    # becomes a finding with probability at most its α/4, and the finding's δ̲ exceeds the exact δ with probability at
    # most α/4: this test fails a correct miaudit with probability at most 3 × 0.001/4. Over 10 scans the controls certified ε ≤ 3.83 and
    # ≤ 3.74 (claims 4 and 3.999), the threshold=1 finding δ ≥ 0.666 (claimed 0.018, exact 0.982); the threshold=4
    # case (exact δ 6e-6 against the claimed 1.1e-7) cannot be found in 6,000 runs (δ̲ = −0.23 in every scan).
    result = running.scan("opendp", epsilons=(4.0,), alpha=0.001, max_runs=6000, timeout=30, seed=5, in_process=True)
    assert result.cases == 4 and not result.skipped_cases
    for outcome in result.outcomes:
        epsilon, *delta = (float(v) for v in outcome["claim"].split(":")[1:])
        if "make_laplace_threshold" in outcome["id"]:
            scale, threshold = _parameter(outcome["id"], "scale"), int(_parameter(outcome["id"], "threshold"))
            # key k0 (count 1) released on the second database only: δ ≥ P(1 + X ≥ T) − e^ε · 0
            exact = discrete_laplace_tail(threshold - 1, scale)
            assert delta[0] == pytest.approx(discrete_laplace_tail(threshold, scale))  # the map's off-by-one
            if outcome["status"] == "finding":
                assert exact > delta[0] and outcome["delta_lower_bound"] <= exact
        elif "make_laplace" in outcome["id"]:
            assert 1 / _parameter(outcome["id"], "scale") <= epsilon  # exact ε on 0 vs 1
        else:
            p = _parameter(outcome["id"], "prob")
            assert math.log(p / (1 - p)) <= epsilon
    findings = {o["id"] for o in result.findings}
    assert findings == {next(o["id"] for o in result.outcomes if "threshold=1)" in o["id"])}  # δ = 0.05's grid point
    assert all("own generator" in o["notes"][0] for o in result.outcomes)


def test_counts_by_category_with_gaussian_noise_are_built_with_l2_counts_and_audited():
    from audit.scan.case_audit import audit_case

    family = OpenDPMeasurement(pipelines={"make_count_by_categories": PIPELINES["make_count_by_categories"]})
    cases, unbuilt = build_cases([_entry("opendp.transformations", "make_count_by_categories", family)], (1.0,))
    gaussian = {c.pair.family: c for c in cases if ">> gaussian" in c.id}
    assert not unbuilt and set(gaussian) == {"ends", "beyond", "removed"}
    assert "MO=dp.L2Distance[int]" in gaussian["ends"].setup
    # ρ = ε²/2 = 0.5 at d_in = 1 (one record added or removed moves one count by 1: L2 distance Δ = 1, and the
    # Gaussian mechanism is Δ²/(2σ²)-zCDP, Bun and Steinke 2016, Proposition 1.6),
    # so σ = 1 at ε = 1; read back from the calibrated scale
    assert gaussian["removed"].settings["scale"] == pytest.approx(1.0, rel=1e-3)
    outcome = audit_case(gaussian["ends"], alpha=0.05, max_runs=1500, timeout=30, seed=0)
    assert outcome["status"] in ("control", "finding"), outcome.get("reason")


def test_the_gaussian_threshold_is_claimed_as_approximate_dp_and_audited():
    """make_gaussian_threshold's map gives approximate zCDP (ρ, δ): the case claims (ε′, δ + 10⁻⁶)-DP, ε′ the inf over
    α > 1 of αρ + ln(1 − 1/α) + (ln 10⁶ − ln α)/(α − 1) (Canonne, Kamath and Steinke 2020, Corollary 13 solved for
    ε at δ′ = 10⁻⁶), here on a dense grid of α, below Bun and Steinke 2016 Proposition 1.3's ρ + 2√(ρ ln 10⁶)."""
    from audit.scan.case_audit import audit_case

    family = OpenDPMeasurement(measurements={"make_gaussian_threshold": MEASUREMENTS["make_gaussian_threshold"]})
    cases, unbuilt = build_cases([_entry("opendp.measurements", "make_gaussian_threshold", family)], (0.1,))
    assert not unbuilt and len(cases) == 2 and {c.pair.family for c in cases} == {"absent"}
    for case in cases:
        measurement = eval(case.setup, {"entry": case.entry.obj, **_prelude()})  # noqa: S307 - the recipe's source
        rho, delta = (float(v) for v in measurement.map((1, 1.0, 1.0)))
        assert rho <= 0.005 + 1e-12  # calibrated to ρ = ε²/2 at ε = 0.1: a claimed ε of 0.53 a short audit can test
        epsilon, claimed_delta = (float(v) for v in case.claim.split(":")[1:])
        order = 1 + np.logspace(-6, 6, 200_001)
        grid = order * rho + np.log1p(-1 / order) + (math.log(1e6) - np.log(order)) / (order - 1)
        assert epsilon == pytest.approx(float(grid.min()), rel=1e-6)
        assert epsilon < rho + 2 * math.sqrt(rho * math.log(1e6))
        assert claimed_delta == pytest.approx(delta + 1e-6) and case.relation == REPLACE_ONE
    small = min(cases, key=lambda c: float(c.claim.split(":")[2]))
    outcome = audit_case(small, alpha=0.05, max_runs=2500, timeout=30, seed=0)
    assert outcome["status"] == "control", outcome.get("reason")


def _prelude() -> dict:
    namespace = {}
    exec('import opendp.prelude as dp\ndp.enable_features("contrib")', namespace)  # noqa: S102 - the profile's imports
    return namespace


def test_count_by_calibrated_at_a_replaced_records_distance_gets_its_ends_pair_at_every_grid_point():
    """Calibrated at d_in = 1 the threshold at ε = 4, δ = 0.05 is 1, below a replaced record's L∞ distance 2, and its
    ``ends`` pair has no claim; the recipe calibrated at d_in = 2 gives that pair a claim at every grid point."""
    from audit.scan.case_audit import audit_case

    recipe = _recipe(PIPELINES, "make_count_by", "count_by >> laplace_threshold (calibrated at d_in = 2)")
    family = OpenDPMeasurement(pipelines={"make_count_by": (recipe,)})
    cases, unbuilt = build_cases([_entry("opendp.transformations", "make_count_by", family)], (0.1, 1.0, 4.0))
    assert not unbuilt and len(cases) == 6 and {c.pair.family for c in cases} == {"ends"}
    for case in cases:
        epsilon, delta = (float(v) for v in case.claim.split(":")[1:])
        scale, threshold = _parameter(case.id, "scale"), int(_parameter(case.id, "threshold"))
        assert threshold >= 2 and case.relation == REPLACE_ONE
        # a replaced record moves two keys' counts by 1 each: ε = 2/scale (L1 distance 2), and key 1 (count 1, absent
        # from the first database) is released with probability P(1 + X ≥ T) = P(X ≥ T − 1)
        assert epsilon == pytest.approx(2 / scale)
        assert delta >= discrete_laplace_tail(threshold, scale)
    case = next(c for c in cases if "threshold=3)" in c.id)
    outcome = audit_case(case, alpha=0.05, max_runs=1500, timeout=30, seed=0)
    assert outcome["status"] in ("control", "finding"), outcome.get("reason")
