"""Critics trained on CUDA are checked against the GPU's free memory for what lives there, and against the host's
for what stays on the host (estimators.memory). No GPU is needed: ``torch.cuda.is_available`` and the one CUDA
query, :func:`estimators.memory.gpu_free_memory`, are monkeypatched. Expected bytes are counted here by hand."""

import numpy as np
import pytest

from estimators import memory
from estimators.critic_config import CriticConfig
from estimators.validation import InputError

#: 4 critics in chunks of 2, hidden 8, batch 64 (shallow), on 1,000 samples of 5 input values.
CONFIG = CriticConfig(hidden=8, batch_size=64, max_critics_per_chunk=2)
CRITICS, SAMPLES, WIDTH = 4, 1000, 5
# Host: every critic's stacked float64 inputs.
HOST = CRITICS * SAMPLES * WIDTH * 8
# GPU: one chunk's float64 copy, float32 inputs and float32 splits (8 + 4 + 4 bytes a value), and the models:
# 5 copies of each critic's parameters (5·8 weights, 8 biases, 8 output weights, 1 bias, 5 linear terms: 62) and the
# larger of a step's activations (2 critics × 2 × 64 rows × 8) and a scoring pass's (2 × 1,000 rows × 8), float32.
GPU_FEATURES = 2 * SAMPLES * WIDTH * (8 + 4 + 4)
GPU_MODELS = 4 * (5 * 2 * 62 + max(2 * 2 * 64 * 8, 2 * SAMPLES * 8))
GPU = GPU_FEATURES + GPU_MODELS


@pytest.fixture
def gpu(monkeypatch):
    """A GPU present whose free memory the test sets (``gpu["free"]``)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    state = {"free": 2**62, "asked": []}

    def free(device):
        state["asked"].append(str(device))
        return state["free"]

    monkeypatch.setattr(memory, "gpu_free_memory", free)
    return state


def test_a_cuda_training_splits_its_count_between_host_and_gpu():
    host, on_gpu = memory.critic_memory_places(CRITICS, SAMPLES, WIDTH, CONFIG)
    assert host == {"critic features": HOST}
    assert on_gpu == {"critic features": GPU_FEATURES, "critic models": GPU_MODELS}
    whole = memory.critic_config_memory(CRITICS, SAMPLES, WIDTH, CONFIG)
    assert sum(host.values()) + sum(on_gpu.values()) == sum(whole.values())
    held_host, held_gpu = memory.critic_memory_places(CRITICS, SAMPLES, WIDTH, CONFIG, inputs_held=True)
    assert held_host == {"critic features": 0} and held_gpu == on_gpu


def test_on_cuda_the_gpu_parts_meet_the_gpu_s_free_memory_and_the_rest_the_host_s(gpu):
    # The host holds less than the whole count but enough for its share: accepted on CUDA, refused on the CPU.
    available = HOST + GPU - 1
    gpu["free"] = GPU
    assert memory.check_critic_memory(CRITICS, SAMPLES, WIDTH, CONFIG, available=available, device="cuda") == HOST + GPU
    assert gpu["asked"] == ["cuda"]
    with pytest.raises(InputError, match=r"of memory"):
        memory.check_critic_memory(CRITICS, SAMPLES, WIDTH, CONFIG, available=available)
    # One byte short on the GPU: refused naming the critic settings (a chunk of 2), the GPU and the CPU's way out.
    gpu["free"] = GPU - 1
    with pytest.raises(InputError) as refused:
        memory.check_critic_memory(CRITICS, SAMPLES, WIDTH, CONFIG, available=2**62, device="cuda")
    message = str(refused.value)
    assert message.startswith("argument 'critic' (hidden = 8") and "of GPU memory" in message
    assert f"only {memory.format_bytes(GPU - 1)} is available" in message and "device 'cpu'" in message
    # The host's share too large: refused as on the CPU, naming the samples, with the host's share only.
    gpu["free"] = 2**62
    with pytest.raises(InputError) as refused:
        memory.check_critic_memory(CRITICS, SAMPLES, WIDTH, CONFIG, available=HOST - 1, device="cuda")
    assert refused.value.args[0].startswith("arguments 'x' and 'y' (1000 samples)")
    assert f"at least {memory.format_bytes(HOST)} of memory" in str(refused.value)


def test_one_critic_short_of_gpu_memory_for_its_samples_names_them(gpu):
    one = CriticConfig(hidden=8, batch_size=64, max_critics_per_chunk=1)
    _, on_gpu = memory.critic_memory_places(1, 10**6, 50, one)
    assert on_gpu["critic features"] > on_gpu["critic models"]
    gpu["free"] = sum(on_gpu.values()) - 1
    with pytest.raises(InputError, match=r"^arguments 'x' and 'y' \(1000000 samples\).*GPU memory"):
        memory.check_critic_memory(1, 10**6, 50, one, available=2**62, device="cuda")


def test_fit_critics_on_cuda_is_refused_by_the_gpu_s_free_memory(gpu):
    from estimators.neural import fit_critics

    rng = np.random.default_rng(0)
    u, v = rng.normal(size=(CRITICS, SAMPLES, 2)), rng.normal(size=(CRITICS, SAMPLES, 3))
    gpu["free"] = GPU - 1  # the inputs are held already: the GPU's share is the whole check there
    with pytest.raises(InputError, match=r"^argument 'config' \(hidden = 8.*of GPU memory"):
        fit_critics(u, v, config=CONFIG, device="cuda")


def test_the_audit_s_critics_stay_on_the_cpu_under_auto_where_the_gpu_cannot_hold_them(gpu):
    """One record's critic (width n·k + 1) on the audit's samples, defaults otherwise: under auto the GPU is chosen
    (2,000 steps repay its start) unless its free memory is below the critic's GPU share and the store's copies of its
    sample; asked for cuda, refused."""
    import dataclasses

    from audit.audit_plan import plan_audit
    from audit.config.building import build_spec
    from audit.critic_cost import critic_device, critic_memory
    from estimators.critic_config import scoring_rows

    spec = build_spec({"mechanism": {"spec": "catalog:laplace_sum"}, "audit": {"mi_critic": "neural"}})
    plan = plan_audit(spec, [(prior, None) for prior in spec.priors])
    n, k = spec.priors[0].shape
    width, config, samples = k + 1 + (n - 1) * k, spec.critic, spec.samples
    h = config.hidden
    parameters = width * h + 2 * h + 1 + width
    activations = max(2 * min(config.batch_size, samples) * h, min(samples, scoring_rows(1, h)) * h)
    features, models = samples * width * 16, 4 * (5 * parameters + activations)
    # The audit's store keeps the MI sample's outputs (one number a run before any run) and the record's other
    # records w on the GPU while the critic trains, float64.
    kept = samples * (1 + (n - 1) * k) * 8
    need = features + models + kept
    gpu["free"] = need
    assert critic_device(spec, plan)[0].type == "cuda"
    assert critic_memory(spec, plan, "cuda") == {"critic features": samples * width * 8}
    gpu["free"] = need - 1
    device, note = critic_device(spec, plan)
    assert device.type == "cpu" and note.startswith("device cpu (auto: the GPU's free memory cannot hold the critics")
    asked = dataclasses.replace(spec, device="cuda")
    assert critic_device(asked, plan)[0].type == "cuda"  # as asked: the audit's memory check refuses it
    with pytest.raises(InputError) as refused:  # the models hold more than the inputs: the critic settings named
        critic_memory(asked, plan, "cuda")
    named = "argument 'critic' (hidden" if models > features else "argument 'samples' (--samples, [audit] samples)"
    assert refused.value.args[0].startswith(named) and "of GPU memory" in refused.value.args[0]


def test_the_audit_asks_the_gpu_s_free_memory_once_for_its_critics(gpu, monkeypatch):
    """Under auto the device choice checks the critics' GPU share; the audit's memory check that follows reuses
    that count (the host's share, the stacked float64 inputs) instead of asking the GPU again. Asked for cuda, the
    audit's check is the one that asks; where auto falls back to the CPU, the check counts the whole training."""
    import dataclasses

    import audit.critic_cost
    from audit.audit_plan import plan_audit
    from audit.config.building import build_spec
    from audit.critic_cost import checked_critic_device

    counted = []
    monkeypatch.setattr(audit.critic_cost, "check_audit_memory", lambda *a, critics, **k: counted.append(critics))
    spec = build_spec({"mechanism": {"spec": "catalog:laplace_sum"}, "audit": {"mi_critic": "neural"}})
    plan = plan_audit(spec, [(prior, None) for prior in spec.priors])
    n, k = spec.priors[0].shape
    host = {"critic features": spec.samples * (k + 1 + (n - 1) * k) * 8}  # one critic's stacked float64 inputs
    for device in ("auto", "cuda"):
        gpu["asked"].clear()
        assert checked_critic_device(dataclasses.replace(spec, device=device), plan, 1)[0].type == "cuda"
        assert gpu["asked"] == ["cuda"] and counted[-1] == host
    gpu["asked"].clear()
    gpu["free"] = 0
    assert checked_critic_device(spec, plan, 1)[0].type == "cpu"
    assert gpu["asked"] == ["cuda"] and sum(counted[-1].values()) > sum(host.values())  # all of it on the host
