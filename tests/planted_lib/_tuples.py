"""Local randomizers of one client's tuple of bits (the shape of multi-freq-ldpy's multidimensional clients).

Private to the package scan (its name starts with ``_``): tests/test_scan_ldp.py scans it on its own. Each
release is a tuple of bits, so its exact law on two tuples is enumerated in that test.

- ``split_response``: randomized response on each of the d bits at ε/d: ε-LDP for any two tuples (composition);
- ``sampled_response``: one attribute drawn, sent with its randomized response at ε: ε-LDP for any two tuples;
- ``padded_response`` (BUG, the shape of random sampling plus fake data): one attribute drawn and randomized at
  the amplified ε' = ln(d(e^ε − 1) + 1), every other attribute replaced by a fake uniform bit, and the attribute
  drawn not sent. It is ε-LDP for two tuples that differ in one attribute, but two tuples that differ in every
  attribute are ε'-LDP only.
"""

import math

import numpy as np


def _response(bit, epsilon, rng):
    keep = rng.random() < math.exp(epsilon) / (1 + math.exp(epsilon))
    return int(bit) if keep else 1 - int(bit)


def split_response(input_tuple, d=2, epsilon=1.0, random_state=None):
    rng = np.random.default_rng(random_state)
    return tuple(_response(bit, epsilon / d, rng) for bit in input_tuple[:d])


def sampled_response(input_tuple, d=2, epsilon=1.0, random_state=None):
    rng = np.random.default_rng(random_state)
    drawn = int(rng.integers(d))
    return drawn, _response(input_tuple[drawn], epsilon, rng)


def padded_response(input_tuple, d=2, epsilon=1.0, random_state=None):
    rng = np.random.default_rng(random_state)
    drawn = int(rng.integers(d))
    amplified = math.log(d * (math.exp(epsilon) - 1) + 1)
    return tuple(_response(input_tuple[i], amplified, rng) if i == drawn else int(rng.integers(2)) for i in range(d))
