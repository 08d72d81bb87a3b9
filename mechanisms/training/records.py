"""Training records, training sets and canaries: the databases a DP-SGD run trains on.

A training set is a table of n rows ``[x_1, …, x_p, y, role]`` (features, binary label
y ∈ {0, 1}, role): role 1 is an ordinary example, role 2 a *gradient canary* (a record whose
per-sample gradient is crafted, not computed: Nasr et al. 2021, "Adversary instantiation",
Section 4; Nasr et al. 2023, "Tight auditing of differentially private machine learning",
the Dirac canary), role 0 a *null record* that contributes no gradient. Feature 0 is the
*canary coordinate*: it is 0 in every ordinary example (for the digits data it is the
top-left pixel, which is 0 in all 1797 images), so the per-sample gradient of an ordinary
example is 0 on the weight of feature 0 and only a canary moves it.

Neighbouring training sets replace the canary by a null record (n fixed). For DP-SGD with
Poisson sampling and a step normalised by the expected batch size, a null record and an
absent record give the same run, so this relation is add/remove of the canary
(dp-accounting's ``REPLACE_SPECIAL``, which it accounts like ``ADD_OR_REMOVE_ONE``).
"""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError, as_generator, check_choice, check_int, check_positive

__all__ = ["NULL", "ORDINARY", "GRADIENT_CANARY", "digits_training_set", "gaussian_training_set",
           "input_canary", "gradient_canary", "null_record", "with_record"]

NULL, ORDINARY, GRADIENT_CANARY = 0.0, 1.0, 2.0


def _rows(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    role = np.full((features.shape[0], 1), ORDINARY)
    return np.hstack([features, labels[:, None].astype(np.float64), role])


def gaussian_training_set(records: int, features: int = 4, seed=None) -> np.ndarray:
    """n ordinary examples of a logistic model on Gaussian features, shape ``(n, features + 3)``.

    Columns: the canary coordinate (always 0), ``features`` standard normal features, the
    label y ~ Bernoulli(sigmoid(x·1/√features)), the role.
    """
    check_int(records, "records", minimum=1)
    check_int(features, "features", minimum=1)
    rng = as_generator(seed)
    x = rng.standard_normal((records, features))
    y = (rng.random(records) < 1.0 / (1.0 + np.exp(-x.sum(axis=1) / np.sqrt(features)))).astype(np.float64)
    return _rows(np.hstack([np.zeros((records, 1)), x]), y)


def digits_training_set(records: int, seed=None) -> np.ndarray:
    """n examples of scikit-learn's bundled digits (no download), even vs odd, shape ``(n, 66)``.

    Pixels are scaled to [0, 1]; pixel 0 (the canary coordinate) is 0 in every image.
    The n images are drawn without replacement from the 1797.
    """
    from sklearn.datasets import load_digits

    data = load_digits()
    check_int(records, "records", minimum=1)
    if records > data.data.shape[0]:
        raise InputError(f"argument 'records' must be at most {data.data.shape[0]} (the digits data), got {records}")
    rng = as_generator(seed)
    chosen = rng.choice(data.data.shape[0], size=records, replace=False)
    return _rows(data.data[chosen] / 16.0, (data.target[chosen] % 2 == 1).astype(np.float64))


def input_canary(like: np.ndarray, value: float = 1.0, label: float = 1.0) -> np.ndarray:
    """An input-space canary: an out-of-distribution example for the training set ``like``.

    Its only non-zero feature is the canary coordinate (``value``), which no ordinary example
    has, and its label is ``label``; its gradient is computed and clipped like any example's.
    """
    check_positive(value, "value")
    check_choice(label, "label", (0.0, 1.0))
    row = np.zeros(like.shape[1])
    row[0] = value
    row[-2] = label
    row[-1] = ORDINARY
    return row


def gradient_canary(like: np.ndarray) -> np.ndarray:
    """A gradient canary for ``like``: role 2; the mechanism gives it the crafted gradient.

    Its features (the canary coordinate 1, label 1) are what a black-box release evaluates.
    """
    row = input_canary(like)
    row[-1] = GRADIENT_CANARY
    return row


def null_record(like: np.ndarray) -> np.ndarray:
    """The record that replaces the canary in the neighbouring training set (no gradient)."""
    row = np.zeros(like.shape[1])
    row[-1] = NULL
    return row


def with_record(training_set: np.ndarray, record: np.ndarray) -> np.ndarray:
    """The training set with ``record`` appended as its last row (the canary's slot)."""
    return np.vstack([training_set, np.asarray(record, dtype=np.float64)[None, :]])
