"""The result of an audit: the verdict, the certified evidence, and what was not shown.

The JSON form (:meth:`AuditResult.to_dict`) carries every field of the command-line contract
in DESIGN.md, always present (``None`` where not applicable), plus the evidence the reports
plot: per-secret and per-slice values, training curves and the DP event test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from estimators.results import to_jsonable
from mechanisms.claims import AUDIT_NOTIONS as NOTIONS

VERDICTS = ("violation", "no-violation-detected")


@dataclass(frozen=True)
class SecretEvidence:
    """What the audit found for one secret (a record under DP, a pair g ~ w under PP) and prior.

    Attributes
    ----------
    secret : str
        Name of the secret (``"record 3"``, ``"g ~ w"``).
    record : int or None
        The record index for DP notions.
    prior : str
        Description of the prior (member of Θ) this evidence is about.
    strategy : {"certify", "stratify", "estimate-only"}
        How the secret could be tested under this prior.
    estimate : float
        Point estimate of the audited quantity on the held-out split (nats).
    lower_bound : float or None
        Certified lower bound on the audited quantity, valid simultaneously for all secrets
        and priors at confidence 1 − α (union bound); ``None`` for estimate-only secrets.
    per_slice : list of float or None
        Per-slice estimates (sliced notions, or when slices were used as candidates).
    """

    secret: str
    record: int | None
    prior: str
    strategy: str
    estimate: float
    lower_bound: float | None
    per_slice: list | None = None

    def to_dict(self) -> dict:
        return to_jsonable({
            "secret": self.secret, "record": self.record, "prior": self.prior, "strategy": self.strategy,
            "estimate": self.estimate, "lower_bound": self.lower_bound, "per_slice": self.per_slice,
        })


@dataclass(frozen=True)
class EventTest:
    """The likelihood-ratio event test between two neighbouring inputs (DESIGN.md).

    The critic, thresholded on the select split, defines an event E. Its probabilities under
    the two inputs are bounded with Clopper–Pearson intervals from fresh, independent runs
    of the mechanism, and ε ≥ log((p̲ − δ) / p̄) is certified at confidence 1 − α.
    """

    secret: str
    description: str
    threshold: float
    runs_per_input: int
    p_first: float
    p_second: float
    p_first_lower: float
    p_second_upper: float
    delta: float
    epsilon_lower_bound: float
    epsilon_lower_bound_at_delta: float | None

    def to_dict(self) -> dict:
        return to_jsonable(dict(self.__dict__))


@dataclass(frozen=True)
class CrossCheck:
    """A comparison of the audit's evidence with a theorem applied to a claimed guarantee."""

    claim: str
    implied_mi_upper_bound: float | None
    certified_contradiction: bool
    estimate_consistent: bool | None
    theorems: list
    detail: str

    def to_dict(self) -> dict:
        return to_jsonable(dict(self.__dict__))


@dataclass(frozen=True)
class AuditResult:
    """The outcome of one audit.

    ``verdict`` is ``"violation"`` iff the certified lower bound exceeds ε; the type-I error
    of that verdict is then at most α whatever the mechanism (DESIGN.md, statistical core).
    """

    verdict: str
    notion: str
    epsilon: float
    alpha: float
    lower_bound: float | None
    estimate: float
    paper_statistic: float | None
    dp_epsilon_lower_bound_mi: float | None
    dp_epsilon_lower_bound_event: float | None
    per_record: list
    cross_checks: list
    samples: int
    seconds: float
    seed: int
    mechanism: str = ""
    priors: list = field(default_factory=list)
    theta_statement: str = ""
    certified_secret: str | None = None
    estimate_only: bool = False
    candidates_certified: int = 1
    event_test: EventTest | None = None
    slices: int | None = None
    estimator: str = "dv"
    device: str = "cpu"
    training_history: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    unit: str = "nats"

    @property
    def violation(self) -> bool:
        return self.verdict == "violation"

    def statement(self) -> str:
        """The guarantee in plain words."""
        confidence = f"{100 * (1 - self.alpha):.4g}%"
        name = {"mi-dp": "MI-DP", "smi-dp": "SMI-DP", "mi-pp": "MI-PP"}[self.notion]
        theta = "under the declared prior" + ("s" if len(self.priors) > 1 else "")
        if self.estimate_only:
            return (f"No certificate was possible (the public information is continuous and was not declared "
                    f"independent of the secret: for DP, declare independent records with --independent-rows; "
                    f"for MI-PP, [secret] independent = true or w_discrete = true): "
                    f"the estimate {self.estimate:.4g} nats is {'above' if self.estimate > self.epsilon else 'at most'} "
                    f"ε = {self.epsilon:g}. This is an estimate only, with no error guarantee.")
        if self.violation:
            text = (f"With probability at least {confidence} over this audit's randomness, the mechanism is not "
                    f"{self.epsilon:g}-{name} {theta}: the certified lower bound on the leakage is "
                    f"{self.lower_bound:.4g} nats > ε = {self.epsilon:g}.")
        else:
            bound = "none" if self.lower_bound is None else f"{self.lower_bound:.4g} nats"
            text = (f"No violation of {self.epsilon:g}-{name} was detected {theta} (certified lower bound {bound}, "
                    f"point estimate {self.estimate:.4g} nats). This is not a proof of privacy: a leakage up to "
                    f"the point estimate could go undetected with this sample budget, and other priors were not examined.")
        dp_bounds = [b for b in (self.dp_epsilon_lower_bound_mi, self.dp_epsilon_lower_bound_event) if b is not None]
        best = max(dp_bounds, default=0.0)
        if best > 0:
            text += f" It is not ε-DP for any ε < {best:.3g} (certified at {confidence})."
        return text

    def to_dict(self) -> dict:
        out = {
            "verdict": self.verdict,
            "notion": self.notion,
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "unit": self.unit,
            "lower_bound": self.lower_bound,
            "estimate": self.estimate,
            "paper_statistic": self.paper_statistic,
            "dp_epsilon_lower_bound_mi": self.dp_epsilon_lower_bound_mi,
            "dp_epsilon_lower_bound_event": self.dp_epsilon_lower_bound_event,
            "per_record": [r.to_dict() for r in self.per_record],
            "cross_checks": [c.to_dict() for c in self.cross_checks],
            "samples": self.samples,
            "seconds": self.seconds,
            "seed": self.seed,
            "statement": self.statement(),
            "mechanism": self.mechanism,
            "priors": list(self.priors),
            "theta": self.theta_statement,
            "certified_secret": self.certified_secret,
            "estimate_only": self.estimate_only,
            "candidates_certified": self.candidates_certified,
            "event_test": None if self.event_test is None else self.event_test.to_dict(),
            "slices": self.slices,
            "estimator": self.estimator,
            "device": self.device,
            "training_history": self.training_history,
            "notes": list(self.notes),
        }
        return to_jsonable(out)


def finite_or_none(value) -> float | None:
    """``None`` for missing or non-finite values (JSON has no inf/NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
