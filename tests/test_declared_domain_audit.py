"""A declared domain through the configuration and the audit: --domain / [mechanism] domain, a function's
bounds= arguments, the pairs its families add, the result's domain_reach and its note."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from audit import run_audit
from audit.config.building import build_spec
from audit.search.input_domain import DeclaredDomain
from estimators.validation import InputError

RANGE_BUG = '''import numpy as np


def release(dbs, rng):
    """Sum of the records with Laplace noise of scale 1: 1-DP for records in [0, 1], 10-DP on [0, 10]."""
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (len(dbs), 1))


def per_record(db, rng):
    """The same per database, the range stated in a call's bounds= (never run)."""
    if db is None:
        helper(db, bounds=(0, 10))
    return float(db.sum() + rng.laplace(0.0, 1.0))


def helper(db, bounds):
    return db
'''


def _config(tmp_path, name="release", **mechanism):
    source = tmp_path / "range_bug.py"
    source.write_text(RANGE_BUG)
    return {"mechanism": {"spec": f"{source}:{name}", **mechanism},
            "prior": {"spec": "builtin:bernoulli", "n": 10}, "claim": {"spec": "dp:1"},
            "audit": {"records": [0], "samples": 1000, "seed": 5}}


def _build(config):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = build_spec(config)
    return spec, [str(w.message) for w in caught]


def test_a_plain_callable_declares_no_domain_and_gets_no_pair(tmp_path):
    spec, _ = _build(_config(tmp_path))
    assert spec.domain is None and spec.pairs == ()


def test_domain_key_adds_the_pilot_s_pair_and_warns_that_0_1_records_fall_short(tmp_path):
    spec, messages = _build(_config(tmp_path, domain="0,10"))
    assert spec.domain == DeclaredDomain(0.0, 10.0, "[mechanism] domain (--domain) 0,10")
    assert any("span [0, 1]" in m and "[0, 10]" in m for m in messages)
    (pair,) = spec.pairs
    # The largest change of one record over [0, 10] is 10 (the truth at the ends: ε = 10 / 1).
    assert float(np.abs(pair.first - pair.second).sum()) == pytest.approx(10.0, abs=1e-9)
    assert any("scored on" in note and "costs no α" in note for note in spec.notes)


def test_a_per_database_function_s_bounds_argument_declares_its_domain(tmp_path):
    spec, _ = _build(_config(tmp_path, name="per_record", per_database=True))
    assert (spec.domain.low, spec.domain.high) == (0.0, 10.0) and "bounds=(0, 10)" in spec.domain.source
    assert len(spec.pairs) == 1


def test_under_add_remove_the_kept_pair_is_a_record_present_vs_absent(tmp_path):
    config = _config(tmp_path, domain="0,10")
    config["claim"]["relation"] = "add-remove"
    spec, _ = _build(config)
    (pair,) = spec.pairs
    assert pair.first.shape == (10, 2)  # the presence column
    (record,) = np.flatnonzero(np.any(pair.first != pair.second, axis=1))
    assert pair.first[record, 1] != pair.second[record, 1] and pair.first[record, 0] == pair.second[record, 0]
    # The empty database cannot be run (the runner needs a record present): those pairs are left out, said.
    note = next(note for note in spec.notes if "pilot runs of each database" in note)
    assert "could not be run" in note and "empty database" in note


def test_a_bad_domain_is_one_error_naming_the_key(tmp_path):
    with pytest.raises(InputError, match=r"\[mechanism\] domain \(--domain\)"):
        build_spec(_config(tmp_path, domain="10,0"))


@pytest.mark.train
def test_the_planted_range_bug_is_refuted_with_the_domain_and_its_reach_recorded(tmp_path):
    spec, _ = _build(_config(tmp_path, domain="0,10"))
    result = run_audit(spec)
    assert result.claim_verdict == "refuted"
    # Sound: the certified ε is below the exact ε = 10 of the pair at the domain's ends (Laplace shift 10, scale 1).
    assert 1.0 < result.dp_epsilon_lower_bound_event <= 10.0
    assert result.domain_reach["reached"] and result.domain_reach["domain"] == "[0, 10]"


@pytest.mark.train
def test_a_not_refuted_verdict_short_of_an_unbounded_domain_says_so(tmp_path):
    config = _config(tmp_path, domain="-inf,inf")
    # The Laplace noise is drawn as floats, whose bits refute any ε (Mironov 2012): judge the algorithm.
    config["audit"]["arithmetic"] = "ideal"
    spec, _ = _build(config)
    assert spec.pairs == ()  # nothing finite reaches an unbounded domain
    result = run_audit(spec)
    assert result.claim_verdict == "not-refuted" and result.domain_reach["reached"] is False
    assert any(note.startswith("the audited pairs did not reach the declared domain") for note in result.notes)


def test_the_domain_flag_reaches_the_mechanism_table():
    from audit.cli.audit_command import _flag_config
    from audit.cli.main import build_parser

    argv = ["audit", "--mechanism", "range_bug.py:release", "--domain=-5,5"]
    parser, _ = build_parser(argv)
    config = _flag_config(parser.parse_args(argv))
    assert config["mechanism"]["domain"] == "-5,5"
