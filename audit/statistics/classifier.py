"""Likelihood-ratio statistics between two neighbouring inputs fitted on outputs: a logistic
regression, and the empirical log-ratio of discrete outputs.

For two inputs D₁, D₂ drawn with probabilities π and 1 − π, the Bayes classifier's log-odds
of D₁ given an output y is log(p₁(y)/p₂(y)) + log(π/(1 − π)): up to a constant, the
log-likelihood ratio, which by the Neyman–Pearson lemma orders the outputs as the most powerful
tests between the two inputs do (Neyman and Pearson 1933). A logistic regression on features of
the output estimates that log-odds within the model log p₁/p₂ = βᵀφ(y) + c, which is exact for
an output with independent coordinates whose log-ratios are linear in φ (every column one-hot
encoded where it takes few values). This is the statistic of the classifier-based DP auditors
(Jagielski, Ullman and Oprea 2020, Section 3; Lu et al. 2022), with DP-Sniper's one-hot
encoding of discrete outputs (Bichsel et al. 2021); the event test offers it beside the trained
critic's T(a, y) − T(b, y) (:mod:`audit.search.event_search`), and which one is used is chosen on
held-out draws, not on the runs that certify.
"""

from __future__ import annotations

import numpy as np

from estimators.device import blas_threads
from estimators.validation import InputError

from audit.statistics.distinct_values import FIRST_ROWS, columns_up_to, distinct_rows, float_rows, row_counts_per_input

#: A column with more than 2 and at most this many distinct values is also one-hot encoded.
MAX_ONE_HOT_VALUES = 16

#: The most hinge knots per column with many values (:class:`OutputFeatures` with ``quadratic``).
HINGE_KNOTS = 3


class OutputFeatures:
    """Raw output columns plus one-hot indicators of every column with few distinct values, standardized.

    The levels, means and scales are read from the outputs given at construction (the training
    draws); a value not seen there gets no indicator. With ``quadratic``, every column with more
    than :data:`MAX_ONE_HOT_VALUES` values also gets its square (over its largest training
    magnitude), so that a log-odds linear in the features can be any quadratic in such a column:
    the exact log-likelihood ratio of two Gaussians with different means and variances; and hinges
    max(y − k, 0) at up to :data:`HINGE_KNOTS` knots k, its training quantiles (as many as keep
    all features within :data:`NEWTON_MAX_FEATURES`), so that the log-odds can also bend there:
    a linear spline in the column (Hastie, Tibshirani and Friedman 2009, Section 5.2.1). The
    log-likelihood ratio of two Laplace laws a shift Δ apart is such a spline, constant outside
    [μ, μ + Δ] (Dwork and Roth 2014, Theorem 3.6's ratio): where several columns shift, its
    events {Σⱼ ℓⱼ(yⱼ) > t} are not half-spaces, which a linear or quadratic log-odds cannot draw.
    """

    def __init__(self, outputs: np.ndarray, quadratic: bool = False):
        outputs = np.asarray(outputs, dtype=np.float64).reshape(len(outputs), -1)
        self.levels, squared = [], []
        for j, values in enumerate(columns_up_to(outputs, MAX_ONE_HOT_VALUES)):  # None: more than that many
            if values is not None and len(values) > 2:
                self.levels.append((j, values))
            elif quadratic and values is None:
                squared.append(j)
        self.squared = np.array(squared, dtype=int)
        # Every column squared, in order (a wide continuous output): no copy of the columns (_squared_columns).
        self._all_squared = len(squared) == outputs.shape[1] and bool(np.all(self.squared == np.arange(len(squared))))
        # Squares of each column over its largest magnitude: in [0, 1], whatever the output's size.
        self.square_scale = _largest_magnitude(self._squared_columns(outputs)) if squared else np.ones(0)
        self.square_scale[self.square_scale == 0] = 1.0
        self.hinge_columns, self.hinge_knots = self._hinges(outputs)
        scaled = self._expand(outputs)
        # Each column is first divided by its largest magnitude, so that outputs of any finite size
        # (1e300) standardize without overflow in the mean and the variance.
        self.top = _largest_magnitude(scaled)
        self.top[self.top == 0] = 1.0
        scaled /= self.top  # in place: the expanded matrix is this call's own
        self.mean, self.std = scaled.mean(axis=0), scaled.std(axis=0)
        self.std[self.std == 0] = 1.0
        scaled -= self.mean
        scaled /= self.std
        self._training = scaled  # self(outputs), kept for the fit that follows (take_training)

    def _hinges(self, outputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(column, knot) of each hinge feature: the squared columns' quantiles at i/(K + 1), i = 1 … K,
        with K the most knots (at most :data:`HINGE_KNOTS`) that keep every feature within
        :data:`NEWTON_MAX_FEATURES`; a column's equal quantiles give one knot."""
        if not len(self.squared):
            return np.zeros(0, dtype=int), np.zeros(0)
        width = outputs.shape[1] + sum(len(values) for _, values in self.levels) + len(self.squared)
        knots = min(HINGE_KNOTS, max(0, (NEWTON_MAX_FEATURES - width) // len(self.squared)))
        columns, values = [], []
        if knots:
            levels = np.arange(1, knots + 1) / (knots + 1)
            for j in self.squared:
                at = np.unique(np.quantile(outputs[:, j], levels))
                columns += [j] * len(at)
                values += at.tolist()
        return np.array(columns, dtype=int), np.array(values, dtype=np.float64)

    @property
    def nonlinear_width(self) -> int:
        """The squares and hinges (the last columns): what the linear :class:`LogOdds` leaves out."""
        return len(self.squared) + len(self.hinge_knots)

    def take_training(self) -> np.ndarray | None:
        """The standardized features of the outputs given at construction, once (then released)."""
        training, self._training = self._training, None
        return training

    def _squared_columns(self, outputs: np.ndarray) -> np.ndarray:
        """The squared columns of ``outputs``: the outputs themselves where every column is squared, else a copy."""
        return outputs if self._all_squared else outputs[:, self.squared]

    def _squares(self, outputs: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """(yⱼ/scaleⱼ)² of the squared columns in one array: ``out``, else one laid out as NumPy's copy
        ``outputs[:, squared]`` (Fortran order), on which BLAS rounds a product's sums as it did on that copy."""
        columns = self._squared_columns(outputs)
        if out is None:
            out = np.empty(columns.shape, order="F") if columns is outputs else columns
        np.divide(columns, self.square_scale, out=out)
        return np.square(out, out=out)

    def _expand(self, outputs: np.ndarray) -> np.ndarray:
        """The unstandardized features, written into one new array (no part made apart and copied in)."""
        width = outputs.shape[1]
        raw = np.empty((len(outputs), width + sum(len(values) for _, values in self.levels) + self.nonlinear_width))
        raw[:, :width] = outputs
        for j, values in self.levels:
            raw[:, width:width + len(values)] = outputs[:, [j]] == values[None, :]
            width += len(values)
        if len(self.squared):
            self._squares(outputs, out=raw[:, width:width + len(self.squared)])
            width += len(self.squared)
        if len(self.hinge_knots):
            np.maximum(outputs[:, self.hinge_columns] - self.hinge_knots, 0.0, out=raw[:, width:])
        return raw

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        features = self._expand(np.asarray(outputs, dtype=np.float64).reshape(len(outputs), -1))
        features /= self.top  # in place, as (features / top − mean) / std: the expanded matrix is this call's own
        features -= self.mean
        return np.divide(features, self.std, out=features)

    def affine(self, coef: np.ndarray, intercept: float):
        """``outputs -> features(outputs) @ coef + intercept``, without building the feature matrix.

        A standardized feature enters as (e/top − mean)/std, so the affine function is
        Σ (coef/(top·std)) e + intercept − Σ coef·mean/std over the expanded columns e: the raw
        columns, the squares and the hinges by one product each, a one-hot block by looking up its
        value's weight (0 for a value not seen in training), as the indicator it replaces would give.
        """
        weight = np.asarray(coef, dtype=np.float64) / (self.top * self.std)
        constant = float(intercept - np.sum(np.asarray(coef) * self.mean / self.std))
        width = self.top.shape[0] - sum(len(v) for _, v in self.levels) - self.nonlinear_width
        raw, blocks, start = weight[:width], [], width
        for j, values in self.levels:
            blocks.append((j, values, weight[start:start + len(values)]))
            start += len(values)
        squares, hinges = weight[start:start + len(self.squared)], weight[start + len(self.squared):]
        # A hinge with weight 0 (the linear statistic's, on a wider feature set) need not be computed.
        bends = np.flatnonzero(hinges)

        def decision(outputs: np.ndarray) -> np.ndarray:
            outputs = np.asarray(outputs, dtype=np.float64).reshape(len(outputs), -1)
            with blas_threads(1):
                z = outputs @ raw + constant
                if np.any(squares):
                    z += self._squares(outputs) @ squares
                if len(bends):
                    bent = np.maximum(outputs[:, self.hinge_columns[bends]] - self.hinge_knots[bends], 0.0)
                    z += bent @ hinges[bends]
            for j, values, level_weight in blocks:
                column = outputs[:, j]
                at = np.minimum(np.searchsorted(values, column), len(values) - 1)
                z += np.where(values[at] == column, level_weight[at], 0.0)
            return z
        return decision


def _largest_magnitude(block: np.ndarray) -> np.ndarray:
    """max |x| of each column of the 2-D ``block`` (NaN where it holds one), without an array of the |x|."""
    return np.maximum(block.max(axis=0), -block.min(axis=0))


#: The audit offers the logistic statistic only when its feature matrix (training outputs × features)
#: holds at most this many entries (160 MB in float64): a wide output (a model's parameters) is left
#: to the critic, which trains on mini-batches.
MAX_LOGISTIC_ENTRIES = 20_000_000


#: The most features for which :class:`LogOdds` solves by Newton's method: a step costs n·d² for the
#: Hessian, so wider feature sets go to scikit-learn's L-BFGS, whose steps cost n·d.
NEWTON_MAX_FEATURES = 64

#: How :class:`LogOdds` can be fitted: ``"newton"`` (:func:`audit.statistics.logistic_regression.fit_logistic`,
#: for at most :data:`NEWTON_MAX_FEATURES` features, else L-BFGS) or ``"lbfgs"`` (scikit-learn's).
LOGISTIC_SOLVERS = ("newton", "lbfgs")


class LogOdds:
    """The log-odds of the first input given an output, from a logistic regression.

    An L2-penalized logistic regression (C = 1, intercept not penalized: scikit-learn's
    ``LogisticRegression`` defaults) on :class:`OutputFeatures` of outputs of the first (label 1)
    and the second input (label 0). ``solver="newton"`` (the audit's) minimizes it by Newton's
    method (:mod:`audit.statistics.logistic_regression`) when there are at most
    :data:`NEWTON_MAX_FEATURES` features, else, like ``solver="lbfgs"``, by scikit-learn's
    L-BFGS (``max_iter`` iterations); both minimize the same strictly convex objective. Its matrix
    products run on one BLAS thread (:func:`estimators.device.blas_threads`).
    """

    def __init__(self, first_outputs: np.ndarray, second_outputs: np.ndarray, max_iter: int = 1000,
                 features: OutputFeatures | None = None, solver: str = "newton", *, _features_of_these: bool = False):
        if solver not in LOGISTIC_SOLVERS:
            raise InputError(f"argument 'solver' must be one of {LOGISTIC_SOLVERS}, got {solver!r}")
        first_outputs = np.asarray(first_outputs, dtype=np.float64)
        second_outputs = np.asarray(second_outputs, dtype=np.float64)
        if len(first_outputs) == 0 or len(second_outputs) == 0:
            raise InputError("a logistic-regression statistic needs outputs of both inputs")
        outputs = np.concatenate([first_outputs, second_outputs])
        self.features = features or OutputFeatures(outputs, quadratic=self.quadratic)
        labels = np.concatenate([np.ones(len(first_outputs)), np.zeros(len(second_outputs))])
        # Features built here, or by fit on these very outputs, kept their standardized matrix.
        x = self.features.take_training() if features is None or _features_of_these else None
        if x is None:
            x = self.features(outputs)
        self._solve(x, labels, solver, max_iter)

    def _solve(self, x: np.ndarray, labels: np.ndarray, solver: str = "newton", max_iter: int = 1000,
               start: np.ndarray | None = None, sample_weight: np.ndarray | None = None,
               start_hessian: np.ndarray | None = None) -> None:
        """Fit on the standardized features ``x`` (the first columns of ``self.features``; any
        further ones, a wider feature set's squares and hinges, get weight 0) and ``labels`` (0/1, or with
        ``sample_weight`` each row's fraction of first-input outputs among its count); ``start_hessian``:
        the Hessian at ``start`` (:func:`audit.statistics.logistic_regression.fit_logistic`), for Newton's method only."""
        with blas_threads(1):
            if solver == "newton" and x.shape[1] <= NEWTON_MAX_FEATURES:
                from audit.statistics.logistic_regression import fit_logistic

                self.coef, self.intercept = fit_logistic(x, labels, start=start, sample_weight=sample_weight,
                                                         start_hessian=start_hessian)
            else:
                from sklearn.linear_model import LogisticRegression  # sklearn loads in the audit only when used

                if sample_weight is not None:  # scikit-learn takes 0/1 labels: each distinct row once per label
                    x = np.concatenate([x, x])
                    sample_weight = np.concatenate([sample_weight * labels, sample_weight * (1.0 - labels)])
                    labels = np.concatenate([np.ones(len(labels)), np.zeros(len(labels))])
                model = LogisticRegression(max_iter=max_iter).fit(x, labels, sample_weight=sample_weight)
                self.coef, self.intercept = model.coef_[0], float(model.intercept_[0])
        weights = np.zeros(self.features.top.shape[0])
        weights[:len(self.coef)] = self.coef
        self._decision = self.features.affine(weights, self.intercept)

    @property
    def solution(self) -> np.ndarray:
        """(coefficients, intercept) as one vector: a start for :meth:`from_design` on similar draws."""
        return np.append(self.coef, self.intercept)

    @classmethod
    def from_design(cls, design: "FeatureDesign", rows: np.ndarray, is_first: np.ndarray,
                    start: np.ndarray | None = None, start_hessian: np.ndarray | None = None) -> "LogOdds | None":
        """The statistic fitted on ``rows`` of ``design`` (``is_first``: which of them are outputs of the
        first input), Newton's method started at ``start`` (:attr:`solution` of a fit on similar
        draws), with ``start_hessian`` the Hessian there where given (:meth:`FeatureDesign.start_hessians`);
        None where the rows hold outputs of one input only, or (quadratic) the design has no
        squared column. The same objective as :meth:`fit` on the features ``design`` holds."""
        is_first = np.asarray(is_first, dtype=bool)
        if is_first.all() or not is_first.any() or (cls.quadratic and not len(design.features.squared)):
            return None
        statistic = cls.__new__(cls)
        statistic.features = design.features
        width = design.width if cls.quadratic else design.linear_width
        x, labels, weights = design.training_set(rows, is_first, width)
        statistic._solve(x, labels, start=start, sample_weight=weights, start_hessian=start_hessian)
        return statistic

    #: Whether the features include squares and hinges of the columns with many values (:class:`QuadraticLogOdds`).
    quadratic = False

    @classmethod
    def fit(cls, first_outputs: np.ndarray, second_outputs: np.ndarray,
            max_entries: int = MAX_LOGISTIC_ENTRIES) -> "LogOdds | None":
        """The fitted statistic, or None when the feature matrix would exceed ``max_entries`` entries
        (or, quadratic, when no column has more than :data:`MAX_ONE_HOT_VALUES` values to square)."""
        outputs = np.concatenate([np.asarray(first_outputs, dtype=np.float64),
                                  np.asarray(second_outputs, dtype=np.float64)])
        outputs = outputs.reshape(len(outputs), -1)
        if outputs.size * (2 if cls.quadratic else 1) > max_entries:  # the raw columns alone are too many
            return None
        features = OutputFeatures(outputs, quadratic=cls.quadratic)
        if cls.quadratic and not len(features.squared):
            return None
        width = outputs.shape[1] + sum(len(values) for _, values in features.levels) + features.nonlinear_width
        if len(outputs) * width > max_entries:
            return None
        return cls(first_outputs, second_outputs, features=features, _features_of_these=True)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        return self._decision(outputs)


class QuadraticLogOdds(LogOdds):
    """:class:`LogOdds` on features that add the square of every column with many values, and its
    hinges at a few quantiles (:class:`OutputFeatures`).

    Within the model log p₁/p₂ = βᵀφ(y) + c it is exact for outputs with independent Gaussian
    coordinates whose means and variances both depend on the input (the log-ratio of two
    Gaussians is quadratic), where the linear statistic sees nothing of a change in spread; the
    hinges let each column's term bend, as the log-ratio of two shifted Laplace laws does.
    """

    quadratic = True


#: Rows of the outputs whose distinct rows are counted first when deciding whether a design
#: aggregates: more than :data:`_FIRST_ROWS_DISTINCT` distinct rows among them and it does not.
_FIRST_ROWS_DISTINCT = 256


class FeatureDesign:
    """One standardized feature matrix for every logistic statistic fitted on draws of one pair.

    :class:`OutputFeatures` with squares (:class:`QuadraticLogOdds`'s features; their first
    ``linear_width`` columns are :class:`LogOdds`'s, column for column, since every column is
    standardized on its own) are read from the ``reference`` rows of ``outputs``, and the matrix of
    all rows is computed once: each fit (:meth:`LogOdds.from_design`) takes its rows of it instead of
    reading the levels and the scales of its own draws again. A statistic fitted on the reference
    rows is the one :meth:`LogOdds.fit` gives on them; one fitted on other rows uses the reference
    rows' levels and scales (read from the outputs alone, never their labels).

    Outputs with few distinct rows (at most a quarter of the outputs: discrete outputs) are
    aggregated: ``matrix`` holds the features of each distinct row, ``inverse[i]`` is output i's
    distinct row, and a fit weighs each distinct row by its count among the fit's rows
    (:func:`audit.statistics.logistic_regression.fit_logistic`'s ``sample_weight``: the same objective, with
    one row per distinct row instead of one per output), and ``rows`` holds the distinct rows
    themselves (as :func:`~audit.statistics.distinct_values.distinct_rows` gives them: an empirical log-ratio counts on them,
    :meth:`EmpiricalLogRatio.from_counts`). ``inverse`` and ``rows`` are None otherwise.

    Use :meth:`build`, which returns None where the matrix would exceed ``max_entries`` entries.
    """

    def __init__(self, features: OutputFeatures, matrix: np.ndarray, inverse: np.ndarray | None = None,
                 rows: np.ndarray | None = None):
        self.features, self.matrix, self.inverse, self.rows = features, matrix, inverse, rows
        self.width = matrix.shape[1]
        self.linear_width = self.width - features.nonlinear_width

    @classmethod
    def build(cls, outputs: np.ndarray, reference: np.ndarray,
              max_entries: int = MAX_LOGISTIC_ENTRIES) -> "FeatureDesign | None":
        outputs = np.asarray(outputs, dtype=np.float64).reshape(len(outputs), -1)
        if outputs.size * 2 > max_entries:  # the raw columns and their squares alone are too many
            return None
        features = OutputFeatures(outputs[reference], quadratic=True)
        features.take_training()  # the matrix below holds the reference rows too
        width = features.top.shape[0]
        if len(outputs) * width > max_entries:
            return None
        distinct = None
        # Many distinct rows among the first rows already decide it (no pass over all the outputs).
        if distinct_rows(float_rows(outputs[:FIRST_ROWS]), _FIRST_ROWS_DISTINCT) is not None:
            distinct = distinct_rows(float_rows(outputs), len(outputs) // 4)
        if distinct is None:
            return cls(features, features(outputs))
        rows, inverse = distinct
        return cls(features, features(rows), inverse, rows)

    def start_hessians(self, kind, parts: list, start: np.ndarray) -> list | None:
        """For each part k of ``parts`` (row indices), the data Hessian at ``start`` of ``kind``'s fit on
        all the other parts' rows (:func:`audit.statistics.logistic_regression.data_hessian`: a sum over rows, so
        each is a sum of the parts' own, one pass over the rows for all of them); None where the design
        is aggregated (few distinct rows: every fit is already cheap), has fewer than
        :data:`audit.statistics.logistic_regression.SHARED_HESSIAN_MIN_FEATURES` features for ``kind`` or more than
        :data:`NEWTON_MAX_FEATURES` (scikit-learn's solver fits those, from no Hessian), or ``kind`` is not
        fitted on it."""
        from audit.statistics.logistic_regression import SHARED_HESSIAN_MIN_FEATURES, data_hessian

        width = self.width if kind.quadratic else self.linear_width
        if (self.inverse is not None or (kind.quadratic and not len(self.features.squared)) or len(start) != width + 1
                or width + 1 < SHARED_HESSIAN_MIN_FEATURES or width > NEWTON_MAX_FEATURES):
            return None
        with blas_threads(1):
            own = [data_hessian(self.matrix[rows, :width], start) for rows in parts]
        return [sum(h for j, h in enumerate(own) if j != k) for k in range(len(parts))]

    def training_set(self, rows: np.ndarray, is_first: np.ndarray, width: int):
        """(features, labels, weights) of a fit on ``rows`` (``is_first``: which are outputs of the
        first input): the rows themselves with weights None, or, aggregated, each distinct row
        present with its count and its fraction of first-input outputs."""
        if self.inverse is None:
            return self.matrix[rows, :width], is_first.astype(np.float64), None
        firsts, seconds = row_counts_per_input(self.inverse[rows], is_first, len(self.matrix))
        counts = (firsts + seconds).astype(np.float64)
        present = counts > 0
        return self.matrix[present, :width], firsts[present] / counts[present], counts[present]


def pair_statistic(log_odds, first_value, second_value):
    """``log_odds`` (:class:`LogOdds` or :class:`EmpiricalLogRatio`) as an event-test statistic
    ``statistic(a, b, dbs, outputs)`` of one pair.

    The statistic is larger where the output looks produced with the record at ``a``; it is
    defined for the pair it was fitted on only, in either order ((a, b) = (first, second): the
    log-odds; swapped: its negative).
    """
    first_value, second_value = np.asarray(first_value), np.asarray(second_value)

    def statistic(a, b, dbs, outputs):
        # equal_nan: a record's missing value (NaN, --allow-nan) is the value it was fitted on.
        if np.array_equal(a, first_value, equal_nan=True) and np.array_equal(b, second_value, equal_nan=True):
            return log_odds(outputs)
        if np.array_equal(a, second_value, equal_nan=True) and np.array_equal(b, first_value, equal_nan=True):
            return -log_odds(outputs)
        raise InputError("the statistic was fitted on another pair of values")
    return statistic


#: The empirical log-ratio is offered only when the training outputs take at most this many values.
MAX_EMPIRICAL_VALUES = 256


class EmpiricalLogRatio:
    """The log-ratio of the two inputs' empirical output laws, for outputs that take few values.

    For a discrete output the most powerful tests between two inputs threshold
    log p₁(y)/p₂(y) (Neyman and Pearson 1933); its plug-in estimate from counts n₁(y), n₂(y)
    of each distinct output row among N₁ and N₂ training outputs, with add-½ smoothing
    (Krichevsky and Trofimov 1981) over the K rows seen, is
    log((n₁(y) + ½)/(N₁ + K/2)) − log((n₂(y) + ½)/(N₂ + K/2)). A row not seen in training scores
    as a row seen on neither input. Unlike the logistic regression it assumes nothing about
    how the coordinates combine (the event {s > t} is then a set of output values ordered by
    their estimated ratio, as DP testers choose them for discrete outputs).

    Use :meth:`fit`, which returns None when the outputs take more than ``max_values`` values;
    :meth:`from_counts` on outputs already coded as distinct rows; :meth:`from_row_counts` on each
    distinct row's counts.
    """

    def __init__(self, rows: np.ndarray, log_ratio: np.ndarray, unseen: float):
        self.rows, self.unseen = rows, unseen
        # Rows are looked up as whole records (their bytes): sorted once here, searched per call.
        self._key = np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))
        keys = np.ascontiguousarray(rows).view(self._key).ravel()
        order = np.argsort(keys)
        self._sorted_keys, self._sorted_log_ratio = keys[order], log_ratio[order]

    @classmethod
    def fit(cls, first_outputs: np.ndarray, second_outputs: np.ndarray,
            max_values: int = MAX_EMPIRICAL_VALUES) -> "EmpiricalLogRatio | None":
        first_outputs, second_outputs = float_rows(first_outputs), float_rows(second_outputs)
        if len(first_outputs) == 0 or len(second_outputs) == 0:
            raise InputError("an empirical log-ratio statistic needs outputs of both inputs")
        outputs = np.concatenate([first_outputs, second_outputs])
        distinct = distinct_rows(outputs, max_values)
        if distinct is None:
            return None
        rows, inverse = distinct
        is_first = np.arange(len(outputs)) < len(first_outputs)
        return cls.from_row_counts(rows, *row_counts_per_input(inverse, is_first, len(rows)))

    @classmethod
    def from_counts(cls, rows: np.ndarray, which: np.ndarray, is_first: np.ndarray,
                    max_values: int = MAX_EMPIRICAL_VALUES) -> "EmpiricalLogRatio | None":
        """The statistic :meth:`fit` gives on outputs already coded as distinct rows: output i is
        ``rows[which[i]]`` (``rows`` as :func:`~audit.statistics.distinct_values.distinct_rows` gives them; a row no output takes is
        not counted as seen), of the first input where ``is_first[i]``."""
        is_first = np.asarray(is_first, dtype=bool)
        if is_first.all() or not is_first.any():
            raise InputError("an empirical log-ratio statistic needs outputs of both inputs")
        n_first, n_second = row_counts_per_input(which, is_first, len(rows))
        seen = (n_first + n_second) > 0
        if int(seen.sum()) > max_values:
            return None
        return cls.from_row_counts(rows[seen], n_first[seen], n_second[seen])

    @classmethod
    def from_row_counts(cls, rows: np.ndarray, n_first: np.ndarray, n_second: np.ndarray) -> "EmpiricalLogRatio":
        """The add-½ log-ratio (class docstring) of the K rows seen, from each row's counts on the two inputs.

        Parameters
        ----------
        rows : numpy.ndarray
            The K distinct output rows seen, shape (K, d), as
            :func:`~audit.statistics.distinct_values.distinct_rows` gives them.
        n_first, n_second : numpy.ndarray
            How many outputs of the first and of the second input are ``rows[k]``, shape (K,), each row
            counted at least once on one of them (K counts the rows seen).

        Returns
        -------
        EmpiricalLogRatio
            The statistic log((n₁(y) + ½)/(N₁ + K/2)) − log((n₂(y) + ½)/(N₂ + K/2)) on these rows,
            log((N₂ + K/2)/(N₁ + K/2)) on any other (Krichevsky and Trofimov 1981).

        Raises
        ------
        InputError
            If ``rows`` is not 2-D with a row, the counts are not one non-negative count per row, a row is
            counted on neither input, or an input has no output.
        """
        rows, n_first, n_second = np.asarray(rows), np.asarray(n_first), np.asarray(n_second)
        if rows.ndim != 2 or len(rows) == 0:
            raise InputError(f"argument 'rows' must be a 2-D array with at least one row, got shape {rows.shape}")
        for name, counts in (("n_first", n_first), ("n_second", n_second)):
            if counts.shape != (len(rows),) or (counts < 0).any():
                raise InputError(f"argument '{name}' must hold one non-negative count per row of 'rows' "
                                 f"({len(rows)}), got shape {counts.shape}")
        if ((n_first + n_second) == 0).any():
            raise InputError("argument 'rows' must hold only rows seen: a row is counted on neither input")
        if n_first.sum() == 0 or n_second.sum() == 0:
            raise InputError("an empirical log-ratio statistic needs outputs of both inputs")
        half_k = len(rows) / 2
        total_first, total_second = int(n_first.sum()), int(n_second.sum())
        log_first = np.log(n_first + 0.5) - np.log(total_first + half_k)
        log_second = np.log(n_second + 0.5) - np.log(total_second + half_k)
        unseen = float(np.log(total_second + half_k) - np.log(total_first + half_k))
        return cls(rows, log_first - log_second, unseen)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        outputs = float_rows(outputs)
        if outputs.shape[1] != self.rows.shape[1]:
            raise InputError(f"argument 'outputs' must have {self.rows.shape[1]} columns, got {outputs.shape[1]}")
        query = np.ascontiguousarray(outputs).view(self._key).ravel()
        position = np.clip(np.searchsorted(self._sorted_keys, query), 0, len(self._sorted_keys) - 1)
        return np.where(self._sorted_keys[position] == query, self._sorted_log_ratio[position], self.unseen)


#: The fitted statistics offered between two neighbouring inputs, in order: (class, name, label of
#: its scores, what it is). The event test offers each that suits the outputs (:mod:`audit.search.event_candidates`);
#: under a DP claim each is also an MI critic candidate (:mod:`audit.statistics.classifier_critic`).
PAIR_STATISTICS = (
    (LogOdds, "logistic", "logistic log-odds(a | y)", "a logistic regression on output features, fitted"),
    (QuadraticLogOdds, "quadratic logistic", "quadratic logistic log-odds(a | y)",
     "a logistic regression on output features, their squares and hinges, fitted"),
    (EmpiricalLogRatio, "empirical log-ratio", "empirical log p_a(y)/p_b(y)",
     "the empirical log-ratio of the output's value, counted"),
)
