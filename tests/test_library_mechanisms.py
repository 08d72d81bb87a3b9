"""OpenDP measurements, diffprivlib mechanisms and external programs as first-class mechanisms.

Recognition from ``FILE.py:NAME``, the claims the libraries bring (checked against closed forms
and against the library's own privacy map), the reproducibility notes, and errors that name the
library, the database and the fix.
"""

import math
import shutil
import sys
import types

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.adapters.callables import ExternalCommandMechanism
from mechanisms.base import MechanismError, sample_mechanism
from mechanisms.adapters.libraries import SMOOTHED_DELTA, DiffprivlibMechanism
from mechanisms.adapters.loading import load_object
from mechanisms.adapters.recognition import load_mechanism, recognize_mechanism

OPENDP_FILE = '''
import opendp.prelude as dp
from {helper} import SCALE

dp.enable_features("contrib")
space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=10), dp.symmetric_distance()
laplace_sum = space >> dp.t.then_sum() >> dp.m.then_laplace(SCALE)
gaussian_sum = space >> dp.t.then_sum() >> dp.m.then_gaussian(1.0)
approx_sum = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gaussian_sum), 1e-6)
smoothed_sum = dp.c.make_zCDP_to_approxDP(gaussian_sum)
change_one = (dp.t.make_metric_unbounded(dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0), nan=False), size=10),
                                         dp.change_one_distance())
              >> dp.t.then_sum() >> dp.m.then_laplace(SCALE))
int_space = dp.vector_domain(dp.atom_domain(bounds=(0, 1)), size=10), dp.symmetric_distance()
int_sum = int_space >> dp.t.then_sum() >> dp.m.then_laplace(1.0)
scalar = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 0.5)
only_sum = space >> dp.t.then_sum()
'''


@pytest.fixture
def opendp_file(tmp_path):
    pytest.importorskip("opendp.prelude")
    # A module beside the file, under a name unique to this test (sys.modules caches by name).
    helper = f"helper_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{helper}.py").write_text("SCALE = 2.0\n")
    (tmp_path / "measurements.py").write_text(OPENDP_FILE.format(helper=helper))
    return tmp_path / "measurements.py"


def _load(path, name, **keys):
    return load_mechanism({"spec": f"{path}:{name}", **keys})


# ---------------------------------------------------------------- OpenDP: recognition and claims


def test_opendp_measurement_in_a_file_is_recognized_and_imports_its_neighbour(opendp_file):
    loaded = _load(opendp_file, "laplace_sum")
    assert loaded.library == "OpenDP"
    dbs = np.full((300, 10, 1), 0.5)
    out = sample_mechanism(loaded.mechanism, dbs, 0)
    # Sum 5 plus Laplace(b = 2): the mean of 300 is within 5 standard errors (sd b√2).
    assert out.shape == (300, 1)
    assert abs(out.mean() - 5.0) < 5 * 2.0 * math.sqrt(2) / math.sqrt(300)


@pytest.mark.parametrize("name, notion, closed_form", [
    # Sum over a sized domain in [0, 1]: replacing a record moves it by at most 1, so
    # Laplace(b) is 1/b-DP (Dwork et al. 2006) and Gaussian(σ) is 1/(2σ²)-zCDP (Bun & Steinke 2016, Prop. 1.6).
    ("laplace_sum", "dp", (1 / 2.0,)),
    ("gaussian_sum", "zcdp", (1 / (2 * 1.0**2),)),
    ("change_one", "dp", (1 / 2.0,)),
])
def test_opendp_claim_is_the_map_at_the_replace_one_distance(opendp_file, name, notion, closed_form):
    loaded = _load(opendp_file, name)
    assert loaded.claim.notion == notion
    np.testing.assert_allclose(loaded.claim.parameters, closed_form, rtol=1e-9)
    measurement = load_object(f"{opendp_file}:{name}", require_callable=False)
    # The library's own map at the relation's distance: symmetric distance 2, change-one 1.
    d_in = 1 if name == "change_one" else 2
    assert loaded.claim.parameters == (float(measurement.map(d_in)),)
    assert "privacy map at d_in = " + str(d_in) in loaded.claim_note


def test_opendp_approximate_and_smoothed_claims(opendp_file):
    approx = _load(opendp_file, "approx_sum")
    measurement = load_object(f"{opendp_file}:approx_sum", require_callable=False)
    epsilon, delta = measurement.map(2)
    assert approx.claim.notion == "dp" and approx.claim.parameters == (epsilon, delta) and delta == 1e-6
    smoothed = _load(opendp_file, "smoothed_sum")
    profile = load_object(f"{opendp_file}:smoothed_sum", require_callable=False).map(2)
    assert smoothed.claim.parameters == (profile.epsilon(SMOOTHED_DELTA), SMOOTHED_DELTA)
    at = _load(opendp_file, "smoothed_sum", delta=1e-3)
    assert at.claim.parameters == (profile.epsilon(1e-3), 1e-3)
    # The profile of ρ-zCDP at δ: ε = ρ + 2√(ρ log(1/δ)) is an upper bound (Bun & Steinke 2016,
    # Prop. 1.3), so OpenDP's tighter conversion lies below it.
    rho = 0.5
    assert smoothed.claim.parameters[0] <= rho + 2 * math.sqrt(rho * math.log(1 / SMOOTHED_DELTA))


def test_opendp_aggregate_claim_needs_the_declared_sensitivity(opendp_file):
    without = _load(opendp_file, "scalar")
    assert without.claim is None
    assert "[mechanism] sensitivity" in without.claim_note
    declared = _load(opendp_file, "scalar", sensitivity=1.0)
    # Laplace of scale 0.5 on a value that moves by 1: ε = 1 / 0.5.
    assert declared.claim.notion == "dp" and declared.claim.parameters == pytest.approx((2.0,))
    # One-record databases: the record itself is the released value.
    out = sample_mechanism(declared.mechanism, np.full((5, 1, 1), 3.0), 0)
    assert out.shape == (5, 1)


def test_opendp_runs_are_reported_as_unseeded(opendp_file):
    loaded = _load(opendp_file, "laplace_sum")
    assert any("takes no seed" in note and "still seeded" in note for note in loaded.notes)
    dbs = np.zeros((50, 10, 1))
    first, second = (sample_mechanism(loaded.mechanism, dbs, 7) for _ in range(2))
    assert not np.array_equal(first, second)  # OpenDP's own CSPRNG ignores the seed


def test_opendp_integer_measurement_converts_integral_data_and_hints_otherwise(opendp_file):
    loaded = _load(opendp_file, "int_sum")
    dbs = np.random.default_rng(0).integers(0, 2, (20, 10, 1)).astype(float)
    assert sample_mechanism(loaded.mechanism, dbs, 0).shape == (20, 1)
    dbs[3, 4, 0] = 0.25
    with pytest.raises(MechanismError, match=r"OpenDP.*Vec<i32>.*database 3.*type conversion") as info:
        sample_mechanism(loaded.mechanism, dbs, 0)
    assert info.value.database_index == 3
    assert "Measurement.__call__" not in str(info.value)


def test_opendp_failures_name_library_database_and_fix(opendp_file):
    measurement = load_object(f"{opendp_file}:laplace_sum", require_callable=False)

    def query(db):
        if db[0, 0] > 0.5:
            raise ValueError("no")
        return db[:, 0].tolist()

    wrapped = recognize_mechanism(measurement, "m", query=query).mechanism
    dbs = np.zeros((4, 10, 1))
    dbs[2, 0, 0] = 1.0
    with pytest.raises(MechanismError, match=r"OpenDP query of m failed on database 2.*Likely fix"):
        wrapped(dbs, np.random.default_rng(0))
    wrong_type = recognize_mechanism(measurement, "m", query=lambda db: [bool(v) for v in db[:, 0]]).mechanism
    with pytest.raises(MechanismError, match=r"OpenDP m failed on database 0.*Likely fix: type conversion"):
        wrong_type(dbs, np.random.default_rng(0))


def test_opendp_transformation_and_misplaced_keys_are_refused(opendp_file):
    with pytest.raises(InputError, match="Transformation, which adds no noise"):
        _load(opendp_file, "only_sum")
    with pytest.raises(InputError, match=r"\[mechanism\] params do\(es\) not apply to an OpenDP measurement"):
        _load(opendp_file, "laplace_sum", params={"epsilon": 1.0})


# ---------------------------------------------------------------- diffprivlib


class _StandInLaplace:
    """diffprivlib's interface (DPMechanism keeps its generator in ``_rng``), without diffprivlib."""

    built = 0

    def __init__(self, *, epsilon, delta=0.0, sensitivity, random_state=None):
        type(self).built += 1
        self.epsilon, self.delta, self.sensitivity = epsilon, delta, sensitivity
        self.random_state = random_state
        self._rng = np.random.RandomState(random_state)

    def randomise(self, value):
        return value + self._rng.laplace(scale=self.sensitivity / self.epsilon)


def test_diffprivlib_object_is_recognized_seeded_and_brings_its_claim():
    loaded = recognize_mechanism(_StandInLaplace(epsilon=2.0, sensitivity=1.0), "obj")
    assert loaded.library == "diffprivlib"
    assert loaded.claim.notion == "dp" and loaded.claim.parameters == (2.0,)
    assert "sensitivity=1" in loaded.claim.source
    assert not any("takes no seed" in note for note in loaded.notes)
    dbs = np.random.default_rng(1).random((6, 3, 2))
    out = sample_mechanism(loaded.mechanism, dbs, 4)
    np.testing.assert_array_equal(out, sample_mechanism(loaded.mechanism, dbs, 4))
    # Independent recomputation: the audit's generator gives one seed per batch; the copy's
    # generator then draws Laplace(1/2) for each attribute sum, database by database.
    seed = int(np.random.default_rng(4).integers(0, 2**32 - 1))
    noise = np.random.RandomState(seed)
    expected = [[v + noise.laplace(scale=0.5) for v in db.sum(axis=0)] for db in dbs]
    np.testing.assert_allclose(out, expected)


def test_diffprivlib_class_builds_one_mechanism_per_batch():
    _StandInLaplace.built = 0
    loaded = recognize_mechanism(_StandInLaplace, "cls", params={"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0})
    assert loaded.claim.parameters == (1.0, 1e-5)
    before = _StandInLaplace.built
    sample_mechanism(loaded.mechanism, np.zeros((500, 2, 1)), 0)
    assert _StandInLaplace.built - before == 1
    with pytest.raises(InputError, match="'random_state'"):
        recognize_mechanism(_StandInLaplace, "cls", params={"epsilon": 1.0, "sensitivity": 1.0, "random_state": 3})


def test_randomise_object_without_a_replaceable_generator_is_reported_as_unseeded():
    class OwnGenerator:
        epsilon = 1.0

        def randomise(self, value):
            return value + np.random.default_rng().laplace()

    loaded = recognize_mechanism(OwnGenerator(), "own")
    assert any("diffprivlib draws its noise from its own generator and takes no seed" in note for note in loaded.notes)


def test_diffprivlib_failures_name_library_database_and_fix():
    class Integers(_StandInLaplace):
        def randomise(self, value):
            if not isinstance(value, int):
                raise TypeError("Value to be randomised must be an integer")
            return value

    wrapped = DiffprivlibMechanism(Integers(epsilon=1.0, sensitivity=1.0), name="geo")
    dbs = np.ones((3, 2, 1))
    assert wrapped(dbs, np.random.default_rng(0)).tolist() == [[2.0]] * 3
    dbs[1, 0, 0] = 0.5
    with pytest.raises(MechanismError, match=r"diffprivlib Integers failed on database 1.*type conversion") as info:
        wrapped(dbs, np.random.default_rng(0))
    assert info.value.database_index == 1


def test_real_diffprivlib_laplace_matches_its_own_epsilon_and_reproduces():
    mechanisms = pytest.importorskip("diffprivlib.mechanisms", exc_type=ImportError)
    laplace = mechanisms.Laplace(epsilon=0.5, sensitivity=1.0)
    loaded = recognize_mechanism(laplace, "laplace")
    assert loaded.claim.parameters == (laplace.epsilon,)
    dbs = np.full((400, 4, 1), 0.25)
    out = sample_mechanism(loaded.mechanism, dbs, 2)
    np.testing.assert_array_equal(out, sample_mechanism(loaded.mechanism, dbs, 2))
    assert abs(out.mean() - 1.0) < 5 * 2.0 * math.sqrt(2) / math.sqrt(400)
    gaussian = recognize_mechanism(mechanisms.Gaussian, "g", params={"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0})
    assert gaussian.claim.parameters == (0.5, 1e-5)


def test_diffprivlib_import_error_says_what_fixes_it(monkeypatch):
    from mechanisms.adapters.libraries import import_diffprivlib

    broken = types.ModuleType("diffprivlib")
    monkeypatch.setitem(sys.modules, "diffprivlib.mechanisms", None)
    monkeypatch.setitem(sys.modules, "diffprivlib", broken)
    with pytest.raises(ImportError, match=r"miaudit\[diffprivlib\]"):
        import_diffprivlib()

    def fail(name, *args, **kwargs):
        raise ImportError("cannot import name 'DOUBLE' from 'sklearn.tree._tree'")

    monkeypatch.setattr("importlib.import_module", fail)
    with pytest.raises(ImportError, match=r"pip install 'scikit-learn<1.9'"):
        import_diffprivlib()


# ---------------------------------------------------------------- plain callables and programs


def test_batched_callable_passes_through_and_unknown_objects_are_refused(tmp_path):
    (tmp_path / "plain.py").write_text("def mech(dbs, rng):\n    return dbs.sum(axis=1)\nVALUE = 3\n")
    loaded = load_mechanism({"spec": f"{tmp_path / 'plain.py'}:mech"})
    assert loaded.library is None and loaded.claim is None and loaded.notes == () and loaded.claim_note == ""
    with pytest.raises(InputError, match="is a int: expected a batched callable"):
        load_mechanism({"spec": f"{tmp_path / 'plain.py'}:VALUE"})
    with pytest.raises(InputError, match=r"\[mechanism\] sensitivity do\(es\) not apply to a batched callable"):
        load_mechanism({"spec": f"{tmp_path / 'plain.py'}:mech", "sensitivity": 1.0})


@pytest.mark.parametrize("table, message", [
    ({}, "exactly one of spec"),
    ({"spec": "a.py:b", "command": "sh x"}, "exactly one of spec"),
    ({"command": "sh x", "query": "q.py:q"}, "do not apply|do\\(es\\) not apply to an external program"),
    ({"spec": "a.py:b", "wire": "npy"}, "wire \\(--wire\\) applies to --command only"),
    ({"command": "sh x", "wire": "json"}, "wire \\(--wire\\) must be one of text, npy"),
    ({"command": "sh x", "timeout": 0}, "timeout \\(--timeout\\) must be"),
    ({"command": "'unclosed"}, "cannot be split"),
    ({"spec": "a.py:b", "colour": 1}, "unknown key\\(s\\) in \\[mechanism\\]: colour"),
])
def test_mechanism_table_errors_name_the_key(table, message):
    with pytest.raises(InputError, match=message):
        load_mechanism(table)


AWK_LAPLACE = r"""#!/bin/sh
# Laplace mechanism on each database's sum, in awk: mech.sh EPSILON SENSITIVITY
exec awk -v eps="$1" -v sens="$2" '
BEGIN { srand(ENVIRON["MIAUDIT_SEED"] + 0); b = sens / eps }
NR == 1 { next }
{
  s = 0; for (i = 1; i <= NF; i++) s += $i
  do u = rand(); while (u == 0)
  u -= 0.5
  printf "%.17g\n", (u < 0) ? s + b * log(1 + 2 * u) : s - b * log(1 - 2 * u)
}'
"""


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("awk") is None, reason="needs awk")
def test_external_awk_program_is_seeded_by_the_audit(tmp_path):
    (tmp_path / "mech.sh").write_text(AWK_LAPLACE)
    loaded = load_mechanism({"command": f"sh {tmp_path / 'mech.sh'} 1 1", "timeout": 30})
    assert loaded.library == "external program" and "MIAUDIT_SEED" in loaded.notes[0]
    dbs = np.random.default_rng(0).integers(0, 2, (2000, 5, 1)).astype(float)
    out = sample_mechanism(loaded.mechanism, dbs, 3)
    np.testing.assert_array_equal(out, sample_mechanism(loaded.mechanism, dbs, 3))
    assert not np.array_equal(out, sample_mechanism(loaded.mechanism, dbs, 4))
    noise = out[:, 0] - dbs.sum(axis=(1, 2))
    # Laplace(1): mean 0 and variance 2, within 5 standard errors (Var of the sample variance
    # of Laplace(1) is (24 - 4)/n).
    assert abs(noise.mean()) < 5 * math.sqrt(2 / 2000)
    assert abs(noise.var() - 2.0) < 5 * math.sqrt(20 / 2000)


@pytest.mark.integration
def test_external_command_seed_fits_in_31_bits():
    # awk and other languages read MIAUDIT_SEED as a double or a 32-bit int: it must stay exact.
    mech = ExternalCommandMechanism((sys.executable, "-c",
                                     "import os,sys; sys.stdin.read(); print(os.environ['MIAUDIT_SEED'])"))
    seeds = [int(mech(np.zeros((1, 1, 1)), np.random.default_rng(s))[0, 0]) for s in range(20)]
    assert all(0 <= seed < 2**31 for seed in seeds) and len(set(seeds)) == 20


# ---------------------------------------------------------------- the overhead benchmark


@pytest.mark.integration
def test_library_overhead_benchmark_measures_every_route(monkeypatch):
    from experiments import library_overhead

    # An absent optional library is recorded, not fatal.
    monkeypatch.setattr(library_overhead, "_diffprivlib_routes", lambda: None)
    rows = library_overhead.measure((20,), repeats=1, seed=0)
    by_route = {row["route"]: row for row in rows}
    assert set(by_route) == {"numpy batched", "opendp", "diffprivlib", "diffprivlib per-database build",
                             "external awk (text)"}
    assert by_route["diffprivlib"]["status"] == "not installed"
    assert math.isnan(by_route["diffprivlib"]["seconds_per_database"])
    measured = [row for row in rows if row["status"] == "ok"]
    assert by_route["numpy batched"] in measured
    for row in measured:
        assert row["seconds_per_database"] > 0
    findings = library_overhead._findings(rows)
    assert any("not installed" in line for line in findings)
