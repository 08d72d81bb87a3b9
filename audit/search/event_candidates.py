"""The event search's candidate pairs, built from the MI test's critics and the audit's draws.

The chosen critic is the one the event tests build on (:func:`audit.certificates.secret_bounds.event_critic`: the
largest estimate on the MI sample's held-out split where it is positive and above the MI test's candidate's, else
that candidate).

Each two-point prior of Θ on a neighbouring pair gives the statistics of its cell (its critics' log-ratio,
the logistic, empirical, float-bit, support and counting statistics, or the cross-fitted classifiers); a
chosen critic whose prior is not such a two-point prior gives structured pairs on its record (StatDP
patterns), the float-bit statistics of the first of them on pilot runs, and pairs of its record's values on a
base database (:func:`event_candidates`). The engine (:mod:`audit.engine`) runs the event search
(:func:`audit.search.event_search.event_search`) on them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from estimators.critic_problems import pad_columns
from estimators.resident import rows_of
from mechanisms.inputs.missing_values import distinct_rows
from mechanisms.inputs.relation import presence_pair
from mechanisms.outputs.encoding import encoder_of

from audit.certificates.secret_bounds import cell_critic
from audit.statistics.classifier_critic import cross_fitted_candidates
from audit.statistics.classifier import PAIR_STATISTICS, pair_statistic
from audit.statistics.float_bits import FLOAT_STATISTIC_KINDS, FLOAT_STATISTICS, has_fine_bits, leaking_record
from audit.statistics.counting import COUNTING_STATISTICS
from audit.statistics.support import SUPPORT_STATISTICS, SupportLogRatio
from audit.statistics.pair_candidates import (EARLY_LOOK_SELECTION_RUNS, MIN_SELECTION_RUNS, PairCandidate, draws_of_first,
                                              held_out_scores, neighbouring_pair_of, value_pairs)
from audit.statistics.secret_critics import public_fixed, secret_values
from audit.search.pair_probe import left_out, probe_rng, refused_pairs
from audit.search.prior_search import structured_pairs

__all__ = ["STRUCTURED_EVENT_PAIRS", "bit_parts", "STRUCTURED_PROBE_TAG", "BIT_PILOT_RUNS", "event_candidates",
           "accepted_structured_pairs", "pair_statistics", "critic_statistic", "float_bit_candidates",
           "selection_floor"]

#: Structured pairs (StatDP patterns) the event search tries on the chosen critic's record under a
#: declared prior that is not a two-point prior (the critic generalizes over the other records).
STRUCTURED_EVENT_PAIRS = 8


#: Mixed into the probe's seed for the event search's structured pairs (:func:`accepted_structured_pairs`), apart
#: from the prior search's probe.
STRUCTURED_PROBE_TAG = 0x65766E74


#: Runs of each input of the first structured pair on which the float-bit statistics are fitted
#: (:func:`float_bit_candidates`).
BIT_PILOT_RUNS = 2000


def bit_parts(fitted, first_outputs, second_outputs, encoder) -> list:
    """Which named parts of a structured output (a dict's values by key, a tuple's by position:
    :class:`mechanisms.outputs.encoding.OutputEncoder`) carry the bits a fitted float-bit statistic tells the two
    inputs apart by (``["y{'ones'}"]``): the encoder's value buckets whose codes differ most between the inputs (at
    least half the largest total-variation distance:
    :meth:`audit.statistics.float_bits._BitsLogRatio.column_separation`), three at most; [] for an output of one
    number, without an encoder, or where no bucket's codes differ."""
    if encoder is None or not hasattr(fitted, "column_separation"):
        return []
    separation = fitted.column_separation(first_outputs, second_outputs, encoder.width)
    if not separation.size or not separation.max() > 0:
        return []
    strongest = [int(j) for j in np.argsort(-separation, kind="stable") if separation[j] >= separation.max() / 2]
    names = [" + ".join(encoder.names_in(j)[0]) for j in strongest if encoder.names_in(j)[0]][:3]
    return [] if names == ["y"] else names


def bit_parts_words(fitted, first_outputs, second_outputs, encoder) -> str:
    """:func:`bit_parts` in words (``", read on the bits of y{'ones'}, …"``); "" where it names none."""
    names = bit_parts(fitted, first_outputs, second_outputs, encoder)
    if not names:
        return ""
    return f", read on the bits of {', '.join(names)} (the output's parts whose bits differ most between the databases)"


def float_bit_candidates(pair, record, runner, rng, runs, device=None, encoder=None):
    """The float-bit statistics (:data:`audit.statistics.float_bits.FLOAT_STATISTICS`) of one structured pair,
    fitted on ``runs`` pilot runs of each of its databases, as event-search candidates; and the runs made.

    Under a prior that is not a two-point prior the MI sample holds no draws of the pair's two databases,
    and the critic, standardized in float64, never sees an output's low bits; these statistics do
    (Mironov 2012). The pilot runs come from a generator spawned from ``rng``'s seed (``rng``'s own
    stream is not moved, so an audit whose outputs suit none of them draws what it drew without them);
    they are neither selection nor certification runs, so the choice among candidates still costs no α.
    ``device``: where the statistics compute their codes (:func:`pair_statistics`). ``encoder``: the mechanism's output
    encoder, whose names say which parts of a structured output carry the bits (:func:`bit_parts_words`).
    """
    pilot = np.random.default_rng(rng.bit_generator.seed_seq.spawn(1)[0])
    outputs = []
    for database in (pair.first, pair.second):
        outputs.append(np.asarray(runner.runs_of(database, runs, pilot, what="float-bit statistic run",
                                                  budget="event_runs")[1]))
    candidates = []
    for kind, _, label, what in FLOAT_STATISTICS:
        fitted = kind.fit(*outputs, device=device)  # None where the outputs are integers or their codes too many
        if fitted is not None:
            words = f"{what} on {runs} pilot runs of each database" + bit_parts_words(fitted, *outputs, encoder)
            candidates.append(PairCandidate(pair.first, pair.second, record,
                                            pair_statistic(fitted, pair.first[record], pair.second[record]),
                                            f"{pair.why}; statistic: {words}", statistic_label=label,
                                            statistic_words=words))
    return candidates, 2 * runs


def selection_floor(early: bool) -> int:
    """The fewest selection draws per input the event test chooses on: lower at an early look
    (:func:`audit.engine._run_audit`)."""
    return EARLY_LOOK_SELECTION_RUNS if early else MIN_SELECTION_RUNS


def event_candidates(spec, candidate, fits, data, rng, runner, early=False, device=None):
    """The event search's candidate pairs (:func:`audit.search.event_search.event_search`), in order:
    each two-point prior of Θ on a neighbouring pair (the declared ones, the user's and a catalog's
    pairs, then the prior search's structured and random pairs) with its own critic (the chosen
    critic for its cell); then, when the chosen critic's prior is not such a two-point prior,
    structured pairs on its record (StatDP patterns, column levels read from the audit's draws of
    that prior), the float-bit statistics of the first of them (:func:`float_bit_candidates`, when the MI
    sample's outputs hold bits below the coarse grid: :func:`audit.statistics.float_bits.has_fine_bits`) and
    pairs of its values on a base database of the validation split. Returns (the candidates, the runs made
    by purpose — ``"pair_probe"``, the structured pairs' probe, and ``"event_statistics"``, the float-bit statistics'
    pilot runs — and notes on the structured pairs the mechanism refused: :func:`accepted_structured_pairs`).

    Parameters
    ----------
    spec : AuditSpec
        The audit (its mechanism's encoder, ``arithmetic``, ``event_runs``, ``presence_column``).
    candidate : audit.certificates.secret_bounds.Candidate
        The event tests' critic (:func:`audit.certificates.secret_bounds.event_critic`).
    fits : SecretFits
        The audit's critic fits, one cell per secret and prior.
    data : list of (databases, outputs)
        The MI sample of each prior of Θ.
    rng : numpy.random.Generator
        The audit's mechanism generator: the structured pairs are drawn from it, the float-bit pilot from a
        generator spawned from its seed.
    runner : MechanismRunner
        Runs the float-bit pilot.
    early : bool
        An early look of a sequential audit (:func:`selection_floor`).
    device : torch.device, optional
        The audit's torch device (:func:`pair_statistics`).
    """
    pairs, runs, notes = [], {}, []
    for i, cell in enumerate(fits.cells):
        if cell.strategy == "certify" and neighbouring_pair_of(cell.prior, cell.record) is not None:
            critics = [candidate] if candidate.cell is cell else []
            full = cell_critic(fits, i)  # the cell's full critic (else its best slice)
            if full is not None and not any(c.kind == full.kind and c.index == full.index for c in critics):
                critics.append(full)
            if critics:
                pairs += pair_statistics(cell, critics, fits, data[cell.prior_index],
                                         getattr(encoder_of(spec.mechanism), "support_columns", None),
                                         selection_floor(early), device, encoder_of(spec.mechanism))
    cell, kind = candidate.cell, candidate.kind
    if neighbouring_pair_of(cell.prior, cell.record) is None:
        dbs, _ = data[cell.prior_index]
        statistic = critic_statistic(candidate, fits)
        structured = structured_pairs(cell.prior, STRUCTURED_EVENT_PAIRS, rng, records=(cell.record,), observed=dbs)
        runs["pair_probe"] = 2 * len(structured)
        structured, note = accepted_structured_pairs(structured, cell.record, runner, spec.seed, spec.presence_column)
        notes += [note] if note else []
        pairs += [PairCandidate(p.first, p.second, cell.record, statistic, p.why) for p in structured]
        # The MI sample's outputs (drawn already: reading them costs no run) hold bits below the coarse grid: the bit
        # statistics fit nothing on integers or values snapped to that grid, so their pilot runs are spent only then.
        if structured and spec.arithmetic == "float" and has_fine_bits(data[cell.prior_index][1]):
            bit_record, bit_pair = _bit_pair(spec, cell, fits, data, structured[0], rng, runner, runs, notes)
            # fitted on the add/remove pair they are certified on (the rewrite below keeps such a pair as it is)
            bit_pair = _presence_form(bit_pair, bit_record) if spec.presence_column else bit_pair
            bit_candidates, runs["event_statistics"] = float_bit_candidates(
                bit_pair, bit_record, runner, rng, min(spec.event_runs, BIT_PILOT_RUNS), device,
                encoder_of(spec.mechanism))
            pairs += bit_candidates
        validation = fits.fit(kind).split[1]
        values = distinct_rows(dbs[validation[:256], cell.record, :])[:4]
        pairs += value_pairs(dbs[validation[0]], cell.record, values, statistic,
                             "values and base database from the validation split")
    if spec.presence_column:  # add/remove: every candidate a record present against absent
        said = "the last attribute is the record's presence (1 present, 0 absent)"
        pairs = [replace(p, origin=f"{p.origin}; {said}" if p.origin else said) for p in pairs]
        pairs = [p if p.held_out is not None else _presence_form(p, p.record) for p in pairs]
    return pairs, runs, notes


def _bit_pair(spec, cell, fits, data, pair, rng, runner, runs, notes) -> tuple:
    """(record, structured pair) the float-bit statistics are fitted on: ``pair`` on the chosen critic's record, or
    the first structured pair of the record whose bits the MI sample's outputs tell apart plainly more
    (:func:`audit.statistics.float_bits.leaking_record`: the critics read values, not bits), probed as the others
    are (its runs added to ``runs["pair_probe"]``, a refusal to ``notes``)."""
    dbs, outputs = data[cell.prior_index]
    records = [c.record for c in fits.cells if c.prior_index == cell.prior_index and c.record is not None]
    record = leaking_record(dbs, outputs, records, cell.record)
    if record == cell.record:
        return cell.record, pair
    other = structured_pairs(cell.prior, 1, rng, records=(record,), observed=dbs)
    runs["pair_probe"] += 2 * len(other)
    other, note = accepted_structured_pairs(other, record, runner, spec.seed, spec.presence_column)
    notes += [note] if note else []
    return (record, other[0]) if other else (cell.record, pair)


def accepted_structured_pairs(structured, record: int, runner, seed: int, presence: bool = False) -> tuple:
    """(the ``structured`` pairs the mechanism runs on, a note on those it refused or None).

    StatDP's patterns set the record to every column's observed low or high end at once, a row the prior may
    never draw and a mechanism restricting its records may refuse; each pair (under add/remove, ``presence``,
    the databases :func:`_presence_form` makes of it, which are the ones run) is run once on each database
    (:func:`audit.search.pair_probe.refused_pairs`) on a generator of its own (:data:`STRUCTURED_PROBE_TAG`), so an
    audit whose pairs are all accepted draws what it drew without the probe.

    Raises
    ------
    MechanismError
        When the mechanism fails on a pair other than by refusing it.
    """
    if not structured:
        return structured, None
    run = [_presence_form(p, record) for p in structured] if presence else structured
    refused = refused_pairs(run, runner, probe_rng(seed, STRUCTURED_PROBE_TAG), "structured pair probe run")
    if not refused:
        return structured, None
    kept, _, note = left_out(structured, refused, "structured", f" on record {record}")
    return kept, f"event search: {note}"


def _presence_form(pair, record: int):
    """``pair`` with the add/remove databases :func:`mechanisms.inputs.relation.presence_pair` makes of its two."""
    return replace(pair, **dict(zip(("first", "second"), presence_pair(pair.first, pair.second, record))))


def pair_statistics(cell, critics, fits, data, support_columns=None, min_draws: int = MIN_SELECTION_RUNS,
                     device=None, encoder=None) -> list:
    """The event-test candidates of a cell whose prior is a two-point prior on a neighbouring pair.

    With classifier critics, their classifiers cross-fitted on the MI sample
    (:func:`audit.statistics.classifier_critic.cross_fitted_candidates`). Otherwise the statistics: each
    critic's T(a, y) − T(b, y) (the event tests' chosen critic when it is this
    cell's, which may be a slice, and the cell's full critic), the log-odds of a logistic
    regression fitted on the first critic's training split, and, for outputs that take few values
    there, their empirical log-ratio (:mod:`audit.statistics.classifier`),
    each with its scores on the MI sample's draws that none of them was trained on (the
    validation and test splits: held-out draws of the two databases, on which the event search
    chooses among them at no run's cost). ``support_columns``: the encoder's support block, the support
    statistic's columns (:meth:`audit.statistics.support.SupportLogRatio.fit`). ``min_draws``: the fewest
    held-out draws per input the event is chosen on (:func:`audit.statistics.pair_candidates.held_out_scores`).
    ``device``: the audit's torch device, where the float-bit statistics compute their codes
    (:func:`audit.statistics.float_bits.device_code_rows` off the CPU). ``encoder``: the mechanism's output encoder,
    whose names say which parts of a structured output carry a float-bit statistic's bits (:func:`bit_parts_words`).
    """
    if fits.classifiers:
        # Classifier critics: the statistics are their classifiers, cross-fitted and scored out of fold.
        return cross_fitted_candidates(cell, fits.classifiers[fits.cells.index(cell)], min_draws,
                                       counts_first=min_draws < MIN_SELECTION_RUNS)
    first, second, record = cell.prior.first, cell.prior.second, cell.record
    dbs, outputs = data
    train = fits.fit(critics[0].kind).split[0]
    # The draws that no critic here was trained on (a full and a sliced fit split the sample apart).
    trained = np.zeros(len(dbs), dtype=bool)
    for critic in critics:
        trained[fits.fit(critic.kind).split[0]] = True
    held = np.flatnonzero(~trained)
    origin = f"the pair of prior {cell.prior_index} of Θ"
    # A classifier critic (no scorer) orders outputs as its classifier does, which is offered below.
    # (statistic, label, its words or "", where it comes from in the event's description)
    statistics = [(critic_statistic(critic, fits), "T(a, y) − T(b, y)", "" if critic.kind == "full" else critic.label,
                   origin + ("" if critic.kind == "full" else f"; statistic: {critic.label}")) for critic in critics
                  if fits.fit(critic.kind).scorer is not None]
    is_first = draws_of_first(dbs[train], first, record)
    if is_first.any() and not is_first.all():
        # Rows of the MI sample, whose device copy the critics' v reads (estimators.critic_problems.CriticColumns):
        # a statistic's copy of them is gathered on the device from it (estimators.resident.rows_of).
        first_outputs, second_outputs = rows_of(outputs, train[is_first]), rows_of(outputs, train[~is_first])
        for kind, _, label, what in PAIR_STATISTICS + FLOAT_STATISTICS + SUPPORT_STATISTICS + COUNTING_STATISTICS:
            extra = ({"support_columns": support_columns} if kind is SupportLogRatio else
                     {"device": device} if kind in FLOAT_STATISTIC_KINDS else {})
            fitted = kind.fit(first_outputs, second_outputs, **extra)  # None where the outputs do not suit it
            if fitted is not None:
                named = f" ({fitted.describe()})" if hasattr(fitted, "describe") else ""  # a counting statistic's features
                words = f"{what} on the critic's training split{named}"
                if kind in FLOAT_STATISTIC_KINDS:  # a structured output's parts that carry the bits
                    words += bit_parts_words(fitted, first_outputs, second_outputs, encoder)
                statistics.append((pair_statistic(fitted, first[record], second[record]), label, words,
                                   f"{origin}; statistic: {words}"))
    held_dbs, held_outputs = dbs[held], rows_of(outputs, held)  # one copy of the held-out draws for every statistic
    return [PairCandidate(first, second, record, statistic, why, statistic_label=label, statistic_words=words,
                          held_out=held_out_scores(statistic, first, second, record, held_dbs, held_outputs,
                                                   min_draws))
            for statistic, label, words, why in statistics]




def critic_statistic(candidate, fits):
    """The chosen critic as a log-likelihood-ratio statistic between two values of its record:
    ``statistic(a, b, dbs, outputs) = T(a, y, rest) − T(b, y, rest)`` on each row."""
    cell, kind, index = candidate.cell, candidate.kind, candidate.index
    scorer = fits.fit(kind).scorer
    record = cell.record
    width_u = scorer.input_widths(index)[0]

    critics, fixed = candidate.critics, public_fixed(cell.pair, record, cell.others, cell.prior)

    def scores(value, dbs, blocks):
        # T(value, y, rest) on each row. The database copy and the critic's inputs are this call's own: they are
        # freed when it returns, before the other value's are built, so one value's arrays are alive at a time
        # (the event scoring that mechanisms.execution.memory.audit_memory_parts counts), not two.
        batch = dbs.copy()
        batch[:, record] = value
        g, w = secret_values(cell.pair, record, batch, cell.others, cell.prior, cell.missing, public=not fixed)
        # v as its column blocks (padded with zero columns to its width by the scorer); w's where it depends on
        # the value, built here.
        v = blocks if w is None else blocks + (critics.block("z", w, index),)
        return scorer(index, pad_columns(critics.block("x", g, index), width_u), v)

    def statistic(first, second, dbs, outputs):
        # v's blocks that do not depend on the value, the outputs' and w's where it is the other records
        # (public_fixed), built once: the same arrays for both values, so the scorer copies them to its device
        # once (estimators.resident.device_columns) and a sliced critic projects them once.
        blocks = (critics.block("y", outputs, index),)
        if fixed:
            blocks += (critics.block("z", secret_values(cell.pair, record, dbs, cell.others, cell.prior,
                                                        cell.missing)[1], index),)
        first_scores = scores(first, dbs, blocks)
        return first_scores - scores(second, dbs, blocks)
    return statistic
