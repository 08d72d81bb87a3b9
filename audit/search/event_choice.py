"""Choose an event on selection runs: a threshold of a score (either tail, both tails, a randomized
boundary point) and the certificate each predicts to do best.

The event is chosen on selection runs (or held-out draws) only, so the choice costs no α; the
certificate (:mod:`audit.certificates.event_bounds`, :mod:`audit.certificates.odds_ratio`,
:mod:`audit.certificates.rate_ratio`) is computed on fresh runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from estimators.validation import InputError

from audit.certificates.odds_ratio import predicted_epsilon as predicted_odds_ratio_epsilon
from audit.certificates.rate_ratio import predicted_epsilon as predicted_rate_ratio_epsilon
from audit.certificates.event_bounds import LOWER_SHARES, _cp_lookup, _cp_side, clopper_pearson, epsilon_objective
from audit.search.score_grid import _Selection


#: The event forms :func:`choose_event` considers (all by default).
EVENT_FORMS = ("upper", "lower", "two-tailed")

#: Weights γ of a randomized boundary point (DP-Sniper's randomized threshold, Bichsel et al. 2021):
#: the atom {s = t} joins the event with probability γ.
BOUNDARY_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)

#: Thresholds considered: every distinct pooled score when there are at most this many, else
#: this many quantiles (a two-tailed event uses a grid half as fine on each side).
MAX_THRESHOLDS = 201


def _at(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Scores equal to ``threshold`` up to rounding (an atom of a discrete score law)."""
    return np.abs(scores - threshold) <= 1e-9 * max(1.0, abs(threshold))


@dataclass(frozen=True)
class ScoreEvent:
    """An event on a test statistic's score s, and which input it is likelier under.

    Forms (``form``):

    - ``"upper"``: E = {s > t} ∪ {s = t and U < γ};
    - ``"lower"``: E = {s < t} ∪ {s = t and U < γ};
    - ``"two-tailed"``: E = {s ≤ t} ∪ {s > t₂} (t < t₂, no randomization),

    with t = ``threshold``, t₂ = ``second_threshold``, γ = ``boundary_weight`` and U uniform on
    [0, 1) drawn independently of the output from a seeded generator (DP-Sniper's randomized
    threshold, Bichsel et al. 2021). ``first_is_a``: the probability bounded from
    below (p̲) is the one under the input whose value is a (the statistic's first argument),
    and p̄ is under b; otherwise the roles are swapped.

    The coin makes E an event of the output post-processed with independent randomness, so the DP
    inequality P(M(D) ∈ E) ≤ e^ε P(M(D′) ∈ E) + δ holds for it as for any event (post-processing,
    Dwork and Roth 2014, Proposition 2.1), and its counts on fresh runs are binomial.
    """

    form: str
    threshold: float
    first_is_a: bool = True
    boundary_weight: float = 0.0
    second_threshold: float | None = None

    def __post_init__(self):
        if self.form not in EVENT_FORMS:
            raise InputError(f"argument 'form' must be one of {EVENT_FORMS}, got {self.form!r}")
        if not 0.0 <= self.boundary_weight <= 1.0:
            raise InputError(f"argument 'boundary_weight' must be in [0, 1], got {self.boundary_weight!r}")
        if (self.form == "two-tailed") != (self.second_threshold is not None):
            raise InputError("argument 'second_threshold' is given exactly for the two-tailed form")

    @property
    def randomized(self) -> bool:
        return self.form != "two-tailed" and 0.0 < self.boundary_weight < 1.0

    def contains(self, scores: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """Whether each score's run falls in E (``rng`` draws the boundary coins of a randomized event)."""
        scores = np.asarray(scores, dtype=np.float64)
        if self.form == "two-tailed":
            low = (scores <= self.threshold) | _at(scores, self.threshold)
            return low | ((scores > self.second_threshold) & ~_at(scores, self.second_threshold))
        at = _at(scores, self.threshold)
        strict = (scores > self.threshold) if self.form == "upper" else (scores < self.threshold)
        strict &= ~at
        if self.boundary_weight == 0.0:
            return strict
        if self.boundary_weight == 1.0:
            return strict | at
        if rng is None:
            raise InputError("argument 'rng' is required by a randomized event (its boundary coin is seeded)")
        return strict | (at & (rng.random(len(scores)) < self.boundary_weight))

    def describe(self, statistic: str = "s") -> str:
        """The event in words, e.g. ``E = {s > 0.3}, first input a``."""
        t = f"{self.threshold:.4g}"
        if self.form == "two-tailed":
            event = f"{{{statistic} ≤ {t}}} ∪ {{{statistic} > {self.second_threshold:.4g}}}"
        else:
            inclusive = self.boundary_weight == 1.0
            sign = {("upper", False): ">", ("upper", True): "≥", ("lower", False): "<", ("lower", True): "≤"}[
                self.form, inclusive]
            event = f"{{{statistic} {sign} {t}}}"
            if self.randomized:
                event += f" ∪ {{{statistic} = {t} with probability {self.boundary_weight:g} (seeded coin)}}"
        first, second = ("a", "b") if self.first_is_a else ("b", "a")
        return f"E = {event}, first input {first}, second {second}"

    def to_dict(self) -> dict:
        return {"form": self.form, "threshold": self.threshold, "second_threshold": self.second_threshold,
                "boundary_weight": self.boundary_weight, "first_input": "a" if self.first_is_a else "b"}

    @classmethod
    def from_dict(cls, data: dict) -> ScoreEvent:
        """The event :meth:`to_dict` wrote (extra keys, such as an event test's statistic, are ignored)."""
        return cls(data["form"], data["threshold"], data["first_input"] == "a", data["boundary_weight"],
                   data["second_threshold"])


@dataclass(frozen=True)
class EventChoice:
    """The event :func:`choose_event` chose and the score ``objective`` predicts for it at ``runs``."""

    event: ScoreEvent
    predicted: float
    p_first: float   # the event's frequency under the first input on the selection runs
    p_second: float  # ... under the second input
    #: How the event is to be certified (one of :data:`CERTIFICATES`): "clopper-pearson"
    #: (:func:`certified_epsilon`), "odds-ratio" (:mod:`audit.certificates.odds_ratio`) or "rate-ratio"
    #: (:mod:`audit.certificates.rate_ratio`), whichever the selection runs predict to certify most.
    certificate: str = "clopper-pearson"
    #: The Clopper–Pearson certificate's share of α for p̲ (:meth:`_Predictor.lower_share`; p̄ gets the rest).
    lower_share: float = 0.5
    #: Which ranking chose it for a claim (:mod:`audit.search.claim_events`): "ε-optimal" or "δ-optimal".
    objective: str = "ε-optimal"


#: One-sided level of the pessimistic selection estimates (about one standard error): an event's
#: probability on the selection scores enters the prediction as its Clopper–Pearson bound at this
#: level (lower under the first input, upper under the second), so that a rare event whose observed
#: ratio is large by chance is not preferred to a frequent one whose ratio is sure.
SELECTION_PESSIMISM = 0.16

#: A stricter level (about 3.1 standard errors) at which an event predicted to refute a claim must
#: still be predicted to certify something to keep its rank (:class:`_Predictor`): the best of a
#: few hundred thresholds on the same scores can sit that far out by chance, and the bounds of
#: events with tiny counts move most (issue 32 D: a tail with 16 hits in about 19,300 runs, chosen
#: on a lucky selection, certified no positive ε for a 0.7-DP geometric mechanism).
STRICT_SELECTION_PESSIMISM = 0.001

#: The fewest selection runs per input at which the tiny-count guard applies (:class:`_Predictor`). With
#: fewer, every event rests on a few hits, and the strict level cannot tell a lucky tail from a real leak:
#: at about 170 selection runs per input (the float-bit statistics' share of a 4,000-run audit) it demoted
#: Mironov's float Laplace leak (17 hits against none) and the audit certified 0.10 instead of 4.5.
GUARD_MIN_SELECTION_RUNS = 1000


def _pessimistic(p_first, p_second, n_first: int, n_second: int, level: float = SELECTION_PESSIMISM, tails=None):
    """(lower bound on p_first, upper bound on p_second) from ``n_first`` and ``n_second`` selection scores,
    one-sided Clopper–Pearson at ``level`` (Clopper and Pearson 1934).

    ``tails`` (a two-tailed event's): the lower tail's frequencies (under the first input, under the second),
    parts of ``p_first`` and ``p_second``. Each tail is then bounded on its own and the bounds summed: each
    tail's threshold is chosen on the same scores, so each pays its own selection pessimism, and a tail with
    no real excess under the first input (a few lucky hits) adds less to the lower bound than e^ε times what
    it adds to the upper one: it cannot ride along with a tail that does leak. Like the joint bounds, the
    sums only rank events on selection scores (no certificate reads them), so they cost no α.
    """
    if tails is not None:
        low_first, low_second = (np.asarray(t, dtype=np.float64) for t in tails)
        upper_tail = _pessimistic(np.asarray(p_first) - low_first, np.asarray(p_second) - low_second,
                                  n_first, n_second, level)
        lower_tail = _pessimistic(low_first, low_second, n_first, n_second, level)
        return upper_tail[0] + lower_tail[0], np.minimum(upper_tail[1] + lower_tail[1], 1.0)
    lower = _cp_lookup(np.round(np.asarray(p_first, dtype=np.float64) * n_first), n_first, level, True)
    upper = _cp_lookup(np.round(np.asarray(p_second, dtype=np.float64) * n_second), n_second, level, False)
    return lower, upper


class _Predictor:
    """``objective`` of the Clopper–Pearson bounds ``runs`` fresh runs would give at observed frequencies.

    The bounds depend only on the rounded count, so each is computed once (:func:`_cp_lookup`). Given
    the numbers of selection scores the frequencies come from, they are first made pessimistic
    (:data:`SELECTION_PESSIMISM`): the winner's curse of choosing the best of many events on the
    same scores falls hardest on rare events, whose frequencies are the least certain.

    With ``pure_dp`` (pure DP: the objective ranks an ε directly, its ``rank_epsilon``), an event
    is predicted at the best of its three certificates (:data:`CERTIFICATES`): the Clopper–Pearson
    pair, the odds ratio's ε ≥ log(ψ̲)/2 (:func:`audit.certificates.odds_ratio.predicted_epsilon`) and the rate
    ratio's ε ≥ log ρ̲ with Poisson run counts (:func:`audit.certificates.rate_ratio.predicted_epsilon`), at the
    same frequencies.

    The tiny-count guard (issue 32 D), for a claim's objective (:func:`claim_objective`, whose
    refuting events score above 1 and events certifying anything above −1): an event predicted to
    refute the claim at the usual level whose prediction at :data:`STRICT_SELECTION_PESSIMISM`
    certifies nothing at all ranks by that strict prediction. Such an event's whole case rests on
    a few selection hits against a lucky zero: an extreme tail that looked good by chance, whose
    fresh runs then certify nothing. An event whose case survives the strict level (a genuine
    rare-event bug's: many hits against few) keeps its rank, and events predicted to refute at
    neither level rank as before. The guard applies only from :data:`GUARD_MIN_SELECTION_RUNS`
    selection runs per input. It changes only which event is chosen on selection scores, so
    α is unchanged.
    """

    def __init__(self, runs, alpha, objective, pure_dp: bool = False):
        self.runs, self.alpha, self.objective = runs, alpha, objective
        self.rank_epsilon = getattr(objective, "rank_epsilon", None) if pure_dp else None

    def by_certificate(self, p_first, p_second, n_first: int | None = None, n_second: int | None = None,
                       exact: bool = False, level: float = SELECTION_PESSIMISM, tails=None) -> dict:
        """The predicted objective under each certificate this predictor considers, by name
        (``exact``: the rate ratio's bound computed exactly rather than approximated; ``level`` and
        ``tails``: the pessimism of the selection frequencies, :func:`_pessimistic`)."""
        if n_first is not None:
            p_first, p_second = _pessimistic(p_first, p_second, n_first, n_second, level, tails)
        lower = _cp_lookup(np.round(np.asarray(p_first) * self.runs), self.runs, self.alpha / 2, True)
        upper = _cp_lookup(np.round(np.asarray(p_second) * self.runs), self.runs, self.alpha / 2, False)
        predicted = {"clopper-pearson": self.objective(lower, upper)}
        if self.rank_epsilon is not None:
            predicted["odds-ratio"] = self.rank_epsilon(predicted_odds_ratio_epsilon(p_first, p_second, self.runs,
                                                                                     self.alpha))
            predicted["rate-ratio"] = self.rank_epsilon(predicted_rate_ratio_epsilon(p_first, p_second, self.runs,
                                                                                     self.alpha, exact=exact))
        return predicted

    def __call__(self, p_first, p_second, n_first: int | None = None, n_second: int | None = None, tails=None):
        predicted = functools.reduce(np.maximum, self.by_certificate(p_first, p_second, n_first, n_second,
                                                                     tails=tails).values())
        refuting = getattr(self.objective, "refutes_above", None)
        if n_first is None or refuting is None or min(n_first, n_second) < GUARD_MIN_SELECTION_RUNS:
            return predicted
        doubtful = np.flatnonzero(predicted > refuting)
        if not doubtful.size:
            return predicted
        # The tiny-count guard (class docstring): a refuting event's case must survive the strict level.
        strict = functools.reduce(np.maximum, self.by_certificate(
            np.asarray(p_first)[doubtful], np.asarray(p_second)[doubtful], n_first, n_second,
            level=STRICT_SELECTION_PESSIMISM,
            tails=None if tails is None else tuple(np.asarray(t)[doubtful] for t in tails)).values())
        predicted = np.array(predicted, dtype=np.float64, copy=True)
        predicted[doubtful] = np.where(strict > self.objective.certifies_above, predicted[doubtful], strict)
        return predicted

    def certificate(self, p_first: float, p_second: float, n_first: int, n_second: int, tails=None) -> str:
        """The certificate predicted to do best for one event (the first of :data:`CERTIFICATES` on ties;
        ``tails``: a two-tailed event's lower-tail frequencies, :func:`_pessimistic`)."""
        predicted = self.by_certificate(np.array([p_first]), np.array([p_second]), n_first, n_second, exact=True,
                                        tails=None if tails is None else tuple(np.array([t]) for t in tails))
        return max(predicted, key=lambda name: (predicted[name][0], -CERTIFICATES.index(name)))

    def lower_share(self, p_first: float, p_second: float) -> float:
        """The share s of α for p̲ (p̄ gets 1 − s) that ``runs`` fresh runs at these frequencies are
        predicted to certify best with, among :data:`LOWER_SHARES` (½ on ties).

        p̲ at level αs and p̄ at α(1 − s) hold together with probability ≥ 1 − α for any s fixed
        before the certifying runs (the union bound, as for s = ½), so choosing s on the selection
        runs costs no α. An uneven split pays where one bound is much wider than the other: a rare
        event under the second input (p̄ set by a few hits, or none: 1 − (α(1 − s))^{1/n}), against
        a frequent one under the first, whose bound barely moves with its level.
        """
        return float(LOWER_SHARES[int(np.argmax(self.split_objectives(p_first, p_second)))])

    def split_objectives(self, p_first: float, p_second: float) -> np.ndarray:
        """``objective`` of the Clopper–Pearson bounds at each split of α in :data:`LOWER_SHARES` (:meth:`lower_share`)."""
        counts = np.round(np.array([p_first, p_second]) * self.runs)
        shares = np.asarray(LOWER_SHARES)
        lower = _cp_side(np.full(len(shares), counts[0]), self.runs, self.alpha * shares, lower=True)
        upper = _cp_side(np.full(len(shares), counts[1]), self.runs, self.alpha * (1.0 - shares), lower=False)
        return self.objective(lower, upper)


def predicted_objective(p_first, p_second, runs: int, alpha: float, objective, pure_dp: bool = False,
                        split_alpha: bool = False):
    """``objective`` predicted for an event of frequencies (``p_first``, ``p_second``) certified on
    ``runs`` fresh runs per input at level ``alpha``: the best of the certificates the event test
    chooses among (:class:`_Predictor`; for ``pure_dp`` also the odds and rate ratios), at the
    expected counts. With ``split_alpha`` the Clopper–Pearson pair also at the uneven splits of α the
    event test may choose (:meth:`_Predictor.lower_share`; scalar frequencies only). For planning budgets
    (:mod:`audit.gating.sequential`, :mod:`audit.gating.budget_forecast`)."""
    predictor = _Predictor(int(runs), alpha, objective, pure_dp=pure_dp)
    predicted = predictor.by_certificate(np.atleast_1d(np.asarray(p_first, dtype=np.float64)),
                                         np.atleast_1d(np.asarray(p_second, dtype=np.float64)), exact=True)
    if split_alpha:
        predicted["clopper-pearson split"] = predictor.split_objectives(float(p_first), float(p_second))
    return float(np.max([np.max(v) for v in predicted.values()]))


#: The certificates an event may be certified by, in order of preference on ties: the Clopper–Pearson
#: pair (:func:`certified_epsilon`), and for pure DP the odds ratio (:mod:`audit.certificates.odds_ratio`) and the
#: rate ratio with Poisson run counts (:mod:`audit.certificates.rate_ratio`).
CERTIFICATES = ("clopper-pearson", "odds-ratio", "rate-ratio")



def best_event(scores_a: np.ndarray, scores_b: np.ndarray, *, runs: int, alpha: float, delta: float = 0.0,
               objective=None, forms=EVENT_FORMS, boundary_weights=BOUNDARY_WEIGHTS,
               pure_dp: bool = False) -> EventChoice:
    """The event on these scores that ``runs`` fresh runs per input are predicted to certify best.

    ``scores_a`` and ``scores_b`` are the statistic on selection runs of the two neighbouring
    inputs (values a and b of the record). Every form of :class:`ScoreEvent` in ``forms`` is
    considered with both inputs as the first one (p̲ on it, p̄ on the other): an upper or a lower
    tail (with a randomized boundary point of weight γ ∈ ``boundary_weights`` where the scores
    have atoms; γ = 0 and 1 are the plain strict and non-strict tails), and both tails
    {s ≤ t} ∪ {s > t₂}. The prediction uses the observed frequencies, made pessimistic
    (:func:`_pessimistic`; a two-tailed event's each tail on its own), with Clopper–Pearson
    bounds at the certification sample size (each at α/2), so tiny events with no power are
    not chosen. ``objective(p_lower, p_upper) -> score`` ranks the predicted bounds (default:
    the ε bound at ``delta``, :func:`epsilon_objective`; for a claim, :func:`claim_objective`).
    Ties go to the first form considered (plain tails before randomized ones and two tails).
    With ``pure_dp`` and an objective that ranks an ε directly (δ = 0, or a pure DP claim),
    each event is predicted at the best of its certificates (:data:`CERTIFICATES`: the
    Clopper–Pearson pair, the odds ratio, :mod:`audit.certificates.odds_ratio`, and the rate ratio with
    Poisson run counts, :mod:`audit.certificates.rate_ratio`), and the choice says which (``certificate``).

    The maximum is over every event considered on the same scores, so its predicted value is
    optimistic (the more events, the more): :func:`choose_event` chooses among forms on held-out
    scores.

    Returns
    -------
    EventChoice
    """
    unknown = set(forms) - set(EVENT_FORMS)
    if not forms or unknown:
        raise InputError(f"argument 'forms' must be a non-empty subset of {EVENT_FORMS}, got {tuple(forms)!r}")
    predict = _Predictor(runs, alpha, objective or epsilon_objective(delta), pure_dp)
    scores_a, scores_b = np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64)
    return _best_event(_Selection(scores_a, scores_b), predict, forms, boundary_weights)


@functools.lru_cache(maxsize=8)
def _pairs_above_diagonal(count: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(count, k=1)``: the pairs of thresholds t < t₂ of a two-tailed event (kept)."""
    return np.triu_indices(count, k=1)


def _best_event(selection: _Selection, predict: _Predictor, forms, boundary_weights,
                certify: bool = True) -> EventChoice:
    """:func:`best_event` on sorted selection scores, with validated forms (``certify``: also say which
    certificate the chosen event is predicted to do better with; a choice only compared needs none)."""
    # (p under a, p under b, make_event(index, first_is_a), the lower tail's part of each p or None), in the order
    # considered.
    candidates = []
    thresholds, (above_a, at_a, below_a), (above_b, at_b, below_b) = selection.grid(MAX_THRESHOLDS)
    weights = np.asarray([w for w in boundary_weights if w in (0.0, 1.0)]
                         + [w for w in boundary_weights if w not in (0.0, 1.0)], dtype=np.float64)
    plain = np.isin(weights, (0.0, 1.0))
    for keep in (plain, ~plain):  # plain tails first: a randomized event must do strictly better
        if not keep.any():
            continue
        gammas = weights[keep]
        for form, (strict_a, strict_b) in (("upper", (above_a, above_b)), ("lower", (below_a, below_b))):
            if form not in forms:
                continue
            p_a = strict_a[:, None] + gammas[None, :] * at_a[:, None]
            p_b = strict_b[:, None] + gammas[None, :] * at_b[:, None]
            candidates.append((p_a, p_b, lambda i, first, form=form, gammas=gammas: ScoreEvent(
                form, float(thresholds[i[0]]), first, float(gammas[i[1]])), None))
    if "two-tailed" in forms:
        grid, (above_a, _, _), (above_b, _, _) = selection.grid((MAX_THRESHOLDS + 1) // 2)
        low, high = _pairs_above_diagonal(len(grid))
        if len(low):
            # {s ≤ t} ∪ {s > t₂}: the atom at t is in the lower tail, the one at t₂ is not. Each tail is
            # predicted pessimistically on its own (_pessimistic's tails).
            low_a, low_b = 1.0 - above_a[low], 1.0 - above_b[low]
            candidates.append((low_a + above_a[high], low_b + above_b[high], lambda i, first: ScoreEvent(
                "two-tailed", float(grid[low[i[0]]]), first, second_threshold=float(grid[high[i[0]]])),
                (low_a, low_b)))
    if not candidates:  # a single distinct score and only the two-tailed form: the empty event
        return EventChoice(ScoreEvent("upper", float(selection.pooled_max()), True),
                           float(predict(np.zeros(1), np.zeros(1))[0]), 0.0, 0.0)
    # Every candidate is predicted with each input first in one call per order of the inputs (and per kind: one
    # tail, two tails); the best is then the first maximum in the order considered, candidate by candidate with the
    # first input a before b (ties go to it), as when each was predicted on its own: the objective scores pair by
    # pair (claim_objective's one batch-wide shortcut, −∞ for the pairs that certify nothing when some pair does,
    # ranks them below that pair either way).
    predicted = {}
    for two_tailed in (False, True):
        group = [c for c in candidates if (c[3] is not None) == two_tailed]
        if not group:
            continue
        flat_a = np.concatenate([p_a.ravel() for p_a, _, _, _ in group])
        flat_b = np.concatenate([p_b.ravel() for _, p_b, _, _ in group])
        tails = (np.concatenate([t[0].ravel() for _, _, _, t in group]),
                 np.concatenate([t[1].ravel() for _, _, _, t in group])) if two_tailed else None
        predicted[True, two_tailed] = predict(flat_a, flat_b, selection.n_a, selection.n_b, tails=tails)
        predicted[False, two_tailed] = predict(flat_b, flat_a, selection.n_b, selection.n_a,
                                               tails=None if tails is None else tails[::-1])
    best, start = None, {False: 0, True: 0}
    for p_a, p_b, make, tails in candidates:
        kind = tails is not None
        stop = start[kind] + p_a.size
        for first_is_a, (p_first, p_second) in ((True, (p_a, p_b)), (False, (p_b, p_a))):
            segment = predicted[first_is_a, kind][start[kind]:stop]
            j = int(np.argmax(segment))
            if best is None or segment[j] > best.predicted:
                i = np.unravel_index(j, p_a.shape)
                best = EventChoice(make(i, first_is_a), float(segment[j]), float(p_first[i]), float(p_second[i]))
        start[kind] = stop
    return _certified(best, selection, predict) if certify else best


def _certified(choice: EventChoice, selection: _Selection, predict: _Predictor) -> EventChoice:
    """``choice`` with the certificate (and the Clopper–Pearson split of α) its event is predicted to do best with."""
    certificate = "clopper-pearson"
    if predict.rank_epsilon is not None:
        order = slice(None, None, 1 if choice.event.first_is_a else -1)
        certificate = predict.certificate(choice.p_first, choice.p_second, *(selection.n_a, selection.n_b)[order],
                                          tails=_lower_tails(choice.event, *selection.scores[order]))
    share = predict.lower_share(choice.p_first, choice.p_second) if certificate == "clopper-pearson" else 0.5
    return replace(choice, certificate=certificate, lower_share=share)


#: The families of events :func:`choose_event` compares on held-out scores: (forms, boundary weights).
EVENT_FAMILIES = (("upper", "lower"), (0.0, 1.0)), (("upper", "lower"), None), (("two-tailed",), (0.0,))


def event_frequency(event: ScoreEvent, scores: np.ndarray) -> float:
    """P̂(E) on ``scores``, a randomized boundary point counted at its weight (no coin needed)."""
    if not event.randomized:
        return float(event.contains(scores).mean())
    at = _at(scores, event.threshold)
    strict = (scores > event.threshold) if event.form == "upper" else (scores < event.threshold)
    return float((strict & ~at).mean() + event.boundary_weight * at.mean())


def _lower_tails(event: ScoreEvent, scores_first: np.ndarray, scores_second: np.ndarray):
    """A two-tailed event's lower tail {s ≤ t}: its frequencies on the first and the second input's scores (each as
    a one-element array, :func:`_pessimistic`'s ``tails``); None for a one-tailed event."""
    if event.form != "two-tailed":
        return None
    lower_tail = ScoreEvent("lower", event.threshold, boundary_weight=1.0)
    return tuple(np.array([event_frequency(lower_tail, s)]) for s in (scores_first, scores_second))


def choose_event(scores_a: np.ndarray, scores_b: np.ndarray, *, runs: int, alpha: float, delta: float = 0.0,
                 objective=None, forms=EVENT_FORMS, boundary_weights=BOUNDARY_WEIGHTS,
                 pure_dp: bool = False) -> EventChoice:
    """The event on a statistic's selection scores to certify on ``runs`` fresh runs per input.

    Three families of events are considered (:func:`best_event` within each): plain tails (an
    upper or a lower tail with either input first), tails with a randomized boundary point
    (weights ``boundary_weights`` strictly between 0 and 1; only where some score value occurs
    more than once, an atom of the score's law, which is what the randomization splits: DP-Sniper's
    randomized threshold, Bichsel et al. 2021), and both tails. The richer families
    hold many more events, so their best on the selection scores is the more optimistic (the
    winner's curse): each family's best event on one half of the scores (alternate runs, which
    are i.i.d.) is scored on the other half, and the best family there (ties to the plainer) is
    kept if its best event on all the scores is also predicted better than every plainer family's
    best on all the scores; else the next family by held-out score that is, the plain tails last
    (they always qualify). On all the scores a richer family is favoured (more events, more
    optimism), so a richer family that does not win there has no case, and one comparison on
    held-out scores is noisy: a two-tailed family, whose lower tail is never empty (it holds the
    lowest score at least), won on the held-out half of a key-set leak by a few lucky hits in that
    tail and then certified a lower δ̲ than the key set. Its event is the family's best on all the
    scores. ``predicted`` is the kept family's held-out score, so that candidates (pairs) are
    ranked on an honest prediction too. A two-tailed event is predicted with each tail made
    pessimistic on its own (:func:`_pessimistic`), on the held-out scores as on the others.
    ``pure_dp``: events are also predicted at their odds-ratio and rate-ratio certificates (:func:`best_event`).

    Choosing among forms, thresholds, directions and certificates costs no α: the choice is made on the
    selection runs only, and the chosen event is certified on fresh runs, so it is a fixed event
    for the certificate (the recipe of Ding et al. 2018 and Jagielski et al. 2020). The rules above
    change only which event is chosen, so α is unchanged.

    Returns
    -------
    EventChoice
    """
    predict = _Predictor(runs, alpha, objective or epsilon_objective(delta), pure_dp)
    scores_a, scores_b = np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64)
    selection = _Selection(scores_a, scores_b)
    interior = tuple(w for w in boundary_weights if 0.0 < w < 1.0)
    if not selection.has_atoms:
        interior = ()  # a randomized boundary serves atoms; on continuous scores it would split one run
    families = []
    for family_forms, weights in EVENT_FAMILIES:
        family_forms = tuple(f for f in family_forms if f in forms)
        weights = interior if weights is None else tuple(w for w in weights if w in boundary_weights or w == 0.0)
        if family_forms and weights:
            families.append((family_forms, weights))
    if not families:
        raise InputError(f"argument 'forms' must be a non-empty subset of {EVENT_FORMS}, got {tuple(forms)!r}")
    if len(families) > 1 and min(len(scores_a), len(scores_b)) >= 4:
        half = _Selection(scores_a[::2], scores_b[::2])  # sorted once for every family
        held_a, held_b = scores_a[1::2], scores_b[1::2]
        held_out = []
        for family_forms, weights in families:
            event = _best_event(half, predict, family_forms, weights, certify=False).event
            order = slice(None, None, 1 if event.first_is_a else -1)
            p_first, p_second = (np.array([event_frequency(event, s)]) for s in (held_a, held_b)[order])
            held_out.append(float(predict(p_first, p_second, *(len(held_a), len(held_b))[order],
                                          tails=_lower_tails(event, *(held_a, held_b)[order]))[0]))
    else:
        held_out = None
    on_all = {}  # each family's best on all the scores, found when needed

    def best_on_all(family: int) -> EventChoice:
        if family not in on_all:
            on_all[family] = _best_event(selection, predict, *families[family], certify=False)
        return on_all[family]
    # Families by held-out score, the plainer first among equals; the first that also beats every plainer family
    # on all the scores is kept (family 0 always qualifies).
    chosen = 0 if held_out is None else next(
        f for f in sorted(range(len(families)), key=lambda f: -held_out[f])
        if all(best_on_all(f).predicted > best_on_all(g).predicted for g in range(f)))
    choice = _certified(best_on_all(chosen), selection, predict)
    return choice if held_out is None else replace(choice, predicted=held_out[chosen])


def choose_threshold(scores_first: np.ndarray, scores_second: np.ndarray, *, runs: int, alpha: float,
                     delta: float = 0.0, objective=None) -> tuple[float, bool, float]:
    """Threshold t and direction of the published classifier auditors' event (one threshold).

    Considers E = {score > t} (first input more likely) and E = {score ≤ t} (second input more
    likely, roles swapped) only: the event rule of a logistic-regression auditor (Jagielski et
    al. 2020, Section 3), kept for the classifier baseline of ``dp-epsilon-benchmark``; miaudit's
    own event test uses :func:`choose_event`. The prediction is as there.

    Returns
    -------
    threshold, upper_tail, predicted_score
    """
    objective = objective or epsilon_objective(delta)
    pooled = np.concatenate((scores_first, scores_second))
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, MAX_THRESHOLDS)))
    above_first = (scores_first[:, None] > thresholds).mean(axis=0)
    above_second = (scores_second[:, None] > thresholds).mean(axis=0)
    best = (float(thresholds[0]), True, -np.inf)
    for upper_tail, p_first, p_second in ((True, above_first, above_second), (False, 1 - above_second, 1 - above_first)):
        lower, _ = clopper_pearson(np.round(p_first * runs), runs, alpha / 2)
        _, upper = clopper_pearson(np.round(p_second * runs), runs, alpha / 2)
        predicted = objective(lower, upper)
        i = int(np.argmax(predicted))
        if predicted[i] > best[2]:
            best = (float(thresholds[i]), upper_tail, float(predicted[i]))
    return best
