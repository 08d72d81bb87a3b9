"""The CUDA-graph training step (issue 42 §3) trains exactly as the eager step: the same batches, the same
rows, the same updates. The capture itself needs a GPU (tests/test_cuda.py); here its eager twin runs on the CPU."""

import numpy as np
import pytest
import torch

from estimators import device as device_settings
from estimators import neural
from estimators.critics import CriticEnsemble
from estimators.neural import (CriticConfig, GraphedTrainingStep, adam, fit_critics, joint_and_product_batch,
                               step_draws, training_step, use_cuda_graph)


@pytest.mark.parametrize("shift", [1, 5, 15])
def test_a_shift_on_the_device_gives_the_rolled_rows(shift):
    generator = torch.Generator().manual_seed(0)
    u, v = torch.randn(40, 3, 1, generator=generator), torch.randn(40, 3, 2, generator=generator)
    index = torch.randint(40, (16,), generator=generator)
    expected = joint_and_product_batch(u, v, index, shift)
    assert torch.equal(joint_and_product_batch(u, v, index, torch.tensor(shift)), expected)


def test_step_draws_are_the_eager_loops_draws_in_its_order():
    gen, rng = torch.Generator().manual_seed(3), np.random.default_rng(3)
    rows = step_draws(gen, rng, 100, 8, 5)
    gen, rng = torch.Generator().manual_seed(3), np.random.default_rng(3)
    for row in rows:
        assert torch.equal(row[:8], torch.randint(100, (8,), generator=gen))
        assert int(row[8]) == int(rng.integers(1, 8))


def test_step_draws_hands_the_shifts_over_as_the_ints_drawn():
    rows = step_draws(torch.Generator().manual_seed(3), np.random.default_rng(3), 100, 8, 5)
    again, shifts = step_draws(torch.Generator().manual_seed(3), np.random.default_rng(3), 100, 8, 5, with_shifts=True)
    rng = np.random.default_rng(3)
    assert torch.equal(again, rows) and shifts == [int(rng.integers(1, 8)) for _ in range(5)]
    assert all(type(shift) is int for shift in shifts)


@pytest.mark.train
@pytest.mark.parametrize("architecture", ["shallow", "mlp"])
def test_the_graph_steps_eager_twin_trains_like_training_step(architecture):
    generator = torch.Generator().manual_seed(1)
    u_rows, v_rows = torch.randn(64, 4, 1, generator=generator), torch.randn(64, 4, 1, generator=generator)

    def ensemble():
        return CriticEnsemble(4, 2, architecture=architecture, hidden=8, output_range=(-8.0, 3.0),
                              generator=torch.Generator().manual_seed(2))

    eager, graphed = ensemble(), ensemble()
    eager_opt, graphed_opt = adam(eager.parameters(), 1e-2), adam(graphed.parameters(), 1e-2)
    rows = step_draws(torch.Generator().manual_seed(4), np.random.default_rng(4), 64, 16, 12)
    step = GraphedTrainingStep(graphed, graphed_opt, u_rows, v_rows, 16, capture=False)
    for row in rows:
        training_step(eager, eager_opt, u_rows, v_rows, row[:16], int(row[16]))
        step(row)
    for a, b in zip(eager.parameters(), graphed.parameters()):
        assert torch.equal(a, b)


def test_the_graph_is_for_small_cuda_steps_of_dv_and_nwj_only(monkeypatch):
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert use_cuda_graph(cuda, "dv", None, 1, 256, 32) and use_cuda_graph(cuda, "nwj", None, 100, 256, 32)
    assert not use_cuda_graph(cpu, "dv", None, 1, 256, 32)
    assert not use_cuda_graph(cuda, "mine", None, 1, 256, 32) and not use_cuda_graph(cuda, "dv", 1.0, 1, 256, 32)
    assert not use_cuda_graph(cuda, "dv", None, 10**5, 1024, 32)  # bandwidth-bound: launches cost nothing
    monkeypatch.setattr(device_settings, "CUDA_GRAPHS", False)
    assert not use_cuda_graph(cuda, "dv", None, 1, 256, 32)


@pytest.mark.train
@pytest.mark.parametrize("objective", ["dv", "nwj"])
def test_the_graph_paths_fit_loop_is_the_eager_fit(monkeypatch, objective):
    """_fit_chunk's graph path (mini-batches drawn a block at a time, fed through the step's buffer), run on the
    CPU with the capture left out, gives the eager fit bit for bit; max_steps not a multiple of eval_every."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 600, 1))
    y = x + rng.standard_normal((3, 600, 1))
    config = CriticConfig(max_steps=70, eval_every=20)
    eager = fit_critics(x, y, objective=objective, config=config, seed=6, device="cpu")
    monkeypatch.setattr(neural, "use_cuda_graph", lambda *args: True)
    through_buffer = fit_critics(x, y, objective=objective, config=config, seed=6, device="cpu")
    np.testing.assert_array_equal(through_buffer.estimates, eager.estimates)
    np.testing.assert_array_equal(through_buffer.test_joint, eager.test_joint)


@pytest.mark.train
@pytest.mark.parametrize("objective, max_steps, eval_every, patience", [("dv", 130, 50, 6), ("mine", 90, 20, 1),
                                                                       ("nwj", 75, 10, 2)])
def test_a_fits_steps_train_on_the_batches_one_draw_a_step_gave(monkeypatch, objective, max_steps, eval_every,
                                                                 patience):
    # The old loop drew every step's batch and shift as it came: after the ensemble's initialisation from the
    # fit's generator, torch.randint(n_train, (batch,), generator=gen), then int(shift_rng.integers(1, batch)).
    # The blocks of draws (one copy to the device a block) must hand every step exactly those, early stop or not.
    seen, seeds = [], []
    real_step, real_chunk = neural.training_step, neural._fit_chunk

    def recording_step(*args, **kwargs):
        seen.append((args[4].clone(), args[5]))
        return real_step(*args, **kwargs)

    def recording_chunk(*args):
        seeds.append(args[7])
        return real_chunk(*args)

    monkeypatch.setattr(neural, "training_step", recording_step)
    monkeypatch.setattr(neural, "_fit_chunk", recording_chunk)
    rng = np.random.default_rng(7)
    u = rng.normal(size=(3, 900, 1))
    v = u + rng.normal(size=u.shape)
    config = CriticConfig(max_steps=max_steps, eval_every=eval_every, patience=patience, batch_size=64, hidden=8)
    fit = fit_critics(u, v, objective=objective, config=config, seed=2, device="cpu")
    assert len(seeds) == 1 and len(seen) == fit.steps
    gen = torch.Generator().manual_seed(seeds[0])
    CriticEnsemble(3, 2, architecture=config.architecture, hidden=config.hidden, depth=config.depth,
                   output_range=config.output_range, generator=gen)  # the fit's initialisation draws first
    shift_rng = np.random.default_rng(seeds[0])
    n_train = fit.split_sizes[0]
    for index, shift in seen:
        assert torch.equal(index, torch.randint(n_train, (64,), generator=gen))
        assert type(shift) is int and shift == int(shift_rng.integers(1, 64))
