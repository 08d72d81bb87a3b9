"""A one-bit mechanism between two neighbouring one-record databases, for the event-search certificate tests."""

import numpy as np

from audit.statistics.pair_candidates import PairCandidate
from fake_runner import SamplingRunner


class BitRunner(SamplingRunner):
    """One bit: P(y = 1) = p under the first database (record 0 = 1), q under the second (record 0 = 0).

    ``calls`` records the number of databases of each call, so a test can count the runs made."""

    def __init__(self, p, q):
        self.p, self.q = p, q
        self.calls = []

    def sample(self, dbs, rng, what=""):
        self.calls.append(len(dbs))
        probability = np.where(dbs[:, 0, 0] == 1.0, self.p, self.q)
        return (rng.random(len(dbs)) < probability).astype(np.float64)[:, None]


def _bit(a, b, dbs, outputs):
    return outputs[:, 0]


def bit_candidate(p, q, n, rng):
    """The pair (record 0 at 1, at 0) scored by the bit, with ``n`` held-out draws of each database."""
    first, second = np.ones((1, 1)), np.zeros((1, 1))
    held_out = ((rng.random(n) < p).astype(float), (rng.random(n) < q).astype(float))
    return PairCandidate(first, second, 0, _bit, "one bit", held_out=held_out)
