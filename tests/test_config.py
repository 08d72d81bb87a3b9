"""The audit configuration schema: every value type-checked, nothing silently ignored (issue 12)."""

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from audit.cli.main import main
from audit.config.keys import KEYS
from audit.config.building import build_spec
from audit.config.files import apply_overrides, load_config
from estimators.validation import InputWarning, plain_toml
from audit.search.prior_search import MAX_PRIOR_SEARCH, random_pairs, search_priors
from estimators.validation import InputError
from mechanisms.base import MechanismError
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.inputs.priors import Categorical, ProductBernoulli
from mechanisms.inputs.user_priors import UserPrior

FIXTURE = Path(__file__).parent / "fixtures" / "config_user_code.py"
FAST = ["--set", "critic.max_steps=300"]


def code(name: str) -> str:
    return f"{FIXTURE}:{name}"


def mi_pp_config(**secret) -> dict:
    """Pure noise audited for MI-PP of the first record given the (dependent) total."""
    return {"mechanism": {"spec": code("pure_noise")},
            "prior": {"spec": code("gaussian_rows")},
            "audit": {"notion": "mi-pp", "epsilon": 0.1},
            "secret": {"g": code("first_record"), "w": code("total"), **secret}}


def dp_config(**prior) -> dict:
    return {"mechanism": {"spec": code("pure_noise")},
            "prior": {"spec": "builtin:bernoulli", "n": 3, **prior},
            "audit": {"notion": "mi-dp", "epsilon": 0.1}}


def error_of(config) -> str:
    with pytest.raises(InputError) as info:
        build_spec(config)
    return str(info.value)


def cli_error(capsys, argv, status_expected=2) -> str:
    status = main(["audit", *argv])
    err = capsys.readouterr().err
    assert status == status_expected, err
    assert err.count("\n") == 1 and "Traceback" not in err  # one line
    return err


# ----------------------------------------------------------------- A1: strict booleans


def write_config(tmp_path, text: str) -> Path:
    path = tmp_path / "audit.toml"
    path.write_text(text)
    return path


MI_PP_TOML = f"""
[mechanism]
spec = "{code('pure_noise')}"
[prior]
spec = "{code('gaussian_rows')}"
[audit]
notion = "mi-pp"
epsilon = 0.1
samples = 2000
slices = 0
[secret]
g = "{code('first_record')}"
w = "{code('total')}"
"""


def test_string_false_no_longer_certifies_a_violation_of_pure_noise(tmp_path, capsys):
    # The reported failure: independent = "false" was read with bool(), i.e. True, so the engine
    # certified I(g; M, w) >= I(g; w) > 0 as leakage of a mechanism that ignores its input.
    path = write_config(tmp_path, MI_PP_TOML + 'independent = "false"\n')
    err = cli_error(capsys, [str(path), *FAST])
    assert "[secret] independent must be true or false" in err and "'false'" in err
    err = cli_error(capsys, [str(path), "--set", "secret.independent=False", *FAST])
    assert "[secret] independent" in err


@pytest.mark.train
def test_a_real_false_audits_pure_noise_without_a_certified_violation(tmp_path, capsys):
    path = write_config(tmp_path, MI_PP_TOML + "independent = false\n")
    status = main(["audit", str(path), "--json", "--quiet", *FAST])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    payload = json.loads(captured.out)
    # g and w are dependent and w is continuous: nothing can be certified, and the warning says why.
    assert payload["lower_bound"] is None
    assert "no certificate is possible" in captured.err and "independent = true" in captured.err


@pytest.mark.filterwarnings("ignore::estimators.validation.InputWarning")
def test_set_accepts_exactly_true_and_false():
    config = apply_overrides(mi_pp_config(), ["secret.independent=false", "audit.samples=2000"])
    assert config["secret"]["independent"] is False
    spec = build_spec(config)
    assert spec.framework.edges[0].independence == "unknown"
    spec = build_spec(apply_overrides(mi_pp_config(), ["secret.independent=true"]))
    assert spec.framework.edges[0].independence == "always"


BOOLEAN_KEYS = [(key.table, key.name) for key in KEYS if key.kind == "bool"]


def test_every_boolean_key_is_covered():
    assert set(BOOLEAN_KEYS) == {("prior", "independent_rows"), ("prior", "independent_columns"),
                                 ("prior", "discrete"), ("secret", "independent"), ("secret", "w_discrete"),
                                 ("mechanism", "per_database"), ("audit", "allow_nan")}


@pytest.mark.parametrize("table,name", BOOLEAN_KEYS)
@pytest.mark.parametrize("value", ["false", "False", 0, 1, 0.0])
def test_boolean_keys_refuse_anything_but_a_boolean(table, name, value):
    config = mi_pp_config() if table == "secret" else dp_config()
    if table == "prior":
        config["prior"] = {"spec": code("gaussian_rows")}
    config[table][name] = value
    message = error_of(config)
    assert f"[{table}] {name}" in message and "must be true or false" in message


@pytest.mark.parametrize("table,name,value,expected", [
    ("audit", "epsilon", "0.2", "must be a number"),
    ("audit", "epsilon", True, "must be a number"),
    ("audit", "alpha", "0.05", "must be a number"),
    ("audit", "samples", 2000.0, "must be an integer"),
    ("audit", "samples", True, "must be an integer"),
    ("audit", "slices", "4", "must be an integer"),
    ("audit", "notion", 1, "must be a string"),
    ("audit", "notion", "renyi", "must be one of mi-dp, smi-dp, mi-pp"),
    ("audit", "estimator", "ksg", "must be one of dv, mine, nwj"),
    ("audit", "epsilon", math.nan, "must be finite"),
    ("audit", "records", [0.5], "record indices"),
    ("audit", "records", "first", "record indices"),
    ("prior", "n", 2.5, "must be an integer"),
    ("prior", "p", "0.5", "must be a number"),
    ("mechanism", "name", 3, "must be a string"),
    ("critic", "max_steps", "300", "must be an integer"),
    ("critic", "learning_rate", True, "must be a number"),
    ("critic", "output_range", ["a", "b"], "must be an array of numbers"),
    ("critic", "output_range", [1.0], "must hold 2 numbers"),
    ("critic", "split", 0.5, "must be an array of numbers"),
    ("audit", "records", [0, 0], "more than once"),
])
def test_every_value_is_type_checked_naming_the_key(table, name, value, expected):
    config = dp_config()
    config.setdefault(table, {})[name] = value
    message = error_of(config)
    assert f"[{table}] {name}" in message and expected in message


def test_smi_dp_without_slices_names_the_flag():
    config = dp_config()
    config["audit"].update(notion="smi-dp", slices=0)
    assert "[audit] slices (--slices) must be >= 1 for notion smi-dp" in error_of(config)


def test_the_internal_base_dir_cannot_be_set():
    with pytest.raises(InputError, match="_base_dir"):
        apply_overrides(dp_config(), ["_base_dir=/etc"])


def test_databases_too_large_for_memory_name_n_and_k(capsys):
    err = cli_error(capsys, ["--mechanism", code("pure_noise"), "--prior", "builtin:bernoulli", "--n", "100000000",
                             "--k", "1000000", "--notion", "mi-dp", "--epsilon", "0.1"])
    assert "[prior] n and k (--n, --k)" in err and "memory" in err


def test_flag_values_are_named_with_their_flag(capsys):
    err = cli_error(capsys, ["--mechanism", code("pure_noise"), "--prior", "builtin:bernoulli", "--notion", "mi-dp",
                             "--epsilon", "0.1", "--samples", "0"])
    assert "[audit] samples (--samples) must be >= 1" in err


# ----------------------------------------------------------------- A7: prior parameters


@pytest.mark.parametrize("flags,expected", [
    (["--prior", "builtin:gaussian", "--std", "-1"], "[prior] std (--std) must be > 0"),
    (["--prior", "builtin:gaussian", "--std", "0"], "[prior] std (--std) must be > 0"),
    (["--prior", "builtin:gaussian", "--mean", "inf"], "[prior] mean (--mean) must be finite"),
    (["--prior", "builtin:bernoulli", "--p", "1.5"], "[prior] p (--p) must be <= 1"),
    (["--prior", "builtin:bernoulli", "--p", "-0.1"], "[prior] p (--p) must be >= 0"),
    (["--prior", "builtin:uniform", "--low", "1", "--high", "1"], "low < high"),
    (["--prior", "builtin:uniform", "--low", "2", "--high", "1"], "(--low, --high)"),
    (["--prior", "builtin:bernoulli", "--n", "0"], "[prior] n (--n) must be >= 1"),
    (["--prior", "builtin:bernoulli", "--k", "0"], "[prior] k (--k) must be >= 1"),
])
def test_bad_prior_parameters_are_refused_naming_the_flag(flags, expected, capsys):
    err = cli_error(capsys, ["--mechanism", code("pure_noise"), *flags, "--notion", "mi-dp", "--epsilon", "0.1"])
    assert expected in err


def test_non_integer_records_in_a_configuration_file(tmp_path, capsys):
    path = write_config(tmp_path, f"""
[mechanism]
spec = "{code('pure_noise')}"
[prior]
spec = "builtin:bernoulli"
n = 2.5
[audit]
notion = "mi-dp"
epsilon = 0.1
""")
    assert "[prior] n (--n) must be an integer, got a number 2.5" in cli_error(capsys, [str(path)])


# ----------------------------------------------------------------- A8: nothing silently ignored


def test_set_without_a_table_is_an_error_pointing_at_the_table(capsys):
    err = cli_error(capsys, ["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "0.1",
                             "--set", "epsilon=0.2"])
    assert "unknown configuration entry 'epsilon'" in err and "--set audit.epsilon=" in err


@pytest.mark.parametrize("table", ["prior", "mechanism", "audit", "secret", "claim", "critic"])
def test_unknown_keys_are_errors_listing_the_valid_ones(table):
    config = mi_pp_config() if table == "secret" else dp_config()
    config.setdefault(table, {})["bogus"] = 1
    message = error_of(config)
    assert f"unknown key 'bogus' in [{table}]" in message and "valid keys:" in message


def test_unknown_critic_key_lists_the_valid_keys_not_a_python_error():
    config = dp_config()
    config["critic"] = {"max_step": 300}
    message = error_of(config)
    assert "max_steps" in message and "__init__" not in message


def test_unknown_top_level_table_is_an_error():
    config = dp_config()
    config["auditt"] = {"epsilon": 0.1}
    assert "unknown configuration entry 'auditt'" in error_of(config)


def test_unknown_key_in_pairs_is_an_error():
    config = dp_config()
    config["pairs"] = [{"first": [[0.0]] * 3, "second": [[1.0]] + [[0.0]] * 2, "third": 1}]
    assert "unknown key 'third' in [[pairs]] entry 1" in error_of(config)


@pytest.mark.parametrize("flags,expected", [
    (["--prior", "builtin:bernoulli", "--notion", "mi-dp", "--secret", code("first_record")],
     "[secret] g (--secret) applies to notion mi-pp only; this audit's notion is mi-dp"),
    (["--prior", "builtin:bernoulli", "--std", "2", "--notion", "mi-dp"],
     "[prior] std (--std) applies to builtin:gaussian only; this prior is builtin:bernoulli"),
    (["--prior", "builtin:gaussian", "--p", "0.3", "--notion", "mi-dp"], "applies to builtin:bernoulli only"),
    (["--prior", "builtin:bernoulli", "--independent-rows", "--notion", "mi-dp"],
     "[prior] independent_rows (--independent-rows) applies to a FILE.py prior"),
    (["--prior", code("gaussian_rows"), "--n", "3", "--notion", "mi-dp"], "[prior] n (--n) applies to builtin:"),
    (["--prior", code("gaussian_rows"), "--notion", "mi-pp", "--secret", code("first_record"), "--event-runs", "10"],
     "[audit] event_runs (--event-runs) applies to notions mi-dp, smi-dp only"),
    (["--prior", code("gaussian_rows"), "--notion", "mi-pp", "--secret", code("first_record"), "--records", "0"],
     "[audit] records (--records)"),
    (["--prior", code("gaussian_rows"), "--notion", "mi-pp", "--secret", code("first_record"), "--prior-search", "2"],
     "[audit] prior_search (--prior-search)"),
    (["--prior", code("gaussian_rows"), "--notion", "mi-pp", "--secret", code("first_record"), "--delta", "0.1"],
     "[audit] delta (--delta)"),
])
def test_flags_that_do_not_apply_are_errors(flags, expected, capsys):
    err = cli_error(capsys, ["--mechanism", code("pure_noise"), *flags, "--epsilon", "0.1"])
    assert expected in err


def test_builtin_parameters_with_a_catalog_mechanisms_own_prior_are_errors(capsys):
    err = cli_error(capsys, ["--mechanism", "catalog:laplace_mean", "--n", "3", "--notion", "mi-dp",
                             "--epsilon", "0.1"])
    assert "[prior] n (--n)" in err and "catalog prior" in err


def test_structure_flags_on_a_prior_object_are_errors():
    config = dp_config()
    config["prior"] = {"spec": code("PRIOR_OBJECT"), "independent_rows": True}
    assert "declares its own structure" in error_of(config)


def test_pairs_with_mi_pp_are_errors():
    config = mi_pp_config()
    config["pairs"] = [{"first": [[0.0]] * 4, "second": [[1.0]] + [[0.0]] * 3}]
    assert "[[pairs]] entry 1 first applies to notions mi-dp, smi-dp only" in error_of(config)


def test_prior_and_priors_together_are_an_error():
    config = dp_config()
    config["priors"] = [{"spec": "builtin:bernoulli"}]
    assert "not both" in error_of(config)


def test_secret_options_without_a_public_part_are_errors():
    config = mi_pp_config(independent=True)
    del config["secret"]["w"]
    assert "--public" in error_of(config)


# ----------------------------------------------------------------- C: one line instead of a traceback


def test_public_without_secret_names_secret(capsys):
    err = cli_error(capsys, ["--mechanism", code("pure_noise"), "--prior", code("gaussian_rows"), "--notion", "mi-pp",
                             "--epsilon", "0.1", "--public", code("total")])
    assert "--secret" in err and "--public" in err


def test_mi_pp_without_a_secret_names_the_flag_not_framework(capsys):
    err = cli_error(capsys, ["--mechanism", code("pure_noise"), "--prior", code("gaussian_rows"), "--notion", "mi-pp",
                             "--epsilon", "0.1"])
    assert "--secret" in err and "[secret] g" in err and "framework" not in err


def test_secret_that_is_not_a_string():
    config = mi_pp_config()
    config["secret"]["g"] = 5
    assert "[secret] g (--secret) must be a string, got an integer 5" in error_of(config)


@pytest.mark.parametrize("seed,expected", [("-1", "must be >= 0"), ("1.5", "must be an integer"),
                                           ('"7"', "must be an integer")])
def test_bad_seeds_are_refused(seed, expected, capsys):
    err = cli_error(capsys, ["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "0.1",
                             "--set", f"audit.seed={seed}"])
    assert "[audit] seed (--seed)" in err and expected in err


def test_negative_seed_flag_is_refused(capsys):
    err = cli_error(capsys, ["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "0.1",
                             "--seed", "-3"])
    assert "[audit] seed (--seed) must be >= 0" in err


def test_claim_epsilon_must_be_a_number():
    config = dp_config()
    config["claim"] = {"notion": "dp", "epsilon": "x"}
    assert "[claim] epsilon must be a number" in error_of(config)
    config["claim"] = {"notion": "nope", "epsilon": 1.0}
    assert error_of(config).startswith("[claim] (--claim)")


def test_config_path_that_is_a_folder_or_not_utf8(tmp_path, capsys):
    assert "is a folder" in cli_error(capsys, [str(tmp_path)])
    binary = tmp_path / "latin1.toml"
    binary.write_bytes("[mechanism]\nname = \"caf\xe9\"\n".encode("latin-1"))
    assert "not UTF-8" in cli_error(capsys, [str(binary)])
    with pytest.raises(InputError, match="not UTF-8"):
        load_config(binary)


@pytest.mark.parametrize("name,expected", [("raising_prior", "raised RuntimeError"),
                                           ("text_prior", "non-numeric"), ("complex_prior", "complex numbers"),
                                           ("exiting_prior", "called sys.exit(3)")])
def test_a_failing_prior_function_is_named(name, expected):
    config = dp_config()
    config["prior"] = {"spec": code(name)}
    with pytest.raises(MechanismError) as info:
        build_spec(config)
    assert f"prior '{code(name)}'" in str(info.value) and expected in str(info.value)


@pytest.mark.parametrize("name,expected", [("raising_secret", "raised KeyError"),
                                           ("text_secret", "non-numeric"), ("complex_secret", "complex numbers")])
def test_a_failing_secret_function_is_named_before_the_audit_runs(name, expected, capsys):
    err = cli_error(capsys, ["--mechanism", code("pure_noise"), "--prior", code("gaussian_rows"), "--notion", "mi-pp",
                             "--epsilon", "0.1", "--secret", code(name)], status_expected=1)  # a failing user function
    assert f"secret function 'g = {code(name)}'" in err and expected in err


def test_user_prior_refuses_string_structure_flags():
    with pytest.raises(InputError, match="independent_rows"):
        UserPrior(lambda m, rng: np.zeros((m, 2, 1)), independent_rows="false")


# ----------------------------------------------------------------- D: messages that point the right way


def test_dp_audit_of_an_undeclared_sampler_says_to_declare_independent_rows():
    config = dp_config()
    config["prior"] = {"spec": code("gaussian_rows")}
    with pytest.warns(InputWarning, match="--independent-rows"):
        build_spec(config)
    config["prior"]["independent_rows"] = True
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        build_spec(config)


def test_plain_shows_numbers_without_numpy_reprs():
    assert plain_toml(np.float64(0.5)) == "0.5" and plain_toml(np.int64(3)) == "3" and plain_toml([np.float64(1.0)]) == "[1]"
    config = dp_config()
    config["audit"]["records"] = [7]
    message = error_of(config)
    assert "[0, 3)" in message and "np." not in message


# ----------------------------------------------------------------- E: prior search


def test_prior_search_stops_at_the_distinct_pairs_a_discrete_prior_has():
    # Independent count: one base database, each of the n records switched between two of its C
    # values gives n * C(C, 2) distinct uniform two-point priors.
    for prior, values in ((ProductBernoulli(0.5, shape=(4, 1)), 2),
                          (Categorical(np.full((2, 1, 3), 1 / 3)), 3)):
        with pytest.warns(InputWarning, match="distinct"):
            pairs = random_pairs(prior, 100, np.random.default_rng(0))
        assert len(pairs) == prior.n * math.comb(values, 2)
        identities = {frozenset((p.first.tobytes(), p.second.tobytes())) for p in pairs}
        assert len(identities) == len(pairs)


def test_search_priors_counts_a_pair_and_its_swap_once():
    first, second = np.zeros((2, 1)), np.array([[1.0], [0.0]])
    pairs = [NeighbouringPair(first, second), NeighbouringPair(second, first), NeighbouringPair(first, second)]
    assert len(search_priors(pairs)) == 1


def test_prior_search_above_the_cap_is_refused(capsys):
    err = cli_error(capsys, ["--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", "0.1",
                             "--prior-search", "1000000"])
    assert f"[audit] prior_search (--prior-search) must be <= {MAX_PRIOR_SEARCH}" in err


@pytest.mark.train
def test_prior_search_audits_only_the_distinct_priors(capsys):
    status = main(["audit", "--mechanism", code("pure_noise"), "--prior", "builtin:bernoulli", "--n", "4",
                   "--notion", "mi-dp", "--epsilon", "0.1", "--samples", "2000", "--slices", "0",
                   "--event-runs", "0", "--records", "0", "--prior-search", "50", "--json", "--quiet", *FAST])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    # Four structured pairs (record 0 or 3 switched 0 ↔ 1, the other records all 0 or all 1) and the
    # four random ones (one base database, each of the n = 4 binary records switched).
    assert "only 8 distinct neighbouring pairs (4 structured, 4 random" in captured.err
    payload = json.loads(captured.out)
    assert len(payload["priors"]) == 1 + 8 and "plus 8 two-point priors" in payload["theta"]


@pytest.mark.parametrize("value", ["neural", "classifier", "auto"])
def test_mi_critic_reaches_the_spec(value):
    assert build_spec(apply_overrides(dp_config(), [f"audit.mi_critic={value}"])).mi_critic == value


def test_mi_critic_of_an_mi_pp_audit_is_an_error_naming_the_key():
    config = mi_pp_config()
    config["audit"]["mi_critic"] = "classifier"
    with pytest.raises(InputError, match="mi_critic"):
        build_spec(config)


def test_mi_critic_flag_is_checked_against_its_choices(capsys):
    # One line naming the key and its choices, without argparse's usage block.
    assert main(["audit", "--mechanism", "catalog:laplace_sum", "--claim", "dp:1", "--mi-critic", "forest"]) == 2
    assert capsys.readouterr().err == ("miaudit audit: error: [audit] mi_critic (--mi-critic) must be one of auto, "
                                       "neural, classifier, got 'forest'\n")
