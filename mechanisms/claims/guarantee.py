"""A privacy guarantee as a catalog entry states it: notion, ε and δ, and the claim it makes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimators.validation import InputError, check_choice, check_nonnegative, check_positive

from mechanisms.claims.notions import MIDP, MIPP, DifferentialPrivacy, LocalDP
from mechanisms.claims.claim import Claim
from mechanisms.claims.claim import GUARANTEE_NOTIONS as NOTIONS

__all__ = ["Guarantee", "NOTIONS", "NOT_PRIVATE"]

# NOTIONS: "dp": central (ε, δ)-differential privacy over the entry's neighbouring relation;
# "ldp": local DP of each record's report; "mi-dp" / "mi-pp": ε-MI DP and ε-MI Pufferfish
# privacy of the Pufferfish paper (ε in nats); "none": no finite guarantee.


@dataclass(frozen=True)
class Guarantee:
    """A privacy guarantee.

    Attributes
    ----------
    notion : str
        One of :data:`NOTIONS`; ``"none"`` means not private (no finite ε).
    epsilon : float
        ε (nats for the MI notions); ``inf`` for ``"none"``.
    delta : float
        δ of approximate DP (0 for pure DP and for the MI notions).
    note : str
        Where the value comes from (theorem, derivation) or why it fails.
    """

    notion: str
    epsilon: float
    delta: float = 0.0
    note: str = ""

    def __post_init__(self):
        check_choice(self.notion, "notion", NOTIONS)
        if self.notion == "none":
            if self.epsilon != math.inf:
                raise InputError("argument 'epsilon' must be inf for notion 'none'")
        else:
            check_positive(self.epsilon, "epsilon")
            check_nonnegative(self.delta, "delta")
            if self.delta >= 1.0:
                raise InputError(f"argument 'delta' must be < 1, got {self.delta!r}")
            if self.delta > 0 and self.notion != "dp":
                raise InputError(f"argument 'delta' applies to notion 'dp' only, got {self.delta!r} for {self.notion!r}")

    @property
    def private(self) -> bool:
        """Whether the guarantee is a finite one."""
        return self.notion != "none"

    @property
    def text(self) -> str:
        """Short human form, e.g. ``"1-DP"``, ``"(0.5, 1e-05)-DP"``, ``"not private"``."""
        if not self.private:
            return "not private"
        label = {"dp": "DP", "ldp": "LDP", "mi-dp": "MI-DP", "mi-pp": "MI-PP"}[self.notion]
        eps = f"{self.epsilon:.4g}"
        if self.delta > 0:
            return f"({eps}, {self.delta:.3g})-{label}"
        return f"{eps}-{label}" + (" nats" if self.notion.startswith("mi") else "")

    def as_claim(self, origin: str = "") -> Claim | None:
        """The claim this guarantee makes (:mod:`mechanisms.claims.claim`); ``None`` when not private."""
        if not self.private:
            return None
        if self.notion == "dp":
            return DifferentialPrivacy(self.epsilon, self.delta, origin=origin)
        return {"ldp": LocalDP, "mi-dp": MIDP, "mi-pp": MIPP}[self.notion](self.epsilon, origin=origin)

    def to_dict(self) -> dict:
        """JSON-ready form; a missing guarantee has ``epsilon`` and ``delta`` ``None``."""
        # Not the field walk of estimators.result_forms: epsilon and delta depend on ``private``,
        # and unit and text are computed.
        return {
            "notion": self.notion,
            "epsilon": self.epsilon if self.private else None,
            "delta": self.delta if self.private else None,
            "unit": "nats" if self.notion.startswith("mi") else None,
            "private": self.private,
            "text": self.text,
            "note": self.note,
        }


def NOT_PRIVATE(note: str) -> Guarantee:  # noqa: N802 - reads as a constant at the call sites
    """The guarantee of a mechanism that is not private, with the reason in ``note``."""
    return Guarantee("none", math.inf, note=note)
