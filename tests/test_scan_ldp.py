"""Scans of local randomizers: the tuple family, the pure-ldp and multi-freq-ldpy profiles.

The families' grids, calls and pairs are checked on small stand-ins (no library needed); the planted tuple
randomizers (tests/planted_lib/_tuples.py) are scanned end to end against their exact laws, enumerated here;
the profiles are read from the installed libraries where they are installed (pytest.importorskip).
"""

from __future__ import annotations

import itertools
import math
import sys
import types

import numpy as np
import pytest

from audit.scan.cases import EntryPoint, build_cases, discover, pairs_for
from audit.scan.profiles import LIBRARIES, profile_for
from audit.scan.profiles.base import (Expression, LocalRandomizer, OptionalArgument, Profile, TupleRandomizer,
                                      _public_function)
from audit.scan.running import audit_case, scan

EPSILON = 1.0


def tuple_client(input_tuple, lst_k, d, epsilon, optimal=True):
    return tuple(input_tuple)


def longitudinal_client(input_data, k, eps_perm, eps_1):
    return input_data


def pure_client(input_data, k, epsilon):
    return input_data


def test_a_tuple_randomizer_is_called_on_one_record_and_paired_on_every_attribute_and_on_one():
    family = TupleRandomizer(fixed={"lst_k": [4, 4], "d": 2}, bounds=(0.0, 3.0),
                             optional=(OptionalArgument("optimal", (None, False)),))
    assert family.matches(tuple_client) and not family.matches(pure_client)
    grid = family.settings(tuple_client, (1.0,))
    assert grid == [{"lst_k": [4, 4], "d": 2, "epsilon": 1.0}, {"lst_k": [4, 4], "d": 2, "epsilon": 1.0, "optimal": False}]
    source = family.call_source(tuple_client, grid[0])
    assert source == "entry(tuple(int(v) for v in db[0]), lst_k=[4, 4], d=2, epsilon=1.0)"
    function = eval(compile(f"lambda db, rng: {source}", "<test>", "eval"), {"entry": tuple_client, "np": np})
    assert function(np.array([[3.0, 0.0]]), None) == (3, 0)
    pairs = {p.family: p for p in pairs_for(EntryPoint("m", "tuple_client", tuple_client, family), grid[0])}
    assert set(pairs) == {"ends", "one attribute"}
    np.testing.assert_array_equal(pairs["ends"].first, [[0.0, 0.0]])
    np.testing.assert_array_equal(pairs["ends"].second, [[3.0, 3.0]])
    np.testing.assert_array_equal(pairs["one attribute"].second, [[3.0, 0.0]])


def test_a_longitudinal_claim_is_its_single_report_with_the_permanent_budget_a_multiple_of_it():
    family = LocalRandomizer(epsilon_name="eps_1", requires=("eps_1",), scaled={"eps_perm": 2.0}, fixed={"k": 4},
                             value_names=("input_data",), value_source="int(db[0, 0])")
    assert family.matches(longitudinal_client) and not family.matches(pure_client)
    grid = family.settings(longitudinal_client, (0.1, 4.0))
    assert grid == [{"k": 4, "eps_1": 0.1, "eps_perm": 0.2}, {"k": 4, "eps_1": 4.0, "eps_perm": 8.0}]
    assert family.claim(longitudinal_client, grid[1]) == "dp:4.0"
    assert family.call_source(longitudinal_client, grid[0]) == "entry(int(db[0, 0]), k=4, eps_1=0.1, eps_perm=0.2)"


def test_an_expression_is_written_as_source_and_compiled_functions_are_entry_points(monkeypatch):
    assert repr(Expression("np.arange(4)")) == "np.arange(4)"

    class Dispatcher:  # the shape of Numba's @jit: a callable wrapping its Python function as py_func
        def __init__(self, function):
            self.py_func, self.__name__, self.__module__ = function, function.__name__, "jitted_lib"
            self.__wrapped__ = function  # inspect.signature reads the wrapped function's parameters

        def __call__(self, *args):
            return self.py_func(*args)

    module = types.ModuleType("jitted_lib")
    module.GRR_Client = Dispatcher(pure_client)
    monkeypatch.setitem(sys.modules, "jitted_lib", module)
    assert _public_function(module.GRR_Client) and not _public_function(Dispatcher)
    profile = Profile("jitted", ("jitted_lib",), (LocalRandomizer(value_names=("input_data",), fixed={"k": 4}),))
    entries, skipped = discover(profile)
    assert [e.name for e in entries] == ["GRR_Client"] and not skipped
    cases, _ = build_cases(entries, (1.0,))
    assert cases[0].source == "entry(float(db[0, 0]), k=4, epsilon=1.0)"


def test_the_profiles_are_listed_and_read_without_their_libraries():
    from audit.scan.profiles.multi_freq_ldpy import SERVERS
    from audit.scan.profiles.pure_ldp import RapporClient

    assert {"pure-ldp", "multi-freq-ldpy"} <= set(LIBRARIES)
    assert profile_for("pure-ldp").distribution == "pure-ldp"
    multi = profile_for("multi-freq-ldpy")
    assert "multi_freq_ldpy.long_freq_est.L_GRR" in multi.modules and "SMP_L_GRR_Aggregator_MI" in SERVERS
    assert [type(f).__name__ for f in multi.families] == ["TupleRandomizer"] * 3 + ["LocalRandomizer"] * 3

    class Rappor:  # pure-ldp's RAPPORClient's signature and conversions (pure_ldp/frequency_oracles/rappor)
        def __init__(self, f, m, hash_funcs, num_of_cohorts=8, index_mapper=None):
            pass

        def privatise(self, data):
            return data

        def convert_eps_to_f(self, epsilon):
            return round(1 / (0.5 * math.exp(epsilon / 2) + 0.5), 2)

        def convert_f_to_eps(self, f, k):
            return math.log(((1 - 0.5 * f) / (0.5 * f)) ** (2 * k))

    family = next(f for f in profile_for("pure-ldp").families if isinstance(f, RapporClient))
    assert family.matches(Rappor)
    grid = family.settings(Rappor, (0.1, 1.0, 4.0))
    assert [point["f"] for point in grid if "num_of_cohorts" not in point] == [0.98, 0.76, 0.24]
    # f = 0.76: each of the 2k = 2 bits that differ flips with probability 0.38, log(0.62 / 0.38) apiece
    assert float(family.claim(Rappor, {"f": 0.76})[3:]) == pytest.approx(2 * math.log(0.62 / 0.38), rel=1e-12)


# --- the planted tuple randomizers, scanned end to end -------------------------------------------------------

def _response(bit, value, epsilon) -> float:
    keep = math.exp(epsilon) / (1 + math.exp(epsilon))
    return keep if value == bit else 1 - keep


def tuple_law(case_id: str, x) -> dict:
    """The exact law of the planted tuple randomizer named in ``case_id`` on the tuple ``x`` (d = 2)."""
    x, d = [int(v) for v in x], 2
    outputs = list(itertools.product((0, 1), repeat=d))
    if ".split_response(" in case_id:
        return {y: math.prod(_response(x[i], y[i], EPSILON / d) for i in range(d)) for y in outputs}
    if ".sampled_response(" in case_id:
        return {(j, b): _response(x[j], b, EPSILON) / d for j in range(d) for b in (0, 1)}
    if ".padded_response(" in case_id:
        amplified = math.log(d * (math.exp(EPSILON) - 1) + 1)
        return {y: sum(_response(x[j], y[j], amplified) * 0.5 ** (d - 1) for j in range(d)) / d for y in outputs}
    raise AssertionError(f"no exact law for {case_id}")


def exact_epsilon(first: dict, second: dict) -> float:
    return max(abs(math.log(first[y] / second[y])) for y in first)


def test_the_planted_tuple_randomizers_are_scanned_against_their_exact_laws(planted_on_path):
    result = scan("planted_lib._tuples", epsilons=(EPSILON,), max_runs=3000, timeout=30, seed=5, in_process=True)
    assert result.cases == 6 and not result.skipped and not result.skipped_cases
    assert {o["id"] for o in result.findings} == {"planted_lib._tuples.padded_response(epsilon=1.0) / ends"}
    for outcome in result.outcomes:
        true = exact_epsilon(tuple_law(outcome["id"], outcome["first"][0]), tuple_law(outcome["id"], outcome["second"][0]))
        if outcome["status"] == "finding":
            # every attribute moved: the amplified ε' = log(2(e − 1) + 1) = 1.490, above the claim
            assert true == pytest.approx(math.log(2 * (math.e - 1) + 1)) and true > EPSILON
            assert outcome["epsilon_lower_bound"] <= true
        else:
            assert true <= EPSILON + 1e-12, outcome["id"]


# --- the real libraries, where installed ---------------------------------------------------------------------

def test_the_pure_ldp_profile_reads_its_clients_and_finds_rappor_keeping_its_true_bits():
    pytest.importorskip("pure_ldp")
    pytest.importorskip("statsmodels")
    entries, skipped = discover(profile_for("pure-ldp"))
    names = {e.name for e in entries}
    assert {"DEClient", "UEClient", "HEClient", "LHClient", "RAPPORClient", "HadamardMechClient", "PEMClient"} <= names
    assert not skipped  # the servers are excluded: post-processing
    cases, unbuilt = build_cases(entries, (EPSILON,))
    assert not unbuilt
    by_id = {c.id: c for c in cases}
    rappor = next(c for c in cases if ".RAPPORClient(" in c.id and "num_of_cohorts=1" in c.id)
    from pure_ldp.frequency_oracles import RAPPORServer

    # the claim is the library's: the server's epsilon for f = 0.76 and k = 1 hash function
    assert float(rappor.claim[3:]) == pytest.approx(RAPPORServer(0.76, 16, 1, 4).epsilon)
    # RAPPOR's bits set by the item are never cleared (rappor_client.py's _perturb): ε = ∞
    outcome = audit_case(rappor, alpha=0.05, max_runs=3000, timeout=30, seed=1)
    assert outcome["status"] == "finding", outcome
    de = by_id["pure_ldp.frequency_oracles.DEClient(d=4, epsilon=1.0) / ends"]
    assert audit_case(de, alpha=0.05, max_runs=3000, timeout=30, seed=1)["status"] == "control"
    mech = next(c for c in cases if ".HadamardMechClient(" in c.id)
    assert set(mech.function()(mech.pair.first, np.random.default_rng(0))) <= {"list", "zip"}



def test_pure_ldp_sfp_client_reports_through_a_sketch_client_and_is_audited():
    """pure-ldp's SFPClient reads its frequency oracle's ``sketch_based`` and fails on its default, None."""
    pytest.importorskip("pure_ldp")
    pytest.importorskip("statsmodels")
    entries, _ = discover(profile_for("pure-ldp"))
    cases, unbuilt = build_cases([e for e in entries if e.name == "SFPClient"], (EPSILON,))
    assert not unbuilt and len(cases) == 1
    (sfp,) = cases
    assert "fo_client=__import__('pure_ldp.frequency_oracles').frequency_oracles.CMSClient(" in sfp.source
    word, fragment, position = sfp.function()(sfp.pair.second, np.random.default_rng(0))
    assert len(word[0]) == len(fragment[0]) == 16 and 0 <= position < 4  # two sketch reports of 16 cells
    outcome = audit_case(sfp, alpha=0.05, max_runs=1500, timeout=30, seed=1)
    assert outcome["status"] in ("control", "finding"), outcome.get("reason")

def test_the_multi_freq_ldpy_profile_reads_its_clients_and_their_claims():
    pytest.importorskip("multi_freq_ldpy")
    entries, skipped = discover(profile_for("multi-freq-ldpy"))
    assert not skipped  # the aggregators and helpers are excluded
    by_name = {e.name: e for e in entries}
    assert by_name["L_GRR_Client"].family.epsilon_name == "eps_1"
    assert by_name["dBitFlipPM_Client"].family.epsilon_name == "eps_perm"
    assert isinstance(by_name["RSpFD_GRR_Client"].family, TupleRandomizer)
    assert isinstance(by_name["GRR_Client"].family, LocalRandomizer)  # a Numba dispatcher
    cases, unbuilt = build_cases(entries, (EPSILON,))
    assert not unbuilt
    grr = next(c for c in cases if c.id == "multi_freq_ldpy.pure_frequency_oracles.GRR.GRR_Client(k=4, epsilon=1.0) / ends")
    assert grr.function()(grr.pair.second, None) in range(4)
    smp = next(c for c in cases if ".SMP_GRR_Client(" in c.id and c.pair.family == "one attribute")
    assert smp.claim == "dp:1.0" and smp.pair.second.tolist() == [[3.0, 0.0]]


def test_a_randomizer_miaudit_cannot_seed_is_noted_on_its_case_not_printed(tmp_path, recwarn):
    module = tmp_path / "unseeded_client.py"
    module.write_text("import math, random\n\n_SOURCE = random.SystemRandom()\n\n\n"
                      "def report(value, epsilon=1.0):\n"
                      "    keep = _SOURCE.random() < math.exp(epsilon) / (1 + math.exp(epsilon))\n"
                      "    return float(value if keep else 1 - value), _SOURCE.random()  # and a draw of no use\n",
                      encoding="utf-8")
    # The randomizer is exactly ε-DP and its draws cannot be seeded: a scan at α refutes it with probability up
    # to α, so the scan runs at α = 0.001 (this test then fails a correct miaudit with probability at most 0.001).
    result = scan(str(module), epsilons=(EPSILON,), alpha=0.001, max_runs=3000, timeout=30, in_process=True)
    outcome, = result.outcomes
    assert outcome["status"] == "control"
    assert any("cannot be reproduced from its seed" in note for note in outcome["notes"])
    assert not [w for w in recwarn if "cannot be reproduced" in str(w.message)]
