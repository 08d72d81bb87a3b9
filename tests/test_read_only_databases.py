"""Mechanisms that declare they only read their databases (mechanisms.base.reads_databases_only) are called with a
read-only view of the runner's, not a copy; the checks read a broadcast database once; the releases are the ones the
copies gave, bit for bit."""

import numpy as np
import pytest

from estimators.validation import InputError, first_nonfinite_index, without_repeats
from mechanisms.base import MechanismError, reads_databases_only, run_on_batch
from mechanisms.training.dpsgd import DPSGD
from mechanisms.training.records import gaussian_training_set, gradient_canary, with_record


class Writer:
    """A mechanism that writes into its databases (allowed: it declares nothing)."""

    def __call__(self, dbs, rng):
        dbs[:] = 7.0
        return dbs.sum(axis=(1, 2))[:, None]


class DeclaredWriter(Writer):
    reads_databases_only = True


class Reader:
    reads_databases_only = True

    def __init__(self):
        self.seen = None

    def __call__(self, dbs, rng):
        self.seen = dbs
        return dbs.sum(axis=(1, 2))[:, None]


def test_reads_databases_only_reads_the_declaration_and_nothing_else():
    assert reads_databases_only(Reader()) and reads_databases_only(DPSGD(4, 2, 1.0))
    assert not reads_databases_only(Writer()) and not reads_databases_only(lambda dbs, rng: dbs)
    fake = Writer()
    fake.reads_databases_only = 1  # only True declares it
    assert not reads_databases_only(fake)


def test_a_mechanism_that_declares_nothing_gets_a_copy_it_may_change():
    batch = np.ones((3, 2, 2))
    out = run_on_batch(Writer(), batch, np.random.default_rng(0), name="w")
    assert np.array_equal(batch, np.ones((3, 2, 2)))  # the runner's databases unchanged
    assert np.array_equal(out, np.full((3, 1), 28.0))


def test_a_declared_reader_gets_a_read_only_view_and_a_write_is_refused():
    batch = np.broadcast_to(np.arange(4.0).reshape(2, 2), (5, 2, 2))
    reader = Reader()
    out = run_on_batch(reader, batch, np.random.default_rng(0), name="r")
    assert np.shares_memory(reader.seen, batch) and not reader.seen.flags.writeable
    assert np.array_equal(out, np.full((5, 1), 6.0))
    writable = np.ones((3, 2, 2))
    with pytest.raises(MechanismError, match="read-only"):
        run_on_batch(DeclaredWriter(), writable, np.random.default_rng(0), name="w", locate=False)
    assert np.array_equal(writable, np.ones((3, 2, 2)))


def test_without_repeats_keeps_each_value_once():
    one = np.arange(6.0).reshape(2, 3)
    repeated = np.broadcast_to(one, (4, 2, 3))
    assert without_repeats(repeated).shape == (1, 2, 3) and np.array_equal(without_repeats(repeated)[0], one)
    columns = np.broadcast_to(np.arange(3.0)[:, None], (3, 5))
    assert without_repeats(columns).shape == (3, 1)
    plain = np.ones((2, 2))
    assert without_repeats(plain) is plain


@pytest.mark.parametrize("where", [(0, 1), (2, 0)])
def test_first_nonfinite_index_of_a_broadcast_is_the_copys(where):
    one = np.zeros((4, 3))
    one[where] = np.nan
    for repeated in (np.broadcast_to(one, (6, 4, 3)), np.broadcast_to(one[:, None, :], (4, 5, 3))):
        copy = np.array(repeated)
        expected = int(np.argwhere(~np.isfinite(copy))[0][0])  # the first bad entry's first index, entry by entry
        assert first_nonfinite_index(repeated) == expected
    assert first_nonfinite_index(np.broadcast_to(np.zeros((4, 3)), (6, 4, 3))) is None


def _one_database() -> np.ndarray:
    """One training set of DPSGD(8, 2, ...): 7 records and a gradient canary, rows [x (2 features), y, role]."""
    base = gaussian_training_set(7, 1, seed=3)
    return with_record(base, gradient_canary(base))


def test_dpsgd_still_refuses_a_broadcast_with_a_bad_role():
    db = _one_database()
    db[0, -1] = 5.0
    with pytest.raises(InputError, match="role column"):
        DPSGD(8, 2, 1.0)(np.broadcast_to(db, (4, *db.shape)), np.random.default_rng(0))


def _trainers():
    from mechanisms.training.torch_dpsgd import TorchDPSGD

    return [DPSGD(8, 2, 1.0, steps=3, release="parameters"), DPSGD(8, 2, 1.0, steps=3, release="loss", chunk=7),
            TorchDPSGD(8, 2, 1.0, steps=3, release="parameters"),
            TorchDPSGD(8, 2, 1.0, steps=3, release="gradient_trace"),
            TorchDPSGD(8, 2, 1.0, steps=3, release="parameters", hidden=4, dtype="float32"),
            TorchDPSGD(8, 2, 1.0, steps=3, release="loss", hidden=3, sampling="shuffle", sampling_rate=0.5)]


@pytest.mark.parametrize("index", range(6))
def test_the_trainers_release_what_they_did_from_a_copy(index):
    mechanism = _trainers()[index]
    db = _one_database()
    batch = np.broadcast_to(db, (20, *db.shape))
    # The old call: the runner's copy of its databases, a writable C-contiguous array.
    old = mechanism(batch.copy(), np.random.default_rng(11))
    new = run_on_batch(mechanism, batch, np.random.default_rng(11), name="dpsgd")
    assert new.tobytes() == np.asarray(old, dtype=np.float64).tobytes()
    direct = np.ascontiguousarray(batch)
    direct.flags.writeable = False  # a read-only array of one's own, not a broadcast
    assert mechanism(direct, np.random.default_rng(11)).tobytes() == old.tobytes()


def test_a_broadcast_spread_on_the_device_is_the_copy_laid_out_alike():
    import torch

    from mechanisms.training.device_databases import device_databases

    db = _one_database()
    batch = np.broadcast_to(db, (9, *db.shape))
    expected = torch.as_tensor(batch.copy())  # the old route: the runner's copy, shared by torch
    for dtype in (torch.float64, torch.float32):
        got = device_databases(torch, batch, dtype, torch.device("cpu"))
        assert got.is_contiguous() and got.stride() == expected.stride()
        assert torch.equal(got, expected.to(dtype))
    # The GPU's route, spread on the device (here the meta device: shapes and layout, no values).
    meta = device_databases(torch, batch, torch.float64, torch.device("meta"))
    assert meta.is_meta and meta.shape == expected.shape and meta.stride() == expected.stride()


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_cuda_trainer_releases_from_a_broadcast_what_it_did_from_a_copy():
    from mechanisms.training.torch_dpsgd import TorchDPSGD

    db = _one_database()
    batch = np.broadcast_to(db, (300, *db.shape))
    for kwargs in ({"release": "parameters", "hidden": 4}, {"release": "gradient_trace"}):
        mechanism = TorchDPSGD(8, 2, 1.0, steps=3, device="cuda", **kwargs)
        old = mechanism(batch.copy(), np.random.default_rng(3))
        new = run_on_batch(mechanism, batch, np.random.default_rng(3), name="dpsgd")
        assert new.tobytes() == old.tobytes()
