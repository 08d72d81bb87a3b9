"""The sign of a zero in the float-bit statistics (audit/statistics/float_bits.py): −0.0 gets a code of its own in
every family and opens the coarse-grid gate, and a mechanism whose only leak is the sign of a zero is refuted
through the float bits, batched and per database, with the exact conditional odds-ratio bound (Cornfield 1956)
computed here from the counts; the statistics of values, which compare −0.0 == 0.0 as IEEE 754 says, see nothing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from audit.cli.main import main
from audit.statistics.counting import CountingStatistic
from audit.statistics.float_bits import (FLOAT_STATISTICS, NEGATIVE_ZERO_CODE, NONFINITE_CODE, ZERO_CODE,
                                         has_fine_bits, leaking_record, off_shifted_grid)

SIGN_OF_ZERO = '''
import numpy as np


def per_database(db, rng):
    return -0.0 if db[0, 0] == 1 else 0.0


def batched(dbs, rng):
    return np.where(dbs[:, 0, 0] == 1, -0.0, 0.0)[:, None]
'''


def test_the_residue_tells_the_two_zeros_apart():
    # (the other codes' zeros: tests/test_float_features.py)
    y = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    # +0.0 survives the round trip (0 − 1) + 1 = 0; −0.0's comes back as +0.0 (IEEE 754 round to nearest), its own code.
    np.testing.assert_array_equal(off_shifted_grid(y, 1.0), [0, NEGATIVE_ZERO_CODE] + [NONFINITE_CODE] * 3)
    assert len({ZERO_CODE, NEGATIVE_ZERO_CODE, NONFINITE_CODE}) == 3


def test_a_negative_zero_opens_the_gate_and_a_positive_one_does_not():
    assert has_fine_bits(np.array([1.0, 2.0, -0.0]))
    assert not has_fine_bits(np.array([1.0, 2.0, 0.0, -3.0]))


def test_every_family_separates_outputs_that_differ_only_in_the_sign_of_zero():
    first, second = np.zeros((500, 1)), np.full((500, 1), -0.0)
    for kind, _, _, words in FLOAT_STATISTICS:
        fitted = kind.fit(first, second)
        assert fitted is not None, kind.__name__
        assert np.all(fitted(first) > 0) and np.all(fitted(second) < 0), kind.__name__
        # ... and its words, in the event's description, say so.
        assert "−0.0 coded apart from +0.0" in words, words


def test_the_statistics_of_values_see_one_zero():
    # The value path compares by value (0.0 == -0.0): no counting feature tells the two zeros apart, so a leak in the
    # sign of a zero is the float-bit test's to find (the audit tests below).
    first, second = np.zeros((500, 1)), np.full((500, 1), -0.0)
    fitted = CountingStatistic.fit(first, second)
    assert fitted is None or np.array_equal(fitted(first), fitted(second))


def test_the_leaking_record_is_read_from_the_bits_of_the_sample():
    rng = np.random.default_rng(0)
    dbs = rng.integers(0, 2, (2000, 5, 1)).astype(np.float64)
    outputs = np.where(dbs[:, 2, 0] == 1, -0.0, 0.0)[:, None]
    assert leaking_record(dbs, outputs, range(5), 4) == 2
    # Bits that depend on no record: the chosen record stays.
    assert leaking_record(dbs, rng.laplace(size=(2000, 1)), range(5), 4) == 4


def _odds_ratio_lower(n: int, alpha: float) -> float:
    """The exact conditional lower bound ψ̲ on the odds ratio of n hits in n runs against 0 in n (Cornfield 1956):
    P(X = n; ψ̲) = α with X Fisher's noncentral hypergeometric on margins n, n, n, P(X = x; ψ) ∝ C(n, x)² ψˣ;
    solved by bisection on log ψ."""
    log_c = [math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1) for x in range(n + 1)]

    def log_top(t):
        terms = [2 * c + x * t for x, c in enumerate(log_c)]
        top = max(terms)
        return n * t - (top + math.log(sum(math.exp(v - top) for v in terms)))

    low, high = 0.0, 100.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if log_top(middle) < math.log(alpha) else (low, middle)
    return math.exp((low + high) / 2)


def _assert_refuted_through_the_bits(result: dict):
    """The verdict a sign-of-zero leak on record 0 gets: refuted by the float-bit test alone, said so, with the
    odds-ratio bound of n hits in n runs against none at the float-bit test's α, computed here."""
    assert result["claim_verdict"] == "refuted"
    assert [r["test"] for r in result["refuted_by"]] == ["float"]  # the bits refuted it, not the values
    assert "through the floating-point representation" in result["statement"]
    event = result["float_event_test"]
    assert event["secret"] == "record 0" and event["certificate"] == "odds-ratio"
    assert {event["p_first"], event["p_second"]} == {0.0, 1.0}  # every run of one input, none of the other
    expected = _odds_ratio_lower(event["runs_per_input"], result["claim_alpha"]["float"])
    assert event["odds_ratio_lower"] == pytest.approx(expected, rel=1e-6)
    assert event["epsilon_lower_bound"] == pytest.approx(math.log(expected) / 2, rel=1e-6)
    assert event["epsilon_lower_bound"] > 1


@pytest.mark.parametrize("per_database", [False, True])
def test_a_sign_of_zero_leak_is_refuted_through_the_bits(per_database):
    # Under a two-point prior (classifier critics only: not marked `train`) the critics see one zero; the float-bit
    # test sees the sign on every run.
    from audit.engine import run_audit
    from audit.spec import AuditSpec
    from mechanisms.adapters.callables import PerDatabaseMechanism
    from mechanisms.claims.parsing import parse_claim
    from mechanisms.inputs.priors import TwoPoint

    namespace = {}
    exec(SIGN_OF_ZERO, namespace)
    mechanism = PerDatabaseMechanism(namespace["per_database"]) if per_database else namespace["batched"]
    first = np.zeros((5, 1))
    second = first.copy()
    second[0, 0] = 1.0
    result = run_audit(AuditSpec(mechanism=mechanism, priors=[TwoPoint(first, second)], claim=parse_claim("dp:1"),
                                 samples=2000, seed=0))
    _assert_refuted_through_the_bits(result.to_dict())


@pytest.mark.train
@pytest.mark.parametrize("name, flags", [("batched", []), ("per_database", ["--per-database"])])
def test_the_cli_refutes_a_sign_of_zero_leak_through_the_bits(tmp_path, capsys, name, flags):
    # Under the Bernoulli prior the critics (neural: `train`) choose a record by values, all alike here; the float-bit
    # statistics' pair is on record 0, which the MI sample's bits single out (float_bits.leaking_record).
    path = tmp_path / "sign_of_zero.py"
    path.write_text(SIGN_OF_ZERO)
    main(["audit", "--mechanism", f"{path}:{name}", *flags, "--claim", "dp:1", "--prior", "builtin:bernoulli",
          "--n", "5", "--k", "1", "--samples", "2000", "--seed", "0", "--json"])
    _assert_refuted_through_the_bits(json.loads(capsys.readouterr().out))


def test_a_wide_sample_is_coded_in_chunks_of_columns_with_the_same_choice(monkeypatch):
    from audit.statistics import float_bits

    rng = np.random.default_rng(1)
    dbs = rng.integers(0, 2, (400, 4, 1)).astype(np.float64)
    outputs = np.concatenate([np.ones((400, 30)), np.where(dbs[:, 3], -0.0, 0.0), rng.laplace(size=(400, 5))], axis=1)
    whole = leaking_record(dbs, outputs, range(4), 0)
    monkeypatch.setattr(float_bits, "LEAK_CHUNK_ELEMENTS", 400 * 7)  # 7 columns at a time
    assert leaking_record(dbs, outputs, range(4), 0) == whole == 3
