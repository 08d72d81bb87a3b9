"""A model fitted on (X, y) (the shape of diffprivlib.models): noisy class counts; one planted bug."""

import numpy as np

from planted_lib._noise import two_sided_geometric


class CountModel:
    """Releases ``classes_`` and the noisy number of records of each class (sensitivity 2 under replace-one:
    one record leaves a class and joins another).

    BUG (classes=None): the label set is read from the data (``np.unique(y)``)."""

    def __init__(self, epsilon=1.0, classes=None, random_state=None):
        self.epsilon = epsilon
        self.classes = classes
        self.random_state = random_state

    def fit(self, X, y):
        rng = np.random.default_rng(self.random_state)
        self.classes_ = np.unique(y) if self.classes is None else np.asarray(self.classes, dtype=float)
        self.counts_ = np.array([np.sum(y == c) + two_sided_geometric(self.epsilon, 2, rng) for c in self.classes_],
                                dtype=float)
        return self


class BrokenModel:
    """A constructor that raises: listed as skipped with its error."""

    def __init__(self, epsilon=1.0):
        raise ValueError("BrokenModel is not configured")

    def fit(self, X, y):
        return self
