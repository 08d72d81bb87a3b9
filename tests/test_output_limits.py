"""Outputs the encoder cannot take (mechanisms.outputs.limits): one error naming the part, its type and
what is accepted, never "mechanism raised X"; one bound on the parts of every structure, checked
before any part is encoded."""

from fractions import Fraction

import numpy as np
import pytest

from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.errors import MechanismError
from mechanisms.execution.runner import MechanismRunner
from mechanisms.outputs.encoding import OutputEncoder, output_features
from mechanisms.outputs.limits import MAX_DEPTH, MAX_ELEMENTS, OutputNotEncodable, check_output_limits


class SelfModel:
    """A fitted-model stand-in whose fitted attribute is the model itself."""

    def fit(self):
        return self


class RaisingAttributes:
    """An object whose every missing attribute raises something other than AttributeError."""

    def __getattr__(self, name):
        if name.startswith("__"):  # pytest's and pickle's questions
            raise AttributeError(name)
        raise RuntimeError(f"no {name} here")


def _self_model():
    model = SelfModel()
    model.self_ = model
    return model


def _recursive_dict():
    output = {"a": 1.0}
    output["me"] = output
    return output


def _nested(depth):
    output = 1.0
    for _ in range(depth):
        output = [output]
    return output


# (output, the place the error names, words of its type, words of the reason)
HOSTILE = [
    (1 + 2j, "y", "a complex", "real and imaginary"),
    ({"z": np.complex128(1j)}, "y{'z'}", "a complex128", "real and imaginary"),
    (np.array([1 + 1j, 2.0]), "y", "dtype complex128", "real and imaginary"),
    (10**400, "y", "an int", "401 digits"),
    ((1.0, [10**400]), "y.1[0]", "an int", "401 digits"),
    (_self_model(), "y.self_", "a SelfModel", "contains itself"),
    (_recursive_dict(), "y{'me'}", "a dict", "contains itself"),
    (_nested(5000), "[0][0]", "a list", f"more than the {MAX_DEPTH}"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "y", "dtype datetime64[D]", "dates and durations"),
    ({"when": np.timedelta64(3, "s")}, "y{'when'}", "a timedelta64", "dates and durations"),
    (RaisingAttributes(), "y", "a RaisingAttributes", "RuntimeError: no fit here"),
    ({"w": object()}, "y{'w'}", "an object", "none of the accepted kinds"),
]


IDS = ["complex", "complex128", "complex-array", "huge-int", "huge-int-in-list", "self-model", "recursive-dict",
       "deep", "datetime64-array", "timedelta64", "raising-getattr", "object"]


@pytest.mark.parametrize("output, place, kind, reason", HOSTILE, ids=IDS)
def test_an_output_the_encoder_cannot_take_is_named_with_its_place_type_and_what_is_accepted(output, place, kind,
                                                                                             reason):
    with pytest.raises(OutputNotEncodable) as raised:
        output_features(output)
    assert place in raised.value.place and kind in raised.value.kind and reason in str(raised.value)
    assert "accepted: real numbers" in str(raised.value)


@pytest.mark.parametrize("output, place, kind, reason", HOSTILE, ids=IDS)
def test_a_mechanism_whose_output_is_not_encodable_is_not_said_to_have_raised(output, place, kind, reason):
    mechanism = PerDatabaseMechanism(lambda db, rng: output, "hostile", encoder=OutputEncoder(4))
    with MechanismRunner(mechanism, "hostile") as runner, pytest.raises(MechanismError) as raised:
        runner.sample(np.zeros((3, 2, 1)), np.random.default_rng(0))
    message = str(raised.value)
    assert "returned an output that is not encodable on database 0" in message
    assert kind in message and reason in message and "raised " + kind not in message
    assert "\n" not in message and len(message) < 1000


def test_the_error_crosses_processes_whole():
    import pickle

    error = OutputNotEncodable("y{'a'}", "a complex", "why")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.place, copy.kind, copy.reason, str(copy)) == (error.place, error.kind, error.reason, str(error))


class CountingSet(set):
    """A set that counts how often it is read element by element."""

    reads = 0

    def __iter__(self):
        CountingSet.reads += 1
        return super().__iter__()


def test_every_structure_has_one_bound_checked_before_any_part_is_read():
    CountingSet.reads = 0
    with pytest.raises(OutputNotEncodable, match=f"a CountingSet of {MAX_ELEMENTS + 1:,} parts"):
        output_features({"keys": CountingSet(range(MAX_ELEMENTS + 1))})
    assert CountingSet.reads == 0  # refused from its length: not one key encoded
    with pytest.raises(OutputNotEncodable, match="y.*a dict of"):
        output_features({i: 1.0 for i in range(MAX_ELEMENTS + 1)})
    # The bound is on the whole output: two arrays of 60,000 entries hold 120,002 parts with the tuple's two.
    with pytest.raises(OutputNotEncodable, match=r"y\.1 is an array of 60,000 parts"):
        output_features((np.zeros(60_000), np.zeros(60_000)))
    # At the bound: 2 tuple positions + 99,998 entries of an array.
    check_output_limits((np.zeros(MAX_ELEMENTS - 2), None))


def test_an_output_at_the_bound_is_encoded():
    features = output_features(set(range(MAX_ELEMENTS)))
    assert len(features) == MAX_ELEMENTS + 1  # its keys and its length


def test_shared_parts_are_not_a_cycle():
    shared = np.arange(3.0)
    assert output_features((shared, shared)) == output_features((np.arange(3.0), np.arange(3.0)))


@pytest.mark.parametrize("output", [True, np.bool_(False), Fraction(1, 2), {"released": True}, [False, True]])
def test_real_numbers_that_are_not_floats_are_encodable(output):
    # bool and Fraction are numbers.Complex too; they are real, so no part of them is dropped (OpenDP's
    # make_randomized_response_bool releases a Python bool); a Fraction float64 does not hold, 1/3, is refused
    # (tests/test_inexact_reals.py).
    check_output_limits(output)
    features = output_features(output)
    assert all(np.isfinite(v) for v in features.values())


# 2**53 + 1 is the first integer binary64 cannot hold: it rounds to 2**53 (ties to even), and 2**64 + 5 to 2**64. Each
# is kept whole: its float64 and the remainder (written here from the rounding rule, not read from the encoder).
@pytest.mark.parametrize("output, name, double, rest", [
    (2**53 + 1, "y", 2.0**53, 1),
    (-(2**53) - 1, "y", -(2.0**53), -1),
    (2**64 + 5, "y", 2.0**64, 5),
    (np.int64(2**62 + 1), "y", 2.0**62, 1),
    (np.uint64(2**64 - 1), "y", 2.0**64, -1),
    (np.array([[3, 2**62 + 1]]), "y[0,1]", 2.0**62, 1),
    ({"total": [0.5, 2**60 + 1]}, "y{'total'}[1]", 2.0**60, 1),
    # Spacing 1024 between 2**62 and 2**63: the nearest multiple is 8210111628919880 * 1024 = ...7120 = ...789 + 331.
    ((0.5, 8407154308013956789), "y.1", 8210111628919880 * 1024.0, -331),
], ids=["2**53+1", "negative", "2**64+5", "int64", "uint64", "int-array", "mixed-list", "hash-seed"])
def test_an_integer_float64_would_round_is_kept_whole_as_its_float64_and_remainder(output, name, double, rest):
    check_output_limits(output)
    features = output_features(output)
    assert features[name] == double and features[f"{name}.rest"] == float(rest)
    assert int(features[name]) + int(features[f"{name}.rest"]) == int(double) + rest


def test_an_integer_beyond_2_106_that_float64_does_not_hold_is_refused():
    # Its remainder over its float64 may need more bits than a float64 holds: refused, the digits named.
    with pytest.raises(OutputNotEncodable) as raised:
        output_features(2**110 + 1)
    assert raised.value.place == "y" and "1298074214633706907132624082305025 is beyond 2**53" in str(raised.value)


@pytest.mark.parametrize("output, value", [(2**53, 2.0**53), (2**64, 2.0**64), (-(2**70), -(2.0**70)),
                                            (np.uint64(2**63), 2.0**63)])
def test_an_integer_beyond_2_53_that_float64_holds_exactly_is_encoded(output, value):
    # Beyond 2**53 every integer has a remainder feature, 0 for these: present whether or not the float64 is exact.
    assert output_features(output) == ({"y": value} if abs(value) <= 2.0**53 else {"y": value, "y.rest": 0.0})


def test_a_set_of_large_integer_keys_is_encoded_by_their_digits():
    features = output_features({2**64 + 5, 2**64 + 6})
    assert features == {"y.len": 2.0, "y{18446744073709551621}": 1.0, "y{18446744073709551622}": 1.0}


def test_a_batched_output_of_integers_float64_would_round_names_the_database():
    from mechanisms.base import check_batch_output

    for values in ([[1], [2**64 + 5]], np.array([[7], [2**62 + 1]], dtype=np.int64), [[0.5], [2**62 + 1]]):
        with pytest.raises(MechanismError, match=r"database 1: \d+ is beyond 2\*\*53.*--per-database") as raised:
            check_batch_output(values, 2, "mechanism 'm'")
        assert raised.value.database_index == 1
    exact = check_batch_output(np.array([[2**53], [-(2**53)]], dtype=np.int64), 2, "mechanism 'm'")
    assert exact.tolist() == [[2.0**53], [-(2.0**53)]]


def test_a_deterministic_release_above_a_large_offset_is_encoded_whole_not_as_a_constant():
    # 2**64 + the count: every neighbouring pair's outputs differ, yet both would read as 2**64 in float64 alone;
    # the remainders (the counts 0..2 here, below float64's spacing of 4096 there) tell them apart.
    mechanism = PerDatabaseMechanism(lambda db, rng: 2**64 + int(db.sum()), "offset", encoder=OutputEncoder(4))
    dbs = np.stack([np.zeros((2, 1)), np.eye(2, 1), np.ones((2, 1))])
    with MechanismRunner(mechanism, "offset") as runner:
        rows = runner.sample(dbs, np.random.default_rng(0))
    assert len({tuple(row) for row in rows}) == 3
