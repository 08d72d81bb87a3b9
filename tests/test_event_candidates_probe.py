"""The event search's structured pairs a mechanism refuses are left out with a note
(audit.search.event_candidates.accepted_structured_pairs).

Under a declared prior that is not a two-point prior the event search tries StatDP's structured pairs on the
chosen critic's record; they set the record to every column's high end at once, which the one-hot histogram
(``catalog:histogram_buggy``: at most one 1 per record) refuses. Audits under a prior drawing one-hot rows
failed with exit 1 on the event test's first run.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from audit.cli.main import main
from audit.search.event_candidates import accepted_structured_pairs
from mechanisms.execution.runner import MechanismRunner
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

FAST = ["--samples", "1500", "--slices", "0", "--set", "critic.max_steps=200", "--seed", "3"]

#: A prior of 3 records, each absent (all zero) or in one of 4 bins: the rows the histogram accepts.
ONE_HOT_PRIOR = '''
from dataclasses import dataclass
import numpy as np
from mechanisms.inputs.priors import Prior


@dataclass(frozen=True, eq=False)
class OneHotRows(Prior):
    shape: tuple = (3, 4)
    draws_only_from_rng = True
    name = "one-hot rows"
    discrete = True
    independent_rows = True
    independent_columns = False

    def _sample(self, m, rng):
        bins = rng.integers(-1, self.shape[1], size=(m, self.shape[0]))
        return (bins[..., None] == np.arange(self.shape[1])).astype(np.float64)

    def describe(self):
        return "3 records, each absent or in one of 4 bins"


prior = OneHotRows()
'''


def _one_hot_only(dbs, rng=None):
    """Column sums plus noise; a record with several 1s is refused (ValueError), as the catalog's histogram does."""
    dbs = np.asarray(dbs)
    if np.any(dbs.sum(axis=2) > 1):
        raise ValueError("argument 'dbs' must have at most one 1 per record")
    return dbs.sum(axis=1) + np.random.default_rng(rng).laplace(size=(len(dbs), dbs.shape[2]))


def _pairs():
    base = np.zeros((2, 3))
    one, two = base.copy(), base.copy()
    one[0, 0] = 1.0  # record 0 in bin 0
    two[0, :2] = 1.0  # record 0 holds two 1s: refused
    return [NeighbouringPair(base, two, why="two 1s"), NeighbouringPair(base, one, why="one 1")]


def test_the_refused_structured_pairs_are_left_out_with_a_note_naming_the_first():
    pairs = _pairs()
    with MechanismRunner(_one_hot_only, "onehot") as runner:
        kept, note = accepted_structured_pairs(pairs, 0, runner, seed=0)
    assert kept == [pairs[1]]
    assert note.startswith("event search: 1 of 2 structured pairs on record 0 left out, the mechanism refused its "
                           "record values")
    assert "(first: two 1s: mechanism 'onehot' raised ValueError" in note


def test_structured_pairs_all_accepted_come_back_as_they_are_without_a_note():
    pairs = _pairs()[1:]
    with MechanismRunner(_one_hot_only, "onehot") as runner:
        assert accepted_structured_pairs(pairs, 0, runner, seed=0) == (pairs, None)
        assert accepted_structured_pairs([], 0, runner, seed=0) == ([], None)


def test_under_add_remove_the_probe_runs_the_presence_databases():
    """A presence column (the last attribute): the pair run is the add/remove pair the audit certifies, record 0
    present against absent with the first database's values, not the replacement pair itself."""
    first, second = np.zeros((2, 3)), np.zeros((2, 3))
    first[:, -1] = second[:, -1] = 1.0  # both records present
    first[0, 0] = 1.0  # a replacement of record 0's values
    ran = []

    def recording(dbs, rng=None):
        ran.append(np.array(dbs))
        return np.zeros((len(dbs), 1))

    pair = NeighbouringPair(first, second, why="replace")
    with MechanismRunner(recording, "recording") as runner:
        kept, note = accepted_structured_pairs([pair], 0, runner, seed=0, presence=True)
    assert note is None and kept == [pair] and kept[0] is pair  # the pair kept is the one given
    absent = first.copy()
    absent[0, -1] = 0.0
    np.testing.assert_array_equal(ran[-1], np.stack([first, absent]))


@pytest.mark.train
def test_the_catalog_histogram_under_a_one_hot_prior_completes_leaving_the_refused_pairs_out(tmp_path, capsys):
    (tmp_path / "onehot.py").write_text(ONE_HOT_PRIOR)
    status = main(["audit", "--mechanism", "catalog:histogram_buggy", "--prior", f"{tmp_path / 'onehot.py'}:prior",
                   "--json", *FAST])
    out = capsys.readouterr()
    assert status == 0, out.err
    result = json.loads(out.out)
    [note] = [n for n in result["notes"] if n.startswith("event search: ")]
    match = re.match(r"event search: (\d+) of 8 structured pairs on record \d left out", note)
    assert match and 0 < int(match.group(1)) < 8 and "at most one 1 per record" in note, note
    # The buggy histogram's Laplace scale is ε = 0.5, so it is 2-DP, not the claimed 0.5-DP.
    assert result["claim_verdict"] == "refuted"
