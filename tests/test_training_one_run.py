"""The one-run digits trainer (torch, per-sample gradients by torch.func, batched over runs) against a NumPy
trainer written here with the softmax regression's closed-form per-sample gradients."""

import functools

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.training.accountant import noise_for_epsilon
from mechanisms.training.one_run_digits import digits_one_run, digits_one_runs


@functools.lru_cache(maxsize=1)
def _digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.data / 16.0, data.target


def _numpy_run(*, epsilon, delta, canaries, kind, steps, clip_norm, learning_rate, seed):
    """One run, draws in the trainer's documented order; gradients (softmax(xW) − onehot(y)) ⊗ x, norm ‖r‖·‖x‖."""
    x, y = _digits()
    features = lambda rows: np.hstack([rows, np.ones((len(rows), 1))])  # noqa: E731

    def softmax(z):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    rng = np.random.default_rng(seed)
    split = rng.permutation(len(x))
    train, held = split[: len(x) // 2], split[len(x) // 2:]
    sigma = noise_for_epsilon(epsilon, 1.0, steps, delta, "rdp")
    included = rng.random(canaries) < 0.5
    rows, onehot = features(x[train]), np.eye(10)[y[train]]
    if kind == "input":
        canary_x = features(x[held[:canaries]])
        canary_y = (y[held[:canaries]] + rng.integers(1, 10, size=canaries)) % 10
        rows, onehot = np.vstack([rows, canary_x[included]]), np.vstack([onehot, np.eye(10)[canary_y[included]]])
    extra = canaries if kind == "gradient" else 0
    theta = np.zeros(650 + extra)
    batch = len(train) + canaries // 2
    for _ in range(steps):
        residual = softmax(rows @ theta[:650].reshape(65, 10)) - onehot
        scale = np.minimum(1.0, clip_norm / (np.linalg.norm(residual, axis=1) * np.linalg.norm(rows, axis=1)))
        gradient = np.concatenate([(rows.T @ (residual * scale[:, None])).ravel(), clip_norm * included[:extra]])
        theta = theta - learning_rate * (gradient + sigma * clip_norm * rng.standard_normal(theta.shape)) / batch
    if kind == "gradient":
        return included, -theta[650:] * batch / learning_rate
    probabilities = softmax(canary_x @ theta[:650].reshape(65, 10))
    return included, np.log(probabilities[np.arange(canaries), canary_y])


@pytest.mark.parametrize("kind", ["gradient", "input"])
def test_batched_torch_runs_equal_the_closed_form_numpy_trainer_seed_by_seed(kind):
    settings = dict(epsilon=4.0, delta=1e-5, canaries=60, kind=kind, steps=3, clip_norm=1.0, learning_rate=2.0)
    runs = digits_one_runs(**settings, seeds=(3, 7))
    for seed, run in zip((3, 7), runs):
        included, scores = _numpy_run(**settings, seed=seed)
        np.testing.assert_array_equal(run.included, included)
        np.testing.assert_allclose(run.scores, scores, rtol=1e-9, atol=1e-9)
        assert 0.0 <= run.test_accuracy <= 1.0 and run.examples == 898
    lone = digits_one_run(**settings, seed=7)  # one seed alone is the same run as inside the batch
    np.testing.assert_allclose(lone.scores, runs[1].scores, rtol=1e-12, atol=1e-12)
    with pytest.raises(InputError, match="'seeds'"):
        digits_one_runs(**settings, seeds=())


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_batched_runs_on_cuda_equal_the_cpu():
    settings = dict(canaries=60, steps=3, seeds=(3, 7))
    for kind in ("gradient", "input"):
        cpu = digits_one_runs(**settings, kind=kind, device="cpu")
        gpu = digits_one_runs(**settings, kind=kind, device="cuda")
        for a, b in zip(cpu, gpu):
            np.testing.assert_allclose(b.scores, a.scores, rtol=1e-9, atol=1e-9)


def test_one_run_command_trains_on_the_device_it_is_given(capsys):
    import json

    import torch

    from audit.cli.main import main

    assert main(["one-run", "--canaries", "100", "--steps", "2", "--seed", "4", "--device", "cpu", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    lone = digits_one_run(canaries=100, steps=2, seed=4)
    assert payload["training"]["test_accuracy"] == pytest.approx(lone.test_accuracy)
    if not torch.cuda.is_available():
        assert main(["one-run", "--canaries", "100", "--device", "cuda"]) != 0
        assert "no CUDA device" in capsys.readouterr().err


def test_a_one_run_that_cannot_fit_in_memory_is_refused_before_any_work(monkeypatch, capsys):
    """``miaudit one-run --canaries 1000000000`` printed NumPy's out-of-memory traceback (149 GiB) after 95 s."""
    from mechanisms.execution import memory
    from mechanisms.training import one_run_digits
    from mechanisms.training.one_run_digits import one_run_memory

    # 1 run, 20 steps, 650 + 10^7 parameters: 8 · (2 · 20 · 10,000,650 + 5 · 10,000,650 + 10^7) bytes, by hand.
    assert one_run_memory(10_000_000) == 8 * (2 * 20 * 10_000_650 + 5 * 10_000_650 + 10_000_000)
    assert one_run_memory(500, "input", steps=3, runs=2) == 8 * 2 * (2 * 3 * 650 + 5 * 650 + 500)

    def no_allocation(*args, **kwargs):
        raise AssertionError("the run was set up")

    monkeypatch.setattr(one_run_digits, "_setup", no_allocation)
    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)
    from audit.cli.main import main

    assert main(["one-run", "--canaries", "10000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'--canaries' (10000000)" in err and "3.43 GiB" in err and "only 1 GiB" in err
