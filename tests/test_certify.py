"""Concentration bounds and the certified DV bound, against independent computations."""

import math

import numpy as np
import pytest
import torch

from estimators.certify import averaged_dv_lower_bound, choose_caps, dv_lower_bound, upper_confidence_bound
from estimators.critics import CriticEnsemble, project_l1_ball
from estimators.validation import InputError


@pytest.mark.parametrize("method", ["bernstein", "hoeffding"])
@pytest.mark.parametrize("p", [0.02, 0.3])
def test_upper_confidence_bound_coverage_on_bernoulli(method, p):
    rng = np.random.default_rng(1)
    delta, n, reps = 0.1, 60, 20000
    samples = (rng.random((reps, n)) < p).astype(float)
    ucb = upper_confidence_bound(samples, 1.0, delta, method)
    miss = np.mean(ucb < p)
    # The bounds are valid for every distribution on [0, 1]: misses at most delta (+ Monte Carlo slack).
    assert miss <= delta + 3 * math.sqrt(delta * (1 - delta) / reps)


def test_bernstein_formula_by_hand():
    z = np.array([0.0, 1.0, 0.5, 0.25])
    delta = 0.2
    mean, var = z.mean(), z.var(ddof=1)
    log_term = math.log(2 / delta)
    expected = mean + math.sqrt(2 * var * log_term / 4) + 7 * log_term / (3 * 3)
    assert upper_confidence_bound(z, 1.0, delta) == pytest.approx(expected)
    assert upper_confidence_bound(z, 1.0, delta, "hoeffding") == pytest.approx(mean + math.sqrt(math.log(1 / delta) / 8))


def test_dv_lower_bound_on_exact_log_ratio_discrete():
    """Binary symmetric channel with the exact log-likelihood ratio as critic: the bound
    approaches the true MI from below as n grows, and never exceeds it on the sample."""
    rng = np.random.default_rng(3)
    flip = 0.1
    true_mi = math.log(2) + flip * math.log(flip) + (1 - flip) * math.log(1 - flip)
    n = 200_000
    x = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < flip, 1 - x, x)
    log_ratio = lambda a, b: np.where(a == b, math.log(2 * (1 - flip)), math.log(2 * flip))  # noqa: E731
    t_joint = log_ratio(x, y)
    t_prod = log_ratio(x[: n // 2], y[n // 2:])
    lo, hi = math.log(2 * flip), math.log(2 * (1 - flip))
    bound = dv_lower_bound(t_joint, t_prod, lo, hi, 0.05)
    assert true_mi - 0.02 < bound < true_mi


def test_caps_chosen_on_validation_tighten_a_shifted_critic():
    """A critic shifted far below its ceiling: capping (chosen on separate data) gives a
    tighter certificate than the nominal range."""
    rng = np.random.default_rng(0)
    n = 20000
    x = rng.standard_normal(n)
    rho = 0.8
    y = rho * x + math.sqrt(1 - rho**2) * rng.standard_normal(n)

    def critic(a, b):  # exact Gaussian log ratio, shifted by -2 (DV is shift-invariant)
        q = (rho**2 * (a**2 + b**2) - 2 * rho * a * b) / (2 * (1 - rho**2))
        return np.clip(-0.5 * math.log(1 - rho**2) - q - 2.0, -8.0, 3.0)

    val, test = slice(0, 10000), slice(10000, n)
    vj = critic(x[val], y[val])
    vp = critic(x[val][:5000], y[val][5000:])
    caps = choose_caps(vj[None], vp[None], -8.0, 3.0, n_joint=10000, n_product=5000, delta=0.05)
    tj, tp = critic(x[test], y[test]), critic(x[test][:5000], y[test][5000:])
    nominal = dv_lower_bound(tj, tp, -8.0, 3.0, 0.05)
    capped = dv_lower_bound(np.minimum(tj, caps[0]), np.minimum(tp, caps[0]), -8.0, caps[0], 0.05)
    true_mi = -0.5 * math.log(1 - rho**2)
    assert capped > nominal
    assert capped < true_mi
    assert capped > true_mi - 0.2


def test_averaged_bound_is_below_mean_of_per_slice_dv():
    rng = np.random.default_rng(2)
    tj = rng.uniform(-1, 1, (5, 400))
    tp = rng.uniform(-2, 0.5, (5, 200))
    caps = np.full(5, 3.0)
    avg = averaged_dv_lower_bound(tj, tp, -8.0, caps, 0.05)
    plug_in_dv = np.mean(tj.mean(1) - np.log(np.exp(tp).mean(1)))
    assert avg < plug_in_dv


def test_bound_input_errors():
    with pytest.raises(InputError, match="'delta'"):
        upper_confidence_bound(np.ones(4), 1.0, 1.5)
    with pytest.raises(InputError, match="'method'"):
        upper_confidence_bound(np.ones(4), 1.0, 0.1, "chebyshev")
    with pytest.raises(InputError, match="at least 2"):
        upper_confidence_bound(np.ones(1), 1.0, 0.1)


def _l1_projection_by_bisection(w, radius):
    if np.abs(w).sum() <= radius:
        return w
    lo, hi = 0.0, np.abs(w).max()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(np.abs(w) - mid, 0).sum() > radius:
            lo = mid
        else:
            hi = mid
    return np.sign(w) * np.maximum(np.abs(w) - hi, 0)


def test_l1_projection_matches_bisection():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((20, 7)) * rng.uniform(0.01, 3, (20, 1))
    got = project_l1_ball(torch.as_tensor(w), 1.5).numpy()
    for row, out in zip(w, got):
        assert np.allclose(out, _l1_projection_by_bisection(row, 1.5), atol=1e-9)


def test_batched_forward_equals_per_critic_numpy():
    ens = CriticEnsemble(4, 3, architecture="mlp", hidden=5, depth=2, output_range=(-2.0, 1.0))
    z = torch.randn(4, 7, 3)
    got = ens(z).detach().numpy()
    params = {name: p.detach().numpy() for name, p in ens.named_parameters()}
    w1, w2, b1, b2 = params["weights.0"], params["weights.1"], params["biases.0"], params["biases.1"]
    wo, bo = params["out_weight"], params["out_bias"]
    for m in range(4):
        h = np.maximum(z[m].numpy() @ w1[m] + b1[m], 0)
        h = np.maximum(h @ w2[m] + b2[m], 0)
        raw = (h @ wo[m] + bo[m])[:, 0]
        expected = -2.0 + 3.0 / (1 + np.exp(-(raw + 0.5) * 4.0 / 3.0))
        assert np.allclose(got[m], expected, atol=1e-5)


def test_shallow_projection_enforces_g_l_constraints():
    ens = CriticEnsemble(3, 3, architecture="shallow", hidden=8)
    with torch.no_grad():
        for p in ens.parameters():
            p.mul_(10).add_(1)
    ens.project_(1.0)
    w1 = ens.weights[0].detach()
    assert (w1.abs().sum(dim=1) <= 1 + 1e-6).all()  # ‖w_i‖₁ ≤ 1 per unit (columns)
    assert (ens.biases[0].abs() <= 1).all()
    assert (ens.out_weight.abs() <= 1.0 / 16 + 1e-9).all()  # a/(2ℓ)
    assert (ens.skip_weight.detach().abs().sum(dim=1) <= 1 + 1e-6).all()
    assert (ens.out_bias.abs() <= 1).all()


def test_averaging_shifts_make_the_averaged_bound_tight_and_keep_it_valid():
    """Three copies of the exact BSC log-ratio critic, offset by −3, 0 and −1.5 (DV ignores the
    offsets): without shifts the Jensen step loses most of the MI; with shifts chosen on separate
    validation data, the averaged bound is close to the true MI and still below it."""
    from estimators.certify import averaging_shifts

    rng = np.random.default_rng(7)
    flip = 0.1
    true_mi = math.log(2) + flip * math.log(flip) + (1 - flip) * math.log(1 - flip)

    def draw(n):
        x = rng.integers(0, 2, n)
        return x, np.where(rng.random(n) < flip, 1 - x, x)

    def critics(a, b):
        exact = np.where(a == b, math.log(2 * (1 - flip)), math.log(2 * flip))
        return np.stack([exact - 3.0, exact, exact - 1.5])

    n = 100_000
    xv, yv = draw(n)
    xt, yt = draw(n)
    caps = math.log(2 * (1 - flip)) + np.array([-3.0, 0.0, -1.5])  # each critic's largest value
    shifts = averaging_shifts(critics(xv[: n // 2], yv[n // 2:]), caps)
    tj, tp = critics(xt, yt), critics(xt[: n // 2], yt[n // 2:])
    lo = math.log(2 * flip) - 3.0
    unshifted = averaged_dv_lower_bound(tj, tp, lo, caps, 0.05)
    shifted = averaged_dv_lower_bound(tj, tp, lo, caps, 0.05, shifts=shifts)
    assert np.allclose(shifts, [-3.0, 0.0, -1.5], atol=0.02)
    assert unshifted < true_mi - 0.1
    assert true_mi - 0.03 < shifted < true_mi
