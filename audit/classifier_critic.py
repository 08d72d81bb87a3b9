"""MI critics from classifiers: the Barber–Agakov critic of a record that takes two values.

Under a two-point prior on neighbouring databases D₁, D₂ (record i at a or b, with probabilities
π and 1 − π), any classifier's posterior q(a | y) gives the critic

    T(x, y) = log q(x | y) − log π̂(x),

with π̂ the training split's class frequencies. Donsker and Varadhan's variational formula holds
for every fixed function T (Donsker and Varadhan 1983; Belghazi et al. 2018, Theorem 1):
I(X; Y) ≥ E_P[T] − log E_{P_X ⊗ P_Y}[e^T]; with this T and π̂ = π the second term is
log E_Y[Σ_x q(x | y)] = 0 and the bound is Barber and Agakov's, H(X) + E[log q(X | Y)]
(Barber and Agakov 2003; Poole et al. 2019, Section 2.1), equal to I(X; Y) when q is the true
posterior. The critic is clipped to the neural critics' range [lo, hi]
(:attr:`~estimators.critic_config.CriticConfig.output_range`) — a clipped critic is another
fixed critic — and certified exactly as they are (:func:`estimators.certify.certify_critics`:
cap chosen on the validation split, bound on the test split).

The classifiers are the event test's statistics (:mod:`audit.classifier_statistic`): a logistic
regression on output features, the same with the squares of the columns that take many values
(a change of spread), and for outputs that take few values their empirical log-ratio;
each is fitted on the training split, and a record's critic is the one with the larger DV value
on the validation split. Nothing here trains a neural network: a DP-claim audit under two-point
priors gets its MI test from these critics in the time a classifier auditor takes
(issue 15, "train what the question needs"; :mod:`audit.plan`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from estimators.critic_problems import ProblemCritics, ProblemFit
from estimators.device import cpu_threads
from estimators.neural import CriticFit, _delta_method_stderr, split_indices
from estimators.objectives import donsker_varadhan

from .classifier_statistic import PAIR_STATISTICS, LogOdds
from .event_search import neighbouring_pair_of

#: The classifiers tried as each record's critic, in order: (name in results, class).
CLASSIFIERS = tuple((f"{name} critic", kind) for kind, name, _, _ in PAIR_STATISTICS)


@dataclass(frozen=True)
class ClassifierCritic:
    """One record's posterior log-odds ℓ(y) = log q(a | y)/q(b | y) and its training class frequencies.

    ``statistic`` is the fitted classifier (an event statistic, :mod:`audit.classifier_statistic`);
    ℓ = statistic(y) + ``offset``: 0 for a logistic regression (its intercept holds the class
    balance), log(N_a/N_b) for an empirical likelihood ratio.
    """

    name: str
    statistic: object
    offset: float
    prior_first: float  # π̂: the training split's fraction of draws of the first database
    #: (rows, statistic(outputs[rows])) on the draws it was not trained on, once computed
    #: (:func:`fit_classifier_critics`): the certification and the event search read them.
    held_out: tuple | None = None

    def log_odds(self, outputs: np.ndarray) -> np.ndarray:
        return np.asarray(self.statistic(outputs), dtype=np.float64) + self.offset

    def __call__(self, is_first: np.ndarray, outputs: np.ndarray, lo: float, hi: float) -> np.ndarray:
        """T(x, y) = log q(x | y) − log π̂(x) for x = a where ``is_first`` else b, clipped to [lo, hi]."""
        return self.from_log_odds(is_first, self.log_odds(outputs), lo, hi)

    def from_log_odds(self, is_first: np.ndarray, ell: np.ndarray, lo: float, hi: float) -> np.ndarray:
        """T(x, y) of :meth:`__call__` from the log-odds ℓ(y) of each output."""
        signed = np.where(is_first, ell, -ell)
        # log σ(s) = −softplus(−s), computed without overflow for |s| large.
        log_q = -np.logaddexp(0.0, -signed)
        log_prior = np.where(is_first, np.log(self.prior_first), np.log1p(-self.prior_first))
        return np.clip(log_q - log_prior, lo, hi)


def record_classifier_critics(is_first: np.ndarray, outputs: np.ndarray, train: np.ndarray) -> list:
    """Every classifier of :data:`CLASSIFIERS` that suits the outputs, fitted on the ``train`` draws."""
    first, second = outputs[train][is_first[train]], outputs[train][~is_first[train]]
    if len(first) == 0 or len(second) == 0:
        return []
    prior_first = len(first) / (len(first) + len(second))
    likelihood_offset = float(np.log(len(first)) - np.log(len(second)))
    critics = []
    for name, kind in CLASSIFIERS:
        fitted = kind.fit(first, second)  # None where the outputs do not suit it
        if fitted is not None:
            offset = 0.0 if issubclass(kind, LogOdds) else likelihood_offset
            critics.append(ClassifierCritic(name, fitted, offset, prior_first))
    return critics


def _dv(t_joint: np.ndarray, t_product: np.ndarray) -> float:
    return float(donsker_varadhan(torch.as_tensor(t_joint), torch.as_tensor(t_product)))


def _product_pairs(critic, is_first, ell, rows, lo, hi) -> np.ndarray:
    """T(x_i, y_{i + n/2}) over the first half of ``rows``: each draw used once (as the neural fit's certificate).

    ``ell`` holds the log-odds of the outputs of ``rows``, in their order."""
    half = len(rows) // 2
    return critic.from_log_odds(is_first[rows[:half]], ell[half:2 * half], lo, hi)


def _with_held_out_scores(critic: ClassifierCritic, outputs: np.ndarray, held: np.ndarray) -> ClassifierCritic:
    """The critic with its statistic computed once on the ``held`` draws (every later use reads them)."""
    return replace(critic, held_out=(held, np.asarray(critic.statistic(outputs[held]), dtype=np.float64)))


def _log_odds_at(critic: ClassifierCritic, rows: np.ndarray, position: np.ndarray) -> np.ndarray:
    """ℓ of the outputs of ``rows`` (held-out draws), from the scores kept on them."""
    return critic.held_out[1][position[rows]] + critic.offset


def fit_classifier_critics(cells, outputs, *, config,
                           rng: np.random.Generator) -> tuple[ProblemFit, tuple] | None:
    """One classifier critic per cell, as a fit the audit certifies like the neural critics' full fit.

    Each cell's critic is T(x, y) = log q(x | y) − log π̂(x) of its best classifier on the validation
    split (Barber and Agakov 2003; Poole et al. 2019, Section 2.1: its DV value is the Barber–Agakov
    bound), clipped to ``config.output_range``.

    Parameters
    ----------
    cells : sequence of audit.secret_critics.SecretCell
        Each a record under a two-point prior on neighbouring databases that differ in it.
    outputs : list of ndarray
        The mechanism's outputs on each prior's draws.
    config : CriticConfig
        Its ``split`` (train / validation / test fractions), ``output_range`` (the clip) and
        ``eval_shifts`` (product samples of the estimate) apply.
    rng : numpy.random.Generator
        Draws the split, as :func:`estimators.critic_problems.fit_problems` does.

    Returns
    -------
    (ProblemFit, tuple of list of ClassifierCritic) or None
        The fit (``fit.scorer`` is None: the event test gets the classifiers themselves as
        statistics; each problem's ``name`` says which classifier it is) and every classifier
        fitted for each cell. None when some cell's outputs suit no classifier (then every cell
        gets neural critics).
    """
    started = time.perf_counter()
    # A few reductions over vectors: one thread (two contend on a busy two-core machine for nothing).
    with cpu_threads(1):
        return _fit(cells, outputs, config, rng, started)


def _fit(cells, outputs, config, rng, started) -> tuple[ProblemFit, tuple] | None:
    lo, hi = (float(v) for v in config.output_range)
    n = len(outputs[cells[0].prior_index])
    train, val, test = split_indices(n, config.split, np.random.default_rng(int(rng.integers(2**31))))
    rows = {name: [] for name in ("validation", "estimate", "test_joint", "test_product", "val_joint",
                                  "val_product", "stderr")}
    problems, fitted = [], []
    shifts = [1 + k * max(1, (len(test) - 1) // config.eval_shifts) for k in range(config.eval_shifts)]
    # Each classifier's statistic is computed once on the held-out draws (validation and test): the
    # DV values, the certificate and the event search's choice all read those scores.
    held = np.sort(np.concatenate([val, test]))
    position = np.empty(n, dtype=np.int64)
    position[held] = np.arange(len(held))
    for index, cell in enumerate(cells):
        first, _ = neighbouring_pair_of(cell.prior, cell.record)
        is_first = np.all(cell.g == first[cell.record], axis=1)
        y = outputs[cell.prior_index]
        y = y.reshape(len(y), -1)
        best = None
        fitted.append([_with_held_out_scores(c, y, held) for c in record_classifier_critics(is_first, y, train)])
        for critic in fitted[-1]:
            ell_val = _log_odds_at(critic, val, position)
            val_joint = critic.from_log_odds(is_first[val], ell_val, lo, hi)
            val_product = _product_pairs(critic, is_first, ell_val, val, lo, hi)
            value = _dv(val_joint, critic.from_log_odds(is_first[val], np.roll(ell_val, len(val) // 2), lo, hi))
            if best is None or value > best[0]:
                best = (value, critic, val_joint, val_product)
        if best is None:
            return None
        value, critic, val_joint, val_product = best
        ell_test = _log_odds_at(critic, test, position)
        test_joint = critic.from_log_odds(is_first[test], ell_test, lo, hi)
        test_rolled = np.concatenate([critic.from_log_odds(is_first[test], np.roll(ell_test, s), lo, hi)
                                      for s in shifts])
        for name, item in (("validation", value), ("estimate", _dv(test_joint, test_rolled)),
                           ("test_joint", test_joint),
                           ("test_product", _product_pairs(critic, is_first, ell_test, test, lo, hi)),
                           ("val_joint", val_joint), ("val_product", val_product),
                           ("stderr", float(_delta_method_stderr(torch.as_tensor(test_joint[None]),
                                                                 torch.as_tensor(test_rolled[None]), "dv")[0]))):
            rows[name].append(item)
        problems.append(ProblemCritics(slice(index, index + 1), None, None, name=critic.name))
    fit = CriticFit(
        estimates=np.array(rows["estimate"]), stderr=np.array(rows["stderr"]),
        validation=np.array(rows["validation"]), test_joint=np.stack(rows["test_joint"]),
        test_product=np.stack(rows["test_product"]), validation_joint=np.stack(rows["val_joint"]),
        validation_product=np.stack(rows["val_product"]), output_range=(lo, hi), steps=0,
        seconds=time.perf_counter() - started, split_sizes=(len(train), len(val), len(test)),
        history={"classifiers": [p.name for p in problems]}, scorer=None, split=(train, val, test))
    return ProblemFit(fit, tuple(problems)), tuple(fitted)
