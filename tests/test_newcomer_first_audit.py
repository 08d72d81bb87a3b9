"""A newcomer's first audit of their own function: the mistakes of their first commands and calls get one line that
names the argument and says what to type (a device called gpu, a mistyped flag or function name, a claim's ε and δ
swapped, a claim given to AuditSpec as text, a NeighbouringPair given as a prior, a function that reads its database
as a DataFrame), and outputs are named as the user wrote them (a 0-d array is y, a Fraction beyond float64's range a
Fraction). Each expected line is written out here."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from audit.cli.main import main
from audit.spec import AuditSpec
from estimators.validation import InputError
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.adapters.loading import load_object
from mechanisms.base import check_batch_output
from mechanisms.claims.parsing import parse_claim
from mechanisms.errors import MechanismError
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.outputs.encoding import output_features
from mechanisms.outputs.limits import OutputNotEncodable, check_output_limits

_AUDIT = ["audit", "--mechanism", "catalog:laplace_sum", "--samples", "400"]


def _only_line(argv, capsys) -> str:
    """The one line a usage error prints (status 2, no usage block)."""
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "usage:" not in err, err
    return err.rstrip("\n")


@pytest.mark.parametrize("device,line", [
    ("gpu", "miaudit audit: error: [audit] device (--device) must be one of auto, cpu, cuda, got 'gpu'; for gpu type "
            "cuda: here --device cuda"),
    ("CPU", "miaudit audit: error: [audit] device (--device) must be one of auto, cpu, cuda, got 'CPU'; for CPU type "
            "cpu: here --device cpu"),
    ("tpu", "miaudit audit: error: [audit] device (--device) must be one of auto, cpu, cuda, got 'tpu'"),
])
def test_a_device_audit_does_not_know_is_one_line_naming_the_flag_and_its_choices(device, line, capsys):
    assert _only_line([*_AUDIT, "--device", device], capsys) == line


def test_the_device_flag_still_sets_the_audit_s_device():
    from audit.cli.audit_command import _flag_config
    from audit.cli.main import build_parser

    argv = [*_AUDIT, "--device", "cpu"]
    parser, _ = build_parser(argv)
    assert _flag_config(parser.parse_args(argv))["audit"]["device"] == "cpu"


@pytest.mark.parametrize("argv,line", [
    ([*_AUDIT[:3], "--samples", "ten"], "miaudit audit: error: argument --samples: invalid integer value: 'ten'"),
    (["estimate", "--device", "gpu"], "miaudit estimate: error: argument --device: invalid choice: 'gpu' (choose from "
                                      "'auto', 'cpu', 'cuda')"),
    (["audti"], "miaudit: error: argument COMMAND: invalid choice: 'audti' (choose from 'demo', 'estimate', 'audit', "
                "'calibrate', 'bounds', 'catalog', 'experiment', 'scan', 'one-run')"),
])
def test_a_usage_error_is_one_line_without_the_usage_block(argv, line, capsys):
    try:
        status = main(argv)
    except SystemExit as exit:
        status = exit.code
    err = capsys.readouterr().err
    assert status == 2 and err == line + "\n"


@pytest.mark.parametrize("typed,line", [
    (["--per-databse"], "miaudit audit: error: unrecognized argument '--per-databse': did you mean --per-database?"),
    (["--smaples", "10"], "miaudit audit: error: unrecognized argument '--smaples': did you mean --samples?"),
    (["--zzz"], "miaudit audit: error: unrecognized argument '--zzz': miaudit audit --help lists its flags"),
])
def test_an_unknown_flag_is_one_line_naming_the_closest_flag(typed, line, capsys):
    assert _only_line([*_AUDIT, *typed], capsys) == line


def test_a_mistyped_function_name_gets_the_spec_of_the_closest_function(tmp_path):
    (tmp_path / "mine.py").write_text("import numpy as np\n\n\ndef noisy_count(db, rng):\n    return 0.0\n\n\n"
                                      "def other(db, rng):\n    return 1.0\n")
    spec = f"{tmp_path}/mine.py"
    with pytest.raises(InputError) as typo:
        load_object(f"{spec}:noisy_cont", "--mechanism")
    assert str(typo.value) == (f"--mechanism '{spec}:noisy_cont': '{spec}' has no attribute 'noisy_cont'; did you mean "
                               f"'noisy_count'? here --mechanism {spec}:noisy_count")
    with pytest.raises(InputError) as unknown:  # no close name: the file's own functions (not numpy, which it imports)
        load_object(f"{spec}:zzz", "--mechanism")
    assert str(unknown.value) == (f"--mechanism '{spec}:zzz': '{spec}' has no attribute 'zzz'; it defines "
                                  "noisy_count, other")


def test_a_mistyped_configuration_key_names_the_closest_key(tmp_path, capsys):
    config = tmp_path / "audit.toml"
    config.write_text('[mechanism]\nspec = "catalog:laplace_sum"\n\n[audit]\nsample = 400\n')
    line = _only_line(["audit", str(config)], capsys)
    assert line.startswith("miaudit audit: error: unknown key 'sample' in [audit] (did you mean samples?); valid keys: "
                           "notion, epsilon, alpha, samples, ")


@pytest.mark.parametrize("prior", ["bernoulli", "Gaussian"])
def test_a_builtin_prior_without_its_prefix_says_the_spec_to_type(prior, capsys):
    line = _only_line(["audit", "--mechanism", "catalog:laplace_sum", "--prior", prior, "--n", "10"], capsys)
    assert line == (f"miaudit audit: error: [prior] spec (--prior) '{prior}' names a builtin prior without its "
                    f"prefix: here --prior builtin:{prior.lower()}")


@pytest.mark.parametrize("typed,line", [
    ("dp:1e-5:1", "argument '--claim': DELTA in dp:EPS:DELTA must be in [0, 1), got 'dp:1e-5:1'; EPS comes first, "
                  "then DELTA: here --claim dp:1:1e-5"),
    ("dp:1:2", "argument '--claim': DELTA in dp:EPS:DELTA must be in [0, 1), got 'dp:1:2'"),  # no order makes it one
])
def test_a_claim_with_delta_before_epsilon_says_the_order(typed, line):
    with pytest.raises(InputError) as error:
        parse_claim(typed)
    assert str(error.value) == line


def _count(db, rng):
    return float(db[:, 0].sum() + rng.laplace(0.0, 1.0))


_PAIR = NeighbouringPair(np.zeros((4, 1)), np.array([[1.0], [0.0], [0.0], [0.0]]))


def test_a_claim_given_to_audit_spec_as_text_says_to_parse_it():
    with pytest.raises(InputError) as error:
        AuditSpec(mechanism=PerDatabaseMechanism(_count), priors=[_PAIR.prior()], claim="dp:1")
    assert str(error.value) == ("argument 'claim' must be a Claim or a Guarantee, got the text 'dp:1': here "
                                "claim=parse_claim('dp:1') (from mechanisms import parse_claim)")


def test_a_neighbouring_pair_given_as_a_prior_says_to_give_its_prior():
    with pytest.raises(InputError) as error:
        AuditSpec(mechanism=PerDatabaseMechanism(_count), priors=[_PAIR], claim=parse_claim("dp:1"))
    assert str(error.value) == ("argument 'priors' must be a non-empty sequence of Prior objects, and a "
                                "NeighbouringPair is none: give its two-point prior, priors=[pair.prior()]")


def _by_column_name(db, rng):
    return float(db["age"].sum())


def _by_attribute(db, rng):
    return float(db.age.sum())


@pytest.mark.parametrize("function", [_by_column_name, _by_attribute])
def test_a_function_that_reads_a_dataframe_is_told_its_database_is_an_array(function):
    with pytest.raises(MechanismError) as error:
        PerDatabaseMechanism(function, name="f")(np.zeros((2, 5, 3)), np.random.default_rng(0))
    raised = "IndexError" if function is _by_column_name else "AttributeError"
    assert str(error.value).startswith(f"mechanism 'f' raised {raised} on database 0: ")
    assert str(error.value).endswith("; db is a NumPy array of shape (5, 3), one row per record and no column names, "
                                     "not a DataFrame: read a column by its position (db[:, 0] for the first)")


def test_a_function_that_raises_otherwise_gets_no_dataframe_words():
    def fails(db, rng):
        raise IndexError("list index out of range")

    with pytest.raises(MechanismError) as error:
        PerDatabaseMechanism(fails, name="f")(np.zeros((1, 5, 3)), np.random.default_rng(0))
    assert "DataFrame" not in str(error.value)


def test_a_zero_dimensional_array_is_named_y():
    assert output_features(np.array(3.0)) == {"y.ndim": 0.0, "y": 3.0}
    with pytest.raises(OutputNotEncodable) as error:
        check_output_limits(np.array(Fraction(1, 3), dtype=object))
    # 1/3 as float64 to 17 significant digits, from the float itself.
    assert str(error.value).startswith(f"the output is not encodable: y is a Fraction: 1/3 would be read as float64 "
                                       f"{1 / 3:.17g}, its last digits lost")
    with pytest.raises(OutputNotEncodable) as inner:
        check_output_limits({"k": np.array(Fraction(1, 3), dtype=object)})
    assert str(inner.value).startswith("the output is not encodable: y{'k'} is a Fraction: ")


@pytest.mark.parametrize("value,noun", [(Fraction(10**400, 3), "a Fraction"), (10**400, "an integer"),
                                        (-Fraction(10**400, 7), "a Fraction")])
def test_a_number_beyond_float64_s_range_in_a_batched_output_is_named_by_its_type(value, noun):
    with pytest.raises(MechanismError) as error:
        check_batch_output([[1.0], [value]], 2, "mechanism f")
    assert str(error.value) == f"mechanism f returned {noun} beyond float64's range of about 1.8e308 for database 1"
