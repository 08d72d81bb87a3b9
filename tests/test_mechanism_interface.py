"""The batched mechanism protocol: boundary validation, adapters and loading user code."""

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from estimators.validation import InputError
from mechanisms.adapters.callables import (ExternalCommandMechanism, PerDatabaseMechanism, diffprivlib_mechanism, opendp_mechanism)
from mechanisms.base import MechanismError, as_database_batch, sample_mechanism
from mechanisms.adapters.loading import load_object

FIXTURES = Path(__file__).parent / "fixtures"
WIRE = str(FIXTURES / "wire_mechanism.py")


def _batch(m=4, n=3, k=2, seed=0):
    return np.random.default_rng(seed).normal(size=(m, n, k))


# ---------------------------------------------------------------- sample_mechanism


def test_sample_mechanism_returns_float_outputs():
    dbs = _batch()
    out = sample_mechanism(lambda d, rng: d.sum(axis=1), dbs, 0)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, dbs.sum(axis=1))


def test_raising_batched_mechanism_is_located():
    dbs = _batch(m=5)
    dbs[3, 0, 0] = 100.0

    def fails_on_large(d, rng):
        if (d > 50).any():
            raise RuntimeError("value too large")
        return d.sum(axis=1)

    with pytest.raises(MechanismError, match=r"'fragile'.*RuntimeError on database 3: value too large") as info:
        sample_mechanism(fails_on_large, dbs, 0, name="fragile")
    assert info.value.database_index == 3
    assert isinstance(info.value, InputError)


def test_raising_only_on_the_whole_batch_says_so():
    def fails_on_batches(d, rng):
        if d.shape[0] > 1:
            raise MemoryError("batch too big")
        return d.sum(axis=1)

    with pytest.raises(MechanismError, match="on the batch of 4 databases") as info:
        sample_mechanism(fails_on_batches, _batch(), 0, name="m")
    assert info.value.database_index is None


@pytest.mark.parametrize("returned, message", [
    (lambda d: d.sum(axis=(1, 2)), r"shape \(4,\).*expected \(4, d\)"),
    (lambda d: d.sum(axis=1)[:3], r"shape \(3, 2\).*expected \(4, d\)"),
    (lambda d: d, r"shape \(4, 3, 2\)"),
    (lambda d: np.zeros((4, 0)), r"shape \(4, 0\)"),
    (lambda d: [["a"]] * 4, "non-numeric"),
])
def test_wrong_shapes_are_named(returned, message):
    with pytest.raises(MechanismError, match=rf"mechanism 'bad'.*{message}"):
        sample_mechanism(lambda d, rng: returned(d), _batch(), 0, name="bad")


@pytest.mark.parametrize("bad_value", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_names_the_database(bad_value):
    def leaky(d, rng):
        out = d.sum(axis=1)
        out[2, 1] = bad_value
        return out

    with pytest.raises(MechanismError, match="'leaky' returned NaN or inf for database 2") as info:
        sample_mechanism(leaky, _batch(), 0)
    assert info.value.database_index == 2


def test_bad_database_batch_is_an_input_error():
    with pytest.raises(InputError, match="'dbs'.*shape"):
        sample_mechanism(lambda d, rng: d[:, 0], np.ones((3, 2)), 0)
    dbs = _batch()
    dbs[1, 2, 0] = np.nan
    with pytest.raises(InputError, match="'dbs'.*database 1"):
        as_database_batch(dbs)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 6), n=st.integers(1, 5), k=st.integers(1, 4), d=st.integers(1, 3))
def test_any_valid_shape_passes_through(m, n, k, d):
    dbs = np.arange(m * n * k, dtype=float).reshape(m, n, k)
    out = sample_mechanism(lambda x, rng: np.repeat(x.sum(axis=(1, 2))[:, None], d, axis=1), dbs, 1)
    assert out.shape == (m, d)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(2, 6), wrong=st.integers(1, 8))
def test_any_wrong_row_count_is_rejected(m, wrong):
    if wrong == m:
        wrong += 1
    with pytest.raises(MechanismError, match=f"expected \\({m}, d\\)"):
        sample_mechanism(lambda x, rng: np.zeros((wrong, 1)), np.zeros((m, 2, 1)), 0)


# ---------------------------------------------------------------- per-database adapter


def test_per_database_adapter_matches_hand_written_batched_version():
    dbs = _batch(m=6)

    def per_db(db, rng):
        return db.mean(axis=0) + rng.normal(size=db.shape[1])

    def batched(d, rng):
        # The same draws in the same order: one normal vector of size k per database.
        return np.stack([row.mean(axis=0) + rng.normal(size=d.shape[2]) for row in d])

    adapted = sample_mechanism(PerDatabaseMechanism(per_db), dbs, 11)
    hand = batched(dbs, np.random.default_rng(11))
    np.testing.assert_allclose(adapted, hand)


def test_per_database_scalars_become_one_column():
    dbs = _batch()
    out = sample_mechanism(PerDatabaseMechanism(lambda db, rng: db[0, 0]), dbs, 0)
    np.testing.assert_array_equal(out, dbs[:, 0, :1])


def test_per_database_adapter_names_the_failing_database():
    def fails_third(db, rng, calls=[]):
        calls.append(1)
        if len(calls) == 3:
            raise ValueError("boom")
        return db[0]

    with pytest.raises(MechanismError, match="'pdb'.*ValueError on database 2: boom") as info:
        sample_mechanism(PerDatabaseMechanism(fails_third, name="pdb"), _batch(), 0)
    assert info.value.database_index == 2


def test_per_database_adapter_rejects_ragged_outputs():
    def ragged(db, rng):
        return np.zeros(2) if db[0, 0] > 0 else np.zeros(3)

    dbs = np.ones((3, 2, 1))
    dbs[1] = -1.0
    with pytest.raises(MechanismError, match="3 values for database 1 but 2 for database 0"):
        sample_mechanism(PerDatabaseMechanism(ragged), dbs, 0)


def test_per_database_adapter_needs_a_callable():
    with pytest.raises(InputError, match="'function'"):
        PerDatabaseMechanism(3)


def _database_only(db):
    return db.sum()


def _keyword_only(*, db, rng):
    return db.sum()


@pytest.mark.parametrize("function,signature", [(lambda: 1.0, "()"), (_database_only, "(db)"),
                                                (_keyword_only, "(*, db, rng)")])
def test_per_database_adapter_names_a_function_of_the_wrong_signature_before_any_run(function, signature):
    # Python's own TypeError at the first call named neither the argument nor the form f(db, rng).
    with pytest.raises(InputError) as error:
        PerDatabaseMechanism(function, name="mine")
    assert str(error.value) == (f"argument 'function' (mine) cannot be called as function(db, rng): its signature is "
                                f"{signature}; it needs two positional parameters, the input and rng, the "
                                "numpy.random.Generator to draw all its noise from")


def test_per_database_adapter_takes_callables_of_every_accepted_signature():
    class Noisy:
        def __call__(self, db, rng, scale=1.0):
            return db.sum() + rng.laplace(0.0, scale)

    for function in (lambda db, rng: db.sum(), lambda *args: args[0].sum(), Noisy()):
        assert sample_mechanism(PerDatabaseMechanism(function), _batch(), 0).shape == (4, 1)
    PerDatabaseMechanism(max)  # no signature Python can read: its first call is the check


@pytest.mark.parametrize("function,signature", [(lambda: 1.0, "()"), (_database_only, "(db)"),
                                                (_keyword_only, "(*, db, rng)")])
def test_audit_spec_names_a_mechanism_of_the_wrong_signature_before_any_run(function, signature):
    # The command line refuses such a function when it loads it (mechanisms.adapters.recognition); AuditSpec, the
    # library's boundary, says the same words instead of Python's TypeError at the first call.
    from audit import AuditSpec
    from mechanisms.inputs.priors import TwoPoint

    calls = []

    def counted(*args):
        calls.append(args)
        return function(*args)

    counted.__signature__ = __import__("inspect").signature(function)
    with pytest.raises(InputError) as error:
        AuditSpec(mechanism=counted, priors=[TwoPoint(np.zeros((1, 1)), np.ones((1, 1)))], notion="mi-dp",
                  epsilon=0.5)
    assert str(error.value) == (f"argument 'mechanism' cannot be called as mech(dbs, rng) -> (m, d): its signature is "
                                f"{signature}; it needs two positional parameters, the input and rng, the "
                                "numpy.random.Generator to draw all its noise from")
    assert not calls  # refused before any call


def test_audit_spec_takes_mechanisms_of_every_accepted_signature():
    from audit import AuditSpec
    from mechanisms.inputs.priors import TwoPoint

    class Batched:
        def __call__(self, dbs, rng, scale=1.0):
            return dbs[:, :, 0] + rng.laplace(0.0, scale, (len(dbs), 1))

    prior = TwoPoint(np.zeros((1, 1)), np.ones((1, 1)))
    for mechanism in (lambda dbs, rng: dbs[:, :, 0], lambda *args: args[0][:, :, 0], Batched(), max):
        assert AuditSpec(mechanism=mechanism, priors=[prior], notion="mi-dp", epsilon=0.5).mechanism is mechanism


def _negative_scale(db, rng):
    scale = -1.0
    return rng.laplace(0.0, scale)  # NumPy raises inside itself: the user's line to fix is this one


class _BatchedNegativeScale:
    def __call__(self, dbs, rng):
        return rng.laplace(0.0, -1.0, size=(len(dbs), 1))


def test_a_failing_function_is_named_with_the_line_of_its_own_file_that_raised():
    expected = f" (at {Path(__file__).name} line {_negative_scale.__code__.co_firstlineno + 2}, in _negative_scale)"
    with pytest.raises(MechanismError) as info:
        sample_mechanism(PerDatabaseMechanism(_negative_scale, name="mine"), _batch(), 0)
    assert str(info.value) == "mechanism 'mine' raised ValueError on database 0: scale < 0" + expected
    line = _BatchedNegativeScale.__call__.__code__.co_firstlineno + 1
    with pytest.raises(MechanismError) as info:
        sample_mechanism(_BatchedNegativeScale(), _batch(m=1), 0, name="batched")
    assert str(info.value).endswith(f"scale < 0 (at {Path(__file__).name} line {line}, in __call__)")


def _failing_prior(m, rng):
    draws = rng.random((m, 3, 1))
    return draws[:, :, 5]  # IndexError inside NumPy's indexing: this line is the one named


def test_a_failing_prior_is_named_with_the_line_of_its_own_file_that_raised():
    from mechanisms.inputs.user_priors import UserPrior

    with pytest.raises(MechanismError) as info:
        UserPrior(_failing_prior, label="mine")
    assert str(info.value).startswith("prior 'mine' raised IndexError when asked for 2 databases: ")
    assert str(info.value).endswith(f" (at {Path(__file__).name} line {_failing_prior.__code__.co_firstlineno + 2}, "
                                    "in _failing_prior)")


def test_a_function_of_one_database_given_as_batched_says_how_to_wrap_it_from_python():
    with pytest.raises(MechanismError, match=r"from Python, wrap it: PerDatabaseMechanism\(f\)"):
        sample_mechanism(lambda db, rng: 1.0, _batch(), 0)


# ---------------------------------------------------------------- external command


def _command(mode, **kwargs):
    return ExternalCommandMechanism((sys.executable, WIRE, mode), **kwargs)


@pytest.mark.integration
def test_external_command_text_round_trip():
    dbs = _batch(m=3, n=4, k=2)
    out = sample_mechanism(_command("sum", timeout=30), dbs, 0)
    expected = np.stack([dbs.reshape(3, -1).sum(axis=1), dbs[:, 0, 0]], axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


@pytest.mark.integration
def test_external_command_npy_round_trip():
    dbs = _batch(m=3, n=4, k=2)
    out = sample_mechanism(_command("npy", wire="npy", timeout=30), dbs, 0)
    expected = np.stack([dbs.sum(axis=(1, 2)), dbs[:, 0, 0]], axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


@pytest.mark.integration
def test_external_command_seed_reproduces():
    dbs = _batch(m=3)
    mech = _command("noisy", timeout=30)
    first = sample_mechanism(mech, dbs, 5)
    again = sample_mechanism(mech, dbs, 5)
    other = sample_mechanism(mech, dbs, 6)
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first[:, 0], other[:, 0])


@pytest.mark.integration
def test_external_command_that_hangs_times_out():
    with pytest.raises(MechanismError, match=r"did not finish within 0.5 s"):
        sample_mechanism(_command("hang", timeout=0.5), _batch(), 0)


@pytest.mark.integration
def test_external_command_that_dies_quotes_stderr():
    with pytest.raises(MechanismError, match="exited with status 3; stderr: fixture mechanism: deliberate failure"):
        sample_mechanism(_command("die", timeout=30), _batch(m=1), 0)


@pytest.mark.integration
def test_external_command_that_prints_garbage():
    with pytest.raises(MechanismError, match="not numbers for database 0: 'this is not a number'"):
        sample_mechanism(_command("garbage", timeout=30), _batch(m=1), 0)


@pytest.mark.integration
def test_external_command_wrong_line_count():
    with pytest.raises(MechanismError, match="printed 3 non-empty lines for 4 databases"):
        sample_mechanism(_command("short", timeout=30), _batch(m=4), 0, locate=False)


@pytest.mark.integration
def test_external_command_missing_program_and_bad_arguments():
    with pytest.raises(MechanismError, match="could not be started"):
        sample_mechanism(ExternalCommandMechanism(("/nonexistent/program-xyz",)), _batch(), 0, locate=False)
    with pytest.raises(InputError, match="'command'"):
        ExternalCommandMechanism("python mech.py")
    with pytest.raises(InputError, match="'timeout'"):
        _command("sum", timeout=0)
    with pytest.raises(InputError, match="'wire'"):
        _command("sum", wire="json")


@pytest.mark.integration
def test_external_npy_garbage_is_reported():
    with pytest.raises(MechanismError, match="valid .npy"):
        mech = ExternalCommandMechanism((sys.executable, "-c", "print('hello')"), wire="npy", timeout=30)
        sample_mechanism(mech, _batch(m=1), 0)


# ---------------------------------------------------------------- optional libraries


def test_opendp_measurement_adapter():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    # A Laplace measurement of scale ~0 would be a degenerate test; use a deterministic
    # property instead: the clamped sum plus noise has the measurement's known mean.
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    measurement = space >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum() >> dp.m.then_laplace(0.05)
    dbs = np.full((400, 3, 1), 0.25)
    dbs[:, 0, 0] = 2.0  # clamped to 1.0, so the true sum is 1.5
    out = sample_mechanism(opendp_mechanism(measurement), dbs, 0)
    assert out.shape == (400, 1)
    # Laplace(b) has standard deviation b*sqrt(2); the mean of 400 is within 5 sd of 1.5.
    assert abs(out.mean() - 1.5) < 5 * 0.05 * np.sqrt(2) / np.sqrt(400)
    assert out.std() > 0


def test_opendp_adapter_rejects_non_measurements_and_multi_attribute_default():
    dp = pytest.importorskip("opendp.prelude")
    with pytest.raises(InputError, match="'measurement'"):
        opendp_mechanism(lambda x: x)
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    measurement = space >> dp.t.then_clamp((0.0, 1.0)) >> dp.t.then_sum() >> dp.m.then_laplace(1.0)
    with pytest.raises(MechanismError, match=r"database 0.*shape \(3, 2\).*\[mechanism\] query"):
        sample_mechanism(opendp_mechanism(measurement), _batch(k=2), 0)


def test_diffprivlib_adapter_is_seeded_and_unbiased():
    mechanisms = pytest.importorskip("diffprivlib.mechanisms", exc_type=ImportError)
    mech = diffprivlib_mechanism(mechanisms.Laplace, {"epsilon": 1.0, "sensitivity": 0.1},
                                 lambda db: db.mean(axis=0))
    dbs = np.ones((300, 4, 2))
    first = sample_mechanism(mech, dbs, 3)
    np.testing.assert_array_equal(first, sample_mechanism(mech, dbs, 3))
    # Laplace scale b = sensitivity / epsilon = 0.1, sd = 0.1*sqrt(2); mean of 600 values.
    assert abs(first.mean() - 1.0) < 5 * 0.1 * np.sqrt(2) / np.sqrt(600)
    with pytest.raises(InputError, match="'params'"):
        diffprivlib_mechanism(mechanisms.Laplace, {"epsilon": -1.0, "sensitivity": 1.0}, lambda db: db[0])


def test_missing_optional_dependency_gives_install_hint(monkeypatch):
    # Simulate an absent extra: a None entry in sys.modules makes its import fail.
    monkeypatch.setitem(sys.modules, "diffprivlib", None)
    monkeypatch.setitem(sys.modules, "diffprivlib.mechanisms", None)
    with pytest.raises(ImportError, match=r"miaudit\[diffprivlib\]"):
        diffprivlib_mechanism(object, {}, lambda db: db)


# ---------------------------------------------------------------- loading


def test_load_from_file_and_module():
    from_file = load_object(f"{FIXTURES / 'user_mechanism.py'}:column_sums", "--mechanism")
    dbs = _batch()
    np.testing.assert_array_equal(sample_mechanism(from_file, dbs, 0), dbs.sum(axis=1))
    from_module = load_object("mechanisms.adapters.callables:PerDatabaseMechanism")
    assert from_module is PerDatabaseMechanism
    dotted = load_object("numpy:random.default_rng")
    assert dotted is np.random.default_rng


@pytest.mark.parametrize("spec, message", [
    ("no_colon_here", "FILE.py:NAME or package.module:NAME"),
    ("file.py:", "FILE.py:NAME"),
    ("tests/fixtures/user_mechanism.py:1bad", "not a Python name"),
    ("/nonexistent/dir/mech.py:mech", "does not exist"),
    (f"{FIXTURES / 'user_mechanism.py'}:missing_name", "has no attribute 'missing_name'"),
    (f"{FIXTURES / 'user_mechanism.py'}:NOT_CALLABLE", "int, not callable"),
    (f"{FIXTURES / 'broken_mechanism.py'}:x", "RuntimeError: this fixture module cannot be imported"),
    ("no_such_package_xyz.module:NAME", "no module named 'no_such_package_xyz'"),
    ("mechanisms.adapters.callables:NoSuchThing", "has no attribute 'NoSuchThing'"),
    # A dotted name's missing attribute is named with what holds it, not the module alone.
    ("mechanisms.adapters.callables:PerDatabaseMechanism.nope",
     "'mechanisms.adapters.callables:PerDatabaseMechanism' has no attribute 'nope'"),
    # A second colon (a typo for a dotted name) is said to be one, not "no module named 'mech.py:f'".
    (f"{FIXTURES / 'user_mechanism.py'}:mech:extra", "holds more than one ':'"),
    ("mechanisms.adapters:callables:NAME", "holds more than one ':'"),
])
def test_loading_errors_name_the_spec(spec, message):
    with pytest.raises(InputError, match="--mechanism") as info:
        load_object(spec, "--mechanism")
    assert message in str(info.value)


def test_diffprivlib_adapter_contract_with_a_stand_in(monkeypatch):
    # diffprivlib may be absent or fail to import (it pins old scikit-learn); this checks
    # the adapter's side of the contract with a class of diffprivlib's interface:
    # constructor keywords plus random_state, and randomise(value) for one scalar.
    import types

    class StandInLaplace:
        def __init__(self, *, epsilon, sensitivity, random_state):
            if epsilon <= 0:
                raise ValueError("Epsilon must be positive")
            self.scale = sensitivity / epsilon
            self.rng = np.random.RandomState(random_state)

        def randomise(self, value):
            return value + self.rng.laplace(scale=self.scale)

    monkeypatch.setitem(sys.modules, "diffprivlib", types.ModuleType("diffprivlib"))
    monkeypatch.setitem(sys.modules, "diffprivlib.mechanisms", types.ModuleType("diffprivlib.mechanisms"))
    mech = diffprivlib_mechanism(StandInLaplace, {"epsilon": 2.0, "sensitivity": 1.0}, lambda db: db.sum(axis=0))
    dbs = _batch(m=3, n=2, k=2)
    out = sample_mechanism(mech, dbs, 9)
    # Independent recomputation: one seed per batch from the audit generator (one mechanism
    # serves the batch), then one Laplace(0.5) draw per released value, database by database.
    audit_rng = np.random.default_rng(9)
    noise = np.random.RandomState(int(audit_rng.integers(0, 2**32 - 1)))
    expected = [[v + noise.laplace(scale=0.5) for v in db.sum(axis=0)] for db in dbs]
    np.testing.assert_allclose(out, expected)
    with pytest.raises(InputError, match=r"'params' \(\[mechanism\] params\) rejected by StandInLaplace: Epsilon must be positive"):
        diffprivlib_mechanism(StandInLaplace, {"epsilon": 0.0, "sensitivity": 1.0}, lambda db: db)
    with pytest.raises(InputError, match="'random_state'"):
        diffprivlib_mechanism(StandInLaplace, {"epsilon": 1.0, "sensitivity": 1.0, "random_state": 1}, lambda db: db)


def test_a_failing_callable_with_a_wrapped_cycle_is_still_one_error_without_a_location():
    class Cyclic:
        def __call__(self, dbs, rng):
            raise ValueError("boom")

    cyclic = Cyclic()
    cyclic.__wrapped__ = cyclic  # inspect.unwrap raises ValueError on a cycle
    with pytest.raises(MechanismError) as info:
        sample_mechanism(cyclic, _batch(m=1), 0, name="cyclic")
    assert str(info.value).startswith("mechanism 'cyclic' raised ValueError on database 0: boom")


def test_a_file_whose_name_holds_a_colon_still_loads(tmp_path):
    source = tmp_path / "run:2.py"
    source.write_text("def mech(dbs, rng):\n    return dbs.sum(axis=1)\n")
    assert load_object(f"{source}:mech", "--mechanism").__name__ == "mech"
