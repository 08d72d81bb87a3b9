"""Contraction bounds for (ε, c)-PML kernels: η_TV, Proposition 2, Eq. (7), corollaries,
the LDP comparison bounds, Example 3, and the ``miaudit bounds pml-*`` calculators."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.optimize import linprog

from audit.bounds.pml import (
    divergence_bound,
    eta_tv,
    ldp_divergence_bound,
    likelihood_ratio_bounds,
    minimax_risk_bound,
)
from audit.cli.main import main
from estimators.validation import InputError
from mechanisms.constructions.pml import example2_kernels


def eta_tv_by_linear_program(eps, c, n_inputs):
    """max p_0 − p_1 over binary kernels K = [p, 1 − p] that are (ε, c)-PML.

    Lemma 3: binary outputs suffice. Appendix D (Lemma 4, an equivalence): K is (ε, c)-PML iff
    for each column k and all x, x'': k_x ≤ e^ε(c Σ k + (1 − Nc) k_x''). These constraints are
    linear in p. Rows 0 and 1 stand for any pair by symmetry.
    """
    e = math.exp(eps)
    rows, bounds = [], []
    for i, j in itertools.product(range(n_inputs), repeat=2):
        # column p:     p_i − e c Σp − e(1 − Nc) p_j ≤ 0
        row = -e * c * np.ones(n_inputs)
        row[i] += 1
        row[j] -= e * (1 - n_inputs * c)
        rows.append(row)
        bounds.append(0.0)
        # column 1 − p: (1 − p_i) ≤ e(c(N − Σp) + (1 − Nc)(1 − p_j))
        row = e * c * np.ones(n_inputs)
        row[i] -= 1
        row[j] += e * (1 - n_inputs * c)
        rows.append(row)
        bounds.append(e * c * n_inputs + e * (1 - n_inputs * c) - 1)
    objective = np.zeros(n_inputs)
    objective[0], objective[1] = -1.0, 1.0
    result = linprog(objective, A_ub=np.array(rows), b_ub=np.array(bounds), bounds=[(0, 1)] * n_inputs)
    assert result.status == 0
    return -result.fun


def tv(p, q):
    return 0.5 * np.abs(p - q).sum()


def kl(p, q):
    return float(np.sum(p * np.log(p / q)))


def squared_hellinger(p, q):
    return float(np.sum((np.sqrt(p) - np.sqrt(q)) ** 2))


def pairs_in_q(rng, n_inputs, c, count):
    """Random pairs in Q_X(c) = c + (1 − Nc)·simplex, at several spreads."""
    for _ in range(count):
        alpha = rng.choice([0.2, 1.0, 5.0])
        v, w = rng.dirichlet(np.full(n_inputs, alpha), size=2)
        yield c + (1 - n_inputs * c) * v, c + (1 - n_inputs * c) * w


@pytest.mark.parametrize("n_inputs", [2, 3, 4, 5])
def test_eta_tv_equals_linear_program_over_binary_pml_kernels(n_inputs):
    for c in [0.01, 0.5 / n_inputs, 0.9 / n_inputs, 1.0 / n_inputs]:
        switch = math.log(2 / (n_inputs * c))
        epsilons = [0.05, 0.4, 1.0, switch - 0.05, switch + 0.05, 3.0]
        values = eta_tv(epsilons, c, n_inputs)  # vectorized over ε
        for eps, value in zip(epsilons, values):
            assert value == pytest.approx(eta_tv_by_linear_program(eps, c, n_inputs), abs=1e-7)


def test_eta_tv_printed_cases():
    # Example 2's setting: ε = log(10/3), N = 10, c = 0.05: (7/3)/(5/3 + 1) = 7/8.
    assert eta_tv(math.log(10 / 3), 0.05, 10) == pytest.approx(7 / 8, rel=1e-12)
    # Remark 1: c = 1/N gives e^ε − 1 (below the switch log 2).
    assert eta_tv(0.5, 0.25, 4) == pytest.approx(math.exp(0.5) - 1, rel=1e-12)
    # Remark 1: c → 0 recovers Kairouz et al.'s (e^ε − 1)/(e^ε + 1).
    assert eta_tv(1.3, 1e-12, 6) == pytest.approx(math.tanh(1.3 / 2), rel=1e-9)
    # Example 3: with N = 4 the switch is log(1/(2c)), above which Ξ = 1.
    assert eta_tv(math.log(1 / (2 * 0.1)) + 1e-9, 0.1, 4) == 1.0
    assert eta_tv(math.log(1 / (2 * 0.1)) - 1e-3, 0.1, 4) < 1.0


@pytest.mark.parametrize("name", ["K1", "K2"])
def test_example2_kernels_contract_tv_kl_hellinger_within_bounds(name):
    setting = example2_kernels()[name]
    kernel, c = setting["kernel"], setting["c"]
    n_inputs = kernel.shape[0]
    eps = math.log(10 / 3)
    eta = eta_tv(eps, c, n_inputs)
    gamma_min, gamma_max = likelihood_ratio_bounds(eps, c, n_inputs)
    rng = np.random.default_rng(5)
    for p, q in pairs_in_q(rng, n_inputs, c, 300):
        kp, kq = p @ kernel, q @ kernel
        delta = tv(p, q)
        assert tv(kp, kq) <= eta * delta + 1e-12
        ratio = kp / kq
        assert gamma_min - 1e-12 <= ratio.min() and ratio.max() <= gamma_max + 1e-12
        assert kl(kp, kq) <= divergence_bound("kl", eps, c, n_inputs, delta) + 1e-12
        assert squared_hellinger(kp, kq) <= divergence_bound("hellinger", eps, c, n_inputs, delta) + 1e-12


def test_k1_comparison_ldp_bounds_hold_on_random_pairs():
    setting = example2_kernels()["K1"]
    kernel, c = setting["kernel"], setting["c"]
    ldp_eps = math.log(15)  # printed: K1 is log(15)-LDP
    rng = np.random.default_rng(6)
    for p, q in pairs_in_q(rng, 10, c, 200):
        kp, kq = p @ kernel, q @ kernel
        delta = tv(p, q)
        assert kl(kp, kq) <= ldp_divergence_bound("duchi", ldp_eps, delta) + 1e-12
        assert kl(kp, kq) <= ldp_divergence_bound("asoodeh-zhang", ldp_eps, delta, q_min=c) + 1e-12
        assert tv(kp, kq) <= ldp_divergence_bound("kairouz", ldp_eps, delta) + 1e-12


def test_corollaries_by_hand_and_as_binette_with_their_f():
    eps = np.array([0.2, 1.0, 2.5])
    c, n_inputs, delta = 0.04, 5, 0.3
    e = np.exp(eps)
    xi = np.minimum((e - 1) / (e * (1 - n_inputs * c) + 1), 1.0)
    a = (1 - n_inputs * c) * e + 1
    kl_by_hand = xi * np.log(a) * delta
    hellinger_by_hand = xi * (2 - 4 / (np.sqrt(a) + 1)) * delta
    np.testing.assert_allclose(divergence_bound("kl", eps, c, n_inputs, delta), kl_by_hand, rtol=1e-12)
    np.testing.assert_allclose(divergence_bound("hellinger", eps, c, n_inputs, delta), hellinger_by_hand, rtol=1e-12)
    # Eq. (7) with f = t log t and f = (1 − √t)² gives the corollaries (a different computation).
    np.testing.assert_allclose(divergence_bound(lambda t: t * np.log(t), eps, c, n_inputs, delta), kl_by_hand, rtol=1e-10)
    np.testing.assert_allclose(divergence_bound(lambda t: (1 - np.sqrt(t)) ** 2, eps, c, n_inputs, delta),
                               hellinger_by_hand, rtol=1e-10)
    np.testing.assert_allclose(divergence_bound("tv", eps, c, n_inputs, delta), xi * delta, rtol=1e-12)


def test_binette_bound_for_chi_square_holds_on_k2():
    # χ² with f(t) = (t − 1)²: Eq. (7) coefficient (1 − Γmin) + (Γmax − 1), computed by hand.
    setting = example2_kernels()["K2"]
    kernel, c = setting["kernel"], setting["c"]
    eps = math.log(10 / 3)
    a = (1 - 5 * c) * math.exp(eps) + 1
    coefficient = (1 - 1 / a) + (a - 1)
    rng = np.random.default_rng(7)
    for p, q in pairs_in_q(rng, 5, c, 200):
        kp, kq = p @ kernel, q @ kernel
        delta = tv(p, q)
        bound = divergence_bound(lambda t: (t - 1) ** 2, eps, c, 5, delta)
        assert bound == pytest.approx(coefficient * 7 / 8 * delta, rel=1e-10)
        assert float(np.sum((kp - kq) ** 2 / kq)) <= bound + 1e-12


def test_divergence_bound_at_c_one_over_n_is_zero():
    # Q_X(1/N) holds only the uniform prior: TV must be 0 and every bound is 0.
    assert divergence_bound("kl", 0.5, 0.25, 4, 0.0) == 0.0
    assert divergence_bound(lambda t: t * np.log(t), 0.5, 0.25, 4, 0.0) == 0.0
    with pytest.raises(InputError, match="'tv'"):
        divergence_bound("kl", 0.5, 0.25, 4, 0.1)


def test_ldp_comparison_bounds_by_hand():
    eps, delta, q_min = 1.0, 0.2, 0.05
    e = math.e
    assert ldp_divergence_bound("duchi", eps, delta) == pytest.approx(min(4, e) * (e - 1) ** 2 * delta**2)
    assert ldp_divergence_bound("duchi", 2.0, delta) == pytest.approx(4 * (math.exp(2) - 1) ** 2 * delta**2)
    assert ldp_divergence_bound("kairouz", eps, delta) == pytest.approx((e - 1) / (e + 1) * delta)
    assert ldp_divergence_bound("asoodeh-zhang", eps, delta, q_min=q_min) == pytest.approx(
        ((e - 1) / (e + 1)) ** 2 * math.log(1 + 2 * delta**2 / q_min))


def test_reverse_pinsker_used_by_asoodeh_zhang_holds_on_random_pairs():
    # Sason–Verdú Thm. 28: D(P‖Q) ≤ log(1 + 2 TV²/Q_min); the η factor is 1 when ε is huge.
    rng = np.random.default_rng(8)
    for _ in range(300):
        p, q = rng.dirichlet(np.ones(4), size=2)
        eta_one = ldp_divergence_bound("asoodeh-zhang", 60.0, tv(p, q), q_min=q.min())
        assert kl(p, q) <= eta_one + 1e-12


def test_minimax_example3_by_hand():
    delta, c, n = 0.1, 0.05, 50
    eps = np.array([0.3, 1.0, 3.0])
    p0 = np.array([0.25 - delta, 0.25 + delta, 0.25, 0.25])
    p1 = np.array([0.25 + delta, 0.25 - delta, 0.25, 0.25])
    e = np.exp(eps)
    xi = np.minimum((e - 1) / (e * (1 - 4 * c) + 1), 1.0)
    kl_per_sample = xi * np.log((1 - 4 * c) * e + 1) * tv(p0, p1)
    result = minimax_risk_bound(eps, c, delta, n, target_risk=1e-3)
    np.testing.assert_allclose(result.kl_per_sample, kl_per_sample, rtol=1e-12)
    np.testing.assert_allclose(result.risk_lower_bound, delta / 4 * np.exp(-n * kl_per_sample), rtol=1e-12)
    # samples_needed is the first n whose Le Cam bound is at most the target (brute force).
    for needed, per_sample in zip(result.samples_needed, kl_per_sample):
        first = next(m for m in range(1, 10**6) if delta / 4 * math.exp(-m * per_sample) <= 1e-3)
        assert needed == first
    assert json.dumps(result.to_dict())


def test_minimax_rejects_hypotheses_outside_q():
    with pytest.raises(InputError, match="'c'"):
        minimax_risk_bound(1.0, 0.2, 0.1, 10)  # 1/4 − δ = 0.15 < c
    with pytest.raises(InputError, match="'delta'"):
        minimax_risk_bound(1.0, 0.01, 0.3, 10)


def test_bad_input_names_the_argument():
    for eps in [0.0, -1.0, float("nan"), [0.5, float("inf")]]:
        with pytest.raises(InputError, match="'epsilon'"):
            eta_tv(eps, 0.1, 5)
    for c in [0.0, -0.1, 0.25, float("nan")]:
        with pytest.raises(InputError, match="'c'"):
            eta_tv(1.0, c, 5)
    with pytest.raises(InputError, match="'n_inputs'"):
        eta_tv(1.0, 0.1, 0)
    with pytest.raises(InputError, match="'tv'"):
        divergence_bound("kl", 1.0, 0.1, 5, 0.6)  # > 1 − Nc = 0.5
    with pytest.raises(InputError, match="'tv'"):
        divergence_bound("kl", 1.0, 0.1, 5, float("nan"))
    with pytest.raises(InputError, match="'divergence'"):
        divergence_bound("chi2", 1.0, 0.1, 5, 0.2)
    with pytest.raises(InputError, match="'method'"):
        ldp_divergence_bound("zamanlooy", 1.0, 0.2)
    with pytest.raises(InputError, match="'q_min'"):
        ldp_divergence_bound("asoodeh-zhang", 1.0, 0.2)


# --- CLI -------------------------------------------------------------------------------------

def run_json(capsys, argv):
    assert main(["bounds", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_pml_kernel(tmp_path, capsys):
    path = tmp_path / "K1.npy"
    np.save(path, example2_kernels()["K1"]["kernel"])
    out = run_json(capsys, ["pml-kernel", "--kernel", str(path), "--c", "0.05"])
    assert out["pml"] == pytest.approx(math.log(10 / 3)) and out["ldp"] == pytest.approx(math.log(15))
    assert out["unit"] == "nats" and "Lemma 4" in out["source"]
    bits = run_json(capsys, ["pml-kernel", "--kernel", str(path), "--c", "0.05", "--bits"])
    assert bits["pml"] == pytest.approx(math.log2(10 / 3)) and bits["unit"] == "bits"
    path2 = tmp_path / "K2.npy"
    np.save(path2, example2_kernels()["K2"]["kernel"])
    out2 = run_json(capsys, ["pml-kernel", "--kernel", str(path2), "--c", "0.1"])
    assert out2["pml"] == pytest.approx(math.log(10 / 3)) and out2["ldp"] is None


def test_cli_pml_dobrushin_and_divergences(capsys):
    eps = str(math.log(10 / 3))
    out = run_json(capsys, ["pml-dobrushin", "--epsilon", eps, "--c", "0.05", "--n", "10"])
    assert out["eta_tv"] == pytest.approx(7 / 8)
    # In bits: ε = log2(10/3) bits is the same ε.
    bits = run_json(capsys, ["pml-dobrushin", "--epsilon", str(math.log2(10 / 3)), "--c", "0.05", "--n", "10", "--bits"])
    assert bits["eta_tv"] == pytest.approx(7 / 8)
    a = 0.5 * (10 / 3) + 1  # (1 − Nc)e^ε + 1
    kl_out = run_json(capsys, ["pml-kl", "--epsilon", eps, "--c", "0.05", "--n", "10", "--tv", "0.2"])
    assert kl_out["bound"] == pytest.approx(7 / 8 * math.log(a) * 0.2) and kl_out["unit"] == "nats"
    kl_bits = run_json(capsys, ["pml-kl", "--epsilon", str(math.log2(10 / 3)), "--c", "0.05", "--n", "10",
                                "--tv", "0.2", "--bits"])
    assert kl_bits["bound"] == pytest.approx(7 / 8 * math.log2(a) * 0.2)
    hel = run_json(capsys, ["pml-hellinger", "--epsilon", eps, "--c", "0.05", "--n", "10", "--tv", "0.2"])
    assert hel["bound"] == pytest.approx(7 / 8 * (2 - 4 / (math.sqrt(a) + 1)) * 0.2)
    assert "Corollary 2" in hel["source"]
    # --bits reads ε in bits and gives every information value in bits: the KL bound is the nats one over ln 2;
    # the squared Hellinger bound (in [0, 2]) is unit-free, the same number for the same ε.
    assert kl_bits["bound"] == pytest.approx(kl_out["bound"] / math.log(2)) and kl_bits["unit"] == "bits"
    hel_bits = run_json(capsys, ["pml-hellinger", "--epsilon", str(math.log2(10 / 3)), "--c", "0.05", "--n", "10",
                                 "--tv", "0.2", "--bits"])
    assert hel_bits["bound"] == pytest.approx(7 / 8 * (2 - 4 / (math.sqrt(a) + 1)) * 0.2)
    assert hel_bits["unit"] == "bits" and hel_bits["epsilon"] == pytest.approx(math.log(10 / 3) / math.log(2))
    # One bit of PML is ε = ln 2 nats: Ξ = (2 − 1)/(2(1 − Nc) + 1) and (1 − Nc)e^ε + 1 = 2(1 − Nc) + 1,
    # with 1 − Nc = 1/2.
    one_bit = run_json(capsys, ["pml-hellinger", "--epsilon", "1", "--c", "0.05", "--n", "10", "--tv", "0.2",
                                "--bits"])
    assert one_bit["bound"] == pytest.approx(1 / 2 * (2 - 4 / (math.sqrt(2) + 1)) * 0.2)


@pytest.mark.parametrize("argv, argument", [
    (["pml-dobrushin", "--epsilon", "0", "--c", "0.05", "--n", "10"], "'--epsilon'"),
    (["pml-dobrushin", "--epsilon", "1", "--c", "0.2", "--n", "10"], "'--c'"),
    (["pml-dobrushin", "--epsilon", "nan", "--c", "0.05", "--n", "10"], "'--epsilon'"),
    (["pml-kl", "--epsilon", "1", "--c", "0.05", "--n", "10", "--tv", "0.7"], "'--tv'"),
])
def test_cli_bad_input_exits_2(capsys, argv, argument):
    assert main(["bounds", *argv, "--json"]) == 2
    assert argument in capsys.readouterr().err


def test_cli_non_stochastic_kernel_exits_2(tmp_path, capsys):
    path = tmp_path / "bad.npy"
    np.save(path, np.array([[0.6, 0.6], [0.5, 0.5]]))
    assert main(["bounds", "pml-kernel", "--kernel", str(path), "--c", "0.1", "--json"]) == 2
    assert "'--kernel'" in capsys.readouterr().err
