"""Real numbers that float64 does not hold exactly, refused where they enter (mechanisms/outputs/limits.py).

A longdouble ``1 + 2**-60 * secret``, a Decimal or a Fraction whose last digits hold the secret was read as the
float64 nearest to it, the same under both inputs, so that a function releasing the secret with no noise at all
passed a 1-DP audit (NOT-REFUTED). Such a number is refused in one line naming its place, its type, its digits and
the float64 it would have been read as, by the per-database encoder, a batched mechanism's output check and a
user's prior, through the one rule that refuses ints beyond 2**53 (``first_inexact_number``). A number float64
holds exactly (``Fraction(1, 2)``, ``Decimal('0.5')``, a longdouble 1) is encoded as that float64. The floats the
messages name are computed here from their binary64 significands (``math.ldexp``), not by the code under test.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.base import check_batch_output, sample_mechanism
from mechanisms.errors import MechanismError
from mechanisms.execution.runner import MechanismRunner
from mechanisms.inputs.user_priors import EmpiricalResample, UserPrior
from mechanisms.outputs.encoding import OutputEncoder, output_features
from mechanisms.outputs.limits import OutputNotEncodable, first_inexact_number

#: Whether numpy.longdouble has more than float64's 52 stored significand bits here (x86's 80-bit extended: 63).
EXTENDED = np.finfo(np.longdouble).nmant > 52
extended = pytest.mark.skipif(not EXTENDED, reason="numpy.longdouble is float64 on this platform")

# The float64s nearest to 1/3 and to 1/10: 2**54 / 3 = 6004799503160661.33… and 2**55 / 10 = 3602879701896396.8,
# rounded to the nearest integer significand (IEEE 754-2008 Section 4.3.1).
THIRD = math.ldexp(6004799503160661, -54)
TENTH = math.ldexp(3602879701896397, -55)
assert THIRD == 1 / 3 and TENTH == 0.1  # the same doubles Python's division and literal give

EXTRA = np.longdouble(2.0) ** -60  # 1 + 2**-60 is a longdouble (63 bits) but no float64 (52)


def leaks_in_longdouble(db, rng):
    return np.longdouble(1) + EXTRA * np.longdouble(int(db[0, 0]))


def leaks_in_longdouble_array(db, rng):
    return np.array([1, 1], dtype=np.longdouble) + EXTRA * np.longdouble(int(db[0, 0]))


def leaks_in_decimal(db, rng):
    return Decimal("0.1000000000000000000001") if db[0, 0] == 1 else Decimal("0.1")


def leaks_in_fraction(db, rng):
    return Fraction(1, 3) + Fraction(1, 10**30) * int(db[0, 0])


def leaks_in_object_array(db, rng):
    return np.array([Fraction(1, 3) + Fraction(int(db[0, 0]), 10**30)], dtype=object)


def leaks_in_mapping(db, rng):
    return {"a": np.longdouble(1) + EXTRA * np.longdouble(int(db[0, 0]))}


# (function, place, type, digits, the float64 it would be read as as the message prints it (17 digits)).
LEAKS = [
    pytest.param(leaks_in_longdouble, "y", "a longdouble", "1.0000000000000000009", "1", marks=extended, id="longdouble"),
    pytest.param(leaks_in_longdouble_array, "y[0]", "a longdouble", "1.0000000000000000009", "1", marks=extended,
                 id="longdouble-array"),
    pytest.param(leaks_in_decimal, "y", "a Decimal", "0.1000000000000000000001", f"{TENTH:.17g}", id="decimal"),
    pytest.param(leaks_in_fraction, "y", "a Fraction", "1000000000000000000000000000003/3000000000000000000000000000000",
                 f"{THIRD:.17g}", id="fraction"),
    pytest.param(leaks_in_object_array, "y[0]", "a Fraction",
                 "1000000000000000000000000000003/3000000000000000000000000000000", f"{THIRD:.17g}", id="object-array"),
    pytest.param(leaks_in_mapping, "y{'a'}", "a longdouble", "1.0000000000000000009", "1", marks=extended, id="mapping"),
]


def _secret(value: float) -> np.ndarray:
    db = np.zeros((5, 1))
    db[0, 0] = value
    return db


@pytest.mark.parametrize("function, place, kind, digits, read", LEAKS)
def test_a_secret_in_digits_float64_drops_is_refused_naming_place_type_value_and_its_float64(function, place, kind,
                                                                                             digits, read):
    output = function(_secret(1), None)
    with pytest.raises(OutputNotEncodable) as raised:
        output_features(output)
    assert (raised.value.place, raised.value.kind) == (place, kind)
    message = str(raised.value)
    assert "\n" not in message
    assert f"{digits} would be read as float64 {read}, its last digits lost" in message
    assert "release float(x) if rounding is intended, or str(x) to keep every digit" in message


@pytest.mark.parametrize("function, place, kind, digits, read", LEAKS)
def test_the_leaking_function_is_stopped_by_the_runner_not_audited_as_constant(function, place, kind, digits, read):
    # Under the secret 0 the longdouble and Fraction outputs are exact or not; under 1 never: the runner's probe
    # and runs meet the refusal on the database whose first entry is 1.
    mechanism = PerDatabaseMechanism(function, "leak", encoder=OutputEncoder(4))
    with MechanismRunner(mechanism, "leak") as runner, pytest.raises(MechanismError) as raised:
        runner.sample(np.stack([_secret(1), _secret(0)]), np.random.default_rng(0))
    assert f"{place} is {kind}: {digits} would be read as float64 {read}" in str(raised.value)


def leaks_in_longdouble_batch(dbs, rng):
    return np.longdouble(1) + EXTRA * dbs[:, 0, :1].astype(np.longdouble)


# Batched: the output under the secret 0 is a float64 (1, 0.5), under 1 it is not: database 1 is the first named.
@pytest.mark.parametrize("mechanism, kind, digits, read", [
    pytest.param(leaks_in_longdouble_batch, "a longdouble", "1.0000000000000000009", "1", marks=extended,
                 id="longdouble-array"),
    pytest.param(lambda dbs, rng: np.array([[Decimal("0.5") + Decimal("1E-22") * int(db[0, 0])] for db in dbs]),
                 "a Decimal", "0.5000000000000000000001", "0.5", id="object-array-of-decimals"),
    pytest.param(lambda dbs, rng: [[Fraction(1, 2) + Fraction(int(db[0, 0]), 10**30)] for db in dbs], "a Fraction",
                 "500000000000000000000000000001/1000000000000000000000000000000", "0.5", id="list-of-fractions"),
])
def test_a_batched_output_float64_would_round_names_the_database(mechanism, kind, digits, read):
    with pytest.raises(MechanismError) as raised:
        sample_mechanism(mechanism, np.stack([_secret(0), _secret(1), _secret(0)]), 0, name="m")
    message = str(raised.value)
    assert message.startswith(f"mechanism 'm' returned {kind} that float64 does not hold exactly for database 1: "
                              f"{digits} would be read as float64 {read}, its last digits lost")
    assert raised.value.database_index == 1 and "--per-database" in message and "\n" not in message


# Numbers float64 holds exactly, beside the float64 each is (written as a literal or from its significand here).
EXACT = [
    (Fraction(1, 2), 0.5),
    (Fraction(-3, 2**60), -math.ldexp(3, -60)),
    (Decimal("0.5"), 0.5),
    (Decimal("-1.25E+2"), -125.0),
    (np.longdouble(1), 1.0),
    (np.longdouble(2.0) ** -1074, math.ldexp(1, -1074)),  # the smallest subnormal float64
    (np.float16(0.1), math.ldexp(1638, -14)),  # float16's 0.1: significand 1638 / 2**14 = 0.0999755859375
    (np.float32(0.1), math.ldexp(13421773, -27)),
]


@pytest.mark.parametrize("value, double", EXACT, ids=[type(v).__name__ + str(i) for i, (v, _) in enumerate(EXACT)])
def test_a_number_float64_holds_exactly_is_encoded_as_that_float64(value, double):
    assert first_inexact_number([value]) is None
    assert output_features(value) == output_features(double) == {"y": double}
    assert output_features({"k": (value, value)}) == output_features({"k": (double, double)})
    assert check_batch_output(np.array([[value]], dtype=object), 1, "mechanism 'm'").tolist() == [[double]]


@extended
def test_an_exact_longdouble_array_gives_the_features_and_rows_of_its_float64_equal():
    exact = np.array([[0.25, -3.0], [2.0**60, 1 / 1024]], dtype=np.longdouble)
    double = np.array([[0.25, -3.0], [math.ldexp(1, 60), math.ldexp(1, -10)]])
    assert output_features(exact) == output_features(double)
    encoder = OutputEncoder(8)
    assert np.array_equal(encoder(exact), encoder(double))
    assert np.array_equal(check_batch_output(exact, 2, "mechanism 'm'"), double)


@extended
def test_longdouble_nan_and_infinities_follow_the_nan_rules():
    values = np.array([np.nan, np.inf, -np.inf], dtype=np.longdouble)
    assert first_inexact_number(values) is None
    assert output_features(values) == output_features(np.array([np.nan, np.inf, -np.inf]))
    with pytest.raises(MechanismError, match=r"returned NaN or inf for database 0"):
        check_batch_output(values[None, :], 1, "mechanism 'm'")


@extended
def test_a_longdouble_beyond_float64s_range_is_refused_as_read_as_infinity():
    with pytest.raises(OutputNotEncodable, match=r"y\[1\] is a longdouble: 1e\+400 would be read as float64 inf"):
        output_features(np.array([0, np.longdouble("1e400")]))


@pytest.mark.parametrize("output, place", [(Decimal("1E-400"), "y"), ((1.0, Decimal("0.1")), "y.1"),
                                           (np.array([0.5, Fraction(1, 10)], dtype=object), "y[1]")])
def test_decimals_and_fractions_that_round_are_refused_wherever_they_are(output, place):
    with pytest.raises(OutputNotEncodable) as raised:
        output_features(output)
    assert raised.value.place == place


def test_numbers_in_a_set_or_list_of_keys_are_keys_named_by_their_digits_not_refused():
    # A list NumPy reads as no numeric array is a collection of keys, as a set is: each named by its text, no float64.
    expected = {"y.len": 2.0, "y{Fraction(1, 3)}": 1.0, "y{Decimal('0.1')}": 1.0}
    assert output_features({Fraction(1, 3), Decimal("0.1")}) == output_features([Fraction(1, 3), Decimal("0.1")]) == expected


@extended
def test_a_list_numpy_reads_as_longdoubles_is_refused_at_its_element():
    with pytest.raises(OutputNotEncodable) as raised:
        output_features({"k": [0.5, 1 + EXTRA]})
    assert (raised.value.place, raised.value.kind) == ("y{'k'}[1]", "a longdouble")


@extended
def test_a_prior_drawing_a_longdouble_float64_would_round_is_one_error():
    def sample(m, rng):
        draws = np.zeros((m, 3, 1), dtype=np.longdouble)
        draws[:, 2, 0] = 1 + EXTRA
        return draws

    with pytest.raises(MechanismError) as raised:
        UserPrior(sample, label="fine")
    assert str(raised.value).startswith("argument 'sample' of prior 'fine' returned a longdouble that float64 does "
                                        "not hold exactly at [0, 2, 0]: 1.0000000000000000009 would be read as "
                                        "float64 1, its last digits lost")


def test_a_table_of_fractions_float64_would_round_is_one_error_and_exact_ones_are_read():
    table = np.array([[Fraction(1, 2)], [Fraction(1, 3)]], dtype=object)
    with pytest.raises(InputError, match=rf"^argument 'data' holds a Fraction that float64 does not hold exactly at "
                                         rf"\[1, 0\]: 1/3 would be read as float64 {THIRD:.17g}"):
        EmpiricalResample(table, 2)
    exact = np.array([[Fraction(1, 2)], [Fraction(3, 4)]], dtype=object)
    assert EmpiricalResample(exact, 2).data.tolist() == [[0.5], [0.75]]


def _text_in_second_row(dbs, rng):
    # Database 1 (secret 1) releases its value as text with a digit past float64's; the others a float.
    return [[("0.1000000000000000000001" if int(db[0, 0]) else 0.1)] for db in dbs]


@pytest.mark.parametrize("mechanism, shown", [
    pytest.param(lambda dbs, rng: np.array([["0.1000000000000000000001" if int(db[0, 0]) else "0.1"] for db in dbs]),
                 "'0.1'", id="string-array"),
    pytest.param(_text_in_second_row, "'0.1000000000000000000001'", id="object-list"),
    pytest.param(lambda dbs, rng: np.array([[b"3"] for db in dbs]), "b'3'", id="bytes-array"),
])
def test_a_batched_output_holding_text_is_refused_not_parsed(mechanism, shown):
    # float("0.1000000000000000000001") == 0.1: the cast would make the secret's two outputs one number.
    assert float("0.1000000000000000000001") == 0.1
    batch = np.stack([_secret(0), _secret(1), _secret(0)])
    with pytest.raises(MechanismError) as raised:
        sample_mechanism(mechanism, batch, 0, name="m")
    message = str(raised.value)
    database = 1 if shown.startswith("'0.1000") else 0
    assert message.startswith(f"mechanism 'm' returned text ({shown}) for database {database}: the output is read "
                              "as numbers, and a cast would parse the text")
    assert "--per-database" in message and "\n" not in message and raised.value.database_index == database


def test_a_secret_function_returning_text_is_refused_without_the_per_database_hint():
    with pytest.raises(MechanismError) as raised:
        check_batch_output([["1"], ["2"]], 2, "secret function 'g'")
    assert str(raised.value).startswith("secret function 'g' returned text ('1') for database 0")
    assert "--per-database" not in str(raised.value)


def test_a_function_of_one_database_without_an_encoder_returning_text_is_refused_naming_the_database():
    # Without an encoder the outputs are cast to float64 rows, which would parse "1e-400" as 0.0, the text lost.
    assert float("1e-400") == 0.0
    mechanism = PerDatabaseMechanism(lambda db, rng: "1e-400" if int(db[0, 0]) else 0.0, name="m")
    with pytest.raises(MechanismError) as raised:
        mechanism(np.stack([_secret(0), _secret(1)]), np.random.default_rng(0))
    message = str(raised.value)
    assert message.startswith("mechanism 'm' returned text ('1e-400') for database 1: the output is read as numbers")
    assert message.endswith("or give the function an OutputEncoder (mechanisms.outputs.encoding), which reads a string "
                            "as a category") and raised.value.database_index == 1


@pytest.mark.parametrize("array, dtype, reason", [
    # datetime64[ns] counts nanoseconds since 1970: about 1.7e18 today, past 2**53, where a float64 cast rounds.
    (np.array([["2026-11-29T12:00:00.000000001"], ["2026-11-29T12:00:00.000000002"]], dtype="datetime64[ns]"),
     "datetime64[ns]", "dates and durations are not numbers: release them as numbers (e.g. seconds)"),
    (np.array([[1], [2]], dtype="timedelta64[s]"), "timedelta64[s]",
     "dates and durations are not numbers: release them as numbers (e.g. seconds)"),
    (np.zeros((2, 1), dtype="V2"), "|V2", "NumPy holds its values as raw bytes, no number it can read"),
    (np.zeros((2, 1), dtype=[("a", "f8")]), "[('a', '<f8')]", "structured records are not accepted"),
], ids=["datetime64-ns", "timedelta64", "raw-bytes", "structured"])
def test_a_batched_array_of_dates_bytes_or_records_is_refused_as_the_encoder_refuses_it(array, dtype, reason):
    # The two nanoseconds apart are one float64 (ulp at 1.7e18 is 256): a cast would have made them one output.
    if array.dtype.kind == "M":
        assert float(array[0, 0].astype(np.int64)) == float(array[1, 0].astype(np.int64))
    with pytest.raises(MechanismError) as raised:
        check_batch_output(array, 2, "mechanism 'm'")
    assert str(raised.value).startswith(f"mechanism 'm' returned an array of dtype {dtype}: {reason}")


def test_raw_bytes_per_database_are_said_to_be_another_librarys_float_not_records():
    with pytest.raises(OutputNotEncodable, match=r"y\{'w'\} is an array of dtype \|V2: NumPy holds its values as raw "
                                                 r"bytes.*x\.astype\(numpy\.float32\)"):
        output_features({"w": np.zeros(3, dtype="V2")})
