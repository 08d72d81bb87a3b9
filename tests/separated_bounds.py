"""What an event test can certify at its best outcome, n hits in n runs of one input and none in n of the other,
computed here independently of audit.certificates (SciPy's Beta quantiles and Fisher's noncentral hypergeometric
law), for the tests of the planning helpers (audit.certificates.claim_tests)."""

from __future__ import annotations

import math

from scipy import optimize, stats

#: The splits of α between p̲ and p̄ the event test may choose, written out (audit.certificates.event_bounds.LOWER_SHARES).
SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def cp_pair(n: int, alpha: float, share: float = 0.5) -> tuple:
    """(p̲, p̄): the αs quantile of Beta(n, 1) and the 1 − α(1 − s) quantile of Beta(1, n) (Clopper and Pearson 1934)."""
    return float(stats.beta.ppf(alpha * share, n, 1)), float(stats.beta.ppf(1 - alpha * (1 - share), 1, n))


def cp_epsilon(n: int, alpha: float, share: float = 0.5) -> float:
    """The ε the pair certifies, from the event or its complement with the roles swapped (may be negative)."""
    lower, upper = cp_pair(n, alpha, share)
    return max(math.log(lower / upper), math.log((1 - upper) / (1 - lower)))


def odds_tail(n: int, psi: float) -> float:
    """P_ψ(X₁ = n | X₁ + X₂ = n): Fisher's noncentral hypergeometric law of 2n runs, n of the first input."""
    return float(stats.nchypergeom_fisher(2 * n, n, n, psi).pmf(n))


def odds_epsilon(n: int, alpha: float) -> float:
    """log(ψ̲)/2, ψ̲ the exact conditional lower bound where the tail equals α (Cornfield 1956), floored at 0."""
    log_psi = optimize.brentq(lambda x: odds_tail(n, math.exp(x)) - alpha, -30.0, 60.0, xtol=1e-13)
    return max(0.0, log_psi / 2)


def rate_epsilon(n: int, alpha: float) -> float:
    """log ρ̲ with θ̲ the α quantile of Beta(n, 1) and ρ̲ = θ̲/(1 − θ̲) (Przyborowski and Wilenski 1940), floored at 0."""
    theta = float(stats.beta.ppf(alpha, n, 1))
    return max(0.0, math.log(theta / (1 - theta)))


def refutes_pure(n: int, alpha: float, epsilon: float, ratios: bool = True) -> bool:
    """Whether the best outcome refutes ε-DP: some split's pair certifies more than ε, or (``ratios``) the odds
    ratio (ψ̲ > e^{2ε} exactly where the tail at e^{2ε} is below α, beyond rounding: n = 3 at α = 0.05 has a tail
    of 1/C(6, 3) = α at ψ = 1, a tie that certifies nothing) or the rate ratio does."""
    if max(cp_epsilon(n, alpha, s) for s in SHARES) > epsilon:
        return True
    return ratios and (odds_tail(n, math.exp(2 * epsilon)) < alpha * (1 - 1e-9) or rate_epsilon(n, alpha) > epsilon)


def smallest(works, start: int = 1, stop: int = 10**5) -> int:
    """The smallest n ≥ ``start`` with ``works(n)``, by trying each in turn."""
    for n in range(start, stop):
        if works(n):
            return n
    raise AssertionError(f"none below {stop}")
