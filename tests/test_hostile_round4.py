"""Robustness round four: user code that calls ``os._exit``, and integers beyond float64's range.

``os._exit`` ends a process at once, running no ``finally``: in the audit's own process (no workers) an audit of a
mechanism calling it ended with the mechanism's status and not a word. While user code runs, its ``os._exit`` is one
error naming it (:mod:`mechanisms.calls.user_call`); miaudit's own ``os._exit`` (a worker's SIGTERM handler) and a
process the user code forks still end. Python ints such as ``10**400`` made NumPy raise ``OverflowError``, which
reached the user as a traceback; each is one error naming the data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from audit.cli.main import main
from estimators.estimate import estimate_mi
from estimators.validation import InputError
from mechanisms.base import check_batch_output, sample_mechanism
from mechanisms.calls.user_call import call_user_code
from mechanisms.errors import MechanismError
from mechanisms.inputs.user_priors import UserPrior

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _exits(status):
    os._exit(status)


def test_os_exit_in_user_code_is_an_error_naming_it_and_os_exit_is_restored():
    real = os._exit
    with pytest.raises(MechanismError, match=r"^mechanism 'quits' called os._exit\(7\) on database 0; user code"):
        call_user_code(_exits, (7,), who="mechanism 'quits'", where=" on database 0")
    with pytest.raises(MechanismError, match=r"called os._exit\(7\)"):
        call_user_code(_exits, (7,), who="mechanism 'quits'", timeout=30.0)  # the bounded path too
    assert os._exit is real


def test_os_exit_in_a_process_the_user_code_forks_still_ends_that_process():
    def forks():
        child = os.fork()
        if child == 0:
            os._exit(5)  # the child's own exit, as multiprocessing's forked children end
        return os.waitpid(child, 0)[1]

    status = call_user_code(forks, who="mechanism 'forks'")
    assert os.waitstatus_to_exitcode(status) == 5


def _python(code: str, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


@pytest.mark.integration
def test_miaudits_own_os_exit_during_user_code_still_ends_the_process(tmp_path):
    # A worker's SIGTERM handler (mechanisms.execution.worker._stop) runs on the thread running the user code.
    done = _python("""
        from mechanisms.calls.user_call import call_user_code
        from mechanisms.execution.worker import _stop
        call_user_code(_stop, (), who="mechanism 'm'")
        print("not ended")
    """, tmp_path)
    assert done.returncode == 1 and "not ended" not in done.stdout


@pytest.mark.integration
@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_cli_audit_of_a_mechanism_calling_os_exit_is_one_line_naming_it(workers, tmp_path):
    (tmp_path / "quits.py").write_text("import os\ndef mech(dbs, rng):\n    os._exit(3)\n")
    done = subprocess.run([sys.executable, "-m", "audit.cli.main", "audit", "--mechanism", "quits.py:mech",
                           "--prior", "builtin:bernoulli", "--n", "3", "--k", "1", "--claim", "dp:1", "--samples",
                           "400", "--max-runs", "20000", "--quiet", *workers], capture_output=True, text=True,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "miaudit audit: error: mechanism 'quits.py:mech' called os._exit(3) on database 0; user code must return "
        "its output or raise an exception"]


HUGE = 10 ** 400


@pytest.mark.parametrize("values", [[[HUGE]], np.array([[HUGE]], dtype=object)])
def test_a_mechanism_output_beyond_float64_is_one_error_naming_it(values):
    assert float(np.finfo(np.float64).max) < HUGE  # why it cannot be converted
    with pytest.raises(MechanismError, match=r"^mechanism 'f' returned an integer beyond float64's range"):
        check_batch_output(values, 1, "mechanism 'f'")


def test_a_prior_draw_beyond_float64_is_one_error_naming_it():
    with pytest.raises(MechanismError, match=r"^prior 'huge' returned an integer beyond float64's range"):
        UserPrior(lambda m, rng: [[[HUGE]]] * m, label="huge")


@pytest.mark.parametrize("x", [[HUGE] * 20, np.array([HUGE] * 20, dtype=object)])
def test_estimate_mi_data_beyond_float64_is_one_error_naming_the_argument(x):
    with pytest.raises(InputError, match=r"^argument 'x' holds an integer beyond float64's range"):
        estimate_mi(x, np.arange(20.0), estimator="ksg")


AUDIT = ["audit", "--mechanism", "catalog:laplace_sum", "--prior", "builtin:bernoulli", "--n", "3", "--k", "1"]


@pytest.mark.parametrize("flag, value", [("--excess", "0.5"), ("--pilot-runs", "100")])
def test_a_plan_flag_without_plan_is_one_error_naming_it(flag, value, capsys):
    # Read by --plan alone: an audit ran and ignored it.
    assert main([*AUDIT, flag, value]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"miaudit audit: error: argument '{flag}' applies to --plan only (a plan's pilot); add --plan, or drop {flag}"]


@pytest.mark.parametrize("flag, example", [("--command", '"PROGRAM ARGS"'), ("--mechanism", '"FILE.py:NAME"'),
                                           ("--statistic", '"FILE.py:FN"')])
def test_an_empty_spec_error_shows_the_keys_own_form(flag, example, capsys):
    # --command "" said: must be a non-empty string such as "FILE.py:NAME", the form of another key.
    argv = [*AUDIT, flag, " "] if flag == "--statistic" else [AUDIT[0], *AUDIT[3:], flag, " "]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(f"must be a non-empty string such as {example}")


@pytest.mark.parametrize("flag, value", [("--canaries", "50"), ("--steps", "3"), ("--canary", "input"),
                                         ("--accountant", "pld")])
def test_a_built_in_run_flag_with_your_scores_is_one_error_naming_it(flag, value, tmp_path, capsys):
    # They shape the built-in training run alone: with --scores and --included the audit ran and ignored them.
    rng = np.random.default_rng(0)
    np.save(tmp_path / "s.npy", rng.normal(size=100))
    np.save(tmp_path / "c.npy", rng.random(100) < 0.5)
    argv = ["one-run", "--scores", str(tmp_path / "s.npy"), "--included", str(tmp_path / "c.npy")]
    assert main([*argv, flag, value]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"miaudit one-run: error: argument '{flag}' applies to the built-in run only, not to --scores and "
        f"--included: drop {flag}"]
    assert main([*argv, "--epsilon", "1", "--json"]) == 0  # the claimed ε applies to both
    assert json.loads(capsys.readouterr().out)["canaries"] == 100


@pytest.mark.parametrize("value, says", [("0", "must be > 0, got 0.0"), ("-1", "must be > 0, got -1.0"),
                                         ("nan", "must be finite, got nan")])
def test_a_bad_time_limit_names_its_flag_before_any_work(value, says, capsys):
    # It was "argument 'time_limit' must be > 0", the Python name, after the mechanism's probe.
    assert main([*AUDIT, "--max-runs", "20000", "--time-limit", value]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"miaudit audit: error: argument '--time-limit' {says}"]


def test_a_slice_dim_above_every_variables_dimension_is_refused_not_clipped(tmp_path, capsys):
    # Each variable of fewer dimensions is projected whole: slice_dim 10**9 on 1-D x and y ran as slice_dim 1.
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(200, 1)), rng.normal(size=(200, 3))
    with pytest.raises(InputError, match=r"^argument 'slice_dim' \(4\) is larger than every variable's dimension "
                                         r"\(x 1, y 3\): give at most 3"):
        estimate_mi(x, y, estimator="ksg", sliced=True, slices=2, slice_dim=4)
    assert estimate_mi(x, y, estimator="ksg", sliced=True, slices=2, slice_dim=3).slices == 2  # x whole, y in 3
    np.save(tmp_path / "x.npy", x[:, 0])
    np.save(tmp_path / "y.npy", x[:, 0])
    assert main(["estimate", "--x", str(tmp_path / "x.npy"), "--y", str(tmp_path / "y.npy"), "--estimator", "ksg",
                 "--sliced", "--slice-dim", "1000000000"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "miaudit estimate: error: argument '--slice-dim' (1000000000) is larger than every variable's dimension "
        "(--x 1, --y 1): give at most 1 (a variable of fewer dimensions is projected whole)"]


def test_buggy_with_the_name_of_a_correct_entry_is_an_error_not_an_empty_table(capsys):
    assert main(["catalog", "--name", "laplace_sum", "--buggy"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "miaudit catalog: error: argument '--buggy': catalog mechanism 'laplace_sum' is a correct one; drop --buggy"]
    assert main(["catalog", "--name", "histogram_buggy", "--buggy", "--json"]) == 0
    assert [e["name"] for e in json.loads(capsys.readouterr().out)["mechanisms"]] == ["histogram_buggy"]


def test_a_set_key_given_twice_or_also_by_its_flag_is_one_error(capsys):
    # The later value silently won: --samples 500 --set audit.samples=600 audited 600 samples.
    assert main([*AUDIT, "--samples", "500", "--set", "audit.samples=600"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "miaudit audit: error: argument '--set' 'audit.samples=600': [audit] samples is also given by --samples; "
        "give it once"]
    assert main([*AUDIT, "--set", "audit.samples=600", "--set", "audit.samples = 700"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "miaudit audit: error: argument '--set' gives audit.samples more than once ('audit.samples=600', then "
        "'audit.samples = 700'); give it once"]


def test_set_still_overrides_a_configuration_files_value(tmp_path):
    from audit.config.files import apply_overrides

    config = {"audit": {"samples": 400}}
    assert apply_overrides(config, ["audit.samples=600", "audit.alpha=0.1"]) == {
        "audit": {"samples": 600, "alpha": 0.1}}


@pytest.mark.integration
def test_scan_in_process_of_an_entry_point_calling_os_exit_skips_its_case_and_writes_the_report(tmp_path):
    # In the scan's own process (--in-process) the call ended the scan with status 3, no report and no word.
    (tmp_path / "exiter.py").write_text("import os\ndef noisy_count(array, epsilon=1.0, random_state=None):\n"
                                        "    os._exit(3)\n")
    done = subprocess.run([sys.executable, "-m", "audit.cli.main", "scan", "exiter.py", "--in-process", "--max-runs",
                           "2000", "--epsilons", "1", "--out", "out", "--json"], capture_output=True, text=True,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert done.returncode == 0, done.stderr
    (skipped,) = json.loads((tmp_path / "out" / "scan.json").read_text(encoding="utf-8"))["skipped"]
    assert "exiter.noisy_count called os._exit(3)" in skipped["reason"]


def test_an_exception_without_a_message_is_named_without_an_empty_colon():
    def runs_out(dbs, rng):
        raise MemoryError

    with pytest.raises(MechanismError) as error:
        sample_mechanism(runs_out, np.zeros((1, 3, 1)), np.random.default_rng(0), name="m")
    assert str(error.value).startswith("mechanism 'm' raised MemoryError on database 0 (at test_hostile_round4.py line")
