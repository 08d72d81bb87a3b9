"""Certify an audit's secrets: candidates, union bound, selection on validation, bound on held-out data.

Every critic of a certifiable secret bounds its leakage from below (DESIGN.md, statistical core):
the full critic, each slice (data processing), and for a stratified secret each stratum v through
I(g; M | w) ≥ P(w = v) I(g; M | w = v). Per-secret bounds hold simultaneously over all candidates
(α / K for K candidates); the verdict's certificate is the best of the ``candidates`` chosen on the
validation split, each at α / k. Under SMI-DP a secret's certificate is instead the averaged DV
bound over its slices (:func:`estimators.certify.sliced_lower_bound`, shared with
:func:`estimators.estimate.estimate_mi`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.certify import CAP_LEVELS, cap_candidates, certify_critics, sliced_lower_bound
from mechanisms.inputs.bounded_draws import draw_bounded

from audit.certificates.event_bounds import clopper_pearson
from audit.result import SecretEvidence

#: Fresh prior draws for the Clopper–Pearson lower bound on a stratum's mass P(w = v).
FRESH_PRIOR_DRAWS = 100_000


@dataclass(frozen=True, eq=False)
class Candidate:
    """A certifiable lower bound on a secret's leakage: one critic, or one stratum of w.

    Attributes
    ----------
    cell : SecretCell
    kind : {"full", "slices", "strata"}
        Which fit the critic is in (:meth:`audit.statistics.secret_critics.SecretFits.fit`).
    index : int
        The critic's index in that fit.
    score : float
        What selection ranks by, from the validation split only.
    critics : ProblemCritics or None
        The cell's critics in that fit (how to rebuild the critic's inputs on new data).
    value, mass
        Strata: the value v of w and P̂(w = v) in the audit's samples.
    """

    cell: object
    kind: str
    index: int
    score: float
    critics: object = None
    value: object = None
    mass: float = 1.0

    @property
    def label(self) -> str:
        if self.kind == "full":
            return f"{self.cell.name} ({getattr(self.critics, 'name', None) or 'full critic'})"
        if self.kind == "slices":
            return f"{self.cell.name} (slice {self.index - self.critics.terms.start})"
        return f"{self.cell.name} (stratum w = {np.array2string(np.asarray(self.value), precision=4)})"


@dataclass(frozen=True)
class Certification:
    """The certified evidence of an audit's secrets.

    Attributes
    ----------
    evidence : list of SecretEvidence
        One per cell, in the cells' order; bounds simultaneous over all candidates.
    lower_bound : float or None
        The selected certificate (level α), ``None`` when no secret is certifiable.
    certified_secret : str or None
        What it certifies (``"record 0 (full critic)"``).
    candidate : Candidate or None
        The critic behind it (the event test's statistic); under SMI-DP the chosen secret's
        most informative slice.
    candidates_certified : int
        k, the candidates certified at α / k.
    """

    evidence: list
    lower_bound: float | None = None
    certified_secret: str | None = None
    candidate: Candidate | None = None
    candidates_certified: int = 0


def candidates(fits) -> list:
    """Every certifiable critic of every cell of ``fits`` (a :class:`~audit.statistics.secret_critics.SecretFits`)."""
    out = []
    for i, cell in enumerate(fits.cells):
        if cell.strategy == "certify":
            if fits.full is not None:
                critics = fits.full.problems[i]
                out.append(Candidate(cell, "full", critics.terms.start,
                                     fits.full.fit.validation[critics.terms.start], critics))
            if fits.sliced is not None:
                critics = fits.sliced.problems[i]
                out += [Candidate(cell, "slices", j, fits.sliced.fit.validation[j], critics)
                        for j in range(critics.terms.start, critics.terms.stop)]
        elif cell.strategy == "stratify":
            out += [Candidate(cell, "strata", s.index, s.mass * fits.strata.fit.validation[s.index], None, s.value,
                              s.mass) for s in fits.cell_strata[i]]
    return out


def cell_critic(fits, i: int) -> Candidate | None:
    """Cell i's critic as a statistic (for the event test): its full critic, else its slice with the best
    validation value; ``None`` when it has neither (a stratified cell's critics are per stratum)."""
    cell = fits.cells[i]
    if fits.full is not None:
        critics = fits.full.problems[i]
        return Candidate(cell, "full", critics.terms.start, float(fits.full.fit.validation[critics.terms.start]),
                         critics)
    if fits.sliced is not None:
        critics = fits.sliced.problems[i]
        index = critics.terms.start + int(np.argmax(fits.sliced.fit.validation[critics.terms]))
        return Candidate(cell, "slices", index, float(fits.sliced.fit.validation[index]), critics)
    return None


def event_critic(fits, chosen: Candidate | None) -> Candidate | None:
    """The critic the event tests build on (its record's structured pairs, its scores as their statistic): of the
    certifiable critics of ``fits``, the one whose estimate on the held-out (test) split is largest, where it is
    another cell's (record's) and that estimate is positive and above that of ``chosen`` (the MI test's candidate);
    else ``chosen`` (within its cell ``chosen`` stands: a two-point prior's cell offers it beside its full critic),
    and ``chosen`` itself where it is a stratum's or None (no event test then). A critic that learnt nothing
    estimates about 0 (a near-constant) or below it (fitted to noise), so where no estimate is positive the held-out
    split shows no record leaking and the MI test's choice stands. (Asking the estimate to stand out by its standard error as well
    cost power: randomized response at ε = 0.5 in experiments/record_choice.py was refuted in 40 audits of 50, not
    47.)

    The MI test chooses its candidate on the validation split alone, since it certifies on the test split. The event
    tests certify on fresh runs, which neither split holds, so their choice may read the test split too. At 1,000
    samples the validation split holds 100 draws, on which a record leaking 0.11 nats (randomized response at ε = 1,
    one record of 4 under Bernoulli(½)) scored 0.12 ± 0.08 over 50 seeds and the records the mechanism ignores
    0.00 ± 0.02, so the MI test's candidate was a useless record in 3 audits of 50; the test split holds 500 draws,
    on which the leaking record's estimate was the largest in all 50 (experiments/record_choice.py). Which record
    the event tests run on changes their power, never their level (each certificate is on its own fresh runs).
    """
    if chosen is None or chosen.kind == "strata":
        return chosen

    def estimate(c):
        return float(fits.fit(c.kind).estimates[c.index])

    best = max((c for c in candidates(fits) if c.kind != "strata"), key=estimate, default=chosen)
    return best if best.cell is not chosen.cell and estimate(best) > max(estimate(chosen), 0.0) else chosen


class Certifier:
    """Certified bounds of candidates at a failure probability δ, from the held-out splits.

    A stratum's bound is P̲(w = v) · max(L_v, 0), each factor at δ/2: L_v certifies
    I(g; M | w = v) on the stratum critic's test split, and P̲ is a Clopper–Pearson lower
    bound from fresh draws of the prior (w needs no mechanism run).
    """

    def __init__(self, fits, rng, timeout):
        self.fits, self.rng, self.timeout = fits, rng, timeout
        self._critic_bounds, self._fresh_w, self._cap_candidates = {}, {}, {}

    def critic_bounds(self, kind, delta):
        if (kind, delta) not in self._critic_bounds:
            fit = self.fits.fit(kind)
            if kind not in self._cap_candidates:
                # A fit's candidate caps depend on no δ: computed once for the bounds at every δ (the per-secret
                # bounds at α/K, the chosen candidates' at α/k, a stratum's at half of each).
                self._cap_candidates[kind] = cap_candidates(fit.validation_joint, fit.validation_product,
                                                            fit.output_range[1])
            self._critic_bounds[kind, delta] = certify_critics(fit, delta, candidates=self._cap_candidates[kind])[0]
        return self._critic_bounds[kind, delta]

    def _mass_lower_bound(self, candidate, delta):
        cell = candidate.cell
        if id(cell) not in self._fresh_w:
            prior = cell.prior
            # Bounded like every other prior call (--timeout, else a multiple of its first call's time): a sampler
            # that hangs on a large request is named instead of stalling the certificate.
            draws = draw_bounded(prior, FRESH_PRIOR_DRAWS, self.rng, timeout=self.timeout,
                                 where=f" drawing {FRESH_PRIOR_DRAWS} fresh databases for a stratum's mass")
            self._fresh_w[id(cell)] = cell.pair.w(draws)
        hits = int(np.all(self._fresh_w[id(cell)] == candidate.value, axis=1).sum())
        return float(clopper_pearson(hits, FRESH_PRIOR_DRAWS, delta)[0])

    def bound(self, candidate, delta) -> float:
        if candidate.kind != "strata":
            return float(self.critic_bounds(candidate.kind, delta)[candidate.index])
        within = float(self.critic_bounds("strata", delta / 2)[candidate.index])
        return self._mass_lower_bound(candidate, delta / 2) * max(within, 0.0)


def _estimate(i, cell, fits) -> float:
    if cell.strategy == "stratify":
        # Σ_v P̂(w = v) Î(g; M | w = v) over the strata with enough samples (the rest add ≥ 0).
        return float(sum(s.mass * fits.strata.fit.estimates[s.index] for s in fits.cell_strata[i]))
    return float(fits.full.problems[i].values(fits.full.fit.estimates)[0])


def _per_slice(i, fits):
    if fits.sliced is None:
        return None
    return fits.sliced.problems[i].values(fits.sliced.fit.estimates)


def certify(fits, *, alpha: float, n_candidates: int, rng, timeout) -> Certification:
    """Per-secret evidence and the selected certificate at level α (full critics, slices, strata)."""
    found = candidates(fits)
    certifier = Certifier(fits, rng, timeout)
    delta_all = alpha / max(1, len(found))
    evidence = []
    for i, cell in enumerate(fits.cells):
        own = [c for c in found if c.cell is cell]
        bound = max((certifier.bound(c, delta_all) for c in own), default=None)
        per_slice = _per_slice(i, fits)
        evidence.append(SecretEvidence(cell.name, cell.record, cell.prior.describe(), cell.strategy,
                                       _estimate(i, cell, fits), bound,
                                       None if per_slice is None else per_slice.tolist()))
    if not found:
        return Certification(evidence)
    k = min(n_candidates, len(found))
    chosen = [found[i] for i in np.argsort([-c.score for c in found])[:k]]
    bounds = [certifier.bound(c, alpha / k) for c in chosen]
    best = int(np.argmax(bounds))
    return Certification(evidence, bounds[best], chosen[best].label, chosen[best], k)


def _rows_cap_candidates(fit, groups: list) -> np.ndarray:
    """The fit's candidate caps (:func:`estimators.certify.cap_candidates`, one row a critic) for the critics in
    ``groups`` (slices or index arrays), NaN in the rows of the others. They depend on no δ, and a critic's row on
    its own values alone: computed once, the same numbers serve a secret's bound at every level."""
    rows = np.arange(len(fit.validation_joint))
    used = np.concatenate([rows[group] for group in groups]) if groups else rows[:0]
    caps = np.full((len(rows), len(CAP_LEVELS) + 1), np.nan)
    if len(used):
        caps[used] = cap_candidates(fit.validation_joint[used], fit.validation_product[used], fit.output_range[1])
    return caps


def certify_sliced_average(fits, *, alpha: float, n_candidates: int) -> Certification:
    """SMI-DP: each secret's certificate is the averaged DV bound over its slices, at level α."""
    sliced = fits.sliced
    fit = sliced.fit
    certifiable = [i for i, cell in enumerate(fits.cells) if cell.certifiable]
    caps = _rows_cap_candidates(fit, [sliced.problems[i].terms for i in certifiable])
    evidence = []
    for i, cell in enumerate(fits.cells):
        per_slice = _per_slice(i, fits)
        bound = (sliced_lower_bound(fit, sliced.problems[i].terms, alpha / len(certifiable), candidates=caps)
                 if cell.certifiable else None)
        evidence.append(SecretEvidence(cell.name, cell.record, cell.prior.describe(), cell.strategy,
                                       float(np.mean(per_slice)), bound, per_slice.tolist()))
    if not certifiable:
        return Certification(evidence)
    k = min(n_candidates, len(certifiable))
    scores = np.array([fit.validation[sliced.problems[i].terms].mean() for i in certifiable])
    chosen = [certifiable[j] for j in np.argsort(-scores)[:k]]
    bounds = [sliced_lower_bound(fit, sliced.problems[i].terms, alpha / k, candidates=caps) for i in chosen]
    best = int(np.argmax(bounds))
    i = chosen[best]
    terms = sliced.problems[i].terms
    # The event test uses the single most informative slice of the chosen secret (SMI-DP trains no full critic).
    return Certification(evidence, bounds[best], f"{fits.cells[i].name} (average over {terms.stop - terms.start} slices)",
                         cell_critic(fits, i), k)
