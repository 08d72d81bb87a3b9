"""Where ``--device auto`` trains a catalog DP-SGD entry (mechanisms.training.device_cost, issue 42 §2).

The model's expected values are computed here from the measurements it was fitted to (one H200 with 16 cores,
docs/benchmarks/training-throughput.md: TorchDPSGD at 449,205 logistic and 325,580 32-unit MLP runs/s on the GPU;
the NumPy trainer at 199,748 logistic and TorchDPSGD at 41,085 MLP runs/s on its CPU; 16 records, T = 4) and from
the break-even of two straight lines, not from the module's constants.
"""

import re

import pytest

from estimators.device import GPU_START_S
from mechanisms.training.device_cost import choose_training_device, predicted_dpsgd_seconds
from mechanisms.training.dpsgd import DPSGD
from mechanisms.training.torch_dpsgd import TorchDPSGD, trainer_for_device

REPORT = {  # (parameters D, GPU runs/s, CPU runs/s) at 16 records and 4 steps
    "logistic": (3, 449_205, 199_748),
    "mlp-32": (129, 325_580, 41_085),
}


@pytest.mark.parametrize("model", sorted(REPORT))
def test_the_model_reproduces_the_measured_runs_per_second(model):
    parameters, gpu_rate, cpu_rate = REPORT[model]
    runs = 10**6
    size = dict(runs=runs, steps=4, records=16, parameters=parameters)
    assert predicted_dpsgd_seconds("cpu", **size) == pytest.approx(runs / cpu_rate, rel=0.02)
    assert predicted_dpsgd_seconds("cuda", **size) - GPU_START_S == pytest.approx(runs / gpu_rate, rel=0.02)


def test_the_training_cost_grows_with_steps_and_records_in_proportion():
    one = predicted_dpsgd_seconds("cpu", runs=1000, steps=4, records=16, parameters=3)
    assert predicted_dpsgd_seconds("cpu", runs=1000, steps=8, records=32, parameters=3) == pytest.approx(4 * one)
    assert predicted_dpsgd_seconds("cpu", runs=0, steps=4, records=16, parameters=3) == 0.0
    assert predicted_dpsgd_seconds("cuda", runs=0, steps=4, records=16, parameters=3) == GPU_START_S


def test_auto_takes_the_gpu_exactly_past_the_break_even_of_the_measured_rates():
    parameters, gpu_rate, cpu_rate = REPORT["logistic"]
    # Per run at 16 records and T = 4: 1/rate on each device; the GPU's start pays off past start / (difference).
    break_even = GPU_START_S / (1 / cpu_rate - 1 / gpu_rate)
    assert 300_000 < break_even < 420_000
    size = dict(steps=4, records=16, parameters=parameters)
    below, why = choose_training_device(runs=int(0.95 * break_even), cuda_available=True, **size)
    above, _ = choose_training_device(runs=int(1.05 * break_even), cuda_available=True, **size)
    assert (below, above) == ("cpu", "cuda")
    assert "on the CPU" in why and "on the GPU" in why
    assert choose_training_device(runs=10**9, cuda_available=False, **size) == ("cpu", "no CUDA device")


def test_trainer_for_device_keeps_the_numpy_trainer_unless_the_gpu_gains():
    mechanism = DPSGD(16, 2, 1.0, steps=4, release="gradient_trace")
    assert trainer_for_device(mechanism, "auto", 10**7, cuda_available=False) == (mechanism, None)
    small, note = trainer_for_device(mechanism, None, 60_000, cuda_available=True)
    assert small is mechanism and "NumPy DP-SGD on the CPU" in note and "60,000 runs" in note
    large, note = trainer_for_device(mechanism, "auto", 10**6, cuda_available=True)
    assert isinstance(large, TorchDPSGD) and large.device == "cuda" and "--device auto" in note
    asked, note = trainer_for_device(mechanism, "cpu", 10, cuda_available=False)  # asked for: taken as given
    assert isinstance(asked, TorchDPSGD) and asked.device == "cpu" and "asked for" in note


def test_a_negative_run_count_is_named():
    from estimators.validation import InputError

    with pytest.raises(InputError, match="argument 'runs'"):
        predicted_dpsgd_seconds("cpu", runs=-1, steps=4, records=16, parameters=3)


def test_an_audit_weighs_its_samples_and_event_runs(monkeypatch):
    """``build_spec`` passes the audit's runs: samples, and for a DP claim both inputs' event runs (a stand-in GPU)."""
    import torch

    from audit.config.building import build_spec

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    entry = {"spec": "catalog:dpsgd_s1_q1_t4"}
    default = build_spec({"mechanism": entry, "audit": {}})  # a DP claim: 20,000 + 2 × 20,000 runs
    assert type(default.mechanism) is DPSGD
    assert any("60,000 runs × 4 steps × 16 records" in n for n in default.notes)
    # 150,000 samples and as many event runs per input: 450,000 runs, past the break-even; fewer event runs: not.
    assert 150_000 * 3 > _break_even() > 150_000 + 2 * 10_000
    assert isinstance(build_spec({"mechanism": entry, "audit": {"samples": 150_000}}).mechanism, TorchDPSGD)
    fewer = build_spec({"mechanism": entry, "audit": {"samples": 150_000, "event_runs": 10_000}})
    assert type(fewer.mechanism) is DPSGD and any("170,000 runs" in n for n in fewer.notes)


# The trainer's choice beside the critics (mechanisms.training.device_cost, module docstring). Each expected choice is
# written out from the measured rates above (the trainer's seconds are runs / rate on each device) and stand-in
# critic seconds: the process starts the GPU once for whatever it puts there.
LOGISTIC = dict(steps=4, records=16, parameters=REPORT["logistic"][0])


def _trainer_seconds(runs):
    _, gpu_rate, cpu_rate = REPORT["logistic"]
    return runs / cpu_rate, runs / gpu_rate  # the GPU's start not counted


def _break_even():
    _, gpu_rate, cpu_rate = REPORT["logistic"]
    return GPU_START_S / (1 / cpu_rate - 1 / gpu_rate)


def test_critics_that_go_to_the_gpu_anyway_leave_the_trainer_its_start():
    # Half the trainer's own break-even: alone, it stays on the CPU (its start is not repaid).
    runs = int(0.5 * _break_even())
    cpu, gpu = _trainer_seconds(runs)
    assert GPU_START_S + gpu > cpu
    assert choose_training_device(runs=runs, cuda_available=True, **LOGISTIC)[0] == "cpu"
    # One critic training of 10 s on the CPU and 1 s on the GPU goes there whatever the trainer does (1 + 1 < 10):
    # the start is paid either way, and the trainer gains cpu − gpu > 0 there.
    critic = (10.0, 1.0)
    assert GPU_START_S + critic[1] < critic[0] and gpu < cpu
    chosen, why = choose_training_device(runs=runs, cuda_available=True, critic_seconds=[critic], **LOGISTIC)
    assert chosen == "cuda"
    on_gpu, on_cpu = GPU_START_S + gpu + critic[1], cpu + GPU_START_S + critic[1]  # the start once in each
    said = re.search(r"predicted ([\d.]+) s with the trainer on the CPU, ([\d.]+) s on the GPU", why)
    assert [float(x) for x in said.groups()] == pytest.approx([on_cpu, on_gpu], rel=0.02)


def test_a_start_that_neither_repays_alone_is_repaid_by_the_two_together():
    # Trainer: 0.6 start's worth of gain on the GPU; critics: 0.7 (0.8 s on the CPU, 0.1 s on the GPU, 0.1 + 1 > 0.8).
    runs = int(0.6 * _break_even())
    cpu, gpu = _trainer_seconds(runs)
    critic = (0.8, 0.1)
    assert GPU_START_S + critic[1] > critic[0] and GPU_START_S + gpu > cpu
    # Trainer on the CPU: the critics stay there too (their own start is not repaid): cpu + 0.8.
    # Trainer on the GPU: the critics follow, the start paid: 1 + gpu + 0.1, smaller by 0.6 + 0.7 − 1 = 0.3 s.
    assert GPU_START_S + gpu + critic[1] < cpu + critic[0]
    assert choose_training_device(runs=runs, cuda_available=True, critic_seconds=[critic], **LOGISTIC)[0] == "cuda"
    # A critic that gains only 0.2 s on the GPU does not: 0.6 + 0.2 < 1.
    small = (0.3, 0.1)
    assert choose_training_device(runs=runs, cuda_available=True, critic_seconds=[small], **LOGISTIC)[0] == "cpu"


def test_with_one_critic_training_the_choice_is_the_best_of_the_four_placements():
    """Against brute force: every placement of the trainer and the critics (2 × 2), the GPU's start once where
    either is there; the rule's trainer device is the cheapest placement's (ties aside)."""
    import itertools

    import numpy as np

    rng = np.random.default_rng(42)
    for _ in range(300):
        runs = int(rng.uniform(0, 3) * _break_even())
        trainer = dict(zip(("cpu", "cuda"), _trainer_seconds(runs)))
        critic = dict(zip(("cpu", "cuda"), rng.uniform(0, 3, size=2)))
        totals = {(t, c): trainer[t] + critic[c] + GPU_START_S * ("cuda" in (t, c))
                  for t, c in itertools.product(("cpu", "cuda"), repeat=2)}
        best = min(totals, key=totals.get)
        second = sorted(totals.values())[1]
        if second - totals[best] < 0.25:  # the model reproduces the rates within 2% (0.1 s here): skip near-ties
            continue
        chosen, _ = choose_training_device(runs=runs, cuda_available=True,
                                           critic_seconds=[(critic["cpu"], critic["cuda"])], **LOGISTIC)
        assert chosen == best[0], (runs, critic, totals)


def test_each_critic_training_goes_where_the_engine_sends_it():
    # Several trainings (a sequential audit's looks): with the trainer on the CPU they weigh the start together
    # (estimators.device.gpu_start_repaid) and, once it is paid, each goes where it is the faster; with the trainer on
    # the GPU none counts it.
    trainings = [(3.0, 0.5), (3.0, 0.5), (0.4, 0.3)]
    runs = int(0.2 * _break_even())
    cpu, gpu = _trainer_seconds(runs)
    on_cpu = cpu + GPU_START_S + 0.5 + 0.5 + 0.3  # 1 + 1.3 < 6.4: the start is paid, so all three go to the GPU
    on_gpu = GPU_START_S + gpu + 0.5 + 0.5 + 0.3  # all go to the GPU, the start paid
    assert on_gpu < on_cpu
    chosen, why = choose_training_device(runs=runs, cuda_available=True, critic_seconds=trainings, **LOGISTIC)
    assert chosen == "cuda" and "3 trainings" in why


def test_the_runs_of_a_fixed_audit_are_its_mi_sample_and_both_inputs_event_runs():
    """A catalog entry's release is snapped: the float-bit event test finds no bits below the grid and makes no
    runs, so a fixed audit makes samples + 2 × event_runs (one prior); an unsnapped release doubles the event runs."""
    import numpy as np

    from audit.config.building import build_spec
    from audit.config.trainer_device import audit_work
    from audit.spec import AuditSpec
    from audit.statistics.float_bits import has_fine_bits
    from mechanisms.catalog.dpsgd import canary_pair

    spec = build_spec({"mechanism": {"spec": "catalog:dpsgd_s1_q1_t4"}, "audit": {"samples": 3000}})
    assert spec.arithmetic == "float" and len(spec.priors) == 1 and not spec.pairs and not spec.prior_search
    pair = canary_pair()
    outputs = spec.mechanism(np.stack([pair.first] * 50), np.random.default_rng(0))
    assert not has_fine_bits(outputs) and spec.mechanism.release_on_grid
    assert audit_work(spec) == (3000 + 2 * 3000, ())
    parameters = DPSGD(16, 2, 1.0, steps=4, release="parameters")
    assert has_fine_bits(parameters(np.stack([pair.first] * 50), np.random.default_rng(0)))
    assert not parameters.release_on_grid
    unsnapped = AuditSpec(mechanism=parameters, priors=(pair.prior(),), samples=3000, notion="mi-dp", epsilon=0.5,
                          mi_critic="classifier", seed=0)
    assert audit_work(unsnapped)[0] == 3000 + 2 * 2 * 3000


def test_a_sequential_audit_weighs_its_budget_and_every_look_s_critics(monkeypatch):
    import torch

    from audit.config.building import build_spec
    from audit.config.trainer_device import audit_work
    from audit.gating.sequential import look_schedule
    from estimators import device

    entry = {"spec": "catalog:dpsgd_s1_q1_t4"}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    # Classifier critics (the default): the budget alone. 10⁶ runs is past the break-even, 60,000 (the fixed
    # audit's) is not; the fixed audit of the same flags stays on the NumPy trainer.
    assert 10**6 > _break_even() > 60_000
    sequential = build_spec({"mechanism": entry, "audit": {}}, max_runs=10**6)
    assert isinstance(sequential.mechanism, TorchDPSGD) and any("1,000,000 runs" in n for n in sequential.notes)
    assert type(build_spec({"mechanism": entry, "audit": {}}).mechanism) is DPSGD
    # Neural critics: one training per look but the early one, each of max_steps steps of one critic at batch 256
    # (a CUDA graph on the GPU) reading the record, an output value and the other records (n·k + 1 = 65 numbers):
    # steps × (step + 256 × (pair + 65 × column)) on either device, the start not counted.
    neural = build_spec({"mechanism": entry, "audit": {"mi_critic": "neural"}})
    config, (n, k) = neural.critic, neural.priors[0].shape
    one = [config.max_steps * (step + config.batch_size * (pair + (n * k + 1) * column))
           for step, pair, column in ((device.CPU_STEP_S, device.CPU_PAIR_S, device.CPU_WIDTH_S),
                                      (device.GPU_STEP_S, device.GPU_PAIR_S, device.GPU_WIDTH_S))]
    runs, trainings = audit_work(neural, 8 * 10**6)
    looks = [look for look in look_schedule(neural, 8 * 10**6, float_runs=False) if not look.early]
    assert runs == 8 * 10**6 and len(looks) >= 2
    assert len(trainings) == len(looks)
    assert [value for seconds in trainings for value in seconds] == pytest.approx(one * len(looks))
    fixed_runs, (fixed,) = audit_work(neural)
    assert fixed_runs == 60_000 and list(fixed) == pytest.approx(one)


def test_the_cli_passes_a_sequential_audit_s_budget_to_the_trainer_choice(monkeypatch):
    import audit.cli.audit_command as audit_command
    from audit.cli.main import main
    from estimators.validation import InputError

    seen = []

    def build(config, *, quiet, max_runs=None):
        seen.append(max_runs)
        raise InputError("stand-in: stop before the audit")

    monkeypatch.setattr(audit_command, "build_spec", build)
    flags = ["audit", "--mechanism", "catalog:dpsgd_s1_q1_t4", "--max-runs", "700000"]
    assert main(flags) == 2 and main(flags + ["--plan"]) == 2 and main(flags[:3]) == 2
    assert seen == [700_000, None, None]


def test_both_relations_audits_are_weighed_together_and_both_get_the_trainer():
    """A claim stated for no relation audits the replace-one spec and its add-remove companion in one process: their
    runs add up (each a fixed audit's, audit.gating.look_runs), the companion's neural critics count, and the
    trainer chosen is both audits' (AuditSpec requires one mechanism)."""
    import dataclasses

    from audit.config.building import build_spec
    from audit.config.trainer_device import audit_work, with_trainer
    from audit.gating.look_runs import look_runs
    from mechanisms.inputs.relation import ADD_REMOVE

    spec = build_spec({"mechanism": {"spec": "catalog:dpsgd_s1_q1_t4"}, "audit": {"samples": 3000}})
    companion = dataclasses.replace(spec, relation=ADD_REMOVE, claim=dataclasses.replace(spec.claim, relation=ADD_REMOVE),
                                    presence_column=None, companion=None)
    both = dataclasses.replace(spec, companion=companion)
    runs, trainings = audit_work(both)
    assert runs == look_runs(spec, 3000, False) + look_runs(companion, 3000, False) > 3 * 3000
    assert len(trainings) == 1 and trainings[0][1] + GPU_START_S < trainings[0][0]  # the companion's go to the GPU
    chosen = with_trainer(both, cuda_available=True)  # so the trainer follows (25,000 runs, below its break-even)
    assert runs < _break_even() and isinstance(chosen.mechanism, TorchDPSGD)
    assert chosen.companion.mechanism is chosen.mechanism and "--device auto" in chosen.companion.notes[-1]
    assert with_trainer(spec, cuda_available=False) is spec  # no GPU: nothing changes, nothing said
