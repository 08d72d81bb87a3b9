"""Fixed result objects whose JSON form is pinned in ``tests/data/serialisation_golden.json``.

``tests/test_result_forms.py`` compares each object's whole JSON document with the golden one: a
key added, removed, renamed or moved, or a value changed, fails it. ``PYTHONPATH=$PWD python3
tests/serialisation_cases.py`` rewrites the file, which is only right when the JSON contract changes
on purpose (with a line in docs/changelog.md, and a raised ``audit.result.JSON_SCHEMA_VERSION`` where
a key is removed or renamed or its meaning changes: docs/reference/json-output.md). Every object
mixes numpy scalars, arrays, tuples, nested results and, where the class allows them,
non-finite numbers, so that the JSON of each kind of value is pinned.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).parent / "data" / "serialisation_golden.json"


def _audit_result():
    from audit.result import AuditResult, CrossCheck, EventTest, SecretEvidence

    event = EventTest(secret="record 0", description="critic > 0.31 on the select split", threshold=np.float64(0.31),
                      runs_per_input=4000, p_first=np.float64(0.52), p_second=0.21, p_first_lower=0.49,
                      p_second_upper=0.235, delta=0.0, epsilon_lower_bound=np.float64(0.734),
                      epsilon_lower_bound_at_delta=None, alpha=0.025, selection_runs=2000)
    evidence = [SecretEvidence("record 0", 0, "two-point", "certify", np.float32(0.25), 0.125,
                               per_slice=np.array([0.5, math.inf, 0.25])),
                SecretEvidence("record 1", 1, "two-point", "estimate-only", 0.0625, None)]
    checks = [CrossCheck("1-DP", 0.5, True, False, ["Theorem 1"], "bound 0.6 > budget 0.5", test="mi",
                         statistic=np.float64(0.6), threshold=0.5, alpha_spent=0.025),
              CrossCheck("1-DP", None, False, None, ("event",), "event test", test="event",
                         statistic=-math.inf, threshold=math.nan, alpha_spent=None, epsilon_prime=1.0)]
    return AuditResult(
        verdict="violation", notion="mi-dp", epsilon=0.5, alpha=0.05, lower_bound=np.float64(0.6),
        estimate=0.7, paper_statistic=math.inf, dp_epsilon_lower_bound_mi=1.2, dp_epsilon_lower_bound_event=0.734,
        per_record=evidence, cross_checks=checks, samples=np.int64(12000), seconds=3.5, seed=7,
        mechanism="laplace_sum", priors=["two-point", "uniform"], theta_statement="Θ = {two-point}",
        certified_secret="record 0", candidates_certified=2, event_test=event, slices=None,
        training_history={"train_loss": np.array([1.0, 0.5]), "epochs": (1, 2)}, notes=("a note",),
        claim={"label": "1-DP", "origin": "catalog", "implied_mi_budget": 0.5}, claim_verdict="refuted",
        claim_alpha={"mi": 0.025, "event": 0.025}, samples_by_purpose={"mi": 8000, "event_selection": 2000},
        probe_calls=2)


def _mi_estimate():
    from estimators.results import MIEstimate

    return MIEstimate("dv", np.float64(0.4), lower_bound=0.2, confidence=0.95, stderr=math.inf, n=np.int64(500),
                      seconds=1.25, sliced=True, slices=3, per_slice=np.array([0.1, 0.2, 0.3]),
                      per_slice_lower_bounds=np.array([-math.inf, 0.05, 0.1]), max_slice_lower_bound=0.1,
                      details={"epochs": np.int64(3), "curve": np.array([0.5, 0.25])}, notes=["ties broken"])


def cases() -> dict:
    """Name → (object, keyword arguments of its ``to_dict``)."""
    from audit.bounds.composition import compose_mi_pp
    from audit.bounds.lip import approximate_optimum, exact_optimum, lip_bounds
    from audit.bounds.pml import minimax_risk_bound
    from audit.bounds.pufferfish import (density_constants, kl_pp_levels, mipp_to_pp, utility_bounds)
    from mechanisms.calibration import calibrate
    from mechanisms.claims.claim import EventCheck, MIBudget
    from mechanisms.constructions.gaussian_capacity import gaussian_lmip_ci_bits
    from mechanisms.constructions.lip import leakage_geometry, lip_design
    from mechanisms.constructions.mean_estimation import mi_dp_mean
    from mechanisms.inputs.neighbouring_pair import NeighbouringPair
    from mechanisms.constructions.pml import kernel_leakage

    pxgy = np.array([[0.8, 0.3], [0.2, 0.7]])
    py = np.array([0.4, 0.6])
    kernel = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])
    samples = np.random.default_rng(3).normal(size=(400, 2))
    estimate = _mi_estimate()
    return {
        "audit_result": (_audit_result(), {}),
        "mi_estimate": (estimate, {}),
        "mi_estimate_details": (estimate, {"include_details": True}),
        "calibration": (calibrate("gaussian", "mi-dp", 0.5, dim=3, l2_sensitivity=1.0), {}),
        "calibration_laplace": (calibrate("laplace", "dp", 1.0, dim=2, l1_sensitivity=1.0), {}),
        "composition": (compose_mi_pp([0.1, 0.2], method="non-adaptive", output_supports=[4, 4]), {}),
        "composition_inf": (dataclasses.replace(compose_mi_pp([0.1, 0.2]), eta=math.inf), {}),
        "mixture_optimum": (exact_optimum(pxgy, py, 0.3), {}),
        "mixture_approximate": (approximate_optimum(pxgy, py, 0.3), {}),
        "lip_bounds": (lip_bounds(pxgy, py, [0.1, 0.3]), {}),
        "minimax_risk": (minimax_risk_bound(np.array([0.5, 1.0]), 0.1, 0.05, 100, target_risk=0.001), {}),
        "mipp_to_pp": (mipp_to_pp(0.2, 0.1), {}),
        "density_constants": (density_constants(np.array([[0.5, 0.25, 0.25], [0.25, 0.25, 0.5]])), {}),
        "kl_pp_levels": (kl_pp_levels(np.array([[0.5, 0.5], [0.25, 0.75]])), {}),
        "utility_bounds": (utility_bounds(0.3, h_f_given_g=0.1, h_g_given_f=0.2, h_g=0.6), {}),
        "mi_budget": (MIBudget(0.5, ("Theorem 1",)), {}),
        "mi_budget_none": (MIBudget(None, reason="no budget"), {}),
        "event_check": (EventCheck(True, 0.5, np.float64(0.2), 0.1, "E"), {}),
        "gaussian_capacity": (gaussian_lmip_ci_bits(1.0, 1.0), {}),
        "leakage_geometry": (leakage_geometry(pxgy, py), {}),
        "lip_design": (lip_design(pxgy, py, 0.1), {}),
        "mean_estimate": (mi_dp_mean(samples, 1.0, blocks=10, seed=5), {}),
        "neighbouring_pair": (NeighbouringPair(np.zeros((2, 1)), np.array([[0.0], [1.0]]), "record 1"), {}),
        "kernel_leakage": (kernel_leakage(kernel, 0.2), {}),
    }


def json_text(obj, **kwargs) -> str:
    """The JSON text of ``obj.to_dict(**kwargs)`` (non-finite numbers kept as ``Infinity``/``NaN``
    so that the golden file also pins which methods map them to ``null``)."""
    return json.dumps(obj.to_dict(**kwargs), indent=1, ensure_ascii=False)


def write_golden() -> None:
    GOLDEN.parent.mkdir(exist_ok=True)
    golden = {name: json_text(obj, **kwargs) for name, (obj, kwargs) in cases().items()}
    GOLDEN.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_golden()
