"""Reproductions of Fig. 3a and Fig. 3b of the Pufferfish/MI paper, checked against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.framework import read_table
from experiments.registry import run

#: Every test here runs the experiment (quick budget) and writes its files.
pytestmark = pytest.mark.integration

N_ROWS = 100


def test_fig3a_matches_corollaries_with_the_bernoulli_variance_supremum(tmp_path):
    result = run("pufferfish-fig3a", out_dir=tmp_path, quick=True)
    table = read_table(result.csv_files[0])
    assert set(np.unique(table["d"])) == {1, 2, 5, 10, 30}
    assert np.all(table["n"] == N_ROWS)
    eps, d = table["epsilon"], table["d"]
    # sup over Bernoulli(p) entries of Var(f_l | other rows) = p(1-p)/n^2, by grid search.
    p = np.linspace(0.0, 1.0, 100_001)
    sup_var = np.max(p * (1 - p)) / N_ROWS**2
    sup_std = np.max(np.sqrt(p * (1 - p))) / N_ROWS
    # Corollary 3: sigma^2 = d * sup_var / (d (e^{2 eps/d} - 1)); total = d sigma^2.
    gaussian_total = d * (d * sup_var) / (d * np.expm1(2 * eps / d))
    # Corollary 2: b = d * sup_std / (d (e^{eps/d} - 1)); Laplace variance 2 b^2 per coordinate.
    b = d * sup_std / (d * np.expm1(eps / d))
    laplace_total = d * 2 * b**2
    np.testing.assert_allclose(table["gaussian_total_variance"], gaussian_total, rtol=1e-9)
    np.testing.assert_allclose(table["laplace_total_variance"], laplace_total, rtol=1e-9)
    # Sensitivity forms: Delta_2 = sqrt(d)/n, Delta_1 = d/n.
    np.testing.assert_allclose(table["gaussian_total_variance_sensitivity_form"],
                               d * (d / N_ROWS**2) / (2 * d * np.expm1(2 * eps / d)), rtol=1e-9)
    np.testing.assert_allclose(table["laplace_total_variance_sensitivity_form"],
                               d * 2 * (d / N_ROWS / np.sqrt(2) / (d * np.expm1(eps / d))) ** 2, rtol=1e-9)
    # Remark 10: the Gaussian adds less variance, by a factor -> 4d/eps for small eps.
    assert np.all(table["gaussian_total_variance"] < table["laplace_total_variance"])
    smallest = eps == eps.min()
    ratio = table["laplace_total_variance"][smallest] / table["gaussian_total_variance"][smallest]
    np.testing.assert_allclose(ratio, 4 * d[smallest] / eps.min(), rtol=0.02)


def test_fig3b_region_is_where_the_mi_dp_variance_is_smaller(tmp_path):
    result = run("pufferfish-fig3b", out_dir=tmp_path, quick=True)
    region = read_table(tmp_path / "region.csv")
    eps, eps_prime, quieter = region["epsilon"], region["epsilon_prime"], region["mi_dp_quieter"]
    assert eps.size == 60 * 60 and quieter.dtype == bool
    assert np.all((eps > 0) & (eps < 0.5) & (eps_prime > 0) & (eps_prime <= 1))
    # Compare the two noise variances directly (Delta_2 = 1 cancels): Corollary 3 vs the classical Gaussian.
    d = 30
    mi_dp_variance = 1 / (2 * d * np.expm1(2 * eps / d))
    classical_variance = 2 * np.log(1.25 / np.sqrt(2 * eps)) / eps_prime**2
    assert np.array_equal(quieter, mi_dp_variance < classical_variance)
    assert 0 < quieter.mean() < 1
    boundary = read_table(tmp_path / "threshold.csv")
    # The region shrinks (boundary falls) as d grows, at every epsilon (Remark 11).
    dims = (1, 5, 30, 300)
    for small, large in zip(dims, dims[1:]):
        assert np.all(boundary[f"epsilon_prime_threshold_d{large}"] < boundary[f"epsilon_prime_threshold_d{small}"])
    # Boundary = the eps' at which both variances are equal, found by bisection on eps' for a few eps.
    for index in (0, 17, 42):
        e = boundary["epsilon"][index]
        lo, hi = 1e-9, 10.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if 1 / (2 * d * np.expm1(2 * e / d)) < 2 * np.log(1.25 / np.sqrt(2 * e)) / mid**2:
                lo = mid
            else:
                hi = mid
        assert abs(boundary["epsilon_prime_threshold_d30"][index] - lo) < 1e-9
    assert result.png_file.endswith("pufferfish-fig3b.png")
