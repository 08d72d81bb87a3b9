"""Where ``--device auto`` trains the critics of audits run one after another (a sequential audit's looks, both
relations' audits), and of a classifier plan's neural fallback.

No GPU is needed: ``torch.cuda.is_available`` is monkeypatched and the engine's device choice is a stand-in that
records what it is asked and keeps the audit on the CPU. Expected seconds are computed here from the cost model's
formula written out by hand (steps × (step + batch × (pair + width × column))), the constants taken from
:mod:`estimators.device`.
"""

import math

import pytest

from estimators import device as d
from estimators.device import gpu_start_repaid
from mechanisms.training.device_cost import critics_beside_cpu_trainer


def _gain_per_step(width: int, batch: int = 256) -> float:
    """CPU seconds minus GPU seconds (graphed) of one step of one critic, by hand."""
    cpu = d.CPU_STEP_S + batch * (d.CPU_PAIR_S + width * d.CPU_WIDTH_S)
    gpu = d.GPU_STEP_S + batch * (d.GPU_PAIR_S + width * d.GPU_WIDTH_S)
    return cpu - gpu


def test_trainings_that_each_fall_short_of_the_start_repay_it_together():
    S = d.GPU_START_S
    each = (0.8 * S, 0.1 * S)  # gains 0.7 S: alone S + 0.1 S > 0.8 S
    assert not gpu_start_repaid([each])
    assert gpu_start_repaid([each] * 2)  # S + 0.2 S < 1.6 S
    assert not gpu_start_repaid([(0.4 * S, 0.1 * S)] * 3)  # S + 0.3 S > 1.2 S
    assert not gpu_start_repaid([])
    # One training: choose_device's own rule, S + gpu < cpu.
    assert gpu_start_repaid([(1.5 * S, 0.4 * S)]) and not gpu_start_repaid([(1.5 * S, 0.6 * S)])
    # Beside a CPU trainer: the cheaper of all on the CPU and the GPU started once for all that gain there.
    mixed = [(0.8 * S, 0.1 * S), (0.8 * S, 0.1 * S), (0.2 * S, 0.3 * S)]
    assert critics_beside_cpu_trainer(mixed) == pytest.approx(S + 0.1 * S + 0.1 * S + 0.2 * S)
    assert critics_beside_cpu_trainer([(0.4 * S, 0.1 * S)]) == pytest.approx(0.4 * S)


def _recording_choice(monkeypatch):
    """A GPU present, and the audit's critics' device choice replaced by one that records its arguments and
    answers the CPU (so the audit runs here)."""
    import torch

    import audit.critic_cost

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    seen = []

    def choose(device, **asked):
        seen.append(asked)
        return torch.device("cpu"), "device cpu (stand-in)"

    monkeypatch.setattr(audit.critic_cost, "choose_device", choose)
    return seen


def _sequential_spec(steps: int):
    from audit.config.building import build_spec

    return build_spec({"mechanism": {"spec": "catalog:laplace_sum"},
                       "audit": {"mi_critic": "neural", "seed": 3},
                       "critic": {"max_steps": steps}}, max_runs=20000)


@pytest.mark.train
@pytest.mark.parametrize("share", [0.5, 0.25])
def test_a_sequential_audit_s_looks_weigh_the_gpu_s_start_together(monkeypatch, share):
    """Each look trains one critic of width n·k + 1 (the record, the output, the other records) for ``steps``
    steps, gaining ``share`` of the start on the GPU: alone no look repays the start; K looks together do where
    K · share > 1. Where they do, every look is told the start is paid; where not, none is."""
    from audit.gating.sequential import look_schedule, run_sequential_audit

    probe = _sequential_spec(100)
    n, k = probe.priors[0].shape
    width = k + 1 + (n - 1) * k
    steps = math.ceil(share * d.GPU_START_S / _gain_per_step(width))
    spec = _sequential_spec(steps)
    looks = [look for look in look_schedule(spec, 20000, float_runs=False) if not look.early]
    gain = steps * _gain_per_step(width)
    assert gain < d.GPU_START_S  # no look repays the start alone
    together = len(looks) * gain > d.GPU_START_S
    assert together == (share * len(looks) > 1) and len(looks) == 3  # the two cases of the parametrization
    seen = _recording_choice(monkeypatch)
    audit = run_sequential_audit(spec, 20000)
    assert len(seen) == len(audit.looks) >= 1
    for asked in seen:
        assert asked["critics"] == 1 and asked["width"] == width and asked["steps"] == steps
        assert asked["cuda_started"] is together
        assert asked["started_by"] == ("the looks' critic trainings repay it together" if together else "")


@pytest.mark.train
def test_a_classifier_plan_s_neural_fallback_chooses_the_device_for_its_critics(monkeypatch):
    """The plan's classifiers cannot be fitted (a stand-in says so): the neural critics trained instead get a device
    chosen for them (one record's critic, the only record the canary pair changes, of width n·k + the output's k
    numbers), not the classifier plan's choice for no critics."""
    import audit.engine
    from audit.config.building import build_spec
    from audit.engine import run_audit

    spec = build_spec({"mechanism": {"spec": "catalog:laplace_sum"}, "audit": {"samples": 2000, "seed": 1},
                       "critic": {"max_steps": 50}})
    n, k = spec.priors[0].shape
    seen = _recording_choice(monkeypatch)
    monkeypatch.setattr(audit.engine, "fit_classifier_critics", lambda *a, **kw: None)
    result = run_audit(spec)
    assert [asked["critics"] for asked in seen] == [0, 1]
    # The fallback's choice is made once the mechanism has run: the critic reads the record, the output (the k
    # column sums of laplace_sum) and the other records.
    assert seen[1]["width"] == k + k + (n - 1) * k and seen[1]["steps"] == 50
    assert result.estimator != "classifier" and "device cpu (stand-in)" in result.notes


def test_once_one_relation_s_audit_has_used_the_gpu_the_other_counts_its_start_paid(monkeypatch):
    """Both relations' audits whose critics do not repay the start together: the first is told nothing; where it
    used the GPU all the same (its own critics repaid it), the second is told the start is paid."""
    import dataclasses
    from contextlib import nullcontext
    from types import SimpleNamespace

    import audit.both_relations
    import audit.critic_cost
    from audit.config.building import build_spec
    from mechanisms.inputs.relation import ADD_REMOVE

    spec = build_spec({"mechanism": {"spec": "catalog:laplace_sum"}, "audit": {"mi_critic": "neural"}})
    companion = dataclasses.replace(spec, relation=ADD_REMOVE, claim=dataclasses.replace(spec.claim, relation=ADD_REMOVE),
                                    presence_column=None, companion=None)
    told = []

    def audit_stand_in(one, runner, gpu_started=None):
        told.append(gpu_started)
        return SimpleNamespace(device="cuda:0")

    monkeypatch.setattr(audit.critic_cost, "shared_gpu_start", lambda specs, why: None)
    monkeypatch.setattr(audit.both_relations, "merge_relation_results", lambda results: results)
    audit.both_relations.run_both_relations(dataclasses.replace(spec, companion=companion), lambda one: nullcontext(),
                                            audit_stand_in)
    assert told == [None, "the other relation's audit started it"]


def test_once_a_look_has_used_the_gpu_the_later_looks_count_its_start_paid(monkeypatch):
    """The looks' critics do not repay the GPU's start together (a stand-in says so), so look 1 is told nothing;
    look 1 trained on the CPU, look 2 on the GPU all the same (its own critics repaid it): looks 1 and 2 are told
    nothing, look 3 that look 2 started it. The looks' audits are stand-ins that record what they are told."""
    from types import SimpleNamespace

    import audit.critic_cost
    import audit.engine
    from audit.gating.sequential import look_schedule, run_sequential_audit

    spec = _sequential_spec(100)
    assert len(look_schedule(spec, 20000, float_runs=False)) >= 3
    told, devices = [], ["cpu", "cuda:0"]

    class ThirdLook(Exception):
        pass

    def look_stand_in(look_spec, runner, early=False, stop_at_refutation=False, gpu_started=None):
        told.append(gpu_started)
        if len(told) == 3:
            raise ThirdLook
        return SimpleNamespace(device=devices[len(told) - 1], claim=spec.claim, refuted=False, event_test=None,
                               float_event_test=None, claim_verdict=None, verdict=None)

    monkeypatch.setattr(audit.critic_cost, "shared_gpu_start", lambda specs, why: None)
    monkeypatch.setattr(audit.engine, "_run_audit", look_stand_in)
    with pytest.raises(ThirdLook):
        run_sequential_audit(spec, 20000)
    assert told == [None, None, "look 2 started it"]
