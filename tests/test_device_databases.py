"""DP-SGD's training sets built on the device from their distinct records (mechanisms.training.device_databases):
the tensor is the whole batch's copy value for value and laid out alike, the bytes that cross are the distinct
records', and training from it is bit for bit training from the copy (CUDA's in tests/test_cuda.py)."""

import numpy as np
import pytest
import torch

from experiments.sync_count import count_syncs
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.training import gaussian_training_set, gradient_canary, input_canary, null_record, with_record
from estimators.distinct_parts import database_parts
from mechanisms.training.device_databases import device_databases
from mechanisms.training.torch_dpsgd import TorchDPSGD

N, P = 10, 3  # records (canary slot included), features


def _pair(seed=0, canary=None):
    base = gaussian_training_set(N - 1, P - 1, seed=seed)
    return np.stack([with_record(base, gradient_canary(base) if canary is None else canary),
                     with_record(base, null_record(base))])


def _read_only(batch):
    batch = np.ascontiguousarray(batch).copy()
    batch.flags.writeable = False
    return batch


def _pair_batch(m=40, seed=0, canary=None):
    """m databases each the pair's first or second, as an MI sample of a two-point prior draws them (read-only, as
    the runner hands them to a trainer that declares reads_databases_only)."""
    pair = _pair(seed, canary)
    return _read_only(pair[np.random.default_rng(seed + 1).integers(0, 2, m)]), pair


def _bytes_of(tensor):
    return np.ascontiguousarray(tensor.numpy()).tobytes()


def test_a_pair_batch_is_its_shared_records_and_the_two_last_rows():
    batch, pair = _pair_batch()
    parts = database_parts(batch)
    assert parts.varying.tolist() == [N - 1]
    assert parts.first.tobytes() == batch[0].tobytes()
    assert parts.distinct.shape == (2, 1, P + 2)
    # Each database's last row is the distinct record its index names; every other row is the first database's.
    assert np.array_equal(parts.distinct[parts.which][:, 0], batch[:, -1])
    assert {row.tobytes() for row in parts.distinct[:, 0]} == {pair[0, -1].tobytes(), pair[1, -1].tobytes()}


def test_repeats_distinct_databases_and_whole_batches():
    batch, _ = _pair_batch()
    broadcast = np.broadcast_to(batch[0], (30, N, P + 2))
    parts = database_parts(broadcast)
    assert len(parts.varying) == 0 and parts.which.tolist() == [0] * 30
    # Databases that all differ in their last row: each run's row, in order, no index.
    own = batch.copy()
    own[:, -1, 0] = np.arange(len(own))
    parts = database_parts(own)
    assert parts.which is None and np.array_equal(parts.distinct[:, 0], own[:, -1])
    # Nothing shared and nothing repeated: the whole batch is the copy.
    fresh = np.random.default_rng(0).normal(size=(5, 4, 3))
    assert database_parts(fresh) is None
    assert database_parts(np.zeros((0, 4, 3))) is None and database_parts(np.zeros((4, 3))) is None


def test_values_are_told_apart_by_their_bits():
    # 0.0 and -0.0 are equal numbers but not the same bits; NaN equals nothing, not even its own bits' copy.
    batch, _ = _pair_batch(m=6)
    batch = batch.copy()
    batch[:, 4, 0] = 0.0
    batch[5, 4, 0] = -0.0
    batch[:, 6, 1] = np.nan
    parts = database_parts(batch)
    assert 4 in parts.varying and 6 not in parts.varying
    got = device_databases(torch, _read_only(batch), torch.float64, torch.device("cpu"))
    assert _bytes_of(got) == batch.tobytes()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("case", ["pair", "broadcast", "distinct rows", "scattered rows", "whole"])
def test_the_built_batch_is_the_copy_value_for_value_and_laid_out_alike(case, dtype):
    batch, _ = _pair_batch()
    if case == "broadcast":
        batch = np.broadcast_to(batch[0], batch.shape)
    elif case == "distinct rows":
        batch = batch.copy()
        batch[:, -1, 0] = np.arange(len(batch))
    elif case == "scattered rows":  # two records apart vary: gathered into rows 2 and 7 by an index
        batch = batch.copy()
        batch[::3, 2, 1] += 1.0
        batch[1::4, 7, 0] -= 1.0
    elif case == "whole":
        batch = np.random.default_rng(5).normal(size=batch.shape)
    batch = batch if case == "broadcast" else _read_only(batch)
    expected = torch.as_tensor(batch.copy()).to(dtype)  # the old route: a copy of the whole array, in C order
    got = device_databases(torch, batch, dtype, torch.device("cpu"))
    assert got.dtype == dtype and got.is_contiguous() and got.stride() == expected.stride()
    assert _bytes_of(got) == _bytes_of(expected)
    meta = device_databases(torch, batch, dtype, torch.device("meta"))  # a GPU's route: shapes and layout
    assert meta.is_meta and meta.shape == expected.shape and meta.stride() == expected.stride()


def test_only_the_distinct_records_cross():
    m = 256
    batch, _ = _pair_batch(m=m)
    with count_syncs("cpu") as counted:
        device_databases(torch, batch, torch.float64, torch.device("cpu"))
    row = (P + 2) * 8
    # The first database, the two distinct canary-slot rows and one index a database: not m databases.
    assert sum(counted.copied.values()) == N * row + 2 * row + m * 8
    assert sum(counted.copied.values()) < batch.nbytes / 30
    with count_syncs("cpu") as counted:
        device_databases(torch, np.broadcast_to(batch[0], batch.shape), torch.float64, torch.device("cpu"))
    assert sum(counted.copied.values()) == N * row


def _trainers():
    base = gaussian_training_set(N - 1, P - 1, seed=0)
    loss_canary = input_canary(base, value=4.0, label=1.0)
    return [(TorchDPSGD(N, P, 0.7, steps=4, sampling_rate=0.5, release="parameters"), None),
            (TorchDPSGD(N, P, 0.7, steps=4, sampling_rate=0.5, release="gradient_trace", hidden=4), None),
            (TorchDPSGD(N, P, 0.7, steps=4, release="parameters", hidden=5, dtype="float32"), None),
            (TorchDPSGD(N, P, 0.7, steps=4, release="loss", hidden=3, sampling="shuffle", sampling_rate=0.5,
                        canary=tuple(loss_canary)), loss_canary)]


@pytest.mark.parametrize("index", range(4))
def test_training_from_the_built_batch_is_training_from_the_copy_bit_for_bit(index):
    mechanism, canary = _trainers()[index]
    batch, _ = _pair_batch(m=33, seed=index, canary=canary)
    # The copy: a writable array of one's own, which torch takes as it is (the route the change leaves alone).
    expected = mechanism.train_batch(batch.copy(), np.random.default_rng(7))
    got = mechanism.train_batch(batch, np.random.default_rng(7))
    assert got.tobytes() == expected.tobytes()


def test_an_audit_sample_through_the_runner_is_the_copys():
    # The runner's MI-sample job: a read-only chunk view of the prior's draws, here 3 chunks of 25.
    mechanism, _ = _trainers()[1]
    batch, _ = _pair_batch(m=70, seed=3)
    settings = ExecutionSettings(chunk_size=25)
    with MechanismRunner(mechanism, "dpsgd", settings) as runner:
        got = runner.sample(batch, np.random.default_rng(4))
    with MechanismRunner(lambda dbs, rng: mechanism.train_batch(dbs.copy(), rng), "copy", settings) as runner:
        expected = runner.sample(batch, np.random.default_rng(4))
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("index", range(4))
def test_theta0_crosses_once_for_the_calls_that_start_from_it_and_trains_as_a_fresh_one(monkeypatch, index):
    from estimators.device import COPY_LISTENERS
    from mechanisms.training import torch_dpsgd

    mechanism, canary = _trainers()[index]
    batch, _ = _pair_batch(m=20, seed=index, canary=canary)
    monkeypatch.setattr(torch_dpsgd, "_INITIAL", {})
    dtype = torch.float32 if mechanism.dtype == "float32" else torch.float64
    fresh = mechanism._initial_parameters(torch, torch.device("cpu"), dtype)  # made and copied here, each call
    theta0 = []
    COPY_LISTENERS.append(lambda device, nbytes: theta0.append(nbytes) if nbytes == fresh.nbytes else None)
    try:
        releases = [mechanism.train_batch(batch, np.random.default_rng(7)) for _ in range(3)]
    finally:
        COPY_LISTENERS.pop()
    assert theta0 == [fresh.nbytes]  # the first call's θ₀ only (no other copy of that size here)
    kept = mechanism.initial_parameters(torch, torch.device("cpu"), dtype)
    assert kept.numpy().tobytes() == fresh.numpy().tobytes()  # never written by the trainings that read it
    # The releases of calls starting from the kept θ₀ are those of a call that made its own.
    monkeypatch.setattr(torch_dpsgd, "_INITIAL", {})
    expected = mechanism.train_batch(batch, np.random.default_rng(7))
    assert all(r.tobytes() == expected.tobytes() for r in releases)
