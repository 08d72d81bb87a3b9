"""Where ``--device auto`` trains a DP-SGD mechanism: the predicted seconds of its runs on each device (issue 42 §2).

A batched DP-SGD training of ``runs`` runs, ``steps`` steps and ``records`` rows per training set costs, on either
device, a time per record and step (every row's gradient, clipping and masking: Poisson sampling masks the rows a
step leaves out rather than dropping them, so every row costs at any sampling rate) that grows with the model's
parameter count D, and on the GPU its start once:

    seconds = start + runs · steps · records · (a + b · D).

The constants were measured with both devices on one machine, as :func:`estimators.device.choose_device`'s are:
issue 42's H100 report (one H100 with 16 CPU cores; ``miaudit experiment training-throughput`` at its settings,
16 records, 2 features, T = 4, q = 1, up to 10⁶ runs a batch) measured :class:`TorchDPSGD` at 6.6e5 runs/s for
logistic regression (D = 3) and 2.9e5 for the 32-unit MLP (D = 129) on the GPU, 4× and 16-22× (19× taken) the
same machine's CPU. Per record and step (÷ 64): GPU 2.37e-8 s at D = 3 and 5.39e-8 s at D = 129, so
b = 2.4e-10 s and a = 2.3e-8 s; CPU 9.47e-8 s and 1.02e-6 s, so b = 7.35e-9 s and a = 7.3e-8 s. On this project's
2-core CPU (load 1.1, 2026-11-28) the NumPy and torch trainers took 7.8e-8 s per record and step at D = 3 and the
torch trainer 1.74e-7 s at D = 17 (b ≈ 6.9e-9 s), the same law. The GPU's start is
:data:`estimators.device.GPU_START_S`. Not modelled: a GPU step's kernel launches, which bound small chunks
(``miaudit experiment device-choice --device cuda`` measures both devices' runs per second at small and large
batches beside this model, and times a DP-SGD audit with ``--device auto``).
"""

from __future__ import annotations

from estimators.device import GPU_START_S
from estimators.validation import check_int

__all__ = ["CPU_PARAMETER_S", "CPU_RECORD_STEP_S", "GPU_PARAMETER_S", "GPU_RECORD_STEP_S", "choose_training_device",
           "predicted_dpsgd_seconds"]

#: Seconds per record and step (a) and per record, step and parameter (b) of batched DP-SGD (module docstring).
CPU_RECORD_STEP_S, CPU_PARAMETER_S = 7.3e-8, 7.35e-9
GPU_RECORD_STEP_S, GPU_PARAMETER_S = 2.3e-8, 2.4e-10


def predicted_dpsgd_seconds(kind: str, *, runs: int, steps: int, records: int, parameters: int) -> float:
    """Predicted seconds of ``runs`` DP-SGD runs of ``steps`` steps on training sets of ``records`` rows and a model
    of ``parameters`` parameters on ``kind`` ("cpu" or "cuda"): start + runs·steps·records·(a + b·D), the constants
    of this module's docstring (issue 42's H100 report)."""
    for value, name in ((runs, "runs"), (steps, "steps"), (records, "records"), (parameters, "parameters")):
        check_int(value, name, minimum=0)
    if kind == "cuda":
        start, per_record, per_parameter = GPU_START_S, GPU_RECORD_STEP_S, GPU_PARAMETER_S
    else:
        start, per_record, per_parameter = 0.0, CPU_RECORD_STEP_S, CPU_PARAMETER_S
    return start + runs * steps * records * (per_record + per_parameter * parameters)


def choose_training_device(*, runs: int, steps: int, records: int, parameters: int,
                           cuda_available: bool) -> tuple[str, str]:
    """The device ``--device auto`` trains on ("cpu" or "cuda") and why, in words: the GPU only where it is present
    and its predicted time (:func:`predicted_dpsgd_seconds`, its start included) is below the CPU's."""
    size = dict(runs=runs, steps=steps, records=records, parameters=parameters)
    if not cuda_available:
        return "cpu", "no CUDA device"
    cpu, gpu = predicted_dpsgd_seconds("cpu", **size), predicted_dpsgd_seconds("cuda", **size)
    chosen = "cuda" if gpu < cpu else "cpu"
    return chosen, (f"{runs:,} runs × {steps} steps × {records} records, {parameters} parameters predicted "
                    f"{cpu:.3g} s on the CPU, {gpu:.3g} s on the GPU")

