"""``miaudit calibrate`` through the CLI entry point."""

import json
import math

import pytest

from audit.cli.main import main


def run_json(capsys, *argv):
    assert main(["calibrate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_gaussian_mi_dp_json(capsys):
    out = run_json(capsys, "gaussian", "--notion", "mi-dp", "--epsilon", "0.5", "--l2-sensitivity", "1",
                   "--dim", "3")
    assert set(["noise", "notion", "epsilon", "delta", "dim", "scale", "variance", "rule"]) <= set(out)
    assert out["noise"] == "gaussian" and out["notion"] == "mi-dp" and out["delta"] is None and out["dim"] == 3
    assert out["variance"] == pytest.approx(1 / (2 * 3 * (math.exp(1 / 3) - 1)))
    assert out["rule"].startswith("Corollary 3")


def test_laplace_dp_and_approx_json(capsys):
    assert run_json(capsys, "laplace", "--notion", "dp", "--epsilon", "2", "--l1-sensitivity", "3")["scale"] == 1.5
    out = run_json(capsys, "laplace", "--notion", "approx-dp", "--epsilon", "1", "--delta", "0.01",
                   "--l1-sensitivity", "1")
    assert out["scale"] == pytest.approx(1 / (1 - math.log(0.99)))
    assert out["delta"] == 0.01


def test_gaussian_analytic_flag(capsys):
    classical = run_json(capsys, "gaussian", "--notion", "approx-dp", "--epsilon", "0.5", "--delta", "1e-5",
                         "--l2-sensitivity", "1")
    analytic = run_json(capsys, "gaussian", "--notion", "approx-dp", "--epsilon", "0.5", "--delta", "1e-5",
                        "--l2-sensitivity", "1", "--analytic")
    assert classical["scale"] == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)
    assert analytic["scale"] < classical["scale"] and analytic["rule"].startswith("Balle-Wang")


def test_cond_var_list_and_broadcast(capsys):
    listed = run_json(capsys, "gaussian", "--notion", "mi-pp", "--epsilon", "1", "--cond-var", "0.5,0.5,0.5")
    broadcast = run_json(capsys, "gaussian", "--notion", "mi-pp", "--epsilon", "1", "--cond-var", "0.5",
                         "--dim", "3")
    assert listed["variance"] == pytest.approx(broadcast["variance"])
    assert listed["variance"] == pytest.approx(1.5 / (3 * (math.exp(2 / 3) - 1)))
    std = run_json(capsys, "laplace", "--notion", "mi-pp", "--epsilon", "1", "--cond-std", "0.2,0.4")
    assert std["scale"] == pytest.approx(0.6 / (2 * (math.exp(0.5) - 1)))


def test_projection_flags(capsys):
    out = run_json(capsys, "gaussian", "--notion", "mi-pp", "--epsilon", "0.5", "--projection-dim", "2",
                   "--op-norm", "0.1", "--dim", "10")
    assert out["dim"] == 2 and out["projection"] == "deterministic" and out["input_dim"] == 10
    assert out["variance"] == pytest.approx(0.1 / (math.exp(0.5) - 1))
    rnd = run_json(capsys, "gaussian", "--notion", "mi-pp", "--epsilon", "0.5", "--projection-dim", "2",
                   "--op-norm", "0.1", "--dim", "10", "--random-projection", "--mean-sq-norm", "0.3")
    assert rnd["variance"] == pytest.approx(0.4 / (math.exp(0.5) - 1))


def test_projection_text_states_the_unit_column_assumption(capsys):
    assert main(["calibrate", "gaussian", "--notion", "mi-pp", "--epsilon", "0.5", "--projection-dim", "2",
                 "--op-norm", "0.1"]) == 0
    assert "--max-column-norm" in capsys.readouterr().out


def test_text_output(capsys):
    assert main(["calibrate", "laplace", "--notion", "dp", "--epsilon", "1", "--l1-sensitivity", "1"]) == 0
    text = capsys.readouterr().out
    assert "b = 1" in text and "Remark 8" in text


@pytest.mark.parametrize("argv,flag", [
    (["laplace", "--notion", "approx-dp", "--epsilon", "1", "--l1-sensitivity", "1"], "--delta"),
    (["laplace", "--notion", "dp", "--epsilon", "1", "--l1-sensitivity", "1", "--delta", "0.1"], "--delta"),
    (["laplace", "--notion", "mi-dp", "--epsilon", "1", "--l1-sensitivity", "1", "--cond-var", "1"], "--cond-var"),
    (["gaussian", "--notion", "mi-pp", "--epsilon", "1", "--cond-var", "1,2", "--dim", "3"], "--cond-var"),
    (["gaussian", "--notion", "mi-pp", "--epsilon", "1", "--cond-var", "1,-2"], "--cond-var"),
    (["gaussian", "--notion", "mi-pp", "--epsilon", "1", "--cond-var", "a,b"], "--cond-var"),
    (["gaussian", "--notion", "mi-dp", "--epsilon", "0", "--l2-sensitivity", "1"], "--epsilon"),
    (["gaussian", "--notion", "approx-dp", "--epsilon", "1", "--delta", "1.5", "--l2-sensitivity", "1"], "--delta"),
    (["gaussian", "--notion", "dp", "--epsilon", "1", "--l2-sensitivity", "1"], "--notion"),
    (["gaussian", "--notion", "mi-pp", "--epsilon", "1", "--projection-dim", "2"], "--op-norm"),
    (["gaussian", "--notion", "mi-pp", "--epsilon", "1"], "--cond-var"),
    (["laplace", "--notion", "dp", "--epsilon", "1", "--l2-sensitivity", "1"], "--l2-sensitivity"),
])
def test_missing_or_contradictory_flags(capsys, argv, flag):
    assert main(["calibrate", *argv, "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"'{flag}'" in captured.err
