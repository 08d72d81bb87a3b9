"""Where ``--device auto`` trains a DP-SGD mechanism: the predicted seconds of its runs on each device (issue 42 §2).

A batched DP-SGD training of ``runs`` runs, ``steps`` steps and ``records`` rows per training set costs, on either
device, a time per record and step (every row's gradient, clipping and masking: Poisson sampling masks the rows a
step leaves out rather than dropping them, so every row costs at any sampling rate) that grows with the model's
parameter count D, and on the GPU its start once:

    seconds = start + runs · steps · records · (a + b · D).

The constants were measured with both devices on one machine, as :func:`estimators.device.choose_device`'s are:
one NVIDIA H200 with 16 CPU cores, the kind of machine this project is lent (2026-11-28,
docs/benchmarks/training-throughput.md: ``miaudit experiment training-throughput --device cuda`` at its settings,
16 records, 2 features, T = 4, q = 1, each route's largest batch): on the GPU :class:`TorchDPSGD` ran 449,205
runs/s for logistic regression (D = 3) and 325,580 for the 32-unit MLP (D = 129), 10⁶ runs a batch; on the CPU
the NumPy trainer ran 199,748 logistic runs/s (10⁵ a batch; :class:`TorchDPSGD` 194,238) and :class:`TorchDPSGD`
41,085 MLP runs/s (10⁴ a batch). Per record and step (÷ 64): GPU 3.478e-8 s at D = 3 and 4.799e-8 s at D = 129,
so b = 1.05e-10 s and a = 3.45e-8 s; CPU 7.822e-8 s and 3.803e-7 s, so b = 2.40e-9 s and a = 7.10e-8 s. The
logistic break-even of the trainer alone is then start / (per-run CPU − GPU seconds) = 1 s / 2.78 µs ≈ 360,000
runs. (Issue 42's H100 report gave 6.6e5 and 2.9e5 runs/s on the GPU, 4× and about 19× its CPU; on this
project's 2-core CPU, load 1.1, the trainers took 7.8e-8 s per record and step at D = 3 and 1.74e-7 s at
D = 17: the same law.) The GPU's start is
:data:`estimators.device.GPU_START_S`. Not modelled: a GPU step's kernel launches, which bound small chunks
(``miaudit experiment device-choice --device cuda`` measures both devices' runs per second at small and large
batches beside this model, and times a DP-SGD audit with ``--device auto``).

**The choice** (:func:`choose_training_device`) weighs the audit's whole time, not the trainer's alone: one
process pays the GPU's start S once for everything it puts there, and the audit's neural critics go where
:func:`estimators.device.choose_device` sends them, which counts S unless the trainer is on the GPU, once for all
the audit's critic trainings (:func:`estimators.device.gpu_start_repaid`). With the
trainer's seconds T_cpu and T_gpu (S not counted) and each critic training k's C_k,cpu and C_k,gpu (S not
counted; one per fixed audit, per sequential look, per relation of a claim stated for none):

    trainer on the GPU:  S + T_gpu + Σ_k min(C_k,cpu, C_k,gpu)
    trainer on the CPU:  T_cpu + min(Σ_k C_k,cpu, S + Σ_k min(C_k,cpu, C_k,gpu))

and the trainer goes to the GPU when the first is the smaller. Without critics it is S + T_gpu < T_cpu, the
trainer's own break-even; critics that go to the GPU anyway leave T_gpu < T_cpu, S paid either way.
"""

from __future__ import annotations

from estimators.device import GPU_START_S, gpu_start_repaid
from estimators.validation import check_int

__all__ = ["CPU_PARAMETER_S", "CPU_RECORD_STEP_S", "GPU_PARAMETER_S", "GPU_RECORD_STEP_S", "choose_training_device",
           "critics_beside_cpu_trainer", "predicted_dpsgd_seconds"]

#: Seconds per record and step (a) and per record, step and parameter (b) of batched DP-SGD (module docstring).
CPU_RECORD_STEP_S, CPU_PARAMETER_S = 7.10e-8, 2.40e-9
GPU_RECORD_STEP_S, GPU_PARAMETER_S = 3.45e-8, 1.05e-10


def predicted_dpsgd_seconds(kind: str, *, runs: int, steps: int, records: int, parameters: int,
                            cuda_started: bool = False) -> float:
    """Predicted seconds of ``runs`` DP-SGD runs of ``steps`` steps on training sets of ``records`` rows and a model
    of ``parameters`` parameters on ``kind`` ("cpu" or "cuda"): start + runs·steps·records·(a + b·D), the constants
    of this module's docstring (one H200's measured rates); the GPU's start not counted where ``cuda_started`` (the
    process uses the GPU anyway)."""
    for value, name in ((runs, "runs"), (steps, "steps"), (records, "records"), (parameters, "parameters")):
        check_int(value, name, minimum=0)
    if kind == "cuda":
        start, per_record, per_parameter = 0.0 if cuda_started else GPU_START_S, GPU_RECORD_STEP_S, GPU_PARAMETER_S
    else:
        start, per_record, per_parameter = 0.0, CPU_RECORD_STEP_S, CPU_PARAMETER_S
    return start + runs * steps * records * (per_record + per_parameter * parameters)


def critics_beside_cpu_trainer(critic_seconds) -> float:
    """Seconds of the critic trainings ``critic_seconds`` ((CPU, GPU) pairs, the GPU's start not counted) where
    the trainer stays on the CPU: the audit starts the GPU for them where they repay its start together
    (:func:`estimators.device.gpu_start_repaid`, as the engine weighs a sequential audit's looks or both relations'
    audits), and each then goes where it is the faster; else all stay on the CPU."""
    if gpu_start_repaid(critic_seconds):
        return GPU_START_S + sum(min(cpu, gpu) for cpu, gpu in critic_seconds)
    return sum(cpu for cpu, _ in critic_seconds)


def choose_training_device(*, runs: int, steps: int, records: int, parameters: int, cuda_available: bool,
                           critic_seconds=()) -> tuple[str, str]:
    """The device ``--device auto`` trains on ("cpu" or "cuda") and why, in words: the GPU only where it is present
    and the audit's predicted time with the trainer there is the smaller, the GPU's start counted once for the
    trainer and the critics together (module docstring).

    Parameters
    ----------
    runs, steps, records, parameters : int
        The runs the audit makes, and the model's size (:func:`predicted_dpsgd_seconds`).
    cuda_available : bool
    critic_seconds : sequence of (float, float)
        Each neural critic training the audit makes in this process, its predicted seconds on the CPU and on the
        GPU, the start not counted (:func:`audit.critic_cost.critic_seconds`); empty for classifier critics.
    """
    size = dict(runs=runs, steps=steps, records=records, parameters=parameters)
    if not cuda_available:
        return "cpu", "no CUDA device"
    critic_seconds = tuple((float(cpu), float(gpu)) for cpu, gpu in critic_seconds)
    cpu = predicted_dpsgd_seconds("cpu", **size)
    gpu = predicted_dpsgd_seconds("cuda", **size, cuda_started=True)
    on_gpu = GPU_START_S + gpu + sum(min(pair) for pair in critic_seconds)
    on_cpu = cpu + critics_beside_cpu_trainer(critic_seconds)
    chosen = "cuda" if on_gpu < on_cpu else "cpu"
    why = (f"{runs:,} runs × {steps} steps × {records} records, {parameters} parameters predicted {cpu:.3g} s on the "
           f"CPU, {gpu:.3g} s on the GPU + its {GPU_START_S:g} s start")
    if critic_seconds:
        critics_cpu, critics_gpu = (sum(pair[i] for pair in critic_seconds) for i in (0, 1))
        trainings = len(critic_seconds)
        why += (f"; with the critics' training ({trainings} training{'s' if trainings != 1 else ''}: {critics_cpu:.3g} s "
                f"on the CPU, {critics_gpu:.3g} s on the GPU) the audit is predicted {on_cpu:.3g} s with the trainer "
                f"on the CPU, {on_gpu:.3g} s on the GPU, its start counted once")
    return chosen, why
