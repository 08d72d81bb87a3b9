"""The result of a noise calibration: the noise law, its scale and the rule that set it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from estimators.result_forms import fields_to_dict, headline_repr
from estimators.validation import InputError, plain

from mechanisms.calibration._inputs import attempt, noise_value
from mechanisms.calibration.noisy import NoisyMechanism


@dataclass(frozen=True)
class Calibration:
    """Noise calibrated for a privacy notion, in the style of ``scipy.stats`` results.

    Attributes
    ----------
    noise : str
        ``"laplace"`` (i.i.d. Lap(0, b) per coordinate) or ``"gaussian"`` (N(0, σ² I)).
    notion : str
        The guarantee: ``"mi-pp"``, ``"mi-dp"``, ``"mi-ap"`` (ε-MI attribute privacy),
        ``"dp"``, ``"approx-dp"``, ``"approx-pp"`` (structured (ε, δ)-PP) or
        ``"approx-ap"`` ((ε, δ) attribute privacy).
    epsilon : float
        The privacy parameter; for MI notions a bound in nats.
    delta : float or None
        δ of an approximate notion, else ``None``.
    dim : int
        Dimension of the noise vector (the query dimension d, or ℓ after a projection).
    scale : float
        Laplace scale b or Gaussian standard deviation σ.
    variance : float
        Noise variance per coordinate: 2b² (Laplace) or σ² (Gaussian).
    rule : str
        The theorem/corollary and formula that gave ``scale``.
    projection : str or None
        ``None`` (noise added to f(X)), ``"deterministic"`` (Theorem 5 part 1: a fixed
        d×ℓ matrix A) or ``"random-gaussian"`` (Theorem 5 part 2 with Remark 12's matrix).
    input_dim : int or None
        The query dimension d when a projection maps it to ``dim``.
    """

    noise: str
    notion: str
    epsilon: float
    delta: float | None
    dim: int
    scale: float
    variance: float
    rule: str
    projection: str | None = None
    input_dim: int | None = None

    @property
    def total_variance(self) -> float:
        """E‖Z‖² = dim × per-coordinate variance."""
        return self.dim * self.variance

    def to_dict(self) -> dict:
        """A JSON-ready dict of every field plus ``total_variance``."""
        return fields_to_dict(self, order=("noise", "notion", "epsilon", "delta", "dim", "scale", "variance",
                                           "total_variance"),
                              extra={"total_variance": self.total_variance}, null_nonfinite=False)

    def __repr__(self) -> str:
        return headline_repr(self, ("noise", "notion", "epsilon", "delta", "dim", "scale", "projection"))

    def mechanism(self, query, matrix=None):
        """The batched noisy mechanism f + Z (or Aᵀf + Z) with this noise.

        Parameters
        ----------
        query : callable
            ``query(dbs) -> (m, d)`` on database batches of shape ``(m, n, k)``.
        matrix : array_like of shape (d, ℓ), optional
            Required exactly when ``projection == "deterministic"``; must be the matrix
            whose column norms the calibration used.
        """
        if self.projection == "deterministic":
            if matrix is None:
                raise InputError("argument 'matrix' is required for a deterministic-projection calibration")
            projection = matrix
        else:
            if matrix is not None:
                raise InputError(f"argument 'matrix' is only used with a deterministic projection, "
                                 f"this calibration has projection={plain(self.projection)}")
            projection = "gaussian" if self.projection == "random-gaussian" else None
        return NoisyMechanism(query, self.noise, self.scale, self.dim, projection=projection,
                              input_dim=self.input_dim)


def laplace_calibration(b: float, *, log_b: float, notion, epsilon, delta, dim, rule, drivers) -> Calibration:
    """A Laplace :class:`Calibration` with scale b (variance 2b² per coordinate).

    ``b`` is the rule's formula as printed (NaN where it overflowed), ``log_b`` the same in log
    space; ``drivers`` names the arguments that set b, named when b, 2b² or the total variance
    is beyond the normal float range (see :func:`._inputs.noise_value`).
    """
    b = noise_value(b, log_b, "Laplace scale b", drivers)
    log_variance = math.log(2.0) + 2.0 * log_b
    variance = noise_value(attempt(lambda: 2.0 * b * b), log_variance, "Laplace variance 2b^2", drivers)
    noise_value(attempt(lambda: dim * variance), math.log(dim) + log_variance, "total noise variance", drivers)
    return Calibration("laplace", notion, float(epsilon), delta, int(dim), b, variance, rule)


def gaussian_calibration(variance: float, *, log_variance: float, notion, epsilon, delta, dim, rule, drivers,
                         projection=None, input_dim=None) -> Calibration:
    """A Gaussian :class:`Calibration` with per-coordinate variance σ² (as printed; NaN where it
    overflowed) or exp(``log_variance``), range-checked as in :func:`laplace_calibration`."""
    variance = noise_value(variance, log_variance, "Gaussian variance sigma^2", drivers)
    noise_value(attempt(lambda: dim * variance), math.log(dim) + log_variance, "total noise variance", drivers)
    return Calibration("gaussian", notion, float(epsilon), delta, int(dim), variance ** 0.5, variance, rule,
                       projection, input_dim)
