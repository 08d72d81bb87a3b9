"""A critics' memory refusal names what its user can change from where they called (estimators.memory): the
Python API its arguments (``critic``, ``slices``, ``device 'cpu'``), ``miaudit estimate`` its flags (it has none for
the critic, so ``--slices`` or ``--device``), an audit its ``critic`` with the configuration's ``[critic]`` table and
``--set``, and the CPU both ways. No GPU is needed: ``torch.cuda.is_available`` and the one CUDA query,
:func:`estimators.memory.gpu_free_memory`, are monkeypatched to a GPU with 1,000 bytes free."""

import re

import numpy as np
import pytest

from audit.cli.main import main
from estimators import memory
from estimators.validation import InputError

FREE = 1000


@pytest.fixture
def small_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(memory, "gpu_free_memory", lambda device: FREE)


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2000, 3)), rng.normal(size=(2000, 3))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return tmp_path, x, y


def _quoted(message):
    """Every name the message quotes as an argument: ``argument 'NAME'``."""
    return re.findall(r"arguments? '([^']+)'", message)


def test_the_python_api_names_its_arguments(small_gpu, data):
    from estimators.estimate import estimate_mi

    _, x, y = data
    with pytest.raises(InputError) as refused:  # 4 slices' critics in one chunk on the GPU: the critic's settings
        estimate_mi(x, y, sliced=True, slices=4, device="cuda")
    message = str(refused.value)
    assert message.startswith("argument 'critic' (hidden = 32, batch_size = 256, max_critics_per_chunk = 4096): "
                              "training 4 critic(s) on 2000 samples of 2 input values on cuda needs at least ")
    assert message.endswith("; lower its max_critics_per_chunk (fewer critics on the GPU at once), hidden or "
                            "batch_size, or train on the CPU (device 'cpu')")
    assert "--" not in message


def test_miaudit_estimate_names_its_flags_not_the_critic(small_gpu, data, capsys):
    folder = data[0]
    files = ["--x", str(folder / "x.npy"), "--y", str(folder / "y.npy"), "--device", "cuda"]
    assert main(["estimate", *files, "--sliced", "--slices", "4"]) == 2
    sliced = capsys.readouterr().err
    # One critic per slice, 4 in one chunk: fewer slices put fewer on the GPU at once.
    assert sliced.startswith("miaudit estimate: error: argument '--slices' (4): training 4 critic(s) on 2000 samples "
                             "of 2 input values on cuda needs at least ")
    assert sliced.rstrip().endswith("; use fewer slices (fewer critics on the GPU at once), or train on the CPU "
                                    "(--device cpu)")
    assert main(["estimate", *files]) == 2
    whole = capsys.readouterr().err
    # One critic on (x, y), 6 numbers wide: its models (float32: 5 copies of 6·32 + 2·32 + 1 + 6 = 263 parameters,
    # and a scoring pass's activations over the 2,000 rows, more than a step's 2 × 256) outweigh its inputs on the
    # GPU (2,000 × 6 values of 8 + 4 + 4 bytes), so fewer samples would not do: only the CPU.
    parameters = 6 * 32 + 2 * 32 + 1 + 6
    assert 4 * (5 * parameters + max(2 * 256, 2000) * 32) > 2000 * 6 * 16
    assert whole.startswith("miaudit estimate: error: argument '--device' (cuda): training 1 critic(s) on 2000 "
                            "samples of 6 input values on cuda needs at least ")
    assert whole.rstrip().endswith("; train on the CPU (--device cpu)")
    for message in (sliced, whole):
        assert set(_quoted(message)) <= {"--slices", "--device"}
        assert "critic'" not in message and "hidden" not in message


def _audit_config(tmp_path):
    path = tmp_path / "audit.toml"
    path.write_text('[mechanism]\nspec = "catalog:laplace_sum"\n[audit]\nmi_critic = "neural"\ndevice = "cuda"\n'
                    '[critic]\nhidden = 512\n')
    return path


AUDIT_NAMED = ("argument 'critic' (hidden = 512, batch_size = 256, max_critics_per_chunk = 4096; [critic] in a "
               "configuration, --set critic.KEY=VALUE): training 1 critic(s) on 20000 samples of ")
AUDIT_REMEDY = ("lower its max_critics_per_chunk (fewer critics on the GPU at once), hidden or batch_size, or train "
                "on the CPU (device 'cpu', --device cpu)")


def test_an_audit_from_the_command_line_names_the_critic_where_the_command_line_sets_it(small_gpu, tmp_path, capsys):
    assert main(["audit", str(_audit_config(tmp_path))]) == 2
    message = capsys.readouterr().err
    assert message.startswith("miaudit audit: error: " + AUDIT_NAMED)
    assert message.rstrip().endswith(AUDIT_REMEDY)


def test_an_audit_from_python_names_the_same_settings(small_gpu, tmp_path):
    from audit.config.building import build_spec
    from audit.config.files import load_config
    from audit.engine import run_audit

    with pytest.raises(InputError) as refused:
        run_audit(build_spec(load_config(_audit_config(tmp_path))))
    assert str(refused.value).startswith(AUDIT_NAMED) and str(refused.value).endswith(AUDIT_REMEDY)
    assert _quoted(str(refused.value)) == ["critic"]  # AuditSpec.critic


def test_names_may_say_the_critic_cannot_be_set():
    from estimators.estimate import estimate_mi

    x = np.zeros((10, 1))
    with pytest.raises(InputError, match=r"^argument 'names' must be a dict .*'critic' also to None"):
        estimate_mi(x, x, names={"x": None})


# The audit's memory check (mechanisms.execution.memory.check_audit_memory) names the budgets it asks to lower as
# every audit message names them: the argument, the flag and the configuration key (audit.critic_cost).
SAMPLES = "argument 'samples' (--samples, [audit] samples)"
SLICES = "argument 'slices' (--slices, [audit] slices)"
RECORDS = "argument 'records' (--records, [audit] records)"
EVENT_RUNS = "argument 'event_runs' (--event-runs, [audit] event_runs)"


@pytest.mark.parametrize("budget, expected", [
    # 10^9 databases of 20 x 3, two priors, no critic: the databases are the peak.
    (dict(samples=10**9, shape=(20, 3), priors=2, available=10**9), f"; lower {SAMPLES}"),
    # 10^13 event-test runs outweigh 1,000 databases.
    (dict(samples=1000, shape=(20, 3), priors=1, event_runs=10**13, output_width=5, available=2**40),
     f"; lower {EVENT_RUNS}"),
    # Critics of 2 GB beside 64 kB of databases and outputs: one critic per audited record and slice.
    (dict(samples=1000, shape=(3, 1), priors=1, critics={"critic features": 10**9, "critic models": 10**9},
          available=10**6), f"; lower {SAMPLES} or {SLICES}, or audit fewer records: {RECORDS}"),
])
def test_the_audit_memory_hint_names_the_argument_flag_and_key(budget, expected):
    from audit.critic_cost import AUDIT_MEMORY_NAMES
    from mechanisms.execution.memory import check_audit_memory

    samples, shape, priors = budget.pop("samples"), budget.pop("shape"), budget.pop("priors")
    with pytest.raises(InputError) as refused:
        check_audit_memory(samples, shape, priors, names=AUDIT_MEMORY_NAMES, **budget)
    assert str(refused.value).endswith(expected)
    # Without names (a caller outside the audit), the flags alone.
    with pytest.raises(InputError) as flags:
        check_audit_memory(samples, shape, priors, **budget)
    assert str(flags.value).endswith(re.sub(r"argument '\w+' \((--[\w-]+), \[audit\] \w+\)", r"\1", expected))


def test_the_audit_names_are_real_flags_and_configuration_keys():
    from pathlib import Path

    from audit.critic_cost import AUDIT_MEMORY_NAMES, SAMPLES_NAME

    assert SAMPLES_NAME == SAMPLES
    assert list(AUDIT_MEMORY_NAMES.values()) == [SAMPLES, SLICES, RECORDS, EVENT_RUNS]
    rows = (Path(__file__).parents[1] / "docs" / "reference" / "configuration.md").read_text()
    for key, flag in [("samples", "--samples"), ("slices", "--slices"), ("records", "--records"),
                      ("event_runs", "--event-runs")]:
        assert f"| `[audit] {key}` | " in rows and re.search(rf"\| `\[audit\] {key}` \|[^\n]*\| `{flag}` \|", rows)


def test_the_sample_floors_and_the_memory_hint_share_the_one_name(monkeypatch, capsys):
    import inspect

    from audit import engine, spec

    # The engine's floors say the one constant, not a copy of it.
    assert "[audit] samples" not in inspect.getsource(engine) and "[audit] event_runs" not in inspect.getsource(spec)
    # 10 samples: a held-out split (0.5) of 5 draws, below the floor of 200.
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--epsilon", "1", "--samples", "10", "--quiet"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]  # after a note that 10 event runs certify nothing
    assert error.startswith(f"miaudit audit: error: {SAMPLES} is 10: too small to certify")
    # One event run per input certifies no ε at α = 0.05 (AuditSpec's check).
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--epsilon", "1", "--event-runs", "1", "--quiet"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith(f"miaudit audit: error: {EVENT_RUNS} is 1: with so few runs")
    from mechanisms.execution import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    monkeypatch.setattr(engine, "draw_samples", lambda *args, **kwargs: pytest.fail("sampled"))
    # 64 sliced critics on 2,000 samples (MiBs of features) outweigh the databases and the event runs (kiBs).
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--notion", "smi-dp", "--epsilon", "1", "--samples",
                 "2000", "--slices", "64", "--quiet"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("miaudit audit: error: argument 'samples' (2000): the audit needs at least ")
    assert line.endswith(f"; lower {SAMPLES} or {SLICES}, or audit fewer records: {RECORDS}")


# The mechanism runner's check of the outputs' memory (mechanisms.execution.memory.check_output_memory), made once
# the first call has said the outputs' width, names the budget the same way when an audit runs it.
WIDE_MECHANISM = ("import numpy as np\n\n"
                  "def wide(dbs, rng):\n    return np.repeat(dbs.sum(axis=(1, 2))[:, None], 10**5, axis=1)\n")


def test_the_output_memory_hint_of_an_audit_names_the_argument_flag_and_key(monkeypatch, tmp_path, capsys):
    from mechanisms.execution import memory

    (tmp_path / "wide.py").write_text(WIDE_MECHANISM)
    monkeypatch.chdir(tmp_path)
    # 2,000 audit samples of 100,000 outputs, chunks and joined: 2 x 2000 x 10^5 x 8 bytes = 3.2e9 bytes = 2.98 GiB,
    # above 10^9 bytes = 954 MiB; the audit's own check, made before the first call with one output per database,
    # needs far less.
    assert round(3.2e9 / 2**30, 2) == 2.98 and round(1e9 / 2**20) == 954
    monkeypatch.setattr(memory, "available_memory", lambda: 10**9)
    assert main(["audit", "--mechanism", "wide.py:wide", "--notion", "mi-dp", "--prior", "builtin:bernoulli", "--n",
                 "3", "--epsilon", "1", "--samples", "2000", "--quiet"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == ("miaudit audit: error: argument 'samples' (2000 audit samples): the mechanism's outputs "
                    "need 2.98 GiB of memory (2000 x 100000 float64 values, chunks and joined), but only "
                    f"954 MiB is available; lower {SAMPLES}")


@pytest.mark.parametrize("databases, what, budget", [(20000, "audit sample", "samples"),
                                                      (10**9, "event-test run", "event_runs"),
                                                      # The job's words say nothing of the budget that sizes it.
                                                      (10**9, "float-bit statistic run", "event_runs"),
                                                      (10**9, "domain pilot run", "samples")])
def test_the_output_memory_hint_names_the_budget_it_is_given(databases, what, budget):
    from audit.critic_cost import AUDIT_MEMORY_NAMES
    from mechanisms.execution.memory import check_output_memory

    named = {"samples": SAMPLES, "event_runs": EVENT_RUNS}[budget]
    with pytest.raises(InputError) as refused:
        check_output_memory(databases, 10**6, what, budget=budget, available=2**30, names=AUDIT_MEMORY_NAMES)
    assert str(refused.value).startswith(f"argument '{budget}' ({databases} {what}s): ")
    assert str(refused.value).endswith(f"; lower {named}")
    # Without names (a runner outside the audit), the flag alone.
    with pytest.raises(InputError) as flags:
        check_output_memory(databases, 10**6, what, budget=budget, available=2**30)
    assert str(flags.value).endswith("; lower --" + budget.replace("_", "-"))


def test_a_budget_the_names_leave_out_is_named_by_its_flag_from_the_one_rule():
    import inspect

    from audit import spec
    from mechanisms.execution.memory import check_output_memory

    names = {"samples": "the samples"}
    for budget, remedy in [("samples", "the samples"), ("event_runs", "--event-runs")]:
        with pytest.raises(InputError) as refused:
            check_output_memory(10**9, 10, "run", budget=budget, available=2**30, names=names)
        assert str(refused.value).endswith(f"; lower {remedy}")
    # The audit's names read the mechanism layer's flag rule rather than writing their own.
    assert 'replace("_", "-")' not in inspect.getsource(spec) and "replace('_', '-')" not in inspect.getsource(spec)
    assert spec.audit_argument("event_runs") == EVENT_RUNS


def test_a_job_of_a_fixed_size_names_the_mechanism():
    from mechanisms.execution.memory import check_output_memory

    # 64 runs of 10^7 outputs, chunks and joined: 2 x 64 x 10^7 x 8 bytes = 1.024e10 bytes, above 2^30.
    assert 2 * 64 * 10**7 * 8 > 2**30
    with pytest.raises(InputError) as refused:
        check_output_memory(64, 10**7, "float-bit probe run", budget=None, available=2**30)
    assert str(refused.value).startswith("argument 'mechanism' (64 float-bit probe runs, a fixed count): ")
    assert str(refused.value).endswith("; only a mechanism of fewer output values fits")


def test_the_float_bit_statistic_runs_spend_the_event_runs():
    from types import SimpleNamespace

    from audit.search.event_candidates import float_bit_candidates

    asked = []

    class Recording:
        def runs_of(self, database, count, rng, *, what, budget):
            asked.append((what, budget, count))
            return np.repeat(database[None], count, axis=0), np.zeros((count, 1))  # integers: no statistic fits

    pair = SimpleNamespace(first=np.zeros((3, 1)), second=np.ones((3, 1)), why="test pair")
    assert float_bit_candidates(pair, 0, Recording(), np.random.default_rng(0), 50) == ([], 100)
    assert asked == [("float-bit statistic run", "event_runs", 50)] * 2


def test_the_domain_pilot_refusal_names_the_samples_as_the_audit_does(monkeypatch):
    from audit.critic_cost import AUDIT_MEMORY_NAMES
    from audit.search.family_pilot import PILOT_RUNS, domain_pairs_by_pilot
    from audit.search.input_domain import domain_from_ranges
    from mechanisms.execution import memory

    def wide(dbs, rng):
        return np.repeat(dbs.sum(axis=(1, 2))[:, None], 10**4, axis=1)

    # 100 pilot runs of 10,000 outputs, chunks and joined: 2 x 100 x 10^4 x 8 bytes = 16,000,000 bytes = 15.3 MiB,
    # above 10^6 bytes = 977 KiB; the probe's one output (80 kB) fits.
    assert PILOT_RUNS == 100 and round(1.6e7 / 2**20, 1) == 15.3 and round(1e6 / 2**10) == 977
    monkeypatch.setattr(memory, "available_memory", lambda: 10**6)
    with pytest.raises(InputError) as refused:
        domain_pairs_by_pilot(wide, domain_from_ranges((0, 10), "--domain 0,10"), (3, 1), "replace-one", seed=0,
                              runs=100, alpha=0.05, memory_names=AUDIT_MEMORY_NAMES)
    assert str(refused.value).endswith(": argument 'samples' (100 domain pilot runs): the mechanism's outputs need "
                                       "15.3 MiB of memory (100 x 10000 float64 values, chunks and joined), but only "
                                       f"977 KiB is available; lower {SAMPLES}")


def test_a_draw_out_of_memory_names_the_samples_as_the_runners_user_sets_them(monkeypatch):
    from audit.critic_cost import AUDIT_MEMORY_NAMES
    from mechanisms.execution import runner as runner_module
    from mechanisms.execution.runner import MechanismRunner
    from mechanisms.inputs.priors import ProductBernoulli

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(runner_module, "draw_bounded", no_memory)
    prior, rng = ProductBernoulli(0.5, shape=(3, 1)), np.random.default_rng(0)
    for names, remedy in [(AUDIT_MEMORY_NAMES, SAMPLES), (None, "--samples")]:
        with MechanismRunner(lambda dbs, rng: dbs.sum(axis=(1, 2))[:, None], "sum", memory_names=names) as runner:
            with pytest.raises(InputError) as refused:
                runner.draw(prior, 100, rng)
        assert str(refused.value) == ("argument 'samples' (100): out of memory after drawing 0 B of databases; "
                                      f"lower {remedy}")
