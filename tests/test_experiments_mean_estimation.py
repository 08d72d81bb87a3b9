"""Reproduction of Algorithm 1's accuracy against n, with the eps-DP Laplace baseline, checked independently."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.framework import read_table
from experiments.registry import run

#: Every test here runs the experiment (quick budget) and writes its files.
pytestmark = pytest.mark.integration


def test_mean_estimation_quick_run(tmp_path):
    run("mean-estimation", out_dir=tmp_path, quick=True, seed=1)
    table = read_table(tmp_path / "mean_estimation.csv")
    methods = {"mi-dp-geometric", "mi-dp-coordinate", "dp-laplace-same-eps", "dp-laplace-mi-matched", "non-private"}
    assert set(table["method"]) == methods
    assert np.all(np.isfinite(table["mean_error"])) and np.all(table["mean_error"] > 0)
    d, eps, trials = 5, 1.0, table["trials"][0]
    blocks = math.ceil(200 * math.log(1 / 0.1))  # Algorithm 1: m = ceil(200 log(1/beta))
    for row in np.flatnonzero(np.char.startswith(table["method"].astype(str), "mi-dp")):
        n = table["n"][row]
        k = n // blocks
        assert table["blocks"][row] == blocks and table["block_size"][row] == k
        np.testing.assert_allclose(table["noise_variance"][row], d / (2 * k**2 * eps))  # sigma^2 = d/(2 k^2 eps)
    for method, eps_dp, eps_mi in (("dp-laplace-same-eps", 1.0, 0.5), ("dp-laplace-mi-matched", math.sqrt(2), 1.0)):
        rows = table["method"] == method
        assert np.allclose(table["epsilon_dp"][rows], eps_dp) and np.allclose(table["epsilon_mi_dp"][rows], eps_mi)
        n = table["n"][rows]
        b = 2 * 4.0 * d / (n * eps_dp)  # Laplace scale Delta_1 / eps with Delta_1 = 2 C d / n, C = 4
        np.testing.assert_allclose(table["noise_variance"][rows], 2 * b**2)
        # E||err||^2 = d/n (sampling; clipping at 4 with |mu| <= 1 changes it by < 1%) + d 2 b^2 (noise).
        expected = d / n + d * 2 * b**2
        relative_sd = math.sqrt(2 / (trials * d))  # chi-square-like spread of the mean of trials squared norms
        np.testing.assert_allclose(table["rmse"][rows] ** 2, expected, rtol=5 * relative_sd)
    rows = table["method"] == "non-private"
    np.testing.assert_allclose(table["rmse"][rows] ** 2, d / table["n"][rows], rtol=5 * math.sqrt(2 / (trials * d)))
    for method in methods:
        errors = table["mean_error"][table["method"] == method]
        assert np.all(np.diff(errors) < 0), method  # more samples, smaller error
    # Algorithm 1 is no better than the non-private mean (up to Monte Carlo noise it is worse).
    private = table["mean_error"][table["method"] == "mi-dp-geometric"]
    assert np.all(private > table["mean_error"][rows])
