"""The training-throughput benchmark (quick): every route timed, rates consistent with the times, and the CUDA rows
present exactly when a GPU is."""

import numpy as np
import pytest

from conftest import needs
from experiments.framework import read_table
from experiments.registry import run

pytestmark = [pytest.mark.integration, needs("opacus")]


def _run(tmp_path, device):
    run("training-throughput", out_dir=tmp_path, quick=True, seed=0, device=device)
    return read_table(tmp_path / "training_throughput.csv")


def test_quick_run_times_every_cpu_route(tmp_path):
    table = _run(tmp_path, "cpu")
    routes = set(table["route"])
    assert {"DPSGD (NumPy), logistic", "TorchDPSGD, logistic", "TorchDPSGD, MLP 32 hidden",
            "your training (Opacus 1.6, per run)", "one-run digits trainer (1000 canaries, T = 20)",
            "one-run digits trainer (1000 canaries, T = 20), seeds batched",
            "black-box search pilot (6 candidates, logistic)"} <= routes
    search = table["route"] == "black-box search pilot (6 candidates, logistic)"
    assert list(table["runs"][search]) == [2 * 1000 * 6]  # the quick pilot: 1000 runs per input per candidate
    assert set(table["device"]) == {"cpu"}
    np.testing.assert_allclose(table["runs_per_second"], table["runs"] / table["seconds"], rtol=1e-9)
    assert np.all(table["runs_per_second"] > 0)
    # The device-cost model's rate beside the batched DP-SGD rows only: runs / (runs·T·n·(a + b·D)) on the CPU,
    # from the H200's measured CPU rates at 16 records and T = 4 (logistic 199,748, the 32-unit MLP 41,085 runs/s).
    expected = {"DPSGD (NumPy), logistic": 199_748, "TorchDPSGD, logistic": 199_748,
                "TorchDPSGD, MLP 32 hidden": 41_085}
    for route, model in zip(table["route"], table["model_runs_per_second"]):
        if route in expected:
            assert model == pytest.approx(expected[route], rel=0.02)
        else:
            assert np.isnan(model)


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_quick_run_on_cuda_times_the_batched_torch_trainers(tmp_path):
    table = _run(tmp_path, "cuda")
    cuda = table["device"] == "cuda"
    assert set(table["route"][cuda]) == {"TorchDPSGD, logistic", "TorchDPSGD, MLP 32 hidden",
                                         "one-run digits trainer (1000 canaries, T = 20)",
                                         "one-run digits trainer (1000 canaries, T = 20), seeds batched",
                                         "black-box search pilot (6 candidates, logistic)"}
