"""The audit engine: sample, train one batched critic ensemble, select, certify, decide.

1. Draw ``samples`` databases from each prior in Θ and run the mechanism once on each.
2. For every secret (record i under DP: g = X_i, w = X_−i; a pair g ~ w under PP) and prior,
   build critic inputs: a full-dimensional critic for I(g; M, w) and one critic per random
   slice for I(θᵀg; φᵀM, ψᵀw) (Pufferfish paper, Section VI-C). All critics of one input
   shape train together as one batched model.
3. Choose ``candidates`` critics (or, for SMI-DP, secrets) on the validation split and
   certify them on the held-out test split with a union bound (α / K): a certified bound
   above ε gives the verdict ``violation`` with type-I error ≤ α (DESIGN.md, statistical core).

What is trained is planned before sampling (:mod:`audit.audit_plan`); the critics are built by the
estimators' slice → fit path (:mod:`audit.statistics.secret_critics`, :mod:`estimators.critic_problems`)
and certified by :mod:`audit.certificates.secret_bounds`.
4. Report per-secret estimates and simultaneously valid bounds, the paper's statistic
   (Eq. (8)), the DP ε lower bounds (Theorem 1; the critic as likelihood-ratio test on
   fresh runs between neighbouring inputs) and the cross-checks against a claim. With
   ``stop_at_refutation`` (a scan's cases) the claim's tests after the first that refutes are not run
   (:func:`_run_audit`).

When g(X) and w(X) may be dependent (a prior without independent rows, or a PP secret), the
certificate on I(g; M, w) no longer bounds I(g; M | w). If w is discrete the engine conditions
on its values: I(g; M | w) = Σ_v P(w = v) I(g; M | w = v) ≥ P(w = v) I(g; M | w = v) for the
stratum v chosen on the validation split, certified as P̲(w = v) · L_v (stratum critics on the
held-out split, Clopper–Pearson on fresh prior draws). If w is continuous, the secret gets the
chain-rule estimate I(g; M, w) − I(g; w) and no certificate ("estimate only").
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from estimators.critic_problems import pad_columns
from estimators.neural import minimum_split_samples
from estimators.validation import InputError
from mechanisms.claims.claim import RECORD_AUDIT_NOTIONS
from mechanisms.execution.runner import MechanismRunner
from mechanisms.inputs.missing_values import distinct_rows
from mechanisms.inputs.relation import presence_pair
from mechanisms.outputs.encoding import encoder_of

from audit.bounds.pufferfish import dp_epsilon_lower_bound_from_mi
from audit.certificates.secret_bounds import cell_critic, certify, certify_sliced_average
from audit.certificates.claim_tests import cross_checks
from audit.statistics.classifier_critic import cross_fitted_candidates, fit_classifier_critics
from audit.statistics.classifier import PAIR_STATISTICS, pair_statistic
from audit.statistics.float_bits import FLOAT_STATISTIC_KINDS, FLOAT_STATISTICS, has_fine_bits
from audit.statistics.arithmetic import RoundedOutputs, RoundedRunner, is_float_bit_candidate, rounded_candidate
from audit.statistics.counting import COUNTING_STATISTICS
from audit.statistics.support import SUPPORT_STATISTICS, SupportLogRatio
from audit.certificates.event_bounds import with_delta_certificate
from audit.statistics.pair_candidates import (EARLY_LOOK_SELECTION_RUNS, MIN_SELECTION_RUNS, PairCandidate, draws_of_first,
                                              held_out_scores, neighbouring_pair_of, value_pairs)
from audit.search.event_search import event_search
from audit.search.input_domain import domain_reach, unreached_note
from audit.audit_plan import plan_audit
from audit.critic_cost import (AUDIT_MEMORY_NAMES, NO_CLASSIFIER, SAMPLES_NAME, checked_critic_device,
                               fallback_critic_device)
from audit.search.prior_search import add_remove_pairs, candidate_pairs, search_priors, structured_pairs
from audit.search.pair_probe import probe_searched_pairs
from audit.result import AuditResult, SecretEvidence, finite_or_none
from audit.statistics.secret_critics import SecretCell, SecretFits, fit_secret_critics, secret_values
from audit.spec import AuditSpec

MIN_TEST_SAMPLES = 200


def draw_samples(spec: AuditSpec, prior, rng: np.random.Generator, runner: MechanismRunner) -> tuple[np.ndarray, np.ndarray]:
    """``samples`` databases from ``prior`` and one mechanism output each, in seeded chunks
    (identical on every backend; :mod:`mechanisms.execution.runner`)."""
    dbs = runner.draw(prior, spec.samples, rng)
    return dbs, runner.sample(dbs, rng, what="audit sample", budget="samples")


def run_audit(spec: AuditSpec) -> AuditResult:
    """Audit ``spec.mechanism`` for ε-``spec.notion`` under the priors Θ = ``spec.priors``.

    Returns
    -------
    AuditResult
        ``verdict == "violation"`` iff the certified lower bound exceeds ε (type-I error ≤ α). With a
        ``spec.companion`` (a claim stated for no relation), both relations' audits at α/2 each, merged by
        :func:`audit.both_relations.merge_relation_results` (Bonferroni: type-I error ≤ α/2 + α/2).

    Raises
    ------
    InputError
        Bad inputs, a sample budget too small to certify anything, or (``MechanismError``)
        a mechanism that raises, returns the wrong shape or non-finite values.
    """
    if not isinstance(spec, AuditSpec):
        raise InputError(f"argument 'spec' must be an AuditSpec (audit.spec.AuditSpec, or build_spec(load_config(PATH)) "
                         f"for a configuration), got {type(spec).__name__}")
    if spec.companion is not None:  # a claim stated for no relation: both, each at α/2 (audit.both_relations)
        from audit.both_relations import run_both_relations

        return run_both_relations(spec, audit_runner, _run_audit)
    with audit_runner(spec) as runner:
        return _run_audit(spec, runner)


def audit_runner(spec: AuditSpec, **settings) -> MechanismRunner:
    """The runner of ``spec``'s mechanism (its execution settings, source, quietness and relation), with any
    further :class:`~mechanisms.execution.runner.MechanismRunner` ``settings`` (a sequential audit's chunk
    boundaries and cache)."""
    runner = MechanismRunner(spec.mechanism, spec.mechanism_label, spec.execution, source=spec.mechanism_source,
                             quiet=spec.quiet, presence_column=spec.presence_column,
                             memory_names=AUDIT_MEMORY_NAMES, **settings)
    # Ideal arithmetic: every output is rounded before any statistic sees it (audit.statistics.arithmetic).
    return RoundedRunner(runner) if spec.arithmetic == "ideal" else runner


def _run_audit(spec: AuditSpec, runner: MechanismRunner, early: bool = False,
               stop_at_refutation: bool = False, gpu_started: str | None = None) -> AuditResult:
    """The audit of ``spec`` on ``runner``'s runs (:func:`run_audit`).

    ``stop_at_refutation``: once one of the claim's tests has refuted it, the tests after it are not run (in
    their order: the MI test, the event test with its μ certificate, the float-bit event test). The verdict is
    the same: ``refuted`` is the union of the tests' rejections, and each test's share of α was fixed before
    sampling (:func:`audit.certificates.claim_tests.plan_claim_tests`), so a share left unused changes no
    type-I error; what is reported is the refuting test's certificate, whose bound may be below the one a test
    not run would have certified, and a note names the tests not run. A scan's cases use it
    (:mod:`audit.scan.case_audit`), whose findings need a refutation, not the largest bound; ``miaudit audit``
    runs every test.

    ``early``: a sequential audit's early look (:mod:`audit.gating.sequential`), planned only for a claim the
    event test tests under two-point priors on neighbouring pairs. Its MI sample may be below the MI test's floor
    (:data:`MIN_TEST_SAMPLES` held-out draws): the MI test is then skipped (no MI bound or verdict is reported,
    and it tests nothing: :func:`audit.certificates.claim_tests.plan_claim_tests`), the sample serves as the
    event test's selection draws (a floor of :data:`audit.statistics.pair_candidates.EARLY_LOOK_SELECTION_RUNS`
    per input instead of :data:`audit.statistics.pair_candidates.MIN_SELECTION_RUNS`), and the event tests
    certify on fresh runs at the look's level (:func:`audit.certificates.claim_tests.early_float_test`: split).

    ``gpu_started``: why the GPU's start is paid whatever the critics do, or None (:func:`audit.critic_cost.critic_device`).
    """
    started = time.perf_counter()
    mi_skipped = early and spec.samples * spec.critic.split[2] < MIN_TEST_SAMPLES
    shifts_floor = minimum_split_samples(spec.critic.split, spec.critic.eval_shifts)
    if spec.samples * spec.critic.split[2] < MIN_TEST_SAMPLES and not early:
        need = max(int(np.ceil(MIN_TEST_SAMPLES / spec.critic.split[2])), shifts_floor)
        raise InputError(f"{SAMPLES_NAME} is {spec.samples}: too small to certify "
                         f"anything, the held-out split would have fewer than {MIN_TEST_SAMPLES} samples; use at "
                         f"least {need}")
    if spec.samples < shifts_floor and not early:
        # Checked before any run: the critics' test split must hold more draws than its shifts, or a shift
        # wraps to 0 and pairs an output with its own secret as a 'product' sample (estimators.neural).
        raise InputError(f"{SAMPLES_NAME} is {spec.samples}: the critics' test "
                         f"split must hold more draws than [critic] eval_shifts = {spec.critic.eval_shifts}; use "
                         f"at least {shifts_floor} samples or fewer eval_shifts")
    rng = np.random.default_rng(spec.seed)
    mechanism_rng = np.random.default_rng(rng.integers(2**63))

    # Θ: the declared priors, then searched two-point priors (only the switching record can leak under them).
    generated = candidate_pairs(spec.priors[0], spec.prior_search, rng, timeout=spec.execution.timeout)
    if spec.presence_column:  # add/remove: a record present against absent
        generated = add_remove_pairs(generated)
    generated, probe_note = probe_searched_pairs(generated, runner, spec.seed)
    searched = search_priors(tuple(spec.pairs) + tuple(generated))
    theta = [(prior, None) for prior in spec.priors] + searched
    priors = [prior for prior, _ in theta]
    # Which tests may refute the claim (and their shares of α), which secrets get critics, how
    # many slices: all fixed before any sampling (audit.audit_plan).
    plan = plan_audit(spec, theta, early=early)
    notes = list(spec.notes) + list(plan.notes) + ([probe_note] if probe_note else [])
    device, device_note = checked_critic_device(spec, plan, len(priors), gpu_started)  # before any sampling
    if spec.device == "auto" and plan.mi_critic != "classifier":
        notes.append(device_note)
    data = [draw_samples(spec, prior, mechanism_rng, runner) for prior in priors]
    notes.extend(runner.notes)
    outputs = [y for _, y in data]
    cells, constant = [], []  # constant: (position in the plan, evidence) of secrets that get no critic
    for position, planned in enumerate(plan.secrets):
        prior = priors[planned.prior_index]
        if planned.deterministic:
            constant.append((position, _constant_evidence(planned, prior)))
            continue
        g, w = secret_values(planned.pair, planned.record, data[planned.prior_index][0], spec.others, prior,
                             spec.allow_nan)
        if np.all(g == g[:1]):
            # I(g; ·) of the samples' empirical law is 0 when g takes one value on all of them.
            notes.append(f"{planned.name} under prior {planned.prior_index}: g took one value in all {len(g)} "
                         "samples, so its MI with the output in these samples is 0; it gets no critic and no "
                         "certificate")
            constant.append((position, _constant_evidence(planned, prior)))
            continue
        strategy = planned.pair.strategy(prior) if w is not None else "certify"  # w None: no public information
        if strategy == "stratify" and spec.notion == "smi-dp":
            notes.append(f"{planned.pair.name} under prior {planned.prior_index}: w is discrete and may depend on g; "
                         "the sliced notion is not stratified, so this secret gets the chain-rule estimate only")
            strategy = "estimate-only"
        cells.append(SecretCell(planned.prior_index, prior, planned.record, planned.pair, strategy, g, w, position,
                                spec.others, spec.allow_nan))

    if spec.others == "sums" and cells and plan.mi_critic != "classifier":
        notes.append("Each record's critics read the other records' column sums (others = sums), not the records: the "
                     "MI estimates and bounds are of I(X_i; M | Σ_{j≠i} X_j), at most I(X_i; M | X_−i) under independent "
                     "rows (data processing) and equal to it where the mechanism reads the other records through "
                     "their sums, so a certified violation holds for the audited MI and an estimate may be lower.")
    fits, why = (_classifier_fits(spec, cells, outputs, rng, device) if plan.mi_critic == "classifier" and cells
                 else (None, None))
    if fits is None:
        if why is not None:
            # The classifier plan's fallback: its device and memory were checked for no critics; these are trained.
            notes.append(why)
            device, device_note = fallback_critic_device(spec, plan, len(priors), gpu_started, outputs[0].shape[1], why)
            if spec.device == "auto":
                notes.append(device_note)
        fits = fit_secret_critics(cells, outputs, full=plan.full_critics and bool(cells),
                                  slices=plan.slices if cells else 0,
                                  min_stratum=max(int(np.ceil(MIN_TEST_SAMPLES / spec.critic.split[2])), shifts_floor),
                                  rng=rng,
                                  notes=notes, objective=spec.estimator, config=spec.critic, device=device,
                                  quiet=spec.quiet)
    cells = fits.cells
    if spec.statistic is not None and not fits.classifiers and cells:
        notes.append(f"the statistic {spec.statistic.name!r} (--statistic) joins the candidates of classifier critics "
                     "only (a DP claim under two-point priors on neighbouring pairs); this audit's critics are neural, so "
                     "it was not tried")
    if spec.notion == "smi-dp" and cells:
        certified = certify_sliced_average(fits, alpha=plan.claim_tests.mi_alpha, n_candidates=spec.candidates)
    else:
        certified = certify(fits, alpha=plan.claim_tests.mi_alpha, n_candidates=spec.candidates, rng=rng,
                            timeout=spec.execution.timeout)
    selected_bound, best_candidate = certified.lower_bound, certified.candidate
    if mi_skipped:
        notes.append(f"The MI test is skipped at this early look of a sequential audit: its held-out split would hold "
                     f"{int(spec.samples * spec.critic.split[2])} draws, below the floor of {MIN_TEST_SAMPLES}; the "
                     f"MI sample's {spec.samples} draws serve the event test as its selection draws, and no MI bound "
                     "or MI verdict is reported.")
    by_position = dict(constant) | {cell.position: e for cell, e in zip(cells, certified.evidence)}
    evidence = [by_position[position] for position in sorted(by_position)]
    estimate = max(e.estimate for e in evidence)
    paper_statistic = None
    if fits.sliced is not None:
        paper_statistic = max(float(np.mean(critics.values(fits.sliced.fit.estimates)))
                              for critics in fits.sliced.problems)
    estimate_only = bool(cells) and not any(c.certifiable for c in cells)
    if mi_skipped:
        verdict = None
    elif spec.epsilon is None:
        verdict = None
        notes.append("No MI level was audited: the claim implies no MI budget here and no epsilon was given, so "
                     "there is no MI-notion verdict.")
    elif not cells:
        verdict = "no-violation-detected"
        notes.append("every audited secret is constant under its prior: the leakage is 0 and there is nothing to "
                     "certify")
    elif estimate_only:
        verdict = "violation" if estimate > spec.epsilon else "no-violation-detected"
        notes.append("no secret could be certified: the verdict rests on the point estimate only")
    else:
        verdict = "violation" if selected_bound > spec.epsilon else "no-violation-detected"

    dp_mi = event = float_event = None
    pilot_runs = 0  # runs that fitted the float-bit statistics of a structured pair (_float_bit_candidates)
    claim_tests = plan.claim_tests
    # The MI test's bound, before mi_skipped clears it below (at an early look the MI test tests nothing).
    mi_refuted = stop_at_refutation and _refutes(spec, claim_tests, lower_bound=selected_bound, estimate=estimate)
    if spec.notion in RECORD_AUDIT_NOTIONS and selected_bound is not None:
        dp_mi = dp_epsilon_lower_bound_from_mi(selected_bound)
        if mi_refuted:
            notes.append(_NOT_RUN_NOTE.format(tests="The event tests were", first="MI test"))
        elif spec.event_runs > 0 and best_candidate is not None and best_candidate.kind != "strata":
            pairs, pilot_runs = _event_candidates(spec, best_candidate, fits, data, mechanism_rng, runner, early,
                                                  device)
            event, float_event, claim_tests = _event_tests(spec, pairs, claim_tests, mechanism_rng, runner, early,
                                                           device, stop_at_refutation, notes)
    elif claim_tests.float_alpha is not None:
        claim_tests = claim_tests.without_float_test()
    if claim_tests is not plan.claim_tests and "float" in plan.claim_tests.alpha_spent:
        notes.append("No float-bit statistic suits these outputs (no bit below 2^-32), so the event test is certified "
                     "at its share and the float-bit test's together (decided before any event-test run).")
    if mi_skipped:  # the candidate chosen above serves the event test only
        selected_bound = dp_mi = None
        evidence = [replace(e, lower_bound=None) for e in evidence]
    checks = cross_checks(spec.claim, spec.notion, selected_bound, estimate, event, claim_tests, float_event)
    claim_verdict = None
    if spec.claim is not None:
        claim_verdict = "refuted" if any(c.certified_contradiction for c in checks) else "not-refuted"
    reach = None if spec.domain is None else domain_reach(spec.domain, spec.priors, spec.pairs, spec.priors[0].shape[1]
                                                          - bool(spec.presence_column), spec.seed)
    if reach is not None and not reach["reached"] and claim_verdict != "refuted" and verdict != "violation":
        notes.append(unreached_note(reach))
    by_purpose = {"mi": spec.samples * len(priors)}
    if event is not None:
        if pilot_runs:
            by_purpose["event_statistics"] = pilot_runs
        if event.selection_runs:  # else the event was chosen on the MI sample's held-out draws
            by_purpose["event_selection"] = event.selection_runs
        by_purpose["event_certification"] = (2 * event.runs_per_input if event.runs_made is None
                                             else sum(event.runs_made))
    if float_event is not None:
        if float_event.selection_runs:
            by_purpose["float_selection"] = float_event.selection_runs
        by_purpose["float_certification"] = (2 * float_event.runs_per_input if float_event.runs_made is None
                                             else sum(float_event.runs_made))
    # What the mechanism printed in its calls (kept off the terminal) and the NaN it returned, once every run is made.
    notes.extend(runner.call_notes())
    return AuditResult(
        verdict=verdict, notion=spec.notion, epsilon=spec.epsilon, alpha=spec.alpha,
        lower_bound=finite_or_none(selected_bound), estimate=estimate, paper_statistic=paper_statistic,
        dp_epsilon_lower_bound_mi=dp_mi,
        dp_epsilon_lower_bound_event=None if event is None else event.epsilon_lower_bound,
        per_record=evidence, cross_checks=checks,
        samples=sum(by_purpose.values()), samples_by_purpose=by_purpose,
        claim=None if spec.claim is None else spec.claim.to_dict(spec.notion, plan.claim_tests.record_support,
                                                                 spec.framework.secrets_words(len(spec.priors))),
        claim_verdict=claim_verdict, claim_alpha=dict(claim_tests.alpha_spent),
        seconds=time.perf_counter() - started, seed=spec.seed, mechanism=spec.mechanism_label,
        priors=[p.describe() for p in priors],
        theta_statement=_theta_statement(spec, len(searched)),
        certified_secret=certified.certified_secret, estimate_only=estimate_only,
        candidates_certified=certified.candidates_certified,
        event_test=event, float_event_test=float_event, arithmetic=spec.arithmetic, slices=plan.slices or None,
        # Classifier critics are Barber–Agakov critics, whatever neural objective the spec names.
        estimator="classifier" if fits.classifiers else spec.estimator, device=str(device),
        training_history=fits.history, notes=notes, domain_reach=reach,
    )


def _classifier_fits(spec, cells, outputs, rng, device=None) -> tuple:
    """(the cells' classifier critics (:mod:`audit.statistics.classifier_critic`) as the audit's full fit, None), or
    (None, why neural critics are trained instead, in words): a secret not certified directly, or outputs that
    suit no classifier (decided on the training split's shapes and values only). ``device``: where the float-bit
    statistics compute their codes.
    """
    if any(cell.strategy != "certify" for cell in cells):
        return None, "a record's secret is not certified directly under its prior, so its critics are neural"
    fitted = fit_classifier_critics(cells, outputs, config=spec.critic, rng=rng, extra_kinds=_user_kinds(spec),
                                    support_columns=getattr(encoder_of(spec.mechanism), "support_columns", None),
                                    device=device)
    if fitted is None:
        return None, (f"no classifier critic could be fitted (the outputs are {NO_CLASSIFIER}, or the training split "
                      "holds draws of only one of the two databases), so the MI test's critics are neural")
    full, classifiers = fitted
    return SecretFits(tuple(cells), full, classifiers=classifiers), None


def _constant_evidence(planned, prior) -> SecretEvidence:
    """A secret whose g is constant under its prior: I(g; M | w) = 0 exactly, nothing to certify."""
    return SecretEvidence(planned.name, planned.record, prior.describe(), "constant", 0.0, None, None)


def _theta_statement(spec, n_searched: int) -> str:
    declared = ("Θ is the declared prior" + ("s" if len(spec.priors) > 1 else "") + ": "
                + "; ".join(p.describe() for p in spec.priors))
    if not n_searched:
        return declared
    return (declared + f"; plus {n_searched} two-point priors on neighbouring pairs (prior search: under DP "
            "semantics Θ is all distributions, and a leak under any member refutes the claim)")


def _critic_statistic(candidate, fits):
    """The chosen critic as a log-likelihood-ratio statistic between two values of its record:
    ``statistic(a, b, dbs, outputs) = T(a, y, rest) − T(b, y, rest)`` on each row."""
    cell, kind, index = candidate.cell, candidate.kind, candidate.index
    scorer = fits.fit(kind).scorer
    record = cell.record
    width_u, width_v = scorer.input_widths(index)

    def scores(value, dbs, outputs):
        # T(value, y, rest) on each row. The database copy and the critic's inputs are this call's own: they are
        # freed when it returns, before the other value's are built, so one value's arrays are alive at a time
        # (the event scoring that mechanisms.execution.memory.audit_memory_parts counts), not two.
        batch = dbs.copy()
        batch[:, record] = value
        g, w = secret_values(cell.pair, record, batch, cell.others, cell.prior, cell.missing)
        u, v = candidate.critics.features(g, outputs, w, index)
        return scorer(index, pad_columns(u, width_u), pad_columns(v, width_v))

    def statistic(first, second, dbs, outputs):
        first_scores = scores(first, dbs, outputs)
        return first_scores - scores(second, dbs, outputs)
    return statistic


def _user_kinds(spec) -> tuple:
    """The user's statistic as an event statistic (:func:`audit.statistics.user_statistic.user_statistic_kind`):
    read from the columns the mechanism's encoder appends, or applied to each output row; () without one."""
    if spec.statistic is None:
        return ()
    from audit.statistics.user_statistic import user_statistic_kind

    encoder = encoder_of(spec.mechanism)
    return (user_statistic_kind(spec.statistic, None if encoder is None else slice(2 * encoder.width, None),
                                spec.allow_nan),)


def _pair_statistics(cell, critics, fits, data, support_columns=None, min_draws: int = MIN_SELECTION_RUNS,
                     device=None) -> list:
    """The event-test candidates of a cell whose prior is a two-point prior on a neighbouring pair.

    With classifier critics, their classifiers cross-fitted on the MI sample
    (:func:`audit.statistics.classifier_critic.cross_fitted_candidates`). Otherwise the statistics: each
    critic's T(a, y) − T(b, y) (the MI test's chosen critic when it is this
    cell's, which may be a slice, and the cell's full critic), the log-odds of a logistic
    regression fitted on the first critic's training split, and, for outputs that take few values
    there, their empirical log-ratio (:mod:`audit.statistics.classifier`),
    each with its scores on the MI sample's draws that none of them was trained on (the
    validation and test splits: held-out draws of the two databases, on which the event search
    chooses among them at no run's cost). ``support_columns``: the encoder's support block, the support
    statistic's columns (:meth:`audit.statistics.support.SupportLogRatio.fit`). ``min_draws``: the fewest
    held-out draws per input the event is chosen on (:func:`audit.statistics.pair_candidates.held_out_scores`).
    ``device``: the audit's torch device, where the float-bit statistics compute their codes
    (:func:`audit.statistics.float_bits.device_code_rows` off the CPU).
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
    statistics = [(_critic_statistic(critic, fits), "T(a, y) − T(b, y)", "" if critic.kind == "full" else critic.label,
                   origin + ("" if critic.kind == "full" else f"; statistic: {critic.label}")) for critic in critics
                  if fits.fit(critic.kind).scorer is not None]
    is_first = draws_of_first(dbs[train], first, record)
    if is_first.any() and not is_first.all():
        trained_outputs = outputs[train]
        first_outputs, second_outputs = trained_outputs[is_first], trained_outputs[~is_first]
        del trained_outputs
        for kind, _, label, what in PAIR_STATISTICS + FLOAT_STATISTICS + SUPPORT_STATISTICS + COUNTING_STATISTICS:
            extra = ({"support_columns": support_columns} if kind is SupportLogRatio else
                     {"device": device} if kind in FLOAT_STATISTIC_KINDS else {})
            fitted = kind.fit(first_outputs, second_outputs, **extra)  # None where the outputs do not suit it
            if fitted is not None:
                named = f" ({fitted.describe()})" if hasattr(fitted, "describe") else ""  # a counting statistic's features
                words = f"{what} on the critic's training split{named}"
                statistics.append((pair_statistic(fitted, first[record], second[record]), label, words,
                                   f"{origin}; statistic: {words}"))
    held_dbs, held_outputs = dbs[held], outputs[held]  # one copy of the held-out draws for every statistic
    return [PairCandidate(first, second, record, statistic, why, statistic_label=label, statistic_words=words,
                          held_out=held_out_scores(statistic, first, second, record, held_dbs, held_outputs,
                                                   min_draws))
            for statistic, label, words, why in statistics]


#: Structured pairs (StatDP patterns) the event search tries on the chosen critic's record under a
#: declared prior that is not a two-point prior (the critic generalizes over the other records).
STRUCTURED_EVENT_PAIRS = 8


#: Runs of each input of the first structured pair on which the float-bit statistics are fitted
#: (:func:`_float_bit_candidates`).
BIT_PILOT_RUNS = 2000


def _float_bit_candidates(pair, record, runner, rng, runs, device=None):
    """The float-bit statistics (:data:`audit.statistics.float_bits.FLOAT_STATISTICS`) of one structured pair,
    fitted on ``runs`` pilot runs of each of its databases, as event-search candidates; and the runs made.

    Under a prior that is not a two-point prior the MI sample holds no draws of the pair's two databases,
    and the critic, standardized in float64, never sees an output's low bits; these statistics do
    (Mironov 2012). The pilot runs come from a generator spawned from ``rng``'s seed (``rng``'s own
    stream is not moved, so an audit whose outputs suit none of them draws what it drew without them);
    they are neither selection nor certification runs, so the choice among candidates still costs no α.
    ``device``: where the statistics compute their codes (:func:`_pair_statistics`).
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
            words = f"{what} on {runs} pilot runs of each database"
            candidates.append(PairCandidate(pair.first, pair.second, record,
                                            pair_statistic(fitted, pair.first[record], pair.second[record]),
                                            f"{pair.why}; statistic: {words}", statistic_label=label,
                                            statistic_words=words))
    return candidates, 2 * runs


#: What an audit that stops at its first refutation (:func:`_run_audit`'s ``stop_at_refutation``) says of the tests
#: it did not run.
_NOT_RUN_NOTE = ("{tests} not run: the {first} refuted the claim first, and this audit stops at the first "
                 "refutation (stop_at_refutation, as a scan's cases do). Every test's share of α was fixed before "
                 "sampling, so the verdict and its level are unchanged; the certificate reported is the {first}'s.")


def _refutes(spec, claim_tests, lower_bound=None, estimate: float = 0.0, event=None) -> bool:
    """Whether the evidence given (the MI bound, or an event test's pair with its μ certificate) refutes
    ``spec``'s claim at the planned shares (:func:`audit.certificates.claim_tests.cross_checks`)."""
    return spec.claim is not None and any(
        c.certified_contradiction for c in cross_checks(spec.claim, spec.notion, lower_bound, estimate, event,
                                                        claim_tests))


def _event_tests(spec, pairs, claim_tests, rng, runner, early: bool = False, device=None,
                 stop_at_refutation: bool = False, notes=None):
    """The event test and the float-bit event test over the candidates ``pairs`` (:func:`_event_candidates`);
    returns (event test, float-bit event test, the claim's plan as spent). With ``stop_at_refutation``
    (:func:`_run_audit`) the float-bit test is not run where the event test refuted the claim (said in ``notes``).

    The candidates whose statistics read no bits are searched on outputs rounded to the ideal resolution
    (:func:`audit.statistics.arithmetic.rounded_candidate`; under ``arithmetic = "ideal"`` the runner has
    rounded them already), the float-bit ones (``arithmetic = "float"`` only) on the outputs themselves; each
    test chooses on its own selection runs or held-out draws and certifies on its own fresh runs at its share
    of α (:class:`audit.certificates.claim_tests.ClaimPlan`). Without a float-bit candidate the event test gets
    both shares, decided before its runs. At an early look (``early``) the float-bit test runs where its plan gives
    it a share, and both choose on fewer selection draws (:func:`_run_audit`). ``device``: the audit's torch device,
    where the outputs are rounded (:func:`audit.statistics.arithmetic.round_significand`).
    """
    # At an early look the plan gives the float-bit test a share only where its rule allows (float_alpha set).
    float_test = spec.arithmetic == "float" and (not early or claim_tests.float_alpha is not None)
    bits = [p for p in pairs if is_float_bit_candidate(p)] if float_test else []
    rounding = RoundedOutputs(device)  # the certification runs rounded once for every candidate that scores them
    ideal = [p if spec.arithmetic == "ideal" else rounded_candidate(p, device, rounding) for p in pairs
             if not is_float_bit_candidate(p)]
    if not bits:
        claim_tests = claim_tests.without_float_test()
    tests = []
    for candidates, test, alpha in ((ideal, "event", claim_tests.event_alpha), (bits, "float", claim_tests.float_alpha)):
        if test == "float" and candidates and stop_at_refutation and _refutes(spec, claim_tests, event=tests[0]):
            notes.append(_NOT_RUN_NOTE.format(tests="The float-bit event test was", first="event test"))
            tests.append(None)
            break
        target = spec.claim if test in claim_tests.alpha_spent else None
        gdp_alpha = claim_tests.gdp_alpha if test == "event" else alpha
        found = _search(spec, candidates, rng, runner, alpha, target, gdp_alpha, early) if candidates else None
        tests.append(with_delta_certificate(found, spec.claim))  # δ̲ at an (ε, δ) claim's ε
    return tests[0], tests[1], claim_tests


def _search(spec, pairs, rng, runner, alpha, claim, gdp_alpha, early=False):
    # The audit's claim decides the certificates even when the event test does not test it (``claim`` None).
    pure = spec.claim is None or spec.claim.pure_epsilon is not None
    return event_search(pairs, runner=runner, rng=rng, runs=spec.event_runs, alpha=alpha, delta=spec.delta,
                        claim=claim, pure_certificates=pure, gdp_alpha=gdp_alpha,
                        predict_runs=spec.pilot_for_runs, keep_scores=spec.pilot_for_runs is not None,
                        min_selection_runs=_selection_floor(early))


def _selection_floor(early: bool) -> int:
    """The fewest selection draws per input the event test chooses on: lower at an early look (:func:`_run_audit`)."""
    return EARLY_LOOK_SELECTION_RUNS if early else MIN_SELECTION_RUNS


def _event_candidates(spec, candidate, fits, data, rng, runner, early=False, device=None):
    """The event search's candidate pairs (:func:`audit.search.event_search.event_search`), in order:
    each two-point prior of Θ on a neighbouring pair (the declared ones, the user's and a catalog's
    pairs, then the prior search's structured and random pairs) with its own critic (the MI test's
    chosen critic for its cell); then, when the chosen critic's prior is not such a two-point prior,
    structured pairs on its record (StatDP patterns, column levels read from the audit's draws of
    that prior), the float-bit statistics of the first of them (:func:`_float_bit_candidates`, when the MI
    sample's outputs hold bits below the coarse grid: :func:`audit.statistics.float_bits.has_fine_bits`) and
    pairs of its values on a base database of the validation split. Returns (the candidates, the pilot
    runs of the float-bit statistics). ``device``: the audit's torch device (:func:`_pair_statistics`)."""
    pairs, pilot_runs = [], 0
    for i, cell in enumerate(fits.cells):
        if cell.strategy == "certify" and neighbouring_pair_of(cell.prior, cell.record) is not None:
            critics = [candidate] if candidate.cell is cell else []
            full = cell_critic(fits, i)  # the cell's full critic (else its best slice)
            if full is not None and not any(c.kind == full.kind and c.index == full.index for c in critics):
                critics.append(full)
            if critics:
                pairs += _pair_statistics(cell, critics, fits, data[cell.prior_index],
                                          getattr(encoder_of(spec.mechanism), "support_columns", None),
                                          _selection_floor(early), device)
    cell, kind = candidate.cell, candidate.kind
    if neighbouring_pair_of(cell.prior, cell.record) is None:
        dbs, _ = data[cell.prior_index]
        statistic = _critic_statistic(candidate, fits)
        structured = structured_pairs(cell.prior, STRUCTURED_EVENT_PAIRS, rng, records=(cell.record,), observed=dbs)
        pairs += [PairCandidate(p.first, p.second, cell.record, statistic, p.why) for p in structured]
        # The MI sample's outputs (drawn already: the probe costs no run) hold bits below the coarse grid: the bit
        # statistics fit nothing on integers or values snapped to that grid, so their pilot runs are spent only then.
        if structured and spec.arithmetic == "float" and has_fine_bits(data[cell.prior_index][1]):
            # fitted on the add/remove pair they are certified on (the rewrite below keeps such a pair as it is)
            bit_pair = _presence_form(structured[0], cell.record) if spec.presence_column else structured[0]
            bit_candidates, pilot_runs = _float_bit_candidates(bit_pair, cell.record, runner, rng,
                                                               min(spec.event_runs, BIT_PILOT_RUNS), device)
            pairs += bit_candidates
        validation = fits.fit(kind).split[1]
        values = distinct_rows(dbs[validation[:256], cell.record, :])[:4]
        pairs += value_pairs(dbs[validation[0]], cell.record, values, statistic,
                             "values and base database from the validation split")
    if spec.presence_column:  # add/remove: every candidate a record present against absent
        said = "the last attribute is the record's presence (1 present, 0 absent)"
        pairs = [replace(p, origin=f"{p.origin}; {said}" if p.origin else said) for p in pairs]
        pairs = [p if p.held_out is not None else _presence_form(p, p.record) for p in pairs]
    return pairs, pilot_runs


def _presence_form(pair, record: int):
    """``pair`` with the add/remove databases :func:`mechanisms.inputs.relation.presence_pair` makes of its two."""
    return replace(pair, **dict(zip(("first", "second"), presence_pair(pair.first, pair.second, record))))
