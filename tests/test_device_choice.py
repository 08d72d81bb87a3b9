"""``device="auto"`` chooses the device a critic training is predicted to run faster on (issue 42 §2)."""

import pytest

from estimators import device as device_module
from estimators.device import choose_device


def _break_even_critics(steps, batch):
    """Critics at which the two predicted times are equal, solved by hand from the cost model:
    steps·(s_c + m·b·p_c) = T + steps·(s_g + m·b·p_g)  ⇒  m = (T/steps + s_g − s_c) / (b·(p_c − p_g))."""
    d = device_module
    return (d.GPU_START_S / steps + d.GPU_STEP_S - d.CPU_STEP_S) / (batch * (d.CPU_PAIR_S - d.GPU_PAIR_S))


@pytest.mark.parametrize("steps,batch", [(2000, 256), (500, 64), (20000, 1024)])
def test_auto_takes_the_gpu_only_past_the_break_even_ensemble(steps, batch):
    m = _break_even_critics(steps, batch)
    small, large = max(1, int(m * 0.8)), int(m * 1.25) + 1
    chosen, why = choose_device("auto", critics=small, steps=steps, batch_size=batch, cuda_available=True)
    assert chosen.type == "cpu" and "auto" in why and "predicted" in why
    chosen, why = choose_device("auto", critics=large, steps=steps, batch_size=batch, cuda_available=True)
    assert chosen.type == "cuda" and "on the GPU" in why


def test_one_critic_stays_on_the_cpu_and_no_cuda_means_the_cpu():
    # One critic: a GPU step (2.16 ms, launch-bound) costs more than a CPU step (0.65 ms) whatever the steps.
    assert choose_device("auto", critics=1, steps=10**6, batch_size=256, cuda_available=True)[0].type == "cpu"
    chosen, why = choose_device("auto", critics=10**6, steps=2000, batch_size=256, cuda_available=False)
    assert chosen.type == "cpu" and why == "device cpu (auto: no CUDA device)"


def test_an_explicit_device_is_taken_as_asked():
    chosen, why = choose_device("cpu", critics=10**6, steps=2000, batch_size=256, cuda_available=True)
    assert chosen.type == "cpu" and why == "device cpu (as asked)"
