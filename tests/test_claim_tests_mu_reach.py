"""What the audit's μ certificate can reach on perfectly separated inputs (audit.certificates.gaussian_dp.reachable_mu),
and why the refutability model (audit.certificates.claim_tests.refutable_with) models the event pair only.

Expected values are computed here from scipy.stats alone: the Clopper–Pearson pair at α/2 each on 0 errors of n
(Beta quantiles; Clopper and Pearson 1934), the joint binomial test at no error of either kind (the largest
P(X = 0, Y = 0) = Φ(u)ⁿ Φ(μ − u)ⁿ over the points of G_μ, found numerically, set to the search's 0.9 α; Dong, Roth
and Su 2022, Eq. (2.2)), the joint test's eligibility (n times the 0.975 quantile of Beta(1, m) at least 50), and the
event pair's refutation of μ-GDP at its best split of α (n hits against none, its point below G_μ).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from audit.certificates.claim_tests import refutable_with
from audit.certificates.gaussian_dp import gdp_certificate, reachable_mu
from mechanisms.claims.parsing import parse_claim

SHARES = (0.5, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9)  # the event test's splits of α


def _pair_mu(n: int, alpha: float) -> float:
    upper = stats.beta.ppf(1 - alpha / 2, 1, n)
    return float(stats.norm.ppf(1 - upper) - stats.norm.ppf(upper))


def _joint_mu(n: int, alpha: float) -> float:
    def excess(mu):
        worst = optimize.minimize_scalar(lambda u: -n * (stats.norm.logcdf(u) + stats.norm.logcdf(mu - u)),
                                         bounds=(-20.0, mu + 20.0), method="bounded", options={"xatol": 1e-10})
        return -worst.fun - math.log(0.9 * alpha)
    return optimize.brentq(excess, 0.0, 20.0, xtol=1e-12)


def _eligible(n: int, m: int) -> bool:
    expected = n * stats.beta.ppf(0.975, 1, m)  # the selection's pessimistic rate at 0 of m, times n
    return 50 <= expected <= n - 50


def _event_pair_mu(n: int, alpha: float) -> float:
    """The largest μ the event pair's best outcome refutes: max over s of Φ⁻¹(1 − p̄) − Φ⁻¹(1 − p̲) at n of n hits and 0 of n."""
    best = 0.0
    for s in SHARES:
        lower, upper = stats.beta.ppf(alpha * s, n, 1), stats.beta.ppf(1 - alpha * (1 - s), 1, n)
        best = max(best, float(stats.norm.ppf(1 - upper) - stats.norm.ppf(1 - lower)))
    return best


@pytest.mark.parametrize("n, m, alpha", [(200, 100, 0.025), (1000, 500, 1e-4), (3000, 300, 0.025),
                                         (1000, 50, 0.025), (3000, 100, 0.025), (2000, 100, 1e-3)])
def test_the_reachable_mu_is_what_the_certificate_returns_on_separated_scores(n, m, alpha):
    certified = gdp_certificate(np.full(n, 10.0), np.full(n, -10.0), alpha=alpha,
                                selection=(np.full(m, 10.0), np.full(m, -10.0)))
    reached = reachable_mu(n, alpha, m)
    assert certified.mu_lower_bound == pytest.approx(reached, abs=1e-12)
    if _eligible(n, m):  # these cases: the joint test is also preferred
        assert certified.fpr_upper is None
        assert reached == pytest.approx(_joint_mu(n, alpha), abs=2e-4)
    else:
        assert certified.fpr_upper is not None
        assert reached == pytest.approx(_pair_mu(n, alpha), abs=1e-9)


@pytest.mark.parametrize("alpha", [0.05, 0.025, 1e-3, 1e-4])
@pytest.mark.parametrize("n", [10, 30, 100, 300, 1000, 3000, 10**4, 10**5])
def test_at_the_audits_selection_sizes_the_event_pair_refutes_all_the_certificate_reaches(n, alpha):
    # The audit's selection per input: about n/2 (one candidate's selection runs, at least 100), 0.3 n (held-out
    # draws at the default split and event_runs = samples), n/12.2 at the least after six halving rounds.
    pair = _event_pair_mu(n, alpha)
    for m in (max(100, n // 2), max(1, math.ceil(0.3 * n)), max(1, math.ceil(n / 12.2))):
        reached = reachable_mu(n, alpha, m)
        assert not _eligible(n, m)
        assert reached <= pair + 1e-9
        # and the planning helper agrees: a claim just below what the certificate reaches is refutable by the pair.
        if reached > 0.05:
            assert refutable_with(parse_claim(f"gdp:{reached - 0.01:.6f}"), alpha, n)


@pytest.mark.parametrize("mu, alpha, pair_runs, joint_runs", [(6, 0.025, 3244, 1405), (5, 1e-4, 1590, 1381),
                                                             (6, 1e-4, 7332, 3449)])
def test_with_a_hundred_selection_draws_the_joint_test_reaches_further_than_the_pair(mu, alpha, pair_runs, joint_runs):
    # The exception the plan does not model: m ≤ about n/13.5 (held-out draws of a small MI sample beside many more
    # event runs), numbers of the changelog and of docs/explanation/verdicts.md.
    claim = parse_claim(f"gdp:{mu}")
    assert _event_pair_mu(pair_runs, alpha) > mu >= _event_pair_mu(pair_runs - 1, alpha)
    assert refutable_with(claim, alpha, pair_runs) and not refutable_with(claim, alpha, pair_runs - 1)
    assert _eligible(joint_runs, 100) and _joint_mu(joint_runs, alpha) > mu
    assert reachable_mu(joint_runs, alpha, 100) > mu >= reachable_mu(joint_runs - 1, alpha, 100)
