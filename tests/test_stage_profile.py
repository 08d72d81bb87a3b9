"""The stage profile charges sampled time to the innermost miaudit frame's stage."""

import contextlib
import time

import pytest

from experiments.stage_profile import OTHER, profile_by_stage, stage_of


def test_stage_of_takes_the_innermost_known_module():
    # numpy inside a certificate inside the event search: the certificate's.
    assert stage_of(["numpy.core", "audit.certificates.event_bounds", "audit.search.event_search"]) == "certificates"
    # the mechanism's training inside the event search's runs: the training's.
    assert stage_of(["torch.nn", "mechanisms.training.dpsgd", "mechanisms.execution.runner",
                     "audit.search.event_search"]) == "mechanism runs (DP-SGD training)"
    assert stage_of(["builtins", "importlib"]) == OTHER
    assert stage_of(["audit.searching_for_nothing"]) == "audit bookkeeping"  # a prefix must end at a dot


def _busy_in(module: str, seconds: float):
    """A function whose frames belong to ``module`` that spins for ``seconds``."""
    namespace = {"__name__": module, "time": time}
    exec("def spin(seconds):\n    end = time.perf_counter() + seconds\n    while time.perf_counter() < end:\n        pass\n",
         namespace)
    return lambda: namespace["spin"](seconds)


def test_profile_charges_the_time_to_the_stage_that_spent_it():
    certificate, search = _busy_in("audit.certificates.fake", 0.3), _busy_in("audit.search.fake", 0.15)

    def run():
        certificate()
        search()
        return "done"

    value, seconds = profile_by_stage(run, interval=0.005)
    assert value == "done"
    assert 0.2 < seconds["certificates"] < 0.45
    assert 0.08 < seconds["statistics and event search"] < 0.3


def test_charge_spans_charges_each_span_to_the_sample_holding_its_midpoint():
    from experiments.stage_profile import charge_spans

    timeline = [(0.0, 1.0, "a"), (1.0, 2.0, "b"), (2.0, 3.0, "a")]
    # (0.2, 0.6) in a; (0.9, 1.3) has its midpoint 1.1 in b; (2.5, 2.6) in a; (5, 6) outside every sample.
    charged = charge_spans([(0.2, 0.6), (0.9, 1.3), (2.5, 2.6), (5.0, 6.0)], timeline)
    assert charged == {"a": pytest.approx(0.5), "b": pytest.approx(0.4), OTHER: pytest.approx(1.0)}


def _in_module(module: str, source: str, **names):
    namespace = {"__name__": module, **names}
    exec(source, namespace)
    return namespace["work"]


def test_host_split_tells_torch_operators_from_host_work():
    import torch

    from experiments.stage_profile import host_split

    matmuls = _in_module("audit.certificates.fake", "def work():\n    a = torch.ones(400, 400)\n"
                         "    for _ in range(60):\n        a = torch.tanh(a @ a / 400)\n", torch=torch)
    spin = _in_module("audit.search.fake", "def work():\n    end = time.perf_counter() + 0.25\n"
                      "    while time.perf_counter() < end:\n        pass\n", time=time)

    def run():
        matmuls()
        spin()
        return "done"

    value, seconds, operators, kernels, calls = host_split(run, interval=0.002)
    assert value == "done"
    # torch.ones, then 60 times a matrix product, a division and a tanh; every call counted once, in some stage.
    assert sum(calls.values()) == 1 + 60 * 3
    # The spin calls no torch operator: all of its quarter second is the host's.
    assert operators.get("statistics and event search", 0.0) < 0.02
    assert 0.15 < seconds["statistics and event search"] < 0.5
    # The matrix products are torch operators: most of their stage's time is inside them.
    assert operators["certificates"] > 0.5 * seconds["certificates"]
    assert kernels == {} or torch.cuda.is_available()


def test_device_routes_send_the_statistics_through_their_device_code_and_restore_them():
    from audit.statistics import arithmetic, float_bits
    from experiments.stage_profile import device_routes

    assert not float_bits.on_device("cpu") and not arithmetic.on_device("cpu")
    with device_routes():
        assert float_bits.on_device("cpu") and arithmetic.on_device("cpu") and not float_bits.on_device(None)
    assert not float_bits.on_device("cpu") and not arithmetic.on_device("cpu")


def test_dimension_profile_refuses_sizes_it_cannot_audit():
    from estimators.validation import InputError
    from experiments.dimension_profile import main

    with pytest.raises(InputError, match="--runs"):
        main(["--runs", "100"])
    with pytest.raises(InputError, match="--features"):
        main(["--features", "1"])


@pytest.mark.slow
@pytest.mark.train
def test_dimension_profile_prints_the_stage_split(capsys):
    from experiments.dimension_profile import main

    assert main(["--features", "2", "--runs", "400", "--device-routes"]) == 0
    out = capsys.readouterr().out
    assert "parameter release, d = 129, 400 runs per audit, device cpu, device routes" in out  # 32·2 + 65
    assert "| all |" in out and "torch operators | host | torch operator calls |" in out


def test_span_union_counts_overlapping_time_once():
    from experiments.stage_profile import span_union

    # A call nested in an operator, two overlapping kernels, one apart: 0-10, 12-20, 30-31.
    spans = [(12.0, 15.0), (0.0, 10.0), (2.0, 5.0), (14.0, 20.0), (30.0, 31.0)]
    assert span_union(spans) == [(0.0, 10.0), (12.0, 20.0), (30.0, 31.0)]
    assert span_union([]) == []


def test_count_spans_counts_each_span_in_the_sample_holding_its_midpoint():
    from experiments.stage_profile import count_spans

    timeline = [(0.0, 1.0, "a"), (1.0, 2.0, "b"), (2.0, 3.0, "a")]
    # Midpoints 0.4 (a), 1.1 (b), 2.55 (a), 1.5 (b), 5.5 (outside every sample).
    spans = [(0.2, 0.6), (0.9, 1.3), (2.5, 2.6), (1.4, 1.6), (5.0, 6.0)]
    assert count_spans(spans, timeline) == {"a": 2, "b": 2, OTHER: 1}
    assert count_spans([], timeline) == {}


def test_operator_spans_count_calls_from_python_and_not_what_they_call_inside():
    import torch
    from torch.profiler import ProfilerActivity, profile

    from experiments.stage_profile import MAIN_THREAD_MARK, operator_spans

    with profile(activities=[ProfilerActivity.CPU]) as recorder:
        with torch.profiler.record_function(MAIN_THREAD_MARK):
            pass
        a = torch.ones(5)  # 1
        b = torch.arange(5.0) @ a  # 2, 3: arange, matmul (the dot product inside it is not a call)
        c = (a + b).to(torch.float64).sum()  # 4, 5, 6: the conversion's copy inside it is not a call
        with torch.profiler.record_function("a named range"):  # an optimizer's step is one: what runs inside counts
            a.mul_(2.0)  # 7
            torch.exp(c)  # 8
    operators, kernels = operator_spans(recorder)
    assert len(operators) == 8
    assert all(start <= end for start, end in operators)
    assert kernels == [] or torch.cuda.is_available()


def test_stage_table_shows_operator_calls_by_stage():
    from experiments.stage_profile import stage_table

    seconds = {"certificates": 3.0, "statistics and event search": 1.0}
    operators = {"certificates": 2.0}
    calls = {"certificates": 12345, "statistics and event search": 7, OTHER: 2}
    lines = stage_table(seconds, operators, calls=calls).splitlines()
    assert lines[0] == "| stage | seconds | share | torch operators | host | torch operator calls |"
    assert lines[2] == "| certificates | 3.0 | 75% | 2.0 | 1.0 | 12,345 |"
    assert lines[3] == "| statistics and event search | 1.0 | 25% | 0.0 | 1.0 | 7 |"
    assert lines[4] == f"| {OTHER} | 0.0 | 0% | 0.0 | 0.0 | 2 |"  # calls outside every sample
    assert lines[5] == "| all | 4.0 | 100% | 2.0 | 2.0 | 12,354 |"
    # Without calls, the table is as before.
    assert "calls" not in stage_table(seconds, operators)


def test_epsilon_profile_refuses_what_it_cannot_audit():
    from estimators.validation import InputError
    from experiments.epsilon_profile import main

    with pytest.raises(InputError, match="--runs"):
        main(["--runs", "100"])
    with pytest.raises(InputError, match="--release"):
        main(["--release", "parameters"])
    with pytest.raises(InputError, match="--epsilon"):
        main(["--epsilon", "3"])


@pytest.mark.parametrize("release, expected", [("gradient_trace", [(1, 0)]), ("loss", [(1, 1)]),
                                                ("both", [(1, 0), (1, 1)])])
def test_epsilon_profile_audits_the_rows_jobs_with_their_seeds(monkeypatch, release, expected):
    # The audits profiled are epsilon_rows' own at target ε = 2 (the grid's second, i = 1), at the runs asked for:
    # each job's arguments and seed, _seed(0, 1, i, j) = an integer below 2³¹ from default_rng([0, 1, i, j]).
    import numpy as np

    from experiments import dpsgd_audit, stage_profile
    from experiments.epsilon_profile import profile_epsilon

    monkeypatch.setattr(dpsgd_audit, "_audit", lambda *job: job)
    monkeypatch.setattr(stage_profile, "timed_host_split", lambda run, routes, chunks: (run(), 0.0))
    audits, _ = profile_epsilon(2.0, release, 400)
    assert [row["release"] for row, _ in audits] == [("gradient_trace", "loss")[j] for _, j in expected]
    for (row, job), (i, j) in zip(audits, expected):
        mechanism, pair, claim, runs, notion, slices, critic, seed, device = job
        assert row["target_epsilon"] == 2.0 and mechanism.release == row["release"] and runs == 400
        assert notion == "mi-dp" and slices == (8 if j == 0 else 0) and device == "cpu"
        assert seed == int(np.random.default_rng([0, 1, i, j]).integers(2**31))
        assert claim.parameters()["epsilon"] == row["accountant_epsilon"]


@pytest.mark.slow
@pytest.mark.train
def test_epsilon_profile_prints_the_stage_split_of_the_rows_audits(capsys):
    from experiments.epsilon_profile import main

    assert main(["--epsilon", "8", "--release", "loss", "--runs", "400", "--device-routes", "--gpu-chunks"]) == 0
    out = capsys.readouterr().out
    assert "ε audits, target ε = 8, 400 runs per database, device cpu, device routes, GPU chunks" in out
    assert "| all |" in out and "torch operators | host | torch operator calls |" in out


def test_gpu_chunks_give_torch_dpsgd_the_chunks_of_a_cuda_device_and_restore_them():
    # The runner's rule on a GPU (mechanisms.execution.runner.MechanismRunner.chunk_size): TorchDPSGD asks for 4096
    # runs, cut to 2²² database entries but not below 256; on the CPU it asks for nothing and gets 256.
    from experiments.stage_profile import gpu_chunks
    from mechanisms.execution.runner import MechanismRunner
    from mechanisms.training.dpsgd import DPSGD
    from mechanisms.training.torch_dpsgd import TorchDPSGD, on_device

    mechanism = on_device(DPSGD(16, 1, 1.0, steps=1), "cpu")
    runner = MechanismRunner(mechanism, "dpsgd")
    # The ε stage's databases (16 records of 4 columns); the parameter release's at 256 features (258 columns).
    narrow, wide = (16, 4), (16, 258)
    assert runner.chunk_size(narrow) == 256 and mechanism.preferred_chunk_size is None
    with gpu_chunks():
        assert runner.chunk_size(narrow) == 4096
        assert runner.chunk_size(wide) == 4194304 // (16 * 258) == 1016
        assert runner.chunk_size(None) == 256  # a shape it is not told: the default, as on a GPU
    assert runner.chunk_size(narrow) == 256 and mechanism.preferred_chunk_size is None
    assert "CUDA" in TorchDPSGD.preferred_chunk_size.__doc__


@pytest.mark.train
def test_gpu_chunks_reach_the_mechanism_calls(monkeypatch):
    # 5000 databases sampled through the runner: in calls of 256 runs without gpu_chunks, of 4096 (and the rest)
    # with them, counted where the runner calls the trainer.
    import numpy as np

    from experiments.stage_profile import gpu_chunks
    from mechanisms.execution.runner import MechanismRunner
    from mechanisms.training.dpsgd import DPSGD
    from mechanisms.training.torch_dpsgd import TorchDPSGD, on_device

    sizes = []
    call = TorchDPSGD.__call__

    def counted(self, dbs, rng=None):
        sizes.append(len(dbs))
        return call(self, dbs, rng)

    monkeypatch.setattr(TorchDPSGD, "__call__", counted)
    base = np.zeros((4, 4))
    base[:, 1], base[:, 2] = np.linspace(-1, 1, 4), [0, 1, 0, 1]
    dbs = np.repeat(base[None], 5000, axis=0)
    for chunked, expected in ((False, [256] * 19 + [136]), (True, [4096, 904])):
        sizes.clear()
        with gpu_chunks() if chunked else contextlib.nullcontext():
            with MechanismRunner(on_device(DPSGD(4, 2, 1.0, steps=1), "cpu"), "dpsgd") as runner:
                runner.sample(dbs, np.random.default_rng(0))
        assert [size for size in sizes if size > 1] == expected  # the probe's calls are of one database
