"""``device="auto"`` chooses the device a critic training is predicted to run faster on (issue 42 §2)."""

import pytest

from estimators import device as device_module
from estimators.device import choose_device
from estimators.neural import CriticConfig


def _break_even_critics(steps, batch):
    """Critics at which the two predicted times are equal, solved by hand from the cost model with the GPU's
    graphed step (the ensembles here are small enough for one):
    steps·(s_c + m·b·p_c) = T + steps·(s_g + m·b·p_g)  ⇒  m = (T/steps + s_g − s_c) / (b·(p_c − p_g))."""
    d = device_module
    return (d.GPU_START_S / steps + d.GPU_STEP_S - d.CPU_STEP_S) / (batch * (d.CPU_PAIR_S - d.GPU_PAIR_S))


@pytest.mark.parametrize("steps,batch", [(100, 256), (300, 64), (600, 128)])
def test_auto_takes_the_gpu_only_past_the_break_even_ensemble(steps, batch):
    m = _break_even_critics(steps, batch)
    assert m > 10  # short trainings: the GPU's start decides
    small, large = max(1, int(m * 0.8)), int(m * 1.25) + 1
    assert device_module.gpu_step_is_graphed(large, batch)
    chosen, why = choose_device("auto", critics=small, steps=steps, batch_size=batch, cuda_available=True)
    assert chosen.type == "cpu" and "auto" in why and "predicted" in why
    chosen, why = choose_device("auto", critics=large, steps=steps, batch_size=batch, cuda_available=True)
    assert chosen.type == "cuda" and "on the GPU" in why


def test_one_critic_goes_to_the_gpu_once_its_steps_repay_the_start_and_no_cuda_means_the_cpu():
    # One critic: a graphed GPU step (0.097 ms) beats a CPU step (1.31 ms) once the steps repay the GPU's start.
    d = device_module
    steps = d.GPU_START_S / (d.CPU_STEP_S - d.GPU_STEP_S)  # about 820
    assert choose_device("auto", critics=1, steps=int(steps * 0.8), batch_size=256, cuda_available=True)[0].type == "cpu"
    assert choose_device("auto", critics=1, steps=int(steps * 1.25), batch_size=256, cuda_available=True)[0].type == "cuda"
    chosen, why = choose_device("auto", critics=10**6, steps=2000, batch_size=256, cuda_available=False)
    assert chosen.type == "cpu" and why == "device cpu (auto: no CUDA device)"


def test_a_gpu_step_too_large_for_a_graph_is_predicted_eager(monkeypatch):
    d = device_module
    large = d.GRAPH_MAX_ACTIVATIONS // (2 * 256 * d.PREDICTED_HIDDEN) + 1
    assert not d.gpu_step_is_graphed(large, 256) and d.gpu_step_is_graphed(large - 1, 256)
    eager = d.predicted_training_seconds("cuda", critics=large, steps=10, batch_size=256)
    assert eager == pytest.approx(d.GPU_START_S + 10 * (d.GPU_EAGER_STEP_S + large * 256 * d.GPU_PAIR_S))
    assert d.gpu_step_is_graphed(2 * (large - 1), 256, chunks=2)  # each chunk is graphed on its own
    monkeypatch.setattr(device_module, "CUDA_GRAPHS", False)
    assert not d.gpu_step_is_graphed(1, 256)


def test_an_explicit_device_is_taken_as_asked():
    chosen, why = choose_device("cpu", critics=10**6, steps=2000, batch_size=256, cuda_available=True)
    assert chosen.type == "cpu" and why == "device cpu (as asked)"


def test_a_numbered_cuda_device_is_accepted_where_it_exists(monkeypatch):
    """One GPU of several, as torch names it: the audit's engine chooses by it as by "cuda"."""
    import torch

    from estimators.device import resolve_device
    from estimators.validation import InputError

    with pytest.raises(InputError, match="'device'"):
        resolve_device("cuda:x")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda:0") == torch.device("cuda:0")
    assert choose_device("cuda:0", critics=1, steps=10, batch_size=8)[1] == "device cuda (as asked)"
    with pytest.raises(InputError, match="no such CUDA device"):
        resolve_device("cuda:1")


def test_the_gpu_start_is_not_counted_against_critics_when_the_mechanism_trains_there():
    # Start paid anyway: a graphed GPU step (0.097 ms) beats a CPU step (1.31 ms) for one critic at any step count.
    d = device_module
    assert d.GPU_STEP_S + 256 * d.GPU_PAIR_S < d.CPU_STEP_S + 256 * d.CPU_PAIR_S
    assert choose_device("auto", critics=1, steps=10, batch_size=256, cuda_available=True)[0].type == "cpu"
    chosen, why = choose_device("auto", critics=1, steps=10, batch_size=256, cuda_available=True, cuda_started=True)
    assert chosen.type == "cuda" and "start already paid" in why
    size = dict(critics=1, steps=10, batch_size=256)
    assert (d.predicted_training_seconds("cuda", **size) - d.predicted_training_seconds("cuda", **size, cuda_started=True)
            == pytest.approx(d.GPU_START_S))


@pytest.mark.train
def test_a_torch_dpsgd_on_cuda_trains_on_the_gpu_and_the_engine_says_so_to_the_critics_choice(monkeypatch):
    import torch

    import audit.critic_cost
    import audit.engine
    from audit.spec import AuditSpec
    from mechanisms.catalog.dpsgd import canary_pair
    from mechanisms.training.torch_dpsgd import trains_on_gpu
    from mechanisms.training.dpsgd import DPSGD
    from mechanisms.training.torch_dpsgd import on_device

    numpy_trainer = DPSGD(16, 2, 1.0, steps=4, release="gradient_trace")
    assert not trains_on_gpu(numpy_trainer) and not trains_on_gpu(on_device(numpy_trainer, "cpu"))
    assert trains_on_gpu(on_device(numpy_trainer, "cuda"))
    auto = on_device(numpy_trainer, "auto")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert not trains_on_gpu(auto)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert trains_on_gpu(auto)
    monkeypatch.undo()
    # The engine passes the mechanism's answer to the critics' choice (a stand-in answer; the audit runs on the CPU).
    seen = {}

    def choose(device, **work):
        seen.update(work)
        return torch.device("cpu"), "device cpu (stand-in)"

    monkeypatch.setattr(audit.critic_cost, "trains_on_gpu", lambda mechanism: mechanism is numpy_trainer)
    monkeypatch.setattr(audit.critic_cost, "choose_device", choose)
    pair = canary_pair()
    audit.engine.run_audit(AuditSpec(mechanism=numpy_trainer, priors=(pair.prior(),), samples=400, notion="mi-dp",
                                     epsilon=0.5, mi_critic="neural", critic=CriticConfig(max_steps=5), seed=0))
    assert seen["cuda_started"] is True


def test_no_critics_train_nothing_and_keep_the_audit_on_the_cpu():
    # Classifier critics (critic_work's 0 critics): no step to take, so 0 s on either device and no start to pay;
    # pricing 2,000 steps of an empty ensemble (2.6 s on the CPU, 1.2 s on the GPU) would send them to the GPU.
    d = device_module
    for kind in ("cpu", "cuda"):
        assert d.predicted_training_seconds(kind, critics=0, steps=2000, batch_size=256) == 0.0
    for started in (False, True):
        chosen, _ = choose_device("auto", critics=0, steps=2000, batch_size=256, cuda_available=True,
                                  cuda_started=started)
        assert chosen.type == "cpu"
