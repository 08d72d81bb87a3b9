"""Study ``dpsgd-audit``: auditing DP-SGD training runs against their accountant's claims.

Setting: logistic regression on a small generated training set (:mod:`mechanisms.training`),
full-batch DP-SGD (q = 1, T steps, C = 1) whose last training example is the canary, against the
neighbour where it is a null record (add/remove of the canary). For each target ε ∈ {1, 2, 4, 8}
at δ = 1e-5 the noise multiplier σ is the accountant's (:func:`noise_for_epsilon`, dp-accounting's
RDP accountant). This is the threat model of Nasr et al. (2021, 2023) where the adversary crafts
the canary: white-box with a Dirac gradient canary and every update visible (release
``gradient_trace``), or black-box with an input-space canary whose loss on the final model is
released (release ``loss``). No published numbers are quoted: those papers audit CIFAR-10 / MNIST
models with many more runs, a setting that does not match this one.

Measured:

- ``dpsgd_epsilon``: for each ε and release, the audit's certified ε lower bound of the event test
  (:func:`audit.engine.run_audit`, claim = the accountant's (ε, δ)) against the accountant's ε
  (RDP, the claim, and PLD, tight up to discretisation); the MI route's bound too. A certified
  bound is a lower bound with confidence 1 − α. Only the canary's record is audited (the other
  records are fixed by the two-point prior, so auditing them would only split α).
- ``dpsgd_dimension``: sliced against full-dimensional MI on the final parameters (d = p + 1),
  the SMI-DP audit (averaged DV over the slices) against the MI-DP audit (full critic only), at a
  large leak (σ small), as the number of features grows.
- ``dpsgd_gaussian_dp``: the certified μ of Gaussian DP (:mod:`audit.certificates.gaussian_dp`) of the white-box
  gradient canary on ``catalog:dpsgd_s1_q1_t4`` (full batch, exactly μ = 2), against the targets of
  issue 33 (μ̲ ≥ 0.95 μ at 10⁴ runs per input, ≥ 0.85 μ at 10³), with the event test's certified ε at
  δ = 1e-5 against the budget's optimum (:func:`audit.certificates.gaussian_dp.optimal_event_epsilon` at the true μ)
  and the ε the certified μ implies under the GDP assumption (an estimate). Where an event's frequencies on the
  selection draws exceed the claim gdp:2's privacy profile (sampling noise does so on an exactly 2-GDP pair), the
  event test takes the δ-optimal event, chosen to refute the claim (:func:`audit.search.claim_events.choose_events`),
  not the one with the largest ε at δ = 1e-5, so that ε can sit well below the optimum: on the first white-box
  audit at 10³ runs (CPU, seed 0) the δ-optimal event certifies ε 1.63 where the ε-optimal one certifies 3.00 on
  the same runs, with the same μ̲ (1.866). Beside it, black-box final-model
  audits of the same training (the loss on an input canary): an out-of-distribution canary from zero and from
  the worst-case initialisation, a mislabelled in-distribution canary from zero (no search), and the canary and
  initialisation chosen by the black-box search of Annamalai and De Cristofaro (2024)
  (:func:`audit.search.last_iterate.search_last_iterate`, on its own pilot runs; fresh runs certify it).
- ``dpsgd_one_run``: one-run audits (Steinke, Nasr and Jagielski 2023; :mod:`audit.one_run`) of one DP-SGD
  run on scikit-learn's digits at accountant ε = 4 (δ = 1e-5) with m canaries each included by a fair coin
  (:mod:`mechanisms.training.one_run_digits`): white-box Dirac gradient canaries (m = 1000; σ from the RDP
  and from the PLD accountant) and black-box input canaries (m = 800, minus the loss), against issue 33's
  target ε_lb/ε ≥ 0.45 at m = 1000. Beside each certificate (one pre-chosen k), the best over a small grid of
  k fixed in advance, certified with α split equally (:func:`audit.one_run.guess_grid`), and the best ε_lb over
  k chosen *after* seeing the scores (at full α: not a certificate), for comparison with papers that report that.
- ``dpsgd_detection``: for each buggy variant of :mod:`mechanisms.catalog.dpsgd`, whether the
  audit with its claim certifies a contradiction, against the number of training runs per database.

With ``--workers K`` :func:`run` pipelines the stages (:func:`~experiments.stage_pipeline.run_stages`): every
stage's audits queued at once, largest first (:func:`_size`), the μ rows' search and the one-run stage in this
process meanwhile, each table written when its own audits are done (a stage spans from its first audit's start to
its table's writing: spans overlap). The page gives the spans and the workers' occupancy. Each audit draws from its
own seed: the tables are the same for any K and any order.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from audit.engine import run_audit
from audit.spec import AuditSpec
from estimators.neural import CriticConfig
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.training import DPSGD, dpsgd_claim, gaussian_training_set, gradient_canary, input_canary, \
    null_record, with_record
from mechanisms.training.accountant import dpsgd_epsilon, noise_for_epsilon
from mechanisms.catalog.dpsgd import entries as dpsgd_entries
from mechanisms.training.torch_dpsgd import on_device

from .audit_power import flag_routes
from .dpsgd_one_run import ONE_RUN_EPSILON, ONE_RUN_SETTINGS, ONE_RUN_TARGET, one_run_rows
from .framework import Experiment, ExperimentOutput, Table, new_figure
from .row_pool import JobPool
from .stage_pipeline import StagePlan, pool_finding, run_stages

ALPHA = 0.05
DELTA = 1e-5
RECORDS = 16
# The MI level (nats) of the dimension study's audits: below the leak of σ = 0.5 (the two-point
# prior caps the MI at log 2 ≈ 0.69 nats).
DIMENSION_EPSILON = 0.1
BUGGY = ("dpsgd_no_clipping", "dpsgd_unscaled_noise", "dpsgd_reused_noise", "dpsgd_shuffle_as_poisson",
         "dpsgd_wrong_sampling_rate")


@dataclass(frozen=True)
class DPSGDGrid:
    """What a run covers."""

    epsilons: tuple
    steps: int
    runs: int  # training runs per audit (the estimation samples; the event test draws as many again)
    dims: tuple  # feature counts of the parameter-release audits
    dimension_sigma: float
    budgets: tuple
    repeats: int
    critic: CriticConfig
    slices: int
    variants: tuple = BUGGY  # the buggy variants of the detection study
    hidden: int = 0  # hidden units of the dimension study's model (0: logistic regression; > 0: torch MLP)
    torch: bool = False  # train with TorchDPSGD on the run's device (the GPU grid) instead of NumPy
    mu_runs: tuple = (1000, 10000)  # runs per input of the μ-certificate rows
    mu_repeats: int = 3
    mu_white_box_repeats: int = 10  # repeats of the white-box rows, which carry the targets
    mu_ideal_repeats: int = 200  # simulated certificates on ideal Gaussian scores per budget (the reference rows)
    one_run_repeats: int = 5  # training runs (seeds) per one-run setting

    def to_dict(self) -> dict:
        return {"target ε": list(self.epsilons), "δ": DELTA, "steps T": self.steps, "q": 1.0, "clip C": 1.0,
                "records n": RECORDS, "training runs per audit": self.runs, "parameter-release features": list(self.dims),
                "σ of the dimension study": self.dimension_sigma, "detection budgets": list(self.budgets),
                "repeats": self.repeats, "critic max_steps": self.critic.max_steps, "slices": self.slices, "α": ALPHA,
                "buggy variants": list(self.variants), "dimension-study hidden units": self.hidden,
                "trainer": "TorchDPSGD" if self.torch else "DPSGD (NumPy)",
                "μ rows: runs per input": list(self.mu_runs), "μ rows: repeats": self.mu_repeats,
                "μ rows: white-box repeats": self.mu_white_box_repeats,
                "μ rows: ideal-score certificates": self.mu_ideal_repeats,
                "one-run repeats": self.one_run_repeats}


def quick_grid() -> DPSGDGrid:
    return DPSGDGrid(epsilons=(8.0,), steps=4, runs=400, dims=(4,), dimension_sigma=0.5, budgets=(400,),
                     repeats=1, critic=CriticConfig(max_steps=40), slices=2,
                     variants=("dpsgd_no_clipping", "dpsgd_reused_noise"), mu_runs=(1000,), mu_repeats=1,
                     mu_white_box_repeats=1, mu_ideal_repeats=20,
                     one_run_repeats=1)


def full_grid() -> DPSGDGrid:
    # Sized to finish in minutes on a shared 2-core CPU (full_runtime below).
    return DPSGDGrid(epsilons=(1.0, 2.0, 4.0, 8.0), steps=4, runs=10000, dims=(4, 16, 64), dimension_sigma=0.5,
                     budgets=(1000, 4000, 16000), repeats=2, critic=CriticConfig(max_steps=1000), slices=4)


def gpu_grid() -> DPSGDGrid:
    """The default on a CUDA device (``--grid gpu``), sized to finish well inside a GPU lease of 8 minutes: the CPU
    grid's runs and budgets with one repeat, the default critic (2000 steps), and a one-hidden-layer MLP (32 units)
    for the parameter release, whose d = 32·p + 65 reaches 8257 at p = 256, trained by TorchDPSGD on the GPU."""
    return DPSGDGrid(epsilons=(1.0, 2.0, 4.0, 8.0), steps=4, runs=10000, dims=(4, 16, 64, 256), dimension_sigma=0.5,
                     budgets=(1000, 4000, 16000), repeats=1, critic=CriticConfig(), slices=8, hidden=32, torch=True,
                     mu_runs=(1000, 10000), mu_repeats=1, mu_white_box_repeats=3, mu_ideal_repeats=50,
                     one_run_repeats=2)


def gpu_full_grid() -> DPSGDGrid:
    """``--grid gpu-full``, for a longer lease: 50,000 runs, budgets to 64,000, 16 slices, three repeats."""
    return DPSGDGrid(epsilons=(1.0, 2.0, 4.0, 8.0), steps=4, runs=50000, dims=(4, 16, 64, 256), dimension_sigma=0.5,
                     budgets=(1000, 4000, 16000, 64000), repeats=3, critic=CriticConfig(), slices=16, hidden=32,
                     torch=True)


def _trainer(mechanism, grid: DPSGDGrid, device, **changes):
    """The mechanism as the grid trains it: NumPy as given, or :class:`TorchDPSGD` on ``device``."""
    if not grid.torch and not changes:
        return mechanism
    return on_device(mechanism, "cuda" if str(device).startswith("cuda") else "cpu", **changes)


def _seed(context_seed: int, *stream) -> int:
    return int(np.random.default_rng([context_seed, *stream]).integers(2**31))


def _audit(mechanism, pair, claim, runs, notion, slices, critic, seed, device):
    """Audit with the claim's MI level (Pufferfish paper Thm 1: ε-DP ⇒ min(ε, ε²/2)-MI DP), or
    :data:`DIMENSION_EPSILON` nats without a claim."""
    if claim is None:
        level = DIMENSION_EPSILON
    else:
        eps = claim.parameters()["epsilon"]
        level = min(eps, eps**2 / 2)
    return run_audit(AuditSpec(mechanism=mechanism, priors=[pair.prior()], notion=notion, epsilon=level,
                               samples=runs, slices=slices, event_runs=runs, delta=DELTA, claim=claim, alpha=ALPHA,
                               records=(pair.record_shape[0] - 1,), critic=critic, seed=seed, device=device,
                               # The canary against a null record is add/remove (mechanisms.training.records):
                               # the pair encodes absence itself, so no presence column.
                               relation="replace-one" if claim is None else claim.relation, presence_column=False))


def _nan(value) -> float:
    return math.nan if value is None else float(value)


def _columns(keys, rows) -> dict:
    """The table's columns ``keys`` from its rows (dicts), in order."""
    return {key: [row[key] for row in rows] for key in keys}


def _size(mechanism, runs: int, slices: int = 0) -> float:
    """A job's size for the pool's longest-first order: runs × (the critic's input width d + the slices' critics),
    a cheap estimate of an audit's training and critic work (only its order matters)."""
    return float(runs * (getattr(mechanism, "output_dim", 1) + slices))


def _audit_plan(name: str, keys: tuple, settings: list, jobs: list, finish) -> StagePlan:
    """The stage of :func:`_audit` jobs whose rows are ``finish(setting, result)``; its table, their ``keys``."""
    def table(results):
        return _columns(keys, [finish(row, result) for row, result in zip(settings, results)])

    return StagePlan(name, _audit, jobs, table, sizes=[_size(job[0], job[3], job[5]) for job in jobs])


def epsilon_jobs(grid: DPSGDGrid, device, seed: int) -> tuple[list, list]:
    """(each audit's settings, its :func:`_audit` arguments) of the ``dpsgd_epsilon`` rows: for each target ε of
    the grid, the white-box gradient canary and the black-box loss of an input canary, in that order."""
    base = gaussian_training_set(RECORDS - 1, 1, seed=seed)
    canaries = {"gradient_trace": gradient_canary(base), "loss": input_canary(base, value=4.0, label=1.0)}
    settings, jobs = [], []
    for i, target in enumerate(grid.epsilons):
        sigma = noise_for_epsilon(target, 1.0, grid.steps, DELTA)
        claim = dpsgd_claim(sigma, 1.0, grid.steps, DELTA)
        pld = dpsgd_epsilon(sigma, 1.0, grid.steps, DELTA, accountant="pld")
        for j, (release, canary) in enumerate(canaries.items()):
            pair = NeighbouringPair(with_record(base, canary), with_record(base, null_record(base)))
            mechanism = _trainer(DPSGD(RECORDS, 2, sigma, steps=grid.steps, release=release, canary=canary), grid,
                                 device)
            settings.append({"target_epsilon": target, "sigma": sigma, "accountant_epsilon": claim.parameters()["epsilon"],
                             "pld_epsilon": pld, "release": release,
                             "canary": "gradient (white-box)" if release == "gradient_trace" else "input (black-box)"})
            jobs.append((mechanism, pair, claim, grid.runs, "mi-dp", grid.slices if release != "loss" else 0,
                         grid.critic, _seed(seed, 1, i, j), device))
    return settings, jobs


def epsilon_plan(grid: DPSGDGrid, device, seed: int) -> StagePlan:
    """The ``dpsgd_epsilon`` stage's audits (certified ε against the accountant's, each ε and release)."""
    settings, jobs = epsilon_jobs(grid, device, seed)
    return _audit_plan("dpsgd_epsilon", (
        "target_epsilon", "sigma", "accountant_epsilon", "pld_epsilon", "release", "canary",
        "dp_epsilon_lower_bound_event", "dp_epsilon_lower_bound_mi", "mi_lower_bound", "mi_estimate", "refuted",
        "runs", "seconds"), settings, jobs, lambda row, result: {
        **row, "dp_epsilon_lower_bound_event": _nan(result.dp_epsilon_lower_bound_event),
        "dp_epsilon_lower_bound_mi": _nan(result.dp_epsilon_lower_bound_mi),
        "mi_lower_bound": _nan(result.lower_bound), "mi_estimate": result.estimate,
        "refuted": any(flag_routes(result)), "runs": grid.runs, "seconds": result.seconds})


def dimension_plan(grid: DPSGDGrid, device, seed: int) -> StagePlan:
    """The ``dpsgd_dimension`` stage's audits (MI-DP against SMI-DP on the final parameters, each d)."""
    settings, jobs = [], []
    for i, features in enumerate(grid.dims):
        base = gaussian_training_set(RECORDS - 1, features - 1, seed=seed)
        pair = NeighbouringPair(with_record(base, gradient_canary(base)), with_record(base, null_record(base)))
        mechanism = DPSGD(RECORDS, features, grid.dimension_sigma, steps=grid.steps, release="parameters")
        mechanism = _trainer(mechanism, grid, device, **({"hidden": grid.hidden} if grid.hidden else {}))
        for notion, slices in (("mi-dp", 0), ("smi-dp", grid.slices)):
            settings.append({"features": features, "parameters_d": mechanism.output_dim, "notion": notion,
                             "slices": slices})
            jobs.append((mechanism, pair, None, grid.runs, notion, slices, grid.critic, _seed(seed, 2, i), device))
    return _audit_plan("dpsgd_dimension", (
        "features", "parameters_d", "notion", "slices", "mi_lower_bound", "mi_estimate", "detected", "seconds"),
        settings, jobs, lambda row, result: {
        **row, "mi_lower_bound": _nan(result.lower_bound), "mi_estimate": result.estimate,
        "detected": result.verdict == "violation", "seconds": result.seconds})


def detection_plan(grid: DPSGDGrid, device, seed: int) -> StagePlan:
    """The ``dpsgd_detection`` stage's audits (each buggy variant, budget and repeat against its claim)."""
    catalog = {e.name: e for e in dpsgd_entries()}
    settings, jobs = [], []
    for i, name in enumerate(grid.variants):
        entry = catalog[name]
        for budget in grid.budgets:
            for repeat in range(grid.repeats):
                settings.append({"variant": name, "claimed": entry.claimed.text, "true_guarantee": entry.true.text,
                                 "runs": budget, "repeat": repeat})
                jobs.append((_trainer(entry.mechanism, grid, device), entry.pairs[0], entry.claimed.as_claim(name),
                             budget, "mi-dp", grid.slices, grid.critic, _seed(seed, 3, i, budget, repeat), device))
    return _audit_plan("dpsgd_detection", (
        "variant", "claimed", "true_guarantee", "runs", "repeat", "refuted", "dp_epsilon_lower_bound_event",
        "seconds"), settings, jobs, lambda row, result: {
        **row, "refuted": any(flag_routes(result)),
        "dp_epsilon_lower_bound_event": _nan(result.dp_epsilon_lower_bound_event), "seconds": result.seconds})


#: The μ-certificate rows' mechanism (exactly μ = 2 Gaussian DP) and issue 33's targets μ̲/μ per runs per input.
GDP_ENTRY, GDP_TRUE_MU = "dpsgd_s1_q1_t4", 2.0
MU_TARGETS = {1000: 0.85, 10000: 0.95}


#: Pilot runs per database per candidate of the black-box search (audit.search.last_iterate).
SEARCH_PILOT_RUNS = 1000
NO_SEARCH_LABEL = "mislabelled input, loss, zero init (black-box, no search)"
SEARCH_LABEL = "searched canary and init, loss (black-box)"


def _gdp_settings(entry, runs: int, seed: int, device):
    """(canary label, mechanism, pair) of the μ rows: the catalog's white-box run, and black-box loss releases of
    the same training: an input canary on the canary coordinate (value 4) from zero and from the worst-case
    initialisation (:func:`mechanisms.training.dpsgd.worst_case_init`, Annamalai and De Cristofaro 2024); a
    mislabelled in-distribution point from zero (the canary a black-box auditor without a search would use);
    and the canary and initialisation that :func:`audit.search.last_iterate.search_last_iterate` chooses on
    pilot runs of its own (fresh runs certify it, so α is unchanged)."""
    from dataclasses import replace

    from mechanisms.catalog.dpsgd import canary_pair
    from mechanisms.training.dpsgd import worst_case_init
    from audit.search.last_iterate import candidate_canaries, search_last_iterate

    settings = [("gradient (white-box)", entry.mechanism, entry.pairs[0], "")]
    base = canary_pair(canary=None).first[:-1]
    canary = input_canary(base, value=4.0, label=1.0)
    pair = canary_pair(canary=canary)
    loss = replace(entry.mechanism, release="loss", canary=tuple(canary))
    settings.append(("input, loss (black-box)", loss, pair, ""))
    settings.append(("input, loss, worst-case init (black-box)",
                     replace(loss, init=tuple(worst_case_init(loss.features, canary))), pair, ""))
    mislabelled = candidate_canaries(base)["mislabelled"]
    settings.append((NO_SEARCH_LABEL, replace(loss, canary=tuple(mislabelled)), canary_pair(canary=mislabelled), ""))
    search = search_last_iterate(entry.mechanism, base, pilot_runs=SEARCH_PILOT_RUNS, certification_runs=runs,
                                 seed=_seed(seed, 6, runs), device="cuda" if str(device).startswith("cuda") else "cpu")
    pilot = "; ".join(f"{c.label} {c.predicted_mu:.3f}" for c in search.candidates)
    settings.append((SEARCH_LABEL, search.mechanism, search.pair,
                     f"chosen: {search.chosen.label} (pilot predicted μ̲: {pilot})"))
    return settings


def gaussian_dp_plan(grid: DPSGDGrid, device, seed: int) -> StagePlan:
    """The ``dpsgd_gaussian_dp`` stage's audits: the certified μ at each budget (claim gdp:2, δ = 1e-5), the
    white-box gradient canary against the black-box loss of an input canary (:func:`_gdp_settings`, which runs
    the black-box search here); its table adds :func:`ideal_mu_rows`."""
    from mechanisms.claims.parsing import parse_claim
    from mechanisms.catalog.dpsgd import FACTORIES

    entry = FACTORIES[GDP_ENTRY]()
    claim = parse_claim(f"gdp:{GDP_TRUE_MU:g}")
    settings, jobs = [], []
    for (label, mechanism, pair, search), runs in ((s, r) for r in grid.mu_runs
                                                   for s in _gdp_settings(entry, r, seed, device)):
        for repeat in range(grid.mu_white_box_repeats if label.startswith("gradient") else grid.mu_repeats):
            settings.append({"canary": label, "search": search, "runs": runs, "repeat": repeat})
            jobs.append((_trainer(mechanism, grid, device), pair, claim, runs, grid.critic,
                         _seed(seed, 4, runs, repeat), device))
    return StagePlan("dpsgd_gaussian_dp", _gdp_audit, jobs, lambda results: _gdp_table(grid, seed, settings, results),
                     sizes=[_size(job[0], job[3]) for job in jobs])


def _gdp_table(grid: DPSGDGrid, seed: int, settings: list, results: list) -> dict:
    from audit.certificates.gaussian_dp import optimal_event_epsilon

    rows = []
    for row, result in zip(settings, results):
        certificate = result.event_test.gaussian_dp
        # The best the event test could certify at its level (its share of α) on an exactly 2-GDP pair.
        optimum = optimal_event_epsilon(GDP_TRUE_MU, row["runs"], result.event_test.alpha, DELTA)
        target = MU_TARGETS.get(row["runs"], math.nan) if row["canary"].startswith("gradient") else math.nan
        rows.append({**row, "mu_lower_bound": certificate.mu_lower_bound,
                     "mu_ratio": certificate.mu_lower_bound / GDP_TRUE_MU, "target_ratio": target,
                     "target_met": certificate.mu_lower_bound / GDP_TRUE_MU >= target,
                     "gdp_alpha": certificate.alpha, "event_alpha": result.event_test.alpha,
                     "epsilon_estimate": _nan(certificate.epsilon_estimate),
                     "event_epsilon_at_delta": _nan(result.event_test.epsilon_lower_bound_at_delta),
                     "event_optimum": optimum, "refuted": result.claim_verdict == "refuted", "seconds": result.seconds})
    for runs in grid.mu_runs:
        gdp_alpha = next(row["gdp_alpha"] for row in rows if row["runs"] == runs and row["canary"].startswith("gradient"))
        rows.extend(ideal_mu_rows(runs, gdp_alpha, grid.critic.split, grid.mu_ideal_repeats, _seed(seed, 7, runs)))
    return _columns(("canary", "search", "runs", "repeat", "mu_lower_bound", "mu_ratio", "target_ratio", "target_met",
                     "gdp_alpha", "event_alpha", "epsilon_estimate", "event_epsilon_at_delta", "event_optimum",
                     "refuted", "seconds"), rows)


def dimension_rows(grid: DPSGDGrid, device, seed: int, pool: JobPool | None = None) -> dict:
    """The parameter-release stage's table alone (each stage's: ``*_plan(...).rows(pool)``)."""
    return dimension_plan(grid, device, seed).rows(pool)


def _gdp_audit(mechanism, pair, claim, runs: int, critic, seed: int, device):
    """One μ row's audit of ``pair`` against the claim gdp:2 at ``runs`` runs per input."""
    return run_audit(AuditSpec(mechanism=mechanism, priors=[pair.prior()], notion="mi-dp", epsilon=GDP_TRUE_MU,
                               samples=runs, event_runs=runs, delta=DELTA, claim=claim, alpha=ALPHA,
                               records=(pair.record_shape[0] - 1,), critic=critic, seed=seed, device=device))


IDEAL_LABEL = f"ideal scores N({GDP_TRUE_MU:g}, 1) vs N(0, 1) (simulated reference)"


def ideal_mu_rows(runs: int, alpha: float, split, repeats: int, seed: int) -> list:
    """The μ certificate on ideal scores: what the audit's certificate gives when its statistic is the best there is.

    An exactly μ-GDP pair's best statistic has the law N(μ, 1) under the first input and N(0, 1) under
    the second (Dong, Roth and Su 2022, Theorem 2.10). Each row draws ``runs`` certification scores per
    input and, as selection scores, as many per input as an audit of ``runs`` samples holds out of its
    critic's training (the validation and test shares of ``split``, half per input), and certifies μ̲
    with :func:`audit.certificates.gaussian_dp.gdp_certificate` at ``alpha`` (the audit's share for the μ test).
    The spread of these μ̲ is the certificate's own at the budget: an audit's μ̲ cannot be expected to
    beat it.
    """
    from audit.certificates.gaussian_dp import gdp_certificate, optimal_event_epsilon

    rng = np.random.default_rng(seed)
    held = max(1, int(round(runs * (split[1] + split[2]) / 2)))
    optimum = optimal_event_epsilon(GDP_TRUE_MU, runs, alpha, DELTA)
    target = MU_TARGETS.get(runs, math.nan)
    rows = []
    for repeat in range(repeats):
        started = time.perf_counter()
        first, second = rng.normal(GDP_TRUE_MU, 1.0, runs), rng.normal(0.0, 1.0, runs)
        selection = (rng.normal(GDP_TRUE_MU, 1.0, held), rng.normal(0.0, 1.0, held))
        certificate = gdp_certificate(first, second, alpha=alpha, selection=selection, delta=DELTA)
        rows.append({"canary": IDEAL_LABEL, "search": f"{held} selection scores per input", "runs": runs,
                     "repeat": repeat, "mu_lower_bound": certificate.mu_lower_bound,
                     "mu_ratio": certificate.mu_lower_bound / GDP_TRUE_MU, "target_ratio": target,
                     "target_met": certificate.mu_lower_bound / GDP_TRUE_MU >= target, "gdp_alpha": alpha,
                     "event_alpha": math.nan, "epsilon_estimate": _nan(certificate.epsilon_estimate),
                     "event_epsilon_at_delta": math.nan, "event_optimum": optimum, "refuted": False,
                     "seconds": time.perf_counter() - started})
    return rows


def _one_run_table(grid: DPSGDGrid, seed: int, device) -> dict:
    """The one-run rows (:func:`experiments.dpsgd_one_run.one_run_rows`); the GPU grids train them on the GPU."""
    seeds = [[_seed(seed, 5, i, repeat) for repeat in range(grid.one_run_repeats)] for i in range(len(ONE_RUN_SETTINGS))]
    return one_run_rows(seeds, "cuda" if grid.torch and str(device).startswith("cuda") else "cpu", ALPHA, DELTA)


def _findings(eps: dict, dim: dict, det: dict, grid: DPSGDGrid, gdp: dict | None = None,
              one: dict | None = None) -> list:
    findings = []
    for release in ("gradient_trace", "loss"):
        rows = [i for i, r in enumerate(eps["release"]) if r == release]
        parts = ", ".join(f"ε = {eps['accountant_epsilon'][i]:.2f} (PLD {eps['pld_epsilon'][i]:.2f}): "
                          f"{eps['dp_epsilon_lower_bound_event'][i]:.2f} (MI route "
                          f"{eps['dp_epsilon_lower_bound_mi'][i]:.2f})" for i in rows)
        findings.append(f"{release} canary, accountant ε (RDP; PLD) vs certified ε lower bound (event test; MI "
                        f"route), {grid.runs} runs per database, α = {ALPHA}: {parts}.")
    parts = "; ".join(f"d = {d}, {n}: bound {b:.3f} nats, estimate {e:.3f}"
                      for d, n, b, e in zip(dim["parameters_d"], dim["notion"], dim["mi_lower_bound"], dim["mi_estimate"]))
    findings.append(f"Final parameters at σ = {grid.dimension_sigma}: {parts}.")
    variants = list(dict.fromkeys(det["variant"]))
    parts = []
    for v in variants:
        rates = ", ".join(f"{b} runs: {sum(1 for x, r, f in zip(det['variant'], det['runs'], det['refuted']) if x == v and r == b and f)}"
                          f"/{sum(1 for x, r in zip(det['variant'], det['runs']) if x == v and r == b)}" for b in grid.budgets)
        parts.append(f"{v} ({rates})")
    findings.append("Buggy variants refuted (certified contradiction of the claim): " + "; ".join(parts) + ".")
    if gdp is not None:
        parts = []
        for label, runs in ((c, r) for c in dict.fromkeys(gdp["canary"]) for r in grid.mu_runs):
            rows = [i for i, r in enumerate(gdp["runs"]) if r == runs and gdp["canary"][i] == label]
            mus = [gdp["mu_lower_bound"][i] for i in rows]
            target = MU_TARGETS.get(runs, math.nan)
            met = sum(m / GDP_TRUE_MU >= target for m in mus)
            if label == IDEAL_LABEL:
                parts.append(f"{label}, {runs} runs per input, {len(mus)} simulated certificates: mean μ̲ "
                             f"{np.mean(mus):.3f} (ratio {np.mean(mus) / GDP_TRUE_MU:.3f}), sd {np.std(mus):.3f}, lowest "
                             f"{np.min(mus):.3f}; {met} of {len(mus)} at or above {target:.2f} μ")
                continue
            events = ", ".join(f"{gdp['event_epsilon_at_delta'][i]:.2f}" for i in rows)
            estimates = ", ".join(f"{gdp['epsilon_estimate'][i]:.2f}" for i in rows)
            reached = f", {met} of {len(mus)} audits at or above it" if label.startswith("gradient") else ""
            parts.append(f"{label}, {runs} runs per input: certified μ {', '.join(f'{m:.3f}' for m in mus)} (mean ratio "
                         f"{np.mean(mus) / GDP_TRUE_MU:.3f}, target {target:.2f}{reached}); event "
                         f"test ε at δ = {DELTA:g} (a δ-optimal event where chosen to refute the claim): {events} (optimum "
                         f"{gdp['event_optimum'][rows[0]]:.2f}); "
                         f"GDP ε estimate {estimates}")
        findings.append(f"{GDP_ENTRY} (exactly μ = {GDP_TRUE_MU:g}-GDP with the white-box gradient canary; at most "
                        f"that with the input canary), claim gdp:{GDP_TRUE_MU:g}: " + "; ".join(parts) + ".")
        choices = "; ".join(f"{r} runs: {c}" for r, c in dict(
            (r, c) for r, c, label in zip(gdp["runs"], gdp["search"], gdp["canary"]) if label == SEARCH_LABEL).items())
        findings.append(f"Black-box search (Annamalai and De Cristofaro 2024; {SEARCH_PILOT_RUNS} pilot runs per input "
                        f"per candidate, not reused; fresh runs certify the choice, so α is unchanged): {choices}.")
    if one is not None:
        parts = []
        for kind, accountant, m in ONE_RUN_SETTINGS:
            rows = [i for i in range(len(one["canary"])) if one["canary"][i] == kind and one["accountant"][i] == accountant]
            bounds = ", ".join(f"{one['epsilon_lower_bound'][i]:.2f}" for i in rows)
            hindsight = ", ".join(f"{one['hindsight_best_not_certified'][i]:.2f}" for i in rows)
            over_grid = ", ".join(f"{one['grid_certified'][i]:.2f}" for i in rows)
            parts.append(f"{kind} canaries, {accountant.upper()} σ, m = {m}: certified ε_lb {bounds} (mean ratio "
                         f"{np.mean([one['ratio'][i] for i in rows]):.3f}); best over the guess grid, certified "
                         f"(α split): {over_grid} (mean ratio {np.mean([one['grid_ratio'][i] for i in rows]):.3f}); "
                         f"best k after the fact, not certified: {hindsight}")
        findings.append(f"One-run audits of DP-SGD on digits at accountant ε = {ONE_RUN_EPSILON:g}, δ = {DELTA:g} "
                        f"(target ratio {ONE_RUN_TARGET} for white-box): " + "; ".join(parts) + ".")
    return findings


def _figure(eps: dict, det: dict, grid: DPSGDGrid):
    figure, axes = new_figure(1, 2, width=5.2, height=4.0)
    ax = axes[0, 0]
    for index, release in enumerate(("gradient_trace", "loss")):
        rows = [i for i, r in enumerate(eps["release"]) if r == release]
        ax.plot([eps["accountant_epsilon"][i] for i in rows], [eps["dp_epsilon_lower_bound_event"][i] for i in rows],
                "o-", color=f"C{index}", label=release)
    top = max(grid.epsilons)
    ax.plot([0, top], [0, top], "k:", label="accountant ε")
    ax.set_xlabel("accountant ε (δ = 1e-5)")
    ax.set_ylabel("certified ε lower bound")
    ax.legend(fontsize=6)
    ax = axes[0, 1]
    for index, variant in enumerate(dict.fromkeys(det["variant"])):
        rates = [np.mean([f for x, r, f in zip(det["variant"], det["runs"], det["refuted"]) if x == variant and r == b])
                 for b in grid.budgets]
        ax.plot(grid.budgets, rates, "o-", color=f"C{index}", label=variant.removeprefix("dpsgd_"))
    ax.set_xscale("log")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("training runs per database")
    ax.set_ylabel("detection rate")
    ax.legend(fontsize=6)
    return figure


#: ``--grid``: the named sizes, and the default of each device.
GRIDS = {"cpu": full_grid, "gpu": gpu_grid, "gpu-full": gpu_full_grid}


def run(context) -> ExperimentOutput:
    from contextlib import nullcontext

    from .gpu_utilization import GpuUtilization

    on_gpu = str(context.device).startswith("cuda")  # the resolved device, e.g. "cuda:0"
    name = context.grid or ("gpu" if on_gpu else "cpu")
    grid = quick_grid() if context.quick else GRIDS[name]()
    load_before = os.getloadavg()[0]
    device, seed, workers = context.device, context.seed, context.workers
    index = int(str(device).partition(":")[2] or 0) if on_gpu else 0
    # Each table is written as its stage completes: a run cut short (a GPU lease ending) keeps its finished rows,
    # and on a GPU the utilization samples, written as they are taken.
    # With workers the stages are pipelined (run_stages): every pooled stage's audits queued at once, largest first;
    # the μ rows' black-box search and the one-run stage run in this process meanwhile.
    started = time.time()
    with GpuUtilization(context.out_dir, index) if on_gpu else nullcontext() as sampler, JobPool(workers) as pool:
        tables = run_stages(context, pool, [epsilon_plan(grid, device, seed), dimension_plan(grid, device, seed),
                                            detection_plan(grid, device, seed)],
                            later=[("dpsgd_gaussian_dp", lambda: gaussian_dp_plan(grid, device, seed))],
                            here=[("dpsgd_one_run", lambda: _one_run_table(grid, seed, device))])
    eps, dim, det, gdp, one = (table.columns for table in tables)
    findings = _findings(eps, dim, det, grid, gdp, one)
    names = [table.name for table in tables]
    findings.append("Seconds by stage: " + ", ".join(f"{name} {context.stage_seconds[name]:.1f}" for name in names)
                    + "; spans, seconds from the run's start (a stage runs from its first audit's start to its "
                    "table's writing; with workers the stages overlap): " + ", ".join(
                        f"{name} {context.stage_spans[name][0] - started:.1f}–{context.stage_spans[name][1] - started:.1f}"
                        for name in names) + ".")
    findings.append(pool_finding(pool))
    findings.append(f"Machine load: 1-minute load average {load_before:.1f} at the start and "
                    f"{os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} cores.")
    settings = {"grid": "quick" if context.quick else name, **grid.to_dict()}
    if sampler is not None:
        findings.extend(sampler.findings(context.stage_spans))
        if sampler.samples:
            tables.append(Table("gpu_utilization", sampler.columns()))
        settings["GPU utilization sampled by"] = sampler.source
    return ExperimentOutput(tables, _figure(eps, det, grid), settings, findings)


EXPERIMENTS = [Experiment(
    name="dpsgd-audit",
    description="DP-SGD audits: certified ε vs the accountant, white-box vs black-box canaries, sliced vs full MI "
                "on parameters, detection of buggy variants vs training runs",
    source="study (issue 17); DP-SGD of Abadi et al. (2016), canaries of Nasr et al. (2021, 2023)",
    run=run,
    trains=True,
    full_runtime="about 450 s on the shared 2-core x86_64 CPU (load average 11.7 to 13.8 from other sessions; the "
                 "μ rows alone took 17-24 s at load 2), device cpu (8 + 6 audits at 10^4 runs, 5 variants x 3 budgets x 2 "
                 "repeats; μ rows at 2 budgets: 10 white-box audits, 4 black-box settings x 3 with the black-box "
                 "search's pilot, 200 ideal-score certificates; 15 one-run trainings); --grid gpu: 51 s on one H200 with 16 "
                 "cores, device cuda, --workers 4 (GPU utilization 12% on average), 94 s in one process under the stage "
                 "profiler; --grid gpu-full has not been run to its end",
    grids=tuple(GRIDS),
    parallel=True,
)]
