"""``planted_lib._float_exact``: entry points exactly at their ε-DP claims, their float bits included, and the scan's
float-bit test's share of α on them (``miaudit experiment scan-type-one --grid float``).

Each release is y = r ⊕ v in float64: r an exactly ε-DP integer (randomized response; a count plus two-sided
geometric noise), v = u/2 a jitter drawn apart from the input, u = ``rng.random()`` in [0, 1 − 2⁻⁵³]. The law of
y, as a law on doubles (bit patterns included), is enumerated here through r:

- **the jitter does not depend on the input**: with the same seed, both inputs of the pair draw the same v
  (checked on the entry points' own outputs);
- **⌊y⌋ = r**: round-to-nearest float addition is monotone in each operand (IEEE 754-2008, Section 4.3: every
  operation is the exact result correctly rounded, and rounding is monotone), so for v in [0, vmax],
  r ⊕ 0 ≤ r ⊕ v ≤ r ⊕ vmax; checked at both ends for every r the enumeration holds;
- so for every double y, P(y | D) = P(r = ⌊y⌋ | D) · P(⌊y⌋ ⊕ v = y), the second factor the same under both inputs:
  every set of doubles has P(S | D) / P(S | D′) between the smallest and the largest ratio of r's law, and the
  set {⌊y⌋ ∈ A} has exactly that of {r ∈ A}. The float law's ε is r's, enumerated here: exactly ε, met with
  equality. The float-bit test's null (no set of doubles separates the inputs by more than e^ε) holds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from audit.scan.cases import build_cases, discover
from audit.scan.profiles import profile_for

EPSILON = 1.0
#: The largest double ``Generator.random`` returns (53 random bits: k·2⁻⁵³, k < 2⁵³), halved: the largest jitter.
LARGEST_JITTER = (1.0 - 2.0**-53) / 2


pytestmark = pytest.mark.usefixtures("planted_on_path")  # tests/conftest.py: planted_lib imports by name


def _cases() -> dict:
    cases, _ = build_cases(discover(profile_for("planted_lib._float_exact"))[0], (EPSILON,))
    return {case.entry.qualified.rsplit(".", 1)[1]: case for case in cases}


def _geometric_count(count: int, values) -> dict:
    """P(r) of count + two-sided geometric noise, (1 − p)/(1 + p) p^|r − count|, p = e^−ε (Ghosh, Roughgarden and
    Sundararajan 2009), at each r of ``values`` (each exact: no truncation)."""
    p = math.exp(-EPSILON)
    return {r: (1 - p) / (1 + p) * p ** abs(r - count) for r in values}


def _integer_laws(name: str, case) -> tuple:
    """The law of r under the case's two databases, enumerated from the mechanism's definition (the count's on
    r = −100 … 100, beyond which either law's mass is below e⁻⁹⁸)."""
    if name == "JitteredResponse":
        keep = math.exp(EPSILON) / (1 + math.exp(EPSILON))
        first, second = (float(db[0, 0]) for db in (case.pair.first, case.pair.second))
        return ({int(first): keep, int(1 - first): 1 - keep}, {int(second): keep, int(1 - second): 1 - keep})
    counts = [int(np.sum(db[:, 0] >= 5)) for db in (case.pair.first, case.pair.second)]
    assert abs(counts[0] - counts[1]) == 1  # the pair changes one record across 5
    return tuple(_geometric_count(c, range(-100, 101)) for c in counts)


def _float_law_epsilon(first: dict, second: dict) -> float:
    """max over sets of doubles of |log P(S | D) / P(S | D′)| for y = r ⊕ v: r's largest |log ratio| over its values
    (module docstring), where ⌊r ⊕ v⌋ = r at both ends of the jitter's range for every r enumerated."""
    worst = 0.0
    for r in set(first) | set(second):
        assert float(r) + 0.0 == r and math.floor(float(r) + LARGEST_JITTER) == r  # ⌊r ⊕ v⌋ = r for every v
        a, b = first.get(r, 0.0), second.get(r, 0.0)
        worst = max(worst, math.inf if min(a, b) == 0 else abs(math.log(a / b)))
    return worst


@pytest.mark.parametrize("name", ["JitteredResponse", "jittered_count"])
def test_each_entry_point_is_exactly_at_its_claim_with_its_float_bits(name, monkeypatch):
    import planted_lib._float_exact as module

    case = _cases()[name]
    assert case.claim == f"dp:{EPSILON}"
    first, second = _integer_laws(name, case)
    assert _float_law_epsilon(first, second) == pytest.approx(EPSILON, abs=1e-12)
    # The scan's own call on both inputs with the same seed: the same jitter v, drawn after draws that do not depend
    # on the input, and y = ⌊y⌋ ⊕ v.
    drawn, jitter = [], module.jitter
    monkeypatch.setattr(module, "jitter", lambda rng: drawn.append(jitter(rng)) or drawn[-1])
    function = case.function()
    for seed in range(40):
        drawn.clear()
        outputs = [function(db, np.random.default_rng(seed)) for db in (case.pair.first, case.pair.second)]
        assert len(drawn) == 2 and drawn[0] == drawn[1] and 0 <= drawn[0] <= LARGEST_JITTER
        assert all(y == math.floor(y) + drawn[0] for y in outputs)


def test_outputs_hold_bits_below_two_to_the_minus_32():
    """The float-bit statistics are fitted only on outputs with a bit below 2⁻³² (the scan's gate); y·2³² is then
    not an integer. The jitter u/2 is a multiple of 2⁻⁵⁴, so most outputs are such."""
    cases = _cases()
    for name, case in cases.items():
        function = case.function()
        outputs = [function(case.pair.first, np.random.default_rng(seed)) for seed in range(20)]
        assert sum(math.ldexp(y, 32) != round(math.ldexp(y, 32)) for y in outputs) >= 15, name
