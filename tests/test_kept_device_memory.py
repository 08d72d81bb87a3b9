"""The critics' GPU memory check counts the audit's store of device copies (estimators.resident): the bytes it keeps
on the device now and those the audit's critics add to it (audit.critic_cost.kept_blocks), up to its cap. No GPU is
needed: ``torch.cuda.is_available`` and the one CUDA query, :func:`estimators.memory.gpu_free_memory`, are
monkeypatched, and the store's size is faked. Expected bytes are counted here by hand."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from estimators import memory, resident
from estimators.critic_config import CriticConfig
from estimators.validation import InputError

#: 4 critics in chunks of 2, hidden 8, batch 64 (shallow), on 1,000 samples of 5 input values.
CONFIG = CriticConfig(hidden=8, batch_size=64, max_critics_per_chunk=2)
CRITICS, SAMPLES, WIDTH = 4, 1000, 5
# One chunk's float64, float32 and float32 split copies (8 + 4 + 4 bytes a value); the models: 5 copies of each
# critic's 62 parameters (5·8 + 8 + 8 + 1 + 5) and the larger of a step's and a scoring pass's activations, float32.
GPU = 2 * SAMPLES * WIDTH * 16 + 4 * (5 * 2 * 62 + max(2 * 2 * 64 * 8, 2 * SAMPLES * 8))


@pytest.fixture
def gpu(monkeypatch):
    """A GPU present whose free memory the test sets (``gpu["free"]``), device 0 the current one."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    state = {"free": 2**62}
    monkeypatch.setattr(memory, "gpu_free_memory", lambda device: state["free"])
    return state


def test_the_store_says_what_it_keeps_on_a_device_and_what_more_it_would_keep():
    cap = 10_000
    first, second = np.arange(500, dtype=np.float64), np.arange(300, dtype=np.float32)  # 4,000 and 1,200 bytes
    assert resident.kept_device_bytes("cpu", 20_000) == (0, 20_000)  # no store entered: a fresh one's room
    assert resident.kept_device_bytes("cpu", 2**40) == (0, resident.RESIDENT_BYTES)
    with resident.keep_on_device(max_bytes=cap) as store:
        store.tensor(first, "cpu")
        store.tensor(second, "cpu")
        assert resident.kept_device_bytes("cpu", 1_000) == (5_200, 1_000)
        assert resident.kept_device_bytes("cpu", 9_000) == (5_200, cap - 5_200)  # up to the cap
        assert resident.kept_device_bytes("meta", 1_000) == (0, 1_000)  # another device keeps none of them
        del first  # a freed block's copy goes with it
        assert resident.kept_device_bytes("cpu", 0) == (1_200, 0)


def test_the_gpu_check_counts_the_store_s_copies_kept_and_to_come(gpu, monkeypatch):
    kept, adding = 3_000_000, 2_000_000
    monkeypatch.setattr(memory, "kept_device_bytes", lambda device, more: (kept, min(more, adding)))
    # The driver's free bytes no longer hold the kept copies: the training and the copies to come must fit in them.
    gpu["free"] = GPU + adding
    assert memory.check_gpu_critic_memory(CRITICS, SAMPLES, WIDTH, CONFIG, "cuda",
                                          kept_adding=adding) == GPU + kept + adding
    gpu["free"] = GPU + adding - 1
    with pytest.raises(InputError) as refused:
        memory.check_gpu_critic_memory(CRITICS, SAMPLES, WIDTH, CONFIG, "cuda", kept_adding=adding)
    message = str(refused.value)
    assert f"needs at least {memory.format_bytes(GPU + kept + adding)} of GPU memory" in message
    assert f"kept device copies {memory.format_bytes(kept + adding)}" in message
    assert f"only {memory.format_bytes(GPU + adding - 1 + kept)} is available" in message
    # Nothing to add: the same free bytes hold the training beside what the store keeps.
    assert memory.check_gpu_critic_memory(CRITICS, SAMPLES, WIDTH, CONFIG, "cuda") == GPU + kept


def test_the_store_s_cap_bounds_what_the_check_adds(gpu):
    # No store entered: the audit's is a fresh one, which keeps at most RESIDENT_BYTES however large the sample.
    gpu["free"] = GPU + resident.RESIDENT_BYTES
    assert memory.check_gpu_critic_memory(CRITICS, SAMPLES, WIDTH, CONFIG, "cuda",
                                          kept_adding=10 * resident.RESIDENT_BYTES) == GPU + resident.RESIDENT_BYTES


def _spec_and_plan(**audit):
    from audit.audit_plan import plan_audit
    from audit.config.building import build_spec

    spec = build_spec({"mechanism": {"spec": "catalog:laplace_sum"}, "audit": {"mi_critic": "neural", **audit}})
    return spec, plan_audit(spec, [(prior, None) for prior in spec.priors])


def test_the_audit_s_critics_add_their_sample_s_outputs_and_each_record_s_other_records():
    from audit.critic_cost import kept_blocks

    spec, plan = _spec_and_plan()
    n, k = spec.priors[0].shape
    trained = [planned for planned in plan.secrets if not planned.deterministic]
    priors = len({planned.prior_index for planned in trained})
    width = 7
    # Each prior's outputs (samples × 7 float64, one block for its secrets) and each trained record's other
    # records w ((n − 1)·k numbers a run).
    assert kept_blocks(spec, plan, width) == spec.samples * 8 * (priors * width + len(trained) * (n - 1) * k)
    assert kept_blocks(spec, dataclasses.replace(plan, mi_critic="classifier"), width) == 0
    assert kept_blocks(spec, dataclasses.replace(plan, full_critics=False), width) == 0


def test_after_the_runs_the_outputs_width_moves_auto_to_the_cpu_and_refuses_a_cuda_asked_for(gpu):
    from audit.critic_cost import kept_blocks, sampled_critic_device, trainings

    spec, plan = _spec_and_plan()
    (count, input_width), = trainings(spec, plan, 1)
    width = 50
    gpu_parts = memory.critic_memory_places(count, spec.samples, input_width + width - 1, spec.critic)[1]
    need = sum(gpu_parts.values()) + kept_blocks(spec, plan, width)
    import torch

    cuda = torch.device("cuda")
    gpu["free"] = need
    assert sampled_critic_device(spec, plan, cuda, width) == (cuda, None)
    gpu["free"] = need - 1
    device, note = sampled_critic_device(spec, plan, cuda, width)
    assert device.type == "cpu" and note.startswith("device cpu (auto: the GPU's free memory cannot hold the critics "
                                                    "at the outputs' width")
    with pytest.raises(InputError, match="of GPU memory"):
        sampled_critic_device(dataclasses.replace(spec, device="cuda"), plan, cuda, width)
    # The CPU, or outputs of one number (checked before any run), are not checked again.
    assert sampled_critic_device(spec, plan, torch.device("cpu"), width)[1] is None
    assert sampled_critic_device(spec, plan, cuda, 1) == (cuda, None)
