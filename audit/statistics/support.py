"""The support statistic: the empirical log-ratio of an output's discrete columns.

An output's *support* — the shapes of its arrays, the keys it releases, the classes a model saw —
is held in columns that take few values (the support block of an encoded structured output,
:mod:`mechanisms.outputs.encoding`, counts the named parts of each bucket). When one neighbour
produces a support the other never does (a key held by one user and released only with that user,
a label only one database holds), the two output laws differ there by an event that a continuous
statistic on all columns dilutes: the empirical log-ratio of the discrete columns alone
(Neyman and Pearson 1933, with the add-½ plug-in of :class:`audit.statistics.classifier.EmpiricalLogRatio`)
scores a support seen only under the first input high, and the event {score > t} is that support.

Where the mechanism's outputs are encoded (:class:`mechanisms.outputs.encoding.OutputEncoder`), the support is
the encoder's support block (:attr:`~mechanisms.outputs.encoding.OutputEncoder.support_columns`, the counts of
released names per bucket) and nothing else: a released value that happens to take few values (a noisy count
rounded, a thresholded count) is not a support fact, and counted beside the names it splits each support into
many rows, so that a key released by one input only and rarely (OpenDP's threshold at 6.7e-4 of the runs)
scores as rarely seen under both. Without an encoder, the columns that take at most :data:`MAX_SUPPORT_VALUES`
values on the training outputs are the support. Which columns are discrete is read on the training outputs only, and the event is chosen on held-out
scores and certified on fresh runs like every event (:mod:`audit.search.event_search`): a support seen on
one neighbour and never on the other gives a pure claim a large certified ε and an approximate
claim a certified δ (:attr:`audit.result.EventTest.delta_lower_bound`).
"""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError

from audit.statistics.classifier import MAX_EMPIRICAL_VALUES, EmpiricalLogRatio
from audit.statistics.distinct_values import FIRST_ROWS, columns_up_to, distinct_codes, float_rows, row_counts_per_input

__all__ = ["MAX_SUPPORT_VALUES", "SUPPORT_STATISTICS", "SupportFolds", "SupportLogRatio"]

#: A column is part of the support when the training outputs give it at most this many values.
MAX_SUPPORT_VALUES = 4


class SupportLogRatio:
    """:class:`~audit.statistics.classifier.EmpiricalLogRatio` on the columns that take at most
    :data:`MAX_SUPPORT_VALUES` values in training (module docstring).

    Counts of released parts take a handful of values (present or not, a shape's few sizes); a
    released value (a noisy count) takes more and is left out. :meth:`fit` returns None when no
    column is discrete or the discrete columns take more than
    :data:`audit.statistics.classifier.MAX_EMPIRICAL_VALUES` distinct rows.
    """

    what = "the output's discrete columns (its support: shapes, key sets, class sets)"

    def __init__(self, columns: np.ndarray, ratio: EmpiricalLogRatio):
        self.columns, self.ratio = columns, ratio

    @classmethod
    def fit(cls, first_outputs: np.ndarray, second_outputs: np.ndarray,
            support_columns: slice | None = None) -> "SupportLogRatio | None":
        """The statistic on the outputs of each input; ``support_columns``: the encoder's support block (every
        column of it, whatever values it takes), else the columns of at most :data:`MAX_SUPPORT_VALUES` values."""
        first_outputs, second_outputs = float_rows(first_outputs), float_rows(second_outputs)
        outputs = np.concatenate([first_outputs, second_outputs])
        columns = _support_columns(outputs, support_columns)
        if columns is None:
            return None
        ratio = EmpiricalLogRatio.fit(first_outputs[:, columns], second_outputs[:, columns])
        return None if ratio is None else cls(columns, ratio)

    @classmethod
    def from_counts(cls, rows: np.ndarray, which: np.ndarray, is_first: np.ndarray,
                    support_columns: slice | None = None) -> "SupportLogRatio | None":
        """The statistic :meth:`fit` gives on outputs already coded as distinct rows: output i is
        ``rows[which[i]]`` (as :meth:`audit.statistics.classifier.EmpiricalLogRatio.from_counts` takes them), of
        the first input where ``is_first[i]`` (``support_columns`` as there). It is :class:`SupportFolds` on the
        distinct rows, fitted on the subset ``which``: a subset's outputs may repeat a row."""
        is_first = np.asarray(is_first, dtype=bool)
        if is_first.all() or not is_first.any():
            raise InputError("a support statistic needs outputs of both inputs")
        return SupportFolds(rows, support_columns).fit(np.asarray(which), is_first)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        return self.ratio(float_rows(outputs)[:, self.columns])


def _support_columns(outputs: np.ndarray, support_columns: slice | None) -> np.ndarray | None:
    """The support's column indices among ``outputs``' columns: the encoder's block ``support_columns`` where given
    (None where the rows are too narrow to hold it), else those taking at most :data:`MAX_SUPPORT_VALUES` values
    (None where none does)."""
    if support_columns is not None:
        columns = np.arange(outputs.shape[1])[support_columns]
        return columns if len(columns) and columns[-1] < outputs.shape[1] else None
    discrete = np.array([values is not None for values in columns_up_to(outputs, MAX_SUPPORT_VALUES)], dtype=bool)
    return np.flatnonzero(discrete) if discrete.any() else None


class SupportFolds:
    """:meth:`SupportLogRatio.fit` on subsets of the same outputs (a cross-fit's folds, or the outputs coded as
    distinct rows, a subset then repeating rows: :meth:`SupportLogRatio.from_counts`), each column that may be
    discrete coded once for all of them.

    A subset's fit needs, per column, whether it takes at most :data:`MAX_SUPPORT_VALUES` values there, and
    the distinct rows of the discrete columns with their counts. With each such column's values and every
    output's value index found once (one sort of the column), a subset's values are those whose index occurs
    among its outputs (a count), and its rows' codes in mixed radix of the subset's own value ranks are the
    codes :func:`audit.statistics.distinct_values.distinct_rows` computes on the subset: the same distinct rows in
    the same order with the same counts, so the statistic is the one :meth:`SupportLogRatio.fit` gives on the
    subset's outputs of each input, at a fraction of its sorts.
    """

    def __init__(self, outputs: np.ndarray, support_columns: slice | None = None):
        self.outputs = float_rows(outputs)
        self.support_columns = support_columns  # the encoder's support block (SupportLogRatio.fit), or None
        self._coded = {}

    def _code(self, column: int) -> tuple[int, np.ndarray]:
        """(the column's number of distinct values, each output's index among them), computed once."""
        if column not in self._coded:
            values, index = np.unique(self.outputs[:, column], return_inverse=True)
            self._coded[column] = (len(values), index.ravel())
        return self._coded[column]

    def fit(self, rows: np.ndarray, is_first: np.ndarray) -> "SupportLogRatio | None":
        """:meth:`SupportLogRatio.fit` on ``outputs[rows]``, of the first input where ``is_first`` (one per row)."""
        rows, is_first = np.asarray(rows), np.asarray(is_first, dtype=bool)
        head = self.outputs[rows[:FIRST_ROWS]]
        block = None if self.support_columns is None else _support_columns(self.outputs, self.support_columns)
        if self.support_columns is not None and block is None:
            return None
        columns, ranks = [], []
        # Too many values among the subset's first rows decides it (values_up_to), else the subset's own count.
        screened = block is None and len(rows) > FIRST_ROWS
        too_many = [values is None for values in columns_up_to(head, MAX_SUPPORT_VALUES)] if screened else None
        for column in range(self.outputs.shape[1]) if block is None else block:
            if screened and too_many[column]:
                continue
            count, index = self._code(column)
            present = np.bincount(index[rows], minlength=count) > 0
            if block is not None or np.count_nonzero(present) <= MAX_SUPPORT_VALUES:
                columns.append(column)
                ranks.append((np.cumsum(present) - 1, int(np.count_nonzero(present))))
        if not columns:
            return None
        if is_first.all() or not is_first.any():
            raise InputError("an empirical log-ratio statistic needs outputs of both inputs")
        codes, radix = np.zeros(len(rows), dtype=np.int64), 1
        for column, (rank, count) in zip(columns, ranks):
            radix *= count
            if radix >= 2**62:  # distinct_rows sorts the rows themselves here: so does the subset's own fit
                subset = self.outputs[rows]
                return SupportLogRatio.fit(subset[is_first], subset[~is_first], self.support_columns)
            codes = codes * count + rank[self._code(column)[1][rows]]
        distinct = distinct_codes(codes, radix, MAX_EMPIRICAL_VALUES)
        if distinct is None:
            return None
        first, inverse = distinct
        support = self.outputs[np.ix_(rows[first], columns)]
        ratio = EmpiricalLogRatio.from_row_counts(support, *row_counts_per_input(inverse, is_first, len(first)))
        return SupportLogRatio(np.array(columns, dtype=np.intp), ratio)


#: The support statistic in the form of :data:`audit.statistics.classifier.PAIR_STATISTICS`: (class, name,
#: label of its scores, what it is); an event-test candidate only (not an MI critic).
SUPPORT_STATISTICS = (
    (SupportLogRatio, "support log-ratio", "empirical log p_a(s)/p_b(s) of the support s(y)",
     f"the empirical log-ratio of {SupportLogRatio.what}, counted"),
)
