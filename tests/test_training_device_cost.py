"""Where ``--device auto`` trains a catalog DP-SGD entry (mechanisms.training.device_cost, issue 42 §2).

The model's expected values are computed here from the measurements it was fitted to (issue 42's H100 report:
TorchDPSGD at 6.6e5 logistic and 2.9e5 32-unit MLP runs/s on the GPU, 4× and 19× the same machine's CPU, at 16
records, T = 4) and from the break-even of two straight lines, not from the module's constants.
"""

import pytest

from estimators.device import GPU_START_S
from mechanisms.training.device_cost import choose_training_device, predicted_dpsgd_seconds
from mechanisms.training.dpsgd import DPSGD
from mechanisms.training.torch_dpsgd import TorchDPSGD, trainer_for_device

REPORT = {  # (parameters D, GPU runs/s, CPU runs/s) at 16 records and 4 steps
    "logistic": (3, 6.6e5, 6.6e5 / 4),
    "mlp-32": (129, 2.9e5, 2.9e5 / 19),
}


@pytest.mark.parametrize("model", sorted(REPORT))
def test_the_model_reproduces_the_measured_runs_per_second(model):
    parameters, gpu_rate, cpu_rate = REPORT[model]
    runs = 10**6
    size = dict(runs=runs, steps=4, records=16, parameters=parameters)
    assert predicted_dpsgd_seconds("cpu", **size) == pytest.approx(runs / cpu_rate, rel=0.02)
    assert predicted_dpsgd_seconds("cuda", **size) - GPU_START_S == pytest.approx(runs / gpu_rate, rel=0.02)


def test_the_training_cost_grows_with_steps_and_records_in_proportion():
    one = predicted_dpsgd_seconds("cpu", runs=1000, steps=4, records=16, parameters=3)
    assert predicted_dpsgd_seconds("cpu", runs=1000, steps=8, records=32, parameters=3) == pytest.approx(4 * one)
    assert predicted_dpsgd_seconds("cpu", runs=0, steps=4, records=16, parameters=3) == 0.0
    assert predicted_dpsgd_seconds("cuda", runs=0, steps=4, records=16, parameters=3) == GPU_START_S


def test_auto_takes_the_gpu_exactly_past_the_break_even_of_the_measured_rates():
    parameters, gpu_rate, cpu_rate = REPORT["logistic"]
    # Per run at 16 records and T = 4: 1/rate on each device; the GPU's start pays off past start / (difference).
    break_even = GPU_START_S / (1 / cpu_rate - 1 / gpu_rate)
    assert 150_000 < break_even < 300_000
    size = dict(steps=4, records=16, parameters=parameters)
    below, why = choose_training_device(runs=int(0.95 * break_even), cuda_available=True, **size)
    above, _ = choose_training_device(runs=int(1.05 * break_even), cuda_available=True, **size)
    assert (below, above) == ("cpu", "cuda")
    assert "on the CPU" in why and "on the GPU" in why
    assert choose_training_device(runs=10**9, cuda_available=False, **size) == ("cpu", "no CUDA device")


def test_trainer_for_device_keeps_the_numpy_trainer_unless_the_gpu_gains():
    mechanism = DPSGD(16, 2, 1.0, steps=4, release="gradient_trace")
    assert trainer_for_device(mechanism, "auto", 10**7, cuda_available=False) == (mechanism, None)
    small, note = trainer_for_device(mechanism, None, 60_000, cuda_available=True)
    assert small is mechanism and "NumPy DP-SGD on the CPU" in note and "60,000 runs" in note
    large, note = trainer_for_device(mechanism, "auto", 10**6, cuda_available=True)
    assert isinstance(large, TorchDPSGD) and large.device == "cuda" and "--device auto" in note
    asked, note = trainer_for_device(mechanism, "cpu", 10, cuda_available=False)  # asked for: taken as given
    assert isinstance(asked, TorchDPSGD) and asked.device == "cpu" and "asked for" in note


def test_a_negative_run_count_is_named():
    from estimators.validation import InputError

    with pytest.raises(InputError, match="argument 'runs'"):
        predicted_dpsgd_seconds("cpu", runs=-1, steps=4, records=16, parameters=3)


def test_an_audit_weighs_its_samples_and_event_runs(monkeypatch):
    """``build_spec`` passes the audit's runs: samples, and for a DP claim both inputs' event runs (a stand-in GPU)."""
    import torch

    from audit.config.building import build_spec

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    entry = {"spec": "catalog:dpsgd_s1_q1_t4"}
    default = build_spec({"mechanism": entry, "audit": {}})  # a DP claim: 20,000 + 2 × 20,000 runs
    assert type(default.mechanism) is DPSGD
    assert any("60,000 runs × 4 steps × 16 records" in n for n in default.notes)
    # 100,000 samples and as many event runs per input: 300,000 runs, past the break-even; fewer event runs: not.
    assert isinstance(build_spec({"mechanism": entry, "audit": {"samples": 100_000}}).mechanism, TorchDPSGD)
    fewer = build_spec({"mechanism": entry, "audit": {"samples": 100_000, "event_runs": 10_000}})
    assert type(fewer.mechanism) is DPSGD and any("120,000 runs" in n for n in fewer.notes)
