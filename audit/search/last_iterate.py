"""Black-box last-iterate audits: the canary and initialisation that make the final model leak most.

An adversary who sees only the final model (black-box, last iterate) audits DP-SGD through one
score of that model, the loss or logit margin on an input canary. How much the score reveals depends
on the canary and on where training starts: Annamalai and De Cristofaro (2024, "Nearly tight
black-box auditing of differentially private machine learning", NeurIPS, Sections 3–4) choose the
initial parameters (the worst case for the audit) and the canary so that the canary's clipped
gradient keeps full norm C in one direction through training, which brings the black-box audit
close to the white-box one.

:func:`search_last_iterate` makes that choice from data. Each candidate is an input canary
(:func:`candidate_canaries`: an out-of-distribution point on the canary coordinate, an
in-distribution point with the wrong label, the same point at a large norm) paired with an
initialisation (zeros, or :func:`~mechanisms.training.dpsgd.worst_case_init` for that canary). All
candidates train their *pilot* runs together, with and without their canary, in one batched torch
call (:meth:`~mechanisms.training.torch_dpsgd.TorchDPSGD.train_batch`: the m models' parameters
stacked, one batched forward and backward per step, on the CPU or CUDA). Each candidate is scored by
the μ of Gaussian DP that a certificate on the certification budget is predicted to reach from its
pilot scores (:func:`audit.certificates.gaussian_dp.predicted_mu`), and the best is returned as a mechanism
and a neighbouring pair to audit.

Why α is unchanged: the choice is a function of the pilot runs only. The audit that certifies the
chosen candidate trains fresh runs from its own seed, independent of the pilot, so conditional on
the choice its test has type-I error at most α, and therefore unconditionally too (the choice is
a data-independent selection as far as the certification runs are concerned). The pilot runs are
not reused; they cost ``2 · pilot_runs`` runs per candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from estimators.validation import InputError, as_float_array, check_choice, check_int, check_positive, \
    check_probability
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

from mechanisms.training.dpsgd import DPSGD, worst_case_init
from mechanisms.training.records import ORDINARY, input_canary, null_record, with_record

from audit.certificates.gaussian_dp import predicted_mu

__all__ = ["INITIALISATIONS", "LastIterateCandidate", "LastIterateSearch", "candidate_canaries",
           "search_last_iterate"]

INITIALISATIONS = ("zeros", "worst-case")
_RELEASES = ("loss", "margin")


def candidate_canaries(base: np.ndarray, *, value: float = 4.0, large_norm: float = 10.0) -> dict:
    """Input canaries for the training set ``base`` (rows ``[x, y, role]``), by name.

    - ``"out-of-distribution"``: :func:`~mechanisms.training.records.input_canary` with ``value`` on the
      canary coordinate (0 in every ordinary example) and label 1: its gradient is the only one on that
      weight.
    - ``"mislabelled"``: an in-distribution point with the wrong label: the mean features of the examples
      whose label is the majority one, labelled with the other label.
    - ``"large-norm"``: the mislabelled point scaled to ``large_norm`` times its norm: its gradient stays
      clipped at full norm C for longer.
    """
    base = as_float_array(base, "base", ndim=2)
    check_positive(large_norm, "large_norm")
    labels = base[:, -2]
    majority = float(np.mean(labels) >= 0.5)
    mislabelled = np.zeros(base.shape[1])
    mislabelled[:-2] = base[labels == majority, :-2].mean(axis=0)
    mislabelled[-2], mislabelled[-1] = 1.0 - majority, ORDINARY
    large = mislabelled.copy()
    large[:-2] *= large_norm
    return {"out-of-distribution": input_canary(base, value=value, label=1.0), "mislabelled": mislabelled,
            "large-norm": large}


@dataclass(frozen=True)
class LastIterateCandidate:
    """One (canary, initialisation) candidate and its pilot score.

    Attributes
    ----------
    canary_name, init_name : str
    canary : tuple
        The row ``[x, y, role]``.
    init : tuple
        θ₀.
    predicted_mu : float
        The μ̲ a Clopper–Pearson certificate on the certification budget is predicted to reach from the
        pilot scores (:func:`audit.certificates.gaussian_dp.predicted_mu`).
    """

    canary_name: str
    init_name: str
    canary: tuple
    init: tuple
    predicted_mu: float

    @property
    def label(self) -> str:
        return f"{self.canary_name} canary, {self.init_name} init"


@dataclass(frozen=True)
class LastIterateSearch:
    """The result of :func:`search_last_iterate`.

    Attributes
    ----------
    candidates : tuple of LastIterateCandidate
        Every candidate, in the order tried.
    chosen : LastIterateCandidate
        The candidate with the largest predicted μ̲.
    mechanism : DPSGD
        The trainer with the chosen canary evaluated by its black-box release and the chosen θ₀
        (same class and settings as the one searched).
    pair : NeighbouringPair
        ``base`` with the chosen canary against ``base`` with a null record (add/remove of the canary).
    pilot_runs, certification_runs : int
    release : str
    """

    candidates: tuple
    chosen: LastIterateCandidate
    mechanism: DPSGD
    pair: NeighbouringPair
    pilot_runs: int
    certification_runs: int
    release: str

    def to_dict(self) -> dict:
        return {"chosen": self.chosen.label, "release": self.release, "pilot_runs": self.pilot_runs,
                "certification_runs": self.certification_runs,
                "candidates": [{"candidate": c.label, "predicted_mu": c.predicted_mu} for c in self.candidates]}


def _init_for(name: str, features: int, canary: np.ndarray, margin: float) -> np.ndarray:
    if name == "zeros":
        return np.zeros(features + 1)
    return worst_case_init(features, canary, margin=margin)


def search_last_iterate(mechanism: DPSGD, base, *, canaries: dict | None = None, inits=INITIALISATIONS,
                        release: str = "loss", pilot_runs: int = 1000, certification_runs: int = 10000,
                        alpha: float = 0.025, margin: float = 20.0, seed: int = 0,
                        device: str = "cpu") -> LastIterateSearch:
    """Choose the input canary and initialisation whose final-model score leaks most, on pilot runs.

    Parameters
    ----------
    mechanism : DPSGD
        The training audited (logistic regression: σ, C, q, T, η, sampling and ``records`` = n are used;
        its release and canary are replaced). A :class:`~mechanisms.training.torch_dpsgd.TorchDPSGD`
        with ``hidden > 0`` is refused: its initialisation is the MLP's.
    base : array_like of shape (n − 1, p + 2)
        The training set without the canary's slot; the canary (or a null record) is its last row.
    canaries : dict of name to row, optional
        Candidate input canaries (default :func:`candidate_canaries` of ``base``).
    inits : sequence of {"zeros", "worst-case"}
        Candidate initialisations; ``"worst-case"`` is :func:`~mechanisms.training.dpsgd.worst_case_init`
        for each canary at ``margin``.
    release : {"loss", "margin"}
        The black-box score of the final model on the canary.
    pilot_runs : int
        Runs per database per candidate for the choice (not reused by the certification).
    certification_runs : int
        Runs per database the certification will use: the prediction is made for that budget.
    alpha : float
        The level the μ certificate will be made at (the prediction's level).
    seed : int
        Seeds the pilot runs. Certify with fresh runs (any seed of the audit: its runs are drawn anew).
    device : {"cpu", "cuda", "auto"}
        Where the pilot runs train (every candidate in one batched call).

    Returns
    -------
    LastIterateSearch
    """
    from mechanisms.training.torch_dpsgd import TorchDPSGD, on_device

    if not isinstance(mechanism, DPSGD):
        raise InputError(f"argument 'mechanism' must be a DPSGD, got {type(mechanism).__name__}")
    if getattr(mechanism, "hidden", 0):
        raise InputError("argument 'mechanism' must train logistic regression (hidden = 0): the search sets θ₀")
    check_choice(release, "release", _RELEASES)
    pilot_runs = check_int(pilot_runs, "pilot_runs", minimum=10)
    certification_runs = check_int(certification_runs, "certification_runs", minimum=1)
    check_probability(alpha, "alpha")
    check_positive(margin, "margin")
    base = as_float_array(base, "base", ndim=2)
    shape = (mechanism.records - 1, mechanism.features + 2)
    if base.shape != shape:
        raise InputError(f"argument 'base' must have shape {shape}: the n − 1 rows beside the canary's slot, got "
                         f"{base.shape}")
    canaries = candidate_canaries(base) if canaries is None else dict(canaries)
    if not canaries:
        raise InputError("argument 'canaries' must name at least one candidate canary")
    inits = tuple(inits)
    if not inits:
        raise InputError("argument 'inits' must name at least one initialisation")
    for init in inits:
        check_choice(init, "inits", INITIALISATIONS)
    rows = {}
    for name, row in canaries.items():
        row = as_float_array(row, f"canaries[{name!r}]").ravel()
        if row.shape != (shape[1],) or row[-1] != ORDINARY:
            raise InputError(f"argument 'canaries[{name!r}]' must be an input canary row [x, y, role = 1] of "
                             f"{shape[1]} entries")
        rows[name] = row
    grid = [(c, i) for c in rows for i in inits]
    absent = with_record(base, null_record(base))
    # Every candidate's runs with and without its canary, stacked: (candidates · 2 · pilot_runs) models at once.
    dbs, init_rows, evaluated = [], [], []
    for canary_name, init_name in grid:
        canary = rows[canary_name]
        theta0 = _init_for(init_name, mechanism.features, canary, margin)
        for db in (with_record(base, canary), absent):
            dbs.append(np.broadcast_to(db, (pilot_runs, *db.shape)))
            init_rows.append(np.broadcast_to(theta0, (pilot_runs, theta0.size)))
            evaluated.append(np.broadcast_to(canary, (pilot_runs, canary.size)))
    trainer = mechanism if isinstance(mechanism, TorchDPSGD) and device == mechanism.device else \
        on_device(mechanism, device)
    trainer = replace(trainer, release=release)
    scores = trainer.train_batch(np.concatenate(dbs), np.random.default_rng([seed, 0x1A57]),
                                 init=np.concatenate(init_rows), canaries=np.concatenate(evaluated))[:, 0]
    scores = scores.reshape(len(grid), 2, pilot_runs)
    candidates = []
    for (canary_name, init_name), (present, missing) in zip(grid, scores):
        canary = rows[canary_name]
        # Either orientation: the loss falls when the canary is trained on, the margin rises (predicted_mu's
        # thresholds test for scores higher under its first input).
        mu = max(predicted_mu(sign * present, sign * missing, certification_runs, certification_runs, alpha)
                 for sign in (1.0, -1.0))
        candidates.append(LastIterateCandidate(canary_name, init_name, tuple(canary),
                                               tuple(_init_for(init_name, mechanism.features, canary, margin)),
                                               float(mu)))
    chosen = max(candidates, key=lambda c: c.predicted_mu)  # the first of equals: the order tried
    chosen_row = np.asarray(chosen.canary)
    audited = replace(mechanism, release=release, canary=chosen.canary, init=chosen.init)
    pair = NeighbouringPair(with_record(base, chosen_row), absent,
                            why=f"the chosen canary ({chosen.canary_name}) is present in the first training set and "
                                f"replaced by a null record in the second")
    return LastIterateSearch(tuple(candidates), chosen, audited, pair, pilot_runs, certification_runs, release)
