"""The counting statistic (issue 39 §4): rare output features seen under one input only carry the event test."""

import math
import zlib
from collections import Counter

import numpy as np
import pytest
from scipy.stats import beta, binom

from audit.engine import run_audit
from audit.spec import AuditSpec
from audit.statistics.counting import CountingStatistic
from estimators.validation import InputError
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

#: The sentinel value the synthetic mechanism releases: a middle point of its Gaussian's bulk (no tail event
#: holds it) whose every significand bit is used (no float-bit statistic sees it).
SENTINEL = 1 / math.pi

PAIR = NeighbouringPair(np.array([[1.0]]), np.array([[0.0]]))


def sentinel_mechanism(p_first: float, p_second: float):
    """Releases SENTINEL with probability ``p_first`` when the record is 1 (``p_second`` when 0), else N(0, 1)."""
    def mechanism(dbs, rng):
        record = dbs[:, 0, 0]
        p = np.where(record == 1.0, p_first, p_second)
        noise = rng.normal(0.0, 1.0, len(record))
        return np.where(rng.random(len(record)) < p, SENTINEL, noise)[:, None]
    return mechanism


def exact_delta(p_first: float, p_second: float, epsilon: float) -> float:
    """δ(ε) of the sentinel pair, both directions, by the hockey-stick divergence summed over the atom and the
    Gaussian part (Balle and Wang 2018, Equation 3): on the Gaussian part the two densities are proportional,
    (1 − p)φ against (1 − q)φ, so its contribution is max(0, (1 − p) − e^ε (1 − q))."""
    def one_way(p, q):
        return max(0.0, p - math.exp(epsilon) * q) + max(0.0, (1 - p) - math.exp(epsilon) * (1 - q))
    return max(one_way(p_first, p_second), one_way(p_second, p_first))


def clopper_pearson_refutes(hits: int, runs: int, alpha_each: float, epsilon: float, delta: float) -> bool:
    """Whether ``hits`` of ``runs`` against 0 of ``runs`` refute (ε, δ) with Clopper–Pearson bounds at
    ``alpha_each`` per side (Clopper and Pearson 1934): p̲ − e^ε p̄ > δ."""
    lower = beta.ppf(alpha_each, hits, runs - hits + 1) if hits else 0.0
    upper = 1 - alpha_each ** (1 / runs)  # the upper bound at 0 hits, in closed form
    return lower - math.exp(epsilon) * upper > delta


def test_fit_counts_one_sided_features_by_brute_force():
    rng = np.random.default_rng(0)
    first = np.column_stack([rng.normal(size=300), rng.integers(0, 3, 300).astype(float)])
    second = np.column_stack([rng.normal(size=200), rng.integers(0, 3, 200).astype(float)])
    first[:7, 0] = 5.5      # an atom of the first input only (a sentinel), 7 times
    first[7:8, 0] = 6.5     # seen once: no feature
    first[10:14, 1] = 9.0   # a value of the discrete column under the first input only
    second[:3, 1] = 7.0     # ... and one under the second only
    statistic = CountingStatistic.fit(first, second)
    # Brute force: per column, counts of each value under each input; one-sided where seen twice or more and
    # never under one input, or the add-½ ratio is 10 or more either way.
    expected = {}
    for column in range(2):
        a, b = Counter(first[:, column].tolist()), Counter(second[:, column].tolist())
        for value in set(a) | set(b):
            ca, cb = a[value], b[value]
            ell = math.log((ca + 0.5) / 301) - math.log((cb + 0.5) / 201)
            if ca + cb >= 2 and (ca == 0 or cb == 0 or abs(ell) >= math.log(10)):
                expected[column, value] = ell
    assert {(0, 5.5), (1, 9.0), (1, 7.0)} <= set(expected) and (0, 6.5) not in expected
    found = {(column, float(v)): float(e) for column, (values, ells) in statistic.features.items()
             for v, e in zip(values, ells)}
    assert found.keys() == expected.keys()
    for key, ell in expected.items():
        assert found[key] == pytest.approx(ell, rel=1e-12)
    # Named with their counts, the strongest (largest |ℓ|) first: the second input's 7.0 (0 of 300 against 3 of 200).
    column, value = max(expected, key=lambda key: abs(expected[key]))
    assert (column, value) == (1, 7.0)
    count_first, count_second = (first[:, column] == value).sum(), (second[:, column] == value).sum()
    assert statistic.describe(1) == (f"one-sided features: output column {column} = {value:g} in {count_first} of 300 "
                                     f"fitted runs of a, {count_second} of 200 of b; and "
                                     f"{len(expected) - 1} more")
    # The score: the sum of ℓ over the features an output holds.
    rows = np.array([[5.5, 9.0], [0.3, 7.0], [0.3, 1.0], [6.5, 0.0]])
    want = [expected[0, 5.5] + expected[1, 9.0], expected[1, 7.0], 0.0, 0.0]
    assert statistic(rows) == pytest.approx(want, rel=1e-12)


def test_union_of_the_first_inputs_features_is_one_threshold_event():
    # Two sentinels of the first input, each in its own run: {s > 0} holds both (the union), and neither input's
    # common values score.
    first = np.zeros((100, 1))
    first[:5, 0], first[5:9, 0] = 2.0, 3.0
    second = np.zeros((100, 1))
    statistic = CountingStatistic.fit(first, second)
    scores = statistic(np.array([[2.0], [3.0], [0.0]]))
    assert scores[0] > 0 and scores[1] > 0 and scores[2] == 0.0


def test_continuous_outputs_and_equal_laws_have_no_feature():
    rng = np.random.default_rng(1)
    assert CountingStatistic.fit(rng.normal(size=(500, 2)), rng.normal(size=(500, 2))) is None
    assert CountingStatistic.fit(rng.integers(0, 3, (500, 1)), rng.integers(0, 3, (500, 1))) is None
    with pytest.raises(InputError, match="second_outputs"):
        CountingStatistic.fit(np.zeros((5, 2)), np.zeros((5, 3)))


#: The rare release: probability P_RARE under the first input, never under the second, claimed δ a quarter of it.
P_RARE, EPSILON, CLAIMED_DELTA = 2e-3, 1.0, 5e-4
#: The per-side level the run count is computed at: below every side's share of the event test's α (asserted).
ALPHA_EACH = 0.004


def refuting_runs() -> int:
    """The fewest runs per input (a multiple of 5,000) at which the 1% quantile of the Binomial(n, P_RARE) count,
    against 0, refutes the claim with Clopper–Pearson bounds at ALPHA_EACH per side."""
    runs = 5000
    while not clopper_pearson_refutes(int(binom.ppf(0.01, runs, P_RARE)), runs, ALPHA_EACH, EPSILON, CLAIMED_DELTA):
        runs += 5000
    return runs


def test_rare_release_is_refuted_at_the_binomial_run_count_by_the_counting_event():
    assert exact_delta(P_RARE, 0.0, EPSILON) == pytest.approx(P_RARE)  # δ(ε) = p: the atom, 4× the claim
    runs = refuting_runs()
    assert 20_000 <= runs <= 60_000
    spec = AuditSpec(mechanism=sentinel_mechanism(P_RARE, 0.0), priors=(PAIR.prior(),), samples=runs, seed=3,
                     claim=parse_claim(f"dp:{EPSILON}:{CLAIMED_DELTA}"))
    result = run_audit(spec)
    event = result.event_test
    assert event.runs_per_input == runs
    assert event.alpha * min(event.lower_share, 1 - event.lower_share) >= ALPHA_EACH
    assert result.claim_verdict == "refuted"
    # The chosen event is the counting statistic's, and it is named.
    assert "one-sided features" in event.description and "counted" in event.description
    assert f"output column 0 = {SENTINEL:.6g} in " in event.description  # the sentinel, with its counts
    assert event.p_second == 0.0 and 0 < event.p_first
    # About n·p hits: within 4 standard deviations of the exact law's mean.
    assert abs(event.p_first * runs - P_RARE * runs) <= 4 * math.sqrt(P_RARE * runs)
    # The certified δ from the counts, by Clopper–Pearson at the event's split of α (an independent computation).
    hits = round(event.p_first * runs)
    lower = beta.ppf(event.alpha * event.lower_share, hits, runs - hits + 1)
    upper = 1 - (event.alpha * (1 - event.lower_share)) ** (1 / runs)
    assert event.delta_lower_bound == pytest.approx(lower - math.exp(EPSILON) * upper, rel=1e-6)
    assert CLAIMED_DELTA < event.delta_lower_bound <= P_RARE


def test_same_rare_release_under_both_inputs_within_e_epsilon_is_not_refuted():
    p_second = P_RARE * math.exp(-EPSILON)  # the ratio exactly e^ε: (ε, 0)-DP
    assert exact_delta(P_RARE, p_second, EPSILON) == 0.0
    spec = AuditSpec(mechanism=sentinel_mechanism(P_RARE, p_second), priors=(PAIR.prior(),), samples=refuting_runs(),
                     seed=3, claim=parse_claim(f"dp:{EPSILON}:{CLAIMED_DELTA}"))
    result = run_audit(spec)
    assert result.claim_verdict != "refuted"


@pytest.mark.slow
def test_counting_event_type_one_error_at_the_boundary():
    # The sentinel released w.p. exactly the claimed δ under the first input, never under the second: δ(ε) = δ,
    # at the boundary of the claim. Each audit refutes with probability at most α, so the refutations over N
    # audits are at most Binomial(N, α); the assertion fails with probability below 0.001 where that holds.
    delta, audits = 0.02, 200
    assert exact_delta(delta, 0.0, EPSILON) == pytest.approx(delta)
    claim = parse_claim(f"dp:{EPSILON}:{delta}")
    refuted = counted = 0
    for seed in range(audits):
        spec = AuditSpec(mechanism=sentinel_mechanism(delta, 0.0), priors=(PAIR.prior(),), samples=400, seed=seed,
                         claim=claim)
        result = run_audit(spec)
        refuted += result.claim_verdict == "refuted"
        counted += "one-sided features" in result.event_test.description
    assert refuted <= binom.ppf(0.999, audits, spec.alpha), refuted
    # The counting statistic's event was certified in a good part of them (77 of 200 when written), so the bound
    # above holds of it, not of the other statistics alone.
    assert counted >= audits // 5, counted


def test_a_released_key_is_a_feature_of_its_support_column():
    # OpenDP-shaped outputs, {key: noisy count}: 'alice' (20 users) always released, 'bob' (one user) in 9 of the
    # 3,000 outputs of the first database and never in the second's. Encoded, bob's presence adds 1 to the support
    # column of his bucket (CRC-32 of his name modulo 64: the encoder's hashing, computed here), so that column at
    # value 1 (or more, where a name shares the bucket) is a one-sided feature of the first input.
    from mechanisms.outputs.encoding import OutputEncoder

    encoder = OutputEncoder()
    rng = np.random.default_rng(4)
    first = [{"alice": 20.0 + rng.integers(-3, 4), **({"bob": 8.0} if i < 9 else {})} for i in range(3000)]
    second = [{"alice": 20.0 + rng.integers(-3, 4)} for _ in range(3000)]
    rows_first, rows_second = np.array([encoder(y) for y in first]), np.array([encoder(y) for y in second])
    bob, alice = zlib.crc32("y{'bob'}".encode()) % 64, zlib.crc32("y{'alice'}".encode()) % 64
    assert bob != alice
    statistic = CountingStatistic.fit(rows_first, rows_second)
    support_bob = 64 + bob
    assert support_bob in statistic.features
    values, ells = statistic.features[support_bob]
    assert list(values) == [1.0]
    assert ells[0] == pytest.approx(math.log(9.5 / 3001) - math.log(0.5 / 3001))
    assert statistic.counts[support_bob][0].tolist() == [9] and statistic.counts[support_bob][1].tolist() == [0]
    scores = statistic(np.concatenate([rows_first, rows_second]))
    assert np.count_nonzero(scores[:3000] > 0) == 9 and np.count_nonzero(scores[3000:] > 0) == 0
