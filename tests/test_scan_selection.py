"""``miaudit scan``: ``--only`` (a subset of the cases), each case's seconds, a family's ``min_epsilon``, and an
entry point that changes the database it is given."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from estimators.validation import InputError

from audit.scan.cases import build_cases, discover
from audit.scan.profiles import profile_for
from audit.scan.profiles.base import FittedModel
from audit.scan.running import scan, select_cases


#: A correct tool that centres its array in place (as diffprivlib 0.6.6's PCA centres its X), and one that raises.
IN_PLACE = '''
import numpy as np


def centred_count(array, epsilon, random_state=None):
    """The number of records plus two-sided geometric noise: it reads len(array) only, then centres the array."""
    rng = np.random.default_rng(random_state)
    released = len(array) + float(rng.geometric(1 - np.exp(-epsilon)) - rng.geometric(1 - np.exp(-epsilon)))
    array -= array.mean()
    return released


def broken_count(array, epsilon, random_state=None):
    raise RuntimeError("broken")
'''


pytestmark = pytest.mark.usefixtures("planted_on_path")  # tests/conftest.py: planted_lib imports by name


def _randomizer_cases():
    return build_cases(discover(profile_for("planted_lib.randomizers"))[0], (1.0,))[0]


def test_only_keeps_the_cases_whose_id_matches_a_pattern():
    cases = _randomizer_cases()
    assert sorted(c.id for c in select_cases(cases, "NoisyReport")) == [
        "planted_lib.randomizers.NoisyReport(epsilon=1.0) / ends"]
    assert sorted(c.id for c in select_cases(cases, ["randomized_bit", "Randomized*/ ends"])) == [
        "planted_lib.randomizers.RandomizedResponse(epsilon=1.0) / ends",
        "planted_lib.randomizers.randomized_bit(epsilon=1.0) / ends"]
    with pytest.raises(InputError, match="argument 'only': no case of the scan matches 'Nothing'"):
        select_cases(cases, "Nothing")
    with pytest.raises(InputError, match="argument 'only'"):
        select_cases(cases, [""])


def test_a_scan_with_only_splits_alpha_over_the_cases_kept():
    result = scan("planted_lib.randomizers", epsilons=(1.0,), max_runs=3000, timeout=30, seed=1, only="NoisyReport",
                  in_process=True)
    assert result.cases == 1 and [o["status"] for o in result.outcomes] == ["finding"]
    assert result.outcomes[0]["alpha"] == pytest.approx(0.05)  # α/K with K = 1 case kept, not the 3 of the module
    assert result.settings["only"] == ["NoisyReport"]
    assert result.outcomes[0]["seconds"] > 0


def test_the_scan_command_takes_only_and_names_it_in_its_error(tmp_path, capsys):
    from audit.cli.main import main

    out = tmp_path / "report"
    assert main(["scan", "planted_lib.randomizers", "--only", "Nothing", "--out", str(out)]) == 2
    assert "argument '--only': no case of the scan matches 'Nothing'" in capsys.readouterr().err
    # --alpha given once is taken (its default was read as a first value: "given more than once")
    assert main(["scan", "planted_lib.randomizers", "--alpha", "0.01", "--only", "Nothing", "--out", str(out)]) == 2
    assert "--only" in capsys.readouterr().err


def test_min_epsilon_keeps_the_grid_points_at_or_above_it_and_all_where_none_is():
    from planted_lib.models import CountModel

    family = FittedModel(min_epsilon=1.0)
    assert sorted({p["epsilon"] for p in family.settings(CountModel, (0.1, 1.0, 4.0))}) == [1.0, 4.0]
    assert sorted({p["epsilon"] for p in family.settings(CountModel, (0.1, 0.5))}) == [0.1, 0.5]
    assert sorted({p["epsilon"] for p in FittedModel().settings(CountModel, (0.1, 1.0))}) == [0.1, 1.0]


def test_an_entry_point_that_changes_its_array_is_audited_on_copies_and_noted(tmp_path):
    module = tmp_path / "in_place_tools.py"
    module.write_text(IN_PLACE, encoding="utf-8")
    try:
        result = scan(str(module), epsilons=(1.0,), max_runs=3000, timeout=30, seed=2, in_process=True)
    finally:
        sys.modules.pop("in_place_tools", None)
    outcomes = {o["name"]: o for o in result.outcomes}
    centred = outcomes["centred_count"]
    # Its release is len(array) plus noise, the same law on both databases of a pair: a control, not a skipped case.
    assert centred["status"] == "control"
    assert any("changes the database it is given in place" in note for note in centred["notes"])
    assert outcomes["broken_count"]["status"] == "skipped" and outcomes["broken_count"]["seconds"] >= 0
    assert np.isfinite(outcomes["broken_count"]["seconds"])


def test_a_chunk_may_take_a_multiple_of_what_the_probe_says_within_ten_timeouts():
    from audit.scan.running import chunk_timeout

    assert chunk_timeout(60.0, 0.001) == 60.0  # 256 calls of 1 ms: 4 × 0.256 s, below the timeout
    assert chunk_timeout(60.0, 0.2) == pytest.approx(4 * 0.2 * 256)  # a fit of 0.2 s: 204.8 s
    assert chunk_timeout(60.0, 5.0) == 600.0  # 4 × 5 s × 256 = 5,120 s, held at 10 × 60 s
    assert chunk_timeout(60.0, 0.01, 6000) == pytest.approx(4 * 0.01 * 6000)  # the looks of 6,000 calls: 240 s


def test_a_case_may_run_after_its_probe_twice_its_looks_bound_and_one_timeout():
    """The hard kill's allowance after the probe (audit.scan.isolation.hard_limit), by hand: twice the looks' bound
    (the timeout, or 4 × the probe's slower call × the runs, held at 10 timeouts), plus one timeout."""
    from audit.scan.case_audit import seconds_after_probe

    timeout = 60.0
    # 6,000 calls of 1 ms: 4 × 6 s = 24 s is below the timeout, which bounds the looks.
    assert seconds_after_probe(timeout, 0.001, 6000) == pytest.approx(2 * 60.0 + 60.0)
    # 20 ms a call (python-dp's BoundedMean without bounds): 4 × 120 s = 480 s of looks.
    assert seconds_after_probe(timeout, 0.02, 6000) == pytest.approx(2 * 480.0 + 60.0)
    # 40 ms: 4 × 240 s = 960 s, held at 10 × 60 s; 5 s a call, or 20,000 runs, the same: the bound ignores max_runs.
    for probe, runs in ((0.04, 6000), (5.0, 6000), (5.0, 20000), (59.0, 6000)):
        assert seconds_after_probe(timeout, probe, runs) == pytest.approx(2 * 600.0 + 60.0)


def test_a_case_is_killed_within_twenty_five_timeouts_and_a_slow_working_one_is_not():
    """The whole case's hard kill (isolation.hard_limit, from the case's start): at most the probe's own limit
    (4 timeouts + grace) + 21 timeouts + grace, whatever its probe measured; a case of 20–60 ms calls has twice its
    6,000 calls' time and more."""
    from audit.scan.case_audit import seconds_after_probe
    from audit.scan.isolation import hard_limit
    from mechanisms.execution.worker import HARD_KILL_GRACE

    timeout, grace = 60.0, HARD_KILL_GRACE
    most = 25 * timeout + 2 * grace  # 1,520 s at the default timeout (and grace)
    for probe in (1e-4, 0.02, 0.06, 1.0, 59.0):  # 59 s a call reaches it
        # The probe ended at the latest moment its own limit lets it (4 × timeout + grace after the start at 0).
        latest = hard_limit(timeout, 0.0, 4 * timeout + grace, seconds_after_probe(timeout, probe, 6000))
        assert latest <= most
    for probe in (0.02, 0.06):  # slow but working: killed only past twice its calls' time after its probe
        calls = 6000 * probe
        assert hard_limit(timeout, 0.0, 2 * probe, seconds_after_probe(timeout, probe, 6000)) > 2 * probe + 2 * calls
