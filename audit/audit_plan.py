"""The audit plan: what an audit trains and runs, decided from the claim and the spec before sampling.

An audit answers the question it was asked and trains only what that question needs
(issue 15, "train what the question needs"):

- **the claim's tests** (:func:`audit.certificates.claim_tests.plan_claim_tests`): which of the MI test and the
  event test can refute the claim, and the share of α each spends;
- **which secrets get critics**: a secret whose g is deterministic under its prior (a record that
  a two-point prior never switches, the fixed records of a fixed-rest prior, a searched prior's
  non-switching records) has I(g; M | w) = 0 exactly — the mutual information of a constant is
  zero (Cover and Thomas 2006, Eq. (2.45): I(X; Y) = H(X) − H(X | Y) ≤ H(X) = 0). It gets no
  critic, its estimate is 0 exactly, no certificate, and it is no candidate of the union bound;
- **slices**: random slices per secret run when the audited notion needs them (SMI-DP averages
  over them: Pufferfish paper, Eq. (6)–(7)) or the caller asked for them (``slices`` set); a
  DP-family claim decided by the event test needs one good likelihood-ratio statistic between
  neighbouring inputs, not the sliced MI of every record, so it gets none by default;
- **the MI test's critics** (:func:`resolve_mi_critic`): neural critics, or, for a DP-family
  claim audited under two-point priors on neighbouring databases, each record's Barber–Agakov
  critic from the event test's classifiers (:mod:`audit.statistics.classifier_critic`), which trains no
  neural network;
- **the run budget**: ``samples`` databases per prior for the MI sample (it also trains the
  event test's statistic), and ``event_runs`` runs per neighbouring input for certifying the
  event (plus about as many for choosing it, :func:`audit.search.event_search.event_test`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError
from mechanisms.claims.claim import RECORD_AUDIT_NOTIONS
from mechanisms.inputs.priors import FixedRest, ProductBernoulli, TwoPoint

from audit.certificates.claim_tests import ClaimPlan, plan_claim_tests
from audit.search.early_choice import early_rule
from audit.statistics.pair_candidates import neighbouring_pair_of

#: Random slices per secret when the notion needs slices (SMI-DP) and the caller gave no number.
DEFAULT_SMI_SLICES = 32


def deterministic_records(prior) -> frozenset:
    """The records that take one fixed value under ``prior``, read from its definition (never from samples).

    A two-point prior's record i is fixed when its two rows are equal or P(second) ∈ {0, 1}; a
    product-Bernoulli prior's when every entry has p ∈ {0, 1}; a fixed-rest prior fixes every record
    but its random one. Other priors: none known.
    """
    if isinstance(prior, ProductBernoulli):
        return frozenset(int(i) for i in np.flatnonzero(np.all((prior.p == 0) | (prior.p == 1), axis=1)))
    if isinstance(prior, TwoPoint):
        same = np.all(prior.first == prior.second, axis=1)
        sure = (prior.p == 0) | (prior.p == 1)
        return frozenset(int(i) for i in np.flatnonzero(same | sure))
    if isinstance(prior, FixedRest):
        return frozenset(i for i in range(prior.shape[0]) if i != prior.record)
    return frozenset()


@dataclass(frozen=True)
class PlannedSecret:
    """One (prior, secret) the audit examines.

    Attributes
    ----------
    prior_index : int
        Index of the prior in Θ (declared priors first, then searched ones).
    record : int or None
        The record under DP notions; ``None`` for a Pufferfish secret pair.
    pair : SecretPair
        The secret g ~ w.
    deterministic : bool
        g is constant under the prior: no critic, estimate 0 exactly, no certificate.
    """

    prior_index: int
    record: int | None
    pair: object
    deterministic: bool = False

    @property
    def name(self) -> str:
        return self.pair.name if self.record is None else f"record {self.record}"


@dataclass(frozen=True)
class AuditPlan:
    """What an audit trains and runs, fixed before any sampling.

    Attributes
    ----------
    claim_tests : ClaimPlan
        The tests that may refute the claim and their shares of α.
    secrets : tuple of PlannedSecret
        Every (prior, secret) examined, in order; ``trained`` are those that get critics.
    slices : int
        Random slices per trained secret (0: none).
    full_critics : bool
        Whether each trained secret gets a full-dimensional critic (every notion but SMI-DP, whose
        certificate averages over slices).
    mi_runs : int
        Mechanism runs of the MI sample: ``samples`` per prior in Θ.
    event_runs : int
        Runs per neighbouring input certifying the event test (0: the event test does not run).
    notes : tuple of str
        What the plan decided and why, said in the result.
    mi_critic : {"neural", "classifier"}
        The MI test's critics (:func:`resolve_mi_critic`).
    """

    claim_tests: ClaimPlan
    secrets: tuple
    slices: int
    full_critics: bool
    mi_runs: int
    event_runs: int
    notes: tuple = ()
    mi_critic: str = "neural"

    @property
    def trained(self) -> list:
        """The secrets that get critics."""
        return [s for s in self.secrets if not s.deterministic]

    @property
    def critics_per_secret(self) -> int:
        """Critics of one certifiable secret (before chain-rule or stratum critics)."""
        return int(self.full_critics) + self.slices


def resolve_slices(notion: str, requested: int | None) -> int:
    """Slices per secret: the caller's number when given, else :data:`DEFAULT_SMI_SLICES` for SMI-DP
    (it averages over slices) and none for the other notions."""
    if requested is not None:
        return requested
    return DEFAULT_SMI_SLICES if notion == "smi-dp" else 0


def classifier_critics_apply(notion: str, slices: int, secrets, theta) -> str | None:
    """Why classifier critics cannot serve this audit, or None when they can.

    They can for ``mi-dp`` without slices when every secret that gets a critic is a record under
    a two-point prior on two databases that differ in that record only (the record then takes
    two values: :mod:`audit.statistics.classifier_critic`).
    """
    if notion != "mi-dp":
        return f"they serve the notion mi-dp, not {notion}"
    if slices:
        return "they are not sliced (slices = 0)"
    trained = [s for s in secrets if not s.deterministic]
    if not trained:
        return "no secret gets a critic"
    if any(neighbouring_pair_of(theta[s.prior_index][0], s.record) is None for s in trained):
        return "they need every audited record under a two-point prior on neighbouring databases that differ in it"
    return None


def resolve_mi_critic(spec, slices: int, secrets, theta) -> tuple[str, str | None]:
    """The MI test's critics, ``"neural"`` or ``"classifier"``, and a note saying why.

    ``spec.mi_critic``:

    - ``"neural"``: the batched ReLU critics (:mod:`estimators.neural`);
    - ``"classifier"``: each record's classifier critic (:mod:`audit.statistics.classifier_critic`); an
      :class:`~estimators.validation.InputError` where they cannot serve
      (:func:`classifier_critics_apply`);
    - ``"auto"`` (default): classifier critics for a DP-family claim (one that bounds every event
      probability, decided by the event test) where they can serve — the question is the claim, and
      its likelihood-ratio statistic between the two databases is what the classifiers fit —
      otherwise neural critics (also where the outputs suit no classifier: too wide for the
      logistic regression and too many values for the empirical log-ratio).
    """
    requested = spec.mi_critic
    if requested == "neural":
        return "neural", None
    why_not = classifier_critics_apply(spec.notion, slices, secrets, theta)
    if requested == "classifier":
        if why_not is not None:
            raise InputError(f"argument 'mi_critic' (--mi-critic) is 'classifier', but classifier critics cannot "
                             f"serve this audit: {why_not}")
        return "classifier", "The MI test's critics are classifiers (mi_critic = classifier): each record's " \
                             "Barber–Agakov critic log q(x | y) − log π̂(x), no neural network."
    if why_not is None and spec.claim is not None and spec.claim.has_profile:
        return "classifier", (f"The claim {spec.claim.label} is decided by its likelihood-ratio statistic between "
                              "neighbouring databases, so the MI test's critics are classifiers (a logistic regression, "
                              "on output features, with their squares and hinges, or the empirical log-ratio of outputs with few values: "
                              "log q(x | y) − log π̂(x)) and no neural network is trained (mi_critic = neural trains one).")
    return "neural", None


def plan_audit(spec, theta, early: bool = False) -> AuditPlan:
    """The plan of the audit ``spec`` over Θ.

    Parameters
    ----------
    spec : AuditSpec
    theta : sequence of (Prior, int or None)
        Θ: each prior with the one record that can vary under it (a searched two-point prior),
        or ``None`` when any may.
    early : bool
        A sequential audit's early look (:func:`audit.certificates.claim_tests.plan_claim_tests`).

    Returns
    -------
    AuditPlan
    """
    slices = resolve_slices(spec.notion, spec.slices)
    secrets, fixed = [], []
    for prior_index, (prior, varying) in enumerate(theta):
        constant = deterministic_records(prior) if spec.notion in RECORD_AUDIT_NOTIONS else frozenset()
        for record, pair in spec.secret_pairs():
            if varying is not None and record != varying:
                continue  # a searched prior is examined at the record it switches only
            secrets.append(PlannedSecret(prior_index, record, pair, record in constant))
            if record in constant:
                fixed.append(f"record {record} under prior {prior_index}")
    mi_critic, why = resolve_mi_critic(spec, slices, secrets, theta)
    claim_tests = plan_claim_tests(spec, classifier_critics=mi_critic == "classifier", early=early,
                                   early_refutes=early_rule(spec) if early else None)
    notes = []
    if fixed:
        notes.append(f"{', '.join(fixed)}: the record never changes under its prior, so its MI with the output is 0 "
                     "exactly; it gets no critic, no certificate, and is no candidate of the union bound.")
    if mi_critic == "neural" and spec.notion in RECORD_AUDIT_NOTIONS and spec.claim is not None \
            and "mi" not in claim_tests.alpha_spent and "event" in claim_tests.alpha_spent:
        notes.append("The MI test cannot refute the claim here, so the critics are trained to give the event test its "
                     "likelihood-ratio statistic; the MI bound is reported as a separate statement.")
    if why is not None:
        notes.append(why)
    event_runs = spec.event_runs if spec.notion in RECORD_AUDIT_NOTIONS else 0
    return AuditPlan(claim_tests=claim_tests, secrets=tuple(secrets), slices=slices,
                     full_critics=spec.notion != "smi-dp", mi_runs=spec.samples * len(theta),
                     event_runs=event_runs, notes=tuple(claim_tests.notes) + tuple(notes), mi_critic=mi_critic)
