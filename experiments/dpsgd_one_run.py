"""The DP-SGD study's one-run rows (:mod:`experiments.dpsgd_audit`'s ``dpsgd_one_run`` stage): one-run audits of
DP-SGD on digits (Steinke, Nasr and Jagielski 2023, Algorithm 1 and Theorem 3.1, as :func:`audit.one_run.one_run_audit`
implements them) at accountant ε = 4, with white-box gradient canaries and black-box input canaries."""

from __future__ import annotations

import math
import time

__all__ = ["HINDSIGHT_KS", "ONE_RUN_EPSILON", "ONE_RUN_SETTINGS", "ONE_RUN_TARGET", "one_run_rows"]

#: The one-run rows: (canary kind, accountant, canaries m) and issue 33's target ε_lb/ε.
ONE_RUN_SETTINGS = (("gradient", "rdp", 1000), ("gradient", "pld", 1000), ("input", "rdp", 800))
ONE_RUN_EPSILON, ONE_RUN_TARGET = 4.0, 0.45
#: k per side over which the after-the-fact comparison column maximises (not a certificate).
HINDSIGHT_KS = (5, 10, 15, 20, 25, 30, 40, 50, 75, 100)


def one_run_rows(seeds, device: str, alpha: float, delta: float) -> dict:
    """One-run audits of DP-SGD on digits at accountant ε = 4 and ``delta`` (:data:`ONE_RUN_SETTINGS`), each
    certified at ``alpha``; ``seeds[i]``: the repeats' training seeds of setting i. Each setting's repeats train
    together on ``device`` (one batched model; each run is the one its seed gives alone, on either device)."""
    from audit.one_run import one_run_audit
    from mechanisms.training.one_run_digits import digits_one_runs

    columns: dict = {k: [] for k in ("canary", "accountant", "canaries", "repeat", "claimed_epsilon", "sigma",
                                     "epsilon_lower_bound", "ratio", "target_ratio", "target_met", "k_per_side",
                                     "correct", "guesses", "grid_certified", "grid_ratio",
                                     "hindsight_best_not_certified", "test_accuracy", "seconds")}
    for i, (kind, accountant, m) in enumerate(ONE_RUN_SETTINGS):
        # The repeats' runs train together (one batched model); each is the run its own seed gives alone.
        started = time.perf_counter()
        runs = digits_one_runs(epsilon=ONE_RUN_EPSILON, delta=delta, canaries=m, kind=kind, accountant=accountant,
                               seeds=seeds[i], device=device)
        training_seconds = (time.perf_counter() - started) / len(runs)
        for repeat, run in enumerate(runs):
            started = time.perf_counter()
            audit = one_run_audit(run.scores, run.included, alpha=alpha, delta=delta,
                                  claimed_epsilon=run.claimed_epsilon)
            seconds = training_seconds + time.perf_counter() - started
            # The best over audit.one_run.guess_grid's choices, certified (α split equally between them).
            over_grid = one_run_audit(run.scores, run.included, guesses="grid", alpha=alpha, delta=delta,
                                      claimed_epsilon=run.claimed_epsilon)
            hindsight = max(one_run_audit(run.scores, run.included, guesses=[(k, k)], alpha=alpha,
                                          delta=delta).epsilon_lower_bound for k in HINDSIGHT_KS if 2 * k <= m)
            row = {"canary": kind, "accountant": accountant, "canaries": m, "repeat": repeat,
                   "claimed_epsilon": run.claimed_epsilon, "sigma": run.noise_multiplier,
                   "epsilon_lower_bound": audit.epsilon_lower_bound, "ratio": audit.ratio,
                   "target_ratio": ONE_RUN_TARGET if kind == "gradient" else math.nan,
                   "target_met": audit.ratio >= ONE_RUN_TARGET, "k_per_side": audit.k_plus, "correct": audit.correct,
                   "guesses": audit.guesses, "grid_certified": over_grid.epsilon_lower_bound,
                   "grid_ratio": over_grid.ratio, "hindsight_best_not_certified": hindsight,
                   "test_accuracy": run.test_accuracy, "seconds": seconds}
            for key, value in row.items():
                columns[key].append(value)
    return columns
