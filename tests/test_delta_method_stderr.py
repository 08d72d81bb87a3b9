"""The delta-method standard error of a critic's DV or NWJ value (estimators.objectives.delta_method_stderr)
against the spread of that value over independent replicate samples, simulated here: the standard deviation of
E_P[T] − log E_Q[e^T] (DV) or E_P[T] − E_Q[e^{T−1}] (NWJ), computed with NumPy on each replicate."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from estimators.objectives import delta_method_stderr

REPLICATES, N = 2000, 2000


@pytest.mark.parametrize("objective", ["dv", "nwj"])
def test_delta_method_stderr_matches_the_spread_over_replicates(objective):
    rng = np.random.default_rng(7)
    # T on joint samples ~ N(0, 1); on product samples ~ N(0.5, 1), so e^T is skewed and its mean far from 1:
    # leaving out DV's division by E_Q[e^T]² (e² here) would predict 2.2× the spread.
    t_joint = rng.standard_normal((REPLICATES, N))
    t_prod = 0.5 + rng.standard_normal((REPLICATES, N))
    if objective == "dv":
        values = t_joint.mean(axis=1) - np.log(np.exp(t_prod).mean(axis=1))
    else:
        values = t_joint.mean(axis=1) - np.exp(t_prod - 1.0).mean(axis=1)
    predicted = delta_method_stderr(torch.from_numpy(t_joint), torch.from_numpy(t_prod), objective)
    assert predicted.shape == (REPLICATES,)
    # The spread of 2,000 replicates is known to about 1.6% (1/√(2R)); the delta method is exact to O(1/n).
    assert np.median(predicted) == pytest.approx(values.std(ddof=1), rel=0.06)
