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


def _flagged_data(tmp_path):
    """Data each classical estimator refuses after the CLI's own checks: collinear columns (Gaussian), continuous
    values (plug-in), a Z that determines X (the chain rule's I(X; Z) is infinite)."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal(200)
    arrays = {"collinear": np.column_stack([z, 2 * z]), "y": rng.standard_normal(200), "z": z, "twice_z": 2 * z}
    for name, values in arrays.items():
        np.save(tmp_path / f"{name}.npy", values)
    return arrays


# (flags given, the data under the names the CLI and estimate_mi take, the start of the message with each's names)
DATA_ERRORS = [
    (["--estimator", "gaussian"], dict(x="collinear", y="y"),
     "argument '--x': singular sample covariance", "argument 'x': singular sample covariance"),
    (["--estimator", "plugin"], dict(x="twice_z", y="y"),
     "arguments '--x' and '--y' take 200 distinct", "arguments 'x' and 'y' take 200 distinct"),
    (["--estimator", "plugin"], dict(x="twice_z", y="y", z="z"),
     "arguments '--x', '--y' and '--z' take 200 distinct", "arguments 'x', 'y' and 'z' take 200 distinct"),
    (["--estimator", "gaussian", "--conditional", "chain"], dict(x="twice_z", y="y", z="z"),
     "argument '--z' determines '--x' exactly", "argument 'z' determines 'x' exactly"),
]


@pytest.mark.parametrize("flags,data,cli_words,api_words", DATA_ERRORS)
def test_data_errors_name_the_flags_on_the_command_line_and_the_arguments_in_python(tmp_path, capsys, flags, data,
                                                                                     cli_words, api_words):
    from estimators.estimate import estimate_mi
    from estimators.validation import InputError

    arrays = _flagged_data(tmp_path)
    files = [item for key, name in data.items() for item in (f"--{key}", str(tmp_path / f"{name}.npy"))]
    assert main(["estimate", *files, *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"miaudit estimate: error: {cli_words}") and len(err.strip().splitlines()) == 1
    settings = {flags[i].lstrip("-"): flags[i + 1] for i in range(0, len(flags), 2)}
    with pytest.raises(InputError) as raised:
        estimate_mi(*(arrays[data[key]] for key in data), **settings)
    assert str(raised.value).startswith(api_words)


def test_the_critics_memory_check_names_slices_by_its_flag(tmp_path, capsys, monkeypatch):
    from estimators import memory
    from estimators.neural import CriticConfig

    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.standard_normal(10_000))
    np.save(tmp_path / "y.npy", rng.standard_normal(10_000))
    # 256 critics, one a slice, on one column of x and one of y: one byte short of what they need (their projections,
    # 256 × 10,000 × 2 float64 values, fit: the critics' count, estimate_mi's one check, refuses them).
    need = sum(memory.critic_config_memory(256, 10_000, 2, CriticConfig()).values())
    assert 256 * 10_000 * 2 * 8 < need - 1
    monkeypatch.setattr(memory, "available_memory", lambda: need - 1)
    assert main(["estimate", "--x", str(tmp_path / "x.npy"), "--y", str(tmp_path / "y.npy"), "--sliced",
                 "--slices", "256", "--device", "cpu"]) == 2
    assert capsys.readouterr().err.startswith("miaudit estimate: error: argument '--slices' (256): training 256 critic")


@pytest.mark.parametrize("names", [["x"], {"w": "--w"}, {"x": ""}, {"x": 1}])
def test_estimate_mi_refuses_names_it_cannot_use(names):
    from estimators.estimate import estimate_mi
    from estimators.validation import InputError

    with pytest.raises(InputError, match=r"^argument 'names' must be a dict from some of x, y, z, slices, slice_dim"):
        estimate_mi([0.0, 1.0, 2.0, 3.0], [1.0, 0.0, 3.0, 2.0], estimator="ksg", names=names)


def test_the_command_leaves_its_checks_to_estimate_mi(tmp_path, capsys, monkeypatch):
    """The samples' lengths and floor, the slice dimension and the projections' memory are checked once, by
    estimate_mi under the flags' names, not first by the command and again by estimate_mi."""
    import estimators.estimate
    import estimators.memory
    import estimators.slicing

    calls = []

    def counted(module, name):
        original = getattr(module, name)

        def call(*arguments, **options):
            calls.append(name)
            return original(*arguments, **options)
        monkeypatch.setattr(module, name, call)

    for module in (estimators.estimate, estimators.memory, estimators.slicing):
        for name in ("minimum_samples", "check_slice_dim", "check_projection_memory"):
            if hasattr(module, name):
                counted(module, name)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.standard_normal((300, 2)))
    np.save(tmp_path / "y.npy", rng.standard_normal((300, 2)))
    assert main(["estimate", "--x", str(tmp_path / "x.npy"), "--y", str(tmp_path / "y.npy"), "--estimator", "ksg",
                 "--sliced", "--slices", "3", "--json"]) == 0
    capsys.readouterr()
    assert sorted(calls) == ["check_projection_memory", "check_slice_dim", "minimum_samples"]
