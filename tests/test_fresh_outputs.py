"""Outputs a mechanism declares fresh (mechanisms.base.returns_fresh_outputs) are taken without a copy, and are the
same outputs, bit for bit, as the copied ones."""

import numpy as np
import pytest

from mechanisms.base import check_batch_output, returns_fresh_outputs, run_on_batch
from mechanisms.training.dpsgd import DPSGD
from mechanisms.training.records import gaussian_training_set, gradient_canary, with_record


class Buffered:
    """A mechanism that hands back one buffer it overwrites on every call: its outputs must be copied."""

    def __init__(self):
        self.buffer = np.zeros((3, 2))

    def __call__(self, dbs, rng):
        self.buffer[:] = rng.normal(size=self.buffer.shape)
        return self.buffer


class Fresh(Buffered):
    fresh_outputs = True

    def __call__(self, dbs, rng):
        return rng.normal(size=(len(dbs), 2))


def test_returns_fresh_outputs_reads_the_declaration_and_nothing_else():
    assert returns_fresh_outputs(Fresh()) and returns_fresh_outputs(DPSGD(4, 2, 1.0))
    assert not returns_fresh_outputs(Buffered()) and not returns_fresh_outputs(lambda dbs, rng: dbs)
    fake = Buffered()
    fake.fresh_outputs = "yes"  # only True declares it
    assert not returns_fresh_outputs(fake)


def test_check_batch_output_copies_unless_told_not_to():
    values = np.arange(6.0).reshape(3, 2)
    copied, kept = check_batch_output(values, 3, "mechanism 'm'"), check_batch_output(values, 3, "mechanism 'm'",
                                                                                       copy=False)
    assert copied is not values and not np.shares_memory(copied, values) and kept is values
    assert np.array_equal(copied, values)
    # Not float64: converted, so a new array whatever copy says.
    ints = np.arange(6).reshape(3, 2)
    converted = check_batch_output(ints, 3, "mechanism 'm'", copy=False)
    assert converted.dtype == np.float64 and np.array_equal(converted, ints)


def test_run_on_batch_keeps_a_fresh_output_and_copies_a_buffer():
    dbs = np.zeros((3, 1, 1))
    buffered = Buffered()
    first = run_on_batch(buffered, dbs, np.random.default_rng(0), name="m")
    second = run_on_batch(buffered, dbs, np.random.default_rng(1), name="m")
    # The buffer was overwritten by the second call; the first call's outputs were not.
    assert np.array_equal(first, np.random.default_rng(0).normal(size=(3, 2)))
    assert not np.shares_memory(first, buffered.buffer) and not np.shares_memory(second, buffered.buffer)
    fresh = run_on_batch(Fresh(), dbs, np.random.default_rng(0), name="m")
    assert np.array_equal(fresh, first)  # the same draws, no copy made


def _pair_batch(m: int, seed: int = 0) -> np.ndarray:
    base = gaussian_training_set(7, 1, seed=seed)
    return np.repeat(with_record(base, gradient_canary(base))[None], m, axis=0)


@pytest.mark.parametrize("release", ["parameters", "gradient_trace", "loss"])
@pytest.mark.parametrize("chunk, m", [(2048, 50), (20, 50)])
def test_dpsgd_calls_return_what_the_concatenated_pieces_did(release, chunk, m):
    # The old computation: np.concatenate of the pieces of `chunk` runs, each trained from the same generator in turn.
    mechanism = DPSGD(8, 2, 1.0, steps=3, release=release, chunk=chunk)
    dbs = _pair_batch(m)
    rng = np.random.default_rng(5)
    old = np.concatenate([mechanism._train(dbs[start:start + chunk], rng) for start in range(0, m, chunk)], axis=0)
    new = mechanism(dbs, np.random.default_rng(5))
    assert new.dtype == old.dtype and new.shape == old.shape and np.array_equal(new, old)
    assert new.tobytes() == old.tobytes()


@pytest.mark.parametrize("release", ["parameters", "gradient_trace", "loss"])
def test_torch_dpsgd_through_the_runner_is_unchanged_without_the_copy(monkeypatch, release):
    # The runner's outputs for a seed with the fresh outputs taken as they are, and with them copied as before
    # (the declaration taken away): the same bytes.
    pytest.importorskip("torch")
    from mechanisms.execution.runner import MechanismRunner
    from mechanisms.training.torch_dpsgd import TorchDPSGD, on_device

    dbs = _pair_batch(600)

    def outputs():
        with MechanismRunner(on_device(DPSGD(8, 2, 1.0, steps=3, release=release), "cpu"), "dpsgd") as runner:
            return runner.sample(dbs, np.random.default_rng(11))

    fresh = outputs()
    monkeypatch.setattr(TorchDPSGD, "fresh_outputs", False)
    copied = outputs()
    assert fresh.shape == (600, {"parameters": 3, "gradient_trace": 3, "loss": 1}[release])
    assert fresh.tobytes() == copied.tobytes()
