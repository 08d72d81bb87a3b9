"""Pufferfish / MI PP conversion bounds against independent computations in the test.

Expected values come from direct summation over small discrete mechanisms, grid searches
over priors, numerical integration, a root finder, or the paper's formulas evaluated by hand
with ``math`` — never from the code under test.
"""

import json
import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from audit.bounds.composition import compose_mi_pp, eta_bound_finite_support, eta_bound_log_concave
from audit.bounds.pufferfish import (
    approx_pp_to_mipp,
    binary_entropy,
    density_constants,
    dp_epsilon_lower_bound_from_mi,
    kl_pp_levels,
    mipp_to_pp,
    pp_to_mipp,
    tv_bound_from_approx_pp,
    utility_bounds,
)
from audit.cli.main import main
from estimators.validation import InputError

LN2 = math.log(2.0)


# ---------------------------------------------------------------- independent helpers


def mutual_information(joint):
    """I(A; B) of a 2-D joint pmf by direct summation, nats."""
    joint = np.asarray(joint, dtype=float)
    pa = joint.sum(axis=1)
    pb = joint.sum(axis=0)
    total = 0.0
    for i in range(joint.shape[0]):
        for j in range(joint.shape[1]):
            if joint[i, j] > 0:
                total += joint[i, j] * math.log(joint[i, j] / (pa[i] * pb[j]))
    return total


def randomized_response(eps, k=2):
    """k-ary randomized response: keep the value w.p. e^ε/(e^ε+k−1), else a uniform other value."""
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    other = 1.0 / (math.exp(eps) + k - 1)
    return np.array([[keep if a == y else other for y in range(k)] for a in range(k)])


def capacity_by_grid(channel, points=4001):
    """max over binary priors of I(input; output), by grid search."""
    best = 0.0
    for q in np.linspace(0.0, 1.0, points):
        prior = np.array([q, 1.0 - q])
        best = max(best, mutual_information(prior[:, None] * channel))
    return best


def entropy(pmf):
    return -sum(p * math.log(p) for p in np.ravel(pmf) if p > 0)


# ---------------------------------------------------------------- Theorem 1, first implication


@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 2.0, 3.5])
def test_randomized_response_mi_below_pp_to_mipp(eps):
    channel = randomized_response(eps)
    uniform_mi = mutual_information(0.5 * channel)
    worst_mi = capacity_by_grid(channel)
    bound = pp_to_mipp(eps)
    assert bound == pytest.approx(min(eps, eps * eps / 2.0))
    assert uniform_mi <= worst_mi + 1e-12
    assert worst_mi <= bound
    # Remark 4: the KL between the two conditionals sits between MI and the bound.
    kl = sum(channel[0, y] * math.log(channel[0, y] / channel[1, y]) for y in range(2))
    assert worst_mi <= kl <= bound


def test_pp_to_mipp_hand_values_and_ternary_rr():
    assert pp_to_mipp(1.0) == 0.5
    assert pp_to_mipp(2.0) == 2.0
    assert pp_to_mipp(4.0) == 4.0
    channel = randomized_response(0.8, k=3)
    assert mutual_information(channel / 3.0) <= pp_to_mipp(0.8)


# ---------------------------------------------------------------- the audit inverse


@pytest.mark.parametrize("mi", [1e-4, 0.02, 0.5, 1.999, 2.0, 2.5, 10.0])
def test_dp_epsilon_from_mi_solves_min_equation(mi):
    root = optimize.brentq(lambda e: min(e, e * e / 2.0) - mi, 0.0, 100.0, xtol=1e-14)
    assert dp_epsilon_lower_bound_from_mi(mi) == pytest.approx(root, rel=1e-10)


def test_dp_epsilon_from_mi_nothing_certified_and_round_trip():
    assert dp_epsilon_lower_bound_from_mi(0.0) == 0.0
    assert dp_epsilon_lower_bound_from_mi(-0.3) == 0.0
    for eps in (0.1, 1.0, 2.0, 5.0):
        assert dp_epsilon_lower_bound_from_mi(pp_to_mipp(eps)) == pytest.approx(eps)
    with pytest.raises(InputError, match="'mi_lower_bound'"):
        dp_epsilon_lower_bound_from_mi(float("nan"))


# ---------------------------------------------------------------- Theorem 1, second implication


@pytest.mark.parametrize("eps", [0.2, 1.0])
def test_mipp_to_pp_delta_bounds_tv_of_rr(eps):
    channel = randomized_response(eps)
    mi_level = capacity_by_grid(channel)  # the MI DP level: sup over priors
    tv = 0.5 * np.abs(channel[0] - channel[1]).sum()
    result = mipp_to_pp(mi_level)
    assert result.delta == pytest.approx(math.sqrt(2.0 * mi_level))
    assert tv <= result.delta
    assert result.epsilon_prime == 0.0 and not result.vacuous


def test_mipp_to_pp_vacuous_flag():
    assert mipp_to_pp(0.5).vacuous and mipp_to_pp(0.5).delta == pytest.approx(1.0)
    assert mipp_to_pp(0.1, epsilon_prime=0.7).to_dict()["epsilon_prime"] == 0.7


# ---------------------------------------------------------------- Theorem 1, inverse, Part 1


def test_binary_entropy_hand_values():
    assert binary_entropy(0.5) == pytest.approx(LN2)
    assert binary_entropy(0.0) == 0.0 and binary_entropy(1.0) == 0.0
    assert binary_entropy(0.1) == pytest.approx(-0.1 * math.log(0.1) - 0.9 * math.log(0.9))


def test_approx_pp_finite_hand_computed():
    eps, delta = 0.5, 0.01
    dprime = 1.0 - 2.0 * (1.0 - delta) / (math.exp(eps) + 1.0)
    hb = -dprime * math.log(dprime) - (1 - dprime) * math.log(1 - dprime)
    assert tv_bound_from_approx_pp(eps, delta) == pytest.approx(dprime)
    expected = 2 * hb + 2 * dprime * math.log(4)
    assert approx_pp_to_mipp(eps, delta, output_support=4) == pytest.approx(expected)
    # the cardinality is |spt M| ∧ (max|Im g| + 1): 2 secret values beat 10 outputs
    expected_min = 2 * hb + 2 * dprime * math.log(3)
    assert approx_pp_to_mipp(eps, delta, output_support=10, secret_values=2) == pytest.approx(expected_min)
    assert approx_pp_to_mipp(0.0, 0.0, output_support=2) == 0.0  # (0,0)-PP: perfect privacy


@pytest.mark.parametrize("eps", [0.1, 0.5, 2.0])
def test_approx_pp_finite_is_valid_for_rr(eps):
    # binary RR is (ε, 0)-DP; its worst-case MI must not exceed ε*
    bound = approx_pp_to_mipp(eps, 0.0, output_support=2)
    assert capacity_by_grid(randomized_response(eps), points=1001) <= bound


# ---------------------------------------------------------------- Theorem 1, inverse, Part 2 (4)


def test_density_constants_of_laplace_match_closed_form():
    b, shift = 1.0, 0.7
    grid = np.linspace(-6.0, 6.7, 1271)
    dens = np.array([stats.laplace(0, b).pdf(grid), stats.laplace(shift, b).pdf(grid)])
    const = density_constants(dens)
    # sup and inf of the Laplace likelihood ratio are e^{±shift/b}
    np.testing.assert_allclose(const.alpha, math.exp(-shift / b), rtol=1e-9)
    np.testing.assert_allclose(const.beta, math.exp(-shift / b), rtol=1e-9)
    np.testing.assert_allclose(const.u, 1.0 / (2 * b), rtol=1e-9)
    np.testing.assert_allclose(const.ell, [stats.laplace(0, b).pdf(6.7), stats.laplace(shift, b).pdf(-6.0)])


def test_approx_pp_density_formula_and_validity():
    b, shift = 1.0, 0.7
    eps = shift / b  # the Laplace mechanism with this shift is (ε, 0)-DP
    grid = np.linspace(-6.0, 6.7, 1271)
    pdf0, pdf1 = stats.laplace(0, b).pdf, stats.laplace(shift, b).pdf
    const = density_constants(np.array([pdf0(grid), pdf1(grid)]))
    a = math.exp(-eps)
    reverse_pinsker = math.log(1 / a) / (1 - a) - a  # Sason (2015) Thm 1 with |P − Q| = 2 TV
    log_range = math.log((1 / (2 * b)) / pdf0(6.7))
    dprime = 1 - 2 / (math.exp(eps) + 1)
    got = approx_pp_to_mipp(eps, 0.0, method="density", alpha=const.alpha, beta=const.beta, u=const.u, ell=const.ell)
    assert got == pytest.approx(dprime * min(reverse_pinsker, log_range), rel=1e-9)
    # MI of a uniform binary secret through the (untruncated) Laplace mechanism, by integration
    mix = lambda t: 0.5 * (pdf0(t) + pdf1(t))  # noqa: E731
    kl = lambda p: integrate.quad(lambda t: p(t) * math.log(p(t) / mix(t)), -40, 40, points=[0, shift], limit=200)[0]  # noqa: E731
    mi = 0.5 * (kl(pdf0) + kl(pdf1))
    assert mi <= got
    # each term alone is a valid bound as well (ε₁*, ε₂* of the proof)
    assert approx_pp_to_mipp(eps, 0.0, method="density", alpha=a, beta=a) == pytest.approx(dprime * reverse_pinsker)


def test_reverse_pinsker_term_bounds_the_divergence_and_the_printed_half_does_not():
    # Sason (2015) Thm 1 in total variation: D(P‖Q) ≤ (log(1/β₁)/(1−β₁) − β₂)·TV, β₁ = min Q/P,
    # β₂ = min P/Q. The paper's δ'/2·(…) fails on this pair: D = 0.511, TV = 0.4, half-term 0.291.
    p, q = np.array([0.5, 0.5]), np.array([0.1, 0.9])
    div = float(np.sum(p * np.log(p / q)))
    tv_pq = 0.4
    b1, b2 = 0.2, 5.0 / 9.0
    sason = (math.log(1 / b1) / (1 - b1) - b2) * tv_pq
    assert 0.5 * sason < div <= sason
    # the code's term, through the public API at ε with δ' = TV: δ' · sup over both orders
    eps = math.log((1 + tv_pq) / (1 - tv_pq))  # δ' = 1 − 2/(e^ε + 1) = TV
    got = approx_pp_to_mipp(eps, 0.0, method="density", alpha=[b1, b2], beta=[b2, b1])
    both = max(math.log(1 / b1) / (1 - b1) - b2, math.log(1 / b2) / (1 - b2) - b1)
    assert got == pytest.approx(tv_pq * both) and got >= div
    # on random pairs the doubled term holds (by brute force) and is nearly attained
    rng = np.random.default_rng(3)
    ratios = []
    for _ in range(2000):
        p, q = rng.dirichlet(np.ones(3), size=2)
        d = float(np.sum(p * np.log(p / q)))
        beta1, beta2 = float(np.min(q / p)), float(np.min(p / q))
        bound = (math.log(1 / beta1) / (1 - beta1) - beta2) * 0.5 * float(np.abs(p - q).sum())
        ratios.append(d / bound)
    assert max(ratios) <= 1 + 1e-12 and max(ratios) > 0.9


def test_log_density_term_bounds_the_mi_with_total_variation_as_sup_over_events():
    # Lemma 1's TV is sup_A |P(A) − Q(A)| (half the L1 distance), the convention of δ'. Brute
    # force on random channels: I(g; M) ≤ max_{a,b} TV(P_a, P_b) · max_a log(max_y W/min_y W).
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(3000):
        k, n = int(rng.integers(2, 4)), int(rng.integers(2, 5))
        channel = rng.dirichlet(np.ones(n) * rng.choice([0.3, 1.0, 5.0]), size=k)
        prior = rng.dirichlet(np.ones(k))
        marginal = prior @ channel
        mi = float(np.sum(prior[:, None] * channel * np.log(channel / marginal)))
        tv_max = max(0.5 * float(np.abs(channel[a] - channel[b]).sum()) for a in range(k) for b in range(k))
        eps = math.log((1 + tv_max) / (1 - tv_max))  # δ' = 1 − 2/(e^ε + 1) = tv_max at δ = 0
        got = approx_pp_to_mipp(eps, 0.0, method="density", u=channel.max(axis=1), ell=channel.min(axis=1))
        gamma = float(np.max(np.log(channel.max(axis=1) / channel.min(axis=1))))
        assert got == pytest.approx(tv_max * gamma, rel=1e-9)
        assert mi <= got * (1 + 1e-12)
        worst = max(worst, mi / got)
    assert worst > 0.15  # not vacuous: the bound comes within a factor 7 on some channel


def test_finite_part_for_large_tv_bound_is_at_least_the_largest_possible_mi():
    # δ' ≥ ½: h_b decreases there, but the bound stays at least log N ≥ any I(g; M) with
    # |spt M| = N outputs or |Im g| + 1 = N (I ≤ log |spt M|, I ≤ H(g) ≤ log |Im g|).
    for eps in (1.2, 2.0, 5.0, 20.0):
        for delta in (0.0, 0.3, 0.9):
            dprime = 1 - 2 * (1 - delta) / (math.exp(eps) + 1)
            assert dprime >= 0.5
            for support in (2, 3, 10, 1000):
                got = approx_pp_to_mipp(eps, delta, output_support=support)
                assert got >= math.log(support)
                assert approx_pp_to_mipp(eps, delta, secret_values=support) >= math.log(support)


def test_density_constants_unbounded_ratio():
    const = density_constants([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]])
    assert 0.0 in const.alpha  # f(x|b) = 0 < f(x|a) somewhere
    assert math.isinf(approx_pp_to_mipp(1.0, 0.0, method="density", u=const.u, ell=const.ell))


# ---------------------------------------------------------------- Remark 4


def test_kl_pp_levels_against_loops():
    rng = np.random.default_rng(3)
    for _ in range(5):
        table = rng.dirichlet(np.ones(4), size=3)
        prior = rng.dirichlet(np.ones(3))
        levels = kl_pp_levels(table, prior)
        pp = max(math.log(table[a, y] / table[b, y]) for a in range(3) for b in range(3) if a != b for y in range(4))
        kl = max(sum(table[a, y] * math.log(table[a, y] / table[b, y]) for y in range(4))
                 for a in range(3) for b in range(3) if a != b)
        assert levels.pp_epsilon == pytest.approx(pp)
        assert levels.kl_epsilon == pytest.approx(kl)
        assert levels.mi == pytest.approx(mutual_information(prior[:, None] * table))
        assert levels.mi <= levels.kl_epsilon <= levels.mi_epsilon_from_pp + 1e-12


# ---------------------------------------------------------------- composition


def joint_two_mechanisms(eps1, eps2, corr):
    """P(g, M1, M2) with X = (B1, B2), g = B1 uniform, B2 = B1 w.p. corr, M_i = RR_εi(B_i)."""
    rr1, rr2 = randomized_response(eps1), randomized_response(eps2)
    joint = np.zeros((2, 2, 2))
    for b1 in range(2):
        for b2 in range(2):
            pb = 0.5 * (corr if b1 == b2 else 1 - corr)
            for m1 in range(2):
                for m2 in range(2):
                    joint[b1, m1, m2] += pb * rr1[b1, m1] * rr2[b2, m2]
    return joint


def test_non_adaptive_composition_against_direct_mi():
    joint = joint_two_mechanisms(1.0, 0.6, 0.8)
    mi_joint = mutual_information(joint.reshape(2, 4))
    eps1 = mutual_information(joint.sum(axis=2))
    eps2 = mutual_information(joint.sum(axis=1))
    # η' = I(M2; M1 | g), by summation
    eta = sum(0.5 * mutual_information(joint[a] / joint[a].sum()) for a in range(2))
    assert eta > 0  # the secret does not specify the database, so η matters
    bound = compose_mi_pp([eps1, eps2], method="non-adaptive", eta=eta)
    assert bound.mi_epsilon == pytest.approx(eps1 + eps2 + eta)
    assert mi_joint <= bound.mi_epsilon + 1e-12
    finite = compose_mi_pp([eps1, eps2], method="non-adaptive", output_supports=[2, 2])
    assert finite.eta == pytest.approx(LN2) and finite.eta_finite_support == pytest.approx(LN2)
    assert eta <= finite.eta
    # both given: the smaller wins
    assert compose_mi_pp([eps1, eps2], method="non-adaptive", eta=eta, output_supports=[2, 2]).eta == pytest.approx(eta)


def test_adaptive_composition_is_chain_rule_exact():
    joint = joint_two_mechanisms(0.9, 1.3, 0.7)
    eps1 = mutual_information(joint.sum(axis=2))
    # ε2 = I(g; M2 | M1): average over m1 of I(g; M2 | M1 = m1)
    p_m1 = joint.sum(axis=(0, 2))
    eps2 = sum(p_m1[m] * mutual_information(joint[:, m, :] / p_m1[m]) for m in range(2))
    bound = compose_mi_pp([eps1, eps2], method="adaptive")
    assert bound.mi_epsilon == pytest.approx(mutual_information(joint.reshape(2, 4)), rel=1e-12)


def test_universally_composable_when_secret_is_database():
    # corr = 1: (g, w) specify the database (Remark 6), so η = 0 and Σ ε_i holds
    joint = joint_two_mechanisms(1.0, 0.6, 1.0)
    eps1, eps2 = mutual_information(joint.sum(axis=2)), mutual_information(joint.sum(axis=1))
    bound = compose_mi_pp([eps1, eps2], method="universally-composable")
    assert bound.mi_epsilon == pytest.approx(eps1 + eps2)
    assert mutual_information(joint.reshape(2, 4)) <= bound.mi_epsilon


def test_mixture_convexity_against_direct_mi():
    rr1, rr2 = randomized_response(0.4), randomized_response(2.0)
    p = np.array([0.3, 0.7])
    mixture_channel = p[0] * rr1 + p[1] * rr2
    eps = [mutual_information(0.5 * rr1), mutual_information(0.5 * rr2)]
    bound = compose_mi_pp(eps, method="mixture", weights=p)
    assert bound.mi_epsilon == pytest.approx(0.3 * eps[0] + 0.7 * eps[1])
    assert mutual_information(0.5 * mixture_channel) <= bound.mi_epsilon


def test_log_concave_eta_against_gaussian_closed_form():
    # X = (A, B) jointly Gaussian, g = A, M_i = B + N(0, s²): I(M2; M1 | A) = −½ log(1 − ρ²)
    tau2, s2 = 1.5, 0.8  # Var(B | A), noise variance
    rho = tau2 / (tau2 + s2)
    eta_true = -0.5 * math.log(1 - rho * rho)
    bound = eta_bound_log_concave([tau2 + s2], [s2])
    # ½ log(2πe Var(M|g,w)) (Gaussian maximum entropy) − ½ log(4 Var(M|X)) (log-concave minimum)
    assert bound == pytest.approx(0.5 * math.log(2 * math.pi * math.e * (tau2 + s2)) - 0.5 * math.log(4 * s2))
    assert eta_true <= bound
    comp = compose_mi_pp([0.1, 0.2], method="non-adaptive", output_variances=[9.0, tau2 + s2], noise_variances=[1.0, s2])
    assert comp.eta_log_concave == pytest.approx(bound) and comp.mi_epsilon == pytest.approx(0.3 + bound)
    assert eta_bound_finite_support([2, 3]) == pytest.approx(math.log(6))


def _entropy_by_quadrature(dist) -> float:
    """h = −∫ f log f of a continuous scipy distribution, by quadrature over its support's bulk."""
    lo, hi = dist.ppf(1e-15), dist.isf(1e-15)
    value, error = integrate.quad(lambda t: -dist.pdf(t) * dist.logpdf(t), lo, hi, points=[0.0], limit=500)
    assert error < 1e-7
    return value


def test_log_concave_eta_bounds_exponential_noise():
    # X = (A, B), g = A, B ~ N(0, S) independent of A; M_1 = B + N(0, s²), M_2 = B + Exp(1) noise: both
    # log-concave and one-dimensional given X (Remark 5's condition). B | M_1 is N(·, τ²), τ² = S s²/(S + s²),
    # so I(M_2; M_1 | A) = h(N(0, S) + Exp(1)) − h(N(0, τ²) + Exp(1)), exponentially modified Gaussians.
    big, small = 100.0, 0.01
    tau = math.sqrt(big * small**2 / (big + small**2))
    h_m2 = _entropy_by_quadrature(stats.exponnorm(1.0 / math.sqrt(big), scale=math.sqrt(big)))
    h_m2_given_m1 = _entropy_by_quadrature(stats.exponnorm(1.0 / tau, scale=tau))
    eta_true = h_m2 - h_m2_given_m1
    assert eta_true == pytest.approx(2.717, abs=2e-3)
    # Var(M_2 | A) = S + 1, Var(M_2 | X) = 1: the bound must hold (the paper's printed πe/4 gives 2.687 here).
    assert eta_true <= eta_bound_log_concave([big + 1.0], [1.0])


# ---------------------------------------------------------------- Propositions 7-8


def test_utility_bounds_hand_computed_from_joint():
    # joint pmf of (f, g): f takes 3 values, g binary
    joint = np.array([[0.30, 0.05], [0.10, 0.20], [0.05, 0.30]])
    h_fg, h_f, h_g = entropy(joint), entropy(joint.sum(axis=1)), entropy(joint.sum(axis=0))
    h_f_given_g, h_g_given_f = h_fg - h_g, h_fg - h_f
    info = h_g - h_g_given_f
    eps = 0.5 * info
    got = utility_bounds(eps, h_f_given_g=h_f_given_g, h_g_given_f=h_g_given_f, h_g=h_g)
    alpha = eps / h_g
    l1 = h_f_given_g - h_g_given_f + eps
    # L_2 worked in bits throughout (the SFRL's +4 is in bits, Li and El Gamal 2018), then to nats
    bits = 1.0 / math.log(2.0)
    l2_bits = (h_f_given_g * bits - alpha * h_g_given_f * bits + eps * bits
               - (1 - alpha) * (math.log2(info * bits + 1) + 4))
    l2 = l2_bits * math.log(2.0)
    assert got.upper_bound == pytest.approx(h_f_given_g + eps)
    assert got.lower_bound_1 == pytest.approx(l1) and got.lower_bound_2 == pytest.approx(l2)
    assert got.lower_bound == pytest.approx(max(l1, l2)) and got.alpha == pytest.approx(alpha)
    assert got.lower_bound <= got.upper_bound


def test_utility_bounds_second_lower_bound_tighter_than_reading_the_constant_in_nats():
    # reading the printed "+ 4" as nats subtracts more: valid but looser, by at least 4(1 - ln 2) + ln ln 2
    h_f_given_g, h_g_given_f, h_g, eps = 2.0, 0.3, 1.5, 0.4
    got = utility_bounds(eps, h_f_given_g=h_f_given_g, h_g_given_f=h_g_given_f, h_g=h_g)
    alpha, info = eps / h_g, h_g - h_g_given_f
    in_nats_reading = h_f_given_g - alpha * h_g_given_f + eps - (1 - alpha) * (math.log(info + 1) + 4)
    gap = (got.lower_bound_2 - in_nats_reading) / (1 - alpha)
    assert gap >= 4 * (1 - math.log(2)) + math.log(math.log(2)) > 0.85


def test_utility_bounds_tight_when_g_determined_by_f():
    got = utility_bounds(0.2, h_f_given_g=0.9, h_g_given_f=0.0, h_g=LN2)
    assert got.lower_bound == pytest.approx(got.upper_bound) == pytest.approx(1.1)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("call,name", [
    (lambda: pp_to_mipp(0.0), "epsilon"),
    (lambda: pp_to_mipp(-1.0), "epsilon"),
    (lambda: pp_to_mipp(float("inf")), "epsilon"),
    (lambda: mipp_to_pp(-0.1), "mi_epsilon"),
    (lambda: approx_pp_to_mipp(-0.5, 0.1, output_support=3), "epsilon"),
    (lambda: approx_pp_to_mipp(0.5, 1.0, output_support=3), "delta"),
    (lambda: approx_pp_to_mipp(0.5, -0.1, output_support=3), "delta"),
    (lambda: approx_pp_to_mipp(0.5, 0.1, output_support=1), "output_support"),
    (lambda: approx_pp_to_mipp(0.5, 0.1, secret_values=1), "secret_values"),
    (lambda: approx_pp_to_mipp(0.5, 0.1), "output_support"),
    (lambda: approx_pp_to_mipp(0.5, 0.1, method="density", alpha=1.5, beta=0.5), "alpha"),
    (lambda: approx_pp_to_mipp(0.5, 0.1, method="density", u=1.0, ell=2.0), "ell"),
    (lambda: approx_pp_to_mipp(0.5, 0.1, method="density", alpha=0.5), "beta"),
    (lambda: approx_pp_to_mipp(0.5, 0.1, method="nope"), "method"),
    (lambda: kl_pp_levels([[0.5, 0.6], [0.5, 0.5]]), "conditionals"),
    (lambda: kl_pp_levels([[0.5, 0.5], [0.5, 0.5]], prior=[1.0, 0.0]), "prior"),
    (lambda: density_constants([[1.0, np.nan], [0.5, 0.5]]), "conditional_densities"),
    (lambda: compose_mi_pp([0.1, -0.2]), "mi_epsilons"),
    (lambda: compose_mi_pp([0.1, 0.2], method="non-adaptive"), "eta"),
    (lambda: compose_mi_pp([0.1, 0.2], method="non-adaptive", output_supports=[2]), "output_supports"),
    (lambda: compose_mi_pp([0.1, 0.2], method="non-adaptive", eta=-1.0), "eta"),
    (lambda: compose_mi_pp([0.1, 0.2], eta=0.3), "eta"),
    (lambda: compose_mi_pp([0.1, 0.2], method="mixture", weights=[0.5, 0.6]), "weights"),
    (lambda: eta_bound_log_concave([0.5], [1.0]), "output_variances"),
    (lambda: utility_bounds(2.0, h_f_given_g=1.0, h_g_given_f=0.1, h_g=0.6), "mi_epsilon"),
    (lambda: utility_bounds(0.1, h_f_given_g=1.0, h_g_given_f=0.7, h_g=0.6), "h_g_given_f"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(InputError, match=f"'{name}'"):
        call()


# ---------------------------------------------------------------- CLI


def run_json(capsys, *argv):
    assert main(["bounds", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_pp_to_mipp_and_bits(capsys):
    out = run_json(capsys, "pp-to-mipp", "--epsilon", "1.0")
    assert out["mi_epsilon"] == pytest.approx(0.5) and out["unit"] == "nats" and "Theorem 1" in out["source"]
    bits = run_json(capsys, "pp-to-mipp", "--epsilon", "1.0", "--bits")
    assert bits["epsilon"] == 1.0 and bits["mi_epsilon"] == pytest.approx(0.5 / LN2) and bits["unit"] == "bits"


def test_cli_mipp_to_pp(capsys):
    out = run_json(capsys, "mipp-to-pp", "--mi", "0.08")
    assert out["delta"] == pytest.approx(0.4) and out["epsilon_prime"] == 0.0
    bits = run_json(capsys, "mipp-to-pp", "--mi", "0.08", "--bits")
    assert bits["delta"] == pytest.approx(math.sqrt(2 * 0.08 * LN2)) and bits["mi"] == pytest.approx(0.08)


def test_cli_approx_pp_to_mipp(capsys):
    out = run_json(capsys, "approx-pp-to-mipp", "--epsilon", "0.5", "--delta", "0.01", "--support", "4")
    dprime = 1.0 - 2.0 * 0.99 / (math.exp(0.5) + 1.0)
    hb = -dprime * math.log(dprime) - (1 - dprime) * math.log(1 - dprime)
    assert out["mi_epsilon"] == pytest.approx(2 * hb + 2 * dprime * math.log(4)) and out["method"] == "finite"
    dens = run_json(capsys, "approx-pp-to-mipp", "--epsilon", "1", "--delta", "0", "--alpha", "0.5,0.9", "--beta", "0.5,0.9")
    term = max(math.log(1 / a) / (1 - a) - a for a in (0.5, 0.9))
    assert dens["mi_epsilon"] == pytest.approx((1 - 2 / (math.e + 1)) * term) and dens["method"] == "density"


def test_cli_approx_pp_to_mipp_from_density_file(capsys, tmp_path):
    # Gaussian mechanism, shift 1, σ = 1 on a finite grid: the likelihood ratio is e^{x − 1/2}
    grid = np.linspace(-3.0, 4.0, 701)
    path = tmp_path / "dens.npy"
    np.save(path, np.array([stats.norm(0, 1).pdf(grid), stats.norm(1, 1).pdf(grid)]))
    out = run_json(capsys, "approx-pp-to-mipp", "--epsilon", "1", "--delta", "0.05", "--densities", str(path))
    sup_ratio = math.exp(4.0 - 0.5)  # f0/f1 = e^{1/2 − x} at x = −3, and f1/f0 at x = 4 alike
    a = 1 / sup_ratio
    reverse_pinsker = math.log(sup_ratio) / (1 - a) - a
    log_range = math.log(stats.norm.pdf(0) / stats.norm.pdf(4.0))  # peak over the farthest grid point
    dprime = 1 - 2 * 0.95 / (math.e + 1)
    assert out["mi_epsilon"] == pytest.approx(dprime * min(reverse_pinsker, log_range), rel=1e-9)


def test_cli_dp_epsilon_from_mi(capsys):
    assert run_json(capsys, "dp-epsilon-from-mi", "--mi", "0.5")["epsilon"] == pytest.approx(1.0)
    assert run_json(capsys, "dp-epsilon-from-mi", "--mi", "-1")["epsilon"] == 0.0
    bits = run_json(capsys, "dp-epsilon-from-mi", "--mi", "4", "--bits")
    assert bits["epsilon"] == pytest.approx(4 * LN2) and bits["unit"] == "bits"


def test_cli_composition(capsys):
    out = run_json(capsys, "composition", "--mi-epsilons", "0.1,0.2,0.3", "--method", "non-adaptive",
                   "--output-supports", "5,2,3")
    assert out["mi_epsilon"] == pytest.approx(0.6 + math.log(6)) and out["eta"] == pytest.approx(math.log(6))
    bits = run_json(capsys, "composition", "--mi-epsilons", "1,2", "--method", "non-adaptive",
                    "--output-supports", "4,4", "--bits")
    assert bits["mi_epsilon"] == pytest.approx(3 + 2) and bits["unit"] == "bits"  # log2 4 = 2 bits
    assert run_json(capsys, "composition", "--mi-epsilons", "0.1,0.2")["mi_epsilon"] == pytest.approx(0.3)


def test_cli_utility(capsys):
    out = run_json(capsys, "utility", "--mi-epsilon", "0.2", "--h-f-given-g", "0.9", "--h-g-given-f", "0",
                   "--h-g", str(LN2))
    assert out["upper_bound"] == pytest.approx(1.1) and out["lower_bound"] == pytest.approx(1.1)


@pytest.mark.parametrize("argv,name", [
    (["pp-to-mipp", "--epsilon", "0"], "epsilon"),
    (["approx-pp-to-mipp", "--epsilon", "1", "--delta", "1.2", "--support", "3"], "delta"),
    (["approx-pp-to-mipp", "--epsilon", "1", "--delta", "0.1", "--support", "1"], "support"),
    (["approx-pp-to-mipp", "--epsilon", "1", "--delta", "0.1", "--densities", "/nonexistent.npy"], "densities"),
    (["mipp-to-pp", "--mi", "-0.5"], "mi"),
    (["dp-epsilon-from-mi", "--mi", "nan"], "mi"),
    (["composition", "--mi-epsilons", "0.1,x"], "mi-epsilons"),
])
def test_cli_bad_input_exits_2(capsys, argv, name):
    assert main(["bounds", *argv, "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and f"'--{name}'" in captured.err
