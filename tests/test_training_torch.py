"""The torch DP-SGD step against the NumPy one (same data, same seed), the MLP's per-sample
gradients against autograd, and the CUDA path (skipped without a GPU)."""

import pickle

import numpy as np
import pytest
import torch
from scipy import stats

from estimators.validation import InputError
from mechanisms.training import DPSGD, gaussian_training_set, gradient_canary, input_canary, null_record, with_record
from mechanisms.training.dpsgd import clipped_gradient_sum, per_sample_gradients
from mechanisms.training.torch_dpsgd import (TorchDPSGD, on_device, torch_clipped_gradient_sum,
                                             torch_factored_clipped_sum, torch_logits, torch_per_sample_gradients)

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
N, P = 12, 3  # records (canary slot included) and features (canary coordinate included)


def _databases(m=6, seed=0, canary=None):
    """m training sets: random examples, a null record, and the canary (default: gradient) in the last row."""
    rng = np.random.default_rng(seed)
    dbs = []
    for _ in range(m):
        base = gaussian_training_set(N - 2, P - 1, seed=int(rng.integers(2**31)))
        with_null = with_record(base, null_record(base))
        dbs.append(with_record(with_null, gradient_canary(base) if canary is None else canary))
    return np.stack(dbs)


def test_logistic_per_sample_gradients_and_clipped_sums_equal_numpy():
    rng = np.random.default_rng(1)
    dbs = _databases()
    theta = rng.normal(size=(6, P + 1))
    canary = np.zeros(P + 1)
    canary[0] = 10.0
    expected = per_sample_gradients(theta, dbs, canary)
    got = torch_per_sample_gradients(torch.as_tensor(theta), torch.as_tensor(dbs), torch.as_tensor(canary))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-14)
    included = rng.random((6, N)) < 0.5
    for clip in (None, 0.3):
        np.testing.assert_allclose(torch_clipped_gradient_sum(got, torch.as_tensor(included), clip).numpy(),
                                   clipped_gradient_sum(expected, included, clip), rtol=1e-12, atol=1e-14)


def test_mlp_per_sample_gradients_equal_autograd():
    hidden = 5
    mechanism = TorchDPSGD(N, P, 1.0, hidden=hidden)
    dbs = torch.as_tensor(_databases(m=4, canary=input_canary(gaussian_training_set(2, P - 1), value=2.0)))
    theta = torch.randn(4, mechanism.parameter_dim, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    canary = torch.zeros(mechanism.parameter_dim, dtype=torch.float64)
    got = torch_per_sample_gradients(theta, dbs, canary, hidden)

    def loss(flat, row):  # one example's logistic loss on one model, differentiated by autograd
        z = torch_logits(flat[None], row[None, None, :-2], hidden)[0, 0]
        return torch.nn.functional.softplus(z) - row[-2] * z

    for run in range(4):
        for example in range(N):
            row = dbs[run, example]
            flat = theta[run].clone().requires_grad_(True)
            (expected,) = torch.autograd.grad(loss(flat, row), flat)
            expected = expected * float(row[-1] == 1.0)  # the null record contributes nothing
            torch.testing.assert_close(got[run, example], expected, rtol=1e-10, atol=1e-12)
    # Feature 0 is 0 in ordinary examples: their gradients vanish on W1[:, 0], the first coordinate.
    ordinary = _databases(m=4)
    grads = torch_per_sample_gradients(theta, torch.as_tensor(ordinary), canary, hidden)
    assert torch.all(grads[:, :-2, 0] == 0)


@pytest.mark.parametrize("hidden", [0, 5])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_factored_clipped_sum_equals_the_sum_of_materialized_clipped_gradients(hidden, dtype):
    # The reference forms every per-sample gradient (m, n, D) and clips it by its own norm; the factored sum
    # never forms them. Null records, a gradient canary, input values of several scales, and clipping norms
    # that clip none, some and all of the gradients.
    m, p = 5, P + 3
    d = p + 1 if hidden == 0 else hidden * p + 2 * hidden + 1
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(m, N, p, generator=generator, dtype=torch.float64) * torch.logspace(-2, 1, p, dtype=torch.float64)
    y = (torch.rand(m, N, generator=generator) < 0.5).double()
    role = torch.ones(m, N, dtype=torch.float64)
    role[:, 2], role[:, -1] = 0.0, 2.0  # a null record and a gradient canary in every run
    dbs = torch.cat([x, y[..., None], role[..., None]], dim=2).to(dtype)
    theta = torch.randn(m, d, generator=generator, dtype=torch.float64).to(dtype)
    canary = torch.zeros(d, dtype=dtype)
    canary[0] = 4.0
    included = torch.rand(m, N, generator=generator) < 0.6
    grads = torch_per_sample_gradients(theta, dbs, canary, hidden)
    norms = torch.linalg.vector_norm(grads.double(), dim=2)
    tolerance = dict(rtol=1e-10, atol=1e-12) if dtype == torch.float64 else dict(rtol=2e-5, atol=2e-5)
    for clip in (None, float(norms[norms > 0].min()) / 2, float(norms.median()), float(norms.max()) * 2):
        got = torch_factored_clipped_sum(theta, dbs, included, canary, clip, hidden)
        assert got.dtype == dtype and got.shape == (m, d)
        torch.testing.assert_close(got, torch_clipped_gradient_sum(grads, included, clip), **tolerance)


@pytest.mark.parametrize("release", ["parameters", "gradient_trace", "gradient_sum", "loss", "margin"])
@pytest.mark.parametrize("bug", ["none", "no-clipping"])
def test_noiseless_full_batch_training_equals_numpy(release, bug):
    dbs = _databases()
    kwargs = dict(records=N, features=P, noise_multiplier=0.0, clip_norm=0.5, steps=5, learning_rate=0.7,
                  release=release, bug=bug, canary=tuple(input_canary(dbs[0], value=1.5)))
    expected = DPSGD(**kwargs)(dbs, np.random.default_rng(0))
    got = TorchDPSGD(**kwargs)(dbs, np.random.default_rng(0))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_noise_and_poisson_sampling_have_numpys_law():
    """Same law, not the same draws: the canary coordinate of step 0 is C·Bernoulli(q) + N(0, σ²C²)."""
    m = 4000
    kwargs = dict(records=N, features=P, noise_multiplier=1.5, clip_norm=2.0, sampling_rate=0.3, steps=2,
                  release="gradient_trace")
    dbs = np.repeat(_databases(m=1), m, axis=0)
    expected = DPSGD(**kwargs)(dbs, np.random.default_rng(3))
    got = TorchDPSGD(**kwargs)(dbs, np.random.default_rng(4))
    for step in range(2):
        assert stats.ks_2samp(got[:, step], expected[:, step]).pvalue > 1e-3
    # Closed form: mean qC = 0.6, variance q(1 − q)C² + σ²C² = 0.84 + 9; 4000 draws.
    assert got[:, 0].mean() == pytest.approx(0.6, abs=4 * np.sqrt(9.84 / m))
    assert got[:, 0].var() == pytest.approx(9.84, rel=0.1)


def test_shuffled_batches_hold_the_canary_once_per_epoch_and_reused_noise_repeats():
    dbs = _databases()
    trace = TorchDPSGD(N, P, 0.0, sampling="shuffle", sampling_rate=0.25, steps=8,
                       release="gradient_trace")(dbs, np.random.default_rng(0))
    # batches of 3 out of 12: 4 steps per epoch, the canary (gradient C = 1) in exactly one of them
    np.testing.assert_allclose(trace.reshape(6, 2, 4).sum(axis=2), 1.0)
    assert set(np.unique(trace)) == {0.0, 1.0}
    absent = with_record(dbs[0, :-1], null_record(dbs[0]))
    reused = TorchDPSGD(N, P, 1.0, sampling_rate=0.5, steps=4, release="gradient_trace",
                        bug="reused-noise")(np.repeat(absent[None], 5, axis=0), np.random.default_rng(0))
    np.testing.assert_array_equal(reused, np.repeat(reused[:, :1], 4, axis=1))


def test_seeded_picklable_and_checked():
    mechanism = TorchDPSGD(N, P, 1.0, sampling_rate=0.5, steps=3, hidden=4, release="parameters")
    assert mechanism.output_dim == 4 * P + 2 * 4 + 1
    dbs = _databases()
    first = mechanism(dbs, np.random.default_rng(5))
    np.testing.assert_array_equal(first, pickle.loads(pickle.dumps(mechanism))(dbs, np.random.default_rng(5)))
    assert not np.array_equal(first, mechanism(dbs, np.random.default_rng(6)))
    assert on_device(DPSGD(N, P, 2.0, steps=3), "cpu", hidden=4).hidden == 4
    with pytest.raises(InputError, match="'hidden'"):
        TorchDPSGD(N, P, 1.0, hidden=-1)
    with pytest.raises(InputError, match="'device'"):
        TorchDPSGD(N, P, 1.0, device="tpu")


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("hidden", [0, 8])
def test_cuda_training_equals_the_cpu_without_noise_and_keeps_the_law_with_it(hidden):
    dbs = _databases(m=64)
    kwargs = dict(records=N, features=P, noise_multiplier=0.0, steps=4, hidden=hidden, release="parameters")
    cpu = TorchDPSGD(**kwargs, device="cpu")(dbs, np.random.default_rng(0))
    gpu = TorchDPSGD(**kwargs, device="cuda")(dbs, np.random.default_rng(0))
    np.testing.assert_allclose(gpu, cpu, rtol=1e-9, atol=1e-11)
    noisy = dict(records=N, features=P, noise_multiplier=1.5, clip_norm=2.0, sampling_rate=0.3, steps=2,
                 hidden=hidden, release="gradient_trace")
    many = np.repeat(dbs[:1], 4000, axis=0)
    on_gpu = TorchDPSGD(**noisy, device="cuda")(many, np.random.default_rng(1))
    assert stats.ks_2samp(on_gpu[:, 0], DPSGD(**{k: v for k, v in noisy.items() if k != "hidden"})(
        many, np.random.default_rng(2))[:, 0]).pvalue > 1e-3


def test_noisy_sums_are_snapped_to_numpys_grid():
    from mechanisms.snapping import GRID_EXPONENT

    trace = TorchDPSGD(N, P, 1.3, steps=3, release="gradient_trace")(_databases(), np.random.default_rng(0))
    scaled = trace * 2.0 ** -GRID_EXPONENT  # an exact power-of-two scaling: integers iff on the grid
    np.testing.assert_array_equal(scaled, np.round(scaled))
    assert np.all(trace != 0)


def test_audit_device_routes_catalog_dpsgd_to_the_torch_trainer_with_the_same_law():
    """``--device cpu`` (or cuda) swaps the catalog's NumPy trainer for TorchDPSGD with the same settings; the
    released canary coordinates then have the NumPy trainer's law and the closed form's moments."""
    from dataclasses import fields

    from audit.config.building import build_spec

    config = {"mechanism": {"spec": "catalog:dpsgd_s1_q1_t4"}, "audit": {"samples": 100}}
    numpy_trainer = build_spec(config).mechanism
    if not torch.cuda.is_available():  # no device asked for and no GPU: the NumPy trainer, no note
        assert type(numpy_trainer) is DPSGD
        assert not any(n.startswith("trainer:") for n in build_spec(config).notes)
    spec = build_spec({**config, "audit": {"samples": 100, "device": "cpu"}})
    routed = spec.mechanism
    assert isinstance(routed, TorchDPSGD) and routed.device == "cpu"
    assert any("TorchDPSGD" in n and "cpu" in n for n in spec.notes)
    assert {f.name: getattr(routed, f.name) for f in fields(DPSGD)} == \
        {f.name: getattr(numpy_trainer, f.name) for f in fields(DPSGD)}
    from mechanisms.catalog.dpsgd import canary_pair

    pair, m = canary_pair(), 3000  # the entry's pair: its databases with and without the canary
    first, second = np.repeat(pair.first[None], m, axis=0), np.repeat(pair.second[None], m, axis=0)
    for dbs, present in ((first, 1.0), (second, 0.0)):
        got = routed(dbs, np.random.default_rng(1))
        expected = DPSGD(**{f.name: getattr(numpy_trainer, f.name) for f in fields(DPSGD)})(dbs, np.random.default_rng(2))
        for step in range(got.shape[1]):
            assert stats.ks_2samp(got[:, step], expected[:, step]).pvalue > 1e-3
        # Closed form (q = 1, C = 1, σ = 1): step t's canary coordinate is C·[present] + N(0, σ²C²).
        assert got.mean() == pytest.approx(present, abs=4 / np.sqrt(got.size))
        assert got.var() == pytest.approx(1.0, rel=0.06)


@pytest.mark.cuda
@needs_cuda
def test_audit_on_cuda_trains_catalog_dpsgd_on_the_gpu():
    from audit.config.building import build_spec

    # Asked for, and "auto" with a GPU on an audit large enough to gain from it (1.8 million runs).
    for audit in ({"samples": 100, "device": "cuda"}, {"samples": 600_000}):
        mechanism = build_spec({"mechanism": {"spec": "catalog:dpsgd_s1_q1_t4"}, "audit": audit}).mechanism
        assert isinstance(mechanism, TorchDPSGD) and mechanism.device == "cuda"
    # "auto" on a small audit: the GPU's start would cost more than the training; the NumPy trainer, noted.
    spec = build_spec({"mechanism": {"spec": "catalog:dpsgd_s1_q1_t4"}, "audit": {"samples": 100}})
    assert type(spec.mechanism) is DPSGD and any("NumPy DP-SGD on the CPU" in n for n in spec.notes)


def test_on_a_gpu_a_call_trains_thousands_of_runs_and_the_cpu_keeps_the_runners_default(monkeypatch):
    import estimators.device
    from mechanisms.execution.runner import DEFAULT_CHUNK_SIZE, MAX_CHUNK_ENTRIES, ExecutionSettings, MechanismRunner
    from mechanisms.training.torch_dpsgd import GPU_CHUNK_RUNS

    cpu = TorchDPSGD(16, 256, 0.5, steps=2, release="parameters", device="cpu", hidden=32)
    assert cpu.preferred_chunk_size is None
    with MechanismRunner(cpu, "cpu", ExecutionSettings()) as runner:
        assert runner.chunk_size((16, 258)) == DEFAULT_CHUNK_SIZE  # the CPU's draws for a seed as before
    monkeypatch.setattr(estimators.device, "resolve_device", lambda device="auto": torch.device("cuda"))
    gpu = TorchDPSGD(16, 256, 0.5, steps=2, release="parameters", device="cuda", hidden=32)
    assert gpu.preferred_chunk_size == GPU_CHUNK_RUNS == 4096
    with MechanismRunner(gpu, "gpu", ExecutionSettings()) as runner:
        # 16 records of 258 entries: the runner's entry limit 2**22 allows 1016 databases a call.
        assert runner.chunk_size((16, 258)) == MAX_CHUNK_ENTRIES // (16 * 258) == 1016
        assert runner.chunk_size((16, 6)) == 4096  # narrow records: the whole preferred size


def test_cpu_training_uses_only_the_cores_other_processes_leave_free(monkeypatch):
    import estimators.device
    from mechanisms.training import torch_dpsgd

    seen = []
    original = torch_dpsgd.TorchDPSGD._train_on

    def spy(self, *args):
        seen.append(torch.get_num_threads())
        return original(self, *args)

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(torch_dpsgd.TorchDPSGD, "_train_on", spy)
    monkeypatch.setattr(estimators.device, "free_cores", lambda **_: 1)  # the other core busy elsewhere
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # two threads asked for, one core free
    try:
        TorchDPSGD(N, P, 1.0, steps=1, device="cpu")(_databases(5), np.random.default_rng(0))
        assert seen == [1] and torch.get_num_threads() == 2  # one thread while training, the setting restored
    finally:
        torch.set_num_threads(before)


def _per_step_clipped_sum(theta, dbs, included, canary_gradient, clip, hidden):
    """The clipped sum as each step computed it before its data's pieces were computed once a call: every mask,
    norm and slice of the training sets afresh (the factors of torch_factored_clipped_sum, written out)."""
    x, y, role = dbs[:, :, :-2], dbs[:, :, -2], dbs[:, :, -1]
    m, n, p = x.shape
    weights = included.to(x.dtype)
    canary = (role == 2).to(x.dtype)  # records.GRADIENT_CANARY
    squared_x = (x * x).sum(dim=2) + 1.0
    if hidden == 0:
        logit = torch.einsum("mnp,mp->mn", x, theta[:, :-1]) + theta[:, -1:]
        residual = (torch.sigmoid(logit) - y) * (role == 1)  # records.ORDINARY
        squared = residual * residual * squared_x
    else:
        w1 = theta[:, :hidden * p].reshape(m, hidden, p)
        b1, w2 = theta[:, hidden * p:hidden * p + hidden], theta[:, hidden * p + hidden:hidden * p + 2 * hidden]
        pre = torch.einsum("mnp,mhp->mnh", x, w1) + b1[:, None, :]
        activation = torch.relu(pre)
        residual = (torch.sigmoid(torch.einsum("mnh,mh->mn", activation, w2) + theta[:, -1:]) - y) * (role == 1)
        hidden_grad = residual[:, :, None] * w2[:, None, :] * (pre > 0)
        squared = (hidden_grad * hidden_grad).sum(dim=2) * squared_x + residual * residual * (
            (activation * activation).sum(dim=2) + 1.0)
    squared = torch.where(canary > 0, (canary_gradient * canary_gradient).sum(), squared)
    if clip is not None:
        weights = weights * torch.clamp(clip / torch.clamp(torch.sqrt(squared), min=1e-300), max=1.0)
    weighted_residual = weights * residual
    if hidden == 0:
        ordinary = torch.cat([torch.einsum("mn,mnp->mp", weighted_residual, x),
                              weighted_residual.sum(dim=1, keepdim=True)], dim=1)
    else:
        weighted_hidden = weights[:, :, None] * hidden_grad
        ordinary = torch.cat([torch.bmm(weighted_hidden.transpose(1, 2), x).reshape(m, hidden * p),
                              weighted_hidden.sum(dim=1), torch.einsum("mn,mnh->mh", weighted_residual, activation),
                              weighted_residual.sum(dim=1, keepdim=True)], dim=1)
    return ordinary + (weights * canary).sum(dim=1, keepdim=True) * canary_gradient


def _per_step_training(mechanism, dbs, seed):
    """Poisson-sampled TorchDPSGD training on the CPU in float64 as each step computed it before (the trace kept
    whatever the release), from the same torch generator draws in the same order."""
    from mechanisms.training.torch_dpsgd import torch_snap

    generator = torch.Generator().manual_seed(int(np.random.default_rng(seed).integers(2**63)))
    data = torch.as_tensor(dbs, dtype=torch.float64)
    m, n, d = data.shape[0], mechanism.records, mechanism.parameter_dim
    theta = mechanism.initial_parameters(torch, torch.device("cpu"), torch.float64).expand(m, d).clone()
    canary_gradient = torch.zeros(d, dtype=torch.float64)
    canary_gradient[0] = mechanism.canary_scale * mechanism.clip_norm
    trace = torch.zeros((m, mechanism.steps), dtype=torch.float64)
    for step in range(mechanism.steps):
        included = torch.rand((m, n), generator=generator, dtype=torch.float64) < mechanism.sampling_rate
        clipped = _per_step_clipped_sum(theta, data, included, canary_gradient, mechanism.clip_norm, mechanism.hidden)
        noisy_sum = torch_snap(clipped + mechanism.noise_std * torch.randn((m, d), generator=generator,
                                                                           dtype=torch.float64))
        trace[:, step] = noisy_sum[:, 0]
        theta = theta - mechanism.learning_rate * noisy_sum / (mechanism.sampling_rate * n)
    if mechanism.release == "gradient_trace":
        return trace.numpy()
    if mechanism.release == "parameters":
        return theta.numpy()
    row = torch.as_tensor(mechanism.canary, dtype=torch.float64).expand(m, -1)
    logit = torch_logits(theta, row[:, None, :-2], mechanism.hidden)[:, 0]
    return (torch.nn.functional.softplus(logit) - row[:, -2] * logit)[:, None].numpy()


@pytest.mark.parametrize("hidden", [0, 4])
@pytest.mark.parametrize("release", ["gradient_trace", "parameters", "loss"])
def test_training_equals_the_per_step_computation_bit_for_bit(hidden, release):
    # The data's masks, norms and slices computed once a call, and the trace kept only for the releases that
    # read it, change no value: the outputs equal the per-step computation's bit for bit (runs of the canary and
    # of the null record, Poisson sampling at q = 0.5, clipping active).
    base = gaussian_training_set(N - 1, P - 1, seed=4)
    canary = gradient_canary(base) if release != "loss" else input_canary(base, value=4.0, label=1.0)
    mechanism = on_device(DPSGD(N, P, 0.7, steps=5, sampling_rate=0.5, release=release, canary=canary), "cpu",
                          hidden=hidden)
    dbs = np.stack([with_record(base, canary if i % 2 else null_record(base)) for i in range(9)])
    got = mechanism.train_batch(dbs, np.random.default_rng(11))
    expected = _per_step_training(mechanism, dbs, 11)
    assert got.shape == expected.shape and got.tobytes() == expected.tobytes()
