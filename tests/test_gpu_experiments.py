"""Issue 42's GPU experiments on a CPU: the GPU-utilization sampler's parsing and findings, ``--grid`` (a named
size of an experiment), and ``device-choice``'s quick run. Their GPU runs are in docs/benchmarks/."""

import math

import numpy as np
import pytest

from estimators.validation import InputError
from experiments.framework import Experiment, ExperimentOutput, RunContext, Table, _command, new_figure, \
    run_experiment
from experiments.gpu_utilization import GpuUtilization, read_samples


def test_nvidia_smi_lines_are_read_and_a_line_cut_short_is_skipped(tmp_path):
    path = tmp_path / "samples.csv"
    path.write_text("2026/11/27 11:17:00.000, 40, 1000\n2026/11/27 11:17:00.500, 60, 1200\n"
                    "2026/11/27 11:17:01.000, 0, 1200\n2026/11/27 11:17:0")
    samples = read_samples(path)
    assert [u for _, u, _ in samples] == [40.0, 60.0, 0.0] and [m for _, _, m in samples] == [1000, 1200, 1200]
    assert samples[1][0] - samples[0][0] == pytest.approx(0.5)


def test_the_findings_give_the_mean_the_share_at_half_and_each_stages_mean():
    sampler = GpuUtilization()
    sampler.samples = [(100.0, 80.0, 10.0), (100.5, 40.0, 20.0), (101.0, 0.0, 30.0), (101.5, 60.0, 30.0)]
    sampler.source = "test"
    (finding,) = sampler.findings({"first": (99.0, 100.7), "second": (100.8, 102.0)})
    assert "mean 45.0%" in finding and "50% of samples at 50% or more" in finding and "up to 30 MiB" in finding
    assert "first 60%, second 30%" in finding
    assert sampler.columns()["seconds"] == [0.0, 0.5, 1.0, 1.5]
    assert math.isnan(GpuUtilization().mean()) and "no samples" in GpuUtilization().findings({})[0]


def test_overlapping_stages_are_said_to_overlap_and_each_has_its_mean_while_it_ran_alone():
    # Pipelined stages (--workers): a sample between 100.4 and 100.7 s falls in both spans.
    sampler = GpuUtilization()
    sampler.samples = [(100.0, 80.0, 10.0), (100.5, 40.0, 20.0), (101.0, 0.0, 30.0), (101.5, 60.0, 30.0)]
    sampler.source = "test"
    spans = {"first": (99.0, 100.7), "second": (100.4, 102.0), "third": (100.45, 100.6)}
    (finding,) = sampler.findings(spans)
    # first: samples 80, 40 (mean 60), alone 80; second: 40, 0, 60 (mean 33), alone 0, 60 (30); third: 40, never alone.
    assert "the stages overlap" in finding and "Mean by stage" not in finding
    assert "first 60% (alone 80%), second 33% (alone 30%), third 40% (alone no samples)" in finding


def _sized(context):
    return ExperimentOutput([Table("t", {"grid": [context.grid or "default"]})], new_figure()[0], {}, [])


@pytest.mark.integration  # the summary names the machine's processor (platform runs uname)
def test_a_grid_is_passed_on_and_recorded_in_the_command(tmp_path):
    sized = Experiment("sized", "d", "s", _sized, trains=True, grids=("small", "large"))
    result = run_experiment(sized, out_dir=tmp_path, grid="large", device="cpu", page=tmp_path / "page.md")
    assert Table("t", {"grid": ["large"]}).to_csv() == (tmp_path / "t.csv").read_text()
    assert "miaudit experiment sized --grid large --seed 0 --device cpu --page" in (tmp_path / "page.md").read_text()
    assert "grid `large`" in (tmp_path / "summary.md").read_text() and result.quick is False
    assert _command(sized, RunContext(quick=False, seed=1, device="cuda:0", grid="small")) == \
        "miaudit experiment sized --grid small --seed 1 --device cuda"


def test_a_grid_must_be_one_of_the_experiments_and_not_quick(tmp_path):
    sized = Experiment("sized", "d", "s", _sized, grids=("small",))
    with pytest.raises(InputError, match="'--grid' must be one of 'small'"):
        run_experiment(sized, out_dir=tmp_path, grid="huge")
    with pytest.raises(InputError, match="'--grid' and '--quick'"):
        run_experiment(sized, out_dir=tmp_path, grid="small", quick=True)
    with pytest.raises(InputError, match="has one size"):
        run_experiment(Experiment("plain", "d", "s", _sized), out_dir=tmp_path, grid="small")


def test_dpsgd_audit_names_its_grids_and_the_gpu_grid_trains_on_the_gpu():
    from experiments import dpsgd_audit
    from experiments.registry import get_experiment

    assert get_experiment("dpsgd-audit").grids == ("cpu", "gpu", "gpu-full")
    gpu, full = dpsgd_audit.GRIDS["gpu"](), dpsgd_audit.GRIDS["gpu-full"]()
    assert gpu.torch and gpu.hidden == 32 and max(gpu.dims) == 256 and gpu.runs < full.runs
    assert max(gpu.budgets) < max(full.budgets)


@pytest.mark.integration  # runs audits as commands
@pytest.mark.train
def test_device_choice_quick_on_the_cpu(tmp_path):
    from experiments.framework import read_table
    from experiments.registry import run

    result = run("device-choice", out_dir=tmp_path, quick=True, seed=0, device="cpu")
    costs = read_table(tmp_path / "device_step_costs.csv")
    assert list(costs["device"]) == ["cpu"] and np.all(costs["measured_pair_seconds"] >= 0)
    assert np.all(costs["small_step_seconds"] > 0) and list(costs["small_mode"]) == ["eager"]
    audits = read_table(tmp_path / "device_choice_audits.csv")
    assert list(audits["device"]) == ["cpu", "auto"] and set(audits["trained_on"]) == {"cpu"}
    assert audits["note"][1] == "device cpu (auto: no CUDA device)" and audits["auto_over_fastest"][1] > 0
    assert any("--device auto over the faster" in f for f in result.findings)
    # Without a GPU auto runs the CPU's configuration: its ratio is the spread between two timings of the same work.
    assert list(audits["configuration"]) == ["audit on cpu"] * 2 and list(audits["auto_chose_faster"]) == ["", "yes"]
    assert any(f.startswith("--device auto chose the faster device on 1 of 1 audits") for f in result.findings)
