"""The arithmetic an audit judges (audit/statistics/arithmetic.py): the rounding to the ideal resolution against
exact rationals, and the textbook numpy Laplace mean, correct and with a 10x sensitivity bug, audited in float
arithmetic (refuted through its bits, said in words) and in ideal arithmetic (the bug alone refuted)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from audit.config.building import build_spec
from audit.engine import run_audit
from audit.spec import AuditSpec
from audit.statistics.arithmetic import IDEAL_SIGNIFICANT_BITS, round_significand
from estimators.validation import InputError
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import TwoPoint

RECORDS = 10


def _rounded_exactly(y: float, bits: int) -> float:
    """y rounded to ``bits`` significant bits, half to even, in exact rationals: y = q·2^s with 2^(bits−1) ≤ |q| < 2^bits."""
    if y == 0 or not np.isfinite(y):
        return y
    exact = Fraction(y)
    shift = abs(exact).numerator.bit_length() - abs(exact).denominator.bit_length()
    while abs(exact) / Fraction(2) ** shift >= 1:  # find s with 2^(bits−1) ≤ |y|/2^s < 2^bits
        shift += 1
    while abs(exact) / Fraction(2) ** shift < Fraction(1, 2):
        shift -= 1
    scale = Fraction(2) ** (shift - bits)
    return float(round(exact / scale) * scale)  # Python's round of a Fraction is half to even


def test_round_significand_is_the_exact_rational_rounded_half_to_even():
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.laplace(0, 10, 200), rng.normal(0, 1e-6, 50), 1 + np.ldexp(np.arange(1, 40.0), -33),
                        [0.0, -0.0, np.inf, -np.inf, 3.0, 2.0**70 + 2.0**30, 1 + 2.0**-32, 1 + 3 * 2.0**-33]])
    expected = [_rounded_exactly(float(v), IDEAL_SIGNIFICANT_BITS) for v in y]
    np.testing.assert_array_equal(round_significand(y), expected)
    assert np.isnan(round_significand(np.array([np.nan]))[0])


def _laplace_mean(sensitivity_used: float):
    """The textbook numpy Laplace mean of values in [0, 1] at ε = 1: mean + Laplace(sensitivity_used / 1).

    The true sensitivity of the mean of RECORDS values in [0, 1] is 1/RECORDS; a tenth of it is the 10x bug
    (the mechanism is then 10-DP, not 1-DP)."""
    def mechanism(dbs, rng):
        return np.clip(dbs[:, :, 0], 0, 1).mean(axis=1, keepdims=True) + rng.laplace(0.0, sensitivity_used, (len(dbs), 1))
    return mechanism


def _audit(mechanism, arithmetic, seed=0):
    first = np.zeros((RECORDS, 1))
    second = first.copy()
    second[0, 0] = 1.0
    return run_audit(AuditSpec(mechanism=mechanism, priors=[TwoPoint(first, second)], claim=parse_claim("dp:1"),
                               samples=3000, event_runs=3000, seed=seed, arithmetic=arithmetic))


CORRECT, BUGGY = _laplace_mean(1.0 / RECORDS), _laplace_mean(0.1 / RECORDS)


def test_float_arithmetic_refutes_the_correct_textbook_mean_through_its_bits_and_says_so():
    result = _audit(CORRECT, "float")
    assert result.claim_verdict == "refuted"
    assert [r["test"] for r in result.refuted_by] == ["float"]
    # α split before sampling: the float-bit test a fifth of the event test's share, the two summing to α.
    assert result.claim_alpha["float"] == pytest.approx(0.2 * 0.05)
    assert sum(result.claim_alpha.values()) == pytest.approx(0.05)
    statement = result.claim_statement()
    assert "through the floating-point representation of the output, not the noise distribution (Mironov 2012)" in statement
    assert "the algorithm holds its claim; its float implementation does not" in statement
    assert "snapping" in statement and "exact sampler" in statement
    assert result.samples_by_purpose["float_certification"] == sum(result.float_event_test.runs_made or
                                                                   [2 * result.float_event_test.runs_per_input])


def test_float_arithmetic_refutes_the_buggy_mean_by_the_tests_that_read_no_bits_too():
    result = _audit(BUGGY, "float")
    assert "event" in {r["test"] for r in result.refuted_by}
    assert "the algorithm holds its claim" not in result.claim_statement()


def test_ideal_arithmetic_holds_the_correct_mean_and_refutes_the_buggy_one():
    correct = _audit(CORRECT, "ideal")
    assert correct.claim_verdict == "not-refuted" and correct.float_event_test is None
    assert correct.claim_alpha == {"event": 0.05}  # no float-bit test: the event test spends all of α
    assert "float_certification" not in correct.samples_by_purpose
    buggy = _audit(BUGGY, "ideal")
    assert buggy.claim_verdict == "refuted" and buggy.dp_epsilon_lower_bound_event > 1


def test_outputs_without_fine_bits_give_the_float_share_to_the_event_test():
    def integer_counts(dbs, rng):  # integers: no bit below 2^-32, no float-bit candidate
        return dbs.sum(axis=1) + rng.integers(-3, 4, (len(dbs), 1))
    result = _audit(integer_counts, "float")
    assert result.claim_alpha == {"event": 0.05} and result.float_event_test is None
    assert any("float-bit test's together" in note for note in result.notes)


def test_arithmetic_is_a_config_key_and_a_checked_argument(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((4, 1)))
    np.save(tmp_path / "b.npy", np.array([[1.0], [0.0], [0.0], [0.0]]))
    config = {"mechanism": {"spec": "catalog:laplace_mean"}, "claim": {"spec": "dp:1"},
              "pairs": [{"first": str(tmp_path / "a.npy"), "second": str(tmp_path / "b.npy")}],
              "audit": {"arithmetic": "ideal"}}
    assert build_spec(config).arithmetic == "ideal"
    with pytest.raises(InputError, match="arithmetic"):
        build_spec(dict(config, audit={"arithmetic": "exact"}))
    with pytest.raises(InputError, match="arithmetic"):
        AuditSpec(mechanism=CORRECT, priors=[TwoPoint(np.zeros((1, 1)), np.ones((1, 1)))], claim=parse_claim("dp:1"),
                  arithmetic="real")


@pytest.mark.train
def test_float_bit_candidates_of_an_add_remove_audit_are_fitted_on_the_pair_they_are_certified_on(tmp_path, capsys):
    """Under a prior that is not a two-point prior, the float-bit statistics are fitted on pilot runs of the first
    structured pair; an add/remove audit certifies each candidate on the presence form of its pair (record present
    against absent), so the statistics are fitted on that form. Fitted on the replacement pair, each was called on
    another pair of values and the audit stopped with "the statistic was fitted on another pair of values"."""
    import json

    from audit.cli.main import main

    (tmp_path / "mech.py").write_text("import numpy as np\n\ndef laplace_sum(db, rng):\n"
                                      "    return float(np.sum(db)) + rng.laplace(0.0, 1.0)\n")
    status = main(["audit", "--mechanism", f"{tmp_path / 'mech.py'}:laplace_sum", "--per-database", "--prior",
                   "builtin:bernoulli", "--n", "3", "--k", "1", "--domain", "0,1", "--claim", "dp:1", "--relation",
                   "add-remove", "--samples", "2000", "--slices", "0", "--set", "critic.max_steps=200",
                   "--seed", "3", "--json"])
    captured = capsys.readouterr()
    assert "fitted on another pair" not in captured.err
    assert status in (0, 1), captured.err
    payload = json.loads(captured.out)
    float_test = [check for check in payload["cross_checks"] if check["test"] == "float"]
    assert float_test, payload["cross_checks"]  # the float-bit test ran on its add/remove pair
