"""A certified lower bound on μ of Gaussian differential privacy from a score's trade-off curve.

A mechanism is μ-GDP when, for every pair of neighbouring inputs in either order, the trade-off
function of its outputs (the least type-II error of any test at type-I error x) is at least
G_μ(x) = Φ(Φ⁻¹(1 − x) − μ) (Dong, Roth and Su 2019/2022, "Gaussian differential privacy",
Definition 2.6 and Eq. (2.2)). Every threshold test on a score s of the output is such a test: with
the first input's scores larger, "s > t" has type-I error FPR(t) = P(s > t | second) and
type-II error FNR(t) = P(s ≤ t | first); with the roles swapped, "s ≤ t" has FPR = P(s ≤ t | first)
and FNR = P(s > t | second). If upper confidence bounds F̄PR and F̄NR hold together, then
F̄NR < G_μ(F̄PR) refutes μ-GDP (G_μ decreases, so the true point lies below the curve too), and
since G_μ(x) = y exactly at μ = Φ⁻¹(1 − x) − Φ⁻¹(y), the mechanism is μ-GDP for no μ below

    μ̲ = max over the points held of Φ⁻¹(1 − F̄PR) − Φ⁻¹(F̄NR),

the black-box f-DP auditing recipe (Nasr et al. 2023, "Tight auditing of differentially private
machine learning", Section 4: trade-off points of one score, converted to μ), here with every
point certified. Three ways to certify, each at level α in all:

- ``"joint-binomial"`` (default): K thresholds and directions chosen on *selection* scores (runs the
  certificate does not use), each tested at α/K (a union bound over K tests) by one exact test of its two
  error counts *together* (:func:`joint_binomial_mu`): the counts X ~ Bin(n, FPR) and Y ~ Bin(n', FNR)
  are independent, and the null "the point lies on or above G_μ" is tested with the linear statistic
  a·X/n + b·Y/n' whose weights a = 1/φ(Φ⁻¹(FPR̂)), b = 1/φ(Φ⁻¹(FNR̂)) come from the selection's rates
  (the normal of G_μ at the selected point, so the test is the locally most powerful one there). Its
  size is computed exactly, as a supremum over every point of the curve bounded by interval corners
  (the test's probability decreases in both rates). Two one-sided bounds at α/2 each lose
  z_{α/2}(σ₁ + σ₂) in μ; the joint test loses about z_α √(σ₁² + σ₂²): at μ = 2 and 10⁴ runs per input
  about 1.965 instead of 1.940 (tests/test_gdp_certificate.py, the methods' comparison).
- ``"clopper-pearson-grid"``: the same thresholds, each F̄PR and F̄NR a one-sided Clopper–Pearson bound
  (Clopper and Pearson 1934) at α/(2K): the union bound over 2K statements.
- ``"dkw"``: every threshold at once, from the Dvoretzky–Kiefer–Wolfowitz band with Massart's
  constant (Massart 1990: P(supₜ |F̂ₙ(t) − F(t)| > η) ≤ 2 exp(−2nη²)) on each input's scores at
  α/2, η = √(log(4/α) / (2n)); it needs no selection and is looser.

μ̲ certifies "not μ-GDP for any μ < μ̲" for every mechanism, Gaussian-shaped or not. What follows
is an estimate, not a certificate: *if* the mechanism is μ̲-GDP, it is (ε, δ)-DP exactly at the ε of
Dong, Roth and Su's Corollary 2.13, δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
(:func:`gdp_epsilon`); that is the ε a μ-based audit (Nasr et al. 2023) reports, and is larger than
any (ε, δ) bound an event test certifies at the same runs (:func:`optimal_event_epsilon`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from estimators.result_forms import fields_to_dict
from estimators.validation import InputError, check_int, check_probability

from audit.certificates.event_bounds import _cp_side
from audit.certificates.joint_binomial import clip_rate, joint_binomial_mu, probit_slope, probit_spread
from audit.certificates.sorted_scores import merge_sorted, quantiles_of_sorted

__all__ = [
    "GDPCertificate", "METHODS", "PointGrid", "dkw_band", "gdp_certificate", "gdp_epsilon", "joint_binomial_mu",
    "optimal_event_epsilon", "point_grid", "predicted_mu", "reachable_mu", "tradeoff_mu",
]

#: The ways of holding many trade-off points at once (module docstring).
METHODS = ("joint-binomial", "clopper-pearson-grid", "dkw")

#: The fewest expected errors of each kind (and non-errors) at the certification runs for which the
#: ``"joint-binomial"`` method tests a point jointly; other points get the Clopper–Pearson pair (:func:`_choose_grid`).
JOINT_MIN_COUNT = 50

#: The method of :func:`gdp_certificate` (and of every audit's μ certificate): the module docstring.
DEFAULT_METHOD = "joint-binomial"

#: The δ of the GDP ε estimate in an audit without a δ (a pure-DP or GDP claim).
ESTIMATE_DELTA = 1e-5

#: Thresholds and directions a Clopper–Pearson grid holds (chosen on selection scores). One: measured on
#: catalog:dpsgd_s1_q1_t4 (exactly 2-GDP, miaudit's default audit with a gdp:2 claim, seeds 0-9 at 10³ runs
#: per input, 0-5 at 10⁴), the mean μ̲ was 1.777 / 1.748 / 1.734 / 1.747 at 10³ runs and 1.945 / - / 1.929 /
#: 1.924 at 10⁴ for 1 / 2 / 4 / 8 points: the union bound over more points costs more than their hedge
#: against a poorly chosen threshold gains. The DKW band holds every point and is looser still.
DEFAULT_POINTS = 1

#: One-sided level of the pessimistic selection rates (about two standard errors): the grid's points are
#: chosen among hundreds on each of several statistics, where one standard error (the event choice's
#: audit.search.event_choice.SELECTION_PESSIMISM) still let a far-tail point win by chance (measured on
#: catalog:dpsgd_s1_q1_t4, seed 0: predicted 1.90, certified 1.74).
GRID_PESSIMISM = 0.025

#: Quantile levels of the pooled selection scores among which the grid's thresholds are chosen.
_CANDIDATE_LEVELS = np.linspace(0.002, 0.998, 250)


@dataclass(frozen=True)
class GDPCertificate:
    """A certified lower bound on μ of Gaussian DP, with what it implies under the GDP assumption.

    Attributes
    ----------
    mu_lower_bound : float
        μ̲: with probability ≥ 1 − ``alpha`` the mechanism is μ-GDP for no μ < μ̲ (0: nothing certified).
    method : str
        ``"joint-binomial"``, ``"clopper-pearson-grid"`` or ``"dkw"`` (module docstring).
    alpha : float
        The level of the certificate, paid once for every point held.
    points : int
        Trade-off points held simultaneously (grid thresholds × directions; for ``"dkw"``, every
        threshold of the certification scores, both directions).
    runs_first, runs_second : int
        Certification runs of each input the points are computed on.
    fpr_upper, fnr_upper : float or None
        The certified point that gives μ̲ (type-I and type-II error upper bounds); None for
        ``"joint-binomial"``, which tests the two counts together and bounds neither alone.
    threshold : float
        Its threshold on the score.
    direction : str
        ``"s > t"`` (reject the second input when the score exceeds t) or ``"s <= t"`` (roles swapped).
    delta : float
        The δ of the estimate below.
    epsilon_estimate : float or None
        An **estimate**, not a certificate: the ε at ``delta`` of a μ̲-GDP mechanism (Dong, Roth and
        Su, Corollary 2.13; :func:`gdp_epsilon`); None at δ = 0 (a GDP mechanism has no finite ε at δ = 0).
    fpr_observed, fnr_observed : float
        The point's type-I and type-II error rates on the certification runs.
    event_optimum : float or None
        The certified (ε, δ) bound (at ``delta``, level ``alpha``) the best threshold event would get,
        in expectation, at these runs per input on a pair exactly μ̲-GDP (:func:`optimal_event_epsilon`):
        the ceiling against which the event test's certified bound is read.
    """

    mu_lower_bound: float
    method: str
    alpha: float
    points: int
    runs_first: int
    runs_second: int
    fpr_upper: float | None
    fnr_upper: float | None
    threshold: float
    direction: str
    delta: float
    epsilon_estimate: float | None
    event_optimum: float | None
    fpr_observed: float = math.nan
    fnr_observed: float = math.nan

    statement = ("μ̲ is certified (level α, paid once for all points held): the mechanism is μ-GDP for no μ < μ̲. "
                 "The ε beside it is an estimate under the assumption that the mechanism is exactly μ̲-GDP "
                 "(Dong, Roth and Su, Corollary 2.13), not a certified (ε, δ) bound.")

    @property
    def evidence(self) -> str:
        """The point behind μ̲, in words (for verdicts and reports)."""
        if self.fpr_upper is None:
            return (f"FPR = {self.fpr_observed:.4g}, FNR = {self.fnr_observed:.4g} observed at {self.direction}, "
                    f"t = {self.threshold:.4g}, tested together against G_μ by one exact binomial test")
        return (f"the certified point FPR ≤ {self.fpr_upper:.4g}, FNR ≤ {self.fnr_upper:.4g} at {self.direction}, "
                f"t = {self.threshold:.4g}")

    def to_dict(self) -> dict:
        return fields_to_dict(self, extra={"statement": self.statement})


def tradeoff_mu(fpr, fnr):
    """The μ whose trade-off curve passes through (``fpr``, ``fnr``): Φ⁻¹(1 − fpr) − Φ⁻¹(fnr), at least 0.

    G_μ(x) = Φ(Φ⁻¹(1 − x) − μ) (Dong, Roth and Su 2022, Eq. (2.2)) equals y exactly at this μ; a
    point below the curve G_μ (y < G_μ(x)) refutes μ-GDP for every smaller μ. The corners (0, 1) and
    (1, 0), trivial tests, give 0; (0, y < 1) gives inf.

    Raises
    ------
    InputError
        A rate outside [0, 1] or NaN (a negative type-I error would otherwise read as 0 and certify μ = inf).
    """
    fpr, fnr = np.asarray(fpr, dtype=np.float64), np.asarray(fnr, dtype=np.float64)
    for name, rate in (("fpr", fpr), ("fnr", fnr)):
        if not np.all((rate >= 0.0) & (rate <= 1.0)):
            raise InputError(f"argument '{name}' must lie in [0, 1], got {rate[~((rate >= 0.0) & (rate <= 1.0))].ravel()[0]}")
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = special.ndtri(1.0 - fpr) - special.ndtri(fnr)
    return np.maximum(np.nan_to_num(mu, nan=0.0, posinf=np.inf, neginf=0.0), 0.0)


def dkw_band(runs: int, alpha: float) -> float:
    """η with P(supₜ |F̂ₙ(t) − F(t)| > η) ≤ ``alpha`` for ``runs`` i.i.d. draws.

    Dvoretzky, Kiefer and Wolfowitz (1956) with Massart's (1990) tight constant:
    P(sup |F̂ₙ − F| > η) ≤ 2 exp(−2nη²), so η = √(log(2/α) / (2n)).
    """
    runs = check_int(runs, "runs", 1)
    alpha = check_probability(alpha, "alpha")
    return math.sqrt(math.log(2.0 / alpha) / (2.0 * runs))


def _tail_counts(ordered: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """How many of the sorted scores ``ordered`` exceed each threshold."""
    return len(ordered) - np.searchsorted(ordered, thresholds, side="right")


def _points(first: np.ndarray, second: np.ndarray, thresholds: np.ndarray):
    """Counts (type-I errors, type-II errors) of both directions at ``thresholds``.

    Returns ``{"s > t": (fp, fn), "s <= t": (fp, fn)}`` with counts out of (second, first) runs for
    ``"s > t"`` and (first, second) runs for ``"s <= t"``.
    """
    return _counts_by_direction(_tail_counts(first, thresholds), _tail_counts(second, thresholds), len(first))


def _counts_by_direction(above_first, above_second, n_first: int) -> dict:
    """:func:`_points` from the counts of each input's scores above the thresholds (``n_first`` scores of the first)."""
    below_first = n_first - above_first  # one array for both directions (_SharedUpperBounds knows it by identity)
    return {"s > t": (above_second, below_first),
            "s <= t": (below_first, above_second)}


def _runs_of(direction: str, n_first: int, n_second: int) -> tuple[int, int]:
    """(runs under which the type-I error is counted, runs of the type-II error) for ``direction``."""
    return (n_second, n_first) if direction == "s > t" else (n_first, n_second)


def _choose_grid(selection_first, selection_second, n_first: int, n_second: int, alpha: float, points: int,
                 method: str):
    """The ``points`` (threshold, direction) pairs with the largest μ̲ predicted on the selection scores.

    The prediction uses the selection's error rates, made pessimistic (their one-sided Clopper–Pearson
    bounds at :data:`GRID_PESSIMISM`), as the certification counts' expectations: for ``"clopper-pearson-grid"``
    the μ̲ of their Clopper–Pearson bounds at α/(2·points); for ``"joint-binomial"`` the normal approximation
    of the joint test at α/points, μ(rates) + Φ⁻¹(α/points)·√(σ₁² + σ₂²) with σ² = r(1 − r)/(n φ(Φ⁻¹(r))²)
    (the delta method for Φ⁻¹ of a binomial rate), where both expected counts are at least
    :data:`JOINT_MIN_COUNT` from 0 and n and that beats the pair's prediction; elsewhere the pair. The
    joint method considers the other points only when none qualifies. Returns (predicted μ̲, threshold, direction, (the pessimistic FPR and FNR there), whether the point
    uses the joint test) tuples, best first.
    """
    # Each input sorted once; the pool is their merge and its quantiles are read off it (as np.sort of the pool
    # and np.quantile of it give them, to the bit: audit.certificates.sorted_scores).
    first, second = np.sort(selection_first), np.sort(selection_second)
    pooled = merge_sorted(first, second, selection_first, selection_second)
    thresholds = np.unique(quantiles_of_sorted(pooled, _CANDIDATE_LEVELS))
    joint = method == "joint-binomial"
    candidates = []
    upper = _SharedUpperBounds()
    for direction, (fp, fn) in _points(first, second, thresholds).items():
        n_fp_sel, n_fn_sel = _runs_of(direction, len(first), len(second))
        n_fp, n_fn = _runs_of(direction, n_first, n_second)
        # Pessimistic selection rates: a tail point whose small selection count is low by chance is not
        # preferred to a sure one (the winner's curse over hundreds of points and several statistics).
        fpr = upper(fp, n_fp_sel, GRID_PESSIMISM)
        fnr = upper(fn, n_fn_sel, GRID_PESSIMISM)
        predicted = tradeoff_mu(upper.at_expected_count(fpr, n_fp, alpha / (2 * points)),
                                upper.at_expected_count(fnr, n_fn, alpha / (2 * points)))
        uses_joint = np.zeros(len(thresholds), dtype=bool)
        if joint:
            # The joint test only where both expected counts are large enough for its linear statistic to follow
            # the curve (measured: with 14 expected type-I errors it certified 1.65 on an exactly 2-GDP run
            # where the normal approximation predicted about 1.9); elsewhere the Clopper–Pearson pair.
            eligible = ((fpr * n_fp >= JOINT_MIN_COUNT) & (fnr * n_fn >= JOINT_MIN_COUNT)
                        & (fpr * n_fp <= n_fp - JOINT_MIN_COUNT) & (fnr * n_fn <= n_fn - JOINT_MIN_COUNT))
            spread = probit_spread(fpr, n_fp, fnr, n_fn)
            joint_predicted = np.maximum(tradeoff_mu(clip_rate(fpr, n_fp), clip_rate(fnr, n_fn))
                                         + special.ndtri(alpha / points) * spread, 0.0)
            uses_joint = eligible & (joint_predicted > predicted)
            predicted = np.where(uses_joint, joint_predicted, predicted)
        for t, mu, rate_fp, rate_fn, use in zip(thresholds, predicted, fpr, fnr, uses_joint):
            candidates.append((float(mu), float(t), direction, (float(rate_fp), float(rate_fn)), bool(use)))
    if any(c[4] for c in candidates):
        # Tail points only when no point has the joint test's counts: a tail rate is where the selection's
        # scores mislead most (few counts, and held-out scores of a cross-fitted statistic differ from the
        # final statistic's most in the tails; measured: a selection count of 0 of 4,948 predicted 1.95 at a
        # point that certified 1.85 on an exactly 2-GDP run, below the central points' 1.9).
        candidates = [c for c in candidates if c[4]]
    candidates.sort(key=lambda c: -c[0])  # stable: ties keep the lower threshold, "s > t" first
    return candidates[:points]


class _SharedUpperBounds:
    """One-sided upper Clopper–Pearson bounds (:func:`audit.certificates.event_bounds._cp_side`) of count arrays,
    each computed once per array, runs and level: the two directions of :func:`_choose_grid` read the same counts
    (:func:`_counts_by_direction`: one direction's type-I errors are the other's type-II errors, of the same runs),
    so the second direction's four bounds are the first's, the same numbers from the same arrays. Arrays are known
    by their identity and kept alive here, so an identity is never reused for another array."""

    def __init__(self):
        self._bounds = {}

    def __call__(self, counts: np.ndarray, runs: int, level: float) -> np.ndarray:
        """``_cp_side(counts, runs, level, lower=False)``."""
        return self._shared(counts, runs, level, lambda: _cp_side(counts, runs, level, lower=False))

    def at_expected_count(self, rate: np.ndarray, runs: int, level: float) -> np.ndarray:
        """``_cp_side(rate * runs, runs, level, lower=False)``: the bound at a rate's expected count of ``runs``."""
        return self._shared(rate, runs, level, lambda: _cp_side(rate * runs, runs, level, lower=False), "expected")

    def _shared(self, array, runs, level, compute, kind="counts"):
        key = (kind, id(array), runs, level)
        if key not in self._bounds:
            self._bounds[key] = (array, compute())  # the array kept: its identity stays its own
        return self._bounds[key][1]


@dataclass(frozen=True)
class PointGrid:
    """The (threshold, direction) points of the default method (:data:`DEFAULT_METHOD`) chosen on selection
    scores for ``runs`` = (n_first, n_second) certification runs at level ``alpha`` (:func:`point_grid`), best
    first: ``chosen`` holds :func:`_choose_grid`'s tuples, ``chosen[0][0]`` the predicted μ̲."""

    chosen: tuple
    runs: tuple
    alpha: float
    points: int

    @property
    def predicted(self) -> float:
        """The μ̲ the best point is predicted to certify."""
        return self.chosen[0][0]


def point_grid(selection_first, selection_second, n_first: int, n_second: int, alpha: float,
               points: int | None = None) -> PointGrid:
    """The points :func:`gdp_certificate` holds with the default method at ``n_first``/``n_second`` certification
    runs, chosen on selection scores (:func:`_choose_grid`): a caller that compares statistics by their
    prediction (:func:`predicted_mu`) passes the chosen one's to :func:`gdp_certificate` (``grid``) rather than
    have it choose them again."""
    first = _scores(selection_first, "selection_first")
    second = _scores(selection_second, "selection_second")
    points = DEFAULT_POINTS if points is None else points
    return PointGrid(tuple(_choose_grid(first, second, n_first, n_second, alpha, points, DEFAULT_METHOD)),
                     (n_first, n_second), alpha, points)


def predicted_mu(selection_first, selection_second, n_first: int, n_second: int, alpha: float,
                 points: int | None = None) -> float:
    """The μ̲ the default method (:data:`DEFAULT_METHOD`) is predicted to certify at ``n_first``/``n_second``
    certification runs, from selection scores (the best of :func:`_choose_grid`'s predictions)."""
    return point_grid(selection_first, selection_second, n_first, n_second, alpha, points).predicted


def gdp_certificate(scores_first, scores_second, *, alpha: float = 0.05, method: str = DEFAULT_METHOD,
                    selection=None, points: int | None = None, delta: float = 0.0,
                    grid: PointGrid | None = None) -> GDPCertificate:
    """Certify a lower bound on μ (Gaussian DP) from a score on fresh runs of two neighbouring inputs.

    Parameters
    ----------
    scores_first, scores_second : array_like of shape (n1,), (n2,)
        The score on certification runs of the first and second input (larger where the output looks
        produced from the first); independent of ``selection`` and of how the score was chosen.
    alpha : float, default 0.05
        The level, paid once for all points held (module docstring).
    method : {"joint-binomial", "clopper-pearson-grid", "dkw"}
        How each point is certified and the points are held together (module docstring).
    selection : (array_like, array_like), optional
        The score on *other* runs of the first and second input (selection runs or held-out draws),
        on which the grid's thresholds (and the joint test's weights) are chosen; required by the grid methods.
    points : int, optional
        The grid's (threshold, direction) pairs (default :data:`DEFAULT_POINTS`).
    delta : float, default 0
        The δ of the GDP ε estimate and of the event optimum (none at 0).
    grid : PointGrid, optional
        The points already chosen on ``selection`` (:func:`point_grid`, the default method only): the same
        choice, not made again. It must have been chosen for these runs, ``alpha`` and ``points``.

    Returns
    -------
    GDPCertificate

    Raises
    ------
    InputError
        Empty or non-finite scores, an unknown method, a grid without selection scores, a ``grid`` chosen
        for other runs, level, points or method.
    """
    first = _scores(scores_first, "scores_first")
    second = _scores(scores_second, "scores_second")
    alpha = check_probability(alpha, "alpha")
    if alpha >= 0.5:
        raise InputError(f"argument 'alpha' must be below 0.5 (got {alpha})")
    if not 0.0 <= delta < 1.0:
        raise InputError(f"argument 'delta' must be in [0, 1) (got {delta})")
    if method not in METHODS:
        raise InputError(f"argument 'method' must be one of {', '.join(METHODS)} (got {method!r})")
    n_first, n_second = len(first), len(second)
    if method == "dkw":
        first, second = np.sort(first), np.sort(second)
        eta_first, eta_second = dkw_band(n_first, alpha / 2), dkw_band(n_second, alpha / 2)
        thresholds = np.unique(np.concatenate([first, second, [-np.inf]]))
        held = [(t, d) for d in ("s > t", "s <= t") for t in thresholds]
        slack = {"s > t": (eta_second, eta_first), "s <= t": (eta_first, eta_second)}
        best = None
        for direction, (fp, fn) in _points(first, second, thresholds).items():
            n_fp, n_fn = _runs_of(direction, n_first, n_second)
            fpr = np.minimum(fp / n_fp + slack[direction][0], 1.0)
            fnr = np.minimum(fn / n_fn + slack[direction][1], 1.0)
            mu = tradeoff_mu(fpr, fnr)
            i = int(np.argmax(mu))
            if best is None or mu[i] > best[0]:
                best = (float(mu[i]), float(fpr[i]), float(fnr[i]), float(thresholds[i]), direction,
                        float(fp[i] / n_fp), float(fn[i] / n_fn))
        count = len(held)
    else:
        if selection is None:
            raise InputError(f"argument 'selection' is required by method '{method}': the grid's "
                             "thresholds are chosen on scores the certificate does not use")
        points = check_int(DEFAULT_POINTS if points is None else points, "points", 1)
        sel_first = _scores(selection[0], "selection[0]")
        sel_second = _scores(selection[1], "selection[1]")
        if grid is None:
            grid = _choose_grid(sel_first, sel_second, n_first, n_second, alpha, points, method)
        elif (method != DEFAULT_METHOD or grid.runs != (n_first, n_second) or grid.alpha != alpha
              or grid.points != points):
            raise InputError(f"argument 'grid' was chosen for {grid.runs} runs at alpha {grid.alpha} with "
                             f"{grid.points} points by {DEFAULT_METHOD!r}, not for ({n_first}, {n_second}) runs at "
                             f"alpha {alpha} with {points} points by {method!r}")
        else:
            grid = list(grid.chosen)
        best = None
        for _, t, direction, (rate_fp, rate_fn), joint in grid:
            # One threshold: each input's scores above it counted directly (what _points reads off sorted scores).
            fp, fn = (int(c) for c in _counts_by_direction(np.count_nonzero(first > t), np.count_nonzero(second > t),
                                                           n_first)[direction])
            n_fp, n_fn = _runs_of(direction, n_first, n_second)
            if joint:
                # The statistic's weights: the normal of G_μ at the selection's (pessimistic) point, fixed before
                # these counts. The pessimistic rates, not the raw ones: a tail rate a few selection counts
                # low by chance would tilt the statistic away from the curve's slope there.
                weights = (float(probit_slope(rate_fp, n_fp)), float(probit_slope(rate_fn, n_fn)))
                mu = joint_binomial_mu(fp, fn, (n_fp, n_fn), weights, alpha / len(grid))
                fpr = fnr = None
            else:
                fpr = float(_cp_side(np.float64(fp), n_fp, alpha / (2 * len(grid)), lower=False))
                fnr = float(_cp_side(np.float64(fn), n_fn, alpha / (2 * len(grid)), lower=False))
                mu = float(tradeoff_mu(fpr, fnr))
            if best is None or mu > best[0]:
                best = (mu, fpr, fnr, float(t), direction, fp / n_fp, fn / n_fn)
        count = len(grid)
    mu, fpr, fnr, threshold, direction, fpr_observed, fnr_observed = best
    estimate = gdp_epsilon(mu, delta) if delta > 0 and mu > 0 else None
    optimum = optimal_event_epsilon(mu, min(n_first, n_second), alpha, delta) if mu > 0 else None
    return GDPCertificate(mu_lower_bound=mu, method=method, alpha=alpha, points=count, runs_first=n_first,
                          runs_second=n_second, fpr_upper=fpr, fnr_upper=fnr, threshold=threshold,
                          direction=direction, delta=delta, epsilon_estimate=estimate, event_optimum=optimum,
                          fpr_observed=fpr_observed, fnr_observed=fnr_observed)


def reachable_mu(runs: int, alpha: float, selection_draws: int) -> float:
    """The μ̲ the audit's μ certificate (:data:`DEFAULT_METHOD`, :data:`DEFAULT_POINTS` point) returns at level
    ``alpha`` on perfectly separated inputs: ``runs`` certification runs and ``selection_draws`` selection scores
    per input, none of them on the wrong side of a threshold.

    The selection then shows no error at the threshold chosen, so its pessimistic rates are r = 1 − 0.025^{1/m}
    (the one-sided Clopper–Pearson bound of 0 of m at :data:`GRID_PESSIMISM`; Clopper and Pearson 1934), and
    :func:`_choose_grid` uses the joint test only where r·n ≥ :data:`JOINT_MIN_COUNT` (and r·n ≤ n − that), about
    m ≤ n/13.5, and its prediction beats the pair's. Every certification count is 0, so:

    - the Clopper–Pearson pair at α/2 gives F̄PR = F̄NR = 1 − (α/2)^{1/n} and μ̲ = 2Φ⁻¹((α/2)^{1/n})
      (:func:`tradeoff_mu`; Dong, Roth and Su 2022, Eq. (2.2)) — the event pair's own best outcome at the split ½;
    - the joint test (:func:`audit.certificates.joint_binomial.joint_binomial_mu` at X = Y = 0) gives about
      2Φ⁻¹((0.9α)^{1/(2n)}), the largest P(X = 0, Y = 0) on G_μ being Φ(μ/2)^{2n}.

    An audit's selection has m of about n/2 (one candidate's selection runs), n/(2R) after R halving rounds (at
    least :data:`audit.statistics.pair_candidates.MIN_SELECTION_RUNS`, R ≥ 7 only from about 91,000 runs), or the
    MI sample's held-out draws (0.3·samples per input at the default split, ``event_runs`` = ``samples``): the pair's
    value there, which the event pair refutes at least as much as (tests/test_claim_tests_mu_reach.py).
    """
    runs = check_int(runs, "runs", 1)
    alpha = check_probability(alpha, "alpha")
    selection_draws = check_int(selection_draws, "selection_draws", 1)
    level = alpha / DEFAULT_POINTS
    pair = max(2.0 * float(special.ndtri(math.exp(math.log(level / 2.0) / runs))), 0.0)
    rate = float(_cp_side(np.float64(0.0), selection_draws, GRID_PESSIMISM, lower=False))
    expected = rate * runs
    if not JOINT_MIN_COUNT <= expected <= runs - JOINT_MIN_COUNT:
        return pair
    # _choose_grid's two predictions at the selection's pessimistic rates (the same on both sides here).
    bound = float(_cp_side(np.float64(expected), runs, level / 2.0, lower=False))
    pair_predicted = float(tradeoff_mu(bound, bound))
    joint_predicted = max(float(tradeoff_mu(clip_rate(rate, runs), clip_rate(rate, runs)))
                          + float(special.ndtri(level)) * float(probit_spread(rate, runs, rate, runs)), 0.0)
    if joint_predicted <= pair_predicted:
        return pair
    slope = float(probit_slope(rate, runs))
    return float(joint_binomial_mu(0, 0, (runs, runs), (slope, slope), level))


def _scores(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).ravel()
    if array.size == 0:
        raise InputError(f"argument '{name}' must hold at least one score")
    if not np.all(np.isfinite(array)):
        raise InputError(f"argument '{name}' must be finite")
    return array


def gdp_epsilon(mu: float, delta: float) -> float:
    """The ε at ``delta`` of a μ-GDP mechanism: the root of δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).

    Dong, Roth and Su (2022), Corollary 2.13 (the same profile as the Gaussian mechanism with
    sensitivity/σ = μ, :func:`mechanisms.catalog.sums.gaussian_exact_epsilon`).
    """
    from mechanisms.catalog.sums import gaussian_exact_epsilon

    if not (mu > 0 and math.isfinite(mu)):
        raise InputError(f"argument 'mu' must be positive and finite (got {mu})")
    return gaussian_exact_epsilon(check_probability(delta, "delta"), 1.0, mu)


def optimal_event_epsilon(mu: float, runs: int, alpha: float = 0.05, delta: float = 0.0, *,
                          grid: int = 2001) -> float:
    """The best certified (ε, δ) bound a threshold event gets, in expectation, on an exactly μ-GDP pair.

    The pair N(μ, 1) vs N(0, 1) (every μ-GDP trade-off is a post-processing of it: Dong, Roth and
    Su 2022, Theorem 2.10, so no event of a μ-GDP mechanism separates more), tail events s > t
    (optimal by Neyman–Pearson; the lower tails are their mirror image), ``runs`` runs per input,
    the event test's certificate ε ≥ log((p̲ − δ)/p̄) with one-sided Clopper–Pearson bounds at αs
    and α(1 − s), s the best of :data:`_SHARES`, (:func:`audit.certificates.event_bounds.certified_epsilon`) at the expected counts, maximised over t
    at the resolution of a grid of ``grid`` thresholds in [−2, μ + 10] (a tenth of them, then the full
    resolution around the best). It is the numerical optimum for the budget that an
    audit's certified bound is compared with (an event chosen without error gets no more).
    """
    runs = check_int(runs, "runs", 1)
    if not (mu > 0 and math.isfinite(mu)):
        raise InputError(f"argument 'mu' must be positive and finite (got {mu})")
    alpha = check_probability(alpha, "alpha")
    if not 0.0 <= delta < 1.0:  # also refuses NaN
        raise InputError(f"argument 'delta' must be in [0, 1) (got {delta})")
    grid = check_int(grid, "grid", 1)

    def best_on(t):
        p_first, p_second = special.ndtr(mu - t), special.ndtr(-t)
        values = []
        for share in _SHARES:
            lower = _cp_side(p_first * runs, runs, alpha * share, lower=True)
            upper = _cp_side(p_second * runs, runs, alpha * (1.0 - share), lower=False)
            # audit.certificates.event_bounds.certified_epsilon, vectorized: the event, or its complement with the inputs swapped.
            with np.errstate(divide="ignore", invalid="ignore"):
                event = np.where((lower > delta) & (upper > 0), np.log((lower - delta) / upper), 0.0)
                complement = np.where((1 - upper > delta) & (lower < 1), np.log((1 - upper - delta) / (1 - lower)),
                                      0.0)
            values.append(np.maximum(event, complement))
        values = np.max(values, axis=0)
        return float(np.max(values)), float(t[int(np.argmax(values))])

    # A coarse grid, then the full resolution around its best threshold: the bound is smooth and single-peaked
    # in t, and this costs a tenth of the full grid's Beta quantiles.
    coarse = np.linspace(-2.0, mu + 10.0, max(grid // 10, 11))
    best, at = best_on(coarse)
    step = coarse[1] - coarse[0]
    fine_best, _ = best_on(np.linspace(at - 2 * step, at + 2 * step, 41))
    return max(best, fine_best)


#: Splits s of α between p̲ (at αs) and p̄ (at α(1 − s)) over which :func:`optimal_event_epsilon` maximises,
#: as the event test may choose an uneven split (:meth:`audit.search.event_choice._Predictor.lower_share`).
_SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
