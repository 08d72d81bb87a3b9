"""The MI critics' input v made on the training device (estimators.critic_problems.CriticColumns): each chunk of
critics is, bit for bit, the v that the host built and copied whole (written here with np.concatenate, as
fit_problems built it), the outputs cross once (read from the audit's store, estimators.resident) and the other
records w as their distinct rows; critics fitted on it give the estimates, and an audit the JSON, of the whole copy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from audit_json import timeless_json
from estimators import resident
from estimators.critic_problems import CriticColumns, MIProblem, ProblemColumns, fit_problems
from estimators.device import COPY_LISTENERS, to_device
from estimators.neural import fit_critics

CPU = torch.device("cpu")


def _bits(values) -> bytes:
    return np.ascontiguousarray(values.numpy() if torch.is_tensor(values) else values).tobytes()


def _old_v(problems, width):
    """v as fit_problems built it on the host before: each problem's y and z blocks concatenated (the chain's y as
    zeros), padded with zero columns to ``width``, stacked along the critics."""
    blocks = []
    for y, z, chain in problems:
        vy = y if y.ndim == 3 else y[None]
        vy = np.zeros_like(vy) if chain else vy
        joined = vy if z is None else np.concatenate((vy, z if z.ndim == 3 else z[None]), axis=2)
        pad = np.zeros(joined.shape[:2] + (width - joined.shape[2],))
        blocks.append(np.concatenate((joined, pad), axis=2))
    return np.concatenate(blocks)


@pytest.fixture
def copies(monkeypatch):
    """The bytes of each host→device copy (estimators.device.to_device's listeners), with the audit's store read on
    the CPU as beside a GPU (experiments.stage_profile.device_routes)."""
    monkeypatch.setattr(resident, "on_device", lambda device: True)
    sizes = []
    COPY_LISTENERS.append(lambda device, nbytes: sizes.append(nbytes))
    yield sizes
    COPY_LISTENERS.remove(COPY_LISTENERS[-1])


def test_each_chunk_is_the_host_built_v_bit_for_bit_and_w_crosses_as_its_distinct_row(copies):
    rng = np.random.default_rng(0)
    n = 50
    y = rng.normal(size=(n, 4))
    w = np.tile(np.array([[1.5, -0.0, 0.0, np.pi, 2.0]]), (n, 1))  # one distinct row, a −0.0 beside a 0.0
    sliced_y, sliced_z = rng.normal(size=(3, n, 2)), rng.normal(size=(3, n, 1))
    problems = [ProblemColumns(y, w), ProblemColumns(y, w, chain=True), ProblemColumns(sliced_y, sliced_z),
                ProblemColumns(y, None)]
    columns = CriticColumns(problems)
    expected = _old_v([tuple(p) for p in problems], 9)
    assert columns.shape == expected.shape == (6, n, 9)
    assert _bits(columns.joined()) == _bits(expected)
    with resident.keep_on_device():
        for start, stop in ((0, 6), (0, 1), (1, 3), (2, 5), (5, 6)):
            chunk = columns.on_device(start, stop, CPU)
            assert chunk.dtype == torch.float64 and _bits(chunk) == _bits(expected[start:stop])
            assert chunk.is_contiguous()
    # y crossed once for every chunk (the store's copy), w once as its one row (5 values, then the store's copy of
    # w), never whole (n rows); the slices' projections (critics 2..4) as their chunks, padded to 9 columns.
    sliced = 8 * n * 9
    assert sorted(copies) == sorted([y.nbytes, 5 * 8, 3 * sliced, sliced, 3 * sliced])


def test_the_scorers_w_crosses_as_its_distinct_row_once_for_both_values(copies):
    rng = np.random.default_rng(4)
    y, w = rng.normal(size=(30, 3)), np.tile(rng.normal(size=(1, 4)), (30, 1))
    with resident.keep_on_device():
        joined = [resident.device_columns((y, w), CPU, 9) for _ in range(2)]  # the scorer's v at each value
    expected = np.concatenate((y, w, np.zeros((30, 2))), axis=1)
    assert all(_bits(v) == _bits(expected) for v in joined)
    assert copies == [y.nbytes, 4 * 8]


def test_w_of_several_distinct_rows_and_w_of_no_repeats():
    rng = np.random.default_rng(1)
    n = 40
    rows = np.array([[0.0, 1.0, 2.0], [-0.0, 1.0, 2.0], [np.nan, 1.0, 3.0]])
    w = rows[rng.integers(0, 3, n)]
    fresh = rng.normal(size=(n, 3))  # every value differs: copied whole
    for z in (w, fresh):
        y = rng.normal(size=(n, 2))
        columns = CriticColumns([ProblemColumns(y, z)])
        assert _bits(columns.on_device(0, 1, CPU)) == _bits(_old_v([(y, z, False)], 5))


@pytest.mark.train
def test_critics_fitted_on_v_made_on_the_device_give_the_whole_copys_estimates(copies, small_critic):
    rng = np.random.default_rng(2)
    n = 400
    g = rng.integers(0, 2, (n, 1)).astype(float)
    y = g + rng.normal(size=(n, 3))
    w = np.tile(rng.normal(size=(1, 6)), (n, 1))
    with resident.keep_on_device():
        made = fit_problems([MIProblem(g, y, w)], rng=np.random.default_rng(3), objective="dv", config=small_critic,
                            device=CPU).fit
    made_sizes = list(copies)
    copies[:] = []
    # The old path: v built on the host whole and copied whole; the seed fit_problems draws (no slices: its first).
    whole = fit_critics(g[None], np.concatenate((y, w), axis=1)[None], objective="dv", config=small_critic,
                        seed=int(np.random.default_rng(3).integers(2**31)), device=CPU, check_memory=False)
    for name in ("estimates", "stderr", "validation", "test_joint", "test_product"):
        assert _bits(getattr(made, name)) == _bits(getattr(whole, name)), name
    assert made.estimates.tobytes() == whole.estimates.tobytes()
    # The whole copy's v (y and w side by side) crossed; made on the device, y and w's one row.
    assert 8 * n * 9 in copies and 8 * n * 9 not in made_sizes
    assert 8 * n * 3 in made_sizes and 8 * 6 in made_sizes


@pytest.mark.train
@pytest.mark.parametrize("notion, slices", [("mi-dp", 0), ("smi-dp", 3)])
def test_an_audit_whose_v_is_made_on_the_device_has_the_whole_copys_json(copies, notion, slices):
    from audit.engine import run_audit
    from audit.search import event_candidates
    from audit.spec import AuditSpec
    from estimators.critic_config import CriticConfig
    from mechanisms.catalog import get_entry

    entry = get_entry("histogram_buggy")
    spec = AuditSpec(mechanism=entry.mechanism, priors=[entry.prior], notion=notion, epsilon=0.05, slices=slices,
                     records=(2,), samples=1500, event_runs=1500, critic=CriticConfig(max_steps=60), seed=7,
                     device="cpu")
    made = run_audit(spec)
    made_bytes = sum(copies)
    copies[:] = []

    def whole_copy(self, start, stop, device):  # the old path: v joined on the host, the chunk copied whole
        return to_device(np.asarray(self.joined()[start:stop], dtype=np.float64), device)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(CriticColumns, "on_device", whole_copy)
        # and the statistics' rows of the MI sample copied as rows of their own, not gathered from its copy
        patched.setattr(event_candidates, "rows_of", lambda array, index: array[index])
        patched.setattr(resident, "distinct_input", lambda array, device: to_device(array, device))
        whole = run_audit(spec)
    assert timeless_json(made) == timeless_json(whole)
    assert made_bytes < sum(copies)
