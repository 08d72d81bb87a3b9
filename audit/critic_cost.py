"""What an audit's neural critic training will cost, known before any run: its size, memory and seconds.

The engine sizes the training from the plan (:mod:`audit.audit_plan`) to choose its device
(:func:`estimators.device.choose_device`) and to refuse what cannot fit in memory
(:func:`mechanisms.execution.memory.check_audit_memory`); the CLI says the same numbers before running an audit
whose critics' input is wide (:func:`wide_input_forecast`, issue 43 §7).

Under the record notions (MI-DP, SMI-DP) record i's full critic reads (X_i, M, X_−i): the MI-DP
definition conditions on every other record, I(X_i; M(X) | (X_j)_{j≠i}) (Cuff and Yu 2016, Definition 2 as
recalled in the Pufferfish paper, Eq. (2)), and the mechanism is a black box, so no statistic of the other
records can stand for them in general: the input is n·k + (output width) numbers wide, and a database of 60,000
records gives a critic of 60,001 inputs (docs/how-to/mi-notions.md, "Large databases").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

from estimators.device import choose_device, gpu_start_repaid, predicted_training_seconds
from estimators.memory import (FLOAT_BYTES, check_gpu_critic_memory, critic_config_memory, critic_memory_places,
                               on_cuda)
from estimators.ranges import value_range
from estimators.validation import InputError
from mechanisms.claims.claim import RECORD_AUDIT_NOTIONS
from mechanisms.execution.memory import check_audit_memory, format_bytes
from mechanisms.training.torch_dpsgd import trains_on_gpu

from audit.audit_plan import plan_audit
from audit.spec import audit_argument

#: A full critic whose input has at least this many numbers is "wide": the CLI says its cost before running
#: (:func:`wide_input_forecast`). At this width the width term is already about a CPU step's fixed cost
#: (256 rows × 1,000 columns × 2.2e-8 s ≈ 5.6 ms against 1.31 ms: :mod:`estimators.device`).
WIDE_INPUT = 1000

#: Where an audit's user sets its critic's settings besides ``AuditSpec.critic``, as a memory message says them: the
#: command line has no flag of its own for them.
CRITIC_KEYS = "[critic] in a configuration, --set critic.KEY=VALUE"

#: The audit's samples as its messages name them: the argument, the flag and the configuration key.
SAMPLES_NAME = audit_argument("samples")

#: The budgets the audit's memory check may ask to lower, named the same way
#: (:func:`mechanisms.execution.memory.check_audit_memory`'s ``names``).
AUDIT_MEMORY_NAMES = {key: audit_argument(key) for key in ("samples", "slices", "records", "event_runs")}

#: Why a plan of classifier critics trains neural ones after all (``audit.engine``'s fallback), in a few words.
NO_CLASSIFIER = "too wide for the logistic regression, with too many values for the empirical log-ratio"


def other_records(spec) -> int:
    """Numbers a record's critic reads of the other records: (n − 1)·k, or their k column sums under
    ``others = "sums"``."""
    n, k = spec.priors[0].shape
    return k if spec.others == "sums" else (n - 1) * k


def trainings(spec, plan, output_width: int = 1) -> list:
    """(critics, input width) of each neural critic training the plan asks for.

    Full critics: one per secret that gets one, on (g, output, w) of width n·k + ``output_width`` for a record's
    secret (the record, the output's numbers, the other records; 2k + ``output_width`` with ``others = "sums"``,
    their column sums) and 1 + ``output_width`` otherwise (``output_width`` 1, at least one output value, before
    the mechanism has run); sliced critics: ``slices`` per secret on three one-dimensional projections. Classifier
    critics train no neural network.
    """
    if plan.mi_critic == "classifier":
        return []
    secrets = sum(not planned.deterministic for planned in plan.secrets)
    k = spec.priors[0].shape[1]
    width = output_width + (k + other_records(spec) if spec.notion in RECORD_AUDIT_NOTIONS else 1)
    return ([(secrets, width)] if plan.full_critics else []) + ([(secrets * plan.slices, 3)] if plan.slices else [])


def kept_blocks(spec, plan, output_width: int = 1) -> int:
    """Bytes the plan's full critics put in the audit's store of device copies (:mod:`estimators.resident`) as they
    train on a GPU (:class:`estimators.critic_problems.CriticColumns`): each prior's MI sample outputs, float64
    ``samples`` × ``output_width``, one block for all its secrets (``output_width``: :func:`trainings`), and a
    record's secret's other records w, ``samples`` × :func:`other_records` (one block a secret: each deletes its own
    record). Sliced critics' projections are copied a chunk at a time and not kept; classifier critics train none."""
    if plan.mi_critic == "classifier" or not plan.full_critics:
        return 0
    trained = plan.trained
    priors = len({planned.prior_index for planned in trained})
    others = other_records(spec) * len(trained) if spec.notion in RECORD_AUDIT_NOTIONS else 0
    return FLOAT_BYTES * spec.samples * (priors * output_width + others)


def critic_work(spec, plan, output_width: int = 1) -> dict:
    """The size of the plan's critic training for :func:`estimators.device.choose_device`: all its critics,
    trained in chunks of ``max_critics_per_chunk`` for at most ``max_steps`` steps each, and their input width
    (the critics' mean, weighted by their number; ``output_width``: :func:`trainings`)."""
    config = spec.critic
    parts = trainings(spec, plan, output_width)
    critics = sum(count for count, _ in parts)
    chunks = sum(-(-count // config.max_critics_per_chunk) for count, _ in parts)
    width = round(sum(count * w for count, w in parts) / critics) if critics else 0
    return {"critics": critics, "chunks": max(1, chunks), "steps": config.max_steps,
            "batch_size": config.batch_size, "width": width}


def critic_device(spec, plan, gpu_started: str | None = None):
    """(the device of the plan's neural critics, the note saying why): :func:`estimators.device.choose_device` on
    :func:`critic_work`, the GPU's start counted as paid where the mechanism trains there
    (:func:`mechanisms.training.torch_dpsgd.trains_on_gpu`) or ``gpu_started`` says why it is
    (:func:`shared_gpu_start`, or an earlier audit of the process started it); under ``"auto"``, the CPU where the
    GPU's free memory cannot hold them (:func:`critic_memory`)."""
    return _chosen_device(spec, plan, gpu_started)[:2]


def _chosen_device(spec, plan, gpu_started, output_width: int = 1):
    """:func:`critic_device`'s (device, note) and the critics' :func:`critic_memory` on that device where the
    choice counted it (``"auto"`` on the GPU: its free memory checked), else None: the one GPU check of an audit's
    critics, which :func:`checked_critic_device` reuses."""
    started = "the mechanism trains there" if trains_on_gpu(spec.mechanism) else gpu_started
    device, note = choose_device(spec.device, **critic_work(spec, plan, output_width), cuda_started=started is not None,
                                 started_by=started or "")
    if spec.device == "auto" and device.type == "cuda":
        try:  # what lives on the GPU fits in its free memory
            return device, note, critic_memory(spec, plan, device, output_width)
        except InputError as refused:
            cpu = type(device)("cpu")
            return cpu, f"device cpu (auto: the GPU's free memory cannot hold the critics: {refused})", None
    return device, note, None


def checked_critic_device(spec, plan, priors: int, gpu_started: str | None = None, output_width: int = 1):
    """:func:`critic_device` of the plan's critics, once the audit's memory check has passed for the critics that
    train there (:func:`mechanisms.execution.memory.check_audit_memory` with :func:`critic_memory` on that device;
    ``priors`` sets of samples, ``output_width`` numbers each where the mechanism has run, which the critics'
    input then counts too: :func:`trainings`).

    The engine calls it before any sampling for the plan it made, and again, with the plan's neural critics
    (``mi_critic = "neural"``) and the outputs' width, where a classifier plan falls back to neural critics: the
    first check counted no critic for that plan (classifier critics train no network), and these are trained.

    Raises
    ------
    InputError
        Where the audit's arrays and the critics' training cannot fit in memory, or the critics' GPU parts in the
        GPU's free memory (``device = "cuda"``), before they train.
    """
    device, note, critics = _chosen_device(spec, plan, gpu_started, output_width)
    check_audit_memory(spec.samples, spec.priors[0].shape, priors, output_width=output_width,
                       event_runs=spec.event_runs if spec.notion in RECORD_AUDIT_NOTIONS else 0,
                       critics=critic_memory(spec, plan, device, output_width) if critics is None else critics,
                       other_records=None if plan.mi_critic == "classifier" else other_records(spec),
                       names=AUDIT_MEMORY_NAMES)
    return device, note


def critic_seconds(spec, plan) -> tuple[float, float]:
    """The plan's critic training (:func:`critic_work`), its predicted seconds on the CPU and on the GPU, the
    GPU's start not counted (:func:`estimators.device.predicted_training_seconds`; (0, 0) for classifier critics):
    what the trainer's device choice weighs beside its own (:mod:`mechanisms.training.device_cost`)."""
    work = critic_work(spec, plan)
    return (predicted_training_seconds("cpu", **work),
            predicted_training_seconds("cuda", **work, cuda_started=True))


def trainings_seconds(specs) -> tuple:
    """The neural critic trainings of the audits ``specs`` (one each: a fixed audit, a sequential audit's looks
    but its early one, both relations' audits), their (CPU, GPU) seconds without the GPU's start
    (:func:`critic_seconds`), on each plan over the declared priors (searched priors add critics of the same
    width); audits whose critics are classifiers train none and are left out."""
    trained = (critic_seconds(one, plan_audit(one, [(prior, None) for prior in one.priors])) for one in specs)
    return tuple(seconds for seconds in trained if seconds != (0.0, 0.0))


def shared_gpu_start(specs, why: str) -> str | None:
    """``why`` (the note's reason) where the audits ``specs``, run one after another in one process under
    ``device = "auto"`` with a GPU present, repay the GPU's start with their critic trainings together
    (:func:`estimators.device.gpu_start_repaid` of :func:`trainings_seconds`), so that each audit's device choice
    counts it as paid; else None (each counts it for itself, :func:`estimators.device.choose_device`)."""
    import torch

    if len(specs) < 2 or any(one.device != "auto" for one in specs) or not torch.cuda.is_available():
        return None
    return why if gpu_start_repaid(trainings_seconds(specs)) else None


def critic_memory(spec, plan, device=None, output_width: int = 1) -> dict:
    """The largest neural critic training the plan asks for, in bytes by part
    (:func:`estimators.memory.critic_memory_parts`), known before the mechanism runs (``output_width``:
    :func:`trainings`, once it has).

    On a CUDA ``device`` each training's parts on the GPU (a chunk's inputs, the models, and the store's device
    copies, those kept and the MI sample's blocks its critics add: :func:`kept_blocks`) are checked here against
    its free memory (:func:`estimators.memory.check_gpu_critic_memory`, naming the ``critic`` settings with
    :data:`CRITIC_KEYS` or :data:`SAMPLES_NAME`, and the CPU as ``device`` and ``--device`` give it), and the parts returned are those held on the host
    (:func:`estimators.memory.critic_memory_places`), which the audit's check adds to its databases.

    Lower bounds: the chain rule's extra critic, strata and wider outputs come on top (the engine checks the GPU's
    share again at the outputs' width once the mechanism has run: :func:`sampled_critic_device`).
    """
    planned = trainings(spec, plan, output_width)
    if on_cuda(device):
        for count, input_width in planned:
            check_gpu_critic_memory(count, spec.samples, input_width, spec.critic, device, config_keys=CRITIC_KEYS,
                                    samples_name=SAMPLES_NAME, cpu="device 'cpu', --device cpu",
                                    kept_adding=kept_blocks(spec, plan, output_width))
        parts = [critic_memory_places(count, spec.samples, input_width, spec.critic)[0] for count, input_width in planned]
    else:
        parts = [critic_config_memory(count, spec.samples, input_width, spec.critic) for count, input_width in planned]
    return max(parts, key=lambda p: sum(p.values()), default={})


def sampled_critic_device(spec, plan, device, output_width: int):
    """(the critics' device, a note or None) once the mechanism has run: the plan's critics are checked again
    against the free memory of the CUDA ``device`` (:func:`critic_memory` at the outputs' width ``output_width``),
    as the check before any run counted outputs of one number, and the store's copy of the MI sample
    (:func:`kept_blocks`) and the critics' input grow with the width. Under ``device = "auto"`` a GPU that cannot
    hold them gives way to the CPU, said in the note, as before any run (:func:`critic_device`). Nothing is checked
    on the CPU, for classifier critics or for outputs of one number.

    Raises
    ------
    InputError
        As :func:`estimators.memory.check_gpu_critic_memory`, on a GPU the user chose (``device = "cuda"``): before
        the critics train, where they would run it out of memory.
    """
    if not on_cuda(device) or output_width <= 1 or plan.mi_critic == "classifier":
        return device, None
    try:
        critic_memory(spec, plan, device, output_width)
    except InputError as refused:
        if spec.device != "auto":
            raise
        return (type(device)("cpu"),
                f"device cpu (auto: the GPU's free memory cannot hold the critics at the outputs' width: {refused})")
    return device, None


@dataclass(frozen=True)
class CriticForecast:
    """A wide critic training, before it runs.

    Attributes
    ----------
    critics, width, batch : int
        Full critics, numbers in one critic's input (at least), rows of a training step.
    steps : (int, int)
        The fewest steps early stopping allows (``eval_every`` × (``patience`` + 1)) and ``max_steps``.
    cpu_seconds, gpu_seconds : (float, float)
        :func:`estimators.device.predicted_training_seconds` at those steps, on the CPU and on a GPU.
    memory : int
        Bytes the audit holds at once (:func:`mechanisms.execution.memory.check_audit_memory`: databases,
        outputs, and the larger of the critics' training and the event test's runs and scoring), a lower bound
        on its peak.
    sums_allowed : bool
        Every prior has independent rows, so ``others = "sums"`` could read the other records' sums instead.
    looks : tuple of int
        A sequential audit's planned looks, their samples (:func:`over_looks`); empty for one audit.
    fallback : str
        Why neural critics are trained for a plan whose MI critics are classifiers (``audit.engine``'s fallback,
        said once the mechanism has run: :func:`fallback_critic_device`), in words; empty for a neural plan.
    output_width : int
        Numbers of the output the critic reads: 1 (at least) before the mechanism has run.
    """

    critics: int
    width: int
    batch: int
    steps: tuple
    cpu_seconds: tuple
    gpu_seconds: tuple
    memory: int
    sums_allowed: bool = False
    looks: tuple = ()
    fallback: str = ""
    output_width: int = 1

    def line(self, samples: int) -> str:
        """The terminal's line: what the training reads, how long it is predicted to take, what it holds."""
        cpu, gpu = value_range(*self.cpu_seconds, "s"), value_range(*self.gpu_seconds, "s")
        looks = (f" at the last of {len(self.looks)} looks, of {', '.join(f'{n:,}' for n in self.looks)} samples, "
                 "each training its own" if len(self.looks) > 1 else "")
        training = f"the {len(self.looks)} looks' training" if len(self.looks) > 1 else "training"
        steps = value_range(*self.steps, "steps", about="")  # exact counts; early stopping ends it between them
        steps += ", as early stopping ends it" if self.steps[0] != self.steps[1] else ""
        output, source = (("the output", "the database's") if self.output_width == 1 else
                          (f"the output ({self.output_width:,} numbers)", "the output's and the database's"))
        return (f"{self.fallback + ': they' if self.fallback else 'the MI critics'} read each record with {output} "
                f"and the other records, {self.width:,} numbers "
                f"wide ({self.critics:,} critic{'s' if self.critics != 1 else ''} on {samples:,} samples{looks}): "
                f"{training} is predicted to take {cpu} on the CPU ({gpu} on a GPU; {steps}) and the audit holds at "
                f"least {format_bytes(self.memory)}; the width is {source} (--n × --k), as MI-DP "
                "conditions on every other record" + ("; with independent rows, --others sums reads their column "
                "sums instead, a lower bound of the audited MI" if self.sums_allowed else "")
                + " (docs/how-to/mi-notions.md, 'Large databases')")


def wide_input_forecast(spec, plan, output_width: int = 1) -> CriticForecast | None:
    """The cost of the plan's full critics when their input is wide (at least :data:`WIDE_INPUT` numbers), else
    ``None``: no full critic (SMI-DP's slices read three numbers), a narrow input, or a plan of classifier critics,
    which trains no network. Those train neural critics only where the outputs suit no classifier, which only the
    mechanism's outputs show (:func:`audit.statistics.classifier_critic.fit_classifier_critics` refuses on their
    width and values); the audit then says this cost for them (:func:`fallback_critic_device`).
    ``output_width``: the output's numbers where the mechanism has run, else at least 1 (:func:`trainings`)."""
    full = [(count, width) for count, width in trainings(spec, plan, output_width) if width >= WIDE_INPUT]
    if not plan.full_critics or not full or not full[0][0]:
        return None
    critics, width = full[0]
    config = spec.critic
    batch = max(1, min(config.batch_size, int(spec.samples * config.split[0])))
    steps = (min(config.max_steps, config.eval_every * (config.patience + 1)), config.max_steps)
    chunks = -(-critics // config.max_critics_per_chunk)

    def seconds(kind):
        return tuple(predicted_training_seconds(kind, critics=critics, steps=s, batch_size=batch, chunks=chunks,
                                                width=width) for s in steps)

    memory = check_audit_memory(spec.samples, spec.priors[0].shape, len(spec.priors), event_runs=spec.event_runs,
                                output_width=output_width, critics=critic_memory(spec, plan, output_width=output_width),
                                other_records=other_records(spec), available=2**62, names=AUDIT_MEMORY_NAMES)
    sums = all(prior.independent_rows for prior in spec.priors)
    return CriticForecast(critics, width, batch, steps, seconds("cpu"), seconds("cuda"), memory, sums,
                          output_width=output_width)


def fallback_critic_device(spec, plan, priors: int, gpu_started: str | None, output_width: int, why: str):
    """The device of the neural critics a plan of classifier critics trains where they cannot serve (``why``, in
    words: ``audit.engine``'s fallback), as :func:`checked_critic_device` gives it for the plan's neural critics
    once the audit's memory check has passed for them at the outputs' width (``output_width``); where their input
    is wide (:func:`wide_input_forecast`) and the audit is not ``quiet`` (the command line without ``--quiet``),
    their cost is said on stderr before they train, as the progress bars are.

    The line comes only when the fallback happens: whether it can is decided by the outputs (too wide for the
    logistic regression, with too many values for the empirical log-ratio), which no forecast before the
    mechanism runs knows, and the classifier plans whose outputs suit a classifier (nearly all) train no network.
    """
    neural = replace(plan, mi_critic="neural")
    device, note = checked_critic_device(spec, neural, priors, gpu_started, output_width=output_width)
    forecast = wide_input_forecast(spec, neural, output_width)
    if forecast is not None and not spec.quiet:
        print(f"miaudit: before training: {replace(forecast, fallback=why).line(spec.samples)}", file=sys.stderr)
    return device, note


def over_looks(spec, looks, plan_for) -> CriticForecast | None:
    """The wide critics' cost over a sequential audit's planned ``looks`` (their ``samples``, ``event_runs`` and
    ``alpha``: :func:`audit.gating.sequential.look_schedule`), or ``None`` when the last look's critics are not wide.

    Each look is an audit of the stream's first samples that trains its critics afresh
    (:mod:`audit.gating.sequential`), so an audit that runs every look (the claim stands) trains for the sum of
    the looks' seconds and steps; the looks run one after another, so it holds the largest look's memory at once.
    ``plan_for(spec)`` is the plan of a look's spec (:func:`audit.audit_plan.plan_audit` on its priors).
    """
    forecasts = [wide_input_forecast(look_spec, plan_for(look_spec)) for look_spec in
                 (replace(spec, samples=look.samples, event_runs=look.event_runs, alpha=look.alpha) for look in looks)]
    if not forecasts or forecasts[-1] is None:
        return None
    ran = [forecast for forecast in forecasts if forecast is not None]

    def total(name):
        return tuple(sum(getattr(forecast, name)[end] for forecast in ran) for end in (0, 1))

    return replace(forecasts[-1], steps=total("steps"), cpu_seconds=total("cpu_seconds"),
                   gpu_seconds=total("gpu_seconds"), memory=max(forecast.memory for forecast in ran),
                   looks=tuple(look.samples for look in looks))
