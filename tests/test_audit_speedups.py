"""The per-audit speed-ups against straightforward references written here: the joint binomial tail computed
from tables and windows (audit.certificates.joint_binomial) against its direct matrix formula, bit for bit; the
ideal rounding shared by the statistics that score one batch of runs (audit.statistics.arithmetic.RoundedOutputs)
against a fresh rounding per call; the μ certificate given its already chosen points against choosing them again
(audit.certificates.gaussian_dp.point_grid), and its counts at the chosen threshold against counting; and whole
catalog audits, with every one of these replaced by its reference, giving the same result. Also the shortcuts that
skip work whose outcome is known: the approximate size of the joint test not refined past its limit, the counting
statistic's columns of all-distinct values not coded, and the Clopper–Pearson bounds the two directions of the μ
certificate's choice of points share computed once, each against the full computation."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import special

import audit.certificates.joint_binomial as joint_binomial
import audit.search.event_search as event_search_module
import audit.certificates.gaussian_dp as gaussian_dp
from audit.certificates.event_bounds import _cp_side
from audit.certificates.gaussian_dp import gdp_certificate, point_grid
from audit.engine import run_audit
from audit.statistics import arithmetic
from audit.statistics.arithmetic import RoundedOutputs, round_significand
from audit.statistics.counting import CountingFolds
from estimators.validation import InputError
from experiments.audit_power import catalog_spec
from experiments.dp_epsilon_benchmark import miaudit_split
from estimators.neural import CriticConfig
from mechanisms.catalog import get_entry


def _reference_tail(fpr, fnr, weights, level_count, runs, window_sds=7.0):
    """P(a·X/n + b·Y/n' ≤ c) bounded as joint_tail_probability's docstring says, written out directly: every
    window a row of one (rows × widest window) matrix of counts, each probability from log-factorials indexed count
    by count, the sum over x of P(X = x)·P(Y ≤ ⌊(c − a·x/n)·n'/b + 1e-9⌋), and the mass outside the windows."""
    (a, b), (n1, n2) = weights, runs
    p, q = np.atleast_1d(np.asarray(fpr, dtype=np.float64)), np.atleast_1d(np.asarray(fnr, dtype=np.float64))

    def cdf(k, n, r):
        k = np.asarray(k, dtype=np.float64)
        return np.where(k < 0, 0.0, np.where(k >= n, 1.0, special.bdtr(np.clip(k, 0, n), n, np.clip(r, 0.0, 1.0))))

    def window(n, r):
        sd = np.sqrt(n * r * (1.0 - r)) + 1.0
        low = np.clip(np.floor(n * r - window_sds * sd), 0, n)
        high = np.clip(np.ceil(n * r + window_sds * sd), 0, n)
        counts = np.minimum(low[:, None] + np.arange(int(np.max(high - low)) + 1)[None, :], n)
        inside = low[:, None] + np.arange(counts.shape[1])[None, :] <= high[:, None]
        log_fact = special.gammaln(np.arange(n + 1, dtype=np.float64) + 1.0)
        index = counts.astype(np.int64)
        tiny = np.finfo(np.float64).tiny
        log_pmf = (log_fact[n] - log_fact[index] - log_fact[n - index] + counts * np.log(np.maximum(r, tiny))[:, None]
                   + (n - counts) * np.log(np.maximum(1.0 - r, tiny))[:, None])
        return low, high, counts, np.where(inside, np.exp(log_pmf), 0.0), inside

    x_cap = min(n1, math.floor(level_count * n1 / a + 1e-9))
    y_cap = min(n2, math.floor(level_count * n2 / b + 1e-9))
    if x_cap < 0 or y_cap < 0:
        return np.zeros(p.shape)
    bound = np.minimum(cdf(x_cap, n1, p), cdf(y_cap, n2, q))
    active = np.nonzero(bound > 1e-300)[0]
    if active.size == 0:
        return bound
    pa, qa = p[active], q[active]
    x_low, x_high, x, x_pmf, _ = window(n1, pa)
    y_low, _, _, y_pmf, y_inside = window(n2, qa)
    below = cdf(y_low - 1, n2, qa)
    y_cdf = np.where(y_inside, below[:, None] + np.cumsum(y_pmf, axis=1), 1.0)
    y_max = np.floor((level_count - a * x / n1) * n2 / b + 1e-9)
    offset = (y_max - y_low[:, None]).astype(np.int64)
    looked_up = y_cdf[np.arange(len(active))[:, None], np.clip(offset, 0, y_cdf.shape[1] - 1)]
    cdf_at = np.where(y_max < 0, 0.0, np.where(offset < 0, below[:, None], np.where(offset >= y_cdf.shape[1], 1.0,
                                                                                     looked_up)))
    terms = np.where(x <= x_cap, x_pmf * cdf_at, 0.0)
    outside = cdf(x_low - 1, n1, pa) + np.maximum(cdf(x_cap, n1, pa) - cdf(x_high, n1, pa), 0.0)
    bound[active] = np.minimum(bound[active], terms.sum(axis=1) + outside)
    return bound


def _tail_cases(count: int, seed: int = 0):
    """Random (fpr, fnr, weights, level, runs): points of trade-off curves and uniform rates, windows of many widths
    in one batch, levels from counts and from rates, runs from a handful to the benchmark's 23,333 per input."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n1, n2 = (int(v) for v in rng.choice([5, 40, 300, 3000, 22562, 23333], 2))
        rows = int(rng.integers(1, 40))
        if rng.random() < 0.7:
            u, mu = rng.normal(0, 2, rows), rng.uniform(0, 4)
            p, q = special.ndtr(-u), special.ndtr(u - mu)
        else:
            p, q = rng.uniform(0, 1, rows), rng.uniform(0, 1, rows)
        a, b = rng.uniform(0.5, 20, 2)
        level = (a * rng.integers(0, n1 + 1) / n1 + b * rng.integers(0, n2 + 1) / n2 if rng.random() < 0.5
                 else a * rng.uniform(0, 0.5) + b * rng.uniform(0, 0.5))
        yield p, q, (float(a), float(b)), float(level), (n1, n2)


def test_joint_tail_probability_is_the_direct_window_sum_bit_for_bit():
    for p, q, weights, level, runs in _tail_cases(400):
        assert np.array_equal(joint_binomial.joint_tail_probability(p, q, weights, level, runs),
                              _reference_tail(p, q, weights, level, runs)), (weights, level, runs)


def test_joint_tail_probability_with_narrow_windows_is_the_direct_sum(monkeypatch):
    # The tables are padded for the widest window of each call, whatever the windows' standard deviations.
    monkeypatch.setattr(joint_binomial, "_WINDOW_SDS", 1.0)
    for p, q, weights, level, runs in _tail_cases(60, seed=1):
        assert np.array_equal(joint_binomial.joint_tail_probability(p, q, weights, level, runs),
                              _reference_tail(p, q, weights, level, runs, window_sds=1.0))


def _mu_cases(seed: int, count: int = 6) -> list:
    """Random (false positives, false negatives, runs, weights, α) of joint_binomial_mu: up to 24,000 runs an input,
    the weights those of points of trade-off curves."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(count):
        n1, n2 = (int(v) for v in rng.integers(2000, 24000, 2))
        fp, fn = int(rng.integers(100, n1 // 3)), int(rng.integers(100, n2 // 3))
        weights = (float(1 / special.ndtr(rng.uniform(-2, 0))), float(1 / special.ndtr(rng.uniform(-2, 0))))
        cases.append((fp, fn, (n1, n2), weights, 0.05))
    return cases


def test_joint_binomial_mu_is_the_same_with_the_direct_window_sum(monkeypatch):
    cases = _mu_cases(2)
    fast = [joint_binomial.joint_binomial_mu(*case) for case in cases]
    monkeypatch.setattr(joint_binomial, "joint_tail_probability", _reference_tail)
    assert [joint_binomial.joint_binomial_mu(*case) for case in cases] == fast
    assert any(mu > 0 for mu in fast)  # the comparison covers the bisection and the rigorous check


def test_rounded_outputs_rounds_each_batch_once_and_hands_out_copies(monkeypatch):
    calls = []

    def counted(outputs, bits=arithmetic.IDEAL_SIGNIFICANT_BITS, device=None):
        calls.append(outputs)
        return round_significand(outputs, bits, device)
    monkeypatch.setattr(arithmetic, "round_significand", counted)
    rng = np.random.default_rng(3)
    first, second, third = (rng.laplace(0, 3, (50, 4)) for _ in range(3))
    rounding = RoundedOutputs()
    got = [rounding(batch) for batch in (first, second, first, second)]
    assert len(calls) == 2  # each batch rounded once
    for batch, values in zip((first, second, first, second), got):
        assert np.array_equal(values, round_significand(batch))
    got[0][:] = 0.0  # a statistic that writes into its input changes nobody else's
    assert np.array_equal(rounding(first), round_significand(first))
    rounding(third)  # the oldest batch falls out of the two kept
    rounding(first)
    assert len(calls) == 4
    # An equal array that is another object is rounded again (a batch is known by its identity).
    rounding(first.copy())
    assert len(calls) == 5
    # A batch larger than the cache's limit is rounded at every call, and keeps nothing.
    monkeypatch.setattr(arithmetic, "ROUNDING_CACHE_BYTES", first.nbytes - 1)
    wide = RoundedOutputs()
    assert np.array_equal(wide(first), round_significand(first)) and np.array_equal(wide(first), round_significand(first))
    assert len(calls) == 7 and not wide._recent


def test_gdp_certificate_given_its_chosen_points_is_the_certificate_that_chooses_them():
    rng = np.random.default_rng(4)
    for shift, size in ((0.5, 3000), (1.5, 800), (0.0, 2000)):
        selection = (rng.normal(shift, 1, size), rng.normal(0, 1, size + 7))
        scores = (np.round(rng.normal(shift, 1, size + 11), 1), np.round(rng.normal(0, 1, size - 5), 1))  # ties
        grid = point_grid(*selection, len(scores[0]), len(scores[1]), 0.05)
        chosen = gdp_certificate(*scores, alpha=0.05, selection=selection, delta=1e-5)
        assert gdp_certificate(*scores, alpha=0.05, selection=selection, delta=1e-5, grid=grid) == chosen
        assert grid.predicted == grid.chosen[0][0]
        # The observed rates at the threshold are the counts of the scores on its two sides.
        above = [int(np.sum(s > chosen.threshold)) for s in scores]
        fp, fn = ((above[1], len(scores[0]) - above[0]) if chosen.direction == "s > t"
                  else (len(scores[0]) - above[0], above[1]))
        n_fp, n_fn = (len(scores[1]), len(scores[0])) if chosen.direction == "s > t" else (len(scores[0]), len(scores[1]))
        assert (chosen.fpr_observed, chosen.fnr_observed) == (fp / n_fp, fn / n_fn)
    with pytest.raises(InputError, match="argument 'grid'"):
        gdp_certificate(*scores, alpha=0.01, selection=selection, grid=grid)
    with pytest.raises(InputError, match="argument 'grid'"):
        gdp_certificate(scores[0][:-1], scores[1], alpha=0.05, selection=selection, grid=grid)


def _full_size(mu, weights, level_count, runs, alpha, caps, limit=None, size=joint_binomial._joint_size):
    """The approximate size always refined (the limit ignored)."""
    return size(mu, weights, level_count, runs, alpha, caps)


def test_joint_size_past_its_limit_answers_as_the_refined_size():
    checked = {True: 0, False: 0}
    for fp, fn, (n1, n2), weights, _ in _mu_cases(5, 8):
        level = weights[0] * fp / n1 + weights[1] * fn / n2
        caps = joint_binomial._stretch_of(weights, level, (n1, n2), 0.05)
        for mu in np.linspace(0.0, 3.0, 13):
            full = _full_size(mu, weights, level, (n1, n2), 0.05, caps)
            for limit in (0.045, 0.05, full, 1.0):  # the limit at the size itself: the refinement must run
                got = joint_binomial._joint_size(mu, weights, level, (n1, n2), 0.05, caps, limit=limit)
                # Within the limit, the refined size itself; past it, some value past it.
                assert got == full if full <= limit else got > limit
                checked[full <= limit] += 1
    assert checked[True] and checked[False]  # both answers occur


def test_joint_binomial_mu_is_the_same_with_the_size_always_refined(monkeypatch):
    cases = _mu_cases(6)
    fast = [joint_binomial.joint_binomial_mu(*case) for case in cases]
    monkeypatch.setattr(joint_binomial, "_joint_size", _full_size)
    assert [joint_binomial.joint_binomial_mu(*case) for case in cases] == fast
    assert any(mu > 0 for mu in fast) and any(mu == 0 for mu in fast)


def _code_every_column(self, column):
    """CountingFolds._code without its screen: every column coded by np.unique."""
    if column not in self._coded:
        values, index = np.unique(round_significand(self.outputs[:, column]), return_inverse=True)
        self._coded[column] = (values, index.ravel())
    return self._coded[column]


def test_counting_folds_skip_all_distinct_columns_to_the_same_fits(monkeypatch):
    rng = np.random.default_rng(7)
    n = 3000
    continuous = rng.laplace(0, 1, n)
    nan_repeated = rng.normal(0, 1, n)
    nan_repeated[rng.choice(n, 40, replace=False)] = np.nan  # repeated NaNs, no repeated number
    signed_zero = rng.normal(0, 1, n)
    signed_zero[:20], signed_zero[20:40] = 0.0, -0.0  # equal values of two bit patterns
    one_atom = rng.normal(0, 1, n)
    one_atom[rng.random(n) < 0.03] = 7.0  # a continuous column with one atom
    below_rounding = 1.0 + rng.integers(0, 2, n) * 2.0 ** -40  # distinct doubles, equal once rounded to 32 bits
    discrete = rng.integers(0, 5, n).astype(float)
    nan_and_atoms = rng.integers(1, 6, n).astype(float)
    nan_and_atoms[rng.choice(n, 40, replace=False)] = np.nan
    outputs = np.column_stack([continuous, nan_repeated, signed_zero, one_atom, below_rounding, discrete,
                               nan_and_atoms])
    is_first = rng.random(n) < 0.5
    outputs[is_first & (rng.random(n) < 0.05), 5] = 9.0  # a value of the first input only
    outputs[~is_first & (rng.random(n) < 0.05), 3] = -3.0

    def fits(folds):
        found = []
        for k in range(3):
            rows = np.flatnonzero(np.arange(n) % 3 != k)
            statistic = folds.fit(rows, is_first[rows])
            found.append(None if statistic is None else (
                {c: (v.tobytes(), e.tobytes()) for c, (v, e) in statistic.features.items()},
                folds.scores(statistic, np.arange(n)).tobytes(), statistic(outputs).tobytes()))
        return found
    fast_folds = CountingFolds(outputs)
    fast = fits(fast_folds)
    for column in range(outputs.shape[1]):  # a column coded is coded as np.unique codes it, bit for bit
        coded = fast_folds._code(column)
        if coded is not None:
            values, index = np.unique(round_significand(outputs[:, column]), return_inverse=True)
            assert coded[0].tobytes() == values.tobytes() and np.array_equal(coded[1], index.ravel())
    assert {c for c, coded in fast_folds._coded.items() if coded is None} == {0, 1}  # the screen skipped these
    assert all(f is not None for f in fast) and {3, 5} <= set(fast[0][0])
    monkeypatch.setattr(CountingFolds, "_code", _code_every_column)
    assert fits(CountingFolds(outputs)) == fast


class _UnsharedUpperBounds:
    """_SharedUpperBounds computing every bound afresh."""

    def __call__(self, counts, runs, level):
        return _cp_side(counts, runs, level, lower=False)

    def at_expected_count(self, rate, runs, level):
        return _cp_side(rate * runs, runs, level, lower=False)


def test_choice_of_points_with_shared_bounds_is_the_choice_computing_each(monkeypatch):
    rng = np.random.default_rng(8)
    cases = [((rng.normal(shift, 1, size), rng.normal(0, 1, size + 13)), runs, method)
             for shift, size, runs in ((0.5, 3000, (23333, 22000)), (2.0, 900, (4000, 4100)), (0.0, 2000, (2000, 2000)))
             for method in ("joint-binomial", "clopper-pearson-grid")]
    shared = [gaussian_dp._choose_grid(*selection, *runs, 0.05, 3, method) for selection, runs, method in cases]
    monkeypatch.setattr(gaussian_dp, "_SharedUpperBounds", _UnsharedUpperBounds)
    assert [gaussian_dp._choose_grid(*selection, *runs, 0.05, 3, method) for selection, runs, method in cases] == shared


def _result(name: str, total_runs: int, seed: int) -> dict:
    """The benchmark's miaudit audit of a catalog entry (experiments.dp_epsilon_benchmark.miaudit_audit's spec),
    as a dict without its wall times."""
    samples, event_runs = miaudit_split(total_runs)
    spec = replace(catalog_spec(get_entry(name), samples, seed, CriticConfig(max_steps=200), 0, "cpu"),
                   event_runs=event_runs)
    result = run_audit(spec).to_dict()

    def without_seconds(value):
        if isinstance(value, dict):
            return {k: without_seconds(v) for k, v in value.items() if k != "seconds"}
        if isinstance(value, list):
            return [without_seconds(v) for v in value]
        return value
    return without_seconds(result)


@pytest.mark.parametrize("name", ["laplace_sum", "histogram_buggy"])
def test_an_audit_is_the_same_with_the_straightforward_references(name, monkeypatch):
    fast = _result(name, 9000, 11)
    assert fast["event_test"]["gaussian_dp"]["mu_lower_bound"] > 0  # the joint test ran on both paths
    monkeypatch.setattr(joint_binomial, "joint_tail_probability", _reference_tail)
    monkeypatch.setattr(RoundedOutputs, "__call__", lambda self, outputs: round_significand(outputs))
    certificate = event_search_module.gdp_certificate
    monkeypatch.setattr(event_search_module, "gdp_certificate",
                        lambda *scores, grid=None, **settings: certificate(*scores, **settings))
    monkeypatch.setattr(joint_binomial, "_joint_size", _full_size)
    monkeypatch.setattr(CountingFolds, "_code", _code_every_column)
    monkeypatch.setattr(gaussian_dp, "_SharedUpperBounds", _UnsharedUpperBounds)
    assert _result(name, 9000, 11) == fast
