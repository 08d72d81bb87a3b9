"""Local randomizers of one value in {0, 1} (the shape of diffprivlib.mechanisms); one planted bug."""

import math

import numpy as np


class RandomizedResponse:
    """Warner's randomized response: the value kept with probability e^ε / (1 + e^ε): correct."""

    def __init__(self, epsilon=1.0, random_state=None):
        self.epsilon = epsilon
        self.rng = np.random.default_rng(random_state)

    def randomise(self, value):
        keep = self.rng.random() < math.exp(self.epsilon) / (1 + math.exp(self.epsilon))
        return float(value if keep else 1 - value)


def randomized_bit(value, epsilon=1.0, random_state=None):
    """Randomized response as a function: correct."""
    return RandomizedResponse(epsilon, random_state).randomise(value)


class NoisyReport:
    """Randomized response on a value in {0, 1}, reported as 10 + the kept bit.

    BUG: in 10% of runs (a "debug" path) the input value itself is released."""

    def __init__(self, epsilon=1.0, random_state=None):
        self.epsilon = epsilon
        self.rng = np.random.default_rng(random_state)

    def randomise(self, value):
        if self.rng.random() < 0.1:
            return float(value)
        keep = self.rng.random() < math.exp(self.epsilon) / (1 + math.exp(self.epsilon))
        return 10.0 + float(value if keep else 1 - value)
