"""``miaudit bounds`` calculators for the local-MI paper (LMIP ⇔ LDP, LMIP ⇔ LIP).

Ngo, Östman and Graell i Amat, Local Mutual-Information Differential Privacy
(arXiv:2405.07596v1, 2024). The paper and the library functions work in bits
(:mod:`audit.bounds.local_mi`, :mod:`mechanisms.constructions.gaussian_capacity`,
:mod:`mechanisms.constructions.gaussian_discrete_input`); these calculators take and print μ and capacities in nats,
the project default, unless ``--bits`` is given. ε and δ are unit-free.
"""

from __future__ import annotations

from estimators.units import BITS, convert
from estimators.validation import InputError, check_nonnegative
from mechanisms.papers import LOCAL_MI

from audit.cli.bounds_calculators.common import Calculator, integer, number, number_list, positive_flags, unit

# The maths modules load SciPy: they are imported where a calculator computes, so that
# `miaudit bounds --help` and its usage errors load neither SciPy nor torch (issue 13, §3).

__all__ = ["CALCULATORS"]


def _mu_bits(args) -> float:
    """The --mu flag in bits (it was given in the unit the --bits flag selects)."""
    return convert(check_nonnegative(args.mu, "--mu"), unit(args), BITS)


def _to_user_unit(value_bits: float, args) -> float:
    return convert(value_bits, BITS, unit(args))


def _add_mu(parser) -> None:
    parser.add_argument("--mu", type=number, required=True, help="LMIP parameter μ >= 0 (nats; bits with --bits)")


def _add_epsilon(parser) -> None:
    parser.add_argument("--epsilon", type=number, required=True, help="privacy parameter ε > 0")


def _add_discrete_input(parser) -> None:
    parser.add_argument("--sigma", type=number, required=True, help="Gaussian noise standard deviation σ")
    parser.add_argument("--support", type=str, required=True, help="input points x1,x2,... (scalar inputs)")
    parser.add_argument("--pmf", type=str, required=True, help="their probabilities p1,p2,... (sum to 1)")


def _discrete_input(args):
    return number_list(args.support, "--support"), number_list(args.pmf, "--pmf")


# -- bac-capacity --------------------------------------------------------------------------

def _bac_configure(parser) -> None:
    parser.add_argument("--p0", type=number, required=True, help="crossover probability ε0 = P[B=1 | A=0]")
    parser.add_argument("--p1", type=number, required=True, help="crossover probability ε1 = P[B=0 | A=1]")


def _bac_compute(args) -> dict:
    from audit.bounds.local_mi.binary import as_unit_interval, bac_capacity_bits

    p0, p1 = as_unit_interval(args.p0, "--p0"), as_unit_interval(args.p1, "--p1")
    capacity = bac_capacity_bits(p0, p1)
    return {"p0": args.p0, "p1": args.p1, "capacity": _to_user_unit(capacity, args), "unit": unit(args),
            "source": LOCAL_MI.cite("Eq. (7) (binary asymmetric channel capacity)")}


# -- LMIP → LDP / LIP --------------------------------------------------------------------------

def _mu_eps_configure(parser) -> None:
    _add_mu(parser)
    _add_epsilon(parser)


def _ldp_from_lmip(args) -> dict:
    from audit.bounds.local_mi.conversions import ldp_delta_from_lmip_bits

    delta = ldp_delta_from_lmip_bits(_mu_bits(args), args.epsilon)
    return {"mu": args.mu, "epsilon": args.epsilon, "delta": delta, "unit": unit(args),
            "source": LOCAL_MI.cite("Theorem 1(a), Eq. (6)")}


def _ldp_floor(args) -> dict:
    from audit.bounds.local_mi.conversions import ldp_floor_bits

    return {"mu": args.mu, "delta": ldp_floor_bits(_mu_bits(args)), "unit": unit(args),
            "source": LOCAL_MI.cite("remarks after Theorem 1: p̄_μ with H_b(p)/p = −log(2^μ − 1)")}


def _lip_from_lmip(args) -> dict:
    from audit.bounds.local_mi.conversions import lip_delta_from_lmip_bits

    delta = lip_delta_from_lmip_bits(_mu_bits(args), args.epsilon)
    return {"mu": args.mu, "epsilon": args.epsilon, "delta": delta, "unit": unit(args),
            "source": LOCAL_MI.cite("Theorem 2(a), Eq. (9)")}


def _lip_floor(args) -> dict:
    from audit.bounds.local_mi.conversions import lip_floor_bits

    return {"mu": args.mu, "delta": lip_floor_bits(_mu_bits(args)), "unit": unit(args),
            "source": LOCAL_MI.cite("Theorem 2(a) and Fig. 3: 1 − 2^−μ")}


# -- LDP / LIP curve → LMIP ------------------------------------------------------------------

def _lmip_from_ldp_configure(parser) -> None:
    curve = parser.add_mutually_exclusive_group(required=True)
    curve.add_argument("--gaussian-sigma", type=number, help="Gaussian mechanism with noise σ (needs --sensitivity, ℓ₂)")
    curve.add_argument("--laplace-scale", type=number, help="scalar Laplace mechanism with scale b (needs --sensitivity, ℓ₁)")
    curve.add_argument("--pure-epsilon", type=number, help="any pure ε-LDP mechanism (randomized-response curve)")
    parser.add_argument("--sensitivity", type=number, help="largest distance between two inputs (ℓ₂ Gaussian, ℓ₁ Laplace)")


def _lmip_from_ldp(args) -> dict:
    from audit.bounds.local_mi.conversions import lmip_from_privacy_curve_bits
    from mechanisms.claims.dp_curves import gaussian_ldp_curve, laplace_ldp_curve, pure_ldp_curve

    if args.pure_epsilon is not None:
        positive_flags(args, "--pure-epsilon")
        curve = pure_ldp_curve(args.pure_epsilon)
    elif args.sensitivity is None:
        raise InputError("argument '--sensitivity' is required with --gaussian-sigma or --laplace-scale")
    elif args.gaussian_sigma is not None:
        positive_flags(args, "--gaussian-sigma", "--sensitivity")
        curve = gaussian_ldp_curve(args.gaussian_sigma, args.sensitivity)
    else:
        positive_flags(args, "--laplace-scale", "--sensitivity")
        curve = laplace_ldp_curve(args.laplace_scale, args.sensitivity)
    mu = lmip_from_privacy_curve_bits(curve)
    return {"curve": curve.name, **curve.parameters, "mu": _to_user_unit(mu, args), "unit": unit(args),
            "source": LOCAL_MI.cite("Theorem 1(b), Eq. (8) (Lemma 1)")}


def _lmip_from_lip(args) -> dict:
    from audit.bounds.local_mi.conversions import lmip_from_privacy_curve_bits
    from mechanisms.constructions.gaussian_discrete_input import gaussian_lip_curve

    support, pmf = _discrete_input(args)
    curve = gaussian_lip_curve(args.sigma, support, pmf)
    mu = lmip_from_privacy_curve_bits(curve)
    return {"curve": curve.name, "sigma": args.sigma, "mu": _to_user_unit(mu, args), "unit": unit(args),
            "source": LOCAL_MI.cite("Theorem 2(b), Eq. (10), for the optimal LIP curve of X + N(0, σ²)")}


# -- the Gaussian mechanism ------------------------------------------------------------------

def _gaussian_ldp_configure(parser) -> None:
    parser.add_argument("--sigma", type=number, required=True, help="noise standard deviation σ")
    parser.add_argument("--sensitivity", type=number, required=True,
                        help="ℓ₂ sensitivity (the paper's ‖X‖ ≤ √d Δ gives 2√d Δ)")
    _add_epsilon(parser)


def _gaussian_ldp(args) -> dict:
    from mechanisms.claims.dp_curves import gaussian_dp_delta

    positive_flags(args, "--sigma", "--sensitivity", "--epsilon")
    delta = gaussian_dp_delta(args.epsilon, args.sigma, args.sensitivity)
    return {"sigma": args.sigma, "sensitivity": args.sensitivity, "epsilon": args.epsilon, "delta": delta,
            "source": LOCAL_MI.cite("Section II (Balle and Wang 2018, Thm 8)")}


def _gaussian_ci_configure(parser) -> None:
    parser.add_argument("--sigma", type=number, required=True, help="noise standard deviation σ")
    parser.add_argument("--amplitude", type=number, required=True,
                        help="peak norm A of the input, ‖X‖ ≤ A (the paper's √d Δ)")
    parser.add_argument("--dim", type=integer, default=1, help="dimension d (default 1)")


_CI_NOTES = {
    "exact": "duality gap within the tolerance",
    "lower": "iteration cap reached: mu is a lower and upper an upper bound, the gap is the accuracy",
    "bounds": "grid beyond its size cap: mu is the entropy-power / cube lower bound, upper the average-power "
              "upper bound (no iteration run)",
}


def _gaussian_ci(args) -> dict:
    from mechanisms.constructions.gaussian_capacity import gaussian_lmip_ci_bits

    result = gaussian_lmip_ci_bits(args.sigma, args.amplitude, args.dim)
    return {"sigma": args.sigma, "amplitude": args.amplitude, "dim": args.dim,
            "mu": _to_user_unit(result.mu, args), "upper": _to_user_unit(result.upper, args),
            "gap": _to_user_unit(result.gap, args), "kind": result.kind, "note": _CI_NOTES[result.kind],
            "iterations": result.iterations,
            "unit": unit(args),
            "source": LOCAL_MI.cite("Section II: capacity of the amplitude-constrained Gaussian channel "
                                    "(radial Blahut–Arimoto with duality gap)")}


def _gaussian_cd(args) -> dict:
    from mechanisms.constructions.gaussian_discrete_input import gaussian_lmip_cd_bits

    support, pmf = _discrete_input(args)
    mu = gaussian_lmip_cd_bits(args.sigma, support, pmf)
    return {"sigma": args.sigma, "mu": _to_user_unit(mu, args), "unit": unit(args),
            "source": LOCAL_MI.cite("Section II: I(X; X + N(0, σ²)) for a discrete input (numerical KL)")}


def _gaussian_lip_configure(parser) -> None:
    _add_discrete_input(parser)
    _add_epsilon(parser)


def _gaussian_lip(args) -> dict:
    from mechanisms.constructions.gaussian_discrete_input import gaussian_lip_curve

    positive_flags(args, "--epsilon")
    support, pmf = _discrete_input(args)
    delta = gaussian_lip_curve(args.sigma, support, pmf)(args.epsilon)
    return {"sigma": args.sigma, "epsilon": args.epsilon, "delta": delta,
            "source": LOCAL_MI.cite("Definition 4 / Eq. (3): numerical hockey-stick divergences")}


CALCULATORS = [
    Calculator("bac-capacity", "capacity of the binary asymmetric channel (local-MI Eq. 7)",
               _bac_configure, _bac_compute),
    Calculator("ldp-from-lmip", "LDP δ(ε) guaranteed by μ-CI-LMIP (local-MI Thm 1a)", _mu_eps_configure, _ldp_from_lmip),
    Calculator("ldp-floor", "the floor p̄_μ of the LDP curve of μ-CI-LMIP (local-MI Thm 1)", _add_mu, _ldp_floor),
    Calculator("lmip-from-ldp", "CI-LMIP μ implied by an LDP curve (local-MI Thm 1b)",
               _lmip_from_ldp_configure, _lmip_from_ldp),
    Calculator("lip-from-lmip", "LIP δ(ε) guaranteed by μ-CD-LMIP (local-MI Thm 2a)", _mu_eps_configure, _lip_from_lmip),
    Calculator("lip-floor", "the floor 1 − 2^−μ of the LIP curve of μ-CD-LMIP (local-MI Thm 2)", _add_mu, _lip_floor),
    Calculator("lmip-from-lip", "CD-LMIP μ implied by the LIP curve of X + N(0, σ²), discrete X (local-MI Thm 2b)",
               _add_discrete_input, _lmip_from_lip),
    Calculator("gaussian-ldp", "optimal LDP curve δ(ε) of the Gaussian mechanism",
               _gaussian_ldp_configure, _gaussian_ldp,
               no_information="σ and the sensitivity are in the inputs' units, ε is LDP's natural-log ratio bound "
                              "and δ a probability"),
    Calculator("gaussian-lmip-ci", "optimal CI-LMIP (capacity, ‖X‖ ≤ A) of the Gaussian mechanism",
               _gaussian_ci_configure, _gaussian_ci),
    Calculator("gaussian-lmip-cd", "optimal CD-LMIP of X + N(0, σ²) for a discrete input", _add_discrete_input, _gaussian_cd),
    Calculator("gaussian-lip", "optimal LIP δ(ε) of X + N(0, σ²) for a discrete input",
               _gaussian_lip_configure, _gaussian_lip,
               no_information="σ and the support are in the inputs' units, the pmf and δ are probabilities and ε is "
                              "LIP's natural-log ratio bound"),
]
