"""Example: privacy checks of OpenDP and diffprivlib mechanisms with the ``assert_claim`` fixture.

The fixture comes from miaudit's pytest plugin (:mod:`audit.pytest_plugin`, enabled in
tests/conftest.py; elsewhere ``-p audit.pytest_plugin`` or the installed entry point). Each test
spends its share α/K of the session's ``--miaudit-alpha``, so a correct mechanism fails any of
these checks with probability at most that α in all. A mechanism whose claim is wrong fails
loudly, with the event, its counts, the certificate and the command that reproduces it.
"""

from __future__ import annotations

import numpy as np
import pytest

from audit.gating.assertions import ClaimRefuted
from conftest import needs

#: Neighbouring databases of four records in [0, 1]: record 0 changes from 0 to 1.
ZEROS = np.zeros((4, 1))
ONE_CHANGED = np.vstack([[1.0], np.zeros((3, 1))])
PAIRS = [(ZEROS, ONE_CHANGED)]

# Library mechanisms run one database at a time: seconds per check.
pytestmark = pytest.mark.integration


@needs("diffprivlib")
def test_diffprivlib_geometric_meets_its_stated_epsilon(assert_claim):
    from diffprivlib.mechanisms import Geometric

    # Geometric(ε = 0.5, sensitivity 1) on the count of ones among records in {0, 1}: one replaced record
    # moves the count by at most 1, so the library's own claim (claim=None: 0.5-DP) holds. Its outputs are
    # integers. (diffprivlib's float Laplace is not used here: the float-bit statistics refute it at its
    # claim, the floating-point attack of Mironov 2012.)
    count = lambda db: [int(round(db.sum()))]  # noqa: E731 - the query, one line
    assert_claim(Geometric(epsilon=0.5, sensitivity=1), None, pairs=PAIRS, max_runs=10000, query=count)


@needs("diffprivlib")
def test_diffprivlib_laplace_with_too_small_a_sensitivity_is_refuted(assert_claim):
    from diffprivlib.mechanisms import Laplace

    # Calibrated for sensitivity 0.25 while the sum moves by 1: the true ε is 4 × 0.5 = 2.
    with pytest.raises(ClaimRefuted, match=r"(?s)does not meet 0.5-DP.*counts:.*certificate:.*reproduce: pytest"):
        assert_claim(Laplace(epsilon=0.5, sensitivity=0.25), "dp:0.5", pairs=PAIRS, max_runs=10000)


@needs("opendp")
def test_opendp_laplace_sum_meets_half_dp(assert_claim):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=4), dp.symmetric_distance()
    # Scale 2 on a sum of values in [0, 1]: one replaced record moves it by at most 1, so 0.5-DP, and exactly 0.5 on
    # PAIRS, the claim's boundary. OpenDP's noise takes no seed, so this check fails with probability at most its
    # level α/K (session α 0.01 over the K checks collected): at 0.01/14, 60 checks refuted none, certified ε ≤ 0.39.
    measurement = space >> dp.t.then_sum() >> dp.m.then_laplace(2.0)
    assert_claim(measurement, "dp:0.5", pairs=PAIRS, max_runs=10000)
