"""The counting statistic: output features seen under one input and never (or far less) under the other.

A rare event that one neighbour produces and the other never does (OpenDP's Laplace threshold releasing a
one-user key in 6.7e-4 of the runs, a sentinel value a mechanism returns on one database only) is a
*support fact*: its evidence is a count, dozens of runs against none, and no fitted score is needed to see
it. A learned statistic (a logistic regression, a log-ratio of whole output rows) spends its fit on the
frequent part of the output and may order the rare rows among the common ones; this one counts.

A *feature* is an output column at one value, (j, v): an encoded output's bucket count of released names
(:attr:`mechanisms.outputs.encoding.OutputEncoder.support_columns`: a key present), a bucket's value, or a
plain output's value. On the outputs it is fitted on (n₁ of the first input, n₂ of the second) each
feature's counts c₁(f), c₂(f) are taken, and a feature is *one-sided* when it occurs at least
:data:`MIN_FEATURE_COUNT` times in all and never under one input, or when its add-½ frequency ratio
(Krichevsky and Trofimov 1981, the plug-in of :class:`audit.statistics.classifier.EmpiricalLogRatio` over a
feature's K = 2 outcomes, present or not: the denominators N + K/2)

    ℓ(f) = log((c₁(f) + ½)/(n₁ + 1)) − log((c₂(f) + ½)/(n₂ + 1))

is at least log :data:`FAR_LESS` in magnitude (seen far less under one input). Values are compared after
rounding to the ideal arithmetic's 32 significant bits (:func:`_counted`); values that occur once
(every draw of a continuous column) are no feature: they say nothing about a fresh run. The score of an
output y is the sum of ℓ(f) over the one-sided features it holds (0 where it holds none): a naive-Bayes
log-ratio (Lewis 1998) of the features present, the terms of those absent dropped (near 0 for a rare
feature). Its upper tail {s > t}, first input the first, is the union of the first input's one-sided features of ℓ > t wherever an output holds no
feature of the other side; the lowest such threshold gives the union of *all* of them, the event of the
largest probability under the first input, and the event choice (:func:`audit.search.event_choice.choose_event`)
weighs it against the narrower unions of the better-attested features. The lower tail, first input the
second, is the same for the second input's features.

The statistic is a candidate of the event search like every other: fitted on training draws (cross-fitted on
the MI sample's folds, :func:`audit.statistics.classifier_critic.cross_fit`, or on the critic's training
split), its event chosen on draws it was not fitted on (out-of-fold scores, held-out draws or selection
runs), and certified on fresh runs (Clopper–Pearson; :mod:`audit.search.event_search`). The choice among
candidates costs no α, so the event test's α is paid once, in the same union bound as without it
(:class:`audit.certificates.claim_tests.ClaimPlan`): no share of α is set aside for this statistic. A rare
event of probability p under the first input and 0 under the second is refuted as soon as the
certification counts (about n·p against 0 in n runs per input) refute the claim; choosing it needs only
that the fitting and choosing draws hold a few dozen of them.
"""

from __future__ import annotations

import math

import numpy as np

from estimators.validation import InputError

from audit.statistics.arithmetic import round_significand

__all__ = ["COUNTING_STATISTICS", "FAR_LESS", "MIN_FEATURE_COUNT", "CountingFolds", "CountingStatistic"]

#: A feature counts only when it occurs at least this many times in the fit outputs (a value seen once is
#: a continuous draw, not an atom).
MIN_FEATURE_COUNT = 2

#: A feature seen under both inputs is one-sided when its add-½ frequency ratio is at least this (either way).
FAR_LESS = 10.0

#: At most this many one-sided values of one column are kept, those of the largest |ℓ| (a bound on the
#: statistic's size; a discrete column of many values holds many one-sided values seen twice by chance).
MAX_FEATURES_PER_COLUMN = 4096


#: Columns coded together by :meth:`CountingFolds._code_all` (a block of 2,000 runs' values: 1 MB).
CODED_TOGETHER = 64


class CountingStatistic:
    """The sum of ℓ(f) over the one-sided features an output holds (module docstring).

    ``features`` maps a column index to (its one-sided values, sorted; their ℓ), the weights of
    :meth:`fit`. :meth:`fit` returns None when no feature is one-sided.
    """

    what = "the output's one-sided features (values and keys seen under one input only, or far less), counted"

    def __init__(self, features: dict, counts: dict | None = None, runs: tuple = (0, 0)):
        self.features = features
        self.counts = counts or {}  # column -> (each feature's count under the first input, under the second)
        self.runs = runs            # (outputs of the first input, of the second) it was fitted on

    @classmethod
    def fit(cls, first_outputs: np.ndarray, second_outputs: np.ndarray) -> "CountingStatistic | None":
        """The statistic on the outputs of each input (rows). Every column is counted: of an encoded output, a
        released key is a feature of its bucket's count in the support block
        (:attr:`mechanisms.outputs.encoding.OutputEncoder.support_columns`), a released value one of the value
        block. Returns None when no feature is one-sided."""
        first_outputs, second_outputs = _as_rows(first_outputs), _as_rows(second_outputs)
        if len(first_outputs) == 0 or len(second_outputs) == 0:
            raise InputError("a counting statistic needs outputs of both inputs")
        if first_outputs.shape[1] != second_outputs.shape[1]:
            raise InputError("argument 'second_outputs' must have as many columns as 'first_outputs'")
        is_first = np.arange(len(first_outputs) + len(second_outputs)) < len(first_outputs)
        return CountingFolds(np.concatenate([first_outputs, second_outputs])).fit(np.arange(len(is_first)), is_first)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        """The score of each output row: the sum of ℓ(f) over the one-sided features it holds."""
        outputs = _as_rows(outputs)
        scores = np.zeros(len(outputs), dtype=np.float64)
        for column, (values, ell) in self.features.items():
            if column >= outputs.shape[1]:
                continue
            column_values = _counted(outputs[:, column])
            at = np.minimum(np.searchsorted(values, column_values), len(values) - 1)
            scores += np.where(values[at] == column_values, ell[at], 0.0)
        return scores

    def describe(self, limit: int = 3) -> str:
        """The ``limit`` features of largest |ℓ| with their counts, in words (for the event's description): the fit's
        first input is the pair's database a, its second b (:mod:`audit.search.event_candidates` fits it on the
        draws of a and of b), as the support facts and the reports name them."""
        ranked = sorted(((abs(float(e)), column, float(v), int(a), int(b))
                         for column, (values, ell) in self.features.items()
                         for v, e, a, b in zip(values, ell, *self.counts.get(column, ([0] * len(values),) * 2))),
                        reverse=True)
        words = [f"output column {column} = {value:.6g} in {a:,} of {self.runs[0]:,} fitted runs of a, "
                 f"{b:,} of {self.runs[1]:,} of b" for _, column, value, a, b in ranked[:limit]]
        more = self.feature_count - len(words)
        return "one-sided features: " + "; ".join(words) + (f"; and {more:,} more" if more > 0 else "")

    @property
    def feature_count(self) -> int:
        """How many one-sided features the statistic counts."""
        return sum(len(values) for values, _ in self.features.values())


class CountingFolds:
    """:meth:`CountingStatistic.fit` on subsets of the same outputs (a cross-fit's folds) and the scores of its fits
    on them, each column rounded (:func:`_counted`) and coded once for all of them.

    A subset's fit needs, per column, the distinct counted values among its outputs with each one's count under
    either input: with the column's distinct values and every output's index among them found once (one
    ``np.unique`` of the column), a subset's values are those whose index occurs among its outputs and their counts
    are counts of the indices, in the same increasing order, so the features and their ℓ are those a fit on the
    subset's own outputs finds, to the bit. A column that holds one value in a subset (constant, or varying below
    the rounding) holds no one-sided feature there (both inputs' counts are positive and |ℓ| < log(4/3)). A fit's
    score of an output of the coded ones is ℓ at its column's index (0 at a value no feature holds): the sum of
    :meth:`CountingStatistic.__call__`, whose equality of counted values is equality of their indices.
    """

    def __init__(self, outputs: np.ndarray):
        self.outputs = _as_rows(outputs)
        varying = np.any(self.outputs != self.outputs[:1], axis=0)  # NaN != NaN: a NaN column is coded too
        self._varying = np.flatnonzero(varying).tolist()
        self._coded = {}

    def _code(self, column: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(the column's distinct counted values, sorted; each output's index among them), computed once; None for a
        column whose counted values all differ (NaNs aside, which are never a feature).

        Such a column (a continuous output's) has no value of count ≥ :data:`MIN_FEATURE_COUNT` in any subset,
        so no fit finds a feature in it: one sort of its values says so. Where the column holds neither a zero nor
        a NaN, equal values are equal bit for bit, so the distinct values are read off that sort and each output's
        index among them found by bisection: ``np.unique(..., return_inverse=True)``'s values and indices, without
        its argsort (about twice a sort's cost). A zero (−0.0 and 0.0 are one value, of two bit patterns) or a NaN
        leaves it to ``np.unique``, whose representative of such a value is the one kept."""
        if column not in self._coded:
            self._code_block([column])
        return self._coded[column]

    def _code_block(self, columns: list) -> None:
        """:meth:`_code` of ``columns`` together: one rounding and one sort of their block along its rows, where a
        column of a row-major array read alone costs a cache line a value (:meth:`_code_all`)."""
        counted = _counted(self.outputs[:, columns])
        ordered = np.sort(counted, axis=0)
        first_of_run = np.empty(ordered.shape, dtype=bool)
        first_of_run[:1] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first_of_run[1:])  # NaN != NaN: each NaN a run of its own
        repeats = ~first_of_run.all(axis=0) if MIN_FEATURE_COUNT > 1 else np.ones(len(columns), dtype=bool)
        for k, column in enumerate(columns):
            if not repeats[k]:  # no repeat (repeated NaNs are never a feature)
                self._coded[column] = None
            elif len(ordered) and not np.isnan(ordered[-1, k]) and not np.any(ordered[:, k] == 0.0):  # NaNs sort last
                values = ordered[first_of_run[:, k], k]
                self._coded[column] = (values, np.searchsorted(values, counted[:, k]))
            else:
                values, index = np.unique(counted[:, k], return_inverse=True)
                self._coded[column] = (values, index.ravel())

    def _code_all(self) -> None:
        """:meth:`_code` of every varying column not coded yet, :data:`CODED_TOGETHER` columns at a time."""
        todo = [column for column in self._varying if column not in self._coded]
        for start in range(0, len(todo), CODED_TOGETHER):
            self._code_block(todo[start:start + CODED_TOGETHER])

    def fit(self, rows: np.ndarray, is_first: np.ndarray) -> "CountingStatistic | None":
        """:meth:`CountingStatistic.fit` on ``outputs[rows]``, of the first input where ``is_first`` (one per row)."""
        rows, is_first = np.asarray(rows), np.asarray(is_first, dtype=bool)
        n_first = int(np.count_nonzero(is_first))
        n_second = len(rows) - n_first
        if n_first == 0 or n_second == 0:
            raise InputError("a counting statistic needs outputs of both inputs")
        features, feature_counts = {}, {}
        self._code_all()
        for column in self._varying:
            coded = self._code(column)
            if coded is None:
                continue  # every value once in the whole column: none repeats in a subset (_code)
            all_values, all_index = coded
            index = all_index[rows]
            counts = np.bincount(index, minlength=len(all_values))
            present = np.flatnonzero(counts)
            if len(present) < 2:
                continue  # one value in this subset: no one-sided feature (class docstring)
            values, counts = all_values[present], counts[present]
            atoms = counts >= MIN_FEATURE_COUNT
            if not atoms.any():
                continue  # every value seen once: a continuous column
            c_first = np.bincount(index[is_first], minlength=len(all_values))[present].astype(np.float64)
            c_second = counts - c_first
            ell = np.log((c_first + 0.5) / (n_first + 1.0)) - np.log((c_second + 0.5) / (n_second + 1.0))
            one_sided = atoms & (((c_first == 0) | (c_second == 0)) | (np.abs(ell) >= math.log(FAR_LESS)))
            one_sided &= ~np.isnan(values)
            if not one_sided.any():
                continue
            keep = np.flatnonzero(one_sided)
            if len(keep) > MAX_FEATURES_PER_COLUMN:
                keep = np.sort(keep[np.argsort(-np.abs(ell[keep]), kind="stable")[:MAX_FEATURES_PER_COLUMN]])
            features[column] = (values[keep], ell[keep])
            feature_counts[column] = (c_first[keep].astype(np.int64), c_second[keep].astype(np.int64))
        return CountingStatistic(features, feature_counts, (n_first, n_second)) if features else None

    def scores(self, statistic: CountingStatistic, rows: np.ndarray) -> np.ndarray:
        """``statistic(outputs[rows])`` for a statistic fitted on these outputs (:meth:`fit`), from the columns' codes."""
        scores = np.zeros(len(rows), dtype=np.float64)
        for column, (values, ell) in statistic.features.items():
            all_values, all_index = self._code(column)
            ell_at_index = np.zeros(len(all_values), dtype=np.float64)
            ell_at_index[np.searchsorted(all_values, values)] = ell  # a fit's values are among the column's
            scores += ell_at_index[all_index[rows]]
        return scores


def _as_rows(outputs) -> np.ndarray:
    """Outputs as (N, d) float64 rows, not copied where they are already (−0.0 and 0.0 compare equal here)."""
    outputs = np.asarray(outputs, dtype=np.float64)
    return outputs.reshape(len(outputs), -1)


def _counted(outputs: np.ndarray) -> np.ndarray:
    """Output values as counted: each rounded to :data:`audit.statistics.arithmetic.IDEAL_SIGNIFICANT_BITS`
    significant bits (:func:`audit.statistics.arithmetic.round_significand`). The event search certifies this
    statistic on outputs rounded so (it reads no bits, :func:`audit.statistics.arithmetic.rounded_candidate`)
    and chooses its event on held-out outputs that are not; rounding here too makes a value the same feature in
    both, and is idempotent on outputs already rounded."""
    return round_significand(outputs)


#: The counting statistic in the form of :data:`audit.statistics.classifier.PAIR_STATISTICS`: (class, name,
#: label of its scores, what it is); an event-test candidate only (not an MI critic).
COUNTING_STATISTICS = (
    (CountingStatistic, "counting", "Σ log-ratio of the one-sided features of y", CountingStatistic.what),
)
