"""Hostile and careless input to the estimators and ``miaudit estimate`` (issue 12: A3–A6, D, A8).

Every expected value comes from an independent computation in the test: a closed form, an
exact pmf, or the same data unscaled.
"""

import math

import numpy as np
import pytest

from audit.cli.main import main
from estimators.array_files import load_npy_array
from estimators.discrete import exact_mi, plugin_mi, plugin_mi_batch
from estimators.estimate import estimate_mi
from estimators.gaussian import gaussian_mi
from estimators.ksg import ksg_mi, ksg_mi_batch
from estimators.neural import CriticConfig, fit_critics
from estimators.results import MIEstimate
from estimators.validation import InputError, as_float_array, check_positive, check_probability

FAST_CRITIC = CriticConfig(max_steps=300, eval_every=50)


def gaussian_pair(n, rho, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    return x, rho * x + math.sqrt(1 - rho**2) * rng.standard_normal(n)


# --------------------------------------------------------------------------- A3: KSG ties and scale


def test_ksg_on_independent_boolean_columns_is_near_zero():
    """Ties used to inflate KSG beyond log n (9.7 nats at n = 2000); the exact MI is 0."""
    rng = np.random.default_rng(0)
    n = 2000
    a, b = rng.integers(0, 2, n).astype(float), rng.integers(0, 2, n).astype(float)
    value = ksg_mi(a, b)
    assert value < math.log(n)
    assert abs(value - 0.0) < 0.06
    assert abs(value - plugin_mi(a, b)) < 0.06


def test_ksg_on_a_binary_symmetric_channel_matches_the_exact_mi():
    rng = np.random.default_rng(1)
    n, flip = 4000, 0.1
    a = rng.integers(0, 2, n).astype(float)
    b = np.where(rng.random(n) < flip, 1 - a, a)
    truth = exact_mi([[0.5 * (1 - flip), 0.5 * flip], [0.5 * flip, 0.5 * (1 - flip)]])
    assert ksg_mi(a, b) == pytest.approx(truth, abs=0.04)


def test_ksg_constant_column_carries_nothing():
    y = np.random.default_rng(2).standard_normal(500)
    assert abs(ksg_mi(np.full(500, 7.0), y)) < 0.02


def test_ksg_is_scale_invariant_per_coordinate():
    x, y = gaussian_pair(2000, 0.7, 3)
    base = ksg_mi(x, y)
    assert ksg_mi(1000 * x, y) == pytest.approx(base, abs=1e-9)
    assert ksg_mi(1000 * x, 1e-3 * y) == pytest.approx(base, abs=1e-9)
    assert ksg_mi(1e300 * x, 1e-300 * y) == pytest.approx(base, abs=1e-9)
    wide = np.column_stack([x, np.random.default_rng(4).standard_normal(2000)])
    assert ksg_mi(wide * [1.0, 1e6], y) == pytest.approx(ksg_mi(wide, y), abs=1e-9)


def test_ksg_gaussian_closed_form_still_right():
    rho = 0.6
    x, y = gaussian_pair(3000, rho, 5)
    assert ksg_mi(x, y) == pytest.approx(-0.5 * math.log(1 - rho**2), abs=0.05)


def test_ksg_tie_breaking_is_seeded_and_noted():
    rng = np.random.default_rng(6)
    a = rng.integers(0, 3, (2, 300, 1)).astype(float)
    b = rng.integers(0, 3, (2, 300, 1)).astype(float)
    np.testing.assert_array_equal(ksg_mi_batch(a, b, seed=1), ksg_mi_batch(a, b, seed=1))
    tied = estimate_mi(a[0], b[0], estimator="ksg", seed=0)
    assert any("ties" in note for note in tied.notes) and "ties" in tied.to_dict()["notes"][0]
    x, y = gaussian_pair(300, 0.5, 7)
    assert estimate_mi(x, y, estimator="ksg").notes == ()


def _plugin_of_the_sample(a, b) -> float:
    """MI of the empirical joint law of the symbols a, b: Σ p log(p / (p_a p_b)) over the cells, by counting."""
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    joint = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(joint, (ia.ravel(), ib.ravel()), 1.0)
    p = joint / len(a)
    outer = p.sum(axis=1, keepdims=True) * p.sum(axis=0, keepdims=True)
    seen = p > 0
    return float(np.sum(p[seen] * np.log(p[seen] / outer[seen])))


def _brute_force_ksg(x, y, k):
    """Kraskov et al. (2004) Eq. (8) by all pairwise max-norm distances, each variable's columns standardized."""
    from scipy.special import digamma

    x, y = ((v - v.mean(axis=0)) / v.std(axis=0) for v in (x, y))
    dx = np.abs(x[:, None, :] - x[None, :, :]).max(axis=2)
    dy = np.abs(y[:, None, :] - y[None, :, :]).max(axis=2)
    joint = np.maximum(dx, dy)
    np.fill_diagonal(joint, np.inf)
    eps = np.sort(joint, axis=1)[:, k - 1]
    n_x = (dx < eps[:, None]).sum(axis=1) - 1  # minus the point itself (distance 0)
    n_y = (dy < eps[:, None]).sum(axis=1) - 1
    return float(digamma(k) + digamma(len(x)) - np.mean(digamma(n_x + 1) + digamma(n_y + 1)))


def test_ksg_of_a_constant_is_exactly_zero():
    # I(X; Y) <= H(X) = 0 for a constant X (either side, any columns): two constants gave -0.11 nats at n = 100.
    rng = np.random.default_rng(11)
    constant, other = np.ones(100), np.full((100, 2), -3.5)
    assert ksg_mi(constant, constant) == 0.0
    assert ksg_mi(constant, other) == 0.0
    assert ksg_mi(rng.standard_normal((100, 2)), constant) == 0.0
    assert ksg_mi(constant, rng.integers(0, 3, 100).astype(float)) == 0.0
    tied = estimate_mi(constant, constant, estimator="ksg", seed=3)
    assert tied.value == 0.0 and tied.notes == ()  # no noise was added, so no note says so
    # Sliced: every projection of a constant is constant.
    assert estimate_mi(other, rng.standard_normal((100, 3)), estimator="ksg", sliced=True, slices=4).value == 0.0


def test_ksg_drops_constant_coordinates_as_eq_8_does():
    # A constant column is at distance 0 between every pair: Eq. (8), computed here by brute force, is the same
    # without it, and no tie-breaking noise is added for it.
    x, y = gaussian_pair(200, 0.6, 12)
    expected = _brute_force_ksg(x[:, None], y[:, None], k=3)
    with_constant = np.column_stack([x, np.full(200, 2.0)])
    assert ksg_mi(with_constant, y) == pytest.approx(expected, abs=1e-12)
    assert ksg_mi(y, with_constant) == pytest.approx(expected, abs=1e-12)
    assert estimate_mi(with_constant, y, estimator="ksg").notes == ()


def test_ksg_on_heavy_ties_tends_to_the_plug_in_of_the_discrete_law():
    # Three symbols, Y a noisy copy of X: every value is seen about 670 times. The tie-breaking noise makes
    # Eq. (8) the plug-in MI of the sample's discrete law plus the noise's own KSG term, about 0 (ksg module
    # docstring); that term's spread was 0.018 nats over 20 samples of this size (mean -0.003).
    differences = []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        a = rng.integers(0, 3, 2000).astype(float)
        b = np.where(rng.random(2000) < 0.6, a, rng.integers(0, 3, 2000)).astype(float)
        differences.append(ksg_mi(a, b, seed=seed) - _plugin_of_the_sample(a, b))
    assert max(abs(d) for d in differences) < 0.1
    assert abs(np.mean(differences)) < 0.03


# --------------------------------------------------------------------------- A4: plug-in on continuous data


def test_plugin_refuses_continuous_data():
    x, y = gaussian_pair(2000, 0.9, 8)
    with pytest.raises(InputError, match="2000 distinct .*2000 samples.*ksg"):
        plugin_mi(x, y)
    with pytest.raises(InputError, match="distinct"):
        estimate_mi(x, y, estimator="plugin")


def test_plugin_distinct_fraction_boundary():
    """n = 8: four distinct (x, y) pairs (half of n) are accepted, five are refused."""
    four = np.repeat([0.0, 1.0, 2.0, 3.0], 2)
    assert plugin_mi(four, four, correction=None) == pytest.approx(math.log(4), rel=1e-12)
    five = np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 4.0])
    with pytest.raises(InputError, match="5 distinct"):
        plugin_mi(five, five)
    with pytest.raises(InputError, match="slice 1"):
        plugin_mi_batch(np.stack([four, five])[..., None], np.stack([four, five])[..., None])


# --------------------------------------------------------------------------- A5: scale and NaN


@pytest.mark.train
def test_dv_estimate_on_data_of_scale_1e40_equals_the_unscaled_one():
    x, y = gaussian_pair(2000, 0.8, 9)
    plain = estimate_mi(x, y, critic=FAST_CRITIC, seed=0)
    huge = estimate_mi(x * 1e40, y * 1e40, critic=FAST_CRITIC, seed=0)
    assert math.isfinite(huge.value) and math.isfinite(huge.lower_bound)
    assert huge.value == pytest.approx(plain.value, abs=0.05)
    assert huge.lower_bound == pytest.approx(plain.lower_bound, abs=0.05)
    sliced = estimate_mi(np.column_stack([x, x]) * 1e307, y * 1e300, critic=FAST_CRITIC, sliced=True, slices=4,
                         seed=0)
    assert np.isfinite(sliced.per_slice_lower_bounds).all() and math.isfinite(sliced.lower_bound)


@pytest.mark.train
def test_critics_standardize_in_float64():
    """Mechanism outputs of 1e300 (finite in float64, inf in float32) train the same critics."""
    x, y = gaussian_pair(1500, 0.8, 10)
    u, v = x[None, :, None], y[None, :, None]
    base = fit_critics(u, v, config=FAST_CRITIC, seed=0)
    huge = fit_critics(u, v * 1e300, config=FAST_CRITIC, seed=0)
    assert np.isfinite(huge.estimates).all()
    np.testing.assert_allclose(huge.estimates, base.estimates, atol=0.05)
    # The scorer applies the same float64 standardization to new data.
    np.testing.assert_allclose(huge.scorer(0, u[0], v[0] * 1e300), base.scorer(0, u[0], v[0]), atol=1e-4)


@pytest.mark.train
def test_critics_survive_an_extreme_outlier():
    x, y = gaussian_pair(1500, 0.8, 11)
    y[17] = 1e300
    fit = fit_critics(x[None, :, None], y[None, :, None], config=FAST_CRITIC, seed=0)
    assert np.isfinite(fit.estimates).all() and np.isfinite(fit.test_joint).all()


def test_gaussian_estimator_on_extreme_scales():
    x, y = gaussian_pair(2000, 0.6, 12)
    base = gaussian_mi(x, y)
    assert base == pytest.approx(-0.5 * math.log(1 - 0.6**2), abs=0.05)
    for scale in (1e200, 1e-200):
        assert gaussian_mi(x * scale, y) == pytest.approx(base, rel=1e-9)


@pytest.mark.parametrize("field", ["value", "lower_bound", "max_slice_lower_bound"])
def test_results_never_hold_nan(field):
    values = {"value": 0.1, field: math.nan}
    with pytest.raises(InputError, match=f"{field} is NaN"):
        MIEstimate(estimator="dv", **values)
    with pytest.raises(InputError, match="per_slice_lower_bounds is NaN"):
        MIEstimate(estimator="dv", value=0.1, per_slice_lower_bounds=np.array([0.1, math.nan]))


# --------------------------------------------------------------------------- A6: complex values


def test_complex_values_are_refused_at_every_entry_point(tmp_path):
    from mechanisms.base import MechanismError, sample_mechanism

    z = np.arange(40.0) + 1j
    with pytest.raises(InputError, match="argument 'values' holds complex numbers"):
        as_float_array(z, "values")
    with pytest.raises(InputError, match="argument 'x' holds complex"):
        estimate_mi(z, np.arange(40.0), estimator="gaussian")
    with pytest.raises(InputError, match="argument 'y' holds complex"):
        ksg_mi(np.arange(40.0), [complex(v, 1) for v in range(40)])
    with pytest.raises(InputError, match="argument 'v' holds complex"):
        fit_critics(np.zeros((1, 40, 1)), np.zeros((1, 40, 1)) + 1j)
    with pytest.raises(MechanismError, match="mechanism 'leaky'.*complex"):
        sample_mechanism(lambda dbs, rng: dbs[:, 0, :1] + 1j, np.zeros((3, 2, 1)), 0, name="leaky")
    from mechanisms.adapters.callables import PerDatabaseMechanism

    per_database = PerDatabaseMechanism(lambda db, rng: [db[0, 0] + 2j], name="rowwise")
    with pytest.raises(MechanismError, match="rowwise.*database 0.*complex"):
        sample_mechanism(per_database, np.zeros((3, 2, 1)), 0)
    np.save(tmp_path / "c.npy", z)
    np.save(tmp_path / "r.npy", np.arange(40.0))
    assert main(["estimate", "--x", str(tmp_path / "c.npy"), "--y", str(tmp_path / "r.npy"),
                 "--estimator", "gaussian"]) == 2


def test_complex_prior_draws_are_refused():
    from mechanisms.inputs.user_priors import UserPrior

    with pytest.raises(InputError, match="complex"):
        UserPrior(lambda m, rng: np.zeros((m, 2, 1)) + 1j)


# --------------------------------------------------------------------------- 7: plain numbers in messages


def test_messages_show_numpy_numbers_plainly():
    with pytest.raises(InputError) as info:
        check_positive(np.float64(-1.5), "scale")
    assert "-1.5" in str(info.value) and "np.float64" not in str(info.value)
    with pytest.raises(InputError) as info:
        check_probability(np.float32(2.0), "alpha")
    assert "np." not in str(info.value)


# --------------------------------------------------------------------------- D: loading .npy files


def test_load_npy_array_messages(tmp_path):
    np.save(tmp_path / "good.npy", np.arange(4))
    np.testing.assert_array_equal(load_npy_array(tmp_path / "good.npy", "--x"), np.arange(4.0))
    (tmp_path / "table.csv").write_text("1,2\n3,4\n")
    np.savez(tmp_path / "both.npz", first=np.arange(3), second=np.arange(2))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(tmp_path / "text.npy", np.array(["1.5", "2"]))
    np.save(tmp_path / "nan.npy", np.array([1.0, np.nan]))
    np.save(tmp_path / "empty.npy", np.zeros((0, 3)))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "good.npy").read_bytes()[:-8])
    cases = {
        "missing.npy": "no such file",
        "table.csv": "not a .npy array file",
        "both.npz": r"\.npz archive \(arrays: first, second\).*np\.load\(.*\)\['first'\]",
        "objects.npy": "Python objects",
        "text.npy": "not numbers",
        "nan.npy": "NaN or inf",
        "empty.npy": r"empty array \(shape \(0, 3\)\)",
        "cut.npy": "not a readable .npy",
        ".": "folder",
    }
    for name, message in cases.items():
        with pytest.raises(InputError, match=message) as info:
            load_npy_array(tmp_path / name, "--x")
        assert "'--x'" in str(info.value) and "allow_pickle" not in str(info.value)


# --------------------------------------------------------------------------- estimate: n and flags


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(13)
    np.save(tmp_path / "x.npy", rng.standard_normal(300))
    np.save(tmp_path / "y.npy", rng.standard_normal(300))
    np.save(tmp_path / "two.npy", np.array([0.0, 1.0]))
    np.save(tmp_path / "bits.npy", rng.integers(0, 2, 300))
    return tmp_path


@pytest.mark.parametrize("estimator,need", [("ksg", 4), ("gaussian", 3), ("dv", 35)])
def test_estimate_with_two_samples_names_the_user_arguments(files, capsys, estimator, need):
    two = str(files / "two.npy")
    assert main(["estimate", "--x", two, "--y", two, "--estimator", estimator]) == 2
    err = capsys.readouterr().err
    assert "'--x'" in err and f"at least {need}" in err and "'k'" not in err


@pytest.mark.parametrize("flags,named", [
    (["--slices", "4"], "--slices"),
    (["--slice-dim", "2"], "--slice-dim"),
    (["--conditional", "chain"], "--conditional"),
])
def test_estimate_refuses_inapplicable_flags(files, capsys, flags, named):
    assert main(["estimate", "--x", str(files / "x.npy"), "--y", str(files / "y.npy"), "--estimator", "gaussian",
                 *flags]) == 2
    assert f"argument '{named}'" in capsys.readouterr().err


@pytest.mark.parametrize("flags,named,why", [
    (["--estimator", "ksg", "--alpha", "0.1"], "--alpha", "estimator 'ksg' gives no certified bound"),
    (["--z", "x.npy", "--conditional", "chain", "--alpha", "0.1"], "--alpha", "--conditional chain gives no"),
    (["--estimator", "gaussian", "--device", "cpu"], "--device", "estimator 'gaussian' trains no critics"),
    (["--estimator", "plugin", "--device", "auto"], "--device", "estimator 'plugin' trains no critics"),
])
def test_estimate_refuses_flags_of_certificates_and_critics_where_unused(files, capsys, flags, named, why):
    flags = [str(files / f) if f.endswith(".npy") else f for f in flags]
    assert main(["estimate", "--x", str(files / "x.npy"), "--y", str(files / "y.npy"), *flags]) == 2
    err = capsys.readouterr().err
    assert f"argument '{named}' applies only to " in err and why in err and f"drop {named}" in err


def test_estimate_of_bits_reports_bits(files, capsys):
    assert main(["estimate", "--x", str(files / "bits.npy"), "--y", str(files / "bits.npy"), "--estimator", "ksg",
                 "--bits", "--json"]) == 0
    captured = capsys.readouterr()
    import json

    payload = json.loads(captured.out)
    assert payload["unit"] == "bits" and payload["notes"] and "ties" in payload["notes"][0]
    # Y = X, one fair bit: H(X) = 1 bit; KSG with broken ties tends to the plug-in value.
    assert payload["value"] == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("alpha", ["0", "1", "nan"])
def test_estimate_alpha_outside_the_open_interval(files, capsys, alpha):
    assert main(["estimate", "--x", str(files / "x.npy"), "--y", str(files / "y.npy"), "--alpha", alpha]) == 2
    assert "'--alpha'" in capsys.readouterr().err


@pytest.mark.train
def test_audit_of_a_mechanism_with_outputs_of_1e300_matches_the_unscaled_audit():
    """Once 'argument mi_lower_bound must be finite' (NaN critics from a float32 overflow)."""
    from audit.engine import run_audit
    from audit.spec import AuditSpec
    from mechanisms.inputs.priors import ProductBernoulli

    def leaky(dbs, rng):
        return dbs[:, 0, :1] + 0.5 * rng.standard_normal((dbs.shape[0], 1))

    def leaky_huge(dbs, rng):
        return 1e300 * leaky(dbs, rng)

    results = [run_audit(AuditSpec(mechanism=mechanism, priors=[ProductBernoulli(0.5, shape=(2, 1))], notion="mi-dp",
                                   epsilon=0.1, samples=2000, slices=0, event_runs=0, records=(0,),
                                   critic=FAST_CRITIC, seed=3))
               for mechanism in (leaky, leaky_huge)]
    assert all(math.isfinite(r.lower_bound) for r in results)
    assert results[1].lower_bound == pytest.approx(results[0].lower_bound, abs=0.05)


def test_gaussian_conditional_cases_name_the_right_argument():
    x, y = gaussian_pair(300, 0.6, 14)
    with pytest.raises(InputError, match="'y' and 'z' together: singular"):
        estimate_mi(x, y, np.ones(300), estimator="gaussian", conditional="chain")
    with pytest.raises(InputError, match="'z' determines 'x' exactly"):
        estimate_mi(x, y, x, estimator="gaussian", conditional="chain")
    # Identical columns: the 2 x 2 covariance [[a, a], [a, a]] has determinant exactly 0.
    exact = estimate_mi(x, x, estimator="gaussian")
    assert exact.value == math.inf and exact.to_dict()["value"] is None and "infinite" in exact.notes[0]
    with pytest.raises(InputError, match="'correction'"):
        estimate_mi(x, y, estimator="gaussian", correction="jackknife")


def test_load_npy_array_refuses_a_fifo(tmp_path):
    import os

    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="'--x'.*not a regular file"):
        load_npy_array(fifo, "--x")


def test_sliced_estimate_too_large_for_memory_is_refused_before_allocating():
    x, y = gaussian_pair(300, 0.5, 15)
    # 10^12 slices x 300 samples x 2 columns x 8 bytes = 4.8e15 bytes = 4.26 PiB, more than any machine.
    with pytest.raises(InputError, match=r"^argument 'slices' \(1000000000000\).*4\.26 PiB"):
        estimate_mi(x, y, estimator="gaussian", sliced=True, slices=10**12)


def test_exact_mi_with_subnormal_entries_stays_finite():
    """P_X(i) P_Y(j) underflows to 0 for an entry of 2.2e-311; the log-space sum does not."""
    pmf = np.array([[0.0, 1.0], [2.225073858507e-311, 0.0]])
    pmf = pmf / pmf.sum()
    tiny = pmf[1, 0]
    # Direct sum: the tiny cell contributes tiny·log(tiny / (tiny · tiny)) = −tiny·log(tiny) ≈ 1.6e-308,
    # the other −(1 − tiny)·log(1 − tiny) ≈ 0: the MI equals the binary entropy, about 1.6e-308.
    assert exact_mi(pmf) == pytest.approx(-tiny * math.log(tiny), rel=1e-6, abs=1e-320)
