"""Cross-fitted event statistics (audit/statistics/classifier_critic.py): stratified folds, the out-of-fold property,
the fold mixture's coins, and that the mixture's law on fresh outputs is the out-of-fold scores' law."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from audit.statistics.classifier_critic import FoldMixture, cross_fit, stratified_folds
from audit.statistics.classifier import LogOdds
from estimators.validation import InputError


def test_stratified_folds_deal_each_database_in_turn():
    # 10 draws of the first database, 7 of the second, 3 folds. Dealt in turn: the first database's draws
    # get folds 0,1,2,0,1,2,0,1,2,0 (4, 3, 3 of them); the second's deal starts where that stopped, at
    # fold 10 mod 3 = 1: 1,2,0,1,2,0,1 (2, 3, 2). Totals 6, 6, 5.
    is_first = np.array([True] * 10 + [False] * 7)
    np.random.default_rng(0).shuffle(is_first)
    fold = stratified_folds(is_first, 3, np.random.default_rng(1))
    assert [int(np.sum(fold[is_first] == k)) for k in range(3)] == [4, 3, 3]
    assert [int(np.sum(fold[~is_first] == k)) for k in range(3)] == [2, 3, 2]
    assert np.bincount(fold).tolist() == [6, 6, 5]


def test_stratified_folds_are_random_and_seeded():
    is_first = np.arange(40) % 2 == 0
    a = stratified_folds(is_first, 4, np.random.default_rng(3))
    assert np.array_equal(a, stratified_folds(is_first, 4, np.random.default_rng(3)))
    assert not np.array_equal(a, stratified_folds(is_first, 4, np.random.default_rng(4)))


@pytest.mark.parametrize("folds", [1, 0, 2.5, True])
def test_stratified_folds_need_two_or_more_folds_naming_the_argument(folds):
    with pytest.raises(InputError, match="argument 'folds'"):
        stratified_folds(np.array([True, False]), folds, np.random.default_rng(0))


class _Memorizer:
    """A 'classifier' that remembers the draws it was fitted on (outputs are draw ids): scores 1 on them, else 0."""

    def __init__(self, ids):
        self.ids = set(np.asarray(ids).ravel().tolist())

    @classmethod
    def fit(cls, first_outputs, second_outputs):
        return cls(np.concatenate([first_outputs, second_outputs]))

    def __call__(self, outputs):
        return np.array([1.0 if v in self.ids else 0.0 for v in np.asarray(outputs).ravel()])


def test_every_draw_is_scored_by_a_model_not_fitted_on_it_and_each_model_fits_all_other_folds():
    n = 30
    outputs = np.arange(n, dtype=np.float64)[:, None]  # the draw's id
    is_first = np.arange(n) % 3 != 0
    fold = stratified_folds(is_first, 3, np.random.default_rng(0))
    fitted = cross_fit(_Memorizer, is_first, outputs, fold, seed=0)
    assert np.all(fitted.out_of_fold == 0.0)  # a model fitted on a draw would score it 1
    for k, model in enumerate(fitted.statistic.models):
        assert model.ids == set(np.flatnonzero(fold != k).tolist())


def test_cross_fit_is_none_where_a_fold_model_cannot_be_fitted():
    class Refuses(_Memorizer):
        @classmethod
        def fit(cls, first_outputs, second_outputs):
            return None
    is_first = np.arange(12) % 2 == 0
    fold = stratified_folds(is_first, 3, np.random.default_rng(0))
    assert cross_fit(Refuses, is_first, np.zeros((12, 1)), fold, seed=0) is None


class _Constant:
    def __init__(self, value):
        self.value = value

    def __call__(self, outputs):
        return np.full(len(outputs), float(self.value))


def test_the_mixture_draws_one_model_per_output_uniformly_from_its_seeded_coins():
    mixture = FoldMixture([_Constant(0), _Constant(1), _Constant(2)], seed=5)
    scores = mixture(np.zeros((30000, 2)))
    counts = np.bincount(scores.astype(int), minlength=3)
    # Each model on 1/3 of the outputs: a chi-square test of uniformity (df = 2) at a 1e-4 level.
    assert stats.chisquare(counts).pvalue > 1e-4
    again = FoldMixture([_Constant(0), _Constant(1), _Constant(2)], seed=5)
    assert np.array_equal(again(np.zeros((30000, 2))), scores)  # seeded: the same coins


def test_the_mixtures_law_on_fresh_outputs_is_the_out_of_fold_law_where_a_fold_average_is_not():
    # N(0, 1) against N(0, 3²): the linear logistic's slope is noise, of either sign from fold to fold
    # (found for this seed below), so an average of the fold models is nearly constant while each model
    # ranks by ±y. The mixture scores a fresh draw as a held-out draw is scored out of fold.
    rng = np.random.default_rng(2)  # slopes -0.020, 0.023, -0.070 (three folds)
    n = 6000
    is_first = rng.random(n) < 0.5
    outputs = np.where(is_first, 1.0, 3.0)[:, None] * rng.normal(size=(n, 1))
    fold = stratified_folds(is_first, 3, rng)
    fitted = cross_fit(LogOdds, is_first, outputs, fold, seed=11)
    slopes = [float(m.coef[0]) for m in fitted.statistic.models]
    assert min(slopes) < 0 < max(slopes)
    fresh = np.where(is_first, 1.0, 3.0)[:, None] * rng.normal(size=(n, 1))  # a fresh draw of each
    for database in (is_first, ~is_first):
        held = fitted.out_of_fold[database]
        mixture = fitted.statistic(fresh[database])
        average = np.mean([m(fresh[database]) for m in fitted.statistic.models], axis=0)
        assert stats.ks_2samp(held, mixture).pvalue > 1e-3
        assert stats.ks_2samp(held, average).pvalue < 1e-6
