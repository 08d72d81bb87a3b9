"""Output blocks kept on the audit's device (estimators/resident.py):
one host→device copy of a block for every float-bit statistic, fold, the ideal rounding and the critic scorer's two
values, with the codes, scores, statistics and audits bit for bit what the copies by chunk or by call gave; the copies
counted by estimators.device.to_device's listeners."""

from __future__ import annotations

import contextlib
import gc

import numpy as np
import pytest
import torch

from audit_json import timeless_json
from audit.statistics import arithmetic, float_bits
from audit.statistics.arithmetic import device_round_significand
from audit.statistics.classifier_critic import cross_fit
from audit.statistics.float_bits import (FLOAT_STATISTICS, NEGATIVE_ZERO_CODE, NONFINITE_CODE, ZERO_CODE,
                                         device_code_rows)
from estimators.resident import ResidentOutputs, keep_on_device, resident_block, rows_of
from estimators import resident
from estimators.device import COPY_LISTENERS, to_device

CPU = torch.device("cpu")
KINDS = [kind for kind, *_ in FLOAT_STATISTICS]


@contextlib.contextmanager
def copied_bytes():
    """The bytes copied to a device through to_device inside, as a list of sizes."""
    sizes = []

    def listener(device, nbytes):
        sizes.append(nbytes)
    COPY_LISTENERS.append(listener)
    try:
        yield sizes
    finally:
        COPY_LISTENERS.remove(listener)


@pytest.fixture
def device_routes(monkeypatch):
    """The statistics' device code on the CPU device, and the critic scorer reading the store, as beside a GPU
    (experiments.stage_profile.device_routes)."""
    monkeypatch.setattr(float_bits, "on_device", lambda device: device is not None)
    monkeypatch.setattr(arithmetic, "on_device", lambda device: device is not None)
    monkeypatch.setattr(resident, "on_device", lambda device: device is not None)


def _outputs(seed: int, rows: int = 300, columns: int = 5) -> np.ndarray:
    """float32 parameters read as doubles (TorchDPSGD's), with zeros, subnormals and non-finite values mixed in."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(rows, columns)).astype(np.float32).astype(np.float64)
    y.flat[rng.choice(y.size, 12, replace=False)] = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -2.5e-320,
                                                      2.0**-1022, 1e300, -7.25, 3.0, 2.0**-1074 * 6]
    return y


def _bit_codes(y: np.ndarray) -> dict:
    """The codes from each double's IEEE 754 fields read with NumPy's integer view and Python integers: significand
    s and exponent e with |y| = s·2^(e − 53), 2^52 ≤ s < 2^53 (IEEE 754-2008, Section 3.4)."""
    bits = y.view(np.uint64).ravel()
    codes = {"grid exponent": [], "binary exponent": [], "low significand bits": []}
    for value, pattern in zip(y.ravel(), bits):
        biased, fraction = int(pattern >> np.uint64(52)) & 0x7FF, int(pattern) & ((1 << 52) - 1)
        if value == 0 or biased == 0x7FF:
            for code in codes.values():
                # the sign bit (bit 63) tells −0.0 from +0.0
                negative = bool(pattern >> np.uint64(63))
                code.append(NONFINITE_CODE if value != 0 else NEGATIVE_ZERO_CODE if negative else ZERO_CODE)
            continue
        if biased:
            s, e = fraction | (1 << 52), biased - 1022
        else:  # subnormal: fraction·2^-1074 with fraction of bit length L
            length = fraction.bit_length()
            s, e = fraction << (53 - length), length - 1074
        trailing = (s & -s).bit_length() - 1
        codes["grid exponent"].append(e - 53 + trailing)
        codes["binary exponent"].append(e)
        codes["low significand bits"].append(s & 3)
    return {name: np.array(code, dtype=np.float64).reshape(y.shape) for name, code in codes.items()}


def test_codes_read_from_the_kept_copy_are_the_bit_fields_codes():
    y = _outputs(0)
    expected = _bit_codes(y)
    for name, codes in expected.items():
        streamed = device_code_rows(name, y, None, False, CPU)
        with keep_on_device() as store:
            kept = device_code_rows(name, y, None, False, CPU)
            again = device_code_rows(name, y, None, True, CPU)
            assert len(store) == 1
        np.testing.assert_array_equal(kept, codes, err_msg=name)
        np.testing.assert_array_equal(streamed, codes, err_msg=name)
        np.testing.assert_array_equal(again, codes.min(axis=1, keepdims=True), err_msg=name)


def test_a_block_is_copied_once_for_every_family_and_reduction(monkeypatch):
    monkeypatch.setattr(float_bits, "DEVICE_CHUNK_ELEMENTS", 40)  # many chunks: the kept copy is sliced by rows
    y = _outputs(1)
    shift = np.full(y.shape[1], 0.5)
    with copied_bytes() as without:
        streamed = [device_code_rows(kind.code, y, shift, reduce, CPU) for kind in KINDS for reduce in (False, True)]
    with copied_bytes() as sizes, keep_on_device():
        kept = [device_code_rows(kind.code, y, shift, reduce, CPU) for kind in KINDS for reduce in (False, True)]
    for a, b in zip(streamed, kept):
        np.testing.assert_array_equal(a, b)
    shifts = 2 * shift.nbytes  # the residue's shift, with and without reduction
    assert sum(sizes) == y.nbytes + shifts
    assert sum(without) == 8 * y.nbytes + shifts


def test_fits_and_scores_are_the_same_with_one_copy_and_the_hash_check_reads_it(device_routes):
    rng = np.random.default_rng(2)
    first = rng.normal(size=(400, 30)).astype(np.float32).astype(np.float64)
    second = first[::-1] + rng.laplace(size=(400, 30))
    fresh = rng.normal(size=(200, 30))
    for kind in KINDS:
        with copied_bytes() as sizes:
            fitted = kind.fit(first, second, device=CPU)
        if fitted is None:
            continue
        # Each input's outputs once; the rest is the hash's weights and the residue's shift, a row's size each.
        assert sorted(s for s in sizes if s > 30 * 8) == [first.nbytes, second.nbytes], kind.__name__
        with monkeypatch_store_off():
            old = kind.fit(first, second, device=CPU)
        assert (old.reduce, old.ratio.unseen) == (fitted.reduce, fitted.ratio.unseen)
        np.testing.assert_array_equal(old(fresh), fitted(fresh))


@contextlib.contextmanager
def monkeypatch_store_off():
    """No store: every reader copies its blocks by chunks or at each call (the code before the store)."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(ResidentOutputs, "tensor", lambda self, array, device, pinned=False: None)
        yield


def test_cross_fitted_folds_gather_their_rows_from_one_copy_of_the_cell(device_routes):
    rng = np.random.default_rng(3)
    y = np.concatenate([rng.normal(size=(300, 4)), rng.normal(size=(300, 4)) + 1.0]).astype(np.float32)
    y = y.astype(np.float64)
    is_first = np.arange(600) < 300
    fold = np.random.default_rng(4).permutation(np.arange(600) % 3)
    for kind in KINDS:
        with monkeypatch_store_off(), copied_bytes() as before:
            old = cross_fit(kind, is_first, y, fold, 7, device=CPU)
        with keep_on_device(), copied_bytes() as sizes:
            new = cross_fit(kind, is_first, y, fold, 7, device=CPU)
        assert (old is None) == (new is None), kind.__name__
        if new is None:
            continue
        np.testing.assert_array_equal(old.out_of_fold, new.out_of_fold)
        # The cell's block once (its folds' rows gathered there: their indices copied), against a copy a fold.
        block = [s for s in sizes if s == y.nbytes]
        assert len(block) == 1 and sum(sizes) < 1.3 * y.nbytes < sum(before), kind.__name__


def test_the_rounding_and_the_codes_share_one_copy():
    y = _outputs(5)
    with copied_bytes() as sizes, keep_on_device():
        rounded = device_round_significand(y, 32, CPU)
        codes = device_code_rows("binary exponent", y, None, True, CPU)
    assert sum(sizes) == y.nbytes
    np.testing.assert_array_equal(rounded.view(np.int64), device_round_significand(y, 32, CPU).view(np.int64))
    np.testing.assert_array_equal(codes, _bit_codes(y)["binary exponent"].min(axis=1, keepdims=True))


def test_the_scorer_reads_the_rounded_outputs_from_the_roundings_device_copy(device_routes):
    y = _outputs(15)
    with copied_bytes() as before:  # no store: the rounding comes back and is copied to the device again
        device_round_significand(y, 32, CPU)
        resident.device_columns(device_round_significand(y, 32, CPU), CPU)
    with copied_bytes() as sizes, keep_on_device() as store:
        rounded = device_round_significand(y, 32, CPU)
        assert store.kept_bytes == 2 * y.nbytes  # the outputs and their rounding, each kept once
        columns = resident.device_columns((rounded, y[:, :2]), CPU)  # the scorer's v: the rounded outputs and w
    assert sizes == [y.nbytes, y[:, :2].nbytes] and sum(before) == 3 * y.nbytes  # the outputs once, and w
    # Independently: NumPy's rounding (frexp/ldexp) beside the outputs' first two columns, bit for bit.
    expected = np.concatenate([arithmetic.round_significand(y, 32), y[:, :2]], axis=1)
    np.testing.assert_array_equal(rounded.view(np.int64), expected[:, :-2].view(np.int64))
    np.testing.assert_array_equal(columns.numpy().view(np.int64), expected.view(np.int64))
    del rounded
    gc.collect()
    assert store.kept_bytes == 0  # left: the store emptied


def test_a_block_is_forgotten_with_its_array_and_the_store_is_emptied_on_leaving():
    with keep_on_device() as store:
        y = _outputs(6)
        view = y[:, :]  # the same block through another view: the same copy
        assert resident_block(y, CPU) is resident_block(view, CPU)
        assert store.kept_bytes == y.nbytes
        del y, view
        gc.collect()
        assert store.kept_bytes == 0 and len(store) == 0
        z = _outputs(7)
        resident_block(z, CPU)
        with keep_on_device() as inner:  # nested: the audit's store
            assert inner is store
    assert len(store) == 0 and store.kept_bytes == 0
    assert resident_block(z, CPU) is None  # no store entered


def test_rows_are_gathered_from_the_blocks_copy_and_a_block_past_the_cap_is_not_kept():
    y = _outputs(8)
    store = ResidentOutputs(max_bytes=y.nbytes)
    mask = np.arange(len(y)) % 3 == 0
    chosen = store.rows(y, mask)
    np.testing.assert_array_equal(chosen, y[mask])
    with copied_bytes() as sizes:
        gathered = store.tensor(chosen, CPU)  # the block is copied, its rows' indices too: then the cap is reached
    assert sizes == [y.nbytes, 8 * int(mask.sum())]
    assert torch.equal(gathered, torch.from_numpy(y[mask])) or np.array_equal(gathered.numpy(), y[mask], equal_nan=True)
    assert store.tensor(y + 1.0, CPU) is None  # past the cap: the reader copies by chunks
    np.testing.assert_array_equal(rows_of(y, [2, 0]), y[[2, 0]])  # no store entered: plain indexing


def test_to_device_tells_its_listeners_the_bytes_and_returns_the_values():
    values = np.arange(6, dtype=np.float64)
    with copied_bytes() as sizes:
        tensor = to_device(values, CPU)
        half = to_device(values, CPU, dtype=torch.float32)
    assert sizes == [48, 24]
    assert tensor.dtype == torch.float64 and torch.equal(tensor, torch.arange(6, dtype=torch.float64))
    assert half.dtype == torch.float32


def _laplace_audit(mi_critic: str):
    """The textbook float Laplace (Mironov 2012), refuted through its bits (tests/test_float_bits_device.py's)."""
    from audit.engine import run_audit
    from audit.spec import AuditSpec
    from mechanisms.claims.parsing import parse_claim
    from mechanisms.inputs.priors import TwoPoint

    def mechanism(dbs, rng):
        return dbs.reshape(len(dbs), -1).sum(axis=1, keepdims=True) + rng.laplace(0, 10.0, (len(dbs), 1))
    return run_audit(AuditSpec(mechanism=mechanism, priors=[TwoPoint(np.zeros((1, 1)), np.ones((1, 1)))],
                               claim=parse_claim("dp:0.1"), samples=4000, event_runs=4000, seed=3, device="cpu",
                               mi_critic=mi_critic))


@pytest.mark.parametrize("mi_critic", ["classifier", "neural"])
@pytest.mark.train
def test_an_audit_with_one_copy_a_block_gives_the_events_and_bounds_of_copies_by_chunk(device_routes, mi_critic):
    with copied_bytes() as kept_sizes:
        kept = _laplace_audit(mi_critic)
    with monkeypatch_store_off(), copied_bytes() as streamed_sizes:
        streamed = _laplace_audit(mi_critic)
    assert kept.float_event_test is not None and kept.claim_verdict == streamed.claim_verdict == "refuted"
    assert timeless_json(kept) == timeless_json(streamed)  # events, bounds, notes: the whole result
    assert sum(kept_sizes) < sum(streamed_sizes)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_one_copy_a_block_gives_the_bit_fields_codes_and_the_cpus_rounding():
    cuda = torch.device("cuda")
    y = _outputs(9, rows=2000, columns=7)
    expected = _bit_codes(y)
    with copied_bytes() as sizes, keep_on_device() as store:
        for name, codes in expected.items():
            np.testing.assert_array_equal(device_code_rows(name, y, None, False, cuda), codes, err_msg=name)
            np.testing.assert_array_equal(device_code_rows(name, y, None, True, cuda), codes.min(axis=1, keepdims=True))
        rounded = device_round_significand(y, 32, cuda)
        assert store.kept_bytes == y.nbytes
    assert sum(sizes) == y.nbytes
    np.testing.assert_array_equal(rounded.view(np.int64), device_round_significand(y, 32, CPU).view(np.int64))


def test_a_store_of_its_own_is_apart_from_the_looks_and_emptied_on_leaving():
    y = _outputs(10)
    with keep_on_device() as look:
        with keep_on_device(own=True) as cell:
            assert cell is not look
            resident_block(y, CPU)
            assert cell.kept_bytes == y.nbytes and look.kept_bytes == 0
        assert len(cell) == 0 and cell.kept_bytes == 0
        assert resident_block(y, CPU) is not None and look.kept_bytes == y.nbytes  # the look's store again


def _critics_and_outputs():
    """One critic trained on (x, y) with y of 7 columns, its expected scores on new outputs at two values of x
    (T(a, y) and T(b, y)): the critic on critic_inputs of each input, computed here from its standardization."""
    from estimators.neural import CriticConfig, fit_critics
    from estimators.standardization import critic_inputs

    rng = np.random.default_rng(11)
    x = rng.normal(size=(1, 600, 1))
    y = np.concatenate([x + rng.normal(size=(1, 600, 1)), rng.normal(size=(1, 600, 6))], axis=2)
    fit = fit_critics(x, y, config=CriticConfig(max_steps=30), seed=0, quiet=True)
    outputs, values = rng.normal(size=(250, 7)), [np.zeros((250, 1)), np.ones((250, 1))]
    _, _, ensemble, u_stats, v_stats, _ = fit.scorer._chunks[0]
    with torch.no_grad():
        v = critic_inputs(torch.from_numpy(outputs), v_stats[0][0], v_stats[1][0])
        expected = [ensemble(torch.cat([critic_inputs(torch.from_numpy(u), u_stats[0][0], u_stats[1][0]), v],
                                       dim=-1)[None], slice(0, 1))[0].double().numpy() for u in values]
    return fit.scorer, outputs, values, expected


@pytest.mark.train
def test_the_scorers_outputs_are_copied_once_for_both_values_with_the_same_scores(device_routes):
    scorer, outputs, values, expected = _critics_and_outputs()
    with monkeypatch_store_off(), copied_bytes() as before:
        old = [scorer(0, u, outputs) for u in values]
    with keep_on_device() as store, copied_bytes() as sizes:
        new = [scorer(0, u, outputs) for u in values]
        assert store.kept_bytes == outputs.nbytes
    u_bytes = values[0].nbytes
    assert sorted(before) == sorted([u_bytes, u_bytes, outputs.nbytes, outputs.nbytes])
    assert sorted(sizes) == sorted([u_bytes, u_bytes, outputs.nbytes])  # the outputs once, each value's own column
    for old_scores, new_scores, scores in zip(old, new, expected):
        np.testing.assert_array_equal(new_scores, old_scores)
        np.testing.assert_array_equal(new_scores, scores)


@pytest.mark.train
def test_on_the_cpu_the_scorer_reads_its_outputs_memory_and_keeps_no_copy():
    scorer, outputs, values, expected = _critics_and_outputs()
    with keep_on_device() as store, copied_bytes() as sizes:
        scores = [scorer(0, u, outputs) for u in values]
        assert len(store) == 0  # a kept copy would be a host copy of the outputs: the tensor is their memory
    assert sum(sizes) == 2 * (values[0].nbytes + outputs.nbytes)  # what a GPU run without the store copies
    for got, want in zip(scores, expected):
        np.testing.assert_array_equal(got, want)
    # v as column blocks, the last columns left for the scorer's zero padding: pad_columns of their concatenation.
    from estimators.critic_problems import pad_columns

    zeroed = pad_columns(outputs[:, :6], 7)
    np.testing.assert_array_equal(scorer(0, values[1], (outputs[:, :4], outputs[:, 4:6])), scorer(0, values[1], zeroed))
    np.testing.assert_array_equal(scorer(0, values[1], (outputs[:, :3], outputs[:, 3:])), expected[1])


@pytest.mark.train
def test_an_audit_on_another_thread_enters_a_store_of_its_own_with_the_same_copies(device_routes):
    # experiments.stage_pipeline runs stages in a thread pool, whose threads start with no store (a context
    # variable: a new thread's context is empty); the audit enters one of its own there (audit.engine._run_audit).
    from concurrent.futures import ThreadPoolExecutor

    with copied_bytes() as here:
        main = _laplace_audit("neural")
    with copied_bytes() as there, ThreadPoolExecutor(1) as threads:
        assert threads.submit(resident._STORE.get).result() is None  # the pool's thread sees no store of ours
        other = threads.submit(_laplace_audit, "neural").result()
    with monkeypatch_store_off(), copied_bytes() as streamed:
        _laplace_audit("neural")
    assert timeless_json(other) == timeless_json(main)
    assert sorted(there) == sorted(here) and sum(there) < sum(streamed)  # the store's copies, not the chunked ones


def test_a_user_call_thread_sees_the_callers_store():
    # mechanisms.calls.user_call runs a bounded user call on a daemon thread with a copy of the caller's context:
    # a mechanism that reads outputs through the helpers there reads the audit's store.
    from mechanisms.calls.user_call import run_on_daemon_thread

    with keep_on_device() as store:
        seen, error, timed_out = run_on_daemon_thread(resident._STORE.get, 10.0, "test-call")
    assert seen is store and error is None and not timed_out


def test_a_device_named_without_its_index_is_the_current_one(monkeypatch):
    # The audit's device is "cuda" (resolve_device), the scorer's a tensor's "cuda:0": one copy for both.
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert resident._device_name(torch.device("cuda")) == resident._device_name("cuda:0") == "cuda:0"
    assert resident._device_name(CPU) == resident._device_name("cpu") == "cpu"
