"""The event test: a likelihood-ratio statistic between two neighbouring databases, thresholded.

A statistic T(a, b, D, y) (the critic's T(a, y, rest) − T(b, y, rest) in an audit) separates the
output laws of two neighbouring databases, D_a and D_b, that differ only in one record (value a
or b). Selection runs choose, among candidate pairs (:class:`PairCandidate`, in the order given:
a catalog's exposing pairs and the user's pairs, then structured patterns, then random pairs),
the pair and the event (:func:`audit.search.event_choice.choose_event`: either tail with either input
first, a randomized boundary point, both tails). Where every candidate is the pair of a two-point
prior the MI sample drew from, the choice is made on the statistic's scores on that sample's
held-out draws instead (the validation and test splits: draws of the two databases the critic
was not trained on), and no selection run is spent. Fresh certification runs of the chosen pair
bound P(M(D₁) ∈ E) from below and P(M(D₂) ∈ E) from above (Clopper–Pearson, at levels αs and
α(1 − s) with the split s chosen on the selection, ½ unless an uneven one is predicted to do better), which
certifies ε ≥ log((p̲ − δ)/p̄) (Dwork and Roth 2014, Definition 2.4) and is what a claim's profile
is checked against (:mod:`audit.certificates.claim_tests`). For pure DP the same runs may instead certify
ε ≥ log(ψ̲)/2 from the event's odds ratio at level α (:mod:`audit.certificates.odds_ratio`), or a Poisson number
of runs of each input (at most the budget) may certify ε ≥ log ρ̲ from the ratio of its two
probabilities at level α (:mod:`audit.certificates.rate_ratio`), where the selection predicts that to do better.

Choosing among pairs, statistics and events costs no α: every choice is made on selection runs
or held-out draws, never on the certification runs, and the
certificate is computed on fresh runs of one fixed pair and event. (Training a critic for a pair,
which the prior search does, is paid separately in the MI test's union bound.)
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.inputs.missing_values import rows_differ
from mechanisms.outputs.encoding import encoder_of
from mechanisms.outputs.unbounded import unbounded_differences

from audit.certificates.claim_tests import uses_ratio_certificates
from audit.certificates.event_bounds import certified_epsilon, claim_objective, clopper_pearson
from audit.search.claim_events import DELTA_OPTIMAL, EPSILON_OPTIMAL, choose_events, ranks_by_delta
from audit.certificates.gaussian_dp import ESTIMATE_DELTA, gdp_certificate, point_grid
from audit.certificates.odds_ratio import odds_ratio_epsilon, odds_ratio_lower_bound
from audit.certificates.rate_ratio import draw_run_counts, rate_ratio_epsilon, rate_ratio_lower_bound
from audit.result import EventTest
from audit.statistics.pair_candidates import MIN_SELECTION_RUNS, value_pairs

def _selection_plan(n_candidates: int, runs: int, floor: int = MIN_SELECTION_RUNS) -> tuple[int, int]:
    """(candidates considered, halving rounds) for a selection budget of about ``runs`` runs.

    Successive halving (Karnin, Koren and Somekh 2013): each of ⌈log₂ C⌉ rounds spends an equal
    share of the budget on the candidates still in, and keeps the better half. C is the largest
    number of candidates (the first ones, in order) whose first round gives each input at least
    ``floor`` runs (:data:`MIN_SELECTION_RUNS`); a single candidate gets the whole budget.
    """
    count = n_candidates
    while count > 1:
        rounds = math.ceil(math.log2(count))
        if runs // (rounds * 2 * count) >= floor:
            return count, rounds
        count -= 1
    return 1, 1


def pair_words(event: dict) -> str:
    """The neighbouring pair of an event test in words, from its data (:attr:`audit.result.EventTest.event`:
    ``record``, ``differing_records`` and ``record_values``): ``record 0 (a = [0.], b = [1.])``, or, for a
    user-level pair whose records switch together, ``records [1, 2] together (record 1: a = [0.], b = [1.])``.
    The event test's description and a report's headline say the pair in these words."""
    values = f"a = {event['record_values']['a']}, b = {event['record_values']['b']}"
    if len(event["differing_records"]) <= 1:
        return f"record {event['record']} ({values})"
    return f"records {event['differing_records']} together (record {event['record']}: {values})"


def choice_settings(runs: int, alpha: float, delta: float, claim, pure_certificates: bool = True) -> dict:
    """The keyword arguments of :func:`audit.search.event_choice.choose_event` with which :func:`event_search` chooses
    an event for ``runs`` certification runs per input at level ``alpha`` (its parameters of the same names); the
    odds- and rate-ratio certificates among its choices (``pure_dp``) where ``pure_certificates`` and
    :func:`audit.certificates.claim_tests.uses_ratio_certificates` ``(claim, delta)``."""
    objective = None if claim is None else claim_objective(claim)
    # The odds- and rate-ratio certificates bound pure ε-DP only: uses_ratio_certificates states where they apply.
    pure_dp = pure_certificates and uses_ratio_certificates(claim, delta)
    return dict(runs=runs, alpha=alpha, delta=delta, objective=objective, pure_dp=pure_dp)


def event_search(candidates, *, secret: str | None = None, runner, rng: np.random.Generator, runs: int, alpha: float,
                 delta: float = 0.0, claim=None, pure_certificates: bool = True,
                 gdp_alpha: float | None = None, predict_runs: int | None = None,
                 keep_scores: bool = False, min_selection_runs: int = MIN_SELECTION_RUNS) -> EventTest | None:
    """Choose a pair and an event on selection runs; certify them on fresh runs.

    Parameters
    ----------
    candidates : sequence of PairCandidate
        In order of preference: when the selection budget cannot serve them all, the first ones
        are considered. When every candidate carries held-out scores (``held_out``), the
        choice is made on those instead and spends no run; the certificate is the same, on
        fresh runs of the chosen pair.
    secret : str, optional
        What the event is about, for the result (default: ``"record i"`` of the chosen pair).
    runner : MechanismRunner
        Runs the mechanism (every run is counted in the result).
    rng : numpy.random.Generator
        Seeds the mechanism runs and a randomized event's boundary coins.
    runs : int
        Certification runs per input (a rate-ratio certificate makes a Poisson number of them, at most
        ``runs``: :func:`audit.certificates.rate_ratio.draw_run_counts`). Without held-out scores, selection spends about ``runs``
        in all, over the candidates and their two inputs (at least :data:`MIN_SELECTION_RUNS`
        per input), by successive halving (:func:`_selection_plan`).
    alpha : float
        The level: p̲ and p̄ hold together with probability ≥ 1 − α (at αs and α(1 − s), s =
        ``lower_share`` of the result).
    delta : float
        The δ at which the ε bound is also reported (0: pure DP only). At δ = 0 (with no claim or a
        pure DP claim) the event may be certified by its odds ratio (:mod:`audit.certificates.odds_ratio`) or by
        the ratio of its probabilities with Poisson run counts (:mod:`audit.certificates.rate_ratio`) instead of
        its two probabilities, whichever the selection predicts to certify most.
    claim : Claim, optional
        With a claim, the event is chosen to refute it (:func:`audit.certificates.event_bounds.claim_objective`).
    pure_certificates : bool
        Whether the odds- and rate-ratio certificates may be chosen at all. They bound pure ε-DP
        only, so an audit whose claim is of another notion (zCDP, GDP, RDP, (ε, δ)-DP) passes
        False even when the event test does not test the claim (``claim`` None): the event's
        certified pair must be comparable with the claim's profile (:func:`audit.certificates.claim_tests.cross_checks`).
    gdp_alpha : float, optional
        The level of the μ certificate on the same runs (``gaussian_dp`` of the result,
        :func:`_gaussian_dp`); default ``alpha``.
    predict_runs : int, optional
        Choose the pair, the event and its certificate for this many certification runs per input
        instead of ``runs`` (the runs still made): a budget plan's pilot (:mod:`audit.gating.budget_forecast`)
        chooses the event an audit with that many runs would, and measures its frequencies on its
        own runs. It changes only which event is chosen, on selection runs or held-out draws, so α
        is unchanged. Default: ``runs``.
    keep_scores : bool
        Keep the chosen statistic's scores on the draws it was chosen on and on the certification
        runs (``scores`` of the result; never in its JSON), for a budget plan's forecast
        (:func:`audit.gating.budget_forecast.forecast_refutation`).
    min_selection_runs : int
        The fewest selection runs per input of a candidate (:func:`_selection_plan`):
        :data:`MIN_SELECTION_RUNS`, lower at a sequential audit's early look
        (:data:`audit.statistics.pair_candidates.EARLY_LOOK_SELECTION_RUNS`). It changes only the choice.

    Returns
    -------
    EventTest or None
        None without candidates.
    """
    candidates = list(candidates)
    if not candidates:
        return None
    # The pair, event and certificate are chosen for ``predict_runs`` certification runs (default: those made).
    settings = choice_settings(runs if predict_runs is None else predict_runs, alpha, delta, claim, pure_certificates)
    on_held_out = all(c.held_out is not None for c in candidates)
    if on_held_out:
        count, used, alive = len(candidates), 0, range(len(candidates))
        choices = choose_events({i: c.held_out for i, c in enumerate(candidates)}, settings, claim)
    else:
        count, used, alive, choices, selection_scores = _successive_halving(candidates, runner, rng, runs, settings,
                                                                            claim, min_selection_runs)
    best = max(alive, key=lambda i: choices[i].predicted)  # ties: the earlier candidate
    tried = list(dict.fromkeys(candidates[i].statistic_label for i in range(count)))
    chosen, event = candidates[best], choices[best].event
    chosen_on = (f"{sum(len(s) for s in chosen.held_out)} held-out draws of the MI sample" if on_held_out
                 else "selection runs")
    # A randomized event's boundary coins come from their own seeded generator (part of the event);
    # a plain event draws none, so its runs are those of the same seed without the search.
    coins = np.random.default_rng(rng.integers(2**63)) if event.randomized else None
    # The certificate and the split of α between p̲ and p̄ were chosen on the selection runs: they cost no α.
    certificate, share = choices[best].certificate, choices[best].lower_share
    made = (runs, runs)  # runs of the first and of the second input
    overflow = False
    if certificate == "rate-ratio":
        drawn = draw_run_counts(runs, rng)  # None: a draw exceeded the budget, no run is made (audit.certificates.rate_ratio)
        overflow = drawn is None
        made = (0, 0) if overflow else drawn
    runs_a, runs_b = made if event.first_is_a else made[::-1]
    runs_of_a = chosen.runs(0, runs_a, runner, rng) if runs_a else None
    runs_of_b = chosen.runs(1, runs_b, runner, rng) if runs_b else None
    scores_a = chosen.score(*runs_of_a) if runs_a else np.empty(0)
    scores_b = chosen.score(*runs_of_b) if runs_b else np.empty(0)
    in_a = int(event.contains(scores_a, coins).sum()) if runs_a else 0
    in_b = int(event.contains(scores_b, coins).sum()) if runs_b else 0
    hits_first, hits_second = (in_a, in_b) if event.first_is_a else (in_b, in_a)
    runs_first, runs_second = made
    p_lower = float(clopper_pearson(hits_first, runs_first, alpha * share)[0]) if runs_first else 0.0
    p_upper = float(clopper_pearson(hits_second, runs_second, alpha * (1.0 - share))[1]) if runs_second else 1.0
    psi_lower = rho_lower = None
    if certificate == "odds-ratio":
        psi_lower = odds_ratio_lower_bound(hits_first, runs, hits_second, runs, alpha)
        epsilon = odds_ratio_epsilon(psi_lower)
    elif certificate == "rate-ratio":
        rho_lower = 0.0 if overflow else rate_ratio_lower_bound(hits_first, hits_second, alpha)
        epsilon = rate_ratio_epsilon(rho_lower)
    else:
        epsilon = certified_epsilon(p_lower, p_upper, 0.0)
    objective = choices[best].objective if ranks_by_delta(claim) else None
    a, b = chosen.values
    differences = _support_differences(runner, runs_of_a, runs_of_b)
    # The event's frequencies on the draws it was chosen on, in its roles (first: p̲'s input), with their counts.
    chosen_scores = chosen.held_out if on_held_out else selection_scores[best]
    chosen_sizes = [len(s) for s in chosen_scores][:: 1 if event.first_is_a else -1]
    unbounded = _unbounded_differences(runner, runs_of_a, runs_of_b)
    # The event and its pair as data, which a report says them from (not from the description).
    event_data = {**event.to_dict(), "statistic": chosen.statistic_label, "statistic_words": chosen.statistic_words or None,
                  "record": int(chosen.record),
                  "differing_records": np.flatnonzero(rows_differ(chosen.first, chosen.second)).tolist(),
                  "record_values": {"a": np.array2string(np.asarray(a), precision=4),
                                    "b": np.array2string(np.asarray(b), precision=4)}}
    description = (event.describe(chosen.statistic_label) + f"; neighbouring databases differ in {pair_words(event_data)}"
                   + (f"; {chosen.origin}" if chosen.origin else "")
                   + (f"; chosen among {count} candidates on {chosen_on}" if count > 1 else f"; chosen on {chosen_on}")
                   + (f"; the {objective} event for the claim {claim.label} ({_OBJECTIVE_WORDS[objective]})"
                      if objective else "")
                   + ("; a Poisson number of certification runs exceeded the budget, so none was made and nothing "
                      "is certified" if overflow else "")
                   + (f"; in the certification runs: {'; '.join(differences)}" if differences else "")
                   + (f"; {'; '.join(unbounded)}" if unbounded else ""))
    return EventTest(
        secret=secret or f"record {chosen.record}", description=description, threshold=event.threshold, runs_per_input=runs,
        p_first=hits_first / max(runs_first, 1), p_second=hits_second / max(runs_second, 1),
        p_first_lower=p_lower, p_second_upper=p_upper,
        delta=delta, epsilon_lower_bound=epsilon,
        epsilon_lower_bound_at_delta=certified_epsilon(p_lower, p_upper, delta) if delta > 0 else None,
        alpha=alpha, selection_runs=used, pairs_considered=count,
        event=event_data,
        certificate=certificate, odds_ratio_lower=psi_lower, lower_share=share, rate_ratio_lower=rho_lower,
        runs_made=None if certificate != "rate-ratio" else list(made),
        support_differences=differences or None, unbounded_differences=unbounded or None, event_objective=objective,
        statistics_tried=tried, statistics_with_evidence=_with_evidence(candidates, choices, settings),
        chosen_frequencies=[choices[best].p_first, choices[best].p_second], chosen_runs=chosen_sizes,
        gaussian_dp=_gaussian_dp(candidates, best, (runs_of_a, runs_of_b),
                                 {i: c.held_out for i, c in enumerate(candidates)} if on_held_out else selection_scores,
                                 alpha if gdp_alpha is None else gdp_alpha, delta, (scores_a, scores_b)),
        scores=None if not keep_scores else {
            "chosen_on": chosen.held_out if on_held_out else selection_scores[best],
            "certification": (np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64))},
    )


#: What each event of a claim that is not pure DP maximises (:mod:`audit.search.claim_events`), in words.
_OBJECTIVE_WORDS = {EPSILON_OPTIMAL: "it maximises the certified ε; no event's selection frequencies exceeded the "
                                     "claim's privacy profile",
                    DELTA_OPTIMAL: "it maximises the certified excess over the claim's privacy profile, for an (ε, δ) "
                                   "claim the certified δ̲ at its ε; its selection frequencies exceeded the profile"}


def _support_differences(runner, runs_of_a, runs_of_b) -> list[str]:
    """What the outputs of the two inputs' certification runs hold under one input only, in words, for a
    mechanism whose outputs are encoded (:meth:`mechanisms.outputs.encoding.OutputEncoder.describe_differences`;
    the inputs named a and b as in the event's description); [] otherwise."""
    encoder = encoder_of(getattr(getattr(runner, "reference", None), "mechanism", None))
    if encoder is None or runs_of_a is None or runs_of_b is None:
        return []
    return encoder.describe_differences(runs_of_a[1], runs_of_b[1], "a", "b")


def _with_evidence(candidates, choices: dict, settings: dict) -> list | None:
    """The statistics (labels, in order) whose event, chosen on the draws it was chosen on, is predicted there to
    refute the claim on the certification runs (its predicted objective ≥ 1:
    :func:`audit.certificates.event_bounds.claim_objective`): evidence against the claim. None without a claim
    (``settings``' objective, :func:`choice_settings`). A statement about the selection, not a test.
    """
    if settings.get("objective") is None:
        return None
    labels = [candidates[i].statistic_label for i, choice in sorted(choices.items()) if choice.predicted >= 1.0]
    return list(dict.fromkeys(labels))


def _unbounded_differences(runner, runs_of_a, runs_of_b) -> list[str]:
    """The output features constant in every certification run of one input at a value the other's never take,
    in words (:func:`mechanisms.outputs.unbounded.unbounded_differences`; named by the encoder's parts where the
    outputs are encoded); counts beside the certificate, not a test."""
    if runs_of_a is None or runs_of_b is None:
        return []
    encoder = encoder_of(getattr(getattr(runner, "reference", None), "mechanism", None))
    rows_a, rows_b = (np.reshape(runs[1], (len(runs[1]), -1)) for runs in (runs_of_a, runs_of_b))
    if encoder is not None:  # the two blocks the encoder names (a user's statistic's columns follow them)
        rows_a, rows_b = rows_a[:, :2 * encoder.width], rows_b[:, :2 * encoder.width]
    return unbounded_differences(rows_a, rows_b, "a", "b", encoder=encoder)


def _gaussian_dp(candidates, best: int, runs: tuple, selection: dict, alpha: float, delta: float,
                 scored: tuple | None = None):
    """The μ certificate (:mod:`audit.certificates.gaussian_dp`) on the event's certification runs.

    ``runs`` are the (databases, outputs) of the chosen pair's first and second input. The statistic
    is the one, among the candidates on that pair with selection scores (``selection``: candidate
    index -> (first's scores, second's)), whose selection scores predict the largest μ̲
    (:func:`audit.certificates.gaussian_dp.point_grid`): the event's statistic is chosen for one tail and may
    order the rest of the trade-off curve worse. The choice is made on selection scores only, so the
    certification runs stay fresh. None when an input got no run. The estimate's δ is ``delta``, or
    :data:`audit.certificates.gaussian_dp.ESTIMATE_DELTA` when that is 0. ``scored``: the chosen candidate's
    scores of ``runs`` where made already (the event's), used when it is the statistic picked: scoring them again
    costs, on a wide output, a rounding and a pass over every run, and for a cross-fitted statistic
    (:class:`audit.statistics.classifier_critic.FoldMixture`) would draw its fold choices afresh — a valid
    certificate either way (independent post-processing), but the μ̲ then reads other scores than the event's.
    """
    if runs[0] is None or runs[1] is None:
        return None
    chosen = candidates[best]
    pool = [i for i in selection if selection[i] is not None and candidates[i].same_pair(chosen)]
    n_first, n_second = len(runs[0][0]), len(runs[1][0])
    grids = {i: point_grid(*selection[i], n_first, n_second, alpha) for i in pool}
    pick = max(pool, key=lambda i: (grids[i].predicted, i == best))
    statistic = candidates[pick]
    if pick != best or scored is None:
        scored = statistic.score(*runs[0]), statistic.score(*runs[1])
    return gdp_certificate(*scored, alpha=alpha, selection=selection[pick], delta=delta or ESTIMATE_DELTA,
                           grid=grids[pick])


def _successive_halving(candidates, runner, rng, runs, settings, claim=None, floor=MIN_SELECTION_RUNS):
    """Choose among ``candidates`` on fresh selection runs (:func:`_selection_plan`), each round's events by
    :func:`audit.search.claim_events.choose_events` for ``claim``.

    Returns (candidates considered, runs spent, the candidates still in, their event choices).
    """
    count, rounds = _selection_plan(len(candidates), runs, floor)
    alive = list(range(count))
    scores = {i: ([], []) for i in alive}
    used = 0
    choices = {}
    for _ in range(rounds):
        per_input = max(floor, runs // (rounds * 2 * len(alive)))
        for i in alive:
            for which in (0, 1):
                scores[i][which].append(candidates[i].scores(which, per_input, runner, rng))
            used += 2 * per_input
        choices.update(choose_events({i: (np.concatenate(scores[i][0]), np.concatenate(scores[i][1])) for i in alive},
                                     settings, claim))
        # Keep the better half (stable: ties keep the earlier candidate).
        alive = sorted(alive, key=lambda i: -choices[i].predicted)[:max(1, math.ceil(len(alive) / 2))]
        alive.sort()
        if len(alive) == 1:
            break
    selection = {i: (np.concatenate(scores[i][0]), np.concatenate(scores[i][1])) for i in alive}
    return count, used, alive, choices, selection


def event_test(*, secret: str, record: int, base: np.ndarray, values: np.ndarray, statistic, runner,
               rng: np.random.Generator, runs: int, alpha: float, delta: float = 0.0, claim=None):
    """:func:`event_search` over the pairs of ``values`` at ``record`` of ``base`` (:func:`value_pairs`).

    Returns None when ``values`` holds fewer than two values (no neighbouring pair).
    """
    if len(values) < 2:
        return None
    return event_search(value_pairs(base, record, values, statistic), secret=secret, runner=runner, rng=rng,
                        runs=runs, alpha=alpha, delta=delta, claim=claim)
