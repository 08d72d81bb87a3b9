"""The audit engine: sample, train one batched critic ensemble, select, certify, decide.

1. Draw ``samples`` databases from each prior in Θ and run the mechanism once on each.
2. For every secret (record i under DP: g = X_i, w = X_−i; a pair g ~ w under PP) and prior,
   build critic inputs: a full-dimensional critic for I(g; M, w) and one critic per random
   slice for I(θᵀg; φᵀM, ψᵀw) (Pufferfish paper, Section VI-C). All critics of one input
   shape train together as one batched model.
3. Choose ``candidates`` critics (or, for SMI-DP, secrets) on the validation split and
   certify them on the held-out test split with a union bound (α / K): a certified bound
   above ε gives the verdict ``violation`` with type-I error ≤ α (DESIGN.md, statistical core).
4. Report per-secret estimates and simultaneously valid bounds, the paper's statistic
   (Eq. (8)), the DP ε lower bounds (Theorem 1; the critic as likelihood-ratio test on
   fresh runs between neighbouring inputs) and the cross-checks against a claim.

When g(X) and w(X) may be dependent (a prior without independent rows, or a PP secret), the
certificate on I(g; M, w) no longer bounds I(g; M | w). If w is discrete the engine conditions
on its values: I(g; M | w) = Σ_v P(w = v) I(g; M | w = v) ≥ P(w = v) I(g; M | w = v) for the
stratum v chosen on the validation split, certified as P̲(w = v) · L_v (stratum critics on the
held-out split, Clopper–Pearson on fresh prior draws). If w is continuous, the secret gets the
chain-rule estimate I(g; M, w) − I(g; w) and no certificate ("estimate only").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from estimators.certify import averaged_dv_lower_bound, averaging_shifts, certify_critics
from estimators.device import resolve_device
from estimators.neural import fit_critics
from estimators.slicing import project, random_frames
from estimators.validation import InputError
from mechanisms.execution.memory import check_sample_memory
from mechanisms.execution.runner import MechanismRunner
from mechanisms.execution.user_call import call_user_code

from .bounds.pufferfish import dp_epsilon_lower_bound_from_mi
from mechanisms.claims import RECORD_AUDIT_NOTIONS

from .crosscheck import cross_checks
from .event_search import PairCandidate, event_search, neighbouring_pair_of, value_pairs
from .event_test import clopper_pearson
from .plan import plan_audit
from .prior_search import candidate_pairs, search_priors, structured_pairs
from .result import AuditResult, SecretEvidence, finite_or_none
from .spec import AuditSpec

MIN_TEST_SAMPLES = 200


@dataclass
class _Cell:
    """One (prior, secret) combination and the indices of its critics."""

    prior_index: int
    prior: object
    record: int | None
    pair: object
    strategy: str
    g: np.ndarray
    w: np.ndarray | None
    position: int = 0  # in the plan's list of secrets (the order of the per-secret evidence)
    full: int | None = None
    full_chain: int | None = None
    slices: slice | None = None
    slices_chain: slice | None = None
    frames: dict = field(default_factory=dict)
    strata: list = field(default_factory=list)  # (value of w, P̂(w = value), critic index)

    @property
    def certifiable(self) -> bool:
        return self.strategy in ("certify", "stratify")

    @property
    def name(self) -> str:
        return self.pair.name if self.record is None else f"record {self.record}"


def draw_samples(spec: AuditSpec, prior, rng: np.random.Generator,
                 runner: MechanismRunner) -> tuple[np.ndarray, np.ndarray]:
    """``samples`` databases from ``prior`` and one mechanism output each, in seeded chunks
    (identical on every backend; :mod:`mechanisms.execution.runner`)."""
    dbs = runner.draw(prior, spec.samples, rng)
    return dbs, runner.sample(dbs, rng, what="audit sample")


def _pad(arr: np.ndarray, width: int) -> np.ndarray:
    """Zero columns up to ``width``: a constant input carries no information and lets critics of
    different input widths share one batched model."""
    return np.concatenate((arr, np.zeros(arr.shape[:-1] + (width - arr.shape[-1],))), axis=-1)


def _full_inputs(cells, outputs):
    us, vs = [], []
    for cell in cells:
        y = outputs[cell.prior_index]
        v = y if cell.w is None else np.concatenate((y, cell.w), axis=1)
        cell.full = len(us)
        us.append(cell.g)
        vs.append(v)
        if cell.strategy != "certify":
            cell.full_chain = len(us)
            us.append(cell.g)
            vs.append(np.concatenate((np.zeros_like(y), cell.w), axis=1))
    du = max(u.shape[1] for u in us)
    dv = max(v.shape[1] for v in vs)
    return np.stack([_pad(u, du) for u in us]), np.stack([_pad(v, dv) for v in vs])


def _slice_inputs(cells, outputs, n_slices, rng):
    us, vs, count = [], [], 0
    for cell in cells:
        y = outputs[cell.prior_index]
        cell.frames = {"g": random_frames(n_slices, cell.g.shape[1], 1, rng),
                       "y": random_frames(n_slices, y.shape[1], 1, rng)}
        u = project(cell.g, cell.frames["g"])
        vy = project(y, cell.frames["y"])
        if cell.w is None:
            vw = np.zeros_like(vy)
        else:
            cell.frames["w"] = random_frames(n_slices, cell.w.shape[1], 1, rng)
            vw = project(cell.w, cell.frames["w"])
        cell.slices = slice(count, count + n_slices)
        us.append(u)
        vs.append(np.concatenate((vy, vw), axis=2))
        count += n_slices
        if cell.strategy != "certify":
            cell.slices_chain = slice(count, count + n_slices)
            us.append(u)
            vs.append(np.concatenate((np.zeros_like(vy), vw), axis=2))
            count += n_slices
    return np.concatenate(us), np.concatenate(vs)


MAX_STRATA = 8


def _strata_inputs(cells, outputs, min_count, rng, notes):
    """Critic inputs for I(g; M | w = v), one critic per well-populated value v of a discrete w.

    Every stratum is subsampled to the size of the smallest kept stratum so that all stratum
    critics train together; strata rarer than ``min_count`` samples are left out.
    """
    kept = []
    for cell in cells:
        if cell.strategy != "stratify":
            continue
        values, inverse, counts = np.unique(cell.w, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(-counts)[:MAX_STRATA]
        # Strata train together at the smallest kept stratum's size, so rare strata would cut
        # every stratum's certification sample; keep those with ≥ 1/4 of the largest count.
        floor = max(min_count, counts[order[0]] / 4)
        strata = [(values[i], counts[i] / len(cell.w), np.flatnonzero(inverse == i)) for i in order
                  if counts[i] >= floor]
        if not strata:
            notes.append(f"{cell.name}: no value of the public part w has {min_count} samples; "
                         "estimate only (raise 'samples' to stratify)")
            cell.strategy = "estimate-only"
            continue
        covered = sum(mass for _, mass, _ in strata)
        if covered < 0.999:
            notes.append(f"{cell.name}: the stratified estimate covers the {len(strata)} most frequent values of w "
                         f"({100 * covered:.1f}% of the mass); the rest is left out, so it underestimates")
        kept.append((cell, strata))
    if not kept:
        return None
    size = min(len(idx) for _, strata in kept for _, _, idx in strata)
    us, vs = [], []
    for cell, strata in kept:
        for value, p_hat, idx in strata:
            chosen = rng.permutation(idx)[:size]
            cell.strata.append((value, float(p_hat), len(us)))
            us.append(cell.g[chosen])
            vs.append(outputs[cell.prior_index][chosen])
    du, dv = max(u.shape[1] for u in us), max(v.shape[1] for v in vs)
    return np.stack([_pad(u, du) for u in us]), np.stack([_pad(v, dv) for v in vs])


def _difference(estimates, index, chain_index):
    return estimates[index] - (0.0 if chain_index is None else estimates[chain_index])


def run_audit(spec: AuditSpec) -> AuditResult:
    """Audit ``spec.mechanism`` for ε-``spec.notion`` under the priors Θ = ``spec.priors``.

    Returns
    -------
    AuditResult
        ``verdict == "violation"`` iff the certified lower bound exceeds ε (type-I error ≤ α).

    Raises
    ------
    InputError
        Bad inputs, a sample budget too small to certify anything, or (``MechanismError``)
        a mechanism that raises, returns the wrong shape or non-finite values.
    """
    with MechanismRunner(spec.mechanism, spec.mechanism_label, spec.execution, source=spec.mechanism_source,
                         quiet=spec.quiet) as runner:
        return _run_audit(spec, runner)


def _run_audit(spec: AuditSpec, runner: MechanismRunner) -> AuditResult:
    started = time.perf_counter()
    if spec.samples * spec.critic.split[2] < MIN_TEST_SAMPLES:
        need = int(np.ceil(MIN_TEST_SAMPLES / spec.critic.split[2]))
        raise InputError(f"argument 'samples' ({spec.samples}) is too small to certify anything: the held-out "
                         f"split would have fewer than {MIN_TEST_SAMPLES} samples; use at least {need}")
    device = resolve_device(spec.device)
    rng = np.random.default_rng(spec.seed)
    mechanism_rng = np.random.default_rng(rng.integers(2**63))

    # Θ: the declared priors (every audited secret), then any searched two-point priors (only
    # the record that switches can leak under them).
    searched = search_priors(tuple(spec.pairs) + tuple(candidate_pairs(spec.priors[0], spec.prior_search, rng)))
    theta = [(prior, None) for prior in spec.priors] + searched
    priors = [prior for prior, _ in theta]
    # Which tests may refute the claim (and their shares of α), which secrets get critics, how
    # many slices: all fixed before any sampling (audit.plan).
    plan = plan_audit(spec, theta)
    notes = list(spec.notes) + list(plan.notes)
    check_sample_memory(spec.samples, spec.priors[0].shape, len(priors))
    data = [draw_samples(spec, prior, mechanism_rng, runner) for prior in priors]
    notes.extend(runner.notes)
    outputs = [y for _, y in data]
    cells, constant = [], []  # constant: (position in the plan, evidence) of secrets that get no critic
    for position, planned in enumerate(plan.secrets):
        prior = priors[planned.prior_index]
        if planned.deterministic:
            constant.append((position, _constant_evidence(planned, prior)))
            continue
        g, w = planned.pair.evaluate(data[planned.prior_index][0])
        if np.all(g == g[:1]):
            # I(g; ·) of the samples' empirical law is 0 when g takes one value on all of them.
            notes.append(f"{planned.name} under prior {planned.prior_index}: g took one value in all {len(g)} "
                         "samples, so its MI with the output in these samples is 0; it gets no critic and no "
                         "certificate")
            constant.append((position, _constant_evidence(planned, prior)))
            continue
        strategy = planned.pair.strategy(prior)
        if strategy == "stratify" and spec.notion == "smi-dp":
            notes.append(f"{planned.pair.name} under prior {planned.prior_index}: w is discrete and may depend on g; "
                         "the sliced notion is not stratified, so this secret gets the chain-rule estimate only")
            strategy = "estimate-only"
        cells.append(_Cell(planned.prior_index, prior, planned.record, planned.pair, strategy, g, w, position))

    fits = {}
    if plan.full_critics and cells:
        u, v = _full_inputs(cells, outputs)
        fits["full"] = fit_critics(u, v, objective=spec.estimator, config=spec.critic, seed=int(rng.integers(2**31)),
                                   device=device, quiet=spec.quiet, desc="full critics")
        min_count = int(np.ceil(MIN_TEST_SAMPLES / spec.critic.split[2]))
        stacks = _strata_inputs(cells, outputs, min_count, rng, notes)
        if stacks is not None:
            fits["strata"] = fit_critics(*stacks, objective=spec.estimator, config=spec.critic,
                                         seed=int(rng.integers(2**31)), device=device, quiet=spec.quiet,
                                         desc="stratum critics")
    if plan.slices > 0 and cells:
        u, v = _slice_inputs(cells, outputs, plan.slices, rng)
        fits["slices"] = fit_critics(u, v, objective=spec.estimator, config=spec.critic, seed=int(rng.integers(2**31)),
                                     device=device, quiet=spec.quiet, desc="sliced critics")

    certifiable = [c for c in cells if c.certifiable]
    evidence, selected_bound, certified_name, best_candidate, n_certified = _certify(
        spec, plan, cells, certifiable, fits, rng, plan.claim_tests.mi_alpha)
    positions = [c.position for c in cells] + [position for position, _ in constant]
    evidence = [e for _, e in sorted(zip(positions, evidence + [e for _, e in constant]), key=lambda pe: pe[0])]
    estimate = max(e.estimate for e in evidence)
    paper_statistic = None
    if "slices" in fits:
        est = fits["slices"].estimates
        paper_statistic = max(float(np.mean(est[c.slices] - (0 if c.slices_chain is None else est[c.slices_chain])))
                              for c in cells)
    estimate_only = bool(cells) and not certifiable
    if spec.epsilon is None:
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

    dp_mi = event = None
    if spec.notion in RECORD_AUDIT_NOTIONS and selected_bound is not None:
        dp_mi = dp_epsilon_lower_bound_from_mi(selected_bound)
        if spec.event_runs > 0 and best_candidate is not None and best_candidate.kind != "strata":
            target = spec.claim if "event" in plan.claim_tests.alpha_spent else None
            event = _event_test(spec, best_candidate, fits, data, mechanism_rng, runner, plan.claim_tests.event_alpha,
                                target, cells)
    checks = cross_checks(spec.claim, spec.notion, selected_bound, estimate, event, plan.claim_tests)
    claim_verdict = None
    if spec.claim is not None:
        claim_verdict = "refuted" if any(c.certified_contradiction for c in checks) else "not-refuted"
    by_purpose = {"mi": spec.samples * len(priors)}
    if event is not None:
        by_purpose["event_selection"] = event.selection_runs
        by_purpose["event_certification"] = 2 * event.runs_per_input
    return AuditResult(
        verdict=verdict, notion=spec.notion, epsilon=spec.epsilon, alpha=spec.alpha,
        lower_bound=finite_or_none(selected_bound), estimate=estimate, paper_statistic=paper_statistic,
        dp_epsilon_lower_bound_mi=dp_mi,
        dp_epsilon_lower_bound_event=None if event is None else event.epsilon_lower_bound,
        per_record=evidence, cross_checks=checks,
        samples=sum(by_purpose.values()), samples_by_purpose=by_purpose,
        claim=None if spec.claim is None else spec.claim.to_dict(spec.notion, plan.claim_tests.record_support),
        claim_verdict=claim_verdict, claim_alpha=dict(plan.claim_tests.alpha_spent),
        seconds=time.perf_counter() - started, seed=spec.seed, mechanism=spec.mechanism_label,
        priors=[p.describe() for p in priors],
        theta_statement=_theta_statement(spec, len(searched)),
        certified_secret=certified_name, estimate_only=estimate_only, candidates_certified=n_certified,
        event_test=event, slices=plan.slices or None, estimator=spec.estimator, device=str(device),
        training_history={name: fit.history for name, fit in fits.items()}, notes=notes,
    )


FRESH_PRIOR_DRAWS = 100_000


@dataclass(frozen=True, eq=False)
class _Candidate:
    """A certifiable lower bound on a secret's leakage: one critic, or one stratum of w."""

    cell: _Cell
    kind: str  # "full", "slices" or "strata" (the key of its fit)
    index: int  # the critic's index in that fit
    score: float  # what selection ranks by, from the validation split only
    value: object = None  # strata: the value v of w
    mass: float = 1.0  # strata: P̂(w = v) in the audit's samples

    @property
    def label(self) -> str:
        if self.kind == "full":
            return f"{self.cell.name} (full critic)"
        if self.kind == "slices":
            return f"{self.cell.name} (slice {self.index - self.cell.slices.start})"
        return f"{self.cell.name} (stratum w = {np.array2string(np.asarray(self.value), precision=4)})"


def _candidates(cells, fits) -> list:
    """Every critic of a certifiable secret bounds its leakage from below: the full critic, each
    slice (data processing), and for a stratified secret each stratum v through
    I(g; M | w) ≥ P(w = v) I(g; M | w = v)."""
    out = []
    for cell in cells:
        if cell.strategy == "certify":
            out.append(_Candidate(cell, "full", cell.full, fits["full"].validation[cell.full]))
            if "slices" in fits:
                out += [_Candidate(cell, "slices", i, fits["slices"].validation[i])
                        for i in range(cell.slices.start, cell.slices.stop)]
        elif cell.strategy == "stratify":
            out += [_Candidate(cell, "strata", i, mass * fits["strata"].validation[i], value, mass)
                    for value, mass, i in cell.strata]
    return out


class _Certifier:
    """Certified bounds of candidates at a failure probability δ, from the held-out splits.

    A stratum's bound is P̲(w = v) · max(L_v, 0), each factor at δ/2: L_v certifies
    I(g; M | w = v) on the stratum critic's test split, and P̲ is a Clopper–Pearson lower
    bound from fresh draws of the prior (w needs no mechanism run).
    """

    def __init__(self, spec, fits, rng):
        self.spec, self.fits, self.rng = spec, fits, rng
        self._critic_bounds, self._fresh_w = {}, {}

    def critic_bounds(self, kind, delta):
        if (kind, delta) not in self._critic_bounds:
            self._critic_bounds[kind, delta] = certify_critics(self.fits[kind], delta)[0]
        return self._critic_bounds[kind, delta]

    def _mass_lower_bound(self, candidate, delta):
        cell = candidate.cell
        if id(cell) not in self._fresh_w:
            prior = cell.prior
            # Bounded like every other prior call (--timeout): a sampler that hangs on a large
            # request is named instead of stalling the certificate.
            who = f"prior '{prior.describe()}'" if hasattr(prior, "describe") else "prior"
            draws = call_user_code(prior, (FRESH_PRIOR_DRAWS, self.rng), who=who,
                                   timeout=self.spec.execution.timeout,
                                   where=f" drawing {FRESH_PRIOR_DRAWS} fresh databases for a stratum's mass")
            self._fresh_w[id(cell)] = cell.pair.w(draws)
        hits = int(np.all(self._fresh_w[id(cell)] == candidate.value, axis=1).sum())
        return float(clopper_pearson(hits, FRESH_PRIOR_DRAWS, delta)[0])

    def bound(self, candidate, delta) -> float:
        if candidate.kind != "strata":
            return float(self.critic_bounds(candidate.kind, delta)[candidate.index])
        within = float(self.critic_bounds("strata", delta / 2)[candidate.index])
        return self._mass_lower_bound(candidate, delta / 2) * max(within, 0.0)


def _constant_evidence(planned, prior) -> SecretEvidence:
    """A secret whose g is constant under its prior: I(g; M | w) = 0 exactly, nothing to certify."""
    return SecretEvidence(planned.name, planned.record, prior.describe(), "constant", 0.0, None, None)


def _cell_estimate(cell, fits) -> float:
    if cell.strategy == "stratify":
        # Σ_v P̂(w = v) Î(g; M | w = v) over the strata with enough samples (the rest add ≥ 0).
        return float(sum(mass * fits["strata"].estimates[i] for _, mass, i in cell.strata))
    return float(_difference(fits["full"].estimates, cell.full, cell.full_chain))


def _theta_statement(spec, n_searched: int) -> str:
    declared = ("Θ is the declared prior" + ("s" if len(spec.priors) > 1 else "") + ": "
                + "; ".join(p.describe() for p in spec.priors))
    if not n_searched:
        return declared
    return (declared + f"; plus {n_searched} two-point priors on neighbouring pairs (prior search: under DP "
            "semantics Θ is all distributions, and a leak under any member refutes the claim)")


def _certify(spec, plan, cells, certifiable, fits, rng, alpha):
    """Per-secret evidence (bounds simultaneous over all candidates), and the selected certificate, at level α."""
    sliced = fits.get("slices")
    if spec.notion == "smi-dp" and cells:
        return _certify_sliced_average(spec.candidates, plan.slices, cells, certifiable, sliced, alpha)
    candidates = _candidates(cells, fits)
    certifier = _Certifier(spec, fits, rng)
    delta_all = alpha / max(1, len(candidates))
    evidence = []
    for cell in cells:
        per_slice = None
        if sliced is not None:
            per_slice = (sliced.estimates[cell.slices]
                         - (0 if cell.slices_chain is None else sliced.estimates[cell.slices_chain])).tolist()
        own = [c for c in candidates if c.cell is cell]
        bound = max((certifier.bound(c, delta_all) for c in own), default=None)
        evidence.append(SecretEvidence(cell.name, cell.record, cell.prior.describe(),
                                       cell.strategy, _cell_estimate(cell, fits), bound, per_slice))
    if not candidates:
        return evidence, None, None, None, 0
    k = min(spec.candidates, len(candidates))
    chosen = [candidates[i] for i in np.argsort([-c.score for c in candidates])[:k]]
    bounds = [certifier.bound(c, alpha / k) for c in chosen]
    best = int(np.argmax(bounds))
    return evidence, bounds[best], chosen[best].label, chosen[best], k


def _certify_sliced_average(candidates, n_slices, cells, certifiable, fit, alpha):
    """SMI-DP: each secret's certificate is the averaged DV bound over its slices, at level α."""
    lo = fit.output_range[0]
    _, caps = certify_critics(fit, alpha)
    shifts = averaging_shifts(fit.validation_product, caps)

    def averaged(cell, delta):
        s = cell.slices
        return averaged_dv_lower_bound(fit.test_joint[s], fit.test_product[s], lo, caps[s], delta,
                                       shifts=shifts[s])

    evidence = []
    for cell in cells:
        per_slice = fit.estimates[cell.slices] - (0 if cell.slices_chain is None else fit.estimates[cell.slices_chain])
        bound = averaged(cell, alpha / len(certifiable)) if cell.certifiable else None
        evidence.append(SecretEvidence(cell.name, cell.record, cell.prior.describe(),
                                       cell.strategy, float(np.mean(per_slice)), bound, per_slice.tolist()))
    if not certifiable:
        return evidence, None, None, None, 0
    k = min(candidates, len(certifiable))
    scores = np.array([fit.validation[c.slices].mean() for c in certifiable])
    chosen = [certifiable[i] for i in np.argsort(-scores)[:k]]
    bounds = [averaged(c, alpha / k) for c in chosen]
    best = int(np.argmax(bounds))
    cell = chosen[best]
    # The event test uses the single most informative slice of the chosen secret.
    index = cell.slices.start + int(np.argmax(fit.validation[cell.slices]))
    candidate = _Candidate(cell, "slices", index, float(fit.validation[index]))
    return evidence, bounds[best], f"{cell.name} (average over {n_slices} slices)", candidate, k


def _features(cell, kind, index, dbs, outputs):
    """Critic inputs (u, v) of one critic on new databases and outputs, as at training."""
    g, w = cell.pair.evaluate(dbs)
    if kind == "full":
        v = outputs if w is None else np.concatenate((outputs, w), axis=1)
        return g, v
    s = index - cell.slices.start
    u = g @ cell.frames["g"][s]
    vy = outputs @ cell.frames["y"][s]
    vw = np.zeros_like(vy) if w is None else w @ cell.frames["w"][s]
    return u, np.concatenate((vy, vw), axis=1)


def _critic_statistic(candidate, fits):
    """The chosen critic as a log-likelihood-ratio statistic between two values of its record:
    ``statistic(a, b, dbs, outputs) = T(a, y, rest) − T(b, y, rest)`` on each row."""
    cell, kind, index = candidate.cell, candidate.kind, candidate.index
    scorer = fits[kind].scorer
    record = cell.record
    width_u, width_v = scorer.input_widths(index)

    def statistic(first, second, dbs, outputs):
        t = []
        for value in (first, second):
            batch = dbs.copy()
            batch[:, record] = value
            u, v = _features(cell, kind, index, batch, outputs)
            t.append(scorer(index, _pad(u, width_u), _pad(v, width_v)))
        return t[0] - t[1]
    return statistic


#: Structured pairs (StatDP patterns) the event search tries on the chosen critic's record under a
#: declared prior that is not a two-point prior (the critic generalizes over the other records).
STRUCTURED_EVENT_PAIRS = 8


def _cell_critic(cell, fits):
    """A cell's critic for the event test: its full critic, else its best slice on the validation split."""
    if "full" in fits and cell.full is not None:
        return _Candidate(cell, "full", cell.full, float(fits["full"].validation[cell.full]))
    if "slices" in fits and cell.slices is not None:
        index = cell.slices.start + int(np.argmax(fits["slices"].validation[cell.slices]))
        return _Candidate(cell, "slices", index, float(fits["slices"].validation[index]))
    return None


def _event_test(spec, candidate, fits, data, rng, runner, alpha, claim=None, cells=()):
    """The event search (:func:`audit.event_search.event_search`) over candidate pairs, in order:
    each two-point prior of Θ on a neighbouring pair (the declared ones, the user's and a catalog's
    pairs, then the prior search's structured and random pairs) with its own critic (the MI test's
    chosen critic for its cell); then, when the chosen critic's prior is not such a two-point prior,
    structured pairs on its record (StatDP patterns, column levels read from the audit's draws of
    that prior) and pairs of its values on a base database of the validation split."""
    pairs = []
    for cell in cells:
        if cell.strategy == "certify" and neighbouring_pair_of(cell.prior, cell.record) is not None:
            critic = candidate if candidate.cell is cell else _cell_critic(cell, fits)
            if critic is not None:
                pairs.append(PairCandidate(cell.prior.first, cell.prior.second, cell.record,
                                           _critic_statistic(critic, fits), f"the pair of prior {cell.prior_index} of Θ"))
    cell, kind = candidate.cell, candidate.kind
    if neighbouring_pair_of(cell.prior, cell.record) is None:
        dbs, _ = data[cell.prior_index]
        statistic = _critic_statistic(candidate, fits)
        structured = structured_pairs(cell.prior, STRUCTURED_EVENT_PAIRS, rng, records=(cell.record,), observed=dbs)
        pairs += [PairCandidate(p.first, p.second, cell.record, statistic, p.why) for p in structured]
        validation = fits[kind].split[1]
        values = np.unique(dbs[validation[:256], cell.record, :], axis=0)[:4]
        pairs += value_pairs(dbs[validation[0]], cell.record, values, statistic,
                             "values and base database from the validation split")
    return event_search(pairs, runner=runner, rng=rng, runs=spec.event_runs, alpha=alpha, delta=spec.delta,
                        claim=claim)
