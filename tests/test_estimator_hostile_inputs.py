"""Hostile input to the estimators' public entry points and ``miaudit estimate``: one :class:`InputError`
naming the argument, never a traceback from inside NumPy or torch, nothing silently dropped or misread.

Accepted inputs of other types (float32, int, bool, lists, Python objects) are checked against the
same data converted to float64 by NumPy in the test: the estimate must be the same number.
"""

import numpy as np
import pytest

from audit.cli.main import main
from estimators import CriticConfig, estimate_mi, exact_mi, fit_critics, gaussian_mi, ksg_mi, plugin_mi
from estimators.critic_config import OUTPUT_RANGE_LIMITS
from estimators.estimate import minimum_samples
from estimators.validation import InputError

TINY_CRITIC = CriticConfig(max_steps=2, eval_every=1, batch_size=8, hidden=4)


def pair(n=60, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    return x, x + rng.standard_normal(n)


def raises_naming(name, call, *args, **kwargs) -> str:
    """Run ``call``; it must raise one InputError whose message names ``name``; return the message."""
    with pytest.raises(InputError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert f"'{name}'" in message, message
    return message


# --------------------------------------------------------------------------- sample arrays

CLASSICAL = {"ksg": ksg_mi, "gaussian": gaussian_mi, "plugin": plugin_mi}


def data_for(estimator, seed=1):
    """Paired samples the estimator accepts: continuous ones for KSG and the Gaussian, three symbols each for
    the plug-in estimator."""
    x, y = pair(120, seed)
    return (np.sign(np.round(x)), np.sign(np.round(y))) if estimator == "plugin" else (3 * x, 3 * y)


@pytest.mark.parametrize("estimator", sorted(CLASSICAL))
def test_masked_entries_are_refused_not_read_as_data(estimator):
    x, y = data_for(estimator)
    masked = np.ma.masked_array(x, mask=np.arange(len(x)) == 0)
    message = raises_naming("x", CLASSICAL[estimator], masked, y)
    assert "masked" in message and "1 masked" in message
    # A masked array without masked entries is its data.
    assert CLASSICAL[estimator](np.ma.masked_array(x), y) == CLASSICAL[estimator](x, y)


@pytest.mark.parametrize("bad,what", [
    (np.arange(60).astype("datetime64[D]"), "datetime64"),
    (np.arange(60).astype("timedelta64[s]"), "timedelta64"),
    ([str(v) for v in range(60)], "text"),
    (np.array([str(v) for v in range(59)] + [1.0], dtype=object), "text"),
])
def test_dates_and_text_are_not_numbers(bad, what):
    _, y = pair()
    assert what in raises_naming("x", ksg_mi, bad, y)
    assert what in raises_naming("x", estimate_mi, bad, y, estimator="gaussian")


def test_none_is_named_as_none():
    _, y = pair()
    assert "is None" in raises_naming("x", gaussian_mi, None, y)
    holes = [1.0, 2.0, None] + list(range(57))
    message = raises_naming("x", gaussian_mi, holes, y)
    assert "row 2" in message and "None" in message


@pytest.mark.parametrize("estimator", sorted(CLASSICAL))
@pytest.mark.parametrize("kind", ["float32", "float16", "int64", "bool", "list", "object"])
def test_other_numeric_types_give_the_float64_estimate(estimator, kind):
    x, y = data_for(estimator)
    convert = {"list": lambda a: a.tolist(), "object": lambda a: a.astype(object),
               "bool": lambda a: a > 0}.get(kind, lambda a: a.astype(kind))
    cx, cy = convert(x), convert(y)
    expected = CLASSICAL[estimator](np.asarray(cx, dtype=np.float64), np.asarray(cy, dtype=np.float64))
    assert CLASSICAL[estimator](cx, cy) == expected


# --------------------------------------------------------------------------- estimate_mi's other arguments

@pytest.mark.parametrize("name,value", [("sliced", "False"), ("sliced", 1), ("sliced", None), ("quiet", "no")])
def test_flags_must_be_booleans(name, value):
    x, y = pair()
    raises_naming(name, estimate_mi, x, y, estimator="ksg", **{name: value})


def test_a_numpy_bool_is_a_bool():
    x, y = pair()
    plain = estimate_mi(x, y, estimator="ksg", sliced=True, slices=3, seed=4)
    numpy_bool = estimate_mi(x, y, estimator="ksg", sliced=np.True_, slices=3, seed=4)
    assert numpy_bool.sliced and numpy_bool.value == plain.value


def test_critic_must_be_a_critic_config():
    x, y = pair()
    message = raises_naming("critic", estimate_mi, x, y, estimator="dv", critic={"max_steps": 3})
    assert "CriticConfig" in message
    raises_naming("max_steps", estimate_mi, x, y, estimator="dv", critic=CriticConfig(max_steps=0))
    # A classical estimator trains no critic: any critic given to it, valid or not, is refused, not ignored.
    for critic in ({"max_steps": 3}, CriticConfig(max_steps=0), CriticConfig()):
        assert "applies only to neural estimators" in raises_naming("critic", estimate_mi, x, y, estimator="ksg",
                                                                    critic=critic)


# --------------------------------------------------------------------------- CriticConfig

@pytest.mark.parametrize("field,value", [
    ("output_range", "ab"), ("output_range", (1.0,)), ("output_range", None), ("output_range", (-1.0, True)),
    ("output_range", (-1.0, np.inf)), ("output_range", (OUTPUT_RANGE_LIMITS[0] - 1, 3.0)),
    ("output_range", (-8.0, OUTPUT_RANGE_LIMITS[1] + 0.5)), ("output_range", (-1e6, 3.0)),
    ("split", "abc"), ("split", None), ("split", ("a", 0.5, 0.5)),
    ("batch_size", 1), ("mine_rate", 1.0), ("mine_rate", 2.0),
])
def test_critic_config_fields_are_named(field, value):
    raises_naming(field, CriticConfig(**{field: value}).validated)


def test_output_range_limits_keep_the_exponentials_finite():
    """At the limits e^hi is finite in float32, where the critics train, and e^lo is a normal float64 (the
    certificate divides by a mean of e^T ≥ e^lo); past them they overflow or underflow to 0."""
    low, high = OUTPUT_RANGE_LIMITS
    CriticConfig(output_range=(low, high)).validated()
    assert np.isfinite(np.exp(np.float32(high))) and np.exp(np.float64(low)) >= np.finfo(np.float64).tiny
    with np.errstate(over="ignore", under="ignore"):
        assert np.exp(np.float64(-746.0)) == 0.0 and np.isinf(np.exp(np.float32(89.0)))


def test_test_split_must_hold_more_samples_than_eval_shifts():
    """Split (0.45, 0.45, 0.1) of 40 samples leaves a test split of 4: rolling y by the default 4 shifts would
    include the shift 4 ≡ 0, pairing every x with its own y as a 'product' sample."""
    rng = np.random.default_rng(0)
    config = CriticConfig(split=(0.45, 0.45, 0.1), max_steps=2)
    n_test = 40 - 2 * round(0.45 * 40)
    assert n_test == 4 == config.eval_shifts
    # The fewest samples whose splits hold at least 4 each and a test split of at least 5, by brute force.
    need = next(n for n in range(12, 1000)
                if min(round(0.45 * n), n - 2 * round(0.45 * n)) >= 4 and n - 2 * round(0.45 * n) >= 5)
    assert minimum_samples("dv", [1, 1], critic=config)[0] == need
    message = raises_naming("x", estimate_mi, rng.standard_normal(40), rng.standard_normal(40), critic=config)
    assert f"at least {need}" in message and "eval_shifts = 4" in message
    u = rng.standard_normal((1, 40, 1))
    message = raises_naming("u", fit_critics, u, u, config=config)
    assert "'v'" in message and f"at least {need}" in message and "'x'" not in message


def test_one_sample_and_one_neighbour_are_singular():
    one = np.zeros(1)
    message = raises_naming("k", ksg_mi, one, one, k=1)
    assert message.startswith("arguments 'x' and 'y' have 1 sample, too few for KSG with argument 'k' = 1 neighbour: ")
    message = raises_naming("u", fit_critics, np.zeros((1, 1, 1)), np.zeros((1, 1, 1)), config=TINY_CRITIC)
    assert message.startswith("arguments 'u' and 'v' have 1 sample, too few for the critics' ")
    assert minimum_samples("ksg", [1, 1], k=1)[1] == "KSG with k = 1 neighbour needs k + 1"
    assert minimum_samples("ksg", [1, 1], k=2)[1] == "KSG with k = 2 neighbours needs k + 1"


# --------------------------------------------------------------------------- fit_critics

@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
def test_fit_critics_seed_is_checked(seed):
    u = np.zeros((1, 60, 1))
    raises_naming("seed", fit_critics, u, u, config=TINY_CRITIC, seed=seed)


@pytest.mark.parametrize("u,v", [
    (np.zeros((0, 60, 1)), np.zeros((0, 60, 1))),  # no critic
    (np.zeros((1, 60, 0)), np.zeros((1, 60, 1))),  # no column
    (np.zeros((1, 60, 1)).astype(str), np.zeros((1, 60, 1))),
    ([[[1.0], [2.0, 3.0]]], np.zeros((1, 2, 1))),  # ragged
    (np.ma.masked_array(np.zeros((1, 60, 1)), mask=np.eye(60, 1, dtype=bool)[None]), np.zeros((1, 60, 1))),
])
def test_fit_critics_arrays_are_checked(u, v):
    raises_naming("u", fit_critics, u, v, config=TINY_CRITIC)


def test_fit_critics_config_must_be_a_critic_config():
    u = np.zeros((1, 60, 1))
    raises_naming("config", fit_critics, u, u, config={"max_steps": 2})


@pytest.mark.train
def test_fit_critics_other_numeric_types_give_the_float64_fit():
    rng = np.random.default_rng(2)
    u = np.round(3 * rng.standard_normal((2, 60, 1)))
    v = u + np.round(rng.standard_normal((2, 60, 1)))
    expected = fit_critics(u, v, config=TINY_CRITIC, seed=3).estimates
    for convert in (lambda a: a.astype(np.float32), lambda a: a.astype(np.int64), lambda a: a.astype(object),
                    lambda a: a.tolist()):
        assert np.array_equal(fit_critics(convert(u), convert(v), config=TINY_CRITIC, seed=3).estimates, expected)
    # A Generator seeds as the integer that made it.
    assert np.array_equal(fit_critics(u, v, config=TINY_CRITIC, seed=np.random.default_rng(3)).estimates, expected)


# --------------------------------------------------------------------------- exact_mi

@pytest.mark.parametrize("pmf,what", [
    ([["0.5", "0.5"]], "text"), (None, "None"), ([[0.5, 0.5j]], "complex"), ([0.5, 0.5], "shape"),
    (np.ma.masked_array([[0.5, 0.5]], mask=[[False, True]]), "masked"),
])
def test_exact_mi_refuses_what_is_not_a_table_of_numbers(pmf, what):
    assert what in raises_naming("joint_pmf", exact_mi, pmf)


# --------------------------------------------------------------------------- miaudit estimate

@pytest.fixture
def files(tmp_path):
    x, y = pair(200, 5)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return tmp_path


@pytest.mark.parametrize("flags,named", [
    (["--seed", "-1"], "--seed"),
    # 10^12 slices × 200 samples × 2 columns × 8 bytes = 3.2e15 bytes, more than any machine.
    (["--sliced", "--slices", str(10**12)], "--slices"),
])
def test_estimate_names_its_flags(files, capsys, flags, named):
    assert main(["estimate", "--x", str(files / "x.npy"), "--y", str(files / "y.npy"), "--estimator", "ksg",
                 *flags]) == 2
    err = capsys.readouterr().err
    assert f"argument '{named}'" in err and err.count("\n") == 1
