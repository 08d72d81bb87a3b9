"""The statistics' host work on wide outputs (issue 42) gives the numbers of the plain computation, to the bit:
the logistic features built in one array (audit/statistics/classifier.py), the μ certificate scoring the event's
runs once (audit/search/event_search.py), the device rounding copied into its place (audit/statistics/arithmetic.py),
and the finite check by a sum (estimators/validation.py). The plain computations are written here."""

import numpy as np
import pytest
import torch

from audit.certificates.gaussian_dp import ESTIMATE_DELTA, gdp_certificate, point_grid
from audit.search import event_search as search
from audit.statistics import arithmetic, float_bits
from audit.statistics.classifier import LogOdds, OutputFeatures, QuadraticLogOdds
from audit.statistics.pair_candidates import PairCandidate
from estimators.validation import first_nonfinite_index
from fake_runner import SamplingRunner


def _outputs(rng, rows: int, columns: int) -> np.ndarray:
    """Continuous columns at several scales, a few discrete ones (one-hot levels), a constant and a binary one."""
    y = rng.normal(size=(rows, columns)) * np.exp2(rng.integers(-20, 20, columns))
    y[:, 1] = rng.integers(0, 5, rows)
    y[:, 3] = rng.integers(0, 2, rows)
    y[:, 4] = 0.0
    return y


def _plain_expand(features, y):
    parts = [y] + [(y[:, [j]] == values[None, :]).astype(np.float64) for j, values in features.levels]
    if len(features.squared):
        parts.append((y[:, features.squared] / features.square_scale) ** 2)
    if len(features.hinge_knots):
        parts.append(np.maximum(y[:, features.hinge_columns] - features.hinge_knots, 0.0))
    return np.concatenate(parts, axis=1)


def _plain_decision(features, coef, intercept, y):
    """OutputFeatures.affine's decision as the sum of its parts, each made apart (the squares on NumPy's copy)."""
    weight = coef / (features.top * features.std)
    constant = float(intercept - np.sum(coef * features.mean / features.std))
    width = features.top.shape[0] - sum(len(v) for _, v in features.levels) - features.nonlinear_width
    z = y @ weight[:width] + constant
    start = width + sum(len(v) for _, v in features.levels)
    squares = weight[start:start + len(features.squared)]
    hinges = weight[start + len(features.squared):]
    if np.any(squares):
        z += ((y[:, features.squared] / features.square_scale) ** 2) @ squares
    if len(hinges):
        z += np.maximum(y[:, features.hinge_columns] - features.hinge_knots, 0.0) @ hinges
    for j, values in features.levels:  # a one-hot block: its value's weight, 0 for a value not seen
        block, width = weight[width:width + len(values)], width + len(values)
        z += np.array([block[list(values).index(v)] if v in values else 0.0 for v in y[:, j]])
    return z


@pytest.mark.parametrize("columns, quadratic", [(6, False), (6, True), (40, True), (300, True)])
def test_output_features_are_the_plain_computation_to_the_bit(columns, quadratic):
    rng = np.random.default_rng(columns)
    y = _outputs(rng, 400, columns)
    features = OutputFeatures(y, quadratic=quadratic)
    squared = features.squared
    scale = np.abs(y[:, squared]).max(axis=0) if len(squared) else np.ones(0)
    scale[scale == 0] = 1.0
    np.testing.assert_array_equal(features.square_scale, scale)
    raw = _plain_expand(features, y)
    top = np.abs(raw).max(axis=0)
    top[top == 0] = 1.0
    np.testing.assert_array_equal(features.top, top)
    scaled = raw / top
    std = scaled.std(axis=0)
    std[std == 0] = 1.0
    np.testing.assert_array_equal(features.mean, scaled.mean(axis=0))
    np.testing.assert_array_equal(features.std, std)
    np.testing.assert_array_equal(features.take_training(), (scaled - scaled.mean(axis=0)) / std)
    other = _outputs(np.random.default_rng(columns + 1), 120, columns)
    np.testing.assert_array_equal(features(other), (_plain_expand(features, other) / top - features.mean) / std)
    coef = rng.normal(size=len(top))
    np.testing.assert_array_equal(features.affine(coef, 0.25)(other), _plain_decision(features, coef, 0.25, other))


def test_every_column_squared_reads_the_outputs_in_place_and_scores_as_on_a_copy():
    rng = np.random.default_rng(5)
    y = rng.normal(size=(300, 50))
    features = OutputFeatures(y, quadratic=True)
    assert features._all_squared and np.array_equal(features.squared, np.arange(50))
    squares = features._squares(y)
    assert squares.flags.f_contiguous  # the layout of y[:, squared], on which the product's sums are rounded
    np.testing.assert_array_equal(squares, (y[:, features.squared] / features.square_scale) ** 2)
    for kind in (LogOdds, QuadraticLogOdds):
        fitted = kind.fit(y[:150], y[150:] * 1.3)
        plain = _plain_decision(fitted.features, np.append(fitted.coef, np.zeros(len(fitted.features.top)
                                                                                 - len(fitted.coef))),
                                fitted.intercept, y)
        np.testing.assert_array_equal(fitted(y), plain)


class _Runner(SamplingRunner):
    def sample(self, dbs, rng, what=""):
        return rng.normal(size=(len(dbs), 3)) + dbs[:, 0, :1]


def test_the_mu_certificate_takes_the_events_scores_of_its_runs_where_its_statistic_is_the_events():
    calls = []

    def shift(a, b, dbs, outputs):
        calls.append(len(outputs))
        return (outputs[:, 0] - (a + b) / 2) * np.sign(a - b)

    first, second = np.zeros((2, 1)), np.zeros((2, 1))
    second[0] = 1.0
    rng = np.random.default_rng(0)
    held = (rng.normal(size=400), rng.normal(size=400) - 1.0)
    candidate = PairCandidate(first, second, 0, shift, held_out=held)
    result = search.event_search([candidate], runner=_Runner(), rng=np.random.default_rng(1), runs=500, alpha=0.05,
                                 pure_certificates=False)  # two probabilities: 500 runs of each input
    assert calls == [500, 500]  # each input's certification runs scored once, for the event and the μ certificate
    assert result.event["boundary_weight"] in (0.0, 1.0)  # not randomized: no boundary coins drawn before the runs
    # The certificate the plain computation gives: the statistic scored again on the same runs.
    rng = np.random.default_rng(1)
    scores = [shift(0.0, 1.0, *_Runner().runs_of(db, 500, rng)) for db in (first, second)]
    expected = gdp_certificate(*scores, alpha=0.05, selection=held, delta=ESTIMATE_DELTA,
                               grid=point_grid(*held, 500, 500, 0.05))
    assert repr(result.gaussian_dp) == repr(expected)


def test_the_mu_certificate_scores_the_runs_with_another_statistic_it_picks():
    first, second = np.zeros((2, 1)), np.zeros((2, 1))
    second[0] = 1.0
    y = np.random.default_rng(4).normal(size=(2, 200, 1))
    runs = ((first[None].repeat(200, 0), y[0] + 3), (second[None].repeat(200, 0), y[1]))
    weak = PairCandidate(first, second, 0, lambda a, b, dbs, y: y[:, 0])
    strong = PairCandidate(first, second, 0, lambda a, b, dbs, y: 10 * y[:, 0])
    rng = np.random.default_rng(3)
    selection = {0: (rng.normal(size=300), rng.normal(size=300)), 1: (rng.normal(size=300) + 3, rng.normal(size=300))}
    given = (np.full(200, np.nan), np.full(200, np.nan))  # the chosen (weak) statistic's scores: not the strong one's
    got = search._gaussian_dp([weak, strong], 0, runs, selection, 0.05, 0.0, given)
    assert repr(got) == repr(search._gaussian_dp([weak, strong], 0, runs, selection, 0.05, 0.0))


def test_device_rounding_in_several_chunks_is_numpys(monkeypatch):
    monkeypatch.setattr(arithmetic, "DEVICE_CHUNK_ELEMENTS", 7)
    y = np.random.default_rng(2).normal(size=(9, 5)) * np.exp2(np.arange(5) * 300.0 - 600)
    y[2, 3], y[4, 1], y[5, 0] = 0.0, np.inf, np.nan
    got = arithmetic.device_round_significand(y, 20, torch.device("cpu"))
    assert got.shape == y.shape
    np.testing.assert_array_equal(got.view(np.int64), arithmetic.round_significand(y, 20).view(np.int64))


def test_one_chunk_of_device_code_rows_comes_back_as_the_chunks():
    y = np.random.default_rng(3).normal(size=(20, 6))
    rows = float_bits.device_code_rows("binary exponent", y, None, False, torch.device("cpu"))
    np.testing.assert_array_equal(rows, float_bits.binary_exponent(y).astype(np.float64))


@pytest.mark.parametrize("values, expected", [
    ([[1.0, 2.0], [3.0, 4.0]], None),
    ([[1.0, 2.0], [3.0, np.nan]], 1),
    ([[np.inf, 2.0], [3.0, 4.0]], 0),
    ([[1e308, 1e308], [1e308, 1.0]], None),  # the sum overflows: checked entry by entry
    ([[1e308, 1e308], [-np.inf, 1.0]], 1),
    ([[np.inf], [-np.inf]], 0),  # inf − inf: NaN
    ([[2**62, 2**62], [2**62, 1]], None),  # integers (a sum may wrap): never NaN
])
def test_first_nonfinite_index_is_the_first_row_with_a_nonfinite_entry(values, expected):
    arr = np.array(values)
    bad = ~np.isfinite(arr)
    assert first_nonfinite_index(arr) == (int(np.argwhere(bad)[0][0]) if bad.any() else None) == expected
    if np.all(np.abs(arr[np.isfinite(arr)]) < 1e30):
        assert first_nonfinite_index(arr.astype(np.float32)) == expected


def _plain_code(outputs, column):
    """A column's distinct rounded values and each output's index among them, by np.unique; None where its values
    other than NaN all differ (a NaN is never a feature)."""
    counted = arithmetic.round_significand(outputs[:, column])
    numbers = counted[~np.isnan(counted)]
    if len(np.unique(numbers)) == len(numbers):
        return None
    values, index = np.unique(counted, return_inverse=True)
    return values, index.ravel()


def test_counting_codes_columns_together_as_np_unique_codes_each(monkeypatch):
    from audit.statistics.counting import CountingFolds

    monkeypatch.setattr("audit.statistics.counting.CODED_TOGETHER", 5)
    rng = np.random.default_rng(6)
    y = rng.normal(size=(200, 23))
    y[:, 0] = rng.integers(0, 4, 200)
    y[:, 1] = rng.integers(-2, 3, 200) * 1.0
    y[rng.random(200) < 0.2, 1] = -0.0
    y[rng.random(200) < 0.3, 2] = np.nan
    y[:, 3] = np.round(y[:, 3], 1)
    y[:, 4] = 1 + rng.integers(0, 3, 200) * 2.0**-40  # equal once rounded to 32 bits
    y[:, 5] = 7.0  # constant: not coded
    folds = CountingFolds(y)
    folds._code_all()
    assert sorted(folds._coded) == folds._varying == [j for j in range(23) if j != 5]
    for j in folds._varying:
        expected, got = _plain_code(y, j), folds._coded[j]
        if expected is None or got is None:
            assert expected is got is None, j
        else:
            values, index = got
            np.testing.assert_array_equal(values, expected[0])
            np.testing.assert_array_equal(values[index], expected[0][expected[1]])
