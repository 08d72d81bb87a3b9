"""One probe run of each database of the searched pairs: pairs the mechanism refuses are left out.

The prior search's structured pairs (:func:`audit.search.prior_search.structured_pairs`, StatDP's patterns),
and the event search's on the chosen critic's record under a prior that is not a two-point prior
(:func:`audit.search.event_candidates.event_candidates`), set a record to every column's observed low or high end
at once, rows the prior itself may never draw. A mechanism that restricts its records (a one-hot histogram: at most
one 1 per record) refuses such a row with an error about its argument. Restricting the patterns to the prior's rows would drop the ones that find the
sparse vector technique's bugs, so each searched pair is instead run once on each of its databases (bounded by
the runner's ``--timeout`` and retries, as the domain pilot's runs are: :mod:`audit.search.family_pilot`) and a
pair the mechanism refuses is left out, with a note, and the search's next candidates
(:func:`audit.search.prior_search.spare_pairs`) are probed in its place, at most as many as were asked for
(:data:`SPARE_PROBES_PER_PAIR`), until the pairs run on are as many as asked or the spares run out. Only a refusal of the record values counts (the mechanism
raised ``InputError`` or ``ValueError``, the errors that say an argument's value is not accepted, which the runner's
error says by its ``refused`` flag: :attr:`mechanisms.errors.MechanismError.refused`); any other
failure (a bug raising on valid input, a hang, a wrong shape) is raised as the mechanism's failure. The probe's
runs are seeded apart from the audit's (:data:`PROBE_SEED_TAG`, and a tag of its own for each probe besides the
prior search's: :func:`probe_rng`), so an audit whose pairs are all accepted draws what it drew without the probe.

**In a sequential audit** (:mod:`audit.gating.sequential`) every look probes and refills as a fixed audit does, within
the plan its schedule fixed before any run: each look plans 2 · ``prior_search`` probe runs and the MI runs of
``prior_search`` searched priors (:func:`audit.gating.look_runs.look_runs`). A refused pair's probe makes no counted
run (the runner counts the outputs it returns: :attr:`mechanisms.execution.runner.MechanismRunner.calls`), and the
spares kept replace refused pairs one for one, so the pairs kept cost at most the planned probe runs (two each) and MI
runs. The probe's generator is the same at every look, so a later look's probe gets the first look's runs again from
the runner's cache; the pairs Θ gets are chosen on the probe's runs, which no test sees, never on a look's data: the
schedule, its α split and each look's level are those of the audit with no pair refused. Where nothing is refused no
spare is drawn (:func:`audit.search.prior_search.spare_pairs` is called only on a refusal) and the audit is the one
without the refill.

**Refused calls are outside ``--max-runs``.** A refused pair's calls return nothing and are not counted against
``--max-runs``: counting them would make a look's plan depend on which pairs the mechanism refuses, known only once it
has run. Their bound: at each look (each probes again: a refusal is not cached) at most N searched pairs and
:data:`SPARE_PROBES_PER_PAIR` · N spares are refused, each one job of its two databases, which the runner tries once
(a refusal is never retried: :func:`mechanisms.execution.attempts.run_tasks`), that attempt also locating the
database refused (at most two more calls of one database): at most 2 · 2 calls each, whatever ``--retries``. So an
audit calls the mechanism on at most looks · 2N · (1 + :data:`SPARE_PROBES_PER_PAIR`) · 2 databases beyond its
counted runs for refusals (32 a look at N = 4). Neither the schedule nor any α share changes: no test sees a probe's
run. A scan's cases search no pairs (``prior_search`` is 0) and make no such call.
"""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError, check_int
from mechanisms.errors import REFUSAL_ERRORS, MechanismError, StatisticError

__all__ = ["REFUSAL_ERRORS", "PROBE_SEED_TAG", "SPARE_PROBES_PER_PAIR", "refusal", "probe_rng", "refused_pairs",
           "left_out",
           "probe_searched_pairs"]

#: Mixed into the audit's seed for the probe's runs, so they are independent of the audit's own.
PROBE_SEED_TAG = 0x70726F62
#: The most spare candidates probed in place of refused pairs, per pair searched.
SPARE_PROBES_PER_PAIR = 1
_WHAT = "prior search probe run"


def refusal(error: BaseException) -> str | None:
    """The first line of ``error`` when it is the mechanism's refusal of its databases' values, else None.

    A refusal is a :class:`~mechanisms.errors.MechanismError` whose ``refused`` flag says that the mechanism's call
    raised one of :data:`REFUSAL_ERRORS` (set where its exception was wrapped, kept through the runner's retries and
    worker processes); the flag says so, not the message. A statistic's error, a hang or a wrong output is not one.
    """
    if not isinstance(error, MechanismError) or isinstance(error, StatisticError) or not error.refused:
        return None
    return str(error).splitlines()[0] if str(error) else ""


def probe_rng(seed: int, *tags: int) -> np.random.Generator:
    """The probe's generator: ``seed`` mixed with :data:`PROBE_SEED_TAG` (and ``tags``, one per probe besides the
    prior search's), so its runs are independent of the audit's own draws."""
    return np.random.default_rng(np.random.SeedSequence([check_int(seed, "seed", 0), PROBE_SEED_TAG, *tags]))


def refused_pairs(pairs, runner, rng: np.random.Generator, what: str) -> list:
    """[(index, the mechanism's refusal in words)] of the ``pairs`` whose databases it refuses (:func:`refusal`).

    Each pair's two databases are one job of one run each, called ``what`` in the runner's messages, spending
    no run budget.

    Raises
    ------
    MechanismError
        When the mechanism fails on a pair other than by refusing it.
    """
    refused = []
    for i, pair in enumerate(pairs):
        batch = np.stack([np.asarray(pair.first, dtype=np.float64), np.asarray(pair.second, dtype=np.float64)])
        try:
            runner.sample(batch, rng, what=what, budget=None)
        except MechanismError as error:
            said = refusal(error)
            if said is None:
                raise  # a failure on the pair, not a refusal of its values: the mechanism is reported as failing
            refused.append((i, said))
    return refused


def left_out(pairs, refused, kind: str, where: str = "") -> tuple[list, str, str]:
    """(the ``pairs`` not refused, the first refusal in words, the note on those left out): every probe's words.

    Parameters
    ----------
    pairs : sequence of NeighbouringPair
        The probed pairs.
    refused : list of (int, str)
        :func:`refused_pairs`' answer on ``pairs``, not empty.
    kind, where : str
        The pairs' name before and after "pair(s)" in the note: ``"searched"``; ``"structured"`` and
        ``" on record 3"``.

    Returns
    -------
    tuple
        The kept pairs in their order; ``"first: <the pair's why>: <its refusal>"``; and ``"<k> of <n> <kind>
        pairs<where> left out, the mechanism refused their record values in one probe run of each database
        (<first>)"`` ("pair" and "its" for one).
    """
    dropped = {i for i, _ in refused}
    kept = [pair for i, pair in enumerate(pairs) if i not in dropped]
    first = f"first: {pairs[refused[0][0]].why}: {refused[0][1]}"
    count = len(pairs)
    return kept, first, (f"{len(refused)} of {count} {kind} pair{'' if count == 1 else 's'}{where} left out, the "
                         f"mechanism refused {'its' if len(refused) == 1 else 'their'} record values in one probe run "
                         f"of each database ({first})")


def probe_searched_pairs(pairs, runner, seed: int, spares=None) -> tuple[list, str | None, int]:
    """(the pairs the mechanism runs on, a note on those left out or None, the pairs probed).

    Parameters
    ----------
    pairs : sequence of NeighbouringPair
        The prior search's pairs (:func:`audit.search.prior_search.candidate_pairs`; under add/remove, as
        :func:`audit.search.prior_search.add_remove_pairs` made them).
    runner : MechanismRunner
        The audit's runner: each pair's two databases are one job of one run each.
    seed : int
        The audit's seed, mixed with :data:`PROBE_SEED_TAG` for the probe's runs.
    spares : callable, optional
        ``spares(count)``: up to ``count`` further candidates of the search
        (:func:`audit.search.prior_search.spare_pairs`), called only where a pair is refused; each is probed in
        turn, the accepted ones join, until as many pairs as ``pairs`` are kept. None: no refill.

    Raises
    ------
    MechanismError
        When the mechanism fails on a pair other than by refusing it (:func:`refusal`).
    InputError
        Naming ``--prior-search`` when the mechanism refuses every searched pair and every spare.
    """
    pairs = list(pairs)
    if not pairs:
        return pairs, None, 0
    rng = probe_rng(seed)
    refused = refused_pairs(pairs, runner, rng, _WHAT)
    if not refused:
        return pairs, None, len(pairs)
    kept, first, note = left_out(pairs, refused, "searched")
    probed = accepted = 0
    # The spares, in the search's order, each probed as the searched pairs were (the probe's generator goes on).
    for spare in ([] if spares is None else spares(SPARE_PROBES_PER_PAIR * len(pairs))):
        if len(kept) == len(pairs):
            break
        probed += 1
        if not refused_pairs([spare], runner, rng, _WHAT):
            kept.append(spare)
            accepted += 1
    if probed:
        refill = (f"; {accepted} of {probed} further candidate{'' if probed == 1 else 's'} of the search probed in "
                  "their place accepted")
    elif spares is None:
        refill = "; no further candidate was probed in their place"
    else:
        refill = "; the search had no further candidate to probe in their place"
    if not kept:
        raise InputError(f"--prior-search {len(pairs)}: the mechanism refused every searched pair ({first}{refill}); "
                         "a larger --prior-search reaches its later patterns and the prior's random pairs; or give --prior-search 0")
    return kept, (f"prior search: {note}{refill}: {len(kept)} of the {len(pairs)} searched pairs asked for join Θ"), \
        len(pairs) + probed
