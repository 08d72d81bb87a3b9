"""Entry points exactly at their claims on the pairs a scan gives them (scanned alone, ``planted_lib._exact``,
by the type-I test of the early-stopping scan): randomized response (ε-DP with equality on its two
outputs) and a count of records ≥ 5 with two-sided geometric noise (the log-ratio of the two laws is
exactly ε on every output beyond the two counts)."""

from planted_lib import randomizers, tools


class Response(randomizers.RandomizedResponse):
    """Randomized response, scanned under this module's name."""


def exact_count(array, epsilon=1.0, random_state=None):
    return tools.exact_count(array, epsilon, random_state)
