"""GPU utilization sampled while an experiment runs (issue 42 §4: is the card busy?).

:class:`GpuUtilization` starts ``nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv
-lms 500`` in the background, its lines going straight into ``gpu_utilization_samples.csv`` in the run's
folder (so a run cut short keeps the samples it took), and reads them back when the block ends. Where
``nvidia-smi`` is missing it samples :func:`torch.cuda.utilization` (NVML) from a thread instead. The
utilization is NVML's: the share of the sample period in which at least one kernel ran on the GPU.
"""

from __future__ import annotations

import datetime
import math
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

SAMPLE_MS = 500
SAMPLES_FILE = "gpu_utilization_samples.csv"


class GpuUtilization:
    """Context manager: sample the GPU's utilization and memory every :data:`SAMPLE_MS` ms.

    Attributes (after the block): ``samples``, a list of (wall-clock time, utilization %, memory MiB);
    ``source``, what sampled them.
    """

    def __init__(self, out_dir=None, device_index: int = 0):
        self.path = Path(out_dir) / SAMPLES_FILE if out_dir is not None else None
        self.device_index = device_index
        self.samples: list = []
        self.source = "none"
        self._process = None
        self._handle = None
        self._thread = None
        self._done = threading.Event()

    def __enter__(self):
        smi = shutil.which("nvidia-smi")
        if smi is not None and self.path is not None:
            self._handle = open(self.path, "w", encoding="utf-8")
            self._process = subprocess.Popen(
                [smi, "-i", str(self.device_index), "--query-gpu=timestamp,utilization.gpu,memory.used",
                 "--format=csv,noheader,nounits", f"-lms={SAMPLE_MS}"], stdout=self._handle,
                stderr=subprocess.DEVNULL)
            self.source = f"nvidia-smi -lms {SAMPLE_MS}"
        else:
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
            self.source = f"torch.cuda.utilization every {SAMPLE_MS} ms"
        return self

    def _poll(self) -> None:
        import torch

        while not self._done.wait(SAMPLE_MS / 1e3):
            try:
                utilization = float(torch.cuda.utilization(self.device_index))
            except Exception:  # no NVML: nothing to sample
                self.source = "none (no nvidia-smi, no NVML)"
                return
            try:
                memory = torch.cuda.device_memory_used(self.device_index) / 2**20
            except Exception:
                memory = math.nan
            self.samples.append((time.time(), utilization, memory))

    def __exit__(self, *exc):
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._handle.close()
            self.samples = read_samples(self.path)
        return False

    def mean(self, start: float = -math.inf, end: float = math.inf) -> float:
        """Mean utilization (%) of the samples taken between ``start`` and ``end`` (wall-clock)."""
        values = [u for t, u, _ in self.samples if start <= t <= end and not math.isnan(u)]
        return float(np.mean(values)) if values else math.nan

    def columns(self) -> dict:
        """The samples as a table's columns: seconds from the first, utilization %, memory MiB."""
        first = self.samples[0][0] if self.samples else 0.0
        return {"seconds": [t - first for t, _, _ in self.samples],
                "utilization_percent": [u for _, u, _ in self.samples],
                "memory_used_mib": [m for _, _, m in self.samples]}

    def alone_mean(self, name: str, spans: dict) -> float:
        """Mean utilization (%) of the samples taken while stage ``name`` ran and no other stage of ``spans`` did
        (NaN: none)."""
        start, end = spans[name]
        others = [span for other, span in spans.items() if other != name]
        values = [u for t, u, _ in self.samples if start <= t <= end and not math.isnan(u)
                  and not any(a <= t <= b for a, b in others)]
        return float(np.mean(values)) if values else math.nan

    def findings(self, spans: dict) -> list:
        """Sentences: the run's mean utilization and the share of samples at 50% or more, then by stage
        (``spans``: stage name → (start, end) wall-clock times, as :class:`~experiments.framework.RunContext`
        keeps them).

        Where stages overlap (pipelined over worker processes) a sample counts toward every stage running when it
        was taken, so a stage's mean is the card's while it ran, not its own share: each stage's mean over the
        samples taken while it ran alone is given beside it."""
        if not self.samples:
            return [f"GPU utilization: no samples ({self.source})."]
        values = np.array([u for _, u, _ in self.samples], dtype=float)
        memory = np.array([m for _, _, m in self.samples], dtype=float)
        ordered = sorted(spans.values())
        overlap = any(later[0] < earlier[1] for earlier, later in zip(ordered, ordered[1:]))
        if overlap:
            by_stage = ", ".join(f"{name} {self.mean(*span):.0f}% (alone {_percent(self.alone_mean(name, spans))})"
                                 for name, span in spans.items())
            by_stage = ("Mean while each stage ran (the stages overlap: a sample counts toward every stage running "
                        f"when it was taken; in brackets, over the samples while it ran alone): {by_stage}.")
        else:
            by_stage = "Mean by stage: " + ", ".join(f"{name} {self.mean(*span):.0f}%" for name, span in spans.items())
            by_stage += "."
        return [f"GPU utilization ({self.source}, {len(values)} samples over "
                f"{self.samples[-1][0] - self.samples[0][0]:.0f} s): mean {np.nanmean(values):.1f}%, median "
                f"{np.nanmedian(values):.0f}%, {np.mean(values >= 50):.0%} of samples at 50% or more; GPU memory used "
                f"up to {np.nanmax(memory):.0f} MiB. {by_stage}"]


def _percent(value: float) -> str:
    return "no samples" if math.isnan(value) else f"{value:.0f}%"


def read_samples(path) -> list:
    """(wall-clock time, utilization %, memory MiB) from ``nvidia-smi --format=csv,noheader,nounits`` lines
    (``2026/11/27 11:17:00.123, 45, 1234``); lines that do not parse (a line cut short) are skipped."""
    samples = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 3:
            continue
        try:
            when = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((when, float(parts[1]), float(parts[2])))
        except ValueError:
            continue
    return samples
