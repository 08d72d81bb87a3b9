"""The memory check's count of the critics' input standardization (estimators.memory.CRITIC_INPUT_BYTES)
against the peak that torch's CPU allocator reports while estimators.standardization.critic_inputs runs
(torch.profiler with profile_memory: every allocation and release, in the order they happen); and the event
statistic's NumPy arrays (tracemalloc) against the one value's arrays that the audit's count holds at once."""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from estimators.memory import CRITIC_INPUT_BYTES
from estimators.standardization import critic_inputs


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


def test_the_event_statistic_holds_one_values_arrays_at_a_time():
    # audit.engine's statistic T(a, y, rest) - T(b, y, rest) of a record's critic: for each value it copies the
    # runs' databases with the record set, takes the other records w, and the scorer builds v = (output, w) from
    # them (estimators.resident.device_columns, on the CPU a tensor of the same size). The memory check
    # counts one value's arrays (mechanisms.execution.memory.audit_memory_parts, "event scoring"); the first
    # value's are freed before the second's are built (they were alive beside them: five such arrays at once).
    from audit.search.event_candidates import critic_statistic
    from audit.frameworks import differential_privacy
    from estimators.critic_problems import ProblemCritics

    runs, n, k = 200, 200, 2

    class Scorer:  # allocates nothing of its own: what is traced is the statistic's arrays
        def input_widths(self, index):
            return k, 1 + (n - 1) * k

        def __call__(self, index, u, v):
            v = np.concatenate(v, axis=1)  # v's column blocks side by side, as the scorer puts them
            assert u.shape == (runs, k) and v.shape == (runs, 1 + (n - 1) * k)
            return np.full(runs, float(u[0, 0]))

    cell = SimpleNamespace(record=0, pair=differential_privacy(n, k).edges[0], others="records", prior=None,
                           missing=False)
    candidate = SimpleNamespace(cell=cell, kind="full", index=0, critics=ProblemCritics(slice(0, 1), None, None))
    fits = SimpleNamespace(fit=lambda kind: SimpleNamespace(scorer=Scorer()))
    statistic = critic_statistic(candidate, fits)
    rng = np.random.default_rng(0)
    dbs, outputs = rng.integers(0, 2, (runs, n, k)).astype(float), rng.standard_normal((runs, 1))
    tracemalloc.start()
    try:
        values = statistic(np.full(k, 3.0), np.full(k, 1.0), dbs, outputs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(values, np.full(runs, 2.0))  # T = the record's first attribute: 3 - 1
    # One value's float64 arrays: the database copy, the other records, v; and the scores (two and their difference).
    one_value = 8 * runs * (n * k + (n - 1) * k + 1 + (n - 1) * k) + 3 * 8 * runs
    database = 8 * runs * n * k
    assert one_value <= peak <= one_value + database // 4, (peak, one_value)
