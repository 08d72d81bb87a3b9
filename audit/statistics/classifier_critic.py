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

The classifiers are the event test's statistics (:mod:`audit.statistics.classifier`): a logistic
regression on output features, the same with the squares of the columns that take many values
(a change of spread), and for outputs that take few values their empirical log-ratio;
each is fitted on the training split, and a record's critic is the one with the larger DV value
on the validation split. Nothing here trains a neural network: a DP-claim audit under two-point
priors gets its MI test from these critics in the time a classifier auditor takes
(issue 15, "train what the question needs"; :mod:`audit.audit_plan`).

The event test's statistics are the same classifiers, cross-fitted (:func:`cross_fit`): the MI
sample is dealt into K folds, each classifier is fitted K times (on every fold but one), and every
draw is scored by the model not fitted on it. So each classifier trains on (K − 1)/K of the draws
and the event is chosen on the out-of-fold scores of all of them, where a single split trains on
one part and chooses on the other. The statistic certified on fresh runs is the fold mixture
(:class:`FoldMixture`), whose law on a fresh output is that of the out-of-fold scores.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from estimators.critic_problems import ProblemCritics, ProblemFit
from estimators.device import cpu_threads
from estimators.neural import CriticFit, product_shifts, split_indices
from estimators.objectives import delta_method_stderr, donsker_varadhan
from estimators.validation import check_int

from audit.statistics.classifier import PAIR_STATISTICS, EmpiricalLogRatio, FeatureDesign, LogOdds, pair_statistic
from audit.statistics.pair_candidates import MIN_SELECTION_RUNS, PairCandidate, neighbouring_pair_of
from audit.statistics.float_bits import FLOAT_STATISTIC_KINDS, FLOAT_STATISTICS, has_fine_bits
from estimators.resident import keep_on_device, rows_of
from audit.statistics.counting import COUNTING_STATISTICS, CountingFolds, CountingStatistic
from audit.statistics.support import SUPPORT_STATISTICS, SupportFolds, SupportLogRatio

#: The classifiers tried as each record's critic, in order: (name in results, class).
CLASSIFIERS = tuple((f"{name} critic", kind) for kind, name, _, _ in PAIR_STATISTICS)


@dataclass(frozen=True)
class ClassifierCritic:
    """One record's posterior log-odds ℓ(y) = log q(a | y)/q(b | y) and its training class frequencies.

    ``statistic`` is the fitted classifier (an event statistic, :mod:`audit.statistics.classifier`);
    ℓ = statistic(y) + ``offset``: 0 for a logistic regression (its intercept holds the class
    balance), log(N_a/N_b) for an empirical likelihood ratio.
    """

    name: str
    statistic: object
    offset: float
    prior_first: float  # π̂: the training split's fraction of draws of the first database

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


def record_classifier_critics(is_first: np.ndarray, outputs: np.ndarray, train: np.ndarray,
                              design: FeatureDesign | None = None) -> list:
    """Every classifier of :data:`CLASSIFIERS` that suits the outputs, fitted on the ``train`` draws
    (the logistic ones on ``design``'s features where one is given, :func:`_fit_kind`)."""
    first, second = outputs[train][is_first[train]], outputs[train][~is_first[train]]
    if len(first) == 0 or len(second) == 0:
        return []
    prior_first = len(first) / (len(first) + len(second))
    likelihood_offset = float(np.log(len(first)) - np.log(len(second)))
    critics = []
    for name, kind in CLASSIFIERS:
        fitted = _fit_kind(kind, is_first, outputs, train, design)  # None where the outputs do not suit it
        if fitted is not None:
            offset = 0.0 if issubclass(kind, LogOdds) else likelihood_offset
            critics.append(ClassifierCritic(name, fitted, offset, prior_first))
    return critics


#: Folds K of the cross-fitted event statistics (:func:`cross_fit`): each classifier trains on
#: (K − 1)/K of the MI sample.
CROSS_FIT_FOLDS = 3


def stratified_folds(is_first: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Each draw's fold, 0 … ``folds`` − 1, dealt in turn to the draws of each database in random order.

    Fold k then holds ⌊n_x/K⌋ or ⌈n_x/K⌉ of the n_x draws of database x (``is_first`` says which
    draws are of the first database), for both databases alike, and all folds differ in size by at
    most one draw (the second database's deal starts where the first one's stopped).
    """
    folds = check_int(folds, "folds", 2)
    is_first = np.asarray(is_first, dtype=bool)
    fold = np.empty(len(is_first), dtype=np.int64)
    start = 0
    for members in (np.flatnonzero(is_first), np.flatnonzero(~is_first)):
        fold[rng.permutation(members)] = (start + np.arange(len(members))) % folds
        start = (start + len(members)) % folds
    return fold


class FoldMixture:
    """A cross-fitted statistic: each output is scored by one of K fold models, drawn uniformly.

    ``models[k]`` was fitted on every fold but fold k. On each output, J uniform on {0, …, K − 1}
    is drawn from the mixture's own seeded generator, independently of the output, and the score
    is ``models[J](y)``. Out-of-fold, each draw of fold k was scored by ``models[k]``, a model not
    fitted on it; with folds of equal shares of each database (:func:`stratified_folds`) the
    out-of-fold scores of a database's held-out draws are a sample of this same mixture law (up to
    one draw per fold), so an event chosen on them keeps its frequencies on fresh runs, whatever
    the models' disagreement (a fold average would not: models with slopes of opposite signs
    average to a statistic of another law).

    An event on this score is an event on the output post-processed with randomness independent
    of it, so the DP inequality holds for it as for any event (post-processing, Dwork and Roth
    2014, Proposition 2.1) and its counts on fresh runs are binomial: it is certified as any event.
    """

    def __init__(self, models, seed: int):
        self.models = tuple(models)
        self._rng = np.random.default_rng(seed)

    def __call__(self, outputs: np.ndarray) -> np.ndarray:
        which = self._rng.integers(len(self.models), size=len(outputs))
        scores = np.empty(len(outputs), dtype=np.float64)
        for k, model in enumerate(self.models):
            rows = which == k
            if rows.any():
                scores[rows] = model(outputs[rows])
        return scores


@dataclass(frozen=True)
class CrossFitted:
    """One classifier kind cross-fitted on a cell's draws (:func:`cross_fit`).

    ``statistic`` is the :class:`FoldMixture` of its fold models (the log-odds of the first
    database); ``out_of_fold[i]`` is draw i's score by the model not fitted on its fold.
    """

    kind: type
    statistic: FoldMixture
    out_of_fold: np.ndarray


def _fit_kind(kind, is_first: np.ndarray, outputs: np.ndarray, rows: np.ndarray, design: FeatureDesign | None,
              start: np.ndarray | None = None, start_hessian: np.ndarray | None = None, support_columns=None,
              device=None):
    """``kind`` fitted on the draws ``rows`` (an index or boolean array): a logistic kind on ``design``'s
    features where one is given (Newton's method from ``start``, whose Hessian is ``start_hessian`` where
    given), else by ``kind.fit``; None where unsuited. ``support_columns``: the support statistic's block
    (:meth:`audit.statistics.support.SupportLogRatio.fit`); ``device``: where a float-bit statistic computes its
    codes (:func:`audit.statistics.float_bits.device_code_rows` off the CPU)."""
    labels = is_first[rows]
    if design is not None and issubclass(kind, LogOdds):
        return kind.from_design(design, rows, labels, start=start, start_hessian=start_hessian)
    support = {"support_columns": support_columns} if kind is SupportLogRatio else {}
    if kind in FLOAT_STATISTIC_KINDS:
        support = {"device": device}
    if design is not None and design.inverse is not None and issubclass(kind, (EmpiricalLogRatio, SupportLogRatio)):
        return kind.from_counts(design.rows, design.inverse[rows], labels, **support)
    if kind in FLOAT_STATISTIC_KINDS:  # the fold's rows gathered on the device from the cell's one copy there
        index = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows)
        return kind.fit(rows_of(outputs, index[labels]), rows_of(outputs, index[~labels]), **support)
    return kind.fit(outputs[rows][labels], outputs[rows][~labels], **support)


def cross_fit(kind, is_first: np.ndarray, outputs: np.ndarray, fold: np.ndarray, seed: int,
              design: FeatureDesign | None = None, start: np.ndarray | None = None,
              support_columns: slice | None = None, device=None) -> CrossFitted | None:
    """``kind`` (a class of :data:`audit.statistics.classifier.PAIR_STATISTICS`) fitted on every fold but
    one, for each fold, and every draw scored out of fold (the cross-fitting of Chernozhukov et al.
    2018, Definition 3.1, used here to choose an event); None where some fold's training draws do
    not suit ``kind`` or hold draws of one database only.

    ``design`` (:class:`audit.statistics.classifier.FeatureDesign`): a logistic kind's features,
    computed once for all folds; ``start``: its Newton's method's start (the solution of a fit on
    other draws of the same pair), where every fold's fit gets its first Hessian from one pass over
    the draws (:meth:`audit.statistics.classifier.FeatureDesign.start_hessians`) and goes on by chord
    steps (:func:`audit.statistics.logistic_regression.fit_logistic`). None of these changes what a fold model
    minimizes, only its cost. ``support_columns``: the encoder's support block, the support statistic's columns
    (:meth:`audit.statistics.support.SupportLogRatio.fit`). ``device``: the audit's torch device, where a float-bit
    statistic computes its codes (:func:`_fit_kind`).
    """
    folds = int(fold.max()) + 1
    models, out_of_fold = [], np.empty(len(outputs), dtype=np.float64)
    start_hessians = support = None
    if design is not None and start is not None and issubclass(kind, LogOdds):
        start_hessians = design.start_hessians(kind, [np.flatnonzero(fold == k) for k in range(folds)], start)
    coded = design is not None and design.inverse is not None  # the outputs as distinct rows (few of them)
    if kind is SupportLogRatio:  # the columns coded once for every fold
        support = SupportFolds(design.rows if coded else outputs, support_columns)
    counting = CountingFolds(outputs) if kind is CountingStatistic else None  # rounded and coded once too
    for k in range(folds):
        held = fold == k
        train = np.flatnonzero(~held)
        if is_first[train].all() or not is_first[train].any():
            return None
        if support is not None:
            model = support.fit(design.inverse[train] if coded else train, is_first[train])
        elif counting is not None:
            model = counting.fit(train, is_first[train])
        else:
            model = _fit_kind(kind, is_first, outputs, train, design, start,  # None where unsuited
                              None if start_hessians is None else start_hessians[k], support_columns, device)
        if model is None:
            return None
        models.append(model)
        held_outputs = rows_of(outputs, held) if kind in FLOAT_STATISTIC_KINDS else outputs[held]
        out_of_fold[held] = model(held_outputs) if counting is None else counting.scores(model, np.flatnonzero(held))
    return CrossFitted(kind, FoldMixture(models, seed), out_of_fold)


def cross_fitted_candidates(cell, cross_fitted, min_draws: int = MIN_SELECTION_RUNS, counts_first: bool = False) -> list:
    """The event-test candidates of a cell from its cross-fitted classifiers (:func:`cross_fit`).

    Each candidate's statistic is the fold mixture's log-odds of the first database (its negative
    with the inputs swapped, :func:`audit.statistics.classifier.pair_statistic`), and its held-out
    scores are the out-of-fold scores of every draw of the MI sample (None where either database has
    fewer than ``min_draws`` draws, :data:`audit.statistics.pair_candidates.MIN_SELECTION_RUNS` unless an early
    look sets it lower: the event is then chosen on selection runs).

    ``counts_first`` (a sequential audit's early look, :mod:`audit.gating.early_look`): the statistics that count
    discrete output values (the empirical log-ratios of the outputs and of their support) come first, so they win
    a tie in the event search (ties keep the earlier candidate). On a few dozen draws a count is exact on a value
    one input never produces, while a logistic regression fitted on as few draws of many features separates the
    held-out draws as easily by chance; the order changes only the choice, never the certificate's level.
    """
    first, second, record = cell.prior.first, cell.prior.second, cell.record
    is_first = np.all(cell.g == cell.record_value(first[record]), axis=1)
    labels = {kind: (label, what) for kind, _, label, what
              in PAIR_STATISTICS + FLOAT_STATISTICS + SUPPORT_STATISTICS + COUNTING_STATISTICS}
    candidates = []
    for fitted in cross_fitted:
        # A kind of no table (a user's statistic, audit.statistics.user_statistic) carries its own words.
        label, what = labels.get(fitted.kind) or (fitted.kind.label, fitted.kind.what)
        scores = fitted.out_of_fold
        held_out = None
        if min(int(is_first.sum()), int((~is_first).sum())) >= min_draws:
            held_out = (scores[is_first], scores[~is_first])
        # A counting statistic names its strongest features (those of its first fold's fit).
        describe = getattr(fitted.statistic.models[0], "describe", None)
        words = (f"{what} on {CROSS_FIT_FOLDS} folds of the MI sample (cross-fitted, scored out of fold)"
                 + (f" ({describe()}, first fold's fit)" if describe else ""))
        candidates.append(PairCandidate(
            first, second, record, pair_statistic(fitted.statistic, first[record], second[record]),
            f"the pair of prior {cell.prior_index} of Θ; statistic: {words}", statistic_label=label,
            statistic_words=words, held_out=held_out))
    if counts_first:  # stable: each group keeps its order
        counting = (EmpiricalLogRatio, SupportLogRatio, CountingStatistic)
        counts = [issubclass(fitted.kind, counting) for fitted in cross_fitted]
        candidates = [c for c, k in zip(candidates, counts) if k] + [c for c, k in zip(candidates, counts) if not k]
    return candidates


def _dv(t_joint: np.ndarray, t_product: np.ndarray) -> float:
    return float(donsker_varadhan(torch.as_tensor(t_joint), torch.as_tensor(t_product)))


def _product_pairs(critic, is_first, ell, rows, lo, hi) -> np.ndarray:
    """T(x_i, y_{i + n/2}) over the first half of ``rows``: each draw used once (as the neural fit's certificate).

    ``ell`` holds the log-odds of the outputs of ``rows``, in their order."""
    half = len(rows) // 2
    return critic.from_log_odds(is_first[rows[:half]], ell[half:2 * half], lo, hi)


def fit_classifier_critics(cells, outputs, *, config, rng: np.random.Generator,
                           extra_kinds: tuple = (), support_columns: slice | None = None,
                           device=None) -> tuple[ProblemFit, tuple] | None:
    """One classifier critic per cell, as a fit the audit certifies like the neural critics' full fit.

    Each cell's critic is T(x, y) = log q(x | y) − log π̂(x) of its best classifier on the validation
    split (Barber and Agakov 2003; Poole et al. 2019, Section 2.1: its DV value is the Barber–Agakov
    bound), clipped to ``config.output_range``.

    Parameters
    ----------
    cells : sequence of audit.statistics.secret_critics.SecretCell
        Each a record under a two-point prior on neighbouring databases that differ in it.
    outputs : list of ndarray
        The mechanism's outputs on each prior's draws.
    config : CriticConfig
        Its ``split`` (train / validation / test fractions), ``output_range`` (the clip) and
        ``eval_shifts`` (product samples of the estimate) apply.
    rng : numpy.random.Generator
        Draws the split, as :func:`estimators.critic_problems.fit_problems` does, then the folds
        and the fold mixtures' coins of the cross-fitted statistics.
    extra_kinds : tuple of type
        Further event statistics cross-fitted beside the classifiers, in their form (``fit``, then called on
        outputs) with a ``label`` and a ``what`` (a user's statistic:
        :func:`audit.statistics.user_statistic.user_statistic_kind`); event-test candidates only, their fold
        mixtures' coins from a stream of their own.
    support_columns : slice, optional
        The encoder's support block of the outputs (:attr:`mechanisms.outputs.encoding.OutputEncoder.support_columns`):
        the support statistic's columns (:meth:`audit.statistics.support.SupportLogRatio.fit`).
    device : torch.device or str, optional
        The audit's device: where the float-bit statistics compute their codes
        (:func:`audit.statistics.float_bits.device_code_rows` off the CPU; NumPy on it).

    Returns
    -------
    (ProblemFit, tuple of list of CrossFitted) or None
        The fit (``fit.scorer`` is None: the event test gets the classifiers themselves as
        statistics; each problem's ``name`` says which classifier it is) and, for each cell, every
        classifier kind that suits its outputs cross-fitted on :data:`CROSS_FIT_FOLDS` folds of
        all its draws (:func:`cross_fit`: the event test's statistics). None when some cell's
        outputs suit no classifier (then every cell gets neural critics).

    Raises
    ------
    InputError
        Naming ``samples`` and ``[critic] eval_shifts`` when the test split holds no more draws than
        ``eval_shifts`` (a shift would wrap to 0 and pair each output with its own record's value:
        :func:`estimators.neural.product_shifts`), or a split holds fewer than
        :data:`estimators.neural.MIN_SPLIT_SAMPLES`.
    """
    started = time.perf_counter()
    # A few reductions over vectors: one thread (two contend on a busy two-core machine for nothing).
    with cpu_threads(1):
        return _fit(cells, outputs, config, rng, started, extra_kinds, support_columns, device)


def _fit(cells, outputs, config, rng, started, extra_kinds=(), support_columns=None,
         device=None) -> tuple[ProblemFit, tuple] | None:
    lo, hi = (float(v) for v in config.output_range)
    n = len(outputs[cells[0].prior_index])
    # The audit's floor of held-out draws (audit.engine.MIN_TEST_SAMPLES) does not cover a large [critic]
    # eval_shifts: the test split must still hold more draws than shifts (estimators.neural.split_indices).
    train, val, test = split_indices(n, config.split, np.random.default_rng(int(rng.integers(2**31))),
                                     eval_shifts=config.eval_shifts, what="argument 'samples'",
                                     shifts_name="[critic] eval_shifts")
    fold_rng = np.random.default_rng(int(rng.integers(2**31)))  # the folds and the mixtures' coins
    float_rng = np.random.default_rng(fold_rng.bit_generator.seed_seq.spawn(1)[0])  # fold_rng's stream unmoved
    support_rng = np.random.default_rng(fold_rng.bit_generator.seed_seq.spawn(1)[0])  # a stream of its own too
    extra_rng = np.random.default_rng(fold_rng.bit_generator.seed_seq.spawn(1)[0])  # and the extra kinds'
    counting_rng = np.random.default_rng(fold_rng.bit_generator.seed_seq.spawn(1)[0])  # and the counting statistic's
    rows = {name: [] for name in ("validation", "estimate", "test_joint", "test_product", "val_joint",
                                  "val_product", "stderr")}
    problems, fitted = [], []
    shifts = product_shifts(len(test), config.eval_shifts)
    # Each classifier's log-odds is computed once on the validation split (and the chosen one's on the
    # test split); the DV values and the certificate's joint, rolled and paired samples all read them.
    for index, cell in enumerate(cells):
        first, _ = neighbouring_pair_of(cell.prior, cell.record)
        is_first = np.all(cell.g == cell.record_value(first[cell.record]), axis=1)
        y = outputs[cell.prior_index]
        y = y.reshape(len(y), -1)
        best = None
        design = FeatureDesign.build(y, train)  # one feature matrix for every logistic fit of this cell
        critics = record_classifier_critics(is_first, y, train, design)
        for critic in critics:
            ell_val = critic.log_odds(y[val])
            val_joint = critic.from_log_odds(is_first[val], ell_val, lo, hi)
            val_product = _product_pairs(critic, is_first, ell_val, val, lo, hi)
            value = _dv(val_joint, critic.from_log_odds(is_first[val], np.roll(ell_val, len(val) // 2), lo, hi))
            if best is None or value > best[0]:
                best = (value, critic, val_joint, val_product)
        if best is None:
            return None
        value, critic, val_joint, val_product = best
        ell_test = critic.log_odds(y[test])
        test_joint = critic.from_log_odds(is_first[test], ell_test, lo, hi)
        test_rolled = np.concatenate([critic.from_log_odds(is_first[test], np.roll(ell_test, s), lo, hi)
                                      for s in shifts])
        for name, item in (("validation", value), ("estimate", _dv(test_joint, test_rolled)),
                           ("test_joint", test_joint),
                           ("test_product", _product_pairs(critic, is_first, ell_test, test, lo, hi)),
                           ("val_joint", val_joint), ("val_product", val_product),
                           ("stderr", float(delta_method_stderr(torch.as_tensor(test_joint[None]),
                                                                 torch.as_tensor(test_rolled[None]), "dv")[0]))):
            rows[name].append(item)
        problems.append(ProblemCritics(slice(index, index + 1), None, None, name=critic.name))
        fold = stratified_folds(is_first, CROSS_FIT_FOLDS, fold_rng)
        cross_fitted = [cross_fit(type(c.statistic), is_first, y, fold, int(fold_rng.integers(2**31)), design,
                                  getattr(c.statistic, "solution", None)) for c in critics]
        # The float-bit statistics are event-test candidates only (not MI critics); their mixtures'
        # coins come from a stream of their own, so the critics' draws are those made without them.
        # Outputs with no bit below the coarse grid suit none of them on any fold (their fit's gate).
        if has_fine_bits(y):
            with keep_on_device(own=True):  # the cell's one device copy for its folds, freed with their fits
                cross_fitted += [cross_fit(kind, is_first, y, fold, int(float_rng.integers(2**31)), device=device)
                                 for kind, _, _, _ in FLOAT_STATISTICS]
        cross_fitted += [cross_fit(kind, is_first, y, fold, int(support_rng.integers(2**31)), design,
                                   support_columns=support_columns)
                         for kind, _, _, _ in SUPPORT_STATISTICS]  # event-test candidates only, as the float ones
        cross_fitted += [cross_fit(kind, is_first, y, fold, int(counting_rng.integers(2**31)))
                         for kind, _, _, _ in COUNTING_STATISTICS]  # rare one-sided features (issue 39 §4)
        cross_fitted += [cross_fit(kind, is_first, y, fold, int(extra_rng.integers(2**31))) for kind in extra_kinds]
        fitted.append([c for c in cross_fitted if c is not None])
    fit = CriticFit(
        estimates=np.array(rows["estimate"]), stderr=np.array(rows["stderr"]),
        validation=np.array(rows["validation"]), test_joint=np.stack(rows["test_joint"]),
        test_product=np.stack(rows["test_product"]), validation_joint=np.stack(rows["val_joint"]),
        validation_product=np.stack(rows["val_product"]), output_range=(lo, hi), steps=0,
        seconds=time.perf_counter() - started, split_sizes=(len(train), len(val), len(test)),
        history={"classifiers": [p.name for p in problems]}, scorer=None, split=(train, val, test))
    return ProblemFit(fit, tuple(problems)), tuple(fitted)
