"""Pilot runs that score the pairs of a declared domain's families and keep the best.

Each candidate pair (:mod:`audit.search.pair_families`) gets ``pilot_runs`` runs of each of its two
databases. A statistic is fitted on half of them (a logistic regression on output features, and the
empirical log-ratio where the outputs take few values: :data:`audit.statistics.classifier.PAIR_STATISTICS`),
the event that would be certified is chosen on the statistic's scores of the other half
(:func:`audit.search.event_choice.choose_event`), and the pair is ranked by that choice's held-out
prediction of what ``runs`` certification runs would certify. The kept pairs join the audit's Θ and are
certified on fresh runs; the pilot runs are never certification runs, so choosing among the families
costs no α (Ding et al. 2018: choose on one set of runs, test on another).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, check_int
from mechanisms.errors import MechanismError
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.inputs.relation import ADD_REMOVE, relation_kind

from audit.search.event_choice import choose_event
from audit.search.event_search import choice_settings
from audit.search.input_domain import DeclaredDomain
from audit.search.pair_families import domain_pair_families
from audit.statistics.classifier import PAIR_STATISTICS

__all__ = ["PILOT_RUNS", "MAX_PILOT_PAIRS", "ScoredPair", "pilot_scores", "domain_pairs_by_pilot"]

#: Pilot runs of each database of a candidate pair.
PILOT_RUNS = 100
#: The fewest pilot runs of each database when a budget is given (:func:`domain_pairs_by_pilot`).
MIN_PILOT_RUNS = 20
#: The most candidate pairs the pilot scores (taken from the families in turn, so each family is tried).
MAX_PILOT_PAIRS = 64
#: Pairs of the pilot's first round that get a second round, and its runs per database as a multiple of the first's.
FINALISTS = 4
FINALIST_FACTOR = 4
#: Finalists whose predictions are within this of the best are ranked by their order in the families.
PILOT_TIE = 0.05
#: Mixed into the audit's seed for the pilot's runs, so they are independent of the audit's own.
PILOT_SEED_TAG = 0x646F6D61


@dataclass(frozen=True)
class ScoredPair:
    """A candidate pair, its family and what its pilot runs predict.

    Attributes
    ----------
    family : str
        The family's name.
    pair : NeighbouringPair
    predicted : float
        The held-out prediction of the best event's certified value on ``runs`` certification runs
        (:attr:`audit.search.event_choice.EventChoice.predicted`; larger is better).
    statistic : str
        The statistic that predicted it.
    """

    family: str
    pair: NeighbouringPair
    predicted: float
    statistic: str


def _in_turn(families, limit: int) -> list:
    """(family name, pair, (family's position, pair's position)): the families' first pairs, then their second
    ones, ..., at most ``limit``."""
    out, depth = [], 0
    while len(out) < limit and any(depth < len(f.pairs) for f in families):
        out += [(f.name, f.pairs[depth], (j, depth)) for j, f in enumerate(families) if depth < len(f.pairs)]
        depth += 1
    return out[:limit]


def _score(first_outputs, second_outputs, settings) -> tuple[float, str]:
    """(best prediction, its statistic) over the pair statistics fitted on the even runs, scored on the odd ones."""
    best = (-np.inf, "none")
    for kind, name, _, _ in PAIR_STATISTICS:
        fitted = kind.fit(first_outputs[::2], second_outputs[::2])  # None where the outputs do not suit it
        if fitted is None:
            continue
        choice = choose_event(fitted(first_outputs[1::2]), fitted(second_outputs[1::2]), **settings)
        if choice.predicted > best[0]:
            best = (float(choice.predicted), name)
    return best


def pilot_scores(families, runner, rng: np.random.Generator, *, runs: int, alpha: float, delta: float = 0.0,
                 claim=None, pilot_runs: int = PILOT_RUNS, max_pairs: int = MAX_PILOT_PAIRS,
                 refused: list | None = None) -> list:
    """The pairs of ``families`` scored on pilot runs, best first (within :data:`PILOT_TIE` of the best: the
    pair of the earlier family).

    Parameters
    ----------
    families : sequence of PairFamily
        Candidate pairs (:func:`audit.search.pair_families.domain_pair_families`); at most ``max_pairs``
        are scored, taken from the families in turn.
    runner : MechanismRunner
        Runs the mechanism (under add/remove, one that strips the presence column).
    rng : numpy.random.Generator
        Seeds the pilot runs.
    runs, alpha, delta, claim
        What the chosen pair will be certified with (:func:`audit.search.event_search.choice_settings`): the
        pairs are ranked by what their best event would certify there.
    pilot_runs : int
        Runs of each database of each pair (at least 4); the :data:`FINALISTS` best and the first family's
        pairs then get :data:`FINALIST_FACTOR` × ``pilot_runs`` more and are ranked on all their runs.

    Returns
    -------
    list of ScoredPair
        The finalists in their final order, then the rest in the first round's.
    """
    pilot_runs = check_int(pilot_runs, "pilot_runs", 4)
    max_pairs = check_int(max_pairs, "max_pairs", 1)
    settings = choice_settings(check_int(runs, "runs", 1), alpha, delta, claim)  # its claim decides the certificates
    candidates, outputs, errors = [], [], []
    for candidate in _in_turn(list(families), max_pairs):
        try:
            outputs.append(_pilot_outputs(candidate[1], pilot_runs, runner, rng))
        except (InputError, MechanismError) as error:  # e.g. an empty database where the mechanism needs a record
            if refused is None:
                raise
            refused.append((candidate[0], candidate[1], str(error).splitlines()[0]))
            errors.append(error)
            continue
        candidates.append(candidate)
    if not candidates:
        message = f"the mechanism ran on none of the domain's candidate pairs: {refused[0][2]}"
        if all(isinstance(error, MechanismError) for error in errors):  # the user's function failed: exit 1, not 2
            raise MechanismError(message, mechanism=errors[0].mechanism) from None
        raise InputError(message)
    predictions = [_score(*o, settings) for o in outputs]
    # Successive halving's second round (Karnin, Koren and Somekh 2013): the best few get FINALIST_FACTOR times
    # as many runs again and are ranked on all their runs, so the winner is not a pilot's lucky draw.
    order = sorted(range(len(candidates)), key=lambda i: (-predictions[i][0], i))
    # The first family's pairs (the domain's ends) always reach the second round: at a budget where many pairs
    # certify alike (the certificate saturates with the run count), the plainest one is kept.
    chosen = list(dict.fromkeys(order[:FINALISTS] + [i for i in order if candidates[i][2][0] == 0]))
    order = chosen + [i for i in order if i not in chosen]
    for i in chosen if len(candidates) > 1 else ():
        more = _pilot_outputs(candidates[i][1], FINALIST_FACTOR * pilot_runs, runner, rng)
        outputs[i] = tuple(np.concatenate([a, b]) for a, b in zip(outputs[i], more))
        predictions[i] = _score(*outputs[i], settings)
    finalists = sorted(chosen, key=lambda i: (-predictions[i][0], i))
    # Within PILOT_TIE of the best, the pair of the earlier family comes first (the domain's ends before a grid
    # value a float's width inside them): so close a difference is the pilot's noise.
    best = predictions[finalists[0]][0] if finalists else 0.0
    finalists.sort(key=lambda i: (0, candidates[i][2]) if predictions[i][0] >= best - PILOT_TIE
                   else (1, -predictions[i][0], i))
    return [ScoredPair(*candidates[i][:2], *predictions[i]) for i in finalists + order[len(chosen):]]


def _pilot_outputs(pair, runs: int, runner, rng) -> tuple:
    """(outputs of the first database, of the second): ``runs`` pilot runs of each, as float64 rows."""
    out = []
    for database in (pair.first, pair.second):
        batch = np.repeat(np.asarray(database, dtype=np.float64)[None], runs, axis=0)
        out.append(np.asarray(runner.sample(batch, rng, what="domain pilot run", budget="samples"), dtype=np.float64))
    return tuple(out)


class _CountingRunner:
    """A runner's :meth:`sample`, counting the runs made (for the note)."""

    def __init__(self, runner):
        self.runner, self.runs = runner, 0

    def sample(self, batch, rng, *, what: str, budget: str | None):
        self.runs += len(batch)
        return self.runner.sample(batch, rng, what=what, budget=budget)


def domain_pairs_by_pilot(mechanism, domain: DeclaredDomain, shape, relation: str, *, seed: int, runs: int,
                          alpha: float, delta: float = 0.0, claim=None, keep: int = 1, extra=(), steps: int = 2,
                          pilot_runs: int = PILOT_RUNS, max_pairs: int = MAX_PILOT_PAIRS, budget: int | None = None,
                          label: str = "mechanism", execution: ExecutionSettings | None = None,
                          allow_nan: bool = False, memory_names: dict | None = None) -> tuple[tuple, str]:
    """(the ``keep`` best pairs of the domain's families, a note saying how they were chosen).

    The families are :func:`audit.search.pair_families.domain_pair_families` of ``domain`` for databases of
    ``shape`` (n, k) under ``relation`` (with ``steps``, ``extra`` and ``allow_nan``: the missing-value family, run
    with NaN kept), scored by :func:`pilot_scores` on runs seeded by
    ``seed`` mixed with :data:`PILOT_SEED_TAG` (independent of the audit's runs). ``budget``, when given,
    bounds the pilot's runs in all (both rounds): ``pilot_runs`` is lowered to fit, but not below
    :data:`MIN_PILOT_RUNS`. ``memory_names``: how a memory refusal of the pilot's runner names the budget to lower
    (an audit gives ``audit.critic_cost.AUDIT_MEMORY_NAMES``: the pilot's runs are at most its ``samples``).
    """
    if not isinstance(domain, DeclaredDomain):
        raise InputError(f"argument 'domain' must be a DeclaredDomain, got {type(domain).__name__}")
    keep = check_int(keep, "keep", 1)
    n, k = shape
    families = domain_pair_families(domain, n, k, relation, steps=steps, extra=extra, allow_nan=allow_nan)
    if allow_nan:
        execution = dataclasses.replace(execution or ExecutionSettings(), allow_nan=True)
    tried = min(check_int(max_pairs, "max_pairs", 1), sum(len(f.pairs) for f in families))
    pilot_runs = check_int(pilot_runs, "pilot_runs", MIN_PILOT_RUNS)
    if budget is not None:
        share = 2 * (tried + FINALIST_FACTOR * min(FINALISTS + len(families[0].pairs), tried))  # runs per pilot run of each database
        pilot_runs = max(MIN_PILOT_RUNS, min(pilot_runs, check_int(budget, "budget", 1) // share))
    rng = np.random.default_rng(np.random.SeedSequence([check_int(seed, "seed", 0), PILOT_SEED_TAG]))
    with MechanismRunner(mechanism, label, execution, presence_column=relation_kind(relation) == ADD_REMOVE,
                         memory_names=memory_names) as pilot:
        runner, refused = _CountingRunner(pilot), []
        scored = pilot_scores(families, runner, rng, runs=runs, alpha=alpha, delta=delta, claim=claim,
                              pilot_runs=pilot_runs, max_pairs=max_pairs, refused=refused)
    kept = scored[:keep]
    note = (f"pairs from the declared domain {domain.text()} ({domain.source}): {tried} pairs of "
            f"{len(families)} families ({', '.join(f.name for f in families)}) scored on {pilot_runs} pilot runs of "
            f"each database (the best {min(FINALISTS, tried)} and the domain's ends on {1 + FINALIST_FACTOR} times as many; "
            f"{runner.runs} pilot runs in all); kept " + "; ".join(f"{s.pair.why} (family '{s.family}', predicted {s.predicted:.3g} by "
                                                f"the {s.statistic} statistic)" for s in kept)
            + ", which joins Θ as a two-point prior and is certified on fresh runs (the choice costs no α)"
            + (f"; {len(refused)} pair{'' if len(refused) == 1 else 's'} could not be run (first: {refused[0][1].why}: "
               f"{refused[0][2]})" if refused else "")
            # What the mechanism printed in the pilot's calls (kept off the terminal) and its NaN outputs, if any.
            + "".join(f"; in the pilot runs, {said}" for said in pilot.call_notes()))
    return tuple(s.pair for s in kept), note
