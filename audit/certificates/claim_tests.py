"""The tests of a claim: which can refute it, the share of α each spends, and what they found.

A claim (:mod:`mechanisms.claims.claim`) can be refuted by

- **the MI test**: the certified MI lower bound above the MI budget the claim implies;
- **the event test**: the certified pair (p̲ on one input, p̄ on its neighbour) of an event
  outside the claim's privacy profile (p̲ > e^ε′ p̄ + δ(ε′) for some ε′ ≥ 0, or the same for
  the complement with the roles swapped); for a pure ε-DP claim whose event was certified by
  its odds ratio (:mod:`audit.certificates.odds_ratio`) or by the ratio of its probabilities
  (:mod:`audit.certificates.rate_ratio`), the certified ε ≥ log(ψ̲)/2 or ε ≥ log ρ̲ above ε.

``claim_verdict`` is ``refuted`` when any planned test refutes. Each planned test spends a
share of α fixed before any sampling (:func:`plan_claim_tests`), the shares summing to α, so
by the union bound the type-I error of ``refuted`` is at most α (DESIGN.md, statistical core).
A test that cannot refute the claim whatever the mechanism does (no MI budget; a budget at or
above the MI a record can carry, log of its number of values; an event test whose runs cannot
refute it at its share of α even for perfectly separated inputs, under any certificate it may use:
:func:`refutable_with`) spends nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from estimators.validation import check_int, check_probability
from mechanisms.claims.claim import RECORD_AUDIT_NOTIONS, Claim

from audit.mi_statement import bound_words, estimate_words, level_number
from audit.result import CrossCheck

_EVENT_THEOREMS = ["privacy profile: P(M(D) ∈ E) ≤ e^ε′ P(M(D′) ∈ E) + δ(ε′) for every ε′ ≥ 0",
                   "Clopper–Pearson (1934)"]
_GDP_THEOREMS = ["μ-GDP: every test's type-II error is at least G_μ(type-I error) = Φ(Φ⁻¹(1 − x) − μ) "
                 "(Dong, Roth and Su 2022, Definition 2.6)",
                 "Clopper–Pearson (1934) at the points held, union bound"]
_ODDS_RATIO_THEOREMS = ["pure ε-DP: p₁(1 − p₂)/(p₂(1 − p₁)) ≤ e^{2ε} (Dwork and Roth 2014, Definition 2.4, "
                        "for an event and its complement)",
                        "exact conditional odds-ratio bound (Cornfield 1956)"]
_RATE_RATIO_THEOREMS = ["pure ε-DP: P(M(D) ∈ E) ≤ e^ε P(M(D′) ∈ E) (Dwork and Roth 2014, Definition 2.4)",
                        "exact conditional test of two Poisson means (Przyborowski and Wilenski 1940), "
                        "Clopper–Pearson (1934)"]


#: What an audit judges (:mod:`audit.statistics.arithmetic`): the program's float64 outputs, or its real-arithmetic behaviour.
ARITHMETICS = ("float", "ideal")

#: Under ``arithmetic = "float"``, the float-bit event test's part of the event test's share of α, fixed
#: before sampling (:func:`plan_claim_tests`). Small: a float-bit refutation is an event of probability 0 under
#: one input, whose certified ε grows with log(1/α) only, while the event test keeps 80% of its share.
FLOAT_TEST_SHARE = 0.2


def record_support(priors) -> int | None:
    """The most values one record takes under any of ``priors`` when that is finite and known.

    Counted from the prior's definition (product Bernoulli: 2^k; categorical: C^k; two-point: 2;
    fixed rest: its record prior's; empirical: the distinct rows of the data), never from
    samples; ``None`` when any prior's record support is not known to be finite.
    """
    from mechanisms.inputs.priors import Categorical, FixedRest, ProductBernoulli, TwoPoint
    from mechanisms.inputs.user_priors import EmpiricalResample

    def one(prior):
        if isinstance(prior, TwoPoint):
            return 2
        if isinstance(prior, ProductBernoulli):
            return 2 ** prior.k
        if isinstance(prior, Categorical):
            return int(np.shape(prior.probabilities)[-1]) ** prior.k
        if isinstance(prior, FixedRest):
            return one(prior.record_prior)
        if isinstance(prior, EmpiricalResample):
            return len(np.unique(np.asarray(prior.data).reshape(len(prior.data), -1), axis=0))
        return None

    sizes = [one(p) for p in priors]
    return None if any(s is None for s in sizes) else max(max(sizes), 2)


def _best_event_bounds(n: int, alpha: float, lower_share: float = 0.5) -> tuple[float, float]:
    """(p̲, p̄) of the best event n runs per input can show: all n hits on one input, none on the
    other, p̲ at level α·s and p̄ at α·(1 − s) for the split s = ``lower_share`` (Clopper–Pearson):
    p̲ = (αs)^{1/n}, p̄ = 1 − (α(1 − s))^{1/n}.

    Closed forms of :func:`audit.certificates.event_bounds.clopper_pearson` at k = n and k = 0: the αs quantile
    of Beta(n, 1), whose CDF is xⁿ, and the 1 − α(1 − s) quantile of Beta(1, n), whose CDF is
    1 − (1 − x)ⁿ (Clopper and Pearson 1934); written with exp and expm1 so that they stay exact for large n.
    """
    return math.exp(math.log(alpha * lower_share) / n), -math.expm1(math.log(alpha * (1.0 - lower_share)) / n)


def _best_splits(n: int, alpha: float) -> list:
    """:func:`_best_event_bounds` at every split of α the event test may choose
    (:data:`audit.certificates.event_bounds.LOWER_SHARES`, chosen on its selection runs at no α)."""
    from audit.certificates.event_bounds import LOWER_SHARES

    return [_best_event_bounds(n, alpha, share) for share in LOWER_SHARES]


def _separated_odds_excess(n: int, alpha: float):
    """(bracket, excess) of the odds-ratio certificate at n hits in n runs of one input and none in n of the
    other, whose lower bound ψ̲ is :func:`audit.certificates.odds_ratio.odds_ratio_lower_bound` ``(n, n, 0, n, alpha)``:
    ψ̲ lies in ``bracket`` (two values of log ψ) and ``excess(log ψ)``, decreasing, is positive exactly below log ψ̲.

    Given the total s = n, P_ψ(X₁ = n | s) = ψⁿ / Σ_k C(n, k)² ψ^k = 1 / Σ_j C(n, j)² ψ^{−j}, and ψ̲ solves
    Σ_j C(n, j)² ψ^{−j} = 1/α (Cornfield 1956); ``excess`` is log Σ − log(1/α). Σ ≥ 1 + n²/ψ gives
    ψ̲ ≥ n²α/(1 − α), and C(n, j)² ≤ (n^j/j!)² with (j!)² ≥ j! gives Σ ≤ exp(n²/ψ), so ψ̲ ≤ n²/log(1/α). On
    that bracket n²/ψ ≤ r = (1 − α)/α, so term j is at most r^j/(j!)², below e^{−2j} from j ≥ e²√r on
    (Stirling), and the sum is cut there: a few hundred terms at α = 10⁻³ whatever n (the certificate's own
    sum has n + 1), exact to rounding on the bracket.
    """
    from scipy import special

    ratio = (1.0 - alpha) / alpha
    j = np.arange(min(n, math.ceil(math.e ** 2 * math.sqrt(ratio)) + 30) + 1, dtype=np.float64)
    log_squares = 2.0 * (special.gammaln(n + 1.0) - special.gammaln(j + 1.0) - special.gammaln(n - j + 1.0))

    def excess(log_psi: float) -> float:
        terms = log_squares - j * log_psi
        top = terms.max()
        return float(top + math.log(np.exp(terms - top).sum()) + math.log(alpha))

    return (2.0 * math.log(n) + math.log(alpha / (1.0 - alpha)) - 1e-9,
            2.0 * math.log(n) - math.log(math.log(1.0 / alpha)) + 1e-9), excess


def _separated_rate_epsilon(n: int, alpha: float) -> float:
    """The rate ratio's ε ≥ log ρ̲ (:mod:`audit.certificates.rate_ratio`) at n hits against none: θ̲ is the α quantile
    of Beta(n, 1), α^{1/n} (Clopper and Pearson 1934), and ρ̲ = θ̲/(1 − θ̲) (Przyborowski and Wilenski 1940)."""
    log_theta = math.log(alpha) / n
    return max(0.0, log_theta - math.log(-math.expm1(log_theta)))


def best_ratio_epsilon(n: int, alpha: float) -> float:
    """The largest ε ≥ 0 the event test's ratio certificates of a pure ε-DP claim can certify with n runs per
    input at level α: at n hits against none, the odds ratio's ε ≥ log(ψ̲)/2 (Cornfield 1956,
    :mod:`audit.certificates.odds_ratio`) or the rate ratio's ε ≥ log ρ̲ (Przyborowski and Wilenski 1940,
    :mod:`audit.certificates.rate_ratio`), whose Poisson numbers of runs are at most n, whichever is larger.

    Both bounds grow with the first count and fall with the second, so no outcome of n runs per input
    certifies more.
    """
    from scipy import optimize

    n = check_int(n, "n", 1)
    alpha = check_probability(alpha, "alpha")
    (low, high), excess = _separated_odds_excess(n, alpha)
    log_psi = optimize.brentq(excess, low, high, xtol=1e-12)
    return max(0.0, log_psi / 2.0, _separated_rate_epsilon(n, alpha))


def _ratio_refutes(n: int, alpha: float, epsilon: float) -> bool:
    """Whether :func:`best_ratio_epsilon` ``(n, alpha)`` exceeds ``epsilon``, from one evaluation of the odds
    ratio's sum (ψ̲ > e^{2ε} exactly where its excess at 2ε is positive) instead of solving for ψ̲. An excess
    within rounding of 0 is a tie, which certifies no more than ``epsilon`` (n = 3 at α = 0.05: ψ̲ = 1 exactly)."""
    if _separated_rate_epsilon(n, alpha) > epsilon:
        return True
    (low, high), excess = _separated_odds_excess(n, alpha)
    log_psi = 2.0 * epsilon
    return log_psi < low or (log_psi <= high and excess(log_psi) > 1e-12)


def uses_ratio_certificates(claim: Claim | None, delta: float = 0.0) -> bool:
    """Whether the event test of an audit at δ = ``delta`` (its ``delta``) with ``claim`` may certify by the odds or
    rate ratio: only at δ = 0 and for no claim or a pure ε-DP one, the only claims they bound.

    The one statement of that rule: the event search's choice (:func:`audit.search.event_search.choice_settings`),
    the engine's event searches, the family pilot (:func:`audit.search.family_pilot.pilot_scores`), the refutation-runs
    prediction (:func:`audit.gating.refutation_runs.runs_to_refute`) and the planning helpers here call it.
    """
    return delta == 0 and (claim is None or claim.pure_epsilon is not None)


def _smallest_runs(works, limit: int) -> int | None:
    """The smallest n ≤ ``limit`` with ``works(n)`` (monotone in n), by bisection; ``None`` if none."""
    if not works(limit):
        return None
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if works(mid) else (mid + 1, hi)
    return lo


def smallest_refutable_runs(claim: Claim, alpha: float, limit: int = 10**9, *, delta: float = 0.0) -> int | None:
    """The fewest certification runs per input with which the event test could refute ``claim`` at level ``alpha``.

    Returns the smallest n (what the best outcome certifies grows with n) for which :func:`refutable_with`
    holds (``delta``: the audit's δ, as there), ``None`` when none up to ``limit`` does.
    """
    return _smallest_runs(lambda n: refutable_with(claim, alpha, n, delta=delta), limit)


#: A grid excess above this is positive in :meth:`~mechanisms.claims.claim.Claim.check_event` too, whose
#: excess at the same grid point differs only by rounding (scalar against array evaluation).
_GRID_MARGIN = 1e-9


def refutable_with(claim: Claim, alpha: float, runs: int, *, delta: float = 0.0) -> bool:
    """Whether the event test at level ``alpha`` with ``runs`` runs per input could refute ``claim``: whether
    the best outcome those runs can show, n hits on one input and none on the other, refutes it under
    some certificate the event test may certify it by.

    Those are the Clopper–Pearson pair at every split of α it may choose (:func:`_best_splits`; Clopper and
    Pearson 1934), compared with the claim's profile, and, where :func:`uses_ratio_certificates` (``delta``:
    the audit's δ, its ``delta``), the odds- and rate-ratio certificates, whose ε above the claim's refutes it
    (:func:`best_ratio_epsilon`; Cornfield 1956, Przyborowski and Wilenski 1940). The event test chooses its
    certificate and split on its selection runs, so each is one it may certify by.

    The pair's answer is :meth:`~mechanisms.claims.claim.Claim.check_event`'s. Its search starts at the best
    point of the claim's ε′ grid and keeps a refined point only when its excess is larger, so a pair whose
    excess on the grid (:meth:`~mechanisms.claims.claim.Claim.event_margin`, a few µs) is clearly positive is
    refuted without the refinement (about 0.2 ms); any other pair gets the full check.
    """
    runs = check_int(runs, "runs", 1)
    alpha = check_probability(alpha, "alpha")
    if uses_ratio_certificates(claim, delta) and _ratio_refutes(runs, alpha, claim.pure_epsilon):
        return True
    pairs = _best_splits(runs, alpha)
    lower, upper = (np.array(side) for side in zip(*pairs))
    if float(np.max(claim.event_margin(lower, upper))) > _GRID_MARGIN:
        return True
    return any(claim.check_event(*pair).refuted for pair in pairs)


def smallest_certifying_runs(alpha: float, limit: int = 10**9, *, ratio_certificates: bool = False) -> int:
    """The fewest certification runs per input with which the event test can certify any ε > 0 at level α.

    The pair certifies ε = log(p̲ / p̄) (Dwork and Roth 2014, Definition 2.4, at δ = 0), positive iff
    p̲ > p̄; at the best outcome (:func:`_best_event_bounds`) (αs)^{1/n} + (α(1 − s))^{1/n} is largest at the
    even split s = ½ (x^{1/n} is concave), so p̲ > p̄ iff (α/2)^{1/n} > 1/2, i.e. n > log₂(2/α). With
    ``ratio_certificates`` (:func:`uses_ratio_certificates`) also the odds and rate ratios'
    (:func:`best_ratio_epsilon`): the odds ratio certifies ε > 0 from 4 runs at α = 0.05.
    """
    alpha = check_probability(alpha, "alpha")

    def works(n: int) -> bool:
        lower, upper = _best_event_bounds(n, alpha)
        return lower > upper or (ratio_certificates and _ratio_refutes(n, alpha, 0.0))

    return _smallest_runs(works, limit)


def refutes_with_one_miss(claim: Claim, alpha: float, runs: int) -> bool:
    """Whether ``runs`` certification runs per input at level ``alpha`` refute ``claim`` when the event holds in
    all but one run of one input and in none of the other's: the Clopper–Pearson (1934) lower bound of
    (runs − 1)/runs and upper bound of 0/runs, each at α/2 (the event test's even split), outside the claim's
    privacy profile (:meth:`mechanisms.claims.claim.Claim.check_event`)."""
    from audit.certificates.event_bounds import clopper_pearson  # SciPy, loaded only when a look is planned

    if runs < 2:
        return False
    lower = float(clopper_pearson(runs - 1, runs, alpha / 2)[0])
    upper = float(clopper_pearson(0, runs, alpha / 2)[1])
    return bool(claim.check_event(lower, upper).refuted)


def early_float_test(claim: Claim, event_alpha: float, runs: int, refutes=None) -> bool:
    """Whether a sequential audit's early look whose event test's share is ``event_alpha`` and whose certification
    runs are ``runs`` per input splits that share with the float-bit event test (:func:`plan_claim_tests` with
    ``early``): whether both, the event test at (1 − :data:`FLOAT_TEST_SHARE`) of it and the float-bit test at
    :data:`FLOAT_TEST_SHARE` of it, each on ``runs`` fresh runs per input, refute ``claim`` on a pair with one miss
    by ``refutes(claim, alpha, runs)``: the early look's rule (:func:`audit.search.early_choice.early_rule` of the
    audit: the Clopper–Pearson pair, or the odds ratio where the test's certificate choice on the look's held-out
    draws picks it but for a chance of at most 1%); None, the pair alone (:func:`refutes_with_one_miss`). The
    float-bit test chooses its certificate on its own statistics' held-out scores as the event test does
    (:func:`audit.search.event_search.event_search`), so where its bits separate the inputs the rule is the same
    (``tests/test_early_look_float_sizing.py``). A function of the look's planned sizes and level alone, fixed
    before any run; the early look is sized by the same rule (:func:`audit.gating.early_look.early_look`), so its
    event test keeps refuting a deterministic difference with one miss when it shares its level."""
    refutes = refutes_with_one_miss if refutes is None else refutes
    return all(refutes(claim, part * event_alpha, runs) for part in (1 - FLOAT_TEST_SHARE, FLOAT_TEST_SHARE))


@dataclass(frozen=True)
class ClaimPlan:
    """Which tests may refute the claim and the α each spends, fixed before sampling.

    Attributes
    ----------
    alpha_spent : dict
        ``test -> α share`` for the tests that may refute the claim (``"mi"``, ``"event"``, and for a
        GDP claim ``"gdp"``: the μ certificate of the event statistic's trade-off curve,
        :mod:`audit.certificates.gaussian_dp`); the shares sum to α (empty without a claim or when no test can
        refute it).
        Under ``arithmetic = "float"`` the event test's share is split before sampling: ``"float"``, the
        float-bit event test, gets :data:`FLOAT_TEST_SHARE` of it and ``"event"`` (the statistics that
        read no bits) the rest (:mod:`audit.statistics.arithmetic`).
    mi_alpha, event_alpha, float_alpha : float
        The level at which the MI lower bound, the event pair and the float-bit event pair are
        certified: the test's share when it tests the claim, else α (a separate statement).
    record_support : int or None
        Values a record takes under the declared priors (finite and known), or ``None``.
    notes : tuple of str
        Why a test does not test the claim (said up front, before any sampling).
    """

    alpha_spent: dict = field(default_factory=dict)
    mi_alpha: float = 0.05
    event_alpha: float = 0.05
    record_support: int | None = None
    notes: tuple = ()
    float_alpha: float | None = None

    def without_float_test(self) -> "ClaimPlan":
        """This plan with the float-bit test's share given to the event test: for an audit whose float-bit
        test has no candidate (outputs with no bit below the coarse grid, :mod:`audit.statistics.float_bits`).

        Decided on the MI sample and pilot runs, before any event-test run: conditionally on them the
        event test is certified at the sum of the two shares, and the union bound over the claim's tests
        still sums to α (the two shares' sum is fixed before sampling).
        """
        if self.float_alpha is None:
            return self
        spent = dict(self.alpha_spent)
        event_alpha = self.event_alpha
        if "float" in spent:
            event_alpha = spent["event"] + spent.pop("float")
            spent["event"] = event_alpha
        return ClaimPlan(spent, self.mi_alpha, event_alpha, self.record_support, self.notes, None)

    @property
    def gdp_alpha(self) -> float:
        """The level of the μ certificate: its share for a GDP claim, else the event pair's level
        (a separate statement on the same runs, which refutes nothing)."""
        return self.alpha_spent.get("gdp", self.event_alpha)


def plan_claim_tests(spec, classifier_critics: bool = False, early: bool = False,
                     early_refutes=None) -> ClaimPlan:
    """The claim's tests and their α shares for ``spec`` (an :class:`~audit.spec.AuditSpec`).

    With ``early`` (a sequential audit's early look, :mod:`audit.gating.sequential`: an MI sample of a few
    dozen draws, below the MI test's floor, that serves as the event tests' selection draws) the MI test is
    skipped, by this rule fixed before any run: the look's level ``spec.alpha`` (its α_k) is the event test's
    (halved with the μ certificate for a GDP claim, as at any look); under ``arithmetic = "float"`` that share
    is split with the float-bit event test as at any look (:data:`FLOAT_TEST_SHARE` of it to ``"float"``) where
    both tests, on the look's ``event_runs`` runs per input, refute the claim on a pair with one miss at their
    parts by ``early_refutes`` (:func:`early_float_test`, a function of the look's sizes and level; the callers
    pass :func:`audit.search.early_choice.early_rule` of ``spec``), else the float-bit test is not
    run there and the event test keeps the whole share. Either way the look's shares sum to α_k. The float-bit
    test's candidates are cross-fitted on the same MI sample (:mod:`audit.statistics.classifier_critic`), so at a
    look whose MI sample shows no bit below the coarse grid :meth:`ClaimPlan.without_float_test` gives the event
    test both parts, decided before any event-test run.

    With ``classifier_critics`` (the MI test's critics are the event test's classifiers,
    :func:`audit.audit_plan.resolve_mi_critic`) and a claim the event test can test, the MI test is
    reported as a separate statement and the event test spends all of α. For a record of two
    values an ε-DP mechanism's MI is at most randomized response's, log 2 − h(e^ε/(1 + e^ε))
    (Kairouz, Oh and Viswanath 2016, binary extremal mechanisms), far below the budget
    min(ε, ε²/2) the MI test compares with: it refutes only mechanisms whose leak the event test,
    thresholding the same classifiers' log-odds, shows more surely, and halving the event test's
    α would cost every audit tightness for that.

    The event test is planned only where it can refute the claim at its own share (:func:`refutable_with`):
    α over the planned tests, with a GDP claim's μ certificate among them. Where halving its share with the
    μ certificate would leave it unable to refute but the whole share would not, it keeps the whole share and
    μ̲ is a separate statement; the float-bit test takes its part only where it can refute at that part (the
    event test then can at the rest). Every rule reads ``spec`` alone, so the shares are fixed before sampling.
    """
    alpha, claim = spec.alpha, spec.claim
    support = record_support(spec.priors)
    if claim is None:
        return ClaimPlan({}, alpha, alpha, support, (), alpha if spec.arithmetic == "float" else None)
    tests, notes = [], []
    budget = claim.implied_mi_budget(spec.notion, support)
    # Whether the event test alone, at level α, can refute the claim with its runs (checked below for its share).
    event_can_test = (claim.has_profile and spec.notion in RECORD_AUDIT_NOTIONS and spec.event_runs > 0
                      and refutable_with(claim, alpha, spec.event_runs, delta=spec.delta))
    if early:
        notes.append(f"The MI test does not test the claim {claim.label} at this early look of a sequential audit: "
                     "its sample is below the MI test's floor and serves the event tests as selection draws; the "
                     "look's α is theirs.")
    elif budget.value is None:
        notes.append(f"The MI test does not test the claim {claim.label}: {budget.reason}.")
    elif spec.notion in RECORD_AUDIT_NOTIONS and support is not None and budget.value >= math.log(support):
        # A record's MI is at most its entropy, log(its support); a Pufferfish secret g is any function of the
        # database (a column's sum takes n + 1 values), so its MI has no such cap from one record's support.
        notes.append(f"The MI test cannot refute the claim {claim.label}: a record takes at most {support} values, so "
                     f"its MI is at most log {support} = {math.log(support):.4g} nats, not above the claim's budget "
                     f"{level_number(budget.value)} nats; it spends no α.")
    elif classifier_critics and event_can_test:
        notes.append(f"The MI test does not test the claim {claim.label}: its critics are the event test's classifiers, "
                     "and the event test, which thresholds their log-odds, decides the claim with all of α (the MI "
                     "bound is a separate statement at level α).")
    else:
        tests.append("mi")
    if not claim.has_profile:
        notes.append(f"The event test does not test the claim {claim.label}: {claim.no_profile_reason}.")
    elif spec.notion not in RECORD_AUDIT_NOTIONS:
        notes.append(f"The event test does not test the claim {claim.label}: it compares neighbouring databases, "
                     "and this audit's notion is about Pufferfish secrets.")
    elif spec.event_runs == 0:
        notes.append(f"The event test is off (event_runs = 0), so it does not test the claim {claim.label}.")
    else:
        # Each test's share is checked as it will be: α over every planned test, the μ certificate of a GDP claim
        # (which tests its trade-off curve directly on the event's runs) included.
        family = ["event", "gdp"] if claim.notion == "gdp" else ["event"]
        share = alpha / (len(tests) + len(family))
        if len(family) == 2 and not refutable_with(claim, share, spec.event_runs, delta=spec.delta):
            # Halved, the event test could not refute: it keeps the whole share where that lets it refute.
            half, family, share = share, ["event"], alpha / (len(tests) + 1)
            if refutable_with(claim, share, spec.event_runs, delta=spec.delta):
                notes.append(f"The μ certificate does not test the claim {claim.label}: with half of the event "
                             f"test's share (α = {half:.3g}) the event test could not refute it with "
                             f"{spec.event_runs} runs per input, so the event test keeps all of it (α = {share:.3g}) "
                             "and μ̲ is a separate statement.")
        if not refutable_with(claim, share, spec.event_runs, delta=spec.delta):
            best = smallest_refutable_runs(claim, share, delta=spec.delta)
            more = "" if best is None else f"; it needs at least {best} runs per input"
            notes.append(f"With {spec.event_runs} runs per input the event test at its share α = {share:.3g} cannot "
                         f"refute the claim {claim.label}, even for perfectly separated inputs{more} (raise --samples "
                         f"or --event-runs); it spends no α.")
        else:
            tests += family
    shares = {test: alpha / len(tests) for test in tests}
    if not tests:
        notes.append(f"No test of this audit can refute the claim {claim.label}; it is reported as not refuted.")
    float_alpha = None
    if spec.arithmetic == "float" and early and "event" in shares and early_float_test(claim, shares["event"],
                                                                                       spec.event_runs, early_refutes):
        float_alpha = FLOAT_TEST_SHARE * shares["event"]
        shares["float"], shares["event"] = float_alpha, shares["event"] - float_alpha
    elif spec.arithmetic == "float" and early and "event" in shares:
        notes.append(f"With {spec.event_runs} runs per input at this early look the event test and the float-bit "
                     f"event test, sharing its level, could not both refute the claim {claim.label} on a pair with "
                     "one miss; the float-bit test is not run here and the event test spends the look's level.")
    elif spec.arithmetic == "float" and not early:
        float_alpha = FLOAT_TEST_SHARE * shares.get("event", alpha)
        # Where the float-bit test can refute at its share, the event test can at the larger rest, on as many runs.
        if "event" in shares and refutable_with(claim, float_alpha, spec.event_runs, delta=spec.delta):
            shares["float"], shares["event"] = float_alpha, shares["event"] - float_alpha
        elif "event" in shares:
            notes.append(f"With {spec.event_runs} runs per input the float-bit event test at α = {float_alpha:.3g} "
                         f"cannot refute the claim {claim.label}; it spends no α.")
    return ClaimPlan(shares, shares.get("mi", alpha), shares.get("event", alpha), support, tuple(notes), float_alpha)


def cross_checks(claim: Claim | None, notion: str, lower_bound, estimate: float, event=None,
                 plan: ClaimPlan | None = None, float_event=None) -> list:
    """The tests of ``claim`` against the audit's evidence (empty without a claim).

    Parameters
    ----------
    claim : Claim or None
    notion : {"mi-dp", "smi-dp", "mi-pp"}
        The audited MI notion.
    lower_bound : float or None
        The certified MI lower bound (nats), at level ``plan.mi_alpha``.
    estimate : float
        The MI point estimate (nats).
    event : audit.result.EventTest, optional
        The event test's certified pair (at level ``plan.event_alpha``).
    plan : ClaimPlan, optional
        The α shares; a test not in ``plan.alpha_spent`` is reported but cannot refute.
    float_event : audit.result.EventTest, optional
        The float-bit event test's certified pair (at level ``plan.float_alpha``), checked as the event
        test is, as the test ``"float"``.
    """
    if claim is None:
        return []
    plan = plan or ClaimPlan()
    checks = []
    budget = claim.implied_mi_budget(notion, plan.record_support)
    mi_alpha = plan.alpha_spent.get("mi")
    if budget.value is not None:
        bound = budget.value
        contradiction = mi_alpha is not None and lower_bound is not None and lower_bound > bound
        # A negative bound or estimate in the words the MI line gives it (sampling noise); the JSON keeps the value.
        detail = (f"the claim {claim.label} implies at most {level_number(bound)} nats; certified lower bound "
                  f"{bound_words(lower_bound)}, estimate {estimate_words(estimate)}"
                  + ("" if mi_alpha is not None else " (a separate statement, not a test of the claim here: the "
                                                     "audit's notes say why)"))
        checks.append(CrossCheck(claim.label, bound, contradiction, estimate <= bound, list(budget.theorems), detail,
                                 test="mi", statistic=lower_bound, threshold=bound, alpha_spent=mi_alpha))
    else:
        checks.append(CrossCheck(claim.label, None, False, None, [], budget.reason, test="mi"))
    for test, found in (("event", event), ("float", float_event)):
        if found is not None:
            checks += _event_checks(claim, found, plan.alpha_spent.get(test), test)
    certificate = getattr(event, "gaussian_dp", None)
    if claim.notion == "gdp" and certificate is not None:
        checks.append(_gdp_check(claim, certificate, plan.alpha_spent.get("gdp")))
    return checks


def _event_checks(claim: Claim, event, event_alpha: float | None, test: str) -> list:
    """The event test ``test`` (``"event"`` or the float-bit ``"float"``) of ``claim``: [] where the claim has no profile."""
    # A ratio certificate bounds pure ε-DP only; for any other claim the same runs' Clopper–Pearson pair (computed for
    # every certificate, at α/2 each) is compared with the claim's profile instead.
    if claim.pure_epsilon is not None and event.certificate in ("odds-ratio", "rate-ratio"):
        return [_ratio_check(claim, event, event_alpha, test)]
    if not claim.has_profile:
        return []
    check = claim.check_event(event.p_first_lower, event.p_second_upper)
    form = ("p̲ − e^ε′ p̄" if check.event == "E" else "(1 − p̄) − e^ε′ (1 − p̲)")
    detail = (_delta_text(claim, event)
              + f"{_TEST_WORDS[test]}{_objective_text(event)}: certified p̲ = {event.p_first_lower:.4g}, p̄ = {event.p_second_upper:.4g}; at "
              f"ε′ = {check.epsilon_prime:.4g}, {form} = {check.statistic:.4g} "
              f"{'>' if check.refuted else '≤'} δ(ε′) = {check.threshold:.4g}"
              + ("" if event_alpha is not None else " (not a test of the claim: no α was planned for it)"))
    return [CrossCheck(claim.label, None, check.refuted and event_alpha is not None, None,
                       list(_EVENT_THEOREMS), detail, test=test, statistic=check.statistic,
                       threshold=check.threshold, alpha_spent=event_alpha, epsilon_prime=check.epsilon_prime)]


#: The event tests in words.
_TEST_WORDS = {"event": "event test", "float": "float-bit event test"}


def _gdp_check(claim: Claim, certificate, gdp_alpha: float | None) -> CrossCheck:
    """A μ-GDP claim against the certified μ̲ of the event statistic's trade-off curve
    (:mod:`audit.certificates.gaussian_dp`): μ̲ > μ refutes it."""
    mu = claim.parameters()["mu"]
    refuted = certificate.mu_lower_bound > mu
    detail = (f"trade-off curve of the event statistic: certified μ̲ = {certificate.mu_lower_bound:.4g} "
              f"{'>' if refuted else '≤'} the claimed μ = {mu:g} (μ̲ from {certificate.evidence})"
              + ("" if gdp_alpha is not None else " (not a test of the claim: no α was planned for it)"))
    return CrossCheck(claim.label, None, refuted and gdp_alpha is not None, None, list(_GDP_THEOREMS), detail,
                      test="gdp", statistic=certificate.mu_lower_bound, threshold=mu, alpha_spent=gdp_alpha)


def _objective_text(event) -> str:
    """" (the δ-optimal event)" or " (the ε-optimal event)" for a claim that is not pure DP, whose event search
    chose between the two (:mod:`audit.search.claim_events`), else ""."""
    objective = getattr(event, "event_objective", None)
    return f" ({objective} event)" if objective else ""


def _delta_text(claim: Claim, event) -> str:
    """"δ ≥ X > the claimed δ …; " for an (ε, δ) claim whose event certifies δ̲ > 0 at its ε, else ""."""
    bound = getattr(event, "delta_lower_bound", None)
    if bound is None or not bound > 0:
        return ""
    relation = (f"> the claimed δ = {claim.delta:.4g}" if bound > claim.delta else
                f"(not above the claimed δ = {claim.delta:.4g})")
    return f"δ ≥ {bound:.4g} {relation} at the claimed ε = {event.delta_epsilon:.4g}; "


def _ratio_check(claim: Claim, event, event_alpha: float | None, test: str = "event") -> CrossCheck:
    """The event test of a pure ε-DP claim whose event was certified by its odds ratio or its rate ratio.

    ε ≥ log(ψ̲)/2 (:mod:`audit.certificates.odds_ratio`) or ε ≥ log ρ̲ (:mod:`audit.certificates.rate_ratio`) holds with
    probability ≥ 1 − α, and a pure ε-DP claim is refuted exactly when a certified ε-DP lower
    bound exceeds its ε (Dwork and Roth 2014, Definition 2.4). The event search certifies by
    these ratios only for pure claims (:func:`cross_checks` calls this for pure claims only).
    """
    odds = event.certificate == "odds-ratio"
    refuted = event.epsilon_lower_bound > claim.pure_epsilon
    if odds:
        bound = (f"ψ̲ = {event.odds_ratio_lower:.4g} on the event's odds ratio, so ε ≥ log(ψ̲)/2 = "
                 f"{event.epsilon_lower_bound:.4g}")
    else:
        runs_first, runs_second = event.runs_made
        bound = (f"ρ̲ = {event.rate_ratio_lower:.4g} on the ratio of the event's probabilities (Poisson numbers of "
                 f"runs: {runs_first} and {runs_second}), so ε ≥ log ρ̲ = {event.epsilon_lower_bound:.4g}")
    detail = (f"{_TEST_WORDS[test]} ({event.certificate} certificate): {bound} {'>' if refuted else '≤'} the claimed "
              f"ε = {claim.pure_epsilon:.4g}"
              + ("" if event_alpha is not None else " (not a test of the claim: no α was planned for it)"))
    return CrossCheck(claim.label, None, refuted and event_alpha is not None, None,
                      list(_ODDS_RATIO_THEOREMS if odds else _RATE_RATIO_THEOREMS), detail, test=test,
                      statistic=event.epsilon_lower_bound, threshold=claim.pure_epsilon, alpha_spent=event_alpha,
                      epsilon_prime=claim.pure_epsilon)
