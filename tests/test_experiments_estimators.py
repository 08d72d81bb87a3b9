"""Quick runs of the estimator benchmark and the studies estimator-accuracy and gpu-throughput.

Expected values come from independent computations here: MI by the determinant formula or by
numerical integration, the sliced truth by integrating over the law of θᵀφ, not from the
experiment modules. Timings are never asserted (the machine is shared).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, optimize

from experiments import benchmark_estimators
from experiments.benchmark_estimators import BenchmarkSettings, main as benchmark_main
from experiments.framework import read_table
from experiments.registry import run


def _gaussian_mi_by_determinants(dim: int, rho: float) -> float:
    """½ log(det Σ_X det Σ_Y / det Σ) of the task's joint covariance, built as a matrix."""
    eye = np.eye(dim)
    joint = np.block([[eye, rho * eye], [rho * eye, eye]])
    return 0.5 * (np.linalg.slogdet(eye)[1] * 2 - np.linalg.slogdet(joint)[1])


def _uniform_mi_by_quadrature(a: float) -> float:
    """h(Y) − h(Y | X) for Y = X + aV with the trapezoidal density integrated numerically."""
    def density(t):
        return min(t / a, 1.0, (1.0 + a - t) / a) if 0.0 < t < 1.0 + a else 0.0

    h_y = integrate.quad(lambda t: -density(t) * math.log(density(t)) if density(t) > 0 else 0.0,
                         0.0, 1.0 + a, points=[a, 1.0], limit=200)[0]
    return h_y - math.log(a)


def _sliced_gaussian_mi_by_quadrature(dim: int, rho: float) -> float:
    """E[−½ log(1 − ρ² t²)] with t = θᵀφ for independent uniform θ, φ on S^{d−1}.

    t has density ∝ (1 − t²)^{(d−3)/2} on (−1, 1) (the first coordinate of a uniform point
    on the sphere).
    """
    weight = lambda t: (1.0 - t * t) ** ((dim - 3) / 2.0)
    norm = integrate.quad(weight, -1.0, 1.0)[0]
    return integrate.quad(lambda t: -0.5 * math.log(1.0 - rho**2 * t * t) * weight(t), -1.0, 1.0)[0] / norm


def _independent_truth(family: str, dim: int, parameter: float) -> float:
    if family in ("gaussian", "heavy-tailed", "transformed"):
        return _gaussian_mi_by_determinants(dim, parameter)
    if family == "uniform":
        return _uniform_mi_by_quadrature(parameter)
    k = int(parameter)
    return -sum((1.0 / k) * math.log(1.0 / k) for _ in range(k))  # H of the uniform law on K values


@pytest.fixture(scope="module")
def accuracy_table(tmp_path_factory):
    out = tmp_path_factory.mktemp("accuracy")
    result = run("estimator-accuracy", out_dir=out, quick=True, seed=0, device="cpu")
    return read_table(result.csv_files[0]), result


@pytest.mark.integration
@pytest.mark.train
def test_accuracy_columns_and_finite_values(accuracy_table):
    table, result = accuracy_table
    assert set(table) >= {"task", "family", "estimator", "sliced", "n", "truth", "estimate", "abs_error",
                          "lower_bound", "slack", "seconds"}
    assert set(table["estimator"]) == {"dv", "mine", "nwj", "ksg", "gaussian"}
    assert set(table["family"]) == {"gaussian", "heavy-tailed", "transformed", "uniform", "discrete"}
    assert table["sliced"].any() and not table["sliced"].all()
    for key in ("truth", "estimate", "abs_error", "seconds"):
        assert np.all(np.isfinite(table[key])), key
    np.testing.assert_allclose(table["abs_error"], np.abs(table["estimate"] - table["truth"]))
    neural = np.isin(table["estimator"], ["dv", "mine", "nwj"])
    # Neural estimators certify a bound; classical ones do not.
    assert np.all(np.isfinite(table["lower_bound"][neural])) and np.all(np.isnan(table["lower_bound"][~neural]))
    np.testing.assert_allclose(table["slack"][neural], (table["truth_drawn_slices"] - table["lower_bound"])[neural])
    png = result.png_file
    assert open(png, "rb").read(4) == b"\x89PNG"


@pytest.mark.integration
@pytest.mark.train
def test_accuracy_truths_match_independent_computations(accuracy_table):
    table, _ = accuracy_table
    for i in np.flatnonzero(~table["sliced"]):
        expected = _independent_truth(table["family"][i], int(table["dim"][i]), table["parameter"][i])
        assert table["truth"][i] == pytest.approx(expected, rel=1e-6, abs=1e-9), table["task"][i]
    for i in np.flatnonzero(table["sliced"]):
        expected = _sliced_gaussian_mi_by_quadrature(int(table["dim"][i]), table["parameter"][i])
        # Monte Carlo over 200,000 slice pairs: standard error below 1e-3 nats.
        assert table["truth"][i] == pytest.approx(expected, abs=4e-3)


@pytest.mark.integration
@pytest.mark.train
def test_gaussian_estimator_is_accurate_on_gaussian_tasks(accuracy_table):
    table, _ = accuracy_table
    rows = np.flatnonzero((table["family"] == "gaussian") & (table["estimator"] == "gaussian") & ~table["sliced"])
    assert len(rows) >= 2
    for i in rows:
        n, d, rho = table["n"][i], table["dim"][i], table["parameter"][i]
        # Delta method: each canonical pair's −½ log(1 − r²) has standard deviation ≈ ρ/√n; the
        # plug-in bias of d canonical correlations is O(d²/n).
        assert table["abs_error"][i] <= 4.0 * math.sqrt(d) * rho / math.sqrt(n) + d * d / n


def test_rho_for_mi_inverts_the_gaussian_formula():
    from experiments.estimator_accuracy import rho_for_mi

    for mi in (0.1, 0.5, 1.0):
        root = optimize.brentq(lambda r: -0.5 * math.log(1 - r * r) - mi, 1e-9, 1 - 1e-12, xtol=1e-14)
        assert rho_for_mi(mi) == pytest.approx(root, rel=1e-9)


@pytest.mark.integration
@pytest.mark.train
def test_benchmark_quick_writes_json_and_markdown(tmp_path, capsys):
    assert benchmark_main(["--quick", "--device", "cpu", "--out", str(tmp_path), "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    payload = json.loads((tmp_path / "benchmark.json").read_text())
    report = (tmp_path / "benchmark.md").read_text()
    assert "| target | device | setting | measured | threshold | result |" in report and report in printed
    env = payload["environment"]
    assert env["devices"] == ["cpu"] and env["torch_threads"] >= 1 and env["torch"] and "cpu" in env["machine"]
    assert payload["quick"] is True and payload["unit"] == "nats"
    cpu = payload["results"]["cpu"]
    quick = benchmark_estimators.QUICK
    assert [row["critics"] for row in cpu["throughput"]] == list(quick.sweep_critics)
    for row in cpu["throughput"]:
        assert row["steps"] == quick.sweep_steps  # early stopping off: the work is fixed
        assert row["critic_steps_per_second"] == pytest.approx(row["critics"] * row["steps"] / row["seconds"])
        assert 0.0 <= row["mean_abs_error"] < 1.0
    assert len(cpu["dv_accuracy"]["rows"]) == len(quick.accuracy_mis) * quick.accuracy_seeds
    for row in cpu["dv_accuracy"]["rows"]:
        assert row["lower_bound"] < row["estimate"] + 1e-9
        assert row["abs_error"] == pytest.approx(abs(row["estimate"] - row["true_mi"]))
    loop = cpu["batched_vs_loop"]
    assert loop["speedup"] == pytest.approx(loop["loop_seconds"] / loop["batched_seconds"])
    assert [row["slices"] for row in cpu["sliced"]["rows"]] == list(quick.slice_counts)
    assert all(row["steps"] == quick.sliced_steps for row in cpu["sliced"]["rows"])
    assert len(cpu["sliced"]["per_slice_last"]) == quick.slice_counts[-1]
    sk = payload["sklearn_mutual_info_regression"]
    assert sk["slices"] == quick.sklearn_slices and math.isfinite(sk["abs_error"])
    targets = payload["targets"]
    assert len(targets) == 7 and all(isinstance(t["passed"], bool) for t in targets)
    for t in targets:
        assert t["passed"] == (t["measured"] >= t["threshold"] if t["comparison"] == ">=" else
                               t["measured"] <= t["threshold"])
        assert ("PASS" if t["passed"] else "FAIL") in report


TINY = BenchmarkSettings(accuracy_n=600, accuracy_mis=(0.5,), accuracy_seeds=1, sweep_critics=(1, 4), sweep_n=600,
                         sweep_steps=20, loop_critics=2, loop_n=600, loop_steps=20, sliced_n=600, sliced_dim=3,
                         sliced_rho=0.9, slice_counts=(2, 4), sliced_steps=20, sklearn_slices=2)


@pytest.mark.integration
@pytest.mark.train
def test_benchmark_registered_experiment_writes_tables(tmp_path, monkeypatch):
    monkeypatch.setattr(benchmark_estimators, "QUICK", TINY)
    result = run("estimator-benchmark", out_dir=tmp_path, quick=True, seed=0, device="cpu")
    names = sorted(p.split("/")[-1] for p in result.csv_files)
    assert names == ["batched_vs_loop.csv", "dv_accuracy.csv", "sliced.csv", "targets.csv", "throughput.csv"]
    targets = read_table(tmp_path / "targets.csv")
    assert len(targets["target"]) == 5 and set(targets["device"]) == {"cpu"}
    sliced = read_table(tmp_path / "sliced.csv")
    assert list(sliced["estimator"]) == ["dv", "dv", "sklearn-ksg", "dv-same-slices"]
    assert np.all(np.isfinite(sliced["truth_drawn_slices"])) and np.all(sliced["truth_drawn_slices"] > 0)
    assert any(f.startswith(("PASS", "FAIL")) for f in result.findings)


@pytest.mark.integration
@pytest.mark.train
def test_gpu_throughput_quick_table(tmp_path):
    from estimators.neural import SMALL_STEP_WORK
    from experiments.gpu_throughput import GRIDS

    result = run("gpu-throughput", out_dir=tmp_path, quick=True, seed=0, device="cpu")
    table = read_table(result.csv_files[0])
    grid = GRIDS["quick"]
    assert set(table) >= {"device", "critics", "batch_size", "steps", "seconds", "critic_steps_per_second",
                          "peak_memory_mb", "status"}
    assert len(table["critics"]) == len(grid.critics) * len(grid.batch_sizes)
    assert set(table["status"]) == {"ok"} and set(table["device"]) == {"cpu"}
    assert np.all(table["steps"] == grid.timed_steps) and np.all(table["seconds"] > 0)
    np.testing.assert_allclose(table["critic_steps_per_second"], table["critics"] * table["steps"] / table["seconds"])
    np.testing.assert_allclose(table["pair_evaluations_per_second"],
                               2 * table["critics"] * table["batch_size"] * table["steps"] / table["seconds"])
    # Small steps run on one thread, like fit_critics; GPU memory is reported only on CUDA.
    small = table["critics"] * table["batch_size"] * table["hidden"] < SMALL_STEP_WORK
    assert np.all(table["threads"][small] == 1) and np.all(np.isnan(table["peak_memory_mb"]))
    # The DV objective of a bounded critic lies in [lo - hi, hi - lo]; a trained one is finite.
    assert np.all(np.isfinite(table["final_objective_mean"])) and np.all(np.abs(table["final_objective_mean"]) < 11)
    assert any("critic-steps/s" in finding for finding in result.findings)
    # Against ceilings measured on the same device at the start of the run (issue 42 §3); no graphs on a CPU.
    assert set(table["mode"]) == {"eager"} and any(f.startswith("Ceilings measured on cpu") for f in result.findings)
    for rate, ceiling in (("bytes_per_second", "copy_roofline_fraction"), ("flops_per_second", "matmul_fraction")):
        assert np.all(table[rate] > 0) and np.all(np.isfinite(table[ceiling])) and np.all(table[ceiling] > 0)
        ceilings = table[rate] / table[ceiling]  # one measured ceiling per run
        np.testing.assert_allclose(ceilings, ceilings[0])
