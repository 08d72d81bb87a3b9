"""``miaudit estimate`` end to end through the CLI entry point."""

import json
import math

import numpy as np
import pytest

from audit.cli.main import main


@pytest.fixture
def gaussian_files(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(6000)
    y = 0.8 * x + 0.6 * rng.standard_normal(6000)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y[:, None])
    return tmp_path


def run_json(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    return json.loads(out)


@pytest.mark.train
def test_estimate_json_fields(gaussian_files, capsys):
    d = gaussian_files
    payload = run_json(capsys, ["estimate", "--x", str(d / "x.npy"), "--y", str(d / "y.npy"), "--json", "--quiet"])
    for field in ("estimator", "sliced", "slices", "value", "unit", "lower_bound", "confidence", "stderr", "n", "seconds"):
        assert field in payload
    truth = -0.5 * math.log(1 - 0.64)
    assert payload["unit"] == "nats" and payload["n"] == 6000 and payload["estimator"] == "dv"
    assert abs(payload["value"] - truth) < 0.06
    assert payload["lower_bound"] < truth and payload["confidence"] == pytest.approx(0.95)


def test_estimate_bits_and_sliced_gaussian(gaussian_files, capsys):
    d = gaussian_files
    payload = run_json(capsys, ["estimate", "--x", str(d / "x.npy"), "--y", str(d / "y.npy"), "--estimator", "gaussian",
                                "--sliced", "--slices", "4", "--bits", "--json"])
    truth_bits = -0.5 * math.log2(1 - 0.64)
    assert payload["unit"] == "bits" and payload["sliced"] and payload["slices"] == 4
    assert abs(payload["value"] - truth_bits) < 0.05  # 1-D slices of 1-D data are ± the data itself
    assert payload["lower_bound"] is None


def test_estimate_text_output(gaussian_files, capsys):
    d = gaussian_files
    assert main(["estimate", "--x", str(d / "x.npy"), "--y", str(d / "y.npy"), "--estimator", "ksg"]) == 0
    out = capsys.readouterr().out
    assert "I(X; Y) by ksg" in out and "no certificate" in out


@pytest.mark.parametrize("argv_tail,match", [
    (["--alpha", "1.5"], "'alpha'"),
    (["--slices", "0", "--sliced"], "'slices'"),
])
def test_estimate_bad_flags(gaussian_files, capsys, argv_tail, match):
    d = gaussian_files
    code = main(["estimate", "--x", str(d / "x.npy"), "--y", str(d / "y.npy"), *argv_tail])
    assert code == 2
    assert match.strip("'") in capsys.readouterr().err


def test_estimate_file_errors(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.arange(10.0))
    np.save(tmp_path / "short.npy", np.arange(9.0))
    np.save(tmp_path / "nan.npy", np.array([0.0] * 9 + [np.nan]))
    np.save(tmp_path / "empty.npy", np.zeros(0))
    cases = [("missing.npy", "no such file"), ("short.npy", "same number of samples"),
             ("nan.npy", "NaN or inf"), ("empty.npy", "at least")]
    for name, message in cases:
        code = main(["estimate", "--x", str(tmp_path / "x.npy"), "--y", str(tmp_path / name), "--estimator", "gaussian"])
        assert code == 2
        assert message in capsys.readouterr().err


def test_unknown_estimator_is_rejected_by_the_parser(tmp_path):
    with pytest.raises(SystemExit) as info:
        main(["estimate", "--x", "a.npy", "--y", "b.npy", "--estimator", "magic"])
    assert info.value.code == 2
