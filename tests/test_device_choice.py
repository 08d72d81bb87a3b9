"""``device="auto"`` chooses the device a critic training is predicted to run faster on (issue 42 §2)."""

import pytest

from estimators import device as device_module
from estimators.device import choose_device
from estimators.neural import CriticConfig


def _break_even_critics(steps, batch):
    """Critics at which the two predicted times are equal, solved by hand from the cost model with the GPU's
    graphed step (the ensembles here are small enough for one):
    steps·(s_c + m·b·p_c) = T + steps·(s_g + m·b·p_g)  ⇒  m = (T/steps + s_g − s_c) / (b·(p_c − p_g))."""
    d = device_module
    return (d.GPU_START_S / steps + d.GPU_STEP_S - d.CPU_STEP_S) / (batch * (d.CPU_PAIR_S - d.GPU_PAIR_S))


@pytest.mark.parametrize("steps,batch", [(100, 256), (300, 64), (600, 128)])
def test_auto_takes_the_gpu_only_past_the_break_even_ensemble(steps, batch):
    m = _break_even_critics(steps, batch)
    assert m > 10  # short trainings: the GPU's start decides
    small, large = max(1, int(m * 0.8)), int(m * 1.25) + 1
    assert device_module.gpu_step_is_graphed(large, batch)
    chosen, why = choose_device("auto", critics=small, steps=steps, batch_size=batch, cuda_available=True)
    assert chosen.type == "cpu" and "auto" in why and "predicted" in why
    chosen, why = choose_device("auto", critics=large, steps=steps, batch_size=batch, cuda_available=True)
    assert chosen.type == "cuda" and "on the GPU" in why


def test_one_critic_goes_to_the_gpu_once_its_steps_repay_the_start_and_no_cuda_means_the_cpu():
    # One critic: a graphed GPU step (0.097 ms) beats a CPU step (1.31 ms) once the steps repay the GPU's start.
    d = device_module
    steps = d.GPU_START_S / (d.CPU_STEP_S - d.GPU_STEP_S)  # about 820
    assert choose_device("auto", critics=1, steps=int(steps * 0.8), batch_size=256, cuda_available=True)[0].type == "cpu"
    assert choose_device("auto", critics=1, steps=int(steps * 1.25), batch_size=256, cuda_available=True)[0].type == "cuda"
    chosen, why = choose_device("auto", critics=10**6, steps=2000, batch_size=256, cuda_available=False)
    assert chosen.type == "cpu" and why == "device cpu (auto: no CUDA device)"


def test_a_gpu_step_too_large_for_a_graph_is_predicted_eager(monkeypatch):
    d = device_module
    large = d.GRAPH_MAX_ACTIVATIONS // (2 * 256 * d.PREDICTED_HIDDEN) + 1
    assert not d.gpu_step_is_graphed(large, 256) and d.gpu_step_is_graphed(large - 1, 256)
    eager = d.predicted_training_seconds("cuda", critics=large, steps=10, batch_size=256)
    assert eager == pytest.approx(d.GPU_START_S + 10 * (d.GPU_EAGER_STEP_S + large * 256 * d.GPU_PAIR_S))
    assert d.gpu_step_is_graphed(2 * (large - 1), 256, chunks=2)  # each chunk is graphed on its own
    monkeypatch.setattr(device_module, "CUDA_GRAPHS", False)
    assert not d.gpu_step_is_graphed(1, 256)


def test_an_explicit_device_is_taken_as_asked():
    chosen, why = choose_device("cpu", critics=10**6, steps=2000, batch_size=256, cuda_available=True)
    assert chosen.type == "cpu" and why == "device cpu (as asked)"


def test_a_numbered_cuda_device_is_accepted_where_it_exists(monkeypatch):
    """One GPU of several, as torch names it: the audit's engine chooses by it as by "cuda"."""
    import torch

    from estimators.device import resolve_device
    from estimators.validation import InputError

    with pytest.raises(InputError, match="'device'"):
        resolve_device("cuda:x")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("cuda:0") == torch.device("cuda:0")
    assert choose_device("cuda:0", critics=1, steps=10, batch_size=8)[1] == "device cuda (as asked)"
    with pytest.raises(InputError, match="no such CUDA device"):
        resolve_device("cuda:1")


def test_the_gpu_start_is_not_counted_against_critics_when_the_mechanism_trains_there():
    # Start paid anyway: a graphed GPU step (0.097 ms) beats a CPU step (1.31 ms) for one critic at any step count.
    d = device_module
    assert d.GPU_STEP_S + 256 * d.GPU_PAIR_S < d.CPU_STEP_S + 256 * d.CPU_PAIR_S
    assert choose_device("auto", critics=1, steps=10, batch_size=256, cuda_available=True)[0].type == "cpu"
    chosen, why = choose_device("auto", critics=1, steps=10, batch_size=256, cuda_available=True, cuda_started=True)
    assert chosen.type == "cuda" and "start already paid" in why
    size = dict(critics=1, steps=10, batch_size=256)
    assert (d.predicted_training_seconds("cuda", **size) - d.predicted_training_seconds("cuda", **size, cuda_started=True)
            == pytest.approx(d.GPU_START_S))


@pytest.mark.train
def test_a_torch_dpsgd_on_cuda_trains_on_the_gpu_and_the_engine_says_so_to_the_critics_choice(monkeypatch):
    import torch

    import audit.critic_cost
    import audit.engine
    from audit.spec import AuditSpec
    from mechanisms.catalog.dpsgd import canary_pair
    from mechanisms.training.torch_dpsgd import trains_on_gpu
    from mechanisms.training.dpsgd import DPSGD
    from mechanisms.training.torch_dpsgd import on_device

    numpy_trainer = DPSGD(16, 2, 1.0, steps=4, release="gradient_trace")
    assert not trains_on_gpu(numpy_trainer) and not trains_on_gpu(on_device(numpy_trainer, "cpu"))
    assert trains_on_gpu(on_device(numpy_trainer, "cuda"))
    auto = on_device(numpy_trainer, "auto")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert not trains_on_gpu(auto)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert trains_on_gpu(auto)
    monkeypatch.undo()
    # The engine passes the mechanism's answer to the critics' choice (a stand-in answer; the audit runs on the CPU).
    seen = {}

    def choose(device, **work):
        seen.update(work)
        return torch.device("cpu"), "device cpu (stand-in)"

    monkeypatch.setattr(audit.critic_cost, "trains_on_gpu", lambda mechanism: mechanism is numpy_trainer)
    monkeypatch.setattr(audit.critic_cost, "choose_device", choose)
    pair = canary_pair()
    audit.engine.run_audit(AuditSpec(mechanism=numpy_trainer, priors=(pair.prior(),), samples=400, notion="mi-dp",
                                     epsilon=0.5, mi_critic="neural", critic=CriticConfig(max_steps=5), seed=0))
    assert seen["cuda_started"] is True


def test_no_critics_train_nothing_and_keep_the_audit_on_the_cpu():
    # Classifier critics (critic_work's 0 critics): no step to take, so 0 s on either device and no start to pay;
    # pricing 2,000 steps of an empty ensemble (2.6 s on the CPU, 1.2 s on the GPU) would send them to the GPU.
    d = device_module
    for kind in ("cpu", "cuda"):
        assert d.predicted_training_seconds(kind, critics=0, steps=2000, batch_size=256) == 0.0
    for started in (False, True):
        chosen, _ = choose_device("auto", critics=0, steps=2000, batch_size=256, cuda_available=True,
                                  cuda_started=started)
        assert chosen.type == "cpu"


# The experiment `device-choice`'s audits' table, from stand-in commands (no real timing): the rounds' order, best of
# k, and whether auto ran the configuration of the faster timing.

TORCH_NOTE = ("trainer: the batched torch DP-SGD (TorchDPSGD) on {}, the --device asked for (same step and laws as the "
              "NumPy trainer)")
NUMPY_NOTE = "trainer: the NumPy DP-SGD on the CPU (--device auto: 60,000 runs × 4 steps predicted 0.365 s on the CPU)"


def _stand_in_commands(monkeypatch, walls, trained_on, notes):
    """The experiment's audits become the labels of ``walls``; its command returns, for (audit, device), the next of
    ``walls[audit][device]``. Returns the list of (audit, device) calls in order."""
    from experiments import device_choice

    calls = []

    def command(arguments, device, seed):
        (label,) = arguments
        calls.append((label, device))
        return {"wall_seconds": walls[label][device][calls.count((label, device)) - 1], "audit_seconds": 1.0,
                "trained_on": trained_on[label][device], "verdict": "no-violation-detected",
                "note": notes.get((label, device), "")}

    monkeypatch.setattr(device_choice, "AUDITS", tuple((label, [label]) for label in walls))
    monkeypatch.setattr(device_choice, "run_audit_command", command)
    return calls


def test_device_choice_interleaves_rotated_rounds_keeps_the_fastest_and_says_what_auto_ran(monkeypatch):
    from experiments import device_choice

    walls = {"A": {"cpu": [13.4, 12.9], "cuda": [13.1, 13.3], "auto": [11.0, 12.0]},
             "B": {"cpu": [11.6, 11.9], "cuda": [11.1, 11.4], "auto": [12.4, 11.2]},
             "C": {"cpu": [7.3, 7.5], "cuda": [7.9, 7.8], "auto": [8.0, 7.6]}}
    trained_on = {"A": {"cpu": "cpu", "cuda": "cuda", "auto": "cuda"},
                  "B": {"cpu": "cpu", "cuda": "cuda", "auto": "cuda"},
                  "C": {"cpu": "cpu", "cuda": "cuda", "auto": "cpu"}}
    # C: a DP-SGD audit whose auto run trains with the NumPy trainer, which neither --device cpu nor cuda runs.
    notes = {("C", "cpu"): TORCH_NOTE.format("cpu"), ("C", "cuda"): TORCH_NOTE.format("cuda"),
             ("C", "auto"): NUMPY_NOTE}
    calls = _stand_in_commands(monkeypatch, walls, trained_on, notes)
    table = device_choice.audit_rows(quick=False, seed=0, cuda=True, repeats=2)
    # Six rounds in all, each starting with the device after the one the round before started with.
    rounds = [("cpu", "cuda", "auto"), ("cuda", "auto", "cpu"), ("auto", "cpu", "cuda")] * 2
    assert calls == [(label, device) for label, pair in zip("AABBCC", rounds) for device in pair]
    assert table["positions"][:3] == ["1, 6", "2, 4", "3, 5"]  # A: cpu, cuda, auto
    assert table["wall_seconds_each"][0] == "13.4; 12.9"
    best = {(label, device): min(values) for label, row in walls.items() for device, values in row.items()}
    assert table["wall_seconds"] == [best[(a, d)] for a, d in zip(table["audit"], table["device"])]
    for label in "ABC":
        auto = table["audit"].index(label) + 2
        assert table["device"][auto] == "auto"
        expected = best[(label, "auto")] / min(best[(label, "cpu")], best[(label, "cuda")])
        assert table["auto_over_fastest"][auto] == pytest.approx(expected)
    # A: cpu fastest (12.9 s), auto ran cuda: the slower; B: cuda fastest, auto ran cuda: the same work; C: neither.
    assert [c for c in table["auto_chose_faster"] if c] == ["no", "yes", "neither"]
    assert table["ratio_is"][5] == "the spread between timings of the same work"
    assert table["configuration"][6:] == ["audit on cpu, trainer batched torch DP-SGD (TorchDPSGD) on cpu",
                                          "audit on cuda, trainer batched torch DP-SGD (TorchDPSGD) on cuda",
                                          "audit on cpu, trainer NumPy DP-SGD on cpu"]
    ratio_line, summary = device_choice._findings([], float("nan"), table, repeats=2)
    assert "the fastest of 2 timings each" in ratio_line
    assert f"B: {11.2 / 11.1:.2f}× (same work)" in ratio_line and f"A: {11.0 / 12.9:.2f}×;" in ratio_line
    assert (f"Worst {max(11.0 / 12.9, 11.2 / 11.1, 7.6 / 7.3):.2f}× (target: 1.1× or less); worst where auto ran "
            f"other work than the faster timing: {max(11.0 / 12.9, 7.6 / 7.3):.2f}×.") in ratio_line
    assert summary.startswith("--device auto chose the faster device on 1 of 3 audits")
    assert f"chose the slower device on A ({11.0 / 12.9:.2f}×)" in summary
    assert f"neither --device cpu nor --device cuda ran on C ({7.6 / 7.3:.2f}×)" in summary


def test_device_choice_times_each_command_once_by_default_and_without_a_gpu_compares_cpu_and_auto(monkeypatch):
    from experiments import device_choice
    from experiments.registry import get_experiment

    walls = {"A": {"cpu": [5.0], "auto": [5.5]}, "B": {"cpu": [6.0], "auto": [5.7]}}
    trained_on = {label: {"cpu": "cpu", "auto": "cpu"} for label in walls}
    calls = _stand_in_commands(monkeypatch, walls, trained_on, {})
    table = device_choice.audit_rows(quick=False, seed=0, cuda=False)
    assert calls == [("A", "cpu"), ("A", "auto"), ("B", "auto"), ("B", "cpu")]
    assert table["positions"] == ["1", "2", "2", "1"] and table["auto_chose_faster"] == ["", "yes", "", "yes"]
    ratio_line, summary = device_choice._findings([], float("nan"), table)
    assert "one timing each" in ratio_line and f"A: {5.5 / 5.0:.2f}× (same work)" in ratio_line
    assert ratio_line.endswith(f"Worst {5.5 / 5.0:.2f}× (target: 1.1× or less).")
    assert summary.startswith("--device auto chose the faster device on 2 of 2 audits")
    assert f"there its {5.7 / 6.0:.2f}-{5.5 / 5.0:.2f}× is the spread between timings of the same work" in summary
    # Best of 1 is the default (it fits the GPU check's 200 s); best of 2 is a grid of its own.
    assert get_experiment("device-choice").grids == ("best-of-1", "best-of-2")
    assert device_choice.REPEATS[device_choice.DEFAULT_GRID] == 1 and device_choice.REPEATS["best-of-2"] == 2


def test_device_choice_counts_a_failed_auto_command_apart(monkeypatch):
    from experiments import device_choice

    walls = {"A": {"cpu": [5.0, 4.0], "cuda": [3.0, 3.5], "auto": [1.0, 2.0]}}
    trained_on = {"A": {"cpu": "cpu", "cuda": "cuda", "auto": "failed"}}
    _stand_in_commands(monkeypatch, walls, trained_on, {})
    table = device_choice.audit_rows(quick=False, seed=0, cuda=True, repeats=2)
    assert table["auto_chose_faster"][2] == "failed" and table["wall_seconds"][:2] == [4.0, 3.0]
    summary = device_choice._findings([], float("nan"), table, repeats=2)[1]
    assert "on 0 of 1 audits" in summary and "its command failed on A" in summary


def test_device_choice_grid_best_of_2_times_each_command_twice_and_says_so(monkeypatch):
    from experiments import device_choice
    from experiments.framework import RunContext

    walls = {"A": {"cpu": [5.0, 4.0], "auto": [4.5, 4.2]}}
    calls = _stand_in_commands(monkeypatch, walls, {"A": {"cpu": "cpu", "auto": "cpu"}}, {})
    costs = {"device": "cpu", "small_critics": 1, "small_mode": "eager", "small_step_seconds": 1e-3,
             "large_critics": 64, "large_mode": "eager", "large_step_seconds": 2e-3, "batch_size": 256, "threads": 2,
             "measured_step_seconds": 1e-3, "measured_pair_seconds": 1e-8, "model_step_seconds": 1e-3,
             "model_pair_seconds": 1e-8}
    monkeypatch.setattr(device_choice, "step_costs", lambda device, quick, seed: dict(costs))
    output = device_choice.run(RunContext(quick=False, seed=0, device="cpu", grid="best-of-2"))
    assert calls == [("A", "cpu"), ("A", "auto"), ("A", "auto"), ("A", "cpu")]
    assert output.tables[1].columns["wall_seconds"] == [4.0, 4.2]
    assert output.settings["timings"].startswith("best of 2: 2 interleaved rounds an audit")
    assert any("(same work)" in f and "the fastest of 2 timings each" in f for f in output.findings)
