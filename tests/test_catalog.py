"""The reference catalog: shapes, reproducibility, noise laws against closed forms, and the
DP violations of the buggy sparse vector variants on their exposing pairs."""

import json
import math

import numpy as np
import pytest
from scipy import integrate, stats

from audit.cli.main import main
from estimators.validation import InputError
from mechanisms.catalog import NeighbouringPair, catalog, catalog_names, get_entry

ENTRIES = catalog()
NAMES = [e.name for e in ENTRIES]


def _repeat(db, m):
    return np.repeat(np.asarray(db, dtype=float)[None], m, axis=0)


def _clopper_pearson(count, n, alpha):
    """One-sided (lower, upper) Clopper–Pearson bounds, each at level alpha."""
    lower = stats.beta.ppf(alpha, count, n - count + 1) if count > 0 else 0.0
    upper = stats.beta.ppf(1 - alpha, count + 1, n - count) if count < n else 1.0
    return lower, upper


@pytest.mark.parametrize("entry", ENTRIES, ids=NAMES)
def test_entry_runs_on_its_prior_with_declared_shape_and_seed(entry):
    dbs, out = entry.sample(64, seed=3)
    assert dbs.shape == (64, *entry.record_shape)
    assert out.shape == (64, entry.output_dim) and out.dtype == np.float64
    assert np.all(np.isfinite(out))
    _, again = entry.sample(64, seed=3)
    np.testing.assert_array_equal(out, again)
    _, other = entry.sample(64, seed=4)
    assert not np.array_equal(out, other)
    for pair in entry.pairs:  # every exposing database is in the mechanism's domain
        for db in (pair.first, pair.second):
            assert entry.mechanism(_repeat(db, 3), np.random.default_rng(0)).shape == (3, entry.output_dim)


@pytest.mark.parametrize("entry", ENTRIES, ids=NAMES)
def test_entry_rejects_wrong_shapes_and_nan(entry):
    n, k = entry.record_shape
    rng = np.random.default_rng(0)
    for bad in (np.zeros((n, k)), np.zeros((2, n + 1, k)), np.zeros((2, n, k + 1)), np.zeros((0, n, k))):
        with pytest.raises(InputError, match="'dbs'.*shape"):
            entry.mechanism(bad, rng)
    nan_db = _repeat(entry.pairs[0].first, 2)
    nan_db[0, 0, 0] = np.nan
    with pytest.raises(InputError, match="'dbs'"):
        entry.mechanism(nan_db, rng)


def test_schema_fields_and_truth_flags():
    for e in ENTRIES:
        assert e.buggy == (not e.true.private or e.true.epsilon > e.claimed.epsilon + 1e-12), e.name
    assert {"svt3", "svt4", "svt5", "svt6", "histogram_buggy", "mean_true_count"} <= {e.name for e in ENTRIES if e.buggy}
    assert {"svt1", "svt2", "histogram", "noisy_max_laplace"} <= {e.name for e in ENTRIES if not e.buggy}


def test_histogram_noise_variance_matches_laplace_scale():
    # Laplace(b) has variance 2 b²: correct scale 1/ε, buggy scale ε.
    m = 20000
    for name, scale in (("histogram", 1 / 0.5), ("histogram_buggy", 0.5)):
        entry = get_entry(name)
        assert entry.claimed.epsilon == 0.5
        db = entry.pairs[0].first
        noise = entry.mechanism(_repeat(db, m), np.random.default_rng(1)) - db.sum(axis=0)
        assert np.allclose(noise.var(axis=0), 2 * scale**2, rtol=0.08)


def _argmax_probabilities(scores, pdf, cdf, lo, hi):
    """P(argmax_i (scores_i + Z_i) = i) by numerical integration over the winner's value."""
    probs = []
    for i, s in enumerate(scores):
        others = [t for j, t in enumerate(scores) if j != i]
        integrand = lambda x: pdf(x - s) * np.prod([cdf(x - t) for t in others])  # noqa: E731
        probs.append(integrate.quad(integrand, lo, hi, points=list(scores), limit=200)[0])
    return np.array(probs)


@pytest.mark.parametrize("name, law", [("noisy_max_laplace", stats.laplace), ("noisy_max_exponential", stats.expon)])
def test_noisy_max_index_distribution_matches_integration(name, law):
    entry = get_entry(name)
    db = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # scores [2, 1, 1, 0]
    scale = 2.0 / entry.claimed.epsilon
    exact = _argmax_probabilities(db.sum(axis=0), lambda z: law.pdf(z, scale=scale),
                                  lambda z: law.cdf(z, scale=scale), -60.0, 80.0)
    assert exact.sum() == pytest.approx(1.0, abs=1e-6)
    m = 40000
    out = entry.mechanism(_repeat(db, m), np.random.default_rng(2))[:, 0]
    assert set(np.unique(out)) <= {0.0, 1.0, 2.0, 3.0}
    freq = np.bincount(out.astype(int), minlength=4) / m
    assert np.all(np.abs(freq - exact) < 5 * np.sqrt(exact * (1 - exact) / m) + 1e-3)


def test_noisy_max_exponential_value_support_exposes_it():
    entry = get_entry("noisy_max_exponential_value")
    pair = entry.pairs[0]  # max scores 1 vs 2; the noisy max is never below the true max
    m = 5000
    low = entry.mechanism(_repeat(pair.first, m), np.random.default_rng(0))[:, 0]
    high = entry.mechanism(_repeat(pair.second, m), np.random.default_rng(1))[:, 0]
    scale = 2.0 / entry.claimed.epsilon
    # P(max_i (q_i + E_i) < 2) = Π_i P(E_i < 2 − q_i) for scores q = [1, 0, 1, 0].
    below = np.prod([1 - math.exp(-(2 - q) / scale) for q in pair.first.sum(axis=0)])
    assert np.all(high >= 2.0)
    assert abs(np.mean(low < 2.0) - below) < 5 * math.sqrt(below * (1 - below) / m)


def test_randomized_response_truth_frequency():
    entry = get_entry("randomized_response")
    eps = entry.claimed.epsilon
    p = math.exp(eps) / (1 + math.exp(eps))
    db = entry.pairs[0].first
    m = 30000
    out = entry.mechanism(_repeat(db, m), np.random.default_rng(5))
    truthful = (out == db[:, 0]).mean(axis=0)
    assert np.all(np.abs(truthful - p) < 5 * math.sqrt(p * (1 - p) / m))


def test_rappor_bit_frequencies_match_q_star_and_p_star():
    entry = get_entry("rappor")
    f, p, q = 0.5, 0.5, 0.75
    q_star = f / 2 * (p + q) + (1 - f) * q  # P(report 1 | true bit 1), Erlingsson et al. Sec. 4
    p_star = f / 2 * (p + q) + (1 - f) * p
    assert entry.claimed.epsilon == pytest.approx(math.log(q_star * (1 - p_star) / (p_star * (1 - q_star))))
    db = entry.pairs[0].first
    m = 30000
    freq = entry.mechanism(_repeat(db, m), np.random.default_rng(6)).mean(axis=0)
    expected = np.where(db.ravel() == 1.0, q_star, p_star)
    assert np.all(np.abs(freq - expected) < 5 * np.sqrt(expected * (1 - expected) / m))


def test_truncated_geometric_pmf_matches_closed_form():
    entry = get_entry("truncated_geometric")
    eps = entry.claimed.epsilon
    db = entry.pairs[0].first
    n, count = db.shape[0], int(db.sum())
    a = math.exp(-eps)
    pmf = np.array([(1 - a) / (1 + a) * a ** abs(r - count) for r in range(n + 1)])
    pmf[0], pmf[n] = a**count / (1 + a), a ** (n - count) / (1 + a)
    assert pmf.sum() == pytest.approx(1.0)
    m = 40000
    out = entry.mechanism(_repeat(db, m), np.random.default_rng(7))[:, 0]
    freq = np.bincount(out.astype(int), minlength=n + 1) / m
    assert np.all(np.abs(freq - pmf) < 5 * np.sqrt(pmf * (1 - pmf) / m))


def _pattern_counts(entry, db, m, seed):
    out = entry.mechanism(_repeat(db, m), np.random.default_rng(seed))[:, :5]
    codes = ((out + 1) * 3 ** np.arange(5)).sum(axis=1).astype(int)  # each of -1/0/1 as a base-3 digit
    return np.bincount(codes, minlength=3**5)


def _worst_certified_log_ratio(entry, m, alpha=1e-7):
    """max over output patterns of log(lower bound of P_a / upper bound of P_b), both orders."""
    pair = entry.pairs[0]
    ca, cb = _pattern_counts(entry, pair.first, m, 11), _pattern_counts(entry, pair.second, m, 12)
    worst = -np.inf
    for x, y in ((ca, cb), (cb, ca)):
        for i in np.flatnonzero(x + y):
            lower = _clopper_pearson(x[i], m, alpha)[0]
            upper = _clopper_pearson(y[i], m, alpha)[1]
            if lower > 0:
                worst = max(worst, math.log(lower / upper))
    return worst


def test_svt5_violates_its_claimed_epsilon_on_its_pair():
    entry = get_entry("svt5")
    assert entry.buggy and not entry.true.private
    assert _worst_certified_log_ratio(entry, 20000) > entry.claimed.epsilon + 2.0


def test_svt1_does_not_violate_its_claimed_epsilon_on_the_same_pair():
    entry = get_entry("svt1")
    assert entry.pairs[0].first.tolist() == get_entry("svt5").pairs[0].first.tolist()
    assert _worst_certified_log_ratio(entry, 20000) <= entry.claimed.epsilon


def test_gaussian_sum_true_epsilon_by_integrating_the_hockey_stick():
    entry = get_entry("gaussian_sum")
    sigma, shift = entry.mechanism.scale, math.sqrt(entry.record_shape[1])  # ℓ₂ shift of the pair
    eps = entry.true.epsilon
    # δ(ε) = ∫ (p(x) − e^ε q(x))_+ dx between N(shift, σ²) and N(0, σ²) along the shift direction.
    gap = lambda x: max(stats.norm.pdf(x, shift, sigma) - math.exp(eps) * stats.norm.pdf(x, 0, sigma), 0.0)  # noqa: E731
    delta = integrate.quad(gap, -20 * sigma, 20 * sigma, points=[shift], limit=400)[0]
    assert delta == pytest.approx(entry.true.delta, rel=1e-3)
    assert eps < entry.claimed.epsilon


@pytest.mark.parametrize("name, law", [("gaussian_mi_pp_count", stats.norm), ("laplace_mi_pp_count", stats.laplace)])
def test_mi_pp_calibrated_count_leaks_at_most_epsilon_on_its_prior(name, law):
    entry = get_entry(name)
    assert entry.claimed.notion == "mi-pp" and entry.to_dict()["claimed"]["unit"] == "nats"
    pair = entry.pairs[0]
    counts = pair.first.sum(), pair.second.sum()
    scale = entry.mechanism.scale
    # I(secret; count + Z) for a uniform secret = mean KL of each output law to their mixture.
    def integrand(y):
        dens = [law.pdf(y, c, scale) for c in counts]
        mix = 0.5 * (dens[0] + dens[1])
        return sum(0.5 * d * math.log(d / mix) for d in dens if d > 0)
    mi = integrate.quad(integrand, min(counts) - 40 * scale, max(counts) + 40 * scale, points=counts, limit=400)[0]
    assert 0.0 < mi <= entry.claimed.epsilon
    # Empirically the mechanism adds noise of that scale: Var = σ² or 2b².
    m = 20000
    noise = entry.mechanism(np.repeat(pair.first[None], m, axis=0), np.random.default_rng(9))[:, 0] - counts[0]
    assert noise.var() == pytest.approx(law.var(scale=scale), rel=0.08)


def test_entry_prior_draws_each_database_of_the_pair_half_the_time():
    entry = get_entry("svt1")
    pair = entry.pairs[0]
    m = 4000
    dbs = entry.prior(m, np.random.default_rng(0))
    is_first = np.all(dbs == pair.first, axis=(1, 2))
    is_second = np.all(dbs == pair.second, axis=(1, 2))
    assert np.all(is_first ^ is_second)
    assert abs(is_second.mean() - 0.5) < 5 * 0.5 / math.sqrt(m)


def test_pair_must_differ_in_one_record():
    with pytest.raises(InputError, match="one record"):
        NeighbouringPair(np.zeros((3, 2)), np.ones((3, 2)))
    with pytest.raises(InputError, match="'second'.*shape"):
        NeighbouringPair(np.zeros((4, 2)), np.zeros((2, 2)))
    # n and n − 1 rows are add/remove neighbours (mechanisms.inputs.relation), not a shape error.
    assert NeighbouringPair(np.zeros((3, 2)), np.zeros((2, 2))).relation == "add-remove"


@pytest.mark.integration
def test_cli_catalog_json_schema(capsys):
    assert main(["catalog", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = payload["mechanisms"]
    assert [r["name"] for r in rows] == catalog_names()  # the DP-SGD training runs follow the reference entries
    assert [r["name"] for r in rows][:len(NAMES)] == NAMES
    for row in rows:
        assert {"name", "claimed", "true", "buggy", "description", "pairs", "output_dim"} <= set(row)
        assert isinstance(row["buggy"], bool)
        assert {"notion", "epsilon", "delta", "text"} <= set(row["claimed"])
    svt5 = next(r for r in rows if r["name"] == "svt5")
    assert svt5["true"]["private"] is False and svt5["true"]["epsilon"] is None


@pytest.mark.integration
def test_cli_catalog_table_and_errors(capsys):
    assert main(["catalog", "--buggy"]) == 0
    text = capsys.readouterr().out
    assert "svt5" in text and "not private" in text and "svt1 " not in text
    assert main(["catalog", "--name", "nope"]) == 2
    assert "'--name'" in capsys.readouterr().err


@pytest.mark.parametrize("relation", ["add-remove", "add-remove:2"])
def test_a_catalog_mechanism_under_add_remove_is_refused_naming_relation(relation):
    # A catalog mechanism is built for databases of exactly n records; under add/remove it stopped on its first batch
    # of n − 1 records ("argument 'dbs' must have shape (m, 3, 4) ..., got shape (125, 2, 4)") after the MI test ran.
    from audit.config.building import build_spec

    config = {"mechanism": {"spec": "catalog:histogram_buggy"}, "claim": {"spec": "gdp:1", "relation": relation}}
    with pytest.raises(InputError, match=rf"\(--relation\) is {relation}, but catalog:histogram_buggy is built for "
                                         r"databases of exactly 3 records.*replace-one") as caught:
        build_spec(config)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("relation", ["add-remove", "add-remove:2"])
def test_a_catalog_mi_claim_under_add_remove_says_what_the_user_can_do(relation, capsys):
    # The entry's mi-dp claim was converted first and refused with "state the claim for add/remove (--relation
    # add-remove or add-remove:K)": what the user had typed, and impossible for an MI notion.
    code = main(["audit", "--mechanism", "catalog:laplace_mi_dp_sum", "--relation", relation])
    err = capsys.readouterr().err
    assert code == 2
    assert f"(--relation) is {relation}, but catalog:laplace_mi_dp_sum is built for databases of exactly" in err
    assert "mi-dp, a notion defined for replace-one neighbours only: audit it under replace-one (no --relation)" in err
    assert "state the claim for add/remove" not in err


def test_a_catalog_entry_under_add_remove_is_refused_though_its_pairs_are_replace_pairs():
    # The entry's own (replace) pairs, brought by --prior-search, set the audited relation: --relation add-remove
    # must still be refused, not audited silently as replace-one.
    from audit.config.building import build_spec

    config = {"mechanism": {"spec": "catalog:laplace_sum"}, "claim": {"relation": "add-remove"},
              "audit": {"prior_search": 3}}
    with pytest.raises(InputError, match=r"\(--relation\) is add-remove, but catalog:laplace_sum is built for"):
        build_spec(config)


def test_an_mi_claim_converted_to_add_remove_says_no_such_claim_exists():
    from mechanisms.claims.conversion import convert_claim
    from mechanisms.claims.parsing import parse_claim

    with pytest.raises(InputError, match="mi-dp is defined for replace-one neighbours only, so no add/remove claim"):
        convert_claim(parse_claim("mi-dp:0.5"), "add-remove")
