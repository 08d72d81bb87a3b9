"""experiments/deterministic_difference.py says its numbers from the run, not from its text: the summary under the table
reads the rows (seeds refuted, looks, runs, certified ε, an early look's α_0 and t_0), and the ε a row shows is the
refuting test's. Rows and results built by hand; each expected line written out here."""

from __future__ import annotations

from types import SimpleNamespace

from experiments.deterministic_difference import refuting_bound, summary


def _row(seed, runs, epsilon, test="event test", look=1, seconds=0.25, **first):
    row = {"mechanism": "zero count", "claim": "dp:4", "seed": seed, "samples": 400, "event_runs": 400, "early": False,
           "alpha_0": 5.6e-05, "planned_runs": 2000, "last_runs": 60000, "look": look, "looks": 4, "runs": runs,
           "epsilon": epsilon, "test": test, "seconds": seconds}
    return {**row, **first}


def test_the_summary_gives_the_ranges_of_the_rows():
    rows = [_row(0, 2064, 4.1783), _row(1, 2000, 4.0653, "float-bit event test", seconds=0.75), _row(2, 2064, 4.1783)]
    # Runs 2,000 to 2,064 (half of each per input), ε 4.07 to 4.18 to 3 figures, seconds 0.2 (0.25 rounds to even) to 0.8.
    assert summary(rows, 60000) == [
        "dp:4, zero count: refuted on 3 of 3 seeds at look 1 of 4; first look 400 MI samples and 400 event runs per "
        "input, an ordinary look; after 2,000–2,064 runs (1,000–1,032 per input), certified ε 4.07–4.18 (event test "
        "or float-bit event test); 0.2–0.8 s."]


def test_an_early_look_says_its_level_and_fraction_and_an_unrefuted_seed_is_counted():
    early = {"samples": 40, "event_runs": 34, "early": True, "alpha_0": 4.2998e-07, "planned_runs": 176}
    rows = [_row(0, 176, 1.26, **early), _row(1, 60000, None, "", look=None, **early)]
    assert summary(rows, 60000) == [
        "dp:4, zero count: refuted on 1 of 2 seeds at look 1 of 4; first look 40 MI samples and 34 event runs per "
        "input, the early look at α_0 = 4.3e-07 (t_0 = 176 / 60,000 of the last look's runs); after 176 runs (88 per "
        "input), certified ε 1.26 (event test); 0.2 s."]
    none = [_row(0, 60000, None, "", look=None)]
    assert summary(none, 60000) == [
        "dp:4, zero count: refuted on 0 of 1 seeds within 60,000 runs; first look 400 MI samples and 400 event runs "
        "per input, an ordinary look; 0.2 s."]


def test_a_row_shows_the_epsilon_of_the_test_that_refuted():
    # The event test certified 3.75 but did not refute ε = 4; the float-bit event test refuted with 4.07.
    result = SimpleNamespace(refuted_by=[{"test": "float"}], event_test=SimpleNamespace(epsilon_lower_bound=3.75),
                             float_event_test=SimpleNamespace(epsilon_lower_bound=4.07))
    assert refuting_bound(result) == (4.07, "float-bit event test")
    both = SimpleNamespace(refuted_by=[{"test": "event"}, {"test": "float"}],
                           event_test=SimpleNamespace(epsilon_lower_bound=4.18),
                           float_event_test=SimpleNamespace(epsilon_lower_bound=4.07))
    assert refuting_bound(both) == (4.18, "event test")
    assert refuting_bound(SimpleNamespace(refuted_by=[], event_test=None, float_event_test=None)) == (None, "")
