"""Discrete MI: the plug-in estimate from samples (optionally Miller–Madow corrected) and
the exact MI of a given joint pmf.

Each distinct row of ``x`` and each distinct row of ``y`` is one symbol. The plug-in
estimate is the MI of the empirical joint pmf,

    Î = Ĥ(X) + Ĥ(Y) − Ĥ(X, Y),   Ĥ = −Σ (c/N) log(c/N) over the symbol counts c,

which is biased upward on small samples. The Miller–Madow correction adds (m − 1)/(2N)
to each entropy, m being the number of symbols seen (Miller 1955, "Note on the bias of
information estimates"; see Paninski 2003, Neural Computation 15:1191), hence

    Î_MM = Î − (m_XY − m_X − m_Y + 1)/(2N).

The plug-in estimate needs every symbol to be seen many times. On continuous data each
sample is its own symbol and Î = log N whatever the true MI (10.7 bits reported for a true
1 bit). Samples whose pairs (x, y) take more than ``MAX_DISTINCT_FRACTION`` · N distinct
values are therefore refused: there the first-order bias (m_XY − 1)/(2N) of Ĥ(X, Y) alone
exceeds 1/4 nat, and the expansion behind it (and behind the Miller–Madow correction) no
longer holds, since most symbols are seen once (Paninski 2003, Sec. 3–4: the plug-in is
inconsistent unless m/N → 0).
"""

from __future__ import annotations

import numpy as np

from .validation import InputError, as_float_array, check_choice, paired_sample_batches, paired_samples, plain

__all__ = ["CORRECTIONS", "MAX_DISTINCT_FRACTION", "exact_mi", "plugin_mi", "plugin_mi_batch"]

MILLER_MADOW = "miller-madow"
CORRECTIONS = (MILLER_MADOW, None)
_PMF_TOLERANCE = 1e-9
MAX_DISTINCT_FRACTION = 0.5


def _symbol_ids(batch: np.ndarray) -> np.ndarray:
    """Integer id per sample (flattened over slices): equal ids ⇔ same slice and same row."""
    p, n, d = batch.shape
    slice_column = np.repeat(np.arange(p, dtype=np.float64), n)[:, None]
    # + 0.0 turns −0.0 into 0.0 so that the two zeros are one symbol.
    keys = np.hstack([slice_column, batch.reshape(p * n, d) + 0.0])
    _, ids = np.unique(keys, axis=0, return_inverse=True)
    return ids.reshape(-1)


def _count_terms(ids: np.ndarray, sample_slice: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Per slice: Σ c log c over the symbol counts c, and the number of symbols seen."""
    counts = np.bincount(ids)
    symbol_slice = np.empty(len(counts), dtype=np.int64)
    symbol_slice[ids] = sample_slice
    # ids come from np.unique, so every count is ≥ 1 and the logarithm is finite.
    c_log_c = np.bincount(symbol_slice, weights=counts * np.log(counts), minlength=p)
    symbols = np.bincount(symbol_slice, minlength=p)
    return c_log_c, symbols


def _check_repeated_values(joint_symbols: np.ndarray, n: int, pair: str = "arguments 'x' and 'y'") -> None:
    """Refuse samples with too many distinct (x, y) pairs for a plug-in estimate (module docstring), naming the
    variables as ``pair``."""
    worst = int(np.argmax(joint_symbols))
    if joint_symbols[worst] > MAX_DISTINCT_FRACTION * n:
        where = f" (slice {worst})" if len(joint_symbols) > 1 else ""
        raise InputError(
            f"{pair} take {int(joint_symbols[worst])} distinct (x, y) pairs among {n} samples{where}: "
            f"the plug-in estimator needs each value seen many times (at most {MAX_DISTINCT_FRACTION:g} n distinct "
            "pairs) and would report about log n here. For continuous data use the 'ksg', 'gaussian' or a neural "
            "estimator; for discrete data, more samples")


def _plugin_mi_unchecked(x: np.ndarray, y: np.ndarray, correction, pair: str = "arguments 'x' and 'y'") -> np.ndarray:
    p, n = x.shape[:2]
    sample_slice = np.repeat(np.arange(p), n)
    x_ids = _symbol_ids(x)
    y_ids = _symbol_ids(y)
    # x ids already differ between slices, so a pair of ids is a slice-distinct joint symbol.
    _, joint_ids = np.unique(x_ids * (int(y_ids.max()) + 1) + y_ids, return_inverse=True)
    sx, mx = _count_terms(x_ids, sample_slice, p)
    sy, my = _count_terms(y_ids, sample_slice, p)
    sxy, mxy = _count_terms(joint_ids.reshape(-1), sample_slice, p)
    _check_repeated_values(mxy, n, pair)
    # With Ĥ = log N − (Σ c log c)/N for each of X, Y and (X, Y):
    mi = np.log(n) + (sxy - sx - sy) / n
    if correction == MILLER_MADOW:
        mi = mi - (mxy - mx - my + 1) / (2.0 * n)
    return mi


def plugin_mi(x, y, correction: str | None = MILLER_MADOW) -> float:
    """Plug-in estimate of I(X; Y) in nats, each distinct row of ``x`` / ``y`` a symbol.

    Parameters
    ----------
    x : array_like, shape (n, dx) or (n,)
    y : array_like, shape (n, dy) or (n,)
        Paired row by row with ``x``.
    correction : {"miller-madow", None}, default "miller-madow"
        ``"miller-madow"`` subtracts (m_XY − m_X − m_Y + 1)/(2N) (Miller 1955); ``None`` gives
        the MI of the empirical joint pmf, which is ≥ 0 and biased upward.

    Returns
    -------
    float
        The estimate in nats. With the correction it can be negative on small samples.

    Raises
    ------
    InputError
        When the pairs (x, y) take more than ``MAX_DISTINCT_FRACTION`` · n distinct values
        (continuous data; see the module docstring).

    Examples
    --------
    Y a copy of a fair bit X: I(X; Y) = H(X) = log 2 nats.

    >>> x = [0, 1] * 500
    >>> round(plugin_mi(x, x, correction=None), 6)
    0.693147
    """
    check_choice(correction, "correction", CORRECTIONS)
    x, y = paired_samples(x, y)
    return float(_plugin_mi_unchecked(x[None], y[None], correction)[0])


def plugin_mi_batch(x, y, correction: str | None = MILLER_MADOW, *,
                    pair: str = "arguments 'x' and 'y'") -> np.ndarray:
    """Plug-in estimates of I(X_s; Y_s) in nats for every slice s, vectorized over slices.

    Parameters
    ----------
    x : array_like, shape (p, n, dx)
    y : array_like, shape (p, n, dy)
    correction : {"miller-madow", None}, default "miller-madow"
        As in :func:`plugin_mi`.
    pair : str
        How messages name ``x`` and ``y`` together (a caller passing other variables names them).

    Returns
    -------
    ndarray, shape (p,)
        ``plugin_mi(x[s], y[s], correction)`` for each slice.
    """
    check_choice(correction, "correction", CORRECTIONS)
    x, y = paired_sample_batches(x, y)
    return _plugin_mi_unchecked(x, y, correction, pair)


def exact_mi(joint_pmf) -> float:
    """Exact I(X; Y) in nats of a joint pmf given as a table.

    Parameters
    ----------
    joint_pmf : array_like, shape (|X|, |Y|)
        P(X = i, Y = j) in row i, column j: nonnegative, finite, summing to 1 within 1e-9.
        The table is divided by its sum (a change of at most 1e-9) so that rounding in the
        entries cannot make the result negative.

    Returns
    -------
    float
        Σ_{i,j: P(i,j) > 0} P(i,j) log(P(i,j) / (P_X(i) P_Y(j))) (Cover and Thomas, 2nd ed.,
        Eq. (2.28)), in nats.

    Examples
    --------
    >>> round(exact_mi([[0.5, 0.0], [0.0, 0.5]]), 6)  # one fair bit shared: log 2
    0.693147
    >>> exact_mi([[0.25, 0.25], [0.25, 0.25]])  # independent
    0.0
    """
    # The shared array check: refuses text, complex numbers, masked entries, NaN and inf by name.
    pmf = as_float_array(joint_pmf, "joint_pmf", ndim=2, shape="(|X|, |Y|)", first_axis="row")
    if pmf.size == 0:
        raise InputError(f"argument 'joint_pmf' must be a non-empty 2-D array, got shape {pmf.shape}")
    if (pmf < 0).any():
        raise InputError(f"argument 'joint_pmf' must be nonnegative, smallest entry is {plain(pmf.min())}")
    total = pmf.sum()
    if abs(total - 1.0) > _PMF_TOLERANCE:
        raise InputError(f"argument 'joint_pmf' must sum to 1 (within {_PMF_TOLERANCE}), sums to {plain(total)}")
    pmf = pmf / total
    rows, cols = np.nonzero(pmf > 0)
    p = pmf[rows, cols]
    # In log space: P_X(i) ≥ P(i,j) > 0 and P_Y(j) > 0 on the support, but their product can
    # underflow to 0 for tiny (subnormal) entries, which a plain ratio would turn into inf.
    log_ratio = np.log(p) - np.log(pmf.sum(axis=1)[rows]) - np.log(pmf.sum(axis=0)[cols])
    return float(np.sum(p * log_ratio))
