"""Entry points exactly at their claims whose outputs hold bits below 2⁻³², so a scan's float-bit event test gets
a share of α (scanned alone, ``planted_lib._float_exact``, by ``miaudit experiment scan-type-one --grid float``).

Each releases an exactly ε-DP integer value r (randomized response, or a count plus two-sided geometric noise)
plus a jitter: y = r ⊕ u/2 in float64, with u = ``rng.random()`` (a multiple of 2⁻⁵³ in [0, 1), drawn apart from
the input, with the same law under both inputs).

**The float law is exactly ε-DP, with equality.** y is a fixed function of (r, u) (float64 addition is a function
of its operands), and u does not depend on the input: by post-processing (Dwork and Roth 2014, Proposition 2.1),
P(y ∈ S | D) = Σ_r P(r | D) P(r ⊕ u/2 ∈ S) ≤ e^ε P(y ∈ S | D′) for every set S of doubles, the bit patterns
included, since r is ε-DP. Equality: for an integer r with |r| < 2⁵¹ and 0 ≤ u/2 < ½, round-to-nearest is
monotone and r and r + ½ are doubles, so r ≤ r ⊕ u/2 ≤ r + ½ < r + 1 and ⌊y⌋ = r; the events {⌊y⌋ ∈ A} are
{r ∈ A}, and r's law meets ε with equality (randomized response on {y < 1}; the geometric count on
{y ≥ k} for k beyond both counts). No set of doubles — a grid, an exponent, low significand bits — separates the
inputs by more than e^ε, so the float-bit test's null holds. tests/test_scan_type_one_float.py enumerates the laws.

The bits below 2⁻³² are fine: u/2 is a multiple of 2⁻⁵⁴ and r ⊕ u/2 keeps its bits down to r's float spacing
(2⁻⁵² at 1 ≤ |y| < 2), so the float-bit statistics (:mod:`audit.statistics.float_bits`) are fitted. For randomized
response the grid exponent of y is below −52 only where r = 0 (and u/2 is not a multiple of 2⁻⁵²): an event whose
ratio is that of {r = 0}, e^ε, at the float-bit test's null's boundary.
"""

import numpy as np

from planted_lib import randomizers
from planted_lib._noise import two_sided_geometric


def jitter(rng) -> float:
    """u/2, u = ``rng.random()``: a double in [0, ½), a multiple of 2⁻⁵⁴, whatever the input."""
    return rng.random() / 2


class JitteredResponse(randomizers.RandomizedResponse):
    """Randomized response (Warner 1965; the value kept with probability e^ε / (1 + e^ε)) plus :func:`jitter`."""

    def randomise(self, value):
        return super().randomise(value) + jitter(self.rng)


def jittered_count(array, epsilon=1.0, random_state=None):
    """The number of records ≥ 5 plus two-sided geometric noise for sensitivity 1 (Ghosh, Roughgarden and
    Sundararajan 2009), plus :func:`jitter`."""
    rng = np.random.default_rng(random_state)
    count = int(np.sum(np.asarray(array, dtype=float) >= 5)) + two_sided_geometric(epsilon, 1, rng)
    return float(count) + jitter(rng)
