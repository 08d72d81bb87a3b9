"""A planted-bug library for the scanner's tests (issue 40): small modules shaped like each profile family
(tools on an array, models fitted on (X, y), local randomizers), with correct entry points and entry points
carrying one known bug each. Every release is discrete (two-sided geometric noise, randomized response), so
a correct entry point is exactly ε-DP and its exact ε on a pair can be enumerated (tests/test_scan.py).

Bugs planted (one per entry point or grid point):

- ``tools.noisy_sum`` with ``bounds=None``: the bounds are derived from the data;
- ``tools.weighted_count`` with ``weights``: an optional per-record argument the noise ignores;
- ``tools.loose_count``: a wrong sensitivity constant (noise for sensitivity 1/2, the count's is 1);
- ``tools.clamped_sum``: the records are not clamped, the noisy sum is (clamping after the noise);
- ``models.CountModel`` without ``classes``: the label set is inferred from the data;
- ``randomizers.NoisyReport``: the input value is released as it is in some runs.
"""
