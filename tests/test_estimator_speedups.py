"""The estimators' and statistics' speed-ups against straightforward references written here: order statistics
from one partition (estimators.scaling.order_statistics, the critics' robust standardization) against a full sort,
bit for bit, on continuous and tied data; the counting statistic cross-fitted from columns coded once
(audit.statistics.counting.CountingFolds) against each fold's outputs rounded, counted and scored afresh; the
candidate caps computed once for a fit's per-slice and sliced certificates (estimators.certify.cap_candidates)
against each critic's own quantiles, and the certificates given them against those that compute them; the critics'
samples taken by np.take on the CPU (estimators.device.samples_of) against torch's indexing, and their finiteness
checked by np.isfinite (estimators.device.all_finite) against a check of every value; the critic inputs computed
in place (estimators.standardization.critic_inputs) against their formula in NumPy."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from audit.statistics.arithmetic import round_significand
from audit.statistics.classifier_critic import cross_fit, stratified_folds
from audit.statistics.counting import FAR_LESS, MIN_FEATURE_COUNT, CountingStatistic
from estimators.certify import cap_candidates, certify_critics, sliced_lower_bound
from estimators.device import all_finite, samples_of
from estimators.scaling import order_statistics
from estimators.standardization import COMPRESS_BEYOND, critic_inputs, robust_standardization


def _data(kind: str, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        return rng.standard_normal(shape)
    if kind == "tied":  # a handful of values, each many times
        return rng.integers(-2, 3, size=shape).astype(np.float64)
    return np.where(rng.random(shape) < 0.9, 1.5, rng.standard_normal(shape))  # one atom holding 90%


@pytest.mark.parametrize("kind", ["continuous", "tied", "atom"])
def test_order_statistics_are_those_of_the_sorted_values(kind):
    values = _data(kind, (7, 301, 3), seed=1)
    for axis in (0, 1, 2):
        n = values.shape[axis]
        ranks = sorted({0, n // 4, n // 2, (3 * n) // 4, n - 1})
        ordered = np.sort(values, axis=axis)
        for rank, found in zip(ranks, order_statistics(values, ranks, axis=axis)):
            expected = np.take(ordered, [rank], axis=axis)
            assert found.shape == expected.shape and found.tobytes() == expected.tobytes(), (kind, axis, rank)


@pytest.mark.parametrize("kind", ["continuous", "tied", "atom"])
def test_critic_standardization_is_the_median_and_iqr_of_the_sorted_training_values(kind):
    values = _data(kind, (5, 400, 2), seed=2)
    train = np.random.default_rng(3).permutation(400)[:257]
    centre, scale = robust_standardization(torch.as_tensor(values), torch.as_tensor(train))
    halves = np.sort(values[:, train] * 0.5, axis=1)  # the statistics are those of u / 2
    at = [int(round(q * (len(train) - 1))) for q in (0.25, 0.5, 0.75)]
    assert centre.numpy().tobytes() == halves[:, at[1]:at[1] + 1].tobytes()
    iqr_scale = (halves[:, at[2]] - halves[:, at[0]]) / 1.349
    positive = iqr_scale > 0
    assert np.array_equal(scale.numpy()[:, 0][positive], iqr_scale[positive])
    if kind == "continuous":
        assert positive.all()
    else:  # a zero IQR falls back to the standard deviation, positive where the values vary
        assert (scale.numpy()[:, 0] > 0).all()


def _counting_outputs(n: int, seed: int):
    """Draws of two inputs with the columns a counting statistic meets: continuous, discrete with a value one input
    adds, a rare sentinel, a constant, NaNs, zeros of both signs with a value of the other input, and values that
    differ only below the rounding."""
    rng = np.random.default_rng(seed)
    is_first = rng.random(n) < 0.5
    columns = [rng.standard_normal(n),
               rng.integers(0, 20, n) + (is_first & (rng.random(n) < 0.05)) * 100,
               np.where(is_first & (rng.random(n) < 0.01), 7.25, 0.0),
               np.full(n, 3.0),
               np.where(rng.random(n) < 0.02, np.nan, rng.integers(0, 3, n).astype(float)),
               np.where(rng.random(n) < 0.5, -0.0, 0.0) + np.where(~is_first & (rng.random(n) < 0.03), 1.0, 0.0),
               np.where(is_first, np.where(rng.random(n) < 0.5, -0.0, 0.0), 2.0 + rng.integers(0, 2, n)),
               np.round(rng.standard_normal(n), 1) * (1 + 1e-12 * rng.standard_normal(n))]
    return is_first, np.stack(columns, axis=1)


def _fold_reference(outputs, is_first, train, held):
    """One fold's fit written out from the module docstring on the fold's own rounded outputs: per column, each
    value's count under either input (np.unique of the training rows), ℓ = log((c₁ + ½)/(n₁ + 1)) −
    log((c₂ + ½)/(n₂ + 1)), the one-sided values (seen at least MIN_FEATURE_COUNT times, never under one input or
    |ℓ| ≥ log FAR_LESS, not NaN); and the held-out rows' scores, the sum over columns of ℓ at their value."""
    rounded = round_significand(outputs)
    labels = is_first[train]
    n_first, n_second = int(labels.sum()), int((~labels).sum())
    features, scores = {}, np.zeros(len(held))
    for column in range(outputs.shape[1]):
        values, index, counts = np.unique(rounded[train, column], return_inverse=True, return_counts=True)
        c_first = np.bincount(index.ravel()[labels], minlength=len(values)).astype(np.float64)
        c_second = counts - c_first
        ell = np.log((c_first + 0.5) / (n_first + 1.0)) - np.log((c_second + 0.5) / (n_second + 1.0))
        one_sided = (counts >= MIN_FEATURE_COUNT) & ((c_first == 0) | (c_second == 0) | (np.abs(ell) >= np.log(FAR_LESS)))
        one_sided &= ~np.isnan(values)
        if one_sided.any():
            features[column] = (values[one_sided], ell[one_sided], c_first[one_sided], c_second[one_sided])
            weight = dict(zip(values[one_sided].tolist(), ell[one_sided].tolist()))
            scores = scores + np.array([weight.get(value, 0.0) for value in rounded[held, column].tolist()])
    return features, scores


@pytest.mark.parametrize("n, seed", [(3000, 0), (400, 1)])
def test_counting_statistic_cross_fitted_from_columns_coded_once_is_each_folds_own_fit(n, seed):
    is_first, outputs = _counting_outputs(n, seed)
    fold = stratified_folds(is_first, 3, np.random.default_rng(seed))
    fitted = cross_fit(CountingStatistic, is_first, outputs, fold, seed)
    for k, model in enumerate(fitted.statistic.models):
        train, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
        features, scores = _fold_reference(outputs, is_first, train, held)
        assert sorted(model.features) == sorted(features) and features, k
        for column, (values, ell, c_first, c_second) in features.items():
            found_values, found_ell = model.features[column]
            assert np.array_equal(found_values, values)  # == : a zero of either sign is the same feature
            assert found_ell.tobytes() == ell.tobytes()
            assert np.array_equal(model.counts[column][0], c_first) and np.array_equal(model.counts[column][1], c_second)
        assert fitted.out_of_fold[held].tobytes() == scores.tobytes(), k
        # The fitted statistic scores fresh outputs as the reference does (its own rounding and lookup).
        assert model(outputs[held]).tobytes() == scores.tobytes(), k


def test_cap_candidates_are_each_critics_quantiles_and_serve_both_certificates_unchanged():
    rng = np.random.default_rng(4)
    critics, lo, hi = 6, -2.0, 3.0
    joint = np.clip(rng.normal(0.5, 1.0, (critics, 300)), lo, hi)
    product = np.clip(rng.normal(-0.5, 1.0, (critics, 150)), lo, hi)
    joint[2] = np.round(joint[2])  # tied values
    product[4] = hi  # a critic at its top everywhere on the product draws
    candidates = cap_candidates(joint, product, hi)
    levels = [0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 1.0]
    for m in range(critics):  # one critic at a time: its own pooled values' quantiles, then hi, none above hi
        own = np.minimum(np.append(np.quantile(np.concatenate((joint[m], product[m])), levels), hi), hi)
        assert candidates[m].tobytes() == own.tobytes(), m
    fit = SimpleNamespace(output_range=(lo, hi), validation_joint=joint, validation_product=product,
                          test_joint=np.clip(rng.normal(0.5, 1.0, (critics, 200)), lo, hi),
                          test_product=np.clip(rng.normal(-0.5, 1.0, (critics, 100)), lo, hi))
    for delta in (0.05, 0.05 / critics):
        bounds, caps = certify_critics(fit, delta)
        given_bounds, given_caps = certify_critics(fit, delta, candidates=candidates)
        assert bounds.tobytes() == given_bounds.tobytes() and caps.tobytes() == given_caps.tobytes()
        for terms in (slice(0, critics), slice(1, 4), np.array([5, 0, 2])):
            assert sliced_lower_bound(fit, terms, delta) == sliced_lower_bound(fit, terms, delta, candidates=candidates)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_samples_of_is_torch_indexing_along_the_sample_axis(dtype):
    generator = torch.Generator().manual_seed(5)
    values = torch.randn(6, 50, 3, generator=generator, dtype=dtype)
    index = np.random.default_rng(6).permutation(50)[:17]
    for tensor in (values, values[:, :, 1:], values.transpose(0, 1).contiguous().transpose(0, 1)):  # strided too
        expected = tensor[:, torch.as_tensor(index)]
        for given in (index, torch.as_tensor(index), index.tolist()):
            taken = samples_of(tensor, given)
            assert taken.dtype == dtype and taken.is_contiguous() and torch.equal(taken, expected)
    trained = values.clone().requires_grad_()  # no NumPy view of a tensor that requires grad: torch's indexing
    assert torch.equal(samples_of(trained, index), values[:, torch.as_tensor(index)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_all_finite_is_every_value_finite(dtype):
    import math

    generator = torch.Generator().manual_seed(8)
    clean = torch.randn(4, 30, 2, generator=generator, dtype=dtype)
    cases = [clean, clean[:, ::3], torch.empty(0, 5, dtype=dtype), clean.clone().requires_grad_()]
    for bad in (math.nan, math.inf, -math.inf):
        for where in ((0, 0, 0), (3, 29, 1), (2, 11, 0)):
            spoiled = clean.clone()
            spoiled[where] = bad
            cases += [spoiled, spoiled.transpose(0, 1)]
    for tensor in cases:
        expected = all(math.isfinite(value) for value in tensor.detach().reshape(-1).tolist())
        assert all_finite(tensor) is expected
        assert all_finite(clean, tensor) is expected and all_finite(tensor, clean) is expected
    assert all_finite() is True


def test_critic_inputs_are_their_formula_computed_afresh():
    rng = np.random.default_rng(9)
    u = rng.standard_normal((3, 400, 2)) * np.array([1.0, 1e5])  # the second feature reaches past COMPRESS_BEYOND
    u[1, 17, 0], u[2, 3, 1] = 1e300, -1e300
    centre, scale = rng.standard_normal((3, 1, 2)) * 0.1, rng.random((3, 1, 2)) + 0.5
    for values in (u, u[:, :, :1], u[:, :0]):  # outliers, none beyond the bound, no samples
        c, s = centre[:, :, :values.shape[2]], scale[:, :, :values.shape[2]]
        t = (values * 0.5 - c) / s
        with np.errstate(divide="ignore"):
            compressed = np.sign(t) * COMPRESS_BEYOND * (1.0 + np.log(np.abs(t) / COMPRESS_BEYOND))
        expected = np.where(np.abs(t) > COMPRESS_BEYOND, compressed, t).astype(np.float32)
        found = critic_inputs(torch.as_tensor(values), torch.as_tensor(c), torch.as_tensor(s)).numpy()
        assert found.dtype == np.float32 and found.shape == expected.shape
        assert found.tobytes() == expected.tobytes()
