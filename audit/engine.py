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

import copy
import time
from dataclasses import replace

import numpy as np

from estimators.neural import minimum_split_samples
from estimators.validation import InputError
from mechanisms.claims.claim import RECORD_AUDIT_NOTIONS
from mechanisms.execution.runner import MechanismRunner
from mechanisms.outputs.encoding import encoder_of

from audit.bounds.pufferfish import dp_epsilon_lower_bound_from_mi
from audit.certificates.secret_bounds import certify, certify_sliced_average, event_critic
from audit.certificates.claim_tests import cross_checks, uses_ratio_certificates
from audit.statistics.classifier_critic import fit_classifier_critics
from audit.statistics.arithmetic import RoundedOutputs, RoundedRunner, is_float_bit_candidate, rounded_candidate
from estimators.resident import keep_on_device
from audit.certificates.event_bounds import with_delta_certificate
from audit.search.event_search import event_search
from audit.search.event_candidates import event_candidates, selection_floor
from audit.search.input_domain import reach_and_note
from audit.audit_plan import plan_audit
from audit.critic_cost import (AUDIT_MEMORY_NAMES, NO_CLASSIFIER, SAMPLES_NAME, checked_critic_device,
                               fallback_critic_device, sampled_critic_device)
from audit.search.prior_search import add_remove_pairs, candidate_pairs, search_priors, spare_pairs
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
    _give_statistic(spec)  # before the runner: the workers get the encoder's statistic with each task
    runner = MechanismRunner(spec.mechanism, spec.mechanism_label, spec.execution, source=spec.mechanism_source,
                             quiet=spec.quiet, presence_column=spec.presence_column,
                             memory_names=AUDIT_MEMORY_NAMES, **settings)
    # Ideal arithmetic: every output is rounded before any statistic sees it (audit.statistics.arithmetic).
    return RoundedRunner(runner) if spec.arithmetic == "ideal" else runner


def _give_statistic(spec: AuditSpec) -> None:
    """Give the mechanism's output encoder ``spec``'s user statistic where the audit may try it
    (:func:`statistic_may_be_tried`), else none: a per-database function's encoder calls it on every output
    it encodes, and where the MI test's critics are neural the statistic is tried nowhere (a note says so), so
    those calls were spent for nothing and its values only widened the critics' input. Set at each audit's
    runner, since specs of one mechanism object share its encoder.

    Where it may be tried it is called on every run, the event tests' certification runs included, whichever event
    is chosen: the statistic's values are columns of the encoded rows, and the logistic regressions, the counting
    statistic and the float-bit statistics read every column (the user's statistic reads its own), so their events
    score the certification runs on those values too. Only the support statistic
    (:class:`audit.statistics.support.SupportLogRatio`) reads a block without them; skipping the calls for it alone
    would take a per-job switch of the encoder in every process that runs the mechanism, with placeholder columns of
    the statistic's length (the runner checks every output's width) and runs kept apart in a sequential audit's cache.
    """
    encoder = encoder_of(spec.mechanism)
    if encoder is not None:
        encoder.statistic = spec.statistic if statistic_may_be_tried(spec) else None


def statistic_may_be_tried(spec: AuditSpec) -> bool:
    """Whether an audit of ``spec`` may try its user statistic, decided before any run.

    The statistic joins the candidates of the classifier critics only (:func:`_user_kinds`), which the plan
    over Θ chooses (:func:`audit.audit_plan.resolve_mi_critic`). The declared priors and pairs are known
    before any run; the searched two-point priors (``prior_search``) never stop classifier critics from
    serving, and make them serve only where no declared prior's record gets a critic, which is kept as
    "may be tried".
    """
    if spec.statistic is None:
        return False
    theta = [(prior, None) for prior in spec.priors] + search_priors(tuple(spec.pairs))
    plan = plan_audit(spec, theta)
    if plan.mi_critic == "classifier":
        return True
    return bool(spec.prior_search) and all(secret.deterministic for secret in plan.secrets)


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

    Output blocks that statistics copy to the audit's device are copied once for the look and kept there for every
    statistic and fold that reads them (:func:`estimators.resident.keep_on_device`).
    """
    with keep_on_device():
        return _look(spec, runner, early, stop_at_refutation, gpu_started)


def _look(spec: AuditSpec, runner: MechanismRunner, early: bool, stop_at_refutation: bool,
          gpu_started: str | None) -> AuditResult:
    """:func:`_run_audit`'s look, inside its store of device copies."""
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
    spare_rng = copy.deepcopy(rng)  # the search's spares continue its draws; the audit's generator is left as it is
    generated = candidate_pairs(spec.priors[0], spec.prior_search, rng, timeout=spec.execution.timeout)
    if spec.presence_column:  # add/remove: a record present against absent
        generated = add_remove_pairs(generated)
    searched_first = tuple(generated)

    def spares(count):  # called only where the mechanism refuses a searched pair
        return spare_pairs(spec.priors[0], searched_first, count, spare_rng, timeout=spec.execution.timeout,
                           add_remove=bool(spec.presence_column))

    # A sequential audit's looks refill too, within their plan: a refused pair's probe makes no counted run and the
    # spares kept replace refused pairs one for one (audit.search.pair_probe, "In a sequential audit").
    generated, probe_note, probed = probe_searched_pairs(generated, runner, spec.seed, spares)
    probe_runs = {"pair_probe": 2 * probed} if probed else {}  # one run of each database of each pair probed
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
        else:  # the GPU's memory at the outputs' width, which the check before any run did not know
            device, moved = sampled_critic_device(spec, plan, device, outputs[0].shape[1])
            notes.extend([moved] if moved else [])
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
    candidate_runs = {}  # the structured pairs' probe and the float-bit statistics' pilot runs (event_candidates)
    claim_tests = plan.claim_tests
    # The MI test's bound, before mi_skipped clears it below (at an early look the MI test tests nothing).
    mi_refuted = stop_at_refutation and _refutes(spec, claim_tests, lower_bound=selected_bound, estimate=estimate)
    if spec.notion in RECORD_AUDIT_NOTIONS and selected_bound is not None:
        dp_mi = dp_epsilon_lower_bound_from_mi(selected_bound)
        if mi_refuted:
            notes.append(_NOT_RUN_NOTE.format(tests="The event tests were", first="MI test"))
        elif spec.event_runs > 0 and best_candidate is not None and best_candidate.kind != "strata":
            # The event tests certify on fresh runs: their critic is chosen on the held-out split too (event_critic).
            pairs, candidate_runs, candidate_notes = event_candidates(spec, event_critic(fits, best_candidate), fits,
                                                                  data, mechanism_rng, runner, early, device)
            notes += candidate_notes
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
    reach, unreached = (None, None) if spec.domain is None else reach_and_note(
        spec.domain, spec.priors, spec.pairs, spec.priors[0].shape[1] - bool(spec.presence_column), spec.seed)
    if reach is not None and not reach["reached"] and claim_verdict != "refuted" and verdict != "violation":
        notes.append(unreached)
    by_purpose = {"mi": spec.samples * len(priors)}
    probed = probe_runs.get("pair_probe", 0) + candidate_runs.get("pair_probe", 0)
    if probed:
        by_purpose["pair_probe"] = probed
    if event is not None:
        if candidate_runs.get("event_statistics"):
            by_purpose["event_statistics"] = candidate_runs["event_statistics"]
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
        samples=sum(by_purpose.values()), samples_by_purpose=by_purpose, probe_calls=runner.probe_calls,
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


def _user_kinds(spec) -> tuple:
    """The user's statistic as an event statistic (:func:`audit.statistics.user_statistic.user_statistic_kind`):
    read from the columns the mechanism's encoder appends, or applied to each output row; () without one."""
    if spec.statistic is None:
        return ()
    from audit.statistics.user_statistic import user_statistic_kind

    encoder = encoder_of(spec.mechanism)
    return (user_statistic_kind(spec.statistic, None if encoder is None else slice(2 * encoder.width, None),
                                spec.allow_nan),)


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
    """The event test and the float-bit event test over the candidates ``pairs`` (:func:`audit.search.event_candidates.event_candidates`);
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
    pure = uses_ratio_certificates(spec.claim, spec.delta)
    return event_search(pairs, runner=runner, rng=rng, runs=spec.event_runs, alpha=alpha, delta=spec.delta,
                        claim=claim, pure_certificates=pure, gdp_alpha=gdp_alpha,
                        predict_runs=spec.pilot_for_runs, keep_scores=spec.pilot_for_runs is not None,
                        min_selection_runs=selection_floor(early))
