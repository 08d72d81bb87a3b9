"""One-run audits (audit.one_run, Steinke, Nasr and Jagielski 2023) against an independent computation of
their Theorem 3.1's binomial tail with scipy.stats.binom, the audit's counting by brute force, the digits
training's white-box scores against their Gaussian law, and the command line."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from audit.cli.main import main
from audit.one_run import default_guesses, one_run_audit, one_run_epsilon, one_run_tail
from estimators.validation import InputError


def _theorem_tail(v, r, m, eps, delta):
    """Theorem 3.1's right-hand side, written out term by term."""
    p = math.exp(eps) / (1 + math.exp(eps))
    pmf = stats.binom.pmf(np.arange(r + 1), r, p)
    tail = pmf[v:].sum()
    # P[v > W̃ ≥ v − i] for i = 1..m: sums of the pmf over v − i..v − 1 (empty below 0).
    windows = [pmf[max(v - i, 0):v].sum() / i for i in range(1, m + 1)]
    return tail + delta * 2 * m * max(windows)


@pytest.mark.parametrize("v, r, m, eps, delta", [(20, 20, 1000, 1.5, 0.0), (45, 50, 1000, 2.0, 1e-5),
                                                 (30, 60, 100, 0.3, 1e-3), (0, 10, 50, 1.0, 1e-2)])
def test_tail_is_theorem_3_1(v, r, m, eps, delta):
    assert one_run_tail(v, r, m, eps, delta) == pytest.approx(_theorem_tail(v, r, m, eps, delta), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("v, r, m, delta", [(20, 20, 1000, 0.0), (45, 50, 1000, 1e-5), (170, 200, 1000, 1e-5)])
def test_epsilon_is_the_largest_refuted_by_the_binomial_tail(v, r, m, delta):
    alpha = 0.05
    eps = one_run_epsilon(v, r, m, alpha=alpha, delta=delta)
    assert eps > 0
    assert _theorem_tail(v, r, m, eps, delta) <= alpha + 1e-12
    assert _theorem_tail(v, r, m, eps + 1e-6, delta) > alpha
    if v == r and delta == 0:  # closed form: p^r = α
        p = alpha ** (1 / r)
        assert eps == pytest.approx(math.log(p / (1 - p)), rel=1e-9)


def test_nothing_is_certified_from_chance_level_guesses():
    assert one_run_epsilon(10, 20, 100, alpha=0.05) == 0.0


def test_audit_counts_guesses_on_the_extremes_and_splits_alpha():
    rng = np.random.default_rng(4)
    m = 200
    included = rng.random(m) < 0.5
    scores = rng.normal(2.0 * included, 1.0)
    choices = [(10, 10), (5, 0)]
    audit = one_run_audit(scores, included, guesses=choices, alpha=0.05)
    ranked = sorted(range(m), key=lambda i: -scores[i])
    for row, (k_plus, k_minus) in zip(audit.choices, choices):
        correct = sum(included[i] for i in ranked[:k_plus]) + sum(not included[i] for i in ranked[m - k_minus:])
        assert row["correct"] == correct and row["guesses"] == k_plus + k_minus
        assert row["epsilon_lower_bound"] == pytest.approx(
            one_run_epsilon(correct, k_plus + k_minus, m, alpha=0.025))
    assert audit.epsilon_lower_bound == max(r["epsilon_lower_bound"] for r in audit.choices)
    assert audit.to_dict()["statement"].startswith("A one-run bound certifies")


def test_bad_inputs_name_the_argument():
    with pytest.raises(InputError, match="'included'"):
        one_run_audit([1.0, 2.0], [1, 0])
    with pytest.raises(InputError, match="'guesses'"):
        one_run_audit([1.0, 2.0], np.array([True, False]), guesses=[(2, 1)])
    with pytest.raises(InputError, match="'correct'"):
        one_run_epsilon(5, 4, 10)
    assert default_guesses(1000) == [(25, 25)]


def test_white_box_digits_scores_are_the_gaussian_the_accountant_assumes():
    from mechanisms.training.one_run_digits import digits_one_run

    run = digits_one_run(epsilon=4.0, canaries=1000, steps=20, seed=1)
    assert run.claimed_epsilon == pytest.approx(4.0, rel=1e-3)
    # Canary i's score is the sum of T noisy coordinates: N(T·C, Tσ²C²) when included, N(0, Tσ²C²) when not.
    spread = math.sqrt(run.steps) * run.noise_multiplier
    inside, outside = run.scores[run.included], run.scores[~run.included]
    assert abs(inside.mean() - run.steps) < 4 * spread / math.sqrt(len(inside))
    assert abs(outside.mean()) < 4 * spread / math.sqrt(len(outside))
    assert stats.kstest(outside / spread, "norm").pvalue > 1e-3
    audit = one_run_audit(run.scores, run.included, delta=run.delta, claimed_epsilon=run.claimed_epsilon)
    assert 0.0 < audit.epsilon_lower_bound < run.claimed_epsilon and not audit.refuted


def test_one_run_command(capsys, tmp_path):
    assert main(["one-run", "--canaries", "400", "--seed", "2", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["canaries"] == 400 and payload["claimed_epsilon"] == pytest.approx(4.0, rel=1e-3)
    assert 0 <= payload["epsilon_lower_bound"] < 4.0
    scores, included = np.array([3.0, 2.0, -1.0, -2.0]), np.array([True, True, False, False])
    np.save(tmp_path / "s.npy", scores)
    np.save(tmp_path / "c.npy", included)
    assert main(["one-run", "--scores", str(tmp_path / "s.npy"), "--included", str(tmp_path / "c.npy"),
                 "--k", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 right" in out and "loose" in out
    # The guess grid on your own scores: k = 1 for each share at m = 4, so one choice and the whole α.
    assert main(["one-run", "--scores", str(tmp_path / "s.npy"), "--included", str(tmp_path / "c.npy"),
                 "--guess-grid"]) == 0
    assert "2 of 2 right:" in capsys.readouterr().out
    assert main(["one-run", "--guess-grid", "--k", "3"]) != 0
    assert "'--k' and '--guess-grid'" in capsys.readouterr().err


def test_guess_grid_certifies_the_best_choice_at_alpha_over_their_number():
    from audit.one_run import guess_grid

    assert guess_grid(1000) == [(10, 10), (20, 20), (30, 30), (50, 50)]
    rng = np.random.default_rng(7)
    included = rng.random(1000) < 0.5
    scores = rng.normal(1.5 * included, 1.0)
    audit = one_run_audit(scores, included, guesses="grid", delta=1e-5)
    ranked = np.argsort(-scores, kind="stable")
    best = 0.0
    for k in (10, 20, 30, 50):
        correct = int(included[ranked[:k]].sum() + (~included[ranked[-k:]]).sum())
        eps = audit.choices[[c["k_plus"] for c in audit.choices].index(k)]["epsilon_lower_bound"]
        # Independent: Theorem 3.1's tail (scipy) at ε_lb is within α/4, and above it just beyond.
        assert _theorem_tail(correct, 2 * k, 1000, eps, 1e-5) <= 0.05 / 4 + 1e-12
        assert _theorem_tail(correct, 2 * k, 1000, eps + 1e-6, 1e-5) > 0.05 / 4
        best = max(best, eps)
    assert audit.epsilon_lower_bound == best
    assert "the best of 4 guess choices" in audit.text()
    with pytest.raises(InputError, match="'guesses'"):
        one_run_audit(scores, included, guesses="all")


@pytest.mark.slow
def test_ideal_gaussian_one_run_ratio_at_m_1000():
    # What is reachable at issue 33's setting (ε = 4, δ = 1e-5, m = 1000): an ideal white-box score, N(μ, 1) for
    # an included canary and N(0, 1) otherwise, with μ the exact Gaussian-DP μ of (4, 1e-5) (Dong, Roth and Su,
    # Corollary 2.13, solved with scipy here), so the mechanism is exactly (4, 1e-5)-DP. The certified ratio is
    # computed from Theorem 3.1's tail written out with scipy (_theorem_tail), by bisection.
    from audit.one_run import guess_grid
    from scipy import optimize

    eps, delta, m, alpha, sims = 4.0, 1e-5, 1000, 0.05, 40

    def profile(mu):
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    mu = optimize.brentq(profile, 0.3, 3.0)
    cache = {}

    def certified(v, r, level):
        if (v, r, level) not in cache:
            low, high = 0.0, 12.0
            if _theorem_tail(v, r, m, 0.0, delta) > level:
                cache[(v, r, level)] = 0.0
                return 0.0
            for _ in range(40):
                middle = 0.5 * (low + high)
                low, high = (middle, high) if _theorem_tail(v, r, m, middle, delta) <= level else (low, middle)
            cache[(v, r, level)] = low
        return cache[(v, r, level)]

    rng = np.random.default_rng(11)
    grid = guess_grid(m)
    single, union, hindsight = [], [], []
    for _ in range(sims):
        included = rng.random(m) < 0.5
        scores = rng.normal(mu * included, 1.0)
        order = np.lexsort((np.arange(m), -scores))

        def correct(k):
            return int(included[order[:k]].sum() + (~included[order[m - k:]]).sum())

        single.append(certified(correct(25), 50, alpha))
        union.append(max(certified(correct(k), 2 * k, alpha / len(grid)) for k, _ in grid))
        hindsight.append(max(certified(correct(k), 2 * k, alpha) for k in (10, 15, 20, 25, 30, 40, 50)))
        audit = one_run_audit(scores, included, guesses="grid", alpha=alpha, delta=delta)
        assert audit.epsilon_lower_bound == pytest.approx(union[-1], abs=1e-6)
    ratios = {name: float(np.mean(v)) / eps for name, v in (("single k = 25", single), ("grid, α split", union),
                                                             ("best k after the fact (not certified)", hindsight))}
    print(f"μ = {mu:.4f};", {k: round(v, 3) for k, v in ratios.items()})
    # Issue 33's target of 0.45 is out of reach here even after the fact; the certified ratios sit near 0.36.
    assert 0.30 < ratios["grid, α split"] < 0.45 and 0.30 < ratios["single k = 25"] < 0.45
    assert ratios["best k after the fact (not certified)"] < 0.47
