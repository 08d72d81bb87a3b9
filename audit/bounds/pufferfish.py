"""Conversions between Pufferfish privacy (PP) and mutual-information PP (MI PP).

Source: Nuradha and Goldfeld, Pufferfish Privacy: An Information-Theoretic Study
(IEEE Transactions on Information Theory, 2023): Theorem 1 and its proof
(Section VIII-A, formula (4)), Remark 4 (KL PP), Propositions 7-8 (utility). DP is the special
case of PP with Θ = all distributions and secrets = single rows (Remark 2), so every
statement here applies to DP / MI DP as well. Composition (Theorem 2, Proposition 1,
Remark 5, Corollary 1) is in :mod:`audit.bounds.composition`. The ``miaudit bounds``
calculators over these functions are in :mod:`audit.cli.bounds_calculators.pufferfish`.

Information values (MI PP levels, entropies) are in nats; ε and δ of classic PP / DP are
not information values and carry no unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import entr, rel_entr

from estimators.result_forms import fields_to_dict
from estimators.units import NATS
from estimators.validation import (
    InputError,
    check_choice,
    check_finite_number,
    check_int,
    check_nonnegative,
    check_positive,
    plain,
)

from audit.bounds.composition import as_finite_vector
from mechanisms.papers import PUFFERFISH

__all__ = [
    "DensityConstants",
    "KLPPLevels",
    "MIPPToPP",
    "UtilityBounds",
    "approx_pp_to_mipp",
    "binary_entropy",
    "density_constants",
    "dp_epsilon_lower_bound_from_mi",
    "kl_pp_levels",
    "mipp_to_pp",
    "pp_to_mipp",
    "tv_bound_from_approx_pp",
    "utility_bounds",
]

THEOREM_1 = PUFFERFISH.cite("Theorem 1")


# ---------------------------------------------------------------------------------------------
# Theorem 1: ε-PP  =>  (ε ∧ ε²/2)-MI PP  =>  (ε', √(2ε''))-PP
# ---------------------------------------------------------------------------------------------


def pp_to_mipp(epsilon: float) -> float:
    """ε-PP implies ε''-MI PP with ε'' = ε ∧ ε²/2 (nats).

    Source: Theorem 1 (first implication); via Remark 4 the same ε'' bounds the KL PP level.
    With Θ = all distributions and row secrets this is ε-DP ⇒ ε''-MI DP.

    Parameters
    ----------
    epsilon : float
        The PP (or DP) parameter ε > 0 (not an information value).

    Returns
    -------
    float
        ε'' in nats.
    """
    eps = check_positive(epsilon, "epsilon")
    return min(eps, 0.5 * eps * eps)


def dp_epsilon_lower_bound_from_mi(mi_lower_bound: float) -> float:
    """The smallest ε that a certified MI lower bound L leaves possible for ε-DP / ε-PP.

    By Theorem 1, ε-DP implies min(ε, ε²/2)-MI DP, so a certified I ≥ L rules out ε-DP for
    every ε with min(ε, ε²/2) < L. This returns the smallest ε with min(ε, ε²/2) ≥ L:
    √(2L) for 0 < L ≤ 2 and L for L > 2 (the map is increasing, ε²/2 ≤ ε exactly when ε ≤ 2).

    Parameters
    ----------
    mi_lower_bound : float
        Certified lower bound L on the MI (nats). L ≤ 0 certifies nothing.

    Returns
    -------
    float
        The DP lower bound; 0.0 when L ≤ 0.
    """
    bound = check_finite_number(mi_lower_bound, "mi_lower_bound")
    if bound <= 0.0:
        return 0.0
    return math.sqrt(2.0 * bound) if bound <= 2.0 else bound


@dataclass(frozen=True)
class MIPPToPP:
    """ε''-MI PP ⇒ (ε', δ)-PP when Θ = all distributions (Theorem 1).

    Attributes
    ----------
    mi_epsilon : float
        ε'' (nats).
    epsilon_prime : float
        ε' ≥ 0; the statement holds for every ε' (the proof gives (0, δ)-PP).
    delta : float
        δ = √(2ε''). A value ≥ 1 is vacuous (δ-terms are probabilities).
    vacuous : bool
        ``delta >= 1``.
    unit : str
        Unit of ``mi_epsilon``.
    source : str
        The theorem used.
    """

    mi_epsilon: float
    epsilon_prime: float
    delta: float
    vacuous: bool
    unit: str = NATS
    source: str = THEOREM_1 + " (second implication, Θ = all distributions)"

    def to_dict(self) -> dict:
        """A flat JSON-ready dict of the fields."""
        return fields_to_dict(self, null_nonfinite=False)


def mipp_to_pp(mi_epsilon: float, epsilon_prime: float = 0.0) -> MIPPToPP:
    """ε''-MI PP implies (ε', √(2ε''))-PP for every ε' ≥ 0, when Θ = all distributions.

    Source: Theorem 1 (second implication); proof: minimax redundancy-capacity (10), then
    Pinsker and the triangle inequality give TV ≤ √(2ε''), i.e. (0, √(2ε''))-PP. The condition
    Θ = P(X^{n×k}) is the caller's to check (it holds for MI DP).

    Parameters
    ----------
    mi_epsilon : float
        ε'' ≥ 0 (nats).
    epsilon_prime : float, optional
        ε' ≥ 0 to pair with δ (default 0: the strongest statement).

    Returns
    -------
    MIPPToPP
    """
    mi = check_nonnegative(mi_epsilon, "mi_epsilon")
    eps_prime = check_nonnegative(epsilon_prime, "epsilon_prime")
    delta = math.sqrt(2.0 * mi)
    return MIPPToPP(mi, eps_prime, delta, delta >= 1.0)


# ---------------------------------------------------------------------------------------------
# Theorem 1, inverse: (ε, δ)-PP  =>  ε*-MI PP
# ---------------------------------------------------------------------------------------------


def binary_entropy(p: float) -> float:
    """h_b(p) = −p log p − (1−p) log(1−p) in nats, with 0 log 0 = 0 (as in Theorem 1)."""
    prob = check_finite_number(p, "p")
    if not 0.0 <= prob <= 1.0:
        raise InputError(f"argument 'p' must be in [0, 1], got {plain(p)}")
    return float(entr(prob) + entr(1.0 - prob))


def _check_delta(delta) -> float:
    value = check_finite_number(delta, "delta")
    if not 0.0 <= value < 1.0:
        raise InputError(f"argument 'delta' must be in [0, 1), got {plain(delta)}")
    return value


def tv_bound_from_approx_pp(epsilon: float, delta: float) -> float:
    """(ε, δ)-PP implies (0, δ')-PP, i.e. TV ≤ δ', with δ' = 1 − 2(1−δ)/(e^ε + 1).

    Source: proof of Theorem 1 (Section VIII-A), adapting Property 3 of Cuff and Yu (2016).

    Parameters
    ----------
    epsilon : float
        ε ≥ 0 (ε = 0 is allowed here: (0, δ)-PP is a meaningful guarantee and gives δ' = δ).
    delta : float
        δ in [0, 1).

    Returns
    -------
    float
        δ' in [0, 1).
    """
    eps = check_nonnegative(epsilon, "epsilon")
    dlt = _check_delta(delta)
    # 2/(e^ε + 1) written with exp(-ε) so that a large ε does not overflow.
    return 1.0 - 2.0 * (1.0 - dlt) * math.exp(-eps) / (1.0 + math.exp(-eps))


@dataclass(frozen=True)
class DensityConstants:
    """The constants α, β, u, ℓ of Theorem 1, Part 2, for one mechanism and prior.

    Attributes
    ----------
    alpha : ndarray
        α_{a,b,c} = 1 / sup_x f(x|a,c)/f(x|b,c), one per ordered pair a ≠ b and public value c.
    beta : ndarray
        β_{a,b,c} = inf_x f(x|a,c)/f(x|b,c), aligned with ``alpha``.
    u : ndarray
        u_{a,c} = sup_x f(x|a,c) (conditional instead of joint density: only u/ℓ enters and the
        factor P(g=a, w=c) cancels), one per (c, a).
    ell : ndarray
        ℓ_{a,c} = inf_x f(x|a,c), aligned with ``u``.
    """

    alpha: np.ndarray
    beta: np.ndarray
    u: np.ndarray
    ell: np.ndarray

    def to_dict(self) -> dict:
        """JSON-ready lists."""
        return fields_to_dict(self, null_nonfinite=False)


def density_constants(conditional_densities) -> DensityConstants:
    """α, β, u, ℓ of Theorem 1 (Part 2) for a discretized mechanism.

    Parameters
    ----------
    conditional_densities : array_like, shape (k, n) or (c, k, n)
        f_{M(X)|g(X),w(X)}(x | a, c) on n output grid points x, for the k secret values a (and
        c public values). Entries must be finite and ≥ 0. spt(M(X)) is taken as the grid points
        where any entry is positive.

    Returns
    -------
    DensityConstants
        α = 0 (or ℓ = 0) marks an unbounded likelihood (or density) ratio on the support; the
        corresponding component of formula (4) is then infinite.
    """
    dens = np.asarray(conditional_densities, dtype=np.float64)
    if dens.ndim == 2:
        dens = dens[None]
    if dens.ndim != 3 or dens.shape[1] < 2 or dens.shape[2] < 1:
        raise InputError("argument 'conditional_densities' must have shape (k, n) or (c, k, n) with k >= 2 "
                         f"secret values, got shape {np.shape(conditional_densities)}")
    if not np.all(np.isfinite(dens)) or np.any(dens < 0):
        raise InputError("argument 'conditional_densities' must be finite and >= 0")
    if np.any(dens.sum(axis=2) <= 0):
        raise InputError("argument 'conditional_densities' has a row that is zero everywhere")
    on_support = np.any(dens > 0, axis=(0, 1))
    dens = dens[:, :, on_support]
    # ratio[c, a, b, x] = f(x|a,c) / f(x|b,c); 0/0 never occurs on the support of a row pair
    # that matters, and x/0 = inf is the unbounded ratio the theorem's sup then sees.
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = dens[:, :, None, :] / dens[:, None, :, :]
    ratio = np.where(np.isnan(ratio), 1.0, ratio)  # both densities 0 at x: no constraint there
    k = dens.shape[1]
    pairs = ~np.eye(k, dtype=bool)
    sup_ratio = ratio.max(axis=3)[:, pairs]
    alpha = np.where(np.isinf(sup_ratio), 0.0, 1.0 / sup_ratio)
    beta = ratio.min(axis=3)[:, pairs]
    return DensityConstants(alpha.ravel(), beta.ravel(), dens.max(axis=2).ravel(), dens.min(axis=2).ravel())


def _reverse_pinsker_term(alpha, beta) -> float:
    """sup (log(1/α)/(1−α) − β) over the supplied (α, β) pairs: formula (4)'s first term, doubled.

    The proof of Theorem 1 (Part 2) uses Sason's reverse Pinsker inequality (Sason 2015, "On
    reverse Pinsker inequalities", Theorem 1): D(P‖Q) ≤ ½(log(1/β₁)/(1−β₁) − β₂)·|P − Q|, where
    |P − Q| is the L1 distance (Sason's Pinsker inequality, his (1), reads D ≥ ½|P − Q|² in nats),
    i.e. twice the total variation δ' bounds. The paper multiplies by δ'/2, which is not a bound
    on the divergence: P = (½, ½), Q = (0.1, 0.9) have D = 0.511 nats and TV = 0.4, and the
    printed form gives 0.291 (Sason's, in TV: 0.582). No counterexample to the paper's MI-level
    statement was found, but its argument proves only the doubled term, which is what is used.
    """
    a = as_finite_vector(alpha, "alpha")
    b = as_finite_vector(beta, "beta")
    if a.shape != b.shape:
        raise InputError(f"arguments 'alpha' and 'beta' must have the same length, got {a.size} and {b.size}")
    if np.any((a < 0) | (a > 1)):
        raise InputError("argument 'alpha' must be in [0, 1] (α⁻¹ is a sup of a likelihood ratio, >= 1)")
    if np.any((b < 0) | (b > 1)):
        raise InputError("argument 'beta' must be in [0, 1] (an inf of a likelihood ratio, <= 1)")
    with np.errstate(divide="ignore", invalid="ignore"):
        # log(1/α)/(1−α) → 1 as α → 1 (identical densities); → ∞ as α → 0.
        factor = np.where(a == 1.0, 1.0, -np.log(a) / (1.0 - a))
    return float(np.max(factor - b))


def _log_density_range(u, ell) -> float:
    """sup log(u/ℓ) over the supplied (u, ℓ) pairs (formula (4); Lemma 1's γ).

    Lemma 1 (from Xu 2021, arXiv:2012.15829, Corollary 12) holds with the total variation
    sup_A |P(A) − Q(A)|, the same convention as δ', so ε₂* = δ'·γ carries no factor 2. A
    direct proof: I(g; M) = Σ_a p_a [h(P̄) − h(P_a)] and h(P̄) − h(P_a) =
    ∫(p_a − p̄)(log p_a − c) − D(P̄‖P_a) for any constant c; with c the midpoint of
    [log ℓ_a, log u_a], |log p_a − c| ≤ ½ log(u_a/ℓ_a), so the term is at most
    ½‖P_a − P̄‖₁ log(u_a/ℓ_a) = TV(P_a, P̄)·log(u_a/ℓ_a), and TV(P_a, P̄) ≤ δ' by convexity.
    """
    hi = as_finite_vector(u, "u")
    lo = as_finite_vector(ell, "ell")
    if hi.shape != lo.shape:
        raise InputError(f"arguments 'u' and 'ell' must have the same length, got {hi.size} and {lo.size}")
    if np.any(lo < 0) or np.any(hi <= 0):
        raise InputError("arguments 'u' and 'ell' must satisfy u > 0 and ell >= 0")
    if np.any(lo > hi):
        raise InputError("argument 'ell' must be <= 'u' (an inf and a sup of the same density)")
    with np.errstate(divide="ignore"):
        return float(np.max(np.log(hi / lo)))


APPROX_METHODS = ("finite", "density")


def approx_pp_to_mipp(
    epsilon: float,
    delta: float,
    *,
    method: str = "finite",
    output_support: int | None = None,
    secret_values: int | None = None,
    alpha=None,
    beta=None,
    u=None,
    ell=None,
) -> float:
    """(ε, δ)-PP implies ε*-MI PP (nats): the inverse implication of Theorem 1.

    With δ' = 1 − 2(1−δ)/(e^ε+1) (:func:`tv_bound_from_approx_pp`):

    - ``method="finite"`` (Part 1, |spt M(X)| < ∞ or max |Im g| < ∞):
      ε* = 2 h_b(δ') + 2 δ' log(|spt M(X)| ∧ (max_g |Im g| + 1)); for δ' ≥ ½, where h_b
      decreases, it is still a bound, trivially: 2δ' log N ≥ log N, and the MI is at most
      log |spt M(X)| and at most H(g) ≤ log |Im g|;
    - ``method="density"`` (Part 2, formula (4)):
      ε* = δ' · [sup (log(α⁻¹)/(1−α) − β) ∧ sup log(u/ℓ)]; each bracketed term alone is also
      a valid bound (ε₁* and ε₂* in the proof), so either pair may be omitted. The first term is
      twice the paper's printed ½(…): the reverse Pinsker inequality it rests on bounds the
      divergence by the L1 distance, twice the total variation δ' (see
      :func:`_reverse_pinsker_term`).

    Parameters
    ----------
    epsilon : float
        ε ≥ 0 (not an information value).
    delta : float
        δ in [0, 1).
    method : {"finite", "density"}
    output_support : int, optional
        |spt(M(X))| ≥ 2 (``"finite"``).
    secret_values : int, optional
        max_g |Im(g)| ≥ 2 (``"finite"``). At least one of the two is needed.
    alpha, beta : float or sequence of float, optional
        ``"density"``: α_{a,b,c} ∈ [0, 1] and β_{a,b,c} ∈ [0, 1], one per (a, b, c) (the
        sup is taken here), e.g. from :func:`density_constants`.
    u, ell : float or sequence of float, optional
        ``"density"``: u_{a,c} > 0 and ℓ_{a,c} ∈ [0, u], aligned.

    Returns
    -------
    float
        ε* in nats (``inf`` when the only density term supplied is unbounded).
    """
    check_choice(method, "method", APPROX_METHODS)
    delta_prime = tv_bound_from_approx_pp(epsilon, delta)
    if method == "finite":
        if alpha is not None or beta is not None or u is not None or ell is not None:
            raise InputError("arguments 'alpha', 'beta', 'u', 'ell' apply only to method='density'")
        sizes = []
        if output_support is not None:
            sizes.append(check_int(output_support, "output_support", minimum=2))
        if secret_values is not None:
            sizes.append(check_int(secret_values, "secret_values", minimum=2) + 1)
        if not sizes:
            raise InputError("method='finite' needs 'output_support' or 'secret_values' (Theorem 1, Part 1)")
        return 2.0 * binary_entropy(delta_prime) + 2.0 * delta_prime * math.log(min(sizes))

    if output_support is not None or secret_values is not None:
        raise InputError("arguments 'output_support' and 'secret_values' apply only to method='finite'")
    terms = []
    if alpha is not None or beta is not None:
        if alpha is None or beta is None:
            raise InputError(f"argument '{'beta' if beta is None else 'alpha'}' is required with the other")
        terms.append(_reverse_pinsker_term(alpha, beta))
    if u is not None or ell is not None:
        if u is None or ell is None:
            raise InputError(f"argument '{'ell' if ell is None else 'u'}' is required with the other")
        terms.append(_log_density_range(u, ell))
    if not terms:
        raise InputError("method='density' needs 'alpha' with 'beta', or 'u' with 'ell' (formula (4))")
    return delta_prime * min(terms)


# ---------------------------------------------------------------------------------------------
# Remark 4: ε-PP  =>  ε''-KL PP  =>  ε''-MI PP, measured on a discrete mechanism
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KLPPLevels:
    """The PP, KL PP and MI levels of one discrete conditional table (Remark 4's sandwich).

    Remark 4: mi ≤ kl_epsilon ≤ mi_epsilon_from_pp = pp_epsilon ∧ pp_epsilon²/2.

    Attributes
    ----------
    pp_epsilon : float
        max_{a≠b, y} log P(y|a)/P(y|b): the smallest ε for ε-PP on this slice (∞ if unbounded).
    kl_epsilon : float
        max_{a≠b} D_KL(P(·|a) ‖ P(·|b)) (nats): the KL PP level.
    mi : float
        I(g(X); M(X) | w(X) = c) under the given prior on the secret (nats).
    mi_epsilon_from_pp : float
        Theorem 1's bound pp_epsilon ∧ pp_epsilon²/2.
    unit : str
        Unit of the information fields.
    """

    pp_epsilon: float
    kl_epsilon: float
    mi: float
    mi_epsilon_from_pp: float
    unit: str = NATS

    def to_dict(self) -> dict:
        """A flat JSON-ready dict of the fields."""
        return fields_to_dict(self, null_nonfinite=False)


def kl_pp_levels(conditionals, prior=None) -> KLPPLevels:
    """PP, KL PP and MI levels of a mechanism with finitely many outputs (Remark 4).

    Parameters
    ----------
    conditionals : array_like, shape (k, n)
        Row a is P(M(X) = y | g(X) = a, w(X) = c) over n outputs, k ≥ 2 secret values; rows
        are probability vectors.
    prior : array_like, shape (k,), optional
        P(g(X) = a | w(X) = c), positive (default uniform).

    Returns
    -------
    KLPPLevels
    """
    table = np.asarray(conditionals, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] < 2:
        raise InputError(f"argument 'conditionals' must have shape (k, n) with k >= 2, got {table.shape}")
    if not np.all(np.isfinite(table)) or np.any(table < 0) or not np.allclose(table.sum(axis=1), 1.0, atol=1e-9):
        raise InputError("argument 'conditionals' must be row-stochastic (finite, >= 0, rows summing to 1)")
    k = table.shape[0]
    weights = np.full(k, 1.0 / k) if prior is None else np.asarray(prior, dtype=np.float64)
    if (weights.shape != (k,) or not np.all(np.isfinite(weights)) or np.any(weights <= 0)
            or not math.isclose(float(weights.sum()), 1.0, abs_tol=1e-9)):
        raise InputError(f"argument 'prior' must be a positive probability vector of length {k}")
    pairs = ~np.eye(k, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(table[:, None, :]) - np.log(table[None, :, :])
    log_ratio = np.where(table[:, None, :] > 0, log_ratio, -np.inf)  # outputs a never emits do not count
    pp = float(log_ratio[pairs].max())
    kl = float(rel_entr(table[:, None, :], table[None, :, :]).sum(axis=2)[pairs].max())
    marginal = weights @ table
    mi = float(weights @ rel_entr(table, marginal[None, :]).sum(axis=1))
    return KLPPLevels(pp, kl, mi, min(pp, 0.5 * pp * pp))


# ---------------------------------------------------------------------------------------------
# Propositions 7-8: utility of ε-MI PP mechanisms from entropies
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UtilityBounds:
    """Bounds on the largest utility I(f(X); M(X)) of an ε-MI PP mechanism (Θ = {P_X}, W = ∅).

    Attributes
    ----------
    upper_bound : float
        Proposition 7: U_2^ε ≤ U_1^ε ≤ H(f|g) + ε.
    lower_bound : float
        Proposition 8: U_1^ε ≥ L_1 ∨ L_2 (existence of such a mechanism).
    lower_bound_1, lower_bound_2 : float
        L_1 = H(f|g) − H(g|f) + ε and L_2 = H(f|g) − αH(g|f) + ε − (1−α)(log(I(g;f)+1) + 4).
    alpha : float
        α = ε / H(g).
    unit : str
        Unit of the information fields.
    """

    upper_bound: float
    lower_bound: float
    lower_bound_1: float
    lower_bound_2: float
    alpha: float
    unit: str = NATS

    def to_dict(self) -> dict:
        """A flat JSON-ready dict of the fields."""
        return fields_to_dict(self, null_nonfinite=False)


def utility_bounds(mi_epsilon: float, *, h_f_given_g: float, h_g_given_f: float, h_g: float) -> UtilityBounds:
    """Propositions 7 and 8 (Lemma 8 and Theorem 2 of the paper's [55]), in nats.

    Valid for 0 ≤ ε < I(g(X); f(X)) = H(g) − H(g|f), with finite ranges of f and g. L_2's term
    ``log(I + 1) + 4`` is the strong functional representation lemma's bound (Li and El Gamal 2018,
    Theorem 1: I(X; Z | Y) ≤ log(I(X; Y) + 1) + 4 *bits*), which the paper prints without a unit.
    It is converted here, not reread in nats: (log₂(I/ln 2 + 1) + 4) bits = ln(I/ln 2 + 1) + 4 ln 2
    nats, with I in nats. Reading the printed ``+ 4`` as nats also gives a valid bound (its term is
    larger by at least 4(1 − ln 2) + ln ln 2 ≈ 0.86 nats) but a looser one.

    Parameters
    ----------
    mi_epsilon : float
        The MI PP budget ε (nats).
    h_f_given_g, h_g_given_f, h_g : float
        H(f(X) | g(X)), H(g(X) | f(X)), H(g(X)) in nats.

    Returns
    -------
    UtilityBounds
    """
    eps = check_nonnegative(mi_epsilon, "mi_epsilon")
    hfg = check_nonnegative(h_f_given_g, "h_f_given_g")
    hgf = check_nonnegative(h_g_given_f, "h_g_given_f")
    hg = check_nonnegative(h_g, "h_g")
    if hgf > hg:
        raise InputError(f"argument 'h_g_given_f' must be <= 'h_g' (conditioning reduces entropy), got {hgf} > {hg}")
    info = hg - hgf
    if not eps < info:
        raise InputError(f"argument 'mi_epsilon' must be < I(g;f) = h_g - h_g_given_f = {info:.6g}, got {eps:.6g}")
    alpha = eps / hg
    lower_1 = hfg - hgf + eps
    # the SFRL term, stated in bits by its source, in nats: ln 2 · (log₂(I_bits + 1) + 4)
    sfrl_term = math.log(info / math.log(2.0) + 1.0) + 4.0 * math.log(2.0)
    lower_2 = hfg - alpha * hgf + eps - (1.0 - alpha) * sfrl_term
    return UtilityBounds(hfg + eps, max(lower_1, lower_2), lower_1, lower_2, alpha)
