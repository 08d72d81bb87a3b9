"""The MI notion's verdict in plain words (:meth:`audit.result.AuditResult.mi_statement`), beside the claim's.

Read from an :class:`~audit.result.AuditResult` (any object with its fields): the verdict on the audited MI level, the
certified lower bound and the point estimate, and the largest certified DP ε lower bound with the confidence it holds
at (a union bound over the bounds it is the largest of). The JSON's ``statement`` and every report print these words.
"""

from __future__ import annotations

from mechanisms.papers import PUFFERFISH

#: The MI notions by the names a reader knows them by.
NOTION_NAMES = {"mi-dp": "MI-DP", "smi-dp": "SMI-DP", "mi-pp": "MI-PP"}


def level_number(value: float) -> str:
    """An MI level or the MI budget a claim implies (nats), as every place that shows it writes it: 4 significant
    figures, as the certified bounds are written, so that the summary table, the MI line, the headline, the reports'
    facts and the notes before running give one number alike (2.396 each, never 2.39594 beside 2.396)."""
    return f"{value:.4g}"


def bound_words(value: float | None, why: bool = True) -> str:
    """A certified MI lower bound (nats) in words, wherever a sentence gives it (the MI line, the MI test's detail):
    a negative one is no evidence and reads as 0, its raw value said beside it as sampling noise (the bound is the
    estimate less its margin of error, and MI is never negative); ``why``: say that MI is never negative (left to the
    estimate's sentence where that follows, :func:`negative_estimate_words`). The JSON keeps the raw value."""
    if value is None:
        return "none"
    if not value < 0:
        return f"{value:.4g} nats"
    return f"0 nats: no evidence (raw bound {value:.4g}, below 0 through sampling noise" + (
        ": MI is never negative)" if why else ")")


def estimate_words(value: float) -> str:
    """An MI point estimate (nats) in words beside a certified bound (the MI test's detail): a negative one is
    sampling noise, said so as the tables' cells say it (:func:`audit.report.text.estimate_text`); the JSON keeps it."""
    return f"{value:.4g} nats" + (" (below 0: noise)" if value < 0 else "")


def _level_of(test, alpha: float) -> float:
    """The level an event test's bound was certified at: its ``alpha``, else (a result built without it) ``alpha``."""
    level = getattr(test, "alpha", None)
    return alpha if level is None else level


def negative_estimate_words(result) -> str:
    """The sentence a negative MI point estimate needs, "" for any other: MI is never negative, so an estimate below 0
    (a held-out estimate of a lower bound on MI, Donsker and Varadhan 1983, or a classifier's) is below it through
    sampling noise, and the verdict reads the certified lower bound, not the estimate. The JSON keeps the value."""
    if result.estimate is None or not result.estimate < 0:
        return ""
    reads = ("" if result.estimate_only or result.lower_bound is None
             else ", and the test reads the certified lower bound, not the estimate")
    return f" The point estimate is below 0 only through sampling noise: MI is never negative{reads}."


def mi_statement(result, dp_bounds: bool = True) -> str:
    """The MI notion's verdict on ``result`` in plain words; ``dp_bounds``: end with the largest certified DP ε lower
    bound (:func:`_dp_bounds_text`)."""
    confidence = f"{100 * (1 - result.alpha):.4g}%"
    name = NOTION_NAMES[result.notion]
    theta = "under the declared prior" + ("s" if len(result.priors) > 1 else "")
    if result.epsilon is None:
        bound = bound_words(result.lower_bound, why=not negative_estimate_words(result))
        text = (f"No MI level was audited (the claim implies no MI budget, and no MI level was given with --epsilon): certified "
                f"{name} lower bound {bound}, point estimate {result.estimate:.4g} nats."
                + negative_estimate_words(result))
        return text + (_dp_bounds_text(result) if dp_bounds else "")
    if result.estimate_only:
        return (f"No certificate was possible (the public information is continuous and was not declared "
                f"independent of the secret: for DP, declare independent records with --independent-rows; "
                f"for MI-PP, [secret] independent = true or w_discrete = true): "
                f"the estimate {result.estimate:.4g} nats is {'above' if result.estimate > result.epsilon else 'at most'} "
                f"ε = {level_number(result.epsilon)}.{negative_estimate_words(result)} This is an estimate only, with "
                "no error guarantee.")
    level = level_number(result.epsilon)
    if result.violation:
        text = (f"With probability at least {confidence} over this audit's randomness, the mechanism is not "
                f"{level_number(result.epsilon)}-{name} {theta}: the certified lower bound on the leakage is "
                f"{result.lower_bound:.4g} nats > ε = {level_number(result.epsilon)}.")
    else:
        bound = bound_words(result.lower_bound, why=not negative_estimate_words(result))
        text = (f"No violation of {level_number(result.epsilon)}-{name} was detected {theta} (certified lower bound {bound}, "
                f"point estimate {result.estimate:.4g} nats).{negative_estimate_words(result)} This is not a proof "
                f"of privacy: at this sample budget a leakage above {level} nats can still leave the certified lower "
                f"bound below {level}, and other priors were not examined.")
    return text + (_dp_bounds_text(result) if dp_bounds else "")


def _dp_bounds_text(result) -> str:
    """The MI statement's last sentence, "It is not ε-DP for any ε < B (its source, certified at 1 − a).", for the
    largest B of the DP ε lower bounds certified (the MI bound's, Theorem 1; the event test's; the float-bit event
    test's); empty where none is positive.

    Which bound is the largest depends on the data, so B is false when any of those computed is: a is the sum of
    their levels (union bound), each its certificate's (the MI bound at ``claim_alpha["mi"]`` where the MI test has
    a share, else at the level of its audit; each event test at its ``alpha``). Without a claim each is certified
    at α, so three bounds are quoted at 1 − 3α; with a claim whose tests share α they sum to α. Where the audit
    whose bounds are shown was itself chosen by the data (a sequential audit's deciding look, the refuting one of
    two relations: :func:`_shown_alpha`), its bounds stand for those of every look or relation, and the sum is
    scaled from its level to the overall ``alpha`` (each look or relation splitting its level as the shown one
    does; union bound over them).
    """
    shown = _shown_alpha(result)
    float_bound = None if result.float_event_test is None else result.float_event_test.epsilon_lower_bound
    computed = [(b, source, level) for b, source, level in (
        (result.dp_epsilon_lower_bound_mi, f"from the MI bound, {PUFFERFISH.named}, Theorem 1",
         (result.claim_alpha or {}).get("mi") or shown),
        (result.dp_epsilon_lower_bound_event, "from the event test", _level_of(result.event_test, shown)),
        (float_bound, "from the float-bit event test, through the float representation of the output",
         _level_of(result.float_event_test, shown))) if b is not None]
    bounds = [(b, source) for b, source, _ in computed if b > 0]
    if not bounds:
        return ""
    best, source = max(bounds)
    level = min(sum(level for _, _, level in computed) * result.alpha / shown, 1.0)
    # Said where it lowers the confidence below the audit's 1 − α (their levels are then not shares of α).
    among = (f": the largest of {len(computed)} bounds, union bound over their levels"
             if len(computed) > 1 and level > result.alpha * (1 + 1e-9) else "")
    return f" It is not ε-DP for any ε < {best:.4g} ({source}, certified at {100 * (1 - level):.4g}%{among})."


def _shown_alpha(result) -> float:
    """The level of the audit whose bounds ``result`` shows: a sequential audit's deciding look's α_k, under both
    relations the shown relation's α/2, else ``alpha``."""
    if result.sequential:
        return float(result.sequential["schedule"][result.sequential["looks_run"] - 1]["alpha"])
    if result.relations:
        shown = result.relations.get("relation") or result.relations["tested"][0]
        return float(result.relations["alpha_each"][shown])
    return result.alpha
