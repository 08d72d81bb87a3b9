"""Two-sided geometric noise, the discrete Laplace mechanism of Ghosh, Roughgarden and Sundararajan (2009):
P(k) = (1 − p)/(1 + p) · p^|k| with p = exp(−ε/Δ), exactly ε-DP for an integer query of sensitivity Δ."""

import math

import numpy as np


def two_sided_geometric(epsilon, sensitivity, random_state=None):
    rng = np.random.default_rng(random_state)
    p = math.exp(-epsilon / sensitivity)
    return int(rng.geometric(1 - p)) - int(rng.geometric(1 - p))
