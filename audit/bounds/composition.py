"""Composition of ε-MI PP mechanisms.

Source: Nuradha and Goldfeld, Pufferfish Privacy: An Information-Theoretic Study
(IEEE Transactions on Information Theory, 2023):

- Theorem 2 (1): convexity — a mechanism that runs M_i with probability p_i is
  (Σ p_i ε_i)-MI PP (step (b) of the proof in Section VIII-B; the theorem states equal ε_i);
- Theorem 2 (3): adaptive composition — (Σ ε_i)-MI PP;
- Proposition 1: non-adaptive composition — (Σ ε_i + η)-MI PP with
  η = sup Σ_{i≥2} I(M_i; M^{i-1} | w, g);
- Remark 5: η ≤ Σ_{i≥2} log |spt M_i| (finite outputs) and, for log-concave one-dimensional
  mechanisms, η ≤ ½ Σ_{i≥2} E log(πe Var(M_i | g, w) / (2 Var(M_i | X))) (the paper prints 4 for the 2:
  see :func:`eta_bound_log_concave`);
- Corollary 1 (and Remark 6): η = 0, i.e. (Σ ε_i)-MI PP, when Θ ⊆ Θ_UC, or Θ_UC ⊆ Θ and the
  mechanisms are standard ε_i-PP (in particular when secrets specify databases, as for DP).

Every information value is in nats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from estimators.result_forms import fields_to_dict
from estimators.units import NATS
from estimators.validation import InputError, as_float_array, check_choice, plain
from mechanisms.papers import PUFFERFISH

__all__ = [
    "METHODS",
    "as_finite_vector",
    "CompositionBound",
    "compose_mi_pp",
    "eta_bound_finite_support",
    "eta_bound_log_concave",
]

METHODS = ("adaptive", "non-adaptive", "universally-composable", "mixture")

_SOURCES = {
    "adaptive": PUFFERFISH.cite("Theorem 2 (3)"),
    "non-adaptive": PUFFERFISH.cite("Proposition 1 with Remark 5"),
    "universally-composable": PUFFERFISH.cite("Corollary 1 / Remark 6"),
    "mixture": PUFFERFISH.cite("Theorem 2 (1) (proof, Section VIII-B)"),
}


@dataclass(frozen=True)
class CompositionBound:
    """The MI PP guarantee of a composition.

    Attributes
    ----------
    method : str
        One of :data:`METHODS`.
    mi_epsilon : float
        The composition is ``mi_epsilon``-MI PP.
    epsilon_sum : float
        Σ ε_i (for ``"mixture"``: Σ p_i ε_i).
    eta : float or None
        The η of Proposition 1 that was added (``"non-adaptive"`` only): the smallest of the
        upper bounds on η that were supplied or computed.
    eta_given : float or None
        η as supplied by the caller.
    eta_finite_support : float or None
        Remark 5's bound Σ_{i≥2} log |spt M_i|.
    eta_log_concave : float or None
        Remark 5's log-concave bound.
    unit : str
        Unit of every information field (``"nats"``).
    source : str
        The theorem used.
    """

    method: str
    mi_epsilon: float
    epsilon_sum: float
    eta: float | None = None
    eta_given: float | None = None
    eta_finite_support: float | None = None
    eta_log_concave: float | None = None
    unit: str = NATS
    source: str = ""

    INFORMATION_FIELDS = ("mi_epsilon", "epsilon_sum", "eta", "eta_given", "eta_finite_support", "eta_log_concave")

    def to_dict(self) -> dict:
        """A flat JSON-ready dict of the fields."""
        return fields_to_dict(self, null_nonfinite=False)


def as_finite_vector(values, name: str, *, length: int | None = None) -> np.ndarray:
    """A finite 1-D float array (a scalar becomes length 1), optionally of a given length.

    Raises :class:`InputError` naming ``name`` otherwise.
    """
    arr = np.atleast_1d(as_float_array(values, name, ndim=(0, 1), shape="(k,) or a single number", first_axis="entry"))
    if arr.size == 0:
        raise InputError(f"argument '{name}' must be a non-empty sequence of numbers")
    if length is not None and arr.size != length:
        raise InputError(f"argument '{name}' needs {length} values (one per mechanism), got {arr.size}")
    return arr


def eta_bound_finite_support(output_supports) -> float:
    """Remark 5: η ≤ Σ_{i≥2} log |spt(M_i(X))| (nats).

    Parameters
    ----------
    output_supports : sequence of int
        |spt(M_i(X))| for the mechanisms i = 2, ..., k (the first mechanism does not enter η).

    Returns
    -------
    float
        The bound on η of Proposition 1.
    """
    sizes = as_finite_vector(output_supports, "output_supports")
    if np.any(sizes < 1) or np.any(sizes != np.round(sizes)):
        raise InputError(f"argument 'output_supports' must hold integers >= 1, got {plain(sizes)}")
    return float(np.sum(np.log(sizes)))


def _log_concave_terms(outputs: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """½ log(πe Var(M_i | g, w) / (2 Var(M_i | X))) per mechanism: Gaussian maximum entropy above, the
    log-concave minimum ½ log(4 Var) below (:func:`eta_bound_log_concave`)."""
    return 0.5 * np.log(math.pi * math.e * outputs / (2.0 * noise))


def eta_bound_log_concave(output_variances, noise_variances) -> float:
    """Remark 5, with its constant corrected: η ≤ ½ Σ_{i≥2} log(πe Var(M_i | g, w) / (2 Var(M_i | X))) (nats).

    Holds when each M_i(X) given X is log-concave and one-dimensional (e.g. Laplace or
    Gaussian noise added to a scalar query): each term I(M_i; M^{i−1} | g, w) is at most
    h(M_i | g, w) − h(M_i | X), the Gaussian maximises entropy under a variance constraint,
    h(M_i | g, w) ≤ ½ log(2πe Var(M_i | g, w)), and log-concave densities have
    h(M_i | X) ≥ ½ log(4 Var(M_i | X)) (Marsiglietti and Kostina 2018, the paper's [44]), so the
    quotient is 2πe/4 = πe/2. The paper prints πe/4, ½ log 2 nats per term less than that
    argument gives, and that is not a bound: with M_1 = X + N(0, 10⁻⁴), M_2 = X + Exp(1) noise and
    X ~ N(0, 100), I(M_2; M_1) = 2.717 nats (exponentially modified Gaussian entropies) exceeds
    ½ log(πe·101/4) = 2.687 (``tests/test_bounds_pufferfish.py``).

    Parameters
    ----------
    output_variances : sequence of float
        For i = 2, ..., k, the (worst case over Θ and g ∼ w) Var(M_i(X) | g(X), w(X)). The
        paper averages the log over (g, w); by Jensen's inequality the mean variance also works
        when Var(M_i | X) is a constant, as for noise injection.
    noise_variances : sequence of float
        For i = 2, ..., k, Var(M_i(X) | X) (the injected noise variance).

    Returns
    -------
    float
        The bound on η of Proposition 1.
    """
    outputs = as_finite_vector(output_variances, "output_variances")
    noise = as_finite_vector(noise_variances, "noise_variances", length=outputs.size)
    if np.any(noise <= 0):
        raise InputError("argument 'noise_variances' must be > 0 (a log-concave density has positive variance)")
    # Law of total variance: Var(M|g,w) >= E[Var(M|X)]; a smaller value is an inconsistent input.
    if np.any(outputs < noise):
        raise InputError("argument 'output_variances' must be >= 'noise_variances' entrywise (law of total variance)")
    return float(np.sum(_log_concave_terms(outputs, noise)))


def compose_mi_pp(
    mi_epsilons,
    *,
    method: str = "adaptive",
    eta: float | None = None,
    output_supports=None,
    output_variances=None,
    noise_variances=None,
    weights=None,
) -> CompositionBound:
    """The MI PP level of a composition of ε_i-MI PP mechanisms M_1, ..., M_k.

    Parameters
    ----------
    mi_epsilons : sequence of float
        ε_1, ..., ε_k ≥ 0 (nats).
    method : {"adaptive", "non-adaptive", "universally-composable", "mixture"}
        ``"adaptive"``: Theorem 2 (3), each ε_i bounds I(g; M_i | w, M^{i-1}); total Σ ε_i.
        ``"non-adaptive"``: Proposition 1, mechanisms conditionally independent given X,
        each ε_i-MI PP on its own; total Σ ε_i + η. ``"universally-composable"``:
        Corollary 1 / Remark 6 (Θ ⊆ Θ_UC, secrets that specify databases, or Θ_UC ⊆ Θ with
        standard ε_i-PP mechanisms); total Σ ε_i. ``"mixture"``: Theorem 2 (1), M = M_I with
        P(I = i) = p_i; total Σ p_i ε_i.
    eta : float, optional
        ``"non-adaptive"``: η (or an upper bound on it) if known.
    output_supports : sequence of int, optional
        ``"non-adaptive"``: |spt(M_i(X))| for all k mechanisms (the first is not used: η sums
        over i ≥ 2); gives Remark 5's finite-support bound.
    output_variances, noise_variances : sequence of float, optional
        ``"non-adaptive"``: Var(M_i | g, w) and Var(M_i | X) for all k mechanisms (first not
        used); gives Remark 5's log-concave bound (one-dimensional log-concave mechanisms).
    weights : sequence of float, optional
        ``"mixture"``: the probabilities p_1, ..., p_k.

    Returns
    -------
    CompositionBound
        ``"non-adaptive"`` adds the smallest available bound on η; where both Remark 5 bounds
        are given they are combined term by term (η ≤ Σ_{i≥2} min of the two per-term bounds,
        since each term of η is bounded by either).
    """
    check_choice(method, "method", METHODS)
    eps = as_finite_vector(mi_epsilons, "mi_epsilons")
    if np.any(eps < 0):
        raise InputError(f"argument 'mi_epsilons' must be >= 0 (mutual information), got {plain(eps)}")
    k = eps.size
    non_adaptive_inputs = {"eta": eta, "output_supports": output_supports,
                           "output_variances": output_variances, "noise_variances": noise_variances}
    if method != "non-adaptive":
        given = [name for name, value in non_adaptive_inputs.items() if value is not None]
        if given:
            raise InputError(f"argument '{given[0]}' applies only to method='non-adaptive', not {plain(method)}")
    if method != "mixture" and weights is not None:
        raise InputError(f"argument 'weights' applies only to method='mixture', not {plain(method)}")

    if method == "mixture":
        if weights is None:
            raise InputError("argument 'weights' is required for method='mixture'")
        p = as_finite_vector(weights, "weights", length=k)
        if np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, abs_tol=1e-9):
            raise InputError(f"argument 'weights' must be a probability vector (>= 0, summing to 1), got {plain(p)}")
        total = float(p @ eps)
        return CompositionBound(method, total, total, source=_SOURCES[method])

    total = float(eps.sum())
    if method != "non-adaptive":
        return CompositionBound(method, total, total, source=_SOURCES[method])
    return _non_adaptive(eps, eta, output_supports, output_variances, noise_variances)


def _non_adaptive(eps, eta, output_supports, output_variances, noise_variances) -> CompositionBound:
    k = eps.size
    if eta is None and output_supports is None and output_variances is None and noise_variances is None:
        raise InputError("method='non-adaptive' needs 'eta', 'output_supports', or "
                         "'output_variances' with 'noise_variances' (Proposition 1, Remark 5)")
    if (output_variances is None) != (noise_variances is None):
        missing = "noise_variances" if noise_variances is None else "output_variances"
        raise InputError(f"argument '{missing}' is required with the log-concave bound of Remark 5")

    eta_given = None
    if eta is not None:
        eta_given = float(as_finite_vector(eta, "eta", length=1)[0])
        if eta_given < 0:
            raise InputError(f"argument 'eta' must be >= 0 (a sum of mutual informations), got {plain(eta)}")
    per_term = []  # per mechanism i >= 2: the Remark 5 bounds supplied for I(M_i; M^{i-1} | w, g)
    finite = log_concave = None
    if output_supports is not None:
        sizes = as_finite_vector(output_supports, "output_supports", length=k)[1:]
        finite = eta_bound_finite_support(sizes) if k > 1 else 0.0
        per_term.append(np.log(sizes))
    if output_variances is not None:
        outputs = as_finite_vector(output_variances, "output_variances", length=k)[1:]
        noise = as_finite_vector(noise_variances, "noise_variances", length=k)[1:]
        log_concave = eta_bound_log_concave(outputs, noise) if k > 1 else 0.0
        per_term.append(_log_concave_terms(outputs, noise))
    candidates = [eta_given] if eta_given is not None else []
    if per_term:
        candidates.append(float(np.sum(np.min(np.vstack(per_term), axis=0))))
    eta_used = min(candidates)
    return CompositionBound(
        "non-adaptive", float(eps.sum()) + eta_used, float(eps.sum()), eta=eta_used, eta_given=eta_given,
        eta_finite_support=finite, eta_log_concave=log_concave, source=_SOURCES["non-adaptive"],
    )
