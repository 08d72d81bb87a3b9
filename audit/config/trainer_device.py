"""The trainer of a catalog DP-SGD entry's audit under ``--device auto``, weighed on the audit's whole work (issue 42 §2).

:func:`mechanisms.training.torch_dpsgd.trainer_for_device` chooses between the NumPy trainer on the CPU and the
batched torch trainer on the GPU by :func:`mechanisms.training.device_cost.choose_training_device`, which counts the
GPU's start once for the trainer and the critics together. This module gives it what the audit will do, known from
its specification before any run (:func:`audit_work`):

- **the runs it makes.** A fixed audit: :func:`audit.gating.look_runs.look_runs` at its samples (the MI sample of
  every prior of Θ, the event test's certification runs of both inputs, and where the event test may choose on
  selection runs, those and the float-bit pilot's), with the float-bit event test's certification runs only
  where the release can hold bits below the snapping grid (:attr:`mechanisms.training.dpsgd.DPSGD.release_on_grid`:
  a catalog entry's snapped gradient trace holds none); a claim stated for no relation, both relations' audits. A
  sequential audit (``max_runs``): its budget, which the looks are planned to fill
  (:func:`audit.gating.sequential.look_schedule`: the last look has the most samples whose runs fit in it), as an
  audit that no look refutes spends it.
- **its critics' training.** Each audit's, or each look's but the early look's (which trains none), predicted
  seconds on either device (:func:`audit.critic_cost.critic_seconds`), on its plan over the declared priors
  (searched priors add critics of the same width), as :func:`audit.cli.audit_command.cost_warnings` sizes them.
"""

from __future__ import annotations

from dataclasses import replace

from mechanisms.training.dpsgd import DPSGD
from mechanisms.training.torch_dpsgd import trainer_for_device, trainer_source, weighs_devices

from audit.critic_cost import trainings_seconds
from audit.gating.look_runs import look_runs
from audit.gating.sequential import look_schedule, spec_of_look

__all__ = ["audit_work", "with_trainer"]


def _float_runs(spec) -> bool:
    """Whether the audit plans the float-bit event test's certification runs: under ``arithmetic = "float"``,
    unless the mechanism is a DP-SGD whose release lies on the snapping grid."""
    on_grid = isinstance(spec.mechanism, DPSGD) and spec.mechanism.release_on_grid
    return spec.arithmetic == "float" and not on_grid


def audit_work(spec, max_runs: int | None = None) -> tuple[int, tuple]:
    """(the runs the audit of ``spec`` makes, each of its neural critic trainings' (CPU, GPU) seconds without the
    GPU's start), for a fixed audit or, with ``max_runs``, a sequential one within that budget (module docstring).

    Raises
    ------
    InputError
        From :func:`audit.gating.sequential.look_schedule`, naming ``--max-runs``, where it allows no look that can
        refute.
    """
    float_runs = _float_runs(spec)
    if max_runs is not None and spec.companion is None:  # a sequential audit tests one relation (the CLI says so)
        audited = [spec_of_look(spec, look) for look in look_schedule(spec, max_runs, float_runs=float_runs)
                   if not look.early]
        runs = max_runs
    else:
        audited = [spec] + ([spec.companion] if spec.companion is not None else [])
        runs = sum(look_runs(one, one.samples, float_runs) for one in audited)
    return runs, trainings_seconds(audited)


def with_trainer(spec, max_runs: int | None = None, *, cuda_available: bool | None = None):
    """``spec`` (and its companion) with the trainer its ``device`` gives a DP-SGD mechanism
    (:func:`mechanisms.training.torch_dpsgd.trainer_for_device`), the choice said in its notes; ``spec`` itself
    where the mechanism is kept and nothing is said. Under ``"auto"`` with a GPU present the choice weighs
    :func:`audit_work` of ``spec`` (a sequential audit's with ``max_runs``); ``cuda_available`` stands in for
    ``torch.cuda.is_available()`` in a test."""
    mechanism = spec.mechanism
    runs, trainings = (audit_work(spec, max_runs) if weighs_devices(mechanism, spec.device, cuda_available=cuda_available)
                       else (0, ()))
    chosen, note = trainer_for_device(mechanism, spec.device, runs, cuda_available=cuda_available,
                                      critic_seconds=trainings)
    if note is None:
        return spec

    def swapped(one, **changes):  # workers load the entry with the same trainer (trainer_source)
        return replace(one, mechanism=chosen, notes=one.notes + (note,),
                       mechanism_source=trainer_source(one.mechanism_source, chosen), **changes)

    return swapped(spec, companion=None if spec.companion is None else swapped(spec.companion))
