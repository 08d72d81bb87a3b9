"""The shallow critic's hand-written forward and backward pass, the mini-batch and the training step.

Expected values come from a plain NumPy forward pass, from autograd on the textbook formula
g(z) = Σ β_i ReLU(⟨w_i, z⟩ + b_i) + ⟨w_0, z⟩ + b_0, and from finite differences.
"""

import numpy as np
import pytest
import torch

from estimators import critics
from estimators.critics import CriticEnsemble, ShallowCriticFunction
from estimators.neural import critic_pairs, joint_and_product_batch, sample_major, training_step
from estimators.objectives import donsker_varadhan


@pytest.fixture
def small_blocks(monkeypatch):
    """Force several critic blocks on the CPU (3 critics × 7 samples × 5 units > 64)."""
    monkeypatch.setattr(critics, "CPU_BLOCK_ACTIVATIONS", 64)


def random_shallow(n_critics, in_dim, hidden, seed, dtype=torch.float64):
    ensemble = CriticEnsemble(n_critics, in_dim, hidden=hidden, generator=torch.Generator().manual_seed(seed))
    ensemble = ensemble.to(dtype)
    with torch.no_grad():
        ensemble.skip_weight.normal_(generator=torch.Generator().manual_seed(seed + 1))  # zero at init
        ensemble.out_bias.normal_(generator=torch.Generator().manual_seed(seed + 2))
    return ensemble


def plain_formula(z, w, b, beta, b0, w0):
    """The textbook G_ℓ(a) member, composed of autograd-tracked torch ops: (M, N, in) → (M, N)."""
    h = torch.relu(z @ w + b)
    return (h @ beta + z @ w0 + b0).squeeze(-1)


def parameters_of(ensemble):
    return [ensemble.weights[0], ensemble.biases[0], ensemble.out_weight, ensemble.out_bias, ensemble.skip_weight]


@pytest.mark.parametrize("blocks", [False, True])
def test_shallow_forward_equals_per_critic_numpy(blocks, request):
    if blocks:
        request.getfixturevalue("small_blocks")
    ensemble = random_shallow(3, 4, 5, seed=1)
    z = torch.randn(3, 7, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    got = ensemble.raw(z).detach().numpy()
    w, b, beta, b0, w0 = (p.detach().numpy() for p in parameters_of(ensemble))
    for m in range(3):
        zm = z[m].numpy()
        expected = np.maximum(zm @ w[m] + b[m], 0) @ beta[m] + zm @ w0[m] + b0[m]
        assert np.allclose(got[m], expected[:, 0], atol=1e-12)


@pytest.mark.parametrize("blocks", [False, True])
def test_shallow_gradients_equal_autograd_of_the_plain_formula(blocks, request):
    if blocks:
        request.getfixturevalue("small_blocks")
    ensemble = random_shallow(3, 2, 5, seed=3)
    z = torch.randn(3, 7, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(4), requires_grad=True)
    weights = torch.randn(3, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    params = parameters_of(ensemble)
    fast = torch.autograd.grad((ensemble.raw(z) * weights).sum(), [z] + params)
    reference = torch.autograd.grad((plain_formula(z, *params) * weights).sum(), [z] + params)
    for got, expected in zip(fast, reference):
        assert got.shape == expected.shape
        assert torch.allclose(got, expected, atol=1e-12)


def test_shallow_gradients_match_finite_differences(small_blocks):
    """⟨∇f, d⟩ against (f(θ + εd) − f(θ − εd)) / 2ε for f = Σ c ∘ g(z; θ), random directions d,
    each argument in turn (central differences are exact to O(ε²) away from ReLU kinks)."""
    generator = torch.Generator().manual_seed(6)
    shapes = ((3, 7, 2), (3, 2, 5), (3, 1, 5), (3, 5, 1), (3, 1, 1), (3, 2, 1))
    args = [torch.randn(shape, dtype=torch.float64, generator=generator) for shape in shapes]
    weights = torch.randn(3, 7, dtype=torch.float64, generator=generator)

    def f(*values):
        return (ShallowCriticFunction.apply(*values, torch.empty(3, 7, 5, dtype=torch.float64)) * weights).sum()

    tracked = [a.clone().requires_grad_() for a in args]
    gradients = torch.autograd.grad(f(*tracked), tracked)
    eps = 1e-6
    for k, gradient in enumerate(gradients):
        for _ in range(3):
            direction = torch.randn(shapes[k], dtype=torch.float64, generator=generator)
            plus = [a + eps * direction if j == k else a for j, a in enumerate(args)]
            minus = [a - eps * direction if j == k else a for j, a in enumerate(args)]
            numeric = (f(*plus) - f(*minus)) / (2 * eps)
            assert float((gradient * direction).sum()) == pytest.approx(float(numeric), rel=1e-6, abs=1e-8)


def test_backward_twice_or_after_the_buffer_was_overwritten_is_an_error():
    ensemble = random_shallow(2, 2, 4, seed=7)
    z = torch.randn(2, 6, 2, dtype=torch.float64)
    out = ensemble.raw(z).sum()
    out.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    first = ensemble.raw(z).sum()
    ensemble.raw(z + 1.0)  # writes the shared activation buffer again
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        first.backward()


def test_activation_buffer_follows_dtype_and_can_be_released():
    ensemble = CriticEnsemble(2, 2, hidden=4)
    z = torch.randn(2, 6, 2)
    single = ensemble.raw(z).detach()
    ensemble.release_buffers()
    as_double = ensemble.to(torch.float64).raw(z.double()).detach()
    assert as_double.dtype == torch.float64
    assert torch.allclose(as_double.float(), single, atol=1e-5)


def test_joint_and_product_batch_pairs():
    rng = np.random.default_rng(8)
    u = rng.standard_normal((3, 40, 1))
    v = rng.standard_normal((3, 40, 2))
    index = np.array([5, 0, 17, 33, 8])
    shift = 2
    batch = joint_and_product_batch(sample_major(torch.as_tensor(u)), sample_major(torch.as_tensor(v)),
                                    torch.as_tensor(index), shift).numpy()
    assert batch.shape == (3, 10, 3)
    for i in range(5):
        assert np.array_equal(batch[:, i], np.concatenate((u[:, index[i]], v[:, index[i]]), axis=1))
        partner = index[(i - shift) % 5]  # product pair i: u of sample i, v of sample i − shift
        assert np.array_equal(batch[:, 5 + i], np.concatenate((u[:, index[i]], v[:, partner]), axis=1))


@pytest.mark.parametrize("shift", [0, 1, 4, 7, -1])
def test_joint_and_product_batch_follows_numpy_roll_for_any_int_shift(shift):
    """Product v values are NumPy's roll of the joint ones (shifts past the batch wrap around), and an int
    shift and the same shift as a 0-d tensor (the CUDA-graph step's path) give the same pairs."""
    rng = np.random.default_rng(11)
    u, v = rng.standard_normal((2, 30, 2)), rng.standard_normal((2, 30, 1))
    index = np.array([3, 29, 0, 14, 8])
    rows = sample_major(torch.as_tensor(u)), sample_major(torch.as_tensor(v))
    batch = joint_and_product_batch(*rows, torch.as_tensor(index), shift).numpy()
    assert np.array_equal(batch[:, 5:, :2], u[:, index])
    assert np.array_equal(batch[:, 5:, 2:], v[:, np.roll(index, shift)])
    as_tensor = joint_and_product_batch(*rows, torch.as_tensor(index), torch.tensor(shift)).numpy()
    assert np.array_equal(batch, as_tensor)


def test_critic_pairs_are_the_inputs_side_by_side():
    rng = np.random.default_rng(12)
    u, v = rng.standard_normal((3, 9, 1)), rng.standard_normal((3, 9, 2))
    pairs = critic_pairs(torch.as_tensor(u), torch.as_tensor(v))
    assert pairs.shape == (3, 9, 3)
    assert np.array_equal(pairs.numpy(), np.concatenate((u, v), axis=2))


def test_training_step_is_one_gradient_step_on_the_dv_objective():
    """With plain SGD, a training step moves each parameter by −lr × the gradient of −Σ_m DV_m,
    computed here by autograd on the plain formula and the DV definition."""
    rng = np.random.default_rng(9)
    u = torch.as_tensor(rng.standard_normal((4, 30, 1)))
    v = u + torch.as_tensor(rng.standard_normal((4, 30, 1)))
    ensemble = CriticEnsemble(4, 2, hidden=6, output_range=(-3.0, 2.0),
                              generator=torch.Generator().manual_seed(10)).to(torch.float64)
    before = [p.detach().clone().requires_grad_() for p in parameters_of(ensemble)]
    index = torch.as_tensor([3, 11, 29, 0, 7, 18])
    shift, lr = 4, 0.1

    u_joint, v_joint = u[:, index], v[:, index]
    v_product = v[:, index.roll(shift)]
    joint = torch.cat((u_joint, v_joint), dim=2)
    product = torch.cat((u_joint, v_product), dim=2)
    lo, hi = -3.0, 2.0

    def bounded(raw):
        return lo + (hi - lo) * torch.sigmoid((raw - (lo + hi) / 2) * 4 / (hi - lo))

    dv = donsker_varadhan(bounded(plain_formula(joint, *before)), bounded(plain_formula(product, *before)))
    gradients = torch.autograd.grad(-dv.sum(), before)

    gain = training_step(ensemble, torch.optim.SGD(ensemble.parameters(), lr=lr), sample_major(u), sample_major(v),
                         index, shift)
    assert torch.allclose(gain, dv.detach(), atol=1e-12)
    for after, start, gradient in zip(parameters_of(ensemble), before, gradients):
        assert torch.allclose(after.detach(), start.detach() - lr * gradient, atol=1e-12)
