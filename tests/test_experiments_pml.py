"""Reproductions of Fig. 1 and Example 3 of the PML/Dobrushin paper, checked by independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.framework import read_table
from experiments.registry import run

#: Every test here runs the experiment (quick budget) and writes its files.
pytestmark = pytest.mark.integration


def test_pml_fig1_true_divergences_and_bounds(tmp_path):
    run("pml-fig1", out_dir=tmp_path, quick=True)
    k1 = read_table(tmp_path / "k1_kl.csv")
    p = np.column_stack([k1[f"p_{x}"] for x in range(10)])
    q = np.column_stack([k1[f"q_{x}"] for x in range(10)])
    assert p.shape == (300, 10)
    assert np.all(p >= 0.05 - 1e-12) and np.all(q >= 0.05 - 1e-12)  # in Q_X(c), c = 0.05
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(k1["tv"], 0.5 * np.abs(p - q).sum(axis=1))
    assert k1["tv"].max() <= 0.5 + 1e-12 and k1["tv"].max() > 0.3  # the pairs cover the TV range [0, 1 - Nc]
    # K1 (Example 2): outcome 0 has probability 15/16 for x < 5 and 1/16 otherwise.
    a0 = p[:, :5].sum(axis=1) * 15 / 16 + p[:, 5:].sum(axis=1) / 16
    b0 = q[:, :5].sum(axis=1) * 15 / 16 + q[:, 5:].sum(axis=1) / 16
    true_kl = a0 * np.log(a0 / b0) + (1 - a0) * np.log((1 - a0) / (1 - b0))
    np.testing.assert_allclose(k1["true_kl"], true_kl, rtol=1e-10, atol=1e-15)
    # Corollary 1 at eps = log(10/3), N c = 1/2: Xi = (7/3)/((10/3)/2 + 1) = 7/8, log(5/3 + 1) = log(8/3).
    np.testing.assert_allclose(k1["our_bound_kl"], 7 / 8 * math.log(8 / 3) * k1["tv"], rtol=1e-12)
    # Duchi et al. at eps = log 15: min(4, 15) * 14^2 * tv^2.
    np.testing.assert_allclose(k1["duchi_kl"], 4 * 14**2 * k1["tv"] ** 2, rtol=1e-12)
    # Asoodeh-Zhang: ((15 - 1)/(15 + 1))^2 log(1 + 2 tv^2 / c).
    np.testing.assert_allclose(k1["asoodeh_zhang_kl"], (14 / 16) ** 2 * np.log1p(2 * k1["tv"] ** 2 / 0.05), rtol=1e-12)
    assert np.all(k1["true_kl"] <= k1["our_bound_kl"])

    k2 = read_table(tmp_path / "k2_hellinger.csv")
    p = np.column_stack([k2[f"p_{x}"] for x in range(5)])
    q = np.column_stack([k2[f"q_{x}"] for x in range(5)])
    # K2: outcome y is produced by inputs y, y-1, y-2 (mod 5), each with probability 1/3.
    a = np.column_stack([(p[:, y] + p[:, (y - 1) % 5] + p[:, (y - 2) % 5]) / 3 for y in range(5)])
    b = np.column_stack([(q[:, y] + q[:, (y - 1) % 5] + q[:, (y - 2) % 5]) / 3 for y in range(5)])
    np.testing.assert_allclose(k2["true_hellinger"], np.sum((np.sqrt(a) - np.sqrt(b)) ** 2, axis=1), rtol=1e-10,
                               atol=1e-15)
    # Corollary 2: same Xi = 7/8 and Gamma_max = 8/3 (N c = 1/2 again).
    np.testing.assert_allclose(k2["our_bound_hellinger"],
                               7 / 8 * (2 - 4 / (math.sqrt(8 / 3) + 1)) * k2["tv"], rtol=1e-12)
    assert np.all(k2["true_hellinger"] <= k2["our_bound_hellinger"])


def test_pml_fig1_is_reproducible_by_seed(tmp_path):
    run("pml-fig1", out_dir=tmp_path / "a", quick=True, seed=7)
    run("pml-fig1", out_dir=tmp_path / "b", quick=True, seed=7)
    run("pml-fig1", out_dir=tmp_path / "c", quick=True, seed=8)
    first = (tmp_path / "a" / "k1_kl.csv").read_text()
    assert first == (tmp_path / "b" / "k1_kl.csv").read_text()
    assert first != (tmp_path / "c" / "k1_kl.csv").read_text()


def test_pml_minimax_example3_closed_form(tmp_path):
    run("pml-minimax", out_dir=tmp_path, quick=True)
    table = read_table(tmp_path / "minimax.csv")
    eps, c = table["epsilon"], table["c"]
    delta, n, target = 0.05, 1000, 0.05 / 8
    xi = np.minimum(np.expm1(eps) / (np.exp(eps) * (1 - 4 * c) + 1), 1.0)
    kl = xi * np.log((1 - 4 * c) * np.exp(eps) + 1) * 2 * delta  # TV of the two hypotheses is 2 delta
    np.testing.assert_allclose(table["xi"], xi, rtol=1e-12)
    np.testing.assert_allclose(table["kl_per_sample"], kl, rtol=1e-12)
    np.testing.assert_allclose(table["risk_lower_bound"], delta / 4 * np.exp(-n * kl), rtol=1e-9)
    np.testing.assert_array_equal(table["samples_needed"], np.maximum(np.ceil(np.log(delta / (4 * target)) / kl), 1))
    # The paper: Xi(eps, c) = 1 once eps >= log(1/(2c)).
    assert np.all((table["xi"] == 1.0) == (eps >= np.log(1 / (2 * c))))
    p0 = np.array([0.2, 0.3, 0.25, 0.25])
    p1 = np.array([0.3, 0.2, 0.25, 0.25])
    np.testing.assert_allclose(table["kl_nonprivate"], np.sum(p0 * np.log(p0 / p1)))
