"""Study ``training-throughput``: DP-SGD training runs per second on each training route and device.

An audit of a training run trains it thousands of times, so its cost is training runs per second.
Timed here, per route (each a batched mechanism ``mech(dbs, rng) -> (m, d)`` over m training sets):

- ``DPSGD`` (NumPy, :mod:`mechanisms.training.dpsgd`): m logistic regressions as one batched model.
- ``TorchDPSGD`` (:mod:`mechanisms.training.torch_dpsgd`) on the CPU and, where one is present, on CUDA
  (the ``--device cuda`` path of the training audits): the same batched model in torch, logistic
  or a one-hidden-layer MLP.
- your own training through the protocol (:func:`mechanisms.training.protocol.training_mechanism`):
  one Opacus 1.6 run per training set (the how-to's script, inlined here), not batched over runs.
- the one-run trainer (:mod:`mechanisms.training.one_run_digits`): one run on digits with 1000 canaries,
  and several seeds' runs batched as one model (:func:`~mechanisms.training.one_run_digits.digits_one_runs`),
  on the CPU and, where present, on CUDA.
- the black-box search's pilot (:func:`audit.search.last_iterate.search_last_iterate`): 3 canaries × 2
  initialisations, with and without each canary, stacked into one batched torch call, on the CPU and CUDA
  (timed with the scoring of the candidates, which is part of its cost).
- the catalog's DP-SGD under ``miaudit audit --device`` trains with ``TorchDPSGD`` (the rows above); beside each
  batched DP-SGD row, the runs per second :mod:`mechanisms.training.device_cost` predicts, which ``--device auto``
  chooses the trainer by.

Each route is timed on m training sets of the catalog's canary pair (16 records, 1 feature, full
batch, T = 4, σ = 1) after one untimed warm-up call; on CUDA the device is synchronized by the
copy of the result to the host. Runs per second = m / seconds.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from .framework import Experiment, ExperimentOutput, Table, new_figure

RECORDS, FEATURES, STEPS, SIGMA = 16, 2, 4, 1.0


def _opacus_train(db, rng):
    """The how-to's Opacus script (docs/how-to/training.md), on the catalog's row layout [x, y, role]."""
    import warnings

    import torch
    from opacus import PrivacyEngine

    from mechanisms.training.canaries import DiracCanary, canary_loss
    from mechanisms.training.protocol import torch_generator

    warnings.filterwarnings("ignore")

    class Model(torch.nn.Module):
        def __init__(self, features):
            super().__init__()
            self.linear = torch.nn.Linear(features, 1)
            self.canary = DiracCanary(1.0)
            torch.nn.init.zeros_(self.linear.weight)
            torch.nn.init.zeros_(self.linear.bias)

        def forward(self, x, flags):
            return self.linear(x).squeeze(-1), self.canary(flags)

    x = torch.as_tensor(db[:, :-2], dtype=torch.float32)
    y = torch.as_tensor(db[:, -2], dtype=torch.float32)
    flags = torch.as_tensor((db[:, -1] == 2.0).astype(np.float32))  # the catalog marks gradient canaries with role 2
    model = Model(x.shape[1])
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y, flags), batch_size=RECORDS)
    model, optimizer, loader = PrivacyEngine().make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=1.0,
        poisson_sampling=False, noise_generator=torch_generator(rng))
    for _ in range(STEPS):
        for xb, yb, fb in loader:
            optimizer.zero_grad()
            logits, canary = model(xb, fb)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, yb, reduction="none")
            canary_loss(loss, canary, fb).mean().backward()
            optimizer.step()
    return model._module


def _routes(quick: bool, cuda: bool) -> list:
    """(route, device, runs m, callable(dbs, rng)) for each timed configuration."""
    from mechanisms.training import DPSGD
    from mechanisms.training.protocol import training_mechanism
    from mechanisms.training.torch_dpsgd import on_device

    numpy_dpsgd = DPSGD(RECORDS, FEATURES, SIGMA, steps=STEPS, release="gradient_trace")
    batched = (1000, 10000) if quick else (1000, 10000, 100000)
    routes = [("DPSGD (NumPy), logistic", "cpu", m, numpy_dpsgd) for m in batched]
    routes += [("TorchDPSGD, logistic", "cpu", m, on_device(numpy_dpsgd, "cpu")) for m in batched]
    routes += [("TorchDPSGD, MLP 32 hidden", "cpu", m, on_device(numpy_dpsgd, "cpu", hidden=32, release="parameters"))
               for m in batched[:2]]
    if cuda:
        gpu = (10000, 100000) if quick else (10000, 100000, 1000000)
        routes += [("TorchDPSGD, logistic", "cuda", m, on_device(numpy_dpsgd, "cuda")) for m in gpu]
        routes += [("TorchDPSGD, MLP 32 hidden", "cuda", m,
                    on_device(numpy_dpsgd, "cuda", hidden=32, release="parameters")) for m in gpu]
    routes.append(("your training (Opacus 1.6, per run)", "cpu", 20 if quick else 200,
                   training_mechanism(_opacus_train, name="opacus")))
    return routes


def _one_run_rows(quick: bool, cuda: bool) -> list:
    """(route, device, runs, seconds) of the one-run digits trainer: one run, and several seeds' runs batched."""
    from mechanisms.training.one_run_digits import digits_one_runs

    digits_one_runs(canaries=100, seeds=(0,))  # warm-up (loads the data)
    rows = []
    for device in ("cpu", "cuda") if cuda else ("cpu",):
        if device == "cuda":
            digits_one_runs(canaries=100, seeds=(0,), device=device)  # warm-up: kernels, allocations
        for runs in (1, 4) if quick else (1, 8):
            started = time.perf_counter()
            digits_one_runs(canaries=1000, seeds=range(1, runs + 1), device=device)  # scores come back to the host
            route = "one-run digits trainer (1000 canaries, T = 20)" + (", seeds batched" if runs > 1 else "")
            rows.append((route, device, runs, time.perf_counter() - started))
    return rows


def _search_rows(quick: bool, cuda: bool, seed: int) -> list:
    """(route, device, runs, seconds) of the black-box search's pilot: 3 canaries × 2 initialisations, with and
    without each canary, in one batched call (:func:`audit.search.last_iterate.search_last_iterate`)."""
    from audit.search.last_iterate import search_last_iterate
    from mechanisms.training import DPSGD
    from mechanisms.catalog.dpsgd import canary_pair

    training = DPSGD(RECORDS, FEATURES, SIGMA, steps=STEPS)
    base = canary_pair(RECORDS, FEATURES).first[:-1]
    pilot = 1000 if quick else 10000
    rows = []
    for device in ("cpu", "cuda") if cuda else ("cpu",):
        search_last_iterate(training, base, pilot_runs=10, seed=seed, device=device)  # warm-up
        started = time.perf_counter()
        search = search_last_iterate(training, base, pilot_runs=pilot, seed=seed, device=device)
        runs = 2 * pilot * len(search.candidates)
        rows.append(("black-box search pilot (6 candidates, logistic)", device, runs, time.perf_counter() - started))
    return rows


def measure(quick: bool, cuda: bool, seed: int) -> dict:
    from mechanisms.catalog.dpsgd import canary_pair

    pair = canary_pair(RECORDS, FEATURES)
    columns: dict = {k: [] for k in ("route", "device", "runs", "seconds", "runs_per_second",
                                     "model_runs_per_second")}
    rng = np.random.default_rng(seed)
    rows = []
    for route, device, m, mechanism in _routes(quick, cuda):
        dbs = np.where(rng.random(m)[:, None, None] < 0.5, pair.first[None], pair.second[None])
        mechanism(dbs[:min(m, 8)], np.random.default_rng(seed))  # warm-up: imports, kernels, allocations
        started = time.perf_counter()
        np.asarray(mechanism(dbs, np.random.default_rng(seed)))  # the copy to the host synchronizes CUDA
        rows.append((route, device, m, time.perf_counter() - started, model_runs_per_second(mechanism, device, m)))
    others = [row + (math.nan,) for row in _one_run_rows(quick, cuda) + _search_rows(quick, cuda, seed)]
    for route, device, runs, seconds, model in rows + others:
        for key, value in (("route", route), ("device", device), ("runs", runs), ("seconds", seconds),
                           ("runs_per_second", runs / seconds), ("model_runs_per_second", model)):
            columns[key].append(value)
    return columns


def model_runs_per_second(mechanism, device: str, runs: int) -> float:
    """The runs per second :mod:`mechanisms.training.device_cost` predicts for a batched DP-SGD route (the GPU's start
    left out: the timing follows a warm-up), NaN for other routes."""
    from mechanisms.training import DPSGD
    from mechanisms.training.device_cost import predicted_dpsgd_seconds
    from estimators.device import GPU_START_S

    if not isinstance(mechanism, DPSGD):
        return math.nan
    seconds = predicted_dpsgd_seconds(device, runs=runs, steps=mechanism.steps, records=mechanism.records,
                                         parameters=mechanism.parameter_dim)
    return runs / (seconds - (GPU_START_S if device == "cuda" else 0.0))


def run(context) -> ExperimentOutput:
    import torch

    cuda = str(context.device).startswith("cuda") and torch.cuda.is_available()
    load_before = os.getloadavg()[0]
    table = measure(context.quick, cuda, context.seed)
    figure, axes = new_figure()
    ax = axes[0, 0]
    for index, (route, device) in enumerate(dict.fromkeys(zip(table["route"], table["device"]))):
        rows = [i for i in range(len(table["route"])) if table["route"][i] == route and table["device"][i] == device]
        ax.loglog([table["runs"][i] for i in rows], [table["runs_per_second"][i] for i in rows], "o-",
                  color=f"C{index}", label=f"{route} ({device})")
    ax.set_xlabel("training runs in the batch")
    ax.set_ylabel("training runs per second")
    ax.legend(fontsize=5)
    best = {}
    for route, device, rate in zip(table["route"], table["device"], table["runs_per_second"]):
        best[(route, device)] = max(rate, best.get((route, device), 0.0))
    findings = [f"{route} on {device}: up to {rate:,.0f} training runs per second" for (route, device), rate in best.items()]
    largest = {}  # each DP-SGD route's largest batch, where the device-cost model's rates were measured
    for i, model in enumerate(table["model_runs_per_second"]):
        key = (table["route"][i], table["device"][i])
        if not math.isnan(model) and table["runs"][i] >= table["runs"][largest.get(key, i)]:
            largest[key] = i
    if largest:
        findings.append("Measured over the device-cost model's runs per second (mechanisms.training.device_cost, "
                        "--device auto's choice of trainer), at each route's largest batch: " + "; ".join(
                            f"{route} on {device}: {table['runs_per_second'][i] / table['model_runs_per_second'][i]:.2f}"
                            for (route, device), i in largest.items()) + ".")
    if not cuda:
        findings.append("No CUDA device was used: the CUDA rows (TorchDPSGD on --device cuda, logistic and MLP, up to "
                        "10⁶ runs per batch; the one-run trainer; the black-box search's pilot) wait for a GPU: "
                        "`miaudit experiment training-throughput --device cuda`.")
    findings.append(f"Machine load: 1-minute load average {load_before:.1f} at the start and {os.getloadavg()[0]:.1f} "
                    f"at the end, on {os.cpu_count()} cores.")
    settings = {"records": RECORDS, "features": FEATURES, "steps T": STEPS, "σ": SIGMA, "q": 1.0, "device": str(context.device),
                "CUDA used": cuda, "torch": torch.__version__}
    return ExperimentOutput([Table("training_throughput", table)], figure, settings, findings)


EXPERIMENTS = [Experiment(
    name="training-throughput",
    description="DP-SGD training runs per second: NumPy and torch batched trainers (CPU, CUDA), your Opacus "
                "training through the protocol, the one-run trainer, the black-box search's pilot",
    source="benchmark (issue 33 item 5)",
    run=run,
    trains=True,
    full_runtime="26 s (39 s with start-up) on the shared 2-core x86_64 CPU at load average 10, device cpu; the CUDA "
                 "rows have not been run",
)]
