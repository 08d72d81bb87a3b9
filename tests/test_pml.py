"""Kernel-side PML: outcome PML, (ε, c)-PML capacity, LDP, optimal kernels, Example 1 and 2."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.constructions.pml import (as_kernel, example2_kernels, kernel_leakage, ldp, local_leakage_capacity, optimal_binary_pml_kernel, outcome_pml, randomized_response, sample_min_mass_priors)


def random_kernel(rng, n_inputs, n_outputs):
    return rng.dirichlet(np.ones(n_outputs), size=n_inputs)


def pml_by_posterior(kernel, prior):
    """ℓ(X → y) = log max_x P_{X|Y=y}(x)/P_X(x), with the posterior from Bayes' rule by loops."""
    n_inputs, n_outputs = kernel.shape
    out = []
    for y in range(n_outputs):
        p_y = sum(prior[x] * kernel[x, y] for x in range(n_inputs))
        posterior = [prior[x] * kernel[x, y] / p_y for x in range(n_inputs)]
        out.append(math.log(max(posterior[x] / prior[x] for x in range(n_inputs))))
    return np.array(out)


def capacity_by_vertices(kernel, c):
    """sup over Q_X(c) of the outcome PML, by enumerating the vertices c + (1 − Nc)e_x of Q_X(c).

    For fixed y the PML log(max_x K(y|x) / Σ_x P(x)K(y|x)) is largest where the linear
    denominator is smallest, which on the polytope Q_X(c) happens at a vertex.
    """
    n_inputs, n_outputs = kernel.shape
    best = -math.inf
    for vertex in range(n_inputs):
        prior = np.full(n_inputs, c)
        prior[vertex] += 1.0 - n_inputs * c
        for y in range(n_outputs):
            p_y = float(prior @ kernel[:, y])
            if p_y > 0:
                best = max(best, math.log(kernel[:, y].max() / p_y))
    return best


def dobrushin_by_rows(kernel):
    """η_TV(K) = max over row pairs of ½‖K_x − K_x'‖₁ (Dobrushin, paper Eq. (2))."""
    return max(0.5 * np.abs(kernel[a] - kernel[b]).sum() for a, b in itertools.combinations(range(len(kernel)), 2))


def test_outcome_pml_matches_posterior_ratio_formula():
    rng = np.random.default_rng(1)
    for n_inputs, n_outputs in [(2, 2), (3, 5), (6, 4)]:
        kernel = random_kernel(rng, n_inputs, n_outputs)
        prior = rng.dirichlet(np.ones(n_inputs))
        np.testing.assert_allclose(outcome_pml(kernel, prior), pml_by_posterior(kernel, prior), rtol=1e-12)


def test_outcome_pml_is_nan_for_outcomes_that_never_occur():
    kernel = np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]])
    values = outcome_pml(kernel, [0.5, 0.5])
    assert np.isnan(values[2])
    # Direct: max(0.5, 0.2)/0.35 and max(0.5, 0.8)/0.65.
    np.testing.assert_allclose(values[:2], [math.log(0.5 / 0.35), math.log(0.8 / 0.65)], rtol=1e-12)


def test_capacity_equals_vertex_enumeration_and_bounds_random_priors():
    rng = np.random.default_rng(2)
    for n_inputs, n_outputs in [(2, 3), (4, 2), (5, 5)]:
        kernel = random_kernel(rng, n_inputs, n_outputs)
        for c in [0.01, 0.5 / n_inputs, 1.0 / n_inputs]:
            capacity = local_leakage_capacity(kernel, c)
            assert capacity == pytest.approx(capacity_by_vertices(kernel, c), rel=1e-12)
            # Random priors in Q_X(c) = c + (1 − Nc)·simplex never exceed the capacity.
            priors = c + (1 - n_inputs * c) * rng.dirichlet(np.ones(n_inputs), size=200)
            largest = max(pml_by_posterior(kernel, p).max() for p in priors)
            assert largest <= capacity + 1e-12


def test_identity_kernel_is_minus_log_c_pml():
    # Paper, after Definition 2: every mechanism, the identity included, is (−log c, c)-PML.
    for n_inputs, c in [(2, 0.3), (5, 0.05), (4, 0.25)]:
        assert local_leakage_capacity(np.eye(n_inputs), c) == pytest.approx(-math.log(c), rel=1e-12)


def test_capacity_at_uniform_c_is_pml_under_uniform_prior():
    rng = np.random.default_rng(3)
    kernel = random_kernel(rng, 4, 3)
    uniform = np.full(4, 0.25)
    assert local_leakage_capacity(kernel, 0.25) == pytest.approx(pml_by_posterior(kernel, uniform).max(), rel=1e-12)


def test_warner_randomized_response_ldp_is_log_odds():
    for p in [0.55, 0.75, 0.9, 0.99]:
        kernel = randomized_response(p)
        assert ldp(kernel) == pytest.approx(math.log(p / (1 - p)), rel=1e-12)
    assert ldp(randomized_response(0.5)) == 0.0


def test_ldp_by_pairwise_enumeration_and_infinite_with_zeros():
    rng = np.random.default_rng(4)
    kernel = random_kernel(rng, 4, 3)
    by_pairs = max(math.log(kernel[a, y] / kernel[b, y])
                   for a in range(4) for b in range(4) for y in range(3))
    assert ldp(kernel) == pytest.approx(by_pairs, rel=1e-12)
    assert ldp(np.eye(3)) == math.inf
    # A column of zeros (outcome never produced) does not make LDP infinite.
    assert ldp([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]]) == pytest.approx(math.log(2.0))


def test_example1_binary_mechanism_matches_printed_matrix():
    # Example 1: K = 1/(e^ε(1−2c)+1) [[e^ε(1−c), 1−e^ε c], [1−e^ε c, e^ε(1−c)]].
    for eps, c in [(0.3, 0.1), (1.0, 0.2), (0.5, 0.45)]:
        if eps >= math.log(2 / (2 * c)):
            continue
        e = math.exp(eps)
        printed = np.array([[e * (1 - c), 1 - e * c], [1 - e * c, e * (1 - c)]]) / (e * (1 - 2 * c) + 1)
        kernel = optimal_binary_pml_kernel(eps, c, 2)
        np.testing.assert_allclose(kernel, printed, rtol=1e-12)
        assert capacity_by_vertices(kernel, c) == pytest.approx(eps, rel=1e-10)


def test_example1_tends_to_warner_randomized_response_as_c_vanishes():
    eps = 1.2
    kernel = optimal_binary_pml_kernel(eps, 1e-12, 2)
    p = math.exp(eps) / (1 + math.exp(eps))
    np.testing.assert_allclose(kernel, randomized_response(p), atol=1e-10)


@pytest.mark.parametrize("n_inputs, c, eps", [(3, 0.1, 0.4), (4, 0.05, 1.0), (6, 0.1, 0.8), (10, 0.05, math.log(10 / 3))])
def test_remark2_kernel_is_eps_c_pml_and_attains_theorem3(n_inputs, c, eps):
    kernel = optimal_binary_pml_kernel(eps, c, n_inputs)
    np.testing.assert_allclose(kernel.sum(axis=1), 1.0, rtol=1e-12)
    assert kernel.min() >= 0
    assert capacity_by_vertices(kernel, c) == pytest.approx(eps, rel=1e-10)
    e = math.exp(eps)
    assert dobrushin_by_rows(kernel) == pytest.approx((e - 1) / (e * (1 - n_inputs * c) + 1), rel=1e-10)


def test_theorem2_kernel_above_switch_has_full_contraction():
    n_inputs, c = 5, 0.1
    switch = math.log(2 / (n_inputs * c))
    kernel = optimal_binary_pml_kernel(switch + 0.2, c, n_inputs)
    assert capacity_by_vertices(kernel, c) == pytest.approx(switch, rel=1e-12)
    assert dobrushin_by_rows(kernel) == pytest.approx(1.0)


def test_example2_kernels_reproduce_printed_values():
    kernels = example2_kernels()
    k1, k2 = kernels["K1"]["kernel"], kernels["K2"]["kernel"]
    assert kernels["K1"]["c"] == 0.05 and k1.shape == (10, 2)
    assert kernels["K2"]["c"] == 0.1 and k2.shape == (5, 5)
    np.testing.assert_array_equal(k1[:5, 0], 15 / 16)
    np.testing.assert_array_equal(k1[5:, 0], 1 / 16)
    # Both are (log 10/3, c)-PML, tightly (the paper's M(log 10/3, c) membership).
    assert capacity_by_vertices(k1, 0.05) == pytest.approx(math.log(10 / 3), rel=1e-12)
    assert capacity_by_vertices(k2, 0.1) == pytest.approx(math.log(10 / 3), rel=1e-12)
    r1, r2 = kernel_leakage(k1, 0.05), kernel_leakage(k2, 0.1)
    assert r1.pml == pytest.approx(math.log(10 / 3), rel=1e-12)
    assert r2.pml == pytest.approx(math.log(10 / 3), rel=1e-12)
    # "K1 also satisfies log(15)-LDP"; K2 has zeros, so no finite LDP.
    assert r1.ldp == pytest.approx(math.log(15), rel=1e-12)
    assert r2.ldp == math.inf and r2.to_dict()["ldp"] is None
    # K1 is Remark 2's kernel for ε = log(10/3), c = 0.05, N = 10, q = 5.
    np.testing.assert_allclose(optimal_binary_pml_kernel(math.log(10 / 3), 0.05, 10, q=5), k1, rtol=1e-12)
    # Dobrushin coefficients: 15/16 − 1/16 = 7/8 for K1; rows 0 and 3 of K2 share one entry: 2/3.
    assert dobrushin_by_rows(k1) == pytest.approx(7 / 8)
    assert dobrushin_by_rows(k2) == pytest.approx(2 / 3)


@pytest.mark.parametrize("bad", [
    [[0.5, 0.4], [0.5, 0.5]],          # row does not sum to 1
    [[1.5, -0.5], [0.5, 0.5]],         # negative entry
    [[np.nan, 1.0], [0.5, 0.5]],       # NaN
    [0.5, 0.5],                        # 1-D
])
def test_bad_kernels_raise_naming_kernel(bad):
    with pytest.raises(InputError, match="'kernel'"):
        as_kernel(bad)
    with pytest.raises(InputError, match="'kernel'"):
        local_leakage_capacity(bad, 0.1)


def test_bad_scalars_raise_naming_the_argument():
    kernel = randomized_response(0.8)
    for c in [0.0, -0.1, 0.6, float("nan")]:
        with pytest.raises(InputError, match="'c'"):
            local_leakage_capacity(kernel, c)
    for eps in [0.0, -1.0, float("nan"), float("inf")]:
        with pytest.raises(InputError, match="'epsilon'"):
            optimal_binary_pml_kernel(eps, 0.1, 3)
    with pytest.raises(InputError, match="'q'"):
        optimal_binary_pml_kernel(0.8, 0.2, 4, q=3)  # m ∝ 1 − e^0.8·0.2·3 < 0
    with pytest.raises(InputError, match="'p'"):
        randomized_response(1.2)
    with pytest.raises(InputError, match="'prior'"):
        outcome_pml(kernel, [0.3, 0.3])
    with pytest.raises(InputError, match="'prior'"):
        outcome_pml(kernel, [1.0, 0.0])


def test_sampled_priors_lie_in_q_and_are_reproducible():
    priors = sample_min_mass_priors(5, 0.1, 4000, seed=3)
    assert priors.shape == (4000, 5)
    assert priors.min() >= 0.1 - 1e-15
    np.testing.assert_allclose(priors.sum(axis=1), 1.0, rtol=1e-12)
    # Uniform on c + (1 − Nc)·simplex: mean 1/N per entry, variance (1 − Nc)² (N−1)/(N²(N+1)).
    np.testing.assert_allclose(priors.mean(axis=0), 0.2, atol=0.005)
    np.testing.assert_allclose(priors.var(axis=0), 0.25 * 4 / (25 * 6), rtol=0.1)
    np.testing.assert_array_equal(priors, sample_min_mass_priors(5, 0.1, 4000, seed=3))
    with pytest.raises(InputError, match="'c'"):
        sample_min_mass_priors(5, 0.3, 10, seed=0)
    with pytest.raises(InputError, match="'concentration'"):
        sample_min_mass_priors(5, 0.1, 10, seed=0, concentration=0.0)
