"""A forecast's range (estimators.ranges.value_range): one number where both ends print the same, significant
figures below 10 (a sub-second time is not "0"), whole numbers above; used by the wide critics' cost line and the
report's runs-to-refute forecast. Every expected string is written out here."""

import pytest

from audit.critic_cost import CriticForecast
from estimators.ranges import figures, value_range


@pytest.mark.parametrize("value,printed", [
    (0.3, "0.3"), (0.312, "0.31"), (0.0042, "0.0042"), (0.000001, "0.000001"),  # never exponent, never "0"
    (0.996, "1"), (1.24, "1.2"), (9.96, "10"), (25.3, "25"), (143.4, "143"), (12345.6, "12,346"),
    (0.0, "0"), (350, "350"), (2000, "2,000"), (10**9, "1,000,000,000"),  # integers exactly
])
def test_figures(value, printed):
    assert figures(value) == printed


@pytest.mark.parametrize("low,high,unit,about,printed", [
    (0.96, 1.04, "s", "about ", "0.96 to 1 s"),     # 0.96 and 1 differ as printed
    (1.01, 1.04, "s", "about ", "about 1 s"),       # both "1"
    (0.31, 0.314, "s", "about ", "about 0.31 s"),
    (25.1, 143.4, "s", "about ", "25 to 143 s"),
    (350, 2000, "steps", "", "350 to 2,000 steps"),
    (2000, 2000, "steps", "", "2,000 steps"),
    (1234, 1234, "runs per input", "about ", "about 1,234 runs per input"),
    (5, 7, "", "about ", "5 to 7"),
])
def test_value_range(low, high, unit, about, printed):
    assert value_range(low, high, unit, about=about) == printed


def _forecast(cpu, gpu, steps):
    return CriticForecast(critics=1, width=20001, batch=160, steps=steps, cpu_seconds=cpu, gpu_seconds=gpu,
                          memory=2**20)


def test_the_critics_line_gives_one_number_where_both_ends_print_the_same():
    line = _forecast((0.31, 0.314), (1.01, 1.04), (2000, 2000)).line(400)
    assert "training is predicted to take about 0.31 s on the CPU (about 1 s on a GPU; 2,000 steps) and" in line
    assert "early stopping" not in line  # 2,000 at both ends: early stopping cannot end it sooner


def test_the_critics_line_keeps_a_range_and_prints_sub_second_times():
    line = _forecast((0.3, 2.46), (0.04, 0.052), (350, 2000)).line(400)
    assert ("training is predicted to take 0.3 to 2.5 s on the CPU (0.04 to 0.052 s on a GPU; 350 to 2,000 steps, "
            "as early stopping ends it) and") in line
