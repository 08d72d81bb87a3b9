"""The CUDA path: the same code on a GPU gives what it gives on the CPU.

Every test but the first needs a CUDA device and is skipped without one (as on CI). The
expected values are the CPU's, computed in the test on the same inputs.
"""

import numpy as np
import pytest
import torch

from estimators.critics import CriticEnsemble
from estimators.device import resolve_device
from estimators.estimate import estimate_mi
from estimators.neural import CriticConfig, fit_critics
from estimators.validation import InputError

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
pytestmark = pytest.mark.cuda


def test_cuda_request_without_a_gpu_names_the_argument():
    if torch.cuda.is_available():
        assert resolve_device("cuda").type == "cuda"
    else:
        with pytest.raises(InputError, match="'device'.*no CUDA device"):
            resolve_device("cuda")


@needs_cuda
@pytest.mark.parametrize("architecture", ["shallow", "mlp"])
def test_ensemble_forward_and_gradients_match_the_cpu(architecture):
    generator = torch.Generator().manual_seed(0)
    cpu = CriticEnsemble(5, 3, architecture=architecture, hidden=8, output_range=(-4.0, 2.0),
                         generator=generator).double()
    gpu = CriticEnsemble(5, 3, architecture=architecture, hidden=8, output_range=(-4.0, 2.0)).double().cuda()
    gpu.load_state_dict(cpu.state_dict())
    z = torch.randn(5, 33, 3, dtype=torch.float64, generator=generator)
    weights = torch.randn(5, 33, dtype=torch.float64, generator=generator)
    (cpu(z) * weights).sum().backward()
    (gpu(z.cuda()) * weights.cuda()).sum().backward()
    for a, b in zip(cpu.parameters(), gpu.parameters()):
        assert torch.allclose(a.grad, b.grad.cpu(), atol=1e-10)
    assert torch.allclose(cpu(z), gpu(z.cuda()).cpu(), atol=1e-10)


@needs_cuda
@pytest.mark.train
def test_fit_on_cuda_estimates_like_the_cpu():
    """Float32 rounding differs between devices, so trajectories differ slightly; the estimates
    of the same critics on the same data agree to well within their standard errors."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 4000, 1))
    y = 0.8 * x + 0.6 * rng.standard_normal((4, 4000, 1))
    config = CriticConfig(max_steps=400)
    on_cpu = fit_critics(x, y, config=config, seed=2, device="cpu")
    on_gpu = fit_critics(x, y, config=config, seed=2, device="cuda")
    assert np.all(np.abs(on_cpu.estimates - on_gpu.estimates) < 3 * on_cpu.stderr)
    truth = -0.5 * np.log(1 - 0.8**2)
    assert np.all(np.abs(on_gpu.estimates - truth) < 0.1)


@needs_cuda
@pytest.mark.train
def test_sliced_estimate_on_cuda_is_reproducible():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3000, 4))
    y = x + rng.standard_normal((3000, 4))
    config = CriticConfig(max_steps=200)
    first = estimate_mi(x, y, sliced=True, slices=64, seed=4, device="cuda", critic=config)
    second = estimate_mi(x, y, sliced=True, slices=64, seed=4, device="cuda", critic=config)
    assert first.value == pytest.approx(second.value, abs=1e-6)
    assert first.lower_bound is not None and first.lower_bound < first.value


@pytest.mark.integration
@needs_cuda
@pytest.mark.train
def test_gpu_throughput_quick_reports_gpu_memory(tmp_path):
    from experiments.framework import read_table
    from experiments.registry import run

    result = run("gpu-throughput", out_dir=tmp_path, quick=True, seed=0, device="cuda")
    table = read_table(result.csv_files[0])
    assert set(table["status"]) == {"ok"} and all(str(d).startswith("cuda") for d in table["device"])
    assert np.all(np.isfinite(table["peak_memory_mb"])) and np.all(table["peak_memory_mb"] > 0)
    # The quick grid's ensembles are small: each is timed eager and through its CUDA graph, both training.
    assert sorted(table["mode"]) == sorted(["eager", "cuda graph"] * (len(table["mode"]) // 2))
    assert np.all(np.isfinite(table["final_objective_mean"])) and np.all(table["copy_roofline_fraction"] > 0)


@needs_cuda
@pytest.mark.train
def test_the_cuda_graph_fit_estimates_like_the_eager_fit(monkeypatch):
    """Issue 42 §3: the captured step trains on the same batches with the same kernels; the estimates of one seed
    agree with the eager fit's to well within their standard errors (Adam's capturable step may round differently)."""
    from estimators import device as device_settings
    from estimators import neural

    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4000, 1))
    y = 0.8 * x + 0.6 * rng.standard_normal((2, 4000, 1))
    config = CriticConfig(max_steps=300)
    assert neural.use_cuda_graph(torch.device("cuda"), "dv", None, 2, config.batch_size, config.hidden)
    graphed = fit_critics(x, y, config=config, seed=8, device="cuda")
    monkeypatch.setattr(device_settings, "CUDA_GRAPHS", False)
    eager = fit_critics(x, y, config=config, seed=8, device="cuda")
    assert np.all(np.abs(graphed.estimates - eager.estimates) < eager.stderr)
    assert graphed.steps == eager.steps


@needs_cuda
def test_pinned_block_copies_arrive_whole_without_a_sync_and_are_counted():
    """A block copied from page-locked memory (estimators.device.to_device's ``pinned``, the critics' mini-batch
    index blocks and the scorer's inputs) holds the host's values, the host does not wait for it, and its bytes
    are counted."""
    from estimators.device import to_device
    from experiments.sync_count import count_syncs

    block = np.arange(50 * 257, dtype=np.int64).reshape(50, 257)
    with count_syncs("cuda") as counted:
        on_gpu = to_device(block, "cuda", pinned=True)
        plain = to_device(block, "cuda")
    assert on_gpu.device.type == "cuda" and on_gpu.dtype == torch.int64
    assert torch.equal(on_gpu.cpu(), torch.from_numpy(block)) and torch.equal(plain.cpu(), torch.from_numpy(block))
    assert sum(counted.places.values()) == 1  # the plain copy from pageable memory alone
    assert sum(counted.copied.values()) == 2 * block.nbytes


@needs_cuda
@pytest.mark.train
def test_a_cuda_scorer_call_waits_once_and_scores_as_the_two_reads_did(monkeypatch):
    """The critic scorer on a GPU: its inputs copied without waiting, one read for both inputs' compression flag, the
    scores back (estimators.standardization.paired_inputs); the scores are those of critic_inputs' own reads."""
    from estimators import neural
    from estimators.standardization import critic_inputs
    from experiments.sync_count import count_syncs

    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 2000, 1))
    y = np.concatenate([x + rng.normal(size=(1, 2000, 1)), rng.normal(size=(1, 2000, 40))], axis=2)
    fit = fit_critics(x, y, config=CriticConfig(max_steps=100), seed=0, device="cuda", quiet=True)
    u, v = rng.normal(size=(3000, 1)), rng.normal(size=(3000, 41))
    fit.scorer(0, u, v)  # warm-up
    with count_syncs("cuda") as counted:
        scores = fit.scorer(0, u, v)
    kinds = sorted(kind for (_, _, kind, _) in counted.places.elements())
    assert kinds == ["copy to the host", "value read"], kinds
    monkeypatch.setattr(neural, "paired_inputs", lambda u, v, us, vs, wide: (critic_inputs(u, *us), critic_inputs(v, *vs)))
    np.testing.assert_array_equal(scores, fit.scorer(0, u, v))


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_dpsgd_databases_built_on_the_gpu_are_the_copy_and_cross_once_without_a_wait(dtype):
    """TorchDPSGD's training sets on a GPU (mechanisms.training.device_databases): the first database and the distinct
    records cross from page-locked memory (no host wait, their bytes counted), and the batch built there is the
    whole batch's copy value for value, laid out alike."""
    from experiments.sync_count import count_syncs
    from mechanisms.training import gaussian_training_set, gradient_canary, null_record, with_record
    from mechanisms.training.device_databases import device_databases

    base = gaussian_training_set(9, 4, seed=0)
    pair = np.stack([with_record(base, gradient_canary(base)), with_record(base, null_record(base))])
    batch = pair[np.random.default_rng(1).integers(0, 2, 300)]
    batch.flags.writeable = False
    broadcast = np.broadcast_to(batch[0], batch.shape)
    for dbs in (batch, broadcast):
        expected = torch.as_tensor(dbs.copy()).to(dtype)
        with count_syncs("cuda") as counted:
            got = device_databases(torch, dbs, dtype, torch.device("cuda"))
        assert sum(counted.places.values()) == 0
        assert sum(counted.copied.values()) < dbs.nbytes / 50
        assert got.is_cuda and got.is_contiguous() and got.stride() == expected.stride()
        assert np.ascontiguousarray(got.cpu().numpy()).tobytes() == expected.numpy().tobytes()


@needs_cuda
@pytest.mark.parametrize("hidden", [0, 4])
def test_cuda_dpsgd_trains_from_built_databases_as_from_the_whole_copy(monkeypatch, hidden):
    """On a GPU, training from the batch built of its distinct records is bit for bit training from the whole batch
    copied there (database_parts answering None: the copy of the whole array)."""
    from mechanisms.training import device_databases as databases
    from mechanisms.training import gaussian_training_set, gradient_canary, null_record, with_record
    from mechanisms.training.torch_dpsgd import TorchDPSGD

    base = gaussian_training_set(9, 2, seed=2)
    pair = np.stack([with_record(base, gradient_canary(base)), with_record(base, null_record(base))])
    batch = pair[np.random.default_rng(3).integers(0, 2, 500)]
    batch.flags.writeable = False
    mechanism = TorchDPSGD(10, 3, 0.7, steps=4, sampling_rate=0.5, release="parameters", hidden=hidden,
                           device="cuda")
    built = mechanism.train_batch(batch, np.random.default_rng(5))
    monkeypatch.setattr(databases, "database_parts", lambda dbs: None)
    whole = mechanism.train_batch(batch, np.random.default_rng(5))
    assert built.tobytes() == whole.tobytes()


@needs_cuda
def test_a_cuda_tensor_output_is_read_as_its_cpu_equal():
    """A mechanism's output on the GPU (requiring grad, bfloat16, sparse) is read as the same tensor on the CPU
    (mechanisms.outputs.arrays.tensor_array), per database and batched."""
    from mechanisms.base import check_batch_output
    from mechanisms.outputs.encoding import output_features

    cpu = {"grad": torch.tensor([1.5, -2.0], requires_grad=True) * 1,
           "bf16": torch.tensor([0x3FC9, 0x0001], dtype=torch.int16).view(torch.bfloat16),
           "sparse": torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()}
    on_gpu = {name: tensor.cuda() for name, tensor in cpu.items()}
    assert output_features(on_gpu) == output_features(cpu)
    assert output_features(on_gpu)["y{'bf16'}[1]"] == 2.0**-133
    rows = torch.tensor([[1.5], [0.25]], dtype=torch.bfloat16, device="cuda", requires_grad=True) * 1
    assert check_batch_output(rows, 2, "mechanism 'f'").tolist() == [[1.5], [0.25]]
