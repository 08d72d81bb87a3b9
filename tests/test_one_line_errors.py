"""Issue 32 C: causes of tracebacks, each now one line naming the argument (or the user code).

The CLI cases run in process (``main``), the Python API cases call the function. Each asserts the
exit status 2 (bad input) or 1 (failing user code), one line, and the name the user wrote.
"""

from __future__ import annotations

import os
import textwrap
import warnings

import numpy as np
import pytest

from audit.cli.main import main
from audit.config.building import build_spec
from audit.config.files import load_config
from audit.engine import run_audit
from audit.spec import AuditSpec
from estimators.array_files import load_npy_array
from estimators.validation import InputError
from mechanisms.catalog import get_entry
from mechanisms.claims.parsing import parse_claim
from mechanisms.errors import MechanismError, MechanismWarning
from mechanisms.execution.runner import ExecutionSettings
from mechanisms.calls.user_call import call_user_code

FAST = ["--prior", "builtin:bernoulli", "--n", "3", "--k", "1", "--notion", "mi-dp", "--epsilon", "1",
        "--samples", "400", "--slices", "0", "--set", "critic.max_steps=20", "--quiet"]

USER_CODE = textwrap.dedent("""
    import numpy as np

    calls = {"n": 0}


    def _noisy(dbs, rng, width):
        return rng.normal(size=(dbs.shape[0], width)) + dbs.sum(axis=(1, 2))[:, None]


    def alternating(dbs, rng):
        # the probe's two calls of one database already differ in width
        calls["n"] += 1
        return _noisy(dbs, rng, 1 + calls["n"] % 2)


    def wider_after_probe(dbs, rng):
        # width 1 for the probe's two calls, 2 from the MI sample on
        calls["n"] += 1
        return _noisy(dbs, rng, 1 if calls["n"] <= 2 else 2)


    def wider_for_small_batches(dbs, rng):
        # width 1 for the probe and the MI sample (batches of 256), 2 for a batch of < 64: the event runs' last chunk
        calls["n"] += 1
        return _noisy(dbs, rng, 2 if dbs.shape[0] < 64 and calls["n"] > 2 else 1)


    class Mine(BaseException):
        pass


    def own_base_exception(dbs, rng):
        raise Mine("stop")


    def generator_exit(dbs, rng):
        raise GeneratorExit()
""")


@pytest.fixture
def user_code(tmp_path):
    path = tmp_path / "user_code.py"
    path.write_text(USER_CODE)
    return path


def _status_and_line(argv, capsys):
    try:
        status = main(argv)
    except SystemExit as exit:
        status = exit.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("miaudit")]
    assert "Traceback" not in err and len(lines) == 1, err
    return status, lines[0]


@pytest.mark.parametrize("name,status,message", [
    ("alternating", 1, "returned outputs of shape (m, 2) and then (m, 1) for the same database"),
    ("own_base_exception", 1, "raised Mine on database 0: stop (a BaseException that is not an Exception"),
    ("generator_exit", 1, "raised GeneratorExit on database 0"),
])
def test_user_code_failures_at_the_probe_are_one_line(user_code, name, status, message, capsys):
    got, line = _status_and_line(["audit", "--mechanism", f"{user_code}:{name}", *FAST], capsys)
    assert got == status and message in line and f"{user_code}:{name}" in line


@pytest.mark.train
@pytest.mark.parametrize("name,where", [("wider_after_probe", "databases 0-255"),
                                        ("wider_for_small_batches", "but (m, 1) before")])
def test_output_width_changing_after_the_probe_is_one_line(user_code, name, where, capsys):
    status, line = _status_and_line(["audit", "--mechanism", f"{user_code}:{name}", *FAST], capsys)
    assert status == 1 and "returned outputs of shape (m, 2)" in line and where in line


@pytest.mark.integration
def test_output_width_changing_on_workers_is_one_line(user_code, capsys):
    status, line = _status_and_line(["audit", "--mechanism", f"{user_code}:wider_after_probe", *FAST,
                                     "--workers", "2"], capsys)
    assert status == 1 and "returned outputs of shape (m, 2)" in line


DEEP = "a = " + "[" * 2000 + "]" * 2000 + "\n"


@pytest.mark.parametrize("argv,message", [
    (["--mechanism", "catalog:laplace_sum", "--timeout", "1e300"], "timeout (--timeout) must be <= 1e+07"),
    (["--mechanism", "catalog:laplace_sum", "--workers", "99999999999999999999"], "'workers' must be at most 4096"),
    (["--mechanism", "catalog:laplace_sum?records=99999999999999999999"],
     "parameter 'records' of catalog:laplace_sum"),
    (["--mechanism", "catalog:dpsgd_s8_q1_t4?noise_multiplier=1e308"], "noise_multiplier=1e+308 cannot be used"),
    (["--mechanism", "catalog:bloom_rappor?hashes=5000"], "computed from the parameter(s) you set: hashes=5000"),
    (["--mechanism", "catalog:laplace_sum?epsilon=1e-320"], "computed from the parameter(s) you set: epsilon=1e-320"),
    (["--mechanism", "catalog:dpsgd_wrong_sampling_rate?accounted_sampling_rate=0"],
     "you set: accounted_sampling_rate=0"),
    (["--command", "/", *FAST], "argument 'command': '/' is a folder, not a program"),
    (["--set", f"audit.epsilon={'[' * 2000}"], "argument '--set'"),
])
def test_bad_input_is_one_line(argv, message, capsys):
    status, line = _status_and_line(["audit", *argv], capsys)
    assert status == 2 and message in line


def test_deeply_nested_configuration_is_one_line(tmp_path, capsys):
    config = tmp_path / "deep.toml"
    config.write_text(DEEP)
    status, line = _status_and_line(["audit", str(config)], capsys)
    assert status == 2 and "nests arrays or tables too deeply" in line and "deep.toml" in line


@pytest.mark.parametrize("call,message", [
    (lambda: run_audit(None), "argument 'spec' must be an AuditSpec"),
    (lambda: run_audit("x"), "argument 'spec' must be an AuditSpec"),
    (lambda: run_audit({"mechanism": "catalog:laplace_sum"}), "argument 'spec' must be an AuditSpec"),
    (lambda: AuditSpec(**_LAPLACE, records=0), "argument 'records' must be a sequence"),
    (lambda: AuditSpec(**_LAPLACE, pairs=None), "argument 'pairs' must be a list or tuple"),
    (lambda: AuditSpec(**_LAPLACE, critic={"bogus": 1}), "argument 'critic' has unknown key(s) bogus"),
    (lambda: AuditSpec(**_LAPLACE, critic=3), "argument 'critic' must be a CriticConfig"),
    (lambda: load_config(None), "argument 'CONFIG' must be the path"),
    (lambda: build_spec("x"), "argument 'config' must be a configuration table"),
    (lambda: load_npy_array(None, "--x"), "argument '--x' must be the path of a .npy file"),
    (lambda: ExecutionSettings(timeout=1e300), "argument 'timeout' must be at most"),
    (lambda: ExecutionSettings(workers=10**20), "argument 'workers' must be at most"),
])
def test_python_api_bad_input_is_an_input_error(call, message):
    with pytest.raises(InputError) as info:
        call()
    assert message in str(info.value)


_ENTRY = get_entry("laplace_sum")
_LAPLACE = dict(mechanism=_ENTRY.mechanism, priors=[_ENTRY.prior], claim=_ENTRY.claimed)


def test_a_critic_given_as_a_dict_is_read_by_field():
    assert AuditSpec(**_LAPLACE, critic={"max_steps": 10}).critic.max_steps == 10


@pytest.mark.parametrize("text", ["dp:800", "dp:800:1e-5", "ldp:800", "zcdp:800", "zcdp:1e308", "rdp:2:800",
                                  "rdp:2:1e308", "gdp:800", "gdp:1e308", "dp:1e308"])
def test_huge_claims_compute_without_overflow(text):
    claim = parse_claim(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy overflow warning, no OverflowError
        budget = claim.implied_mi_budget("mi-dp", 2).value
        claim.implied_mi_budget("mi-dp")
        margin = claim.event_margin(np.array([0.9, 0.5]), np.array([1e-6, 0.4]))
        check = claim.check_event(0.9, 1e-6)
        curve = claim.tradeoff(np.array([0.0, 0.1, 1.0]))
    # Such a claim constrains nothing an event can show: p̲ = 0.9 against p̄ = 1e-6 certifies only ε ≈ 13.7.
    assert budget > 0 and np.all(margin < 0) and not check.refuted and np.all(curve == 0)


def test_gdp_budget_of_a_huge_mu_is_infinite_not_an_error():
    # μ-GDP implies μ²/2 nats (Dong, Roth and Su 2022, Theorem 2.10): (1e308)²/2 is beyond float64.
    assert parse_claim("gdp:1e308").implied_mi_budget("mi-dp").value == float("inf")


def test_tiny_timeouts_end_as_a_timeout_or_a_result_never_escape():
    # The alarm fires at any point of the call, including between arming it and the try, or just as the call
    # returns: every outcome must be the result or a MechanismError, never the internal deadline.
    outcomes = set()
    for _ in range(3000):
        try:
            outcomes.add(call_user_code(lambda: "done", who="mechanism 'quick'", timeout=1e-6))
        except MechanismError as exc:
            assert "did not return within" in str(exc)
            outcomes.add("timeout")
    assert outcomes <= {"done", "timeout"}


def test_more_workers_than_cores_is_said():
    cores = os.cpu_count() or 1
    with pytest.warns(MechanismWarning, match=f"more than this machine's {cores} CPU cores"):
        ExecutionSettings(workers=cores + 1)
