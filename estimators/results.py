"""The result type of every MI estimate, in the style of ``scipy.stats`` result objects."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .result_forms import fields_to_dict, headline_repr
from .units import NATS, UNITS, convert
from .validation import InputError, check_choice


@dataclass(frozen=True)
class MIEstimate:
    """An estimate of (sliced) mutual information with its evidence.

    Attributes
    ----------
    estimator : str
        The base estimator (``"dv"``, ``"mine"``, ``"nwj"``, ``"ksg"``, ``"gaussian"``, ``"plugin"``).
    value : float
        Point estimate, on data the estimator did not fit (neural estimators: the test split).
    unit : str
        ``"nats"`` or ``"bits"``; every information field below is in this unit.
    lower_bound : float or None
        Certified lower bound on the estimated quantity, holding with probability at least
        ``confidence`` over the data; ``None`` when the estimator cannot certify.
    confidence : float or None
        ``1 - alpha`` for ``lower_bound`` (``None`` when there is no bound).
    stderr : float or None
        Standard error of ``value``: across slices for sliced MI, else from the test-split sample.
    n : int
        Number of samples used.
    seconds : float
        Wall-clock time of the estimation.
    sliced : bool
        Whether ``value`` is sliced MI (Goldfeld and Greenewald 2021; Eq. (5) of the Pufferfish paper).
    slices : int or None
        Number of Monte Carlo slices p (Eq. (7)).
    per_slice : ndarray or None
        Per-slice estimates, shape ``(p,)``.
    per_slice_lower_bounds : ndarray or None
        Per-slice certified lower bounds, valid simultaneously with probability ``confidence``.
    max_slice_lower_bound : float or None
        The largest per-slice bound: by data processing also a certified lower bound on the
        full MI I(X; Y) at the same confidence.
    details : dict
        Estimator-specific diagnostics (hyper-parameters, training curves, split sizes).
    notes : tuple of str
        What a reader of the number must know about how it was obtained (e.g. that KSG broke
        ties in the data with tiny seeded noise).

    Raises
    ------
    InputError
        On construction, when ``value`` or a certified field is NaN: a number that could not
        be computed is never reported (and a certified bound is never NaN).

    Examples
    --------
    >>> estimate = MIEstimate("ksg", 0.5, n=1000)
    >>> estimate
    MIEstimate(estimator='ksg', value=0.5, unit='nats', n=1000)
    >>> estimate.to("bits")  # 0.5 / log 2
    MIEstimate(estimator='ksg', value=0.721348, unit='bits', n=1000)
    """

    estimator: str
    value: float
    unit: str = NATS
    lower_bound: float | None = None
    confidence: float | None = None
    stderr: float | None = None
    n: int = 0
    seconds: float = 0.0
    sliced: bool = False
    slices: int | None = None
    per_slice: np.ndarray | None = None
    per_slice_lower_bounds: np.ndarray | None = None
    max_slice_lower_bound: float | None = None
    details: dict = field(default_factory=dict)
    notes: tuple = ()

    _INFO_FIELDS = ("value", "lower_bound", "stderr", "per_slice", "per_slice_lower_bounds", "max_slice_lower_bound")
    # The JSON contract's order (README, ``miaudit estimate``); ``details`` follows when asked for.
    _JSON_ORDER = ("estimator", "sliced", "slices", "value", "unit", "lower_bound", "confidence", "stderr", "n",
                   "seconds", "per_slice", "per_slice_lower_bounds", "max_slice_lower_bound", "notes")

    def __post_init__(self):
        for name in ("value", "lower_bound", "per_slice", "per_slice_lower_bounds", "max_slice_lower_bound"):
            values = getattr(self, name)
            if values is not None and np.isnan(np.asarray(values, dtype=np.float64)).any():
                raise InputError(f"the {self.estimator} estimate could not be computed on these data ({name} is NaN)")
        object.__setattr__(self, "notes", tuple(self.notes))

    def to(self, unit: str) -> "MIEstimate":
        """Return the same result with every information field converted to ``unit``."""
        check_choice(unit, "unit", UNITS)
        changes = {name: convert(getattr(self, name), self.unit, unit) for name in self._INFO_FIELDS}
        return dataclasses.replace(self, unit=unit, **changes)

    def to_dict(self, *, include_details: bool = False) -> dict:
        """A JSON-ready dict (arrays become lists, non-finite numbers become ``None``)."""
        return fields_to_dict(self, order=self._JSON_ORDER, exclude=() if include_details else ("details",))

    def __repr__(self) -> str:
        names = ("estimator", "value", "unit", "lower_bound", "confidence", "stderr", "n")
        return headline_repr(self, names + (("slices",) if self.sliced else ()))
