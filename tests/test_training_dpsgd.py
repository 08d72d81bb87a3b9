"""DP-SGD as a mechanism: the functional step against Opacus, canaries, the accountant, the entries."""

import math

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.training import DPSGD, digits_training_set, gaussian_training_set, gradient_canary, input_canary, \
    null_record, with_record
from conftest import needs
from mechanisms.training.dpsgd import per_sample_gradients

torch = pytest.importorskip("torch")
# Opacus's hooks warn that the inputs need no gradient; they do not.
pytestmark = [needs("opacus", "dp_accounting"), pytest.mark.filterwarnings("ignore:Full backward hook")]


def _pair(records=12, features=3, canary=None, seed=0):
    base = gaussian_training_set(records - 1, features - 1, seed=seed)
    canary = gradient_canary(base) if canary is None else canary
    return with_record(base, canary), with_record(base, null_record(base))


def _opacus_run(db, noise_multiplier, clip_norm, lr, steps, seed):
    """Full-batch DP-SGD with Opacus's GradSampleModule and DPOptimizer, from zero parameters."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    torch.manual_seed(seed)
    x = torch.tensor(db[:, :-2], dtype=torch.float64)
    y = torch.tensor(db[:, -2], dtype=torch.float64)
    linear = torch.nn.Linear(x.shape[1], 1).double()
    torch.nn.init.zeros_(linear.weight)
    torch.nn.init.zeros_(linear.bias)
    model = GradSampleModule(linear, loss_reduction="mean")
    optimizer = DPOptimizer(torch.optim.SGD(model.parameters(), lr=lr), noise_multiplier=noise_multiplier,
                            max_grad_norm=clip_norm, expected_batch_size=x.shape[0], loss_reduction="mean")
    per_sample = None
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y, reduction="mean")
        loss.backward()  # (Opacus warns that the inputs need no gradient: they do not)
        if per_sample is None:
            per_sample = np.hstack([linear.weight.grad_sample[:, 0, :].numpy(), linear.bias.grad_sample.numpy()])
        optimizer.step()
    return np.concatenate([linear.weight.detach().numpy()[0], linear.bias.detach().numpy()]), per_sample


def test_functional_step_matches_opacus_without_noise():
    db = gaussian_training_set(10, 3, seed=4)  # ordinary examples only: gradients from the data
    mechanism = DPSGD(10, 4, noise_multiplier=0.0, clip_norm=0.3, sampling_rate=1.0, steps=3, learning_rate=0.7)
    ours = mechanism(db[None], np.random.default_rng(0))[0]
    theirs, per_sample = _opacus_run(db, 0.0, 0.3, 0.7, 3, seed=0)
    # Same per-sample gradients at θ = 0, some of them above C (so clipping is exercised).
    grads = per_sample_gradients(np.zeros((1, 5)), db[None], np.zeros(5))[0]
    np.testing.assert_allclose(grads, per_sample, rtol=1e-10, atol=1e-12)
    assert np.any(np.linalg.norm(per_sample, axis=1) > 0.3)
    # Opacus clips with C/(‖g‖ + 1e-6); ours with C/‖g‖: equal to ~1e-6 relative.
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)


def _noise_step_setup():
    """One full-batch step from θ = 0: θ₁ − θ₁(σ = 0) is −η N(0, σ²C²)/n, of std η σ C / n written out."""
    db = gaussian_training_set(6, 2, seed=1)
    sigma, clip, lr = 2.0, 0.5, 1.0
    return db, sigma, clip, lr, lr * sigma * clip / 6


def test_noise_std_is_the_gaussian_mechanisms():
    db, sigma, clip, lr, expected = _noise_step_setup()
    mechanism = DPSGD(6, 3, noise_multiplier=sigma, clip_norm=clip, sampling_rate=1.0, steps=1, learning_rate=lr)
    noiseless = DPSGD(6, 3, noise_multiplier=0.0, clip_norm=clip, sampling_rate=1.0, steps=1, learning_rate=lr)
    clean = noiseless(db[None], np.random.default_rng(0))[0]
    ours_dev = (mechanism(np.repeat(db[None], 2000, axis=0), np.random.default_rng(1)) - clean).ravel()
    # 8000 Gaussian draws: the sample std is within 10% with overwhelming probability.
    assert np.std(ours_dev) == pytest.approx(expected, rel=0.1)
    assert abs(np.mean(ours_dev)) < 5 * expected / math.sqrt(ours_dev.size)


@pytest.mark.integration  # 300 Opacus optimiser steps: seconds
def test_noise_std_matches_opacus():
    db, sigma, clip, lr, expected = _noise_step_setup()
    clean, _ = _opacus_run(db, 0.0, clip, lr, 1, seed=0)
    opacus_dev = np.array([_opacus_run(db, sigma, clip, lr, 1, seed=s)[0] - clean for s in range(300)]).ravel()
    # 1200 Gaussian draws: the sample std is within 10% with overwhelming probability.
    assert np.std(opacus_dev) == pytest.approx(expected, rel=0.1)


def test_gradient_canary_moves_only_its_coordinate_when_present():
    first, second = _pair()
    noiseless = DPSGD(12, 3, noise_multiplier=0.0, clip_norm=1.0, sampling_rate=1.0, steps=5, release="gradient_trace")
    dbs = np.stack([first, second])
    trace = noiseless(dbs, np.random.default_rng(0))
    np.testing.assert_allclose(trace[0], 1.0)  # the clipped crafted gradient: exactly C per step
    np.testing.assert_array_equal(trace[1], 0.0)  # no ordinary example has a gradient there
    params = DPSGD(12, 3, noise_multiplier=0.0, steps=5)(dbs, np.random.default_rng(0))
    assert params[0, 0] < 0 and params[1, 0] == 0.0
    # With noise and Poisson sampling: the sum's mean shift is T·q·C with the canary, 0 without.
    noisy = DPSGD(12, 3, noise_multiplier=1.0, sampling_rate=0.5, steps=4, release="gradient_sum")
    m = 4000
    out = noisy(np.tile(dbs, (m, 1, 1)), np.random.default_rng(1))[:, 0]  # alternating first, second
    with_canary, without = out[0::2], out[1::2]
    sd = math.sqrt(4 * 1.0 + 4 * 0.25) / math.sqrt(m)  # noise T σ²C² plus Binomial(T, q) C² variance
    assert abs(with_canary.mean() - 2.0) < 5 * sd
    assert abs(without.mean()) < 5 * sd


def test_input_canary_is_clipped_and_black_box_releases():
    base = gaussian_training_set(11, 2, seed=0)
    canary = input_canary(base, value=50.0, label=1.0)
    dbs = np.stack([with_record(base, canary), with_record(base, null_record(base))])
    mechanism = DPSGD(12, 3, noise_multiplier=0.0, clip_norm=1.0, steps=3, release="gradient_trace", canary=canary)
    trace = mechanism(dbs, np.random.default_rng(0))
    assert np.all(np.abs(trace[0]) <= 1.0 + 1e-12) and np.all(trace[0] < 0) and np.all(trace[1] == 0.0)
    margin = DPSGD(12, 3, noise_multiplier=0.0, steps=3, release="margin", canary=canary)(dbs, np.random.default_rng(0))
    loss = DPSGD(12, 3, noise_multiplier=0.0, steps=3, release="loss", canary=canary)(dbs, np.random.default_rng(0))
    assert margin[0, 0] > margin[1, 0]  # training on the canary raises its margin
    np.testing.assert_allclose(loss[:, 0], np.log1p(np.exp(-margin[:, 0])))  # y = 1: loss = log(1 + e^−margin)


def test_shuffled_sampling_includes_every_row_once_per_epoch():
    first, _ = _pair(records=8)
    mechanism = DPSGD(8, 3, noise_multiplier=0.0, sampling_rate=0.25, steps=8, sampling="shuffle",
                      release="gradient_trace")
    trace = mechanism(np.repeat(first[None], 50, axis=0), np.random.default_rng(0))
    # batches of 2 out of 8: the canary is in exactly one of the 4 steps of each epoch
    np.testing.assert_array_equal(trace[:, :4].sum(axis=1), 1.0)
    np.testing.assert_array_equal(trace[:, 4:].sum(axis=1), 1.0)


def test_bugs_change_what_they_claim():
    first, _ = _pair()
    db = first[None]
    kwargs = dict(noise_multiplier=0.0, clip_norm=1.0, steps=2, release="gradient_trace")
    assert np.all(DPSGD(12, 3, bug="no-clipping", **kwargs)(db, 0) == 10.0)  # canary_scale·C unclipped
    noisy = dict(kwargs, noise_multiplier=1.0, clip_norm=10.0, steps=3)
    reused = DPSGD(12, 3, bug="reused-noise", **noisy)(np.repeat(db, 200, axis=0), np.random.default_rng(0))
    assert np.ptp(reused, axis=1).max() < 1e-9  # the same noise every step: a constant trace
    unscaled = DPSGD(12, 3, bug="unscaled-noise", **noisy)(np.repeat(db, 4000, axis=0), np.random.default_rng(0))
    assert np.std(unscaled) == pytest.approx(1.0, rel=0.1)  # σ, not σ·C = 10


def test_digits_training_set_needs_no_download_and_has_a_zero_canary_coordinate():
    db = digits_training_set(40, seed=0)
    assert db.shape == (40, 66) and np.all(db[:, 0] == 0) and set(np.unique(db[:, -2])) <= {0.0, 1.0}
    params = DPSGD(41, 64, noise_multiplier=1.0, steps=2)(with_record(db, gradient_canary(db))[None], 0)
    assert params.shape == (1, 65)


def test_bad_arguments_name_themselves():
    with pytest.raises(InputError, match="'release'"):
        DPSGD(4, 2, 1.0, release="weights")
    with pytest.raises(InputError, match="'sampling_rate'"):
        DPSGD(4, 2, 1.0, sampling_rate=1.5)
    with pytest.raises(InputError, match="'noise_multiplier'"):
        DPSGD(4, 2, -1.0)
    with pytest.raises(InputError, match="'dbs'"):
        DPSGD(4, 2, 1.0)(np.zeros((2, 4, 3)), 0)
    with pytest.raises(InputError, match="role"):
        DPSGD(4, 2, 1.0)(np.full((2, 4, 4), 3.0), 0)


def test_worst_case_init_misclassifies_the_canary_by_the_margin_and_starts_training_there():
    from mechanisms.training.dpsgd import worst_case_init

    canary = np.array([4.0, 0.0, 1.0, 0.0])  # x = (4, 0), label 1, ordinary role
    theta0 = worst_case_init(2, canary, margin=20.0)
    # (2y − 1)·θ₀·(x, 1) = −20, along −(x, 1): θ₀ = −20·(4, 0, 1)/17.
    np.testing.assert_allclose(theta0, -20.0 * np.array([4.0, 0.0, 1.0]) / 17.0)
    mechanism = DPSGD(3, 2, 0.0, steps=1, learning_rate=1e-9, release="parameters", canary=tuple(canary),
                      init=tuple(theta0))
    dbs = np.zeros((1, 3, 4))
    np.testing.assert_allclose(mechanism(dbs, np.random.default_rng(0))[0], theta0, atol=1e-8)
    with pytest.raises(InputError, match="'init'"):
        DPSGD(3, 2, 1.0, init=(1.0, 2.0))
