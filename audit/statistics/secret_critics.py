"""The critics of an audit's secrets: full, per stratum of a discrete w, and per random slice.

Each (prior, secret) the plan trains is a :class:`SecretCell`. Its critics are built by the
estimators' one slice → fit path (:func:`estimators.critic_problems.fit_problems`): a full critic
for I(g; M, w) (plus one for I(g; w) when g and w may be dependent: chain rule), one per random
slice of (g, M, w) (Pufferfish paper, Section VI-C), and, for a discrete dependent w, one per
well-populated value v of w for I(g; M | w = v). Each step returns what it trained as a named
result (:class:`SecretFits`); nothing is written back into the cells.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from estimators.critic_problems import MIProblem, ProblemFit, fit_problems
from estimators.neural import check_split_sizes
from mechanisms.inputs.relation import GroupPairPrior

#: The most values of a discrete w that get a stratum critic (the most frequent ones).
MAX_STRATA = 8



def secret_values(pair, record, dbs, others: str = "records", prior=None, missing: bool = False,
                  public: bool = True):
    """``(g, w)`` of a secret on ``dbs``; with ``others="sums"`` a record's w is the column sums of the other
    records, Σ_{j≠i} X(j, ·), k numbers instead of (n − 1)·k; under a ``prior`` whose records switch together
    (:class:`~mechanisms.inputs.relation.GroupPairPrior`, a user-level relation's pair) w is None, and so it is
    where not ``public`` (a caller that has w already: :func:`public_fixed`). With ``missing`` (an audit that
    allows NaN) the records of a DP secret are read through :func:`with_missing_indicators` first.

    Under such a prior the records outside the group are fixed and the group's other records move with
    X_i: the secret is the pair B (which database was drawn), X_i is its label, and conditioning on them
    would condition the secret away. With w None the critics certify I(X_i; M) = I(B; M), which a claim
    at the pair's distance bounds as it bounds a record's MI (the pair is one neighbouring step of the
    audited relation; the budget of :meth:`mechanisms.claims.claim.Claim.implied_mi_budget`).

    The MI-DP quantity conditions on every other record, I(X_i; M | X_−i) (Cuff and Yu 2016, Definition 2, as
    recalled in the Pufferfish paper, Eq. (2)). For any statistic T of the other records, with rows independent
    (X_i ⟂ X_−i, hence X_i ⟂ T):

        I(X_i; M | T) = I(X_i; M, T) ≤ I(X_i; M, X_−i) = I(X_i; M | X_−i)

    (the chain rule, Cover and Thomas 2006, Eq. (2.62), twice with I(X_i; T) = I(X_i; X_−i) = 0; the inequality is
    data processing, Theorem 2.8.1, as (M, T) is a function of (M, X_−i)). So a certified lower bound on the sums'
    quantity is one on the audited quantity; the two are equal when the mechanism reads the other records only
    through T (a noisy sum, count or mean), and the sums' quantity can be far lower otherwise (a mechanism
    releasing X_i ⊕ X_j: docs/how-to/mi-notions.md, "Large databases").
    """
    if isinstance(prior, GroupPairPrior):
        return pair.g(dbs), None
    if record is not None and missing:
        dbs = with_missing_indicators(dbs)
    if not public:
        return pair.g(dbs), None
    if others == "sums" and record is not None:
        dbs = np.asarray(dbs, dtype=float)
        return pair.g(dbs), dbs.sum(axis=1) - dbs[:, record, :]
    return pair.evaluate(dbs)


def public_fixed(pair, record, others: str = "records", prior=None) -> bool:
    """Whether w of :func:`secret_values` is the same, bit for bit, whatever value ``record`` takes: DP's other
    records (:func:`audit.frameworks.leaves_out_record`; read through :func:`with_missing_indicators` or not,
    record by record either way). The sums Σ_{j≠i} X(j, ·) are not: they are taken as all rows' sum less X(i, ·),
    whose rounding depends on X(i, ·); nor a user's w, which may read any record."""
    from audit.frameworks import leaves_out_record

    return (record is not None and others == "records" and not isinstance(prior, GroupPairPrior)
            and leaves_out_record(pair.w, record))


def with_missing_indicators(values) -> np.ndarray:
    """``values`` (records along the last axis but one: (m, n, k), or one record (k,)) with each of the k
    attributes read as 0 where missing (NaN, ``--allow-nan``), then the k missing indicators: (..., 2k).

    The map is one-to-one on records, so a record's secret and the others' values carry the same information
    after it: I(φ(X_i); M | φ(X_−i)) = I(X_i; M | X_−i) for any injective φ (Cover and Thomas 2006, Theorem 2.8.1,
    the data-processing inequality, applied to φ and to its inverse on φ's image), and the critics
    get finite inputs. With independent rows, the sums of the mapped records are a statistic of the others as
    above. The width is 2k whether or not a NaN occurs, so every batch of an audit that allows NaN has one.
    """
    values = np.asarray(values, dtype=float)
    absent = np.isnan(values)
    return np.concatenate([np.where(absent, 0.0, values), absent.astype(float)], axis=-1)


@dataclass(frozen=True, eq=False)
class SecretCell:
    """One (prior, secret) combination that gets critics.

    Attributes
    ----------
    prior_index : int
        Index of the prior in Θ.
    prior : Prior
    record : int or None
        The record under DP notions.
    pair : SecretPair
    strategy : {"certify", "stratify", "estimate-only"}
        How the secret is tested under the prior (:meth:`audit.frameworks.SecretPair.strategy`).
    g, w : ndarray (m, dg), (m, dw) or None
        The secret and public parts on the audit's databases.
    position : int
        Index in the plan's list of secrets (the order of the per-secret evidence).
    others : {"records", "sums"}
        What w holds of the other records (:func:`secret_values`).
    missing : bool
        Whether the records were read with their missing indicators (:func:`with_missing_indicators`; an audit
        that allows NaN), so that a record's value compares with ``g`` once read so too (:meth:`record_value`).
    """

    prior_index: int
    prior: object
    record: int | None
    pair: object
    strategy: str
    g: np.ndarray
    w: np.ndarray | None
    position: int = 0
    others: str = "records"
    missing: bool = False

    def record_value(self, value) -> np.ndarray:
        """A value of the cell's record as ``g`` holds it (with its missing indicators where :attr:`missing`)."""
        return with_missing_indicators(value) if self.missing else np.asarray(value)

    @property
    def certifiable(self) -> bool:
        return self.strategy in ("certify", "stratify")

    @property
    def name(self) -> str:
        return self.pair.name if self.record is None else f"record {self.record}"

    def problem(self, outputs) -> MIProblem:
        """I(g; M, w), with the chain-rule term I(g; w) when g and w may be dependent."""
        return MIProblem(self.g, outputs[self.prior_index], self.w, chain=self.strategy != "certify")


@dataclass(frozen=True)
class Stratum:
    """One value v of a discrete w with its stratum critic for I(g; M | w = v)."""

    value: np.ndarray
    mass: float  # P̂(w = v) in the audit's samples
    index: int  # the critic's index in the strata fit


@dataclass(frozen=True)
class SecretFits:
    """What an audit trained, each part indexed like its list of cells.

    Attributes
    ----------
    cells : tuple of SecretCell
        The cells after stratification (a stratified cell without a populated stratum is
        estimate-only).
    full : ProblemFit or None
        Full critics, one problem per cell (every notion but SMI-DP).
    strata : ProblemFit or None
        Stratum critics; ``cell_strata[i]`` lists cell i's strata.
    cell_strata : tuple of tuple of Stratum
    sliced : ProblemFit or None
        Slice critics, one problem per cell.
    classifiers : tuple of list
        With classifier critics (:mod:`audit.statistics.classifier_critic`), each cell's classifiers cross-fitted
        on all its draws (:class:`~audit.statistics.classifier_critic.CrossFitted`: the event test's
        statistics); else empty.
    """

    cells: tuple
    full: ProblemFit | None = None
    strata: ProblemFit | None = None
    cell_strata: tuple = ()
    sliced: ProblemFit | None = None
    classifiers: tuple = ()

    def fit(self, kind: str):
        """The :class:`~estimators.neural.CriticFit` of ``kind`` (``"full"``, ``"strata"``, ``"slices"``)."""
        return {"full": self.full, "strata": self.strata, "slices": self.sliced}[kind].fit

    @property
    def history(self) -> dict:
        return {kind: part.fit.history for kind, part in (("full", self.full), ("strata", self.strata),
                                                          ("slices", self.sliced)) if part is not None}


def _strata(cells, outputs, min_count: int, rng, notes):
    """The populated strata of each stratified cell, their problems, and the cells after it.

    Every stratum is subsampled to the size of the smallest kept stratum so that all stratum
    critics train together; strata rarer than ``min_count`` samples are left out.
    """
    kept, out_cells = [], []
    for cell in cells:
        if cell.strategy != "stratify":
            out_cells.append(cell)
            continue
        values, inverse, counts = np.unique(cell.w, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        order = np.argsort(-counts)[:MAX_STRATA]
        # Strata train together at the smallest kept stratum's size, so rare strata would cut
        # every stratum's certification sample; keep those with ≥ 1/4 of the largest count.
        floor = max(min_count, counts[order[0]] / 4)
        strata = [(values[i], counts[i] / len(cell.w), np.flatnonzero(inverse == i)) for i in order
                  if counts[i] >= floor]
        if not strata:
            notes.append(f"{cell.name}: no value of the public part w has {min_count} samples; "
                         "estimate only (raise 'samples' to stratify)")
            out_cells.append(dataclasses.replace(cell, strategy="estimate-only"))
            continue
        covered = sum(mass for _, mass, _ in strata)
        if covered < 0.999:
            notes.append(f"{cell.name}: the stratified estimate covers the {len(strata)} most frequent values of w "
                         f"({100 * covered:.1f}% of the mass); the rest is left out, so it underestimates")
        kept.append((len(out_cells), strata))
        out_cells.append(cell)
    if not kept:
        return tuple(out_cells), [], [()] * len(out_cells)
    size = min(len(idx) for _, strata in kept for _, _, idx in strata)
    problems, cell_strata = [], [()] * len(out_cells)
    for position, strata in kept:
        cell, placed = out_cells[position], []
        for value, p_hat, idx in strata:
            chosen = rng.permutation(idx)[:size]
            placed.append(Stratum(value, float(p_hat), len(problems)))
            problems.append(MIProblem(cell.g[chosen], outputs[cell.prior_index][chosen]))
        cell_strata[position] = tuple(placed)
    return tuple(out_cells), problems, cell_strata


def fit_secret_critics(cells, outputs, *, full: bool, slices: int, min_stratum: int, rng, notes,
                       objective: str, config, device, quiet: bool) -> SecretFits:
    """Train the critics the plan asks for, in a fixed order of random draws (full, strata, slices).

    Parameters
    ----------
    cells : sequence of SecretCell
    outputs : list of ndarray
        The mechanism's outputs on each prior's databases.
    full : bool
        Train full critics (and stratum critics for stratified cells).
    slices : int
        Random slices per cell (0: none).
    min_stratum : int
        Fewest samples of a value of w that gets a stratum critic.
    rng : numpy.random.Generator
    notes : list
        Receives what stratification left out.
    objective, config, device, quiet
        As for :func:`estimators.neural.fit_critics`.

    Raises
    ------
    InputError
        Naming ``samples`` and ``[critic] eval_shifts`` before any training when a cell's draws leave a split
        too small (:func:`estimators.neural.check_split_sizes`), where :func:`estimators.neural.fit_critics`
        would name its own arguments.
    """
    cells = tuple(cells)
    if cells and (full or slices > 0):
        check_split_sizes(min(len(outputs[c.prior_index]) for c in cells), config.split,
                          eval_shifts=config.eval_shifts, what="argument 'samples'", shifts_name="[critic] eval_shifts")
    options = dict(objective=objective, config=config, device=device, quiet=quiet)
    full_fit = strata_fit = sliced_fit = None
    cell_strata = ()
    if full:
        full_fit = fit_problems([c.problem(outputs) for c in cells], rng=rng, desc="full critics", **options)
        cells, problems, cell_strata = _strata(cells, outputs, min_stratum, rng, notes)
        if problems:
            strata_fit = fit_problems(problems, rng=rng, desc="stratum critics", **options)
        # Stratum critic indices are the problems' positions: one critic per unsliced problem.
        cell_strata = tuple(tuple(dataclasses.replace(s, index=strata_fit.problems[s.index].terms.start)
                                  for s in strata) for strata in cell_strata) if problems else tuple(cell_strata)
    if slices > 0:
        sliced_fit = fit_problems([c.problem(outputs) for c in cells], slices=slices, rng=rng,
                                  desc="sliced critics", **options)
    return SecretFits(cells, full_fit, strata_fit, tuple(cell_strata), sliced_fit)
