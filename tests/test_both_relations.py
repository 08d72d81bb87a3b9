"""A claim stated for no relation on a mechanism that states none: audited under replace-one and add-remove,
α/2 each (Bonferroni), the refuting relation named (audit.both_relations)."""

from __future__ import annotations

import math
import warnings

import pytest
from scipy import stats

from audit import run_audit
from audit.config.building import build_spec
from estimators.validation import InputError

MECHANISMS = '''import numpy as np


def count_and_sum(dbs, rng):
    """The record count exactly, and the records' sum with Laplace noise of scale 1 (records in [0, 1])."""
    m, n, _ = dbs.shape
    return np.column_stack([np.full(m, float(n)), dbs.sum(axis=(1, 2)) + rng.laplace(0.0, 1.0, m)])


def histogram(dbs, rng):
    """Counts of the records below 0.5 and at or above it, each with Laplace noise of scale 1."""
    low, high = (dbs[:, :, 0] < 0.5).sum(axis=1), (dbs[:, :, 0] >= 0.5).sum(axis=1)
    return np.column_stack([low, high]).astype(float) + rng.laplace(0.0, 1.0, (len(dbs), 2))


def noisy_sum(dbs, rng):
    """The records' sum with Laplace noise of scale 1: 1-DP under both relations for records in [0, 1]."""
    return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (len(dbs), 1))
'''

ALPHA = 0.05


def _config(tmp_path, name, samples=1000, seed=3, **claim):
    source = tmp_path / "mechanisms.py"
    source.write_text(MECHANISMS)
    return {"mechanism": {"spec": f"{source}:{name}", "domain": "0,1"},
            "prior": {"spec": "builtin:bernoulli", "n": 10}, "claim": {"spec": "dp:1", **claim},
            # The Laplace noise's float bits refute any ε (Mironov 2012): judge the algorithm.
            "audit": {"records": [0], "samples": samples, "seed": seed, "arithmetic": "ideal", "alpha": ALPHA}}


def _build(config):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_spec(config)


def _certificate_at(event, alpha: float) -> float:
    """The event test's certified ε at level ``alpha``, computed here from its counts.

    Clopper–Pearson (exact binomial; Clopper and Pearson 1934): p̲ is the α·s quantile of Beta(k, n − k + 1),
    p̄ the 1 − α·(1 − s) quantile of Beta(k + 1, n − k), ε = log(p̲ / p̄). Rate ratio (Poisson numbers of runs):
    given the total, the first count is Binomial(x₁ + x₂, ρ/(1 + ρ)), so θ̲ is the α quantile of
    Beta(x₁, x₂ + 1) and ε = log(θ̲ / (1 − θ̲)).
    """
    if event.certificate == "rate-ratio":
        x1, x2 = round(event.p_first * event.runs_made[0]), round(event.p_second * event.runs_made[1])
        theta = stats.beta.ppf(alpha, x1, x2 + 1)
        return max(0.0, math.log(theta / (1 - theta)))
    assert event.certificate == "clopper-pearson"
    n, share = event.runs_per_input, event.lower_share
    k1, k2 = round(event.p_first * n), round(event.p_second * n)
    lower = stats.beta.ppf(alpha * share, k1, n - k1 + 1)
    upper = stats.beta.ppf(1 - alpha * (1 - share), k2 + 1, n - k2) if k2 < n else 1.0
    return max(0.0, math.log(lower / upper))


def test_a_stated_relation_or_a_missing_domain_keeps_one_relation_at_the_full_alpha(tmp_path):
    for claim in ({"relation": "replace-one"}, {"relation": "add-remove"}):
        spec = _build(_config(tmp_path, "noisy_sum", **claim))
        assert spec.companion is None and spec.alpha == ALPHA and spec.relation == claim["relation"]
    config = _config(tmp_path, "noisy_sum")
    del config["mechanism"]["domain"]
    spec = _build(config)
    assert spec.companion is None and spec.alpha == ALPHA


def test_no_relation_stated_builds_both_audits_at_half_alpha(tmp_path):
    spec = _build(_config(tmp_path, "noisy_sum"))
    assert (spec.relation, spec.companion.relation) == ("replace-one", "add-remove")
    assert spec.alpha == spec.companion.alpha == ALPHA / 2
    # The claim is read for each relation's neighbours as written (1-DP), not converted from the other reading.
    assert (spec.claim.epsilon, spec.claim.relation) == (1.0, "replace-one")
    assert (spec.companion.claim.epsilon, spec.companion.claim.relation) == (1.0, "add-remove")
    assert any("each audit at α/2" in note for note in spec.notes)


def test_a_sequential_audit_asks_for_a_relation(tmp_path):
    config = _config(tmp_path, "noisy_sum")
    argv = ["audit", "--mechanism", config["mechanism"]["spec"], "--domain", "0,1", "--prior", "builtin:bernoulli",
            "--n", "10", "--claim", "dp:1", "--max-runs", "4000", "--quiet"]
    with pytest.raises(InputError, match="--relation replace-one or --relation add-remove"):
        _raise_from_run(argv)


def _raise_from_run(argv):
    """Run the audit command's body so that its InputError propagates (main() prints it instead)."""
    from audit.cli import audit_command
    from audit.cli.main import build_parser

    parser, _ = build_parser(argv)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        audit_command.run(args)


@pytest.mark.train
def test_releasing_the_record_count_is_refuted_under_add_remove_at_half_alpha(tmp_path):
    result = run_audit(_build(_config(tmp_path, "count_and_sum")))
    assert result.refuted and result.relations["refuted_under"] == ["add-remove"]
    assert result.relations["relation"] == "add-remove"
    assert {r["relation"] for r in result.refuted_by} == {"add-remove"}
    assert "neighbours: add or remove one record" in result.claim_statement()
    assert "under add-remove" in result.claim_statement()
    # The α split: each relation's audit at α/2, its tests' shares summing to α/2, all shares to α.
    assert result.alpha == ALPHA
    assert [r["alpha"] for r in result.relations["results"]] == [ALPHA / 2, ALPHA / 2]
    for summary in result.relations["results"]:
        assert sum(summary["claim_alpha"].values()) == pytest.approx(ALPHA / 2)
    assert sum(result.claim_alpha.values()) == pytest.approx(ALPHA)
    # The refuting certificate is the one at its share of α/2, not of α: recomputed here from its counts.
    event = result.event_test
    add_remove = result.relations["results"][1]
    assert event.alpha == add_remove["claim_alpha"]["event"] <= ALPHA / 2
    assert event.epsilon_lower_bound == pytest.approx(_certificate_at(event, event.alpha), rel=1e-9, abs=1e-12)
    assert _certificate_at(event, 2 * event.alpha) > event.epsilon_lower_bound  # the unsplit level certifies more
    json = result.to_dict()
    assert json["relations"]["refuted_under"] == ["add-remove"] and json["refuted_by"][0]["relation"] == "add-remove"


@pytest.mark.train
def test_a_histogram_is_refuted_under_replace_one_only(tmp_path):
    # Laplace(1) on two counts: ε = 1 under add-remove (one count moves by 1), ε = 2 under replace-one (both move).
    result = run_audit(_build(_config(tmp_path, "histogram", samples=3000)))
    assert result.refuted and result.relations["refuted_under"] == ["replace-one"]
    assert {r["relation"] for r in result.refuted_by} == {"replace-one"}
    # Sound: the certified ε is below the true 2 under replace-one.
    assert 1.0 < result.relations["results"][0]["dp_epsilon_lower_bound_event"] <= 2.0
    assert result.relations["results"][1]["claim_verdict"] == "not-refuted"


@pytest.mark.train
def test_a_correct_mechanism_is_refuted_under_neither(tmp_path):
    result = run_audit(_build(_config(tmp_path, "noisy_sum")))
    assert not result.refuted and result.relations["refuted_under"] == [] and result.relations["relation"] is None
    assert [r["relation"] for r in result.relations["results"]] == ["replace-one", "add-remove"]
    assert "each tested" in result.claim_statement() and "split between the two relations" in result.claim_statement()
    # Each relation's audit has its runner, whose probe calls the mechanism twice on one database with one seed.
    assert result.probe_calls == 2 + 2


@pytest.mark.slow
@pytest.mark.train
def test_type_one_error_of_the_two_relation_split_at_the_boundary(tmp_path):
    """200 audits of a Laplace sum that is exactly 1-DP under replace-one (records 0 vs 1 shift the sum by 1, scale 1)
    and 1-DP under add-remove, each audited under both relations at α/2: the refutations of the true claim are at
    most the 99.9% quantile of Binomial(200, α) (each audit refutes with probability ≤ α/2 + α/2)."""
    audits, refuted, both = 200, 0, 0
    for seed in range(audits):
        config = _config(tmp_path, "noisy_sum", samples=400, seed=seed)
        config["prior"]["n"] = 2
        config["critic"] = {"max_steps": 20, "eval_every": 10}  # the certificate is valid whatever the critic
        result = run_audit(_build(config))
        refuted += result.refuted
        both += len(result.relations["tested"]) == 2
    print(f"type-I study under both relations: {refuted} of {audits} audits refuted the true claim")
    assert both == audits
    assert refuted <= stats.binom.ppf(0.999, audits, ALPHA)
