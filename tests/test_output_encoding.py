"""Outputs of any structure (mechanisms.outputs.encoding), the per-database route, support events and δ certificates."""

import math
import zlib

import numpy as np
import pytest
from scipy.stats import beta

from audit.statistics.classifier import FeatureDesign
from audit.engine import run_audit
from audit.certificates.event_bounds import certified_delta
from audit.spec import AuditSpec
from audit.statistics.support import SupportFolds, SupportLogRatio
from estimators.validation import InputError
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.base import MechanismError, sample_mechanism
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.outputs.encoding import OutputEncoder, output_features, support_facts


class LabelSetModel:
    """A fitted-model stand-in with diffprivlib 0.6.6's LogisticRegression label bug (its issue #106):
    ``classes_ = np.unique(y)``, and one row of ``coef_`` per class beyond two."""

    def fit(self, X, y, rng):
        self.classes_ = np.unique(y)
        rows = 1 if len(self.classes_) == 2 else len(self.classes_)
        self.coef_ = rng.laplace(0.0, 1.0, size=(rows, X.shape[1]))
        self.intercept_ = rng.laplace(0.0, 1.0, size=rows)
        return self


def fitted_model(db, rng):
    """A per-database function: fit on columns 0-1 (features) and 2 (label)."""
    return LabelSetModel().fit(db[:, :2], db[:, 2], rng)


# -- the encoder ------------------------------------------------------------------------------

def test_output_features_name_every_number_by_its_place():
    assert output_features(2.5) == {"y": 2.5}
    # An array of shape (2, 3): its rank, its two sizes and its six entries (written out by hand).
    features = output_features(np.arange(6.0).reshape(2, 3))
    expected = {"y.ndim": 2.0, "y.shape[0]": 2.0, "y.shape[1]": 3.0}
    expected.update({f"y[{i},{j}]": float(3 * i + j) for i in range(2) for j in range(3)})
    # Neighbours along the last axis: each row increases by 1, no two equal (mechanisms/outputs/relations.py).
    expected.update({f"(y[{i},{j + 1}] - y[{i},{j}])": 1.0 for i in range(2) for j in range(2)})
    expected.update({f"(equal neighbours of y[{i},:])": 0.0 for i in range(2)})
    assert features == expected
    assert output_features({"b": 2.0, "a": 2.0}) == {"y.len": 2.0, "y{'a'}": 2.0, "y{'b'}": 2.0,
                                                     "(equal neighbours of y)": 1.0, "(y{'b'} - y{'a'})": 0.0}
    assert output_features({"x", "z"}) == {"y.len": 2.0, "y{'x'}": 1.0, "y{'z'}": 1.0}
    assert output_features(["x", "x"]) == {"y.len": 2.0, "y{'x'}": 2.0}
    assert output_features((1.0, None)) == {"y.0": 1.0, "y.1=None": 0.0}
    assert output_features(float("nan")) == {"y=nan": 0.0}
    model = fitted_model(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]), np.random.default_rng(0))
    names = set(output_features(model))
    assert {"y.classes_[0]", "y.classes_[1]", "y.coef_.shape[0]", "y.coef_[0,1]", "y.intercept_[0]"} <= names
    assert not any("fit" in name for name in names)


def test_unsupported_outputs_are_one_error():
    with pytest.raises(InputError, match="none of"):
        output_features(object())


def test_support_facts_hold_shapes_and_key_counts():
    facts = support_facts({"coef": np.zeros((3, 2)), "keys": {"a", "b"}})
    assert facts["y{'coef'}.shape[0]"] == 3.0 and facts["y{'keys'}.len"] == 2.0


def test_encoder_counts_names_per_bucket_and_sums_their_values():
    encoder = OutputEncoder(width=8)
    output = {"a": 1.5, "b": -2.0}
    row = encoder(output)
    expected = np.zeros(16)
    # Its names written out by hand: a and b are not equal, and their difference is -3.5.
    for name, value in {"y.len": 2.0, "y{'a'}": 1.5, "y{'b'}": -2.0, "(y{'b'} - y{'a'})": -3.5,
                        "(equal neighbours of y)": 0.0}.items():
        expected[encoder.bucket(name)] += value
        expected[8 + encoder.bucket(name)] += 1
    np.testing.assert_array_equal(row, expected)
    # A released key the neighbour never releases adds one name: the support block changes.
    assert not np.array_equal(encoder({"a": 1.5, "b": -2.0, "c": 0.0})[8:], row[8:])


def test_a_bucket_of_negative_zeros_keeps_their_sign_as_a_float64_sum_does():
    # IEEE 754: (-0.0) + (-0.0) is -0.0, (-0.0) + (+0.0) is +0.0; a scalar output's row holds y's bucket alone.
    encoder = OutputEncoder(width=8)
    bucket = zlib.crc32(b"y") % 8
    negative, positive = encoder(-0.0), encoder(0.0)
    assert math.copysign(1.0, negative[bucket]) == -1.0 and math.copysign(1.0, positive[bucket]) == 1.0
    assert negative[8 + bucket] == positive[8 + bucket] == 1.0  # the same name, present once
    assert not np.signbit(np.delete(negative, bucket)).any()  # empty buckets stay +0.0
    # Two names in one bucket: the sum is -0.0 only where both are.
    width = 1
    assert np.signbit(OutputEncoder(width)((-0.0, -0.0))[0])
    assert not np.signbit(OutputEncoder(width)((-0.0, 0.0))[0])


def test_finite_numbers_whose_difference_passes_float64_make_an_order_category():
    # -1.7e308 and 1.7e308 are finite; v - u = 3.4e308 is past float64's largest number, so the relation is the
    # order as a category (its sign), with no RuntimeWarning and no inf value.
    import warnings

    largest = np.finfo(np.float64).max
    assert 1.7e308 < largest < 2 * 1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        features = output_features(np.array([-1.7e308, 1.7e308]))
        assert features == {"y.ndim": 1.0, "y.shape[0]": 2.0, "y[0]": -1.7e308, "y[1]": 1.7e308,
                            "(y[1] - y[0])=inf": 0.0, "(equal neighbours of y)": 0.0}
        assert "(y{'b'} - y{'a'})=-inf" in output_features({"a": 1.7e308, "b": -1.7e308})
        # 1.7e308 - 1e308 is finite: a value as any difference.
        assert output_features({"a": 1e308, "b": 1.7e308})["(y{'b'} - y{'a'})"] == 1.7e308 - 1e308


def test_numbers_whose_sum_in_a_bucket_passes_float64_are_refused_naming_them():
    # With one bucket every name is added into it: 1e308 + 1e308 = 2e308 passes float64's largest number.
    import warnings

    assert 1e308 + 1e308 == math.inf
    mechanism = PerDatabaseMechanism(lambda db, rng: np.array([1e308, 1e308]), "huge", encoder=OutputEncoder(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(MechanismError, match=r"not encodable on database 0: y is an array: its numbers "
                                                 r"y\[0\] = 1e\+308, y\[1\] = 1e\+308.* share bucket 0 of the "
                                                 r"encoder's 1, .*sum passes float64's largest number"):
            sample_mechanism(mechanism, np.zeros((2, 1, 1)), 0)
        # -1.7e308 and 1.7e308 in one bucket add up to a finite sum, which is accepted; six names: ndim, shape,
        # the two entries, their order and the count of equal neighbours.
        row = OutputEncoder(1)(np.array([-1.7e308, 1.7e308]))
        assert np.all(np.isfinite(row)) and row[1] == 6.0


def test_an_audit_of_outputs_near_the_float64_limits_runs_without_an_inf_error():
    # Record 0 switches the second number between 1.7e308 and 1.0, the first is always -1.7e308: the event
    # {second number > 1} has probability 1 under one database and 0 under the other, so the DP claim is refuted;
    # before, v - u = 3.4e308 overflowed and the audit stopped at "returned NaN or inf".
    import warnings

    def release(db, rng):
        return np.array([-1.7e308, 1.7e308 if db[0, 0] else 1.0])

    first, second = np.zeros((2, 1)), np.array([[1.0], [0.0]])
    spec = AuditSpec(mechanism=PerDatabaseMechanism(release, "huge", encoder=OutputEncoder()),
                     priors=[NeighbouringPair(second, first).prior()], claim=parse_claim("dp:1"), samples=400,
                     event_runs=200, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_audit(spec).claim_verdict == "refuted"


def test_per_database_mechanism_encodes_outputs_of_differing_shapes():
    mechanism = PerDatabaseMechanism(lambda db, rng: np.zeros(int(db[0, 0])), "shapes", encoder=OutputEncoder(4))
    out = sample_mechanism(mechanism, np.array([[[2.0]], [[3.0]]]), 0)
    assert out.shape == (2, 8)
    # Counts: ndim, shape[0], one name per entry, one per neighbouring pair of entries (their difference)
    # and the count of equal neighbours: 2 + 2 + 1 + 1 = 6 and 2 + 3 + 2 + 1 = 8.
    np.testing.assert_array_equal(out[:, 4:].sum(axis=1), [6, 8])


def test_a_per_database_function_given_as_batched_is_told_about_per_database():
    with pytest.raises(MechanismError, match="--per-database"):
        sample_mechanism(lambda db, rng: float(db.sum()), np.zeros((3, 2, 1)), 0)


# -- support events --------------------------------------------------------------------------

def test_support_statistic_uses_the_discrete_columns_only():
    rng = np.random.default_rng(0)
    first = np.column_stack([rng.normal(size=400), (rng.random(400) < 0.5).astype(float)])
    second = np.column_stack([rng.normal(size=400), np.zeros(400)])
    fitted = SupportLogRatio.fit(first, second)
    assert fitted.columns.tolist() == [1]
    scores = fitted(np.array([[5.0, 1.0], [-5.0, 0.0]]))
    assert scores[0] > 3 and scores[1] < 0  # a support seen only under the first input scores high


def test_support_statistic_from_a_designs_distinct_rows_is_the_smoothed_count_ratio_of_the_support():
    # Column 0 takes 6 values (not part of the support), columns 1 and 2 take 2 and 3. The expected scores are
    # the add-1/2 log-ratio of each support row's counts, counted here row by row.
    rng = np.random.default_rng(3)
    outputs = np.column_stack([rng.integers(0, 6, 4000), rng.random(4000) < 0.5, rng.integers(0, 3, 4000)]).astype(float)
    is_first = rng.random(4000) < 0.5
    outputs[is_first, 1] = rng.random(int(is_first.sum())) < 0.8
    design = FeatureDesign.build(outputs, np.arange(4000))
    assert design.inverse is not None
    rows = np.flatnonzero(rng.random(4000) < 0.7)
    counted = SupportLogRatio.from_counts(design.rows, design.inverse[rows], is_first[rows])
    assert counted.columns.tolist() == [1, 2]
    support = [tuple(r) for r in outputs[rows][:, 1:]]
    keys = sorted(set(support))
    n1 = {k: sum(1 for s, f in zip(support, is_first[rows]) if s == k and f) for k in keys}
    n2 = {k: sum(1 for s, f in zip(support, is_first[rows]) if s == k and not f) for k in keys}
    t1, t2, half = sum(n1.values()), sum(n2.values()), len(keys) / 2
    query = np.array([[0.0, a, b] for a, b in keys])
    expected = [math.log((n1[k] + 0.5) / (t1 + half)) - math.log((n2[k] + 0.5) / (t2 + half)) for k in keys]
    np.testing.assert_allclose(counted(query), expected, rtol=1e-12)
    fitted = SupportLogRatio.fit(outputs[rows][is_first[rows]], outputs[rows][~is_first[rows]])
    np.testing.assert_array_equal(counted(query), fitted(query))
    with pytest.raises(InputError, match="both inputs"):
        SupportLogRatio.from_counts(design.rows, design.inverse[rows], np.ones(len(rows), dtype=bool))


def test_support_folds_fit_each_subset_as_its_own_fit():
    # Column 0 is continuous, column 1 takes 3 values, column 2 takes 6 overall but only 4 outside the last 500
    # outputs, column 3 takes 2: on the subsets without those 500 outputs column 2 is part of the support too.
    rng = np.random.default_rng(5)
    n = 3000
    outputs = np.column_stack([rng.normal(size=n), rng.integers(0, 3, n), rng.integers(0, 4, n), rng.random(n) < 0.3])
    outputs[-500:, 2] = rng.integers(4, 6, 500)
    outputs = outputs.astype(float)
    is_first = rng.random(n) < 0.5
    outputs[is_first, 3] = rng.random(int(is_first.sum())) < 0.6
    folds = SupportFolds(outputs)
    query = np.column_stack([np.zeros(24), np.repeat(np.arange(3.0), 8), np.tile(np.repeat(np.arange(4.0), 2), 3),
                             np.tile([0.0, 1.0], 12)])
    for rows, columns in ((np.arange(n - 500), [1, 2, 3]), (np.flatnonzero(rng.random(n) < 0.6), [1, 3]),
                          (np.arange(400), [1, 2, 3])):
        own = SupportLogRatio.fit(outputs[rows][is_first[rows]], outputs[rows][~is_first[rows]])
        shared = folds.fit(rows, is_first[rows])
        assert shared.columns.tolist() == own.columns.tolist() == columns
        np.testing.assert_array_equal(shared(query), own(query))
    assert folds.fit(np.arange(n), is_first)(query).shape == (24,)
    assert SupportFolds(outputs[:, :1]).fit(np.arange(n), is_first) is None  # no discrete column


def test_label_set_bug_is_refuted_with_a_large_epsilon():
    # Adding one record with a third label always changes classes_ and coef_'s shape: P(E | D) = 1,
    # P(E | D′) = 0 for E = {three classes}, so ε = ∞. With N runs and no hit on D′, a Clopper–Pearson pair
    # at α/2 each certifies log(p̲/p̄), p̲ = (α/2)^{1/N}, p̄ = 1 − (α/2)^{1/N} (the event's exact bounds).
    base = np.array([[0.1, 0.2, 0.0], [0.3, 0.1, 1.0], [0.5, 0.9, 0.0], [0.7, 0.4, 1.0]])
    pair = NeighbouringPair(np.vstack([base, [[0.2, 0.8, 2.0]]]), base)
    runs = 1000
    spec = AuditSpec(mechanism=PerDatabaseMechanism(fitted_model, "label-set model", encoder=OutputEncoder()),
                     priors=(pair.prior(),), claim=parse_claim("dp:1", relation="add-remove"), relation="add-remove",
                     samples=runs, records=(4,), seed=0)
    result = run_audit(spec)
    assert result.claim_verdict == "refuted"
    tail = (0.05 / 2) ** (1 / runs)
    assert result.dp_epsilon_lower_bound_event >= math.log(tail / (1 - tail)) - 1e-9
    # The report names the class: every run with the record (a) has classes_ [0 1 2], none without it (b).
    event = result.event_test
    first_runs, second_runs = event.runs_made or [event.runs_per_input] * 2
    expected = f"y.classes_ contains 2 in {first_runs} of {first_runs} runs on a, never in the {second_runs} on b"
    assert event.support_differences[0] == expected and expected in event.description


def test_support_differences_name_the_key_released_by_one_input_only():
    # A dict-of-keys release: key 'bob' always, key 'alice' with probability ½ when record 0 holds 1, never else.
    # The counts expected are read from the raw dicts, not from the encoded rows.
    def release(db, rng):
        out = {"bob": float(rng.integers(40, 60))}
        if db[0, 0] == 1 and rng.random() < 0.5:
            out["alice"] = float(rng.integers(1, 4))
        return out
    rng = np.random.default_rng(7)
    with_alice = [release(np.array([[1.0]]), rng) for _ in range(300)]
    without = [release(np.array([[0.0]]), rng) for _ in range(250)]
    alice_runs = sum("alice" in out for out in with_alice)
    encoder = OutputEncoder()
    rows_a = np.array([encoder(out) for out in with_alice])
    rows_b = np.array([encoder(out) for out in without])
    # The three names fall in three different buckets of 64 (CRC-32 computed here), so each bucket names one.
    buckets = {name: zlib.crc32(name.encode()) % 64 for name in ("y.len", "y{'alice'}", "y{'bob'}")}
    assert len(set(buckets.values())) == 3
    assert encoder.names_in(buckets["y{'alice'}"]) == (["y{'alice'}"], True)
    facts = encoder.describe_differences(rows_a, rows_b)
    # The inputs are named a and b, as the audit's pair line names its databases.
    assert facts[:2] == [f"key 'alice' released in {alice_runs} of 300 runs on a, never in the 250 on b",
                         f"len(y) = 2 in {alice_runs} of 300 runs on a, never in the 250 on b"]
    # Third (relations after keys and other parts): the difference of bob's and alice's counts, released with alice.
    assert facts[2] == f"(y{{'bob'}} - y{{'alice'}}) released in {alice_runs} of 300 runs on a, never in the 250 on b"
    # Same laws under both inputs: nothing held by one side only; swapped inputs swap the words.
    assert encoder.describe_differences(rows_b[:100], rows_b[100:]) == []
    swapped = encoder.describe_differences(rows_b, rows_a, "B", "A")
    assert swapped[0] == f"key 'alice' released in {alice_runs} of 300 runs on A, never in the 250 on B"


def test_names_kept_per_bucket_are_bounded_and_collisions_are_said():
    # Width 1: every name in one bucket; the encoder keeps the first NAMES_PER_BUCKET names and says there were more.
    from mechanisms.outputs.encoding import NAMES_PER_BUCKET

    encoder = OutputEncoder(width=1)
    encoder({f"k{i}": 1.0 for i in range(10)})
    names, complete = encoder.names_in(0)
    assert names == ["y.len"] + [f"y{{'k{i}'}}" for i in range(NAMES_PER_BUCKET - 1)] and not complete
    rows_a = np.array([encoder({"x": 1.0})] * 5)
    rows_b = np.array([encoder({})] * 4)
    # Count 2 (y.len and the key) under a, 1 (y.len alone) under b: the bucket's names are listed, cut short.
    assert encoder.describe_differences(rows_a, rows_b)[0].startswith("2 of the parts hashed together (len(y), key 'k0'")


def _release_or_not(probability):
    """A batched mechanism releasing a key (support column 1) with ``probability`` when record 1 is present
    (two records), never when it is absent, beside a Laplace-noised count (a continuous column)."""
    def mechanism(dbs, rng):
        m, n = dbs.shape[:2]
        released = (rng.random(m) < probability) if n == 2 else np.zeros(m, dtype=bool)
        return np.column_stack([n + rng.laplace(0.0, 4.0, size=m), released.astype(float)])
    return mechanism


def test_delta_certificate_matches_the_clopper_pearson_pair_and_refutes_by_delta():
    # Under D the key is released w.p. 0.2, under D′ never: δ(ε) ≥ 0.2 at every ε, claimed 0.01.
    pair = NeighbouringPair(np.array([[0.0], [1.0]]), np.array([[0.0]]))
    spec = AuditSpec(mechanism=_release_or_not(0.2), priors=(pair.prior(),), samples=2000, records=(1,), seed=1,
                     claim=parse_claim("dp:1:0.01", relation="add-remove"), relation="add-remove")
    result = run_audit(spec)
    event = result.event_test
    assert event.delta_epsilon == 1.0
    assert event.delta_lower_bound == pytest.approx(
        max(event.p_first_lower - math.e * event.p_second_upper, (1 - event.p_second_upper) - math.e * (1 - event.p_first_lower)))
    assert result.claim_verdict == "refuted" and 0.01 < event.delta_lower_bound <= 0.2 + 0.05
    assert "δ ≥" in result.refuted_by[0]["detail"] and "> the claimed δ = 0.01" in result.refuted_by[0]["detail"]
    # The Clopper–Pearson pair on the counts, at the event's split of α (an independent computation).
    runs = event.runs_per_input
    hits_first, hits_second = round(event.p_first * runs), round(event.p_second * runs)
    lower = beta.ppf(event.alpha * event.lower_share, hits_first, runs - hits_first + 1) if hits_first else 0.0
    upper = beta.ppf(1 - event.alpha * (1 - event.lower_share), hits_second + 1, runs - hits_second)
    assert (event.p_first_lower, event.p_second_upper) == pytest.approx((lower, upper), rel=1e-9)


def test_certified_delta_by_hand():
    assert certified_delta(0.3, 0.05, 0.0) == pytest.approx(0.25)
    assert certified_delta(0.3, 0.05, math.log(2)) == pytest.approx(0.2)
    # The complement with the roles swapped: (1 − 0.1) − e^0 (1 − 0.95) = 0.85.
    assert certified_delta(0.95, 0.1, 0.0) == pytest.approx(0.85)


def _threshold_release(dbs, rng):
    """A seeded replica of OpenDP's count-by >> Laplace threshold (scale 1, threshold 5) for one key held by
    record 1 alone: count 1 plus discrete Laplace noise (a difference of two geometric variables, the
    discrete Laplace law of scale 1) released when ≥ 5; without record 1 the key has no count, never released."""
    m, n = dbs.shape[:2]
    if n == 1:
        return np.zeros((m, 1))
    p = 1 - math.exp(-1.0)
    noisy = 1 + rng.geometric(p, size=m) - rng.geometric(p, size=m)
    return (noisy >= 5).astype(float)[:, None]


@pytest.mark.slow
def test_threshold_release_probability_and_opendp_refutation():
    # P(1 + Z ≥ 5) for discrete Laplace Z of scale 1: Σ_{z≥4} (1 − e^−1)/(1 + e^−1) e^−z = e^−4/(1 + e^−1).
    exact = math.exp(-4) / (1 + math.exp(-1))
    assert exact == pytest.approx(0.013390, abs=1e-6)
    draws = _threshold_release(np.zeros((200_000, 2, 1)), np.random.default_rng(0))
    assert abs(draws.mean() - exact) < 4 * math.sqrt(exact * (1 - exact) / 200_000)
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    release = dp.t.make_count_by(dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance()) \
        >> dp.m.then_laplace_threshold(scale=1.0, threshold=5)
    epsilon, delta = release.map(1)

    def released_keys(db, rng):
        return release([f"key{int(v)}" for v in db[:, 0]])

    pair = NeighbouringPair(np.array([[0.0]] * 20 + [[1.0]]), np.array([[0.0]] * 20))
    # OpenDP's noise takes no seed, so this audit differs from run to run (at 20,000 samples 12 of 12 audits
    # refuted, δ̲ 0.0081-0.0116 against the claimed 0.0049; the key set's δ̲ is about 0.012).
    # So the test passes when one of two independent audits (OpenDP's draws and the audit's seed both fresh)
    # refutes: it still fails when miaudit's power here falls well below one half.
    verdicts = []
    for seed in range(2):
        spec = AuditSpec(mechanism=PerDatabaseMechanism(released_keys, "threshold", encoder=OutputEncoder()),
                         priors=(pair.prior(),), samples=40_000, records=(20,), seed=seed,
                         claim=parse_claim(f"dp:{epsilon}:{delta}", relation="add-remove"), relation="add-remove")
        result = run_audit(spec)
        verdicts.append((result.claim_verdict, result.event_test.delta_lower_bound))
        if result.claim_verdict == "refuted":
            break
    assert result.claim_verdict == "refuted", verdicts
    assert delta < result.event_test.delta_lower_bound


@pytest.mark.slow
def test_delta_certificate_type_one_error_at_the_boundary():
    # A mechanism exactly at its claim: the key is released w.p. δ = 0.1 with record 1 and never without it,
    # so for every event P(E | D) − e^ε P(E | D′) ≤ δ, with equality for E = {released}: (1, 0.1)-DP exactly at
    # the boundary. Refutations over 1,000 audits (the size of issue 43's study): at most α each, so at most
    # Binomial(1000, α) stochastically; the count stays within its 99.9% quantile.
    from scipy.stats import binom

    delta, audits, alpha = 0.1, 1000, 0.05
    # The closed form of the boundary: δ(ε) = max over events of P(E | D) − e^ε P(E | D′) = P(released | D) − 0.
    assert max(delta - math.e * 0.0, 0.0) == delta
    pair = NeighbouringPair(np.array([[0.0], [1.0]]), np.array([[0.0]]))
    claim = parse_claim(f"dp:1:{delta}", relation="add-remove")
    refuted = 0
    for seed in range(audits):
        spec = AuditSpec(mechanism=_release_or_not(delta), priors=(pair.prior(),), samples=600, records=(1,),
                         seed=seed, claim=claim, relation="add-remove", alpha=alpha)
        refuted += run_audit(spec).claim_verdict == "refuted"
    bound = binom.ppf(0.999, audits, alpha)
    print(f"support-event δ certificate: {refuted} of {audits} audits refuted the exact claim (bound {bound:.0f})")
    assert refuted <= bound


def test_support_statistic_keeps_to_the_encoders_support_block():
    # Columns 0-1: released values that take 3 values each, alike under both inputs; columns 2-3: the names'
    # counts (the support block). Name 3 is released under the first input only, in 2% of the runs. With the
    # block, the support rows are the names' counts alone; the expected scores are the add-1/2 log-ratio of
    # those rows' counts, counted here row by row. Without it, the value columns join the support and split the
    # rare name's row into 9 (the value columns' combinations).
    rng = np.random.default_rng(11)
    n = 6000
    is_first = rng.random(n) < 0.5
    values = rng.integers(0, 3, (n, 2)).astype(float)
    names = np.column_stack([np.ones(n), (is_first & (rng.random(n) < 0.02)).astype(float)])
    outputs = np.column_stack([values, names])
    block = slice(2, 4)
    fitted = SupportLogRatio.fit(outputs[is_first], outputs[~is_first], support_columns=block)
    assert fitted.columns.tolist() == [2, 3]
    assert SupportLogRatio.fit(outputs[is_first], outputs[~is_first]).columns.tolist() == [0, 1, 2, 3]
    keys = sorted({tuple(row) for row in names})
    n1 = {k: int(np.sum(is_first & np.all(names == k, axis=1))) for k in keys}
    n2 = {k: int(np.sum(~is_first & np.all(names == k, axis=1))) for k in keys}
    assert n2[(1.0, 1.0)] == 0 and n1[(1.0, 1.0)] > 30
    t1, t2, half = sum(n1.values()), sum(n2.values()), len(keys) / 2
    expected = [math.log((n1[k] + 0.5) / (t1 + half)) - math.log((n2[k] + 0.5) / (t2 + half)) for k in keys]
    query = np.array([[2.0, 0.0, a, b] for a, b in keys])
    np.testing.assert_allclose(fitted(query), expected, rtol=1e-12)
    # The same statistic from a cross-fit's shared coding and from a design's distinct rows.
    rows = np.arange(n)
    np.testing.assert_array_equal(SupportFolds(outputs, block).fit(rows, is_first)(query), fitted(query))
    design = FeatureDesign.build(outputs, rows)
    assert design.inverse is not None
    counted = SupportLogRatio.from_counts(design.rows, design.inverse, is_first, support_columns=block)
    np.testing.assert_allclose(counted(query), expected, rtol=1e-12)
    # A block the rows cannot hold (outputs not encoded by that encoder) gives no statistic.
    assert SupportLogRatio.fit(outputs[is_first], outputs[~is_first], support_columns=slice(4, 8)) is None
