"""Ensembles and nested estimators (mechanisms.outputs.estimators) and relations between released numbers
(mechanisms.outputs.relations) in the output encoder; the inferred-bounds forest refuted through them."""

import math

import numpy as np
import pytest

from audit.engine import run_audit
from audit.spec import AuditSpec
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.outputs.encoding import OutputEncoder, output_features

sklearn = pytest.importorskip("sklearn")
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402


def _data():
    rng = np.random.default_rng(3)
    X = rng.random((60, 2))
    return X, (X[:, 0] + 0.1 * rng.standard_normal(60) > 0.5).astype(int)


def test_a_random_forest_is_encoded_tree_by_tree_through_its_arrays():
    X, y = _data()
    forest = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    features = output_features(forest)
    # Read from the trees' own arrays here: every node's threshold, children and leaf values, per tree.
    for k, tree in enumerate(forest.estimators_):
        arrays = tree.tree_
        assert features[f"y.estimators_[{k}].tree_.node_count"] == arrays.node_count
        for j in range(arrays.node_count):
            assert features[f"y.estimators_[{k}].tree_.children_left[{j}]"] == arrays.children_left[j]
            if arrays.feature[j] >= 0:  # a split node (leaves hold threshold −2)
                assert features[f"y.estimators_[{k}].tree_.threshold[{j}]"] == arrays.threshold[j]
            assert features[f"y.estimators_[{k}].tree_.value[{j},0,1]"] == arrays.value[j, 0, 1]
    # The template is released by its class only; the forest's classes as for any classifier.
    assert features["y.estimator_=<DecisionTreeClassifier>"] == 0.0
    assert features["y.classes_[1]"] == 1.0
    # No relation features inside a fitted estimator (its arrays are no released curve).
    assert not any(name.startswith("(") for name in features)
    assert OutputEncoder()(forest).shape == (128,)


def test_pipelines_and_boosting_stages_are_walked_to_their_fitted_parts():
    X, y = _data()
    pipeline = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    features = output_features(pipeline)
    scaler, logistic = pipeline.steps[0][1], pipeline.steps[1][1]
    assert features["y.steps['standardscaler'].mean_[1]"] == scaler.mean_[1]
    assert features["y.steps['logisticregression'].coef_[0,0]"] == logistic.coef_[0, 0]
    boosting = GradientBoostingRegressor(n_estimators=3, max_depth=1, random_state=0).fit(X, y)
    features = output_features(boosting)
    assert features["y.estimators_.shape[0]"] == 3.0  # an object array of trees, (stages, 1)
    assert features["y.estimators_[2,0].tree_.threshold[0]"] == boosting.estimators_[2, 0].tree_.threshold[0]


def test_an_unfitted_estimator_is_still_an_error_at_the_top():
    class Template:
        def fit(self, X, y):
            return self

    with pytest.raises(Exception, match="none of"):
        output_features(Template())
    assert output_features((Template(),)) == {"y.0=<Template>": 0.0}


# -- relations between released numbers -----------------------------------------------------------

#: Stumps of the inferred-bounds forest: each splits at a threshold uniform between the data's min and max.
STUMPS = 20


def inferred_bounds_forest(db, rng):
    """A forest of random-threshold stumps whose bounds are the data's own min and max (column 0: x,
    column 1: label), releasing its predictions at x = 8, 9, 10.

    Without a record beyond 5 every threshold lies below 8, so the three predictions are equal; with a
    record at 10 a stump's threshold falls in [8, 10) with probability 2/10 and splits them."""
    x, label = db[:, 0], db[:, 1]
    low, high = x.min(), x.max()
    at = np.array([8.0, 9.0, 10.0])
    predictions = np.zeros(3)
    for _ in range(STUMPS):
        threshold = rng.uniform(low, high)
        left, right = label[x <= threshold], label[x > threshold]
        left_mean = left.mean() if len(left) else 0.5
        right_mean = right.mean() if len(right) else 0.5
        predictions += np.where(at <= threshold, left_mean, right_mean)
    return predictions / STUMPS


def test_inferred_bounds_forest_releases_equal_predictions_only_without_the_far_record():
    base = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [3.0, 1.0], [4.0, 0.0], [5.0, 1.0]])
    far, near = np.vstack([base, [[10.0, 1.0]]]), np.vstack([base, [[2.5, 1.0]]])
    rng = np.random.default_rng(0)
    encoder = OutputEncoder()
    runs = 400
    rows_far = np.array([encoder(inferred_bounds_forest(far, rng)) for _ in range(runs)])
    rows_near = np.array([encoder(inferred_bounds_forest(near, rng)) for _ in range(runs)])
    # Enumerated: P(all equal | far) = P(no threshold of 20 in [8, 10)) = 0.8^20; P(all equal | near) = 1.
    p_equal_far = 0.8 ** STUMPS
    assert 1 - p_equal_far == pytest.approx(0.98847, abs=1e-5)
    # The count of equal neighbours: 2 in every run near (all three equal); far, 2 when no threshold falls in
    # [8, 10) (probability 0.8^20 = 0.0115), 0 when thresholds fall in both [8, 9) and [9, 10), else 1.
    name = "(equal neighbours of y)"
    bucket = encoder.bucket(name)
    assert encoder.names_in(bucket) == ([name], True)
    assert set(rows_near[:, bucket]) == {2.0}
    assert 0 <= np.sum(rows_far[:, bucket] == 2.0) <= 20  # binomial(400, 0.0115): mean 4.6, P(> 20) < 1e-6
    # Named beside the certificate's counts: the value in every run near and never far, where that holds.
    facts = encoder.describe_differences(rows_near, rows_far, "near", "far")
    if not np.any(rows_far[:, bucket] == 2.0):
        assert f"{name} = 2 in {runs} of {runs} runs on near, never in the {runs} on far" in facts

def _audit_near_against_far(function):
    """The dp:1 audit of a per-database ``function`` on six records in [0, 5] plus one at 2.5 or at 10."""
    base = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [3.0, 1.0], [4.0, 0.0], [5.0, 1.0]])
    pair = NeighbouringPair(np.vstack([base, [[2.5, 1.0]]]), np.vstack([base, [[10.0, 1.0]]]))
    spec = AuditSpec(mechanism=PerDatabaseMechanism(function, function.__name__, encoder=OutputEncoder()),
                     priors=(pair.prior(),), claim=parse_claim("dp:1", relation="replace-one"), relation="replace-one",
                     samples=2000, records=(6,), seed=0)
    return run_audit(spec)


@pytest.mark.slow
def test_inferred_bounds_forest_is_refuted_through_the_equality_of_its_predictions():
    result = _audit_near_against_far(inferred_bounds_forest)
    assert result.claim_verdict == "refuted"
    # The event {all equal}: P = 1 near, 0.8^20 far, so ε = log(1/0.8^20) = 4.46 > 1.
    assert result.dp_epsilon_lower_bound_event > 1.0
    assert -STUMPS * math.log(0.8) == pytest.approx(4.4629, abs=1e-4)


#: P(unequal predictions | the far record) in the relation-only mechanism below (the issue's measured share).
UNEQUAL_WITH_FAR = 0.987


def equal_unless_far(db, rng):
    """Predictions at x = 8, 9, 10 whose relation alone leaks: each is uniform on [0, 1] under both inputs,
    all three one draw without a record beyond 5, three independent draws with probability
    :data:`UNEQUAL_WITH_FAR` with one (no statistic of a single prediction separates the inputs)."""
    if db[:, 0].max() > 5 and rng.random() < UNEQUAL_WITH_FAR:
        return rng.random(3)
    return np.repeat(rng.random(), 3)


def test_a_difference_in_relations_only_is_refuted_through_the_equality_of_the_predictions():
    result = _audit_near_against_far(equal_unless_far)
    assert result.claim_verdict == "refuted"
    # The event {y[0] = y[1]}: P = 1 near, 1 − 0.987 = 0.013 far, so ε = log(1/0.013) = 4.34 > 1.
    assert -math.log(1 - UNEQUAL_WITH_FAR) == pytest.approx(4.3428, abs=1e-4)
    assert result.dp_epsilon_lower_bound_event > 1.0
