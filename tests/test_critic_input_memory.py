"""The memory check's count of the critics' input standardization (mechanisms.execution.memory.CRITIC_INPUT_BYTES)
against the peak that torch's CPU allocator reports while estimators.standardization.critic_inputs runs
(torch.profiler with profile_memory: every allocation and release, in the order they happen)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from estimators.standardization import critic_inputs
from mechanisms.execution.memory import CRITIC_INPUT_BYTES


def _peak_allocated(call) -> int:
    """The most bytes ``call()`` holds at once beyond what it was given, from the profiler's allocation events:
    each event's own allocations less its releases (self_cpu_memory_usage, so that nested calls count once),
    summed in the order the events start. The result is released before the profile ends."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = call()
        del result
    held = peak = 0
    for event in sorted(prof.events(), key=lambda event: event.time_range.start):
        held += event.self_cpu_memory_usage
        peak = max(peak, held)
    assert held == 0, "every allocation of the call is released with its result"
    return peak


@pytest.mark.parametrize("rows, width", [(3000, 41), (500, 2001), (20000, 3)])
def test_critic_input_bytes_are_the_peak_critic_inputs_allocates(rows, width):
    # The event test's scoring standardizes v = (output, other records), float64, one (rows, width) array.
    rng = np.random.default_rng(rows)
    v = torch.as_tensor(rng.standard_normal((rows, width)))
    centre = torch.as_tensor(rng.standard_normal((1, width)) * 0.1)
    scale = torch.as_tensor(rng.random((1, width)) + 0.5)
    critic_inputs(v, centre, scale)  # the first call's one-time allocations (dispatch tables) stay out
    measured = _peak_allocated(lambda: critic_inputs(v, centre, scale))
    counted = CRITIC_INPUT_BYTES * rows * width
    # The count is of the values; above it are 2·centre and 2·scale (a number a feature each) and the scalar
    # checks (min and max, one flag).
    assert counted <= measured <= counted + 2 * 8 * width + 4096, (measured, counted)
