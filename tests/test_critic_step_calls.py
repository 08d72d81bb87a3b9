"""The critics' training step in fewer torch calls trains exactly as the step one piece at a time: the same pairs,
values, gradients and updates bit for bit, and fewer torch operator calls a step (each is a kernel launch's host
time on a GPU, issue 42); the CUDA-graph path's mini-batches are drawn a few calls a block, not a few a step."""

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from estimators import critics
from estimators.critics import CriticEnsemble
from estimators.neural import adam, sample_major, step_draws, training_step
from estimators.objectives import donsker_varadhan
from experiments.stage_profile import MAIN_THREAD_MARK, operator_spans


def per_piece_step(ensemble, optimizer, u_rows, v_rows, index, shift):
    """The training step as it was written before, one torch call per piece: each half of the pairs copied in
    its parts, the product's v rolled by two copies, the values sliced in two, the loss negated."""
    def gathered(rows):
        n_critics, width = rows.shape[1], rows.shape[2]
        part = torch.index_select(rows, 0, index).view(index.shape[0], n_critics * width)
        return part.t().contiguous().view(n_critics, width, index.shape[0])

    b, du = index.shape[0], u_rows.shape[2]
    u_part, v_part = gathered(u_rows), gathered(v_rows)
    pairs = torch.empty((u_part.shape[0], du + v_part.shape[1], 2 * b), dtype=u_part.dtype)
    pairs[:, :du, :b] = u_part
    pairs[:, :du, b:] = u_part
    pairs[:, du:, :b] = v_part
    s = shift % b
    pairs[:, du:, b + s:] = v_part[:, :, :b - s]
    pairs[:, du:, b:b + s] = v_part[:, :, b - s:]
    values = ensemble(pairs.transpose(1, 2))
    gain = donsker_varadhan(values[:, :b], values[:, b:])
    optimizer.zero_grad(set_to_none=True)
    (-gain.sum()).backward()
    optimizer.step()
    return gain.detach()


def _setup(architecture, critics_count=6, samples=80):
    generator = torch.Generator().manual_seed(3)
    u = torch.randn(critics_count, samples, 2, generator=generator)
    v = u[:, :, :1] + 0.5 * torch.randn(critics_count, samples, 1, generator=generator)
    ensemble = CriticEnsemble(critics_count, 3, architecture=architecture, hidden=8, output_range=(-8.0, 3.0),
                              generator=torch.Generator().manual_seed(4))
    return ensemble, adam(ensemble.parameters(), 1e-2), sample_major(u), sample_major(v)


def _train(step, architecture, rows):
    ensemble, optimizer, u_rows, v_rows = _setup(architecture)
    gains = [step(ensemble, optimizer, u_rows, v_rows, row[:16], int(row[16])) for row in rows]
    return [p.detach().clone() for p in ensemble.parameters()], torch.stack(gains)


@pytest.mark.train
@pytest.mark.parametrize("architecture", ["shallow", "mlp"])
def test_the_step_trains_bit_for_bit_as_the_per_piece_step(architecture, monkeypatch):
    rows = step_draws(torch.Generator().manual_seed(5), np.random.default_rng(5), 80, 16, 20)
    expected, expected_gains = _train(per_piece_step, architecture, rows)
    got, gains = _train(training_step, architecture, rows)
    assert torch.equal(gains, expected_gains)
    assert all(torch.equal(a, b) for a, b in zip(got, expected))
    # Critics swept in several cache-sized blocks (the CPU's large ensembles) train the same.
    monkeypatch.setattr(critics, "CPU_BLOCK_ACTIVATIONS", 2 * 32 * 8)  # two critics of 2b = 32 pairs a block
    blocked, blocked_gains = _train(training_step, architecture, rows)
    assert torch.equal(blocked_gains, expected_gains)
    assert all(torch.equal(a, b) for a, b in zip(blocked, expected))


def _calls(run) -> int:
    with profile(activities=[ProfilerActivity.CPU]) as recorder:
        with torch.profiler.record_function(MAIN_THREAD_MARK):
            pass
        run()
    return len(operator_spans(recorder)[0])


@pytest.mark.train
def test_the_step_calls_fewer_torch_operators_than_the_per_piece_step():
    ensemble, optimizer, u_rows, v_rows = _setup("shallow")
    index = torch.randint(80, (16,), generator=torch.Generator().manual_seed(6))
    training_step(ensemble, optimizer, u_rows, v_rows, index, 3)  # the optimizer's state is made at its first step
    per_piece = _calls(lambda: per_piece_step(ensemble, optimizer, u_rows, v_rows, index, 3))
    batched = _calls(lambda: training_step(ensemble, optimizer, u_rows, v_rows, index, 3))
    assert batched <= per_piece - 5  # the u copies (6 calls to 4), the split (4 to 2), the negation (3 to 1)


def test_step_draws_makes_as_many_torch_calls_for_a_block_of_any_length():
    def calls(steps):
        return _calls(lambda: step_draws(torch.Generator().manual_seed(1), np.random.default_rng(1), 500, 64, steps))

    few, many = calls(2), calls(200)
    assert few == many and many < 10
