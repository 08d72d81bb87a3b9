"""``miaudit bounds`` calculators for the Pufferfish/MI paper: PP ⇔ MI PP (Theorem 1),
composition (Theorem 2, Proposition 1, Remark 5, Corollary 1) and utility (Propositions 7-8).

Nuradha and Goldfeld, Pufferfish Privacy: An Information-Theoretic Study (IEEE Transactions on Information
Theory, 2023); the maths is in :mod:`audit.bounds.pufferfish` and :mod:`audit.bounds.composition`.
"""

from __future__ import annotations

from audit.bounds.composition import METHODS as COMPOSITION_METHODS
from audit.bounds.composition import compose_mi_pp
from estimators.validation import InputError, check_finite_number, check_int, check_nonnegative
from mechanisms.papers import PUFFERFISH

from audit.cli.bounds_calculators.common import Calculator, info_in, info_out, integer, load_npy_array, number, number_list, unit

# The maths modules load SciPy: they are imported where a calculator computes, so that
# `miaudit bounds --help` and its usage errors load neither SciPy nor torch (issue 13, §3).

__all__ = ["CALCULATORS"]


_NOT_INFO = "(a PP/DP parameter, not an information value: --bits does not convert it)"


def _configure_pp_to_mipp(parser) -> None:
    parser.add_argument("--epsilon", type=number, required=True, help=f"ε of ε-PP / ε-DP, > 0 {_NOT_INFO}")


def _compute_pp_to_mipp(args) -> dict:
    from audit.bounds.pufferfish import THEOREM_1, pp_to_mipp

    payload = {"epsilon": args.epsilon, "mi_epsilon": pp_to_mipp(args.epsilon),
               "source": THEOREM_1 + " (first implication)"}
    return info_out(args, payload, ["mi_epsilon"])


def _configure_mipp_to_pp(parser) -> None:
    parser.add_argument("--mi", type=number, required=True, help="ε'' of ε''-MI PP (nats, or bits with --bits)")
    parser.add_argument("--epsilon-prime", type=number, default=0.0,
                        help=f"ε' to pair with δ; any ε' >= 0 holds (default 0) {_NOT_INFO}")


def _compute_mipp_to_pp(args) -> dict:
    from audit.bounds.pufferfish import mipp_to_pp

    check_nonnegative(args.mi, "--mi")  # mipp_to_pp checks again, in nats
    result = mipp_to_pp(info_in(args, args.mi), args.epsilon_prime).to_dict()
    result = info_out(args, result, ["mi_epsilon"])
    return {"mi": result.pop("mi_epsilon"), **result}


def _configure_approx_pp_to_mipp(parser) -> None:
    parser.add_argument("--epsilon", type=number, required=True, help=f"ε of (ε, δ)-PP, >= 0 {_NOT_INFO}")
    parser.add_argument("--delta", type=number, required=True, help="δ of (ε, δ)-PP, in [0, 1)")
    parser.add_argument("--support", type=integer, help="|spt M(X)|, the number of mechanism outputs (>= 2)")
    parser.add_argument("--secret-values", type=integer, help="max |Im g|, the number of secret values (>= 2)")
    parser.add_argument("--alpha", help="density form (4): α values, comma-separated")
    parser.add_argument("--beta", help="density form (4): β values aligned with --alpha")
    parser.add_argument("--u", help="density form (4): u values (density sups), comma-separated")
    parser.add_argument("--ell", help="density form (4): ℓ values (density infs) aligned with --u")
    parser.add_argument("--densities", help="density form (4) computed from a discretized mechanism: a .npy "
                        "array (k, n) or (c, k, n) of f(x | a, c) on an output grid")


def _density_inputs(args) -> dict:
    """α, β, u, ℓ from the flags, or computed from ``--densities FILE.npy``."""
    from audit.bounds.pufferfish import density_constants

    density = {name: number_list(getattr(args, name), f"--{name}") for name in ("alpha", "beta", "u", "ell")}
    if args.densities is None:
        return density
    if any(v is not None for v in density.values()):
        raise InputError("argument '--densities' replaces '--alpha', '--beta', '--u' and '--ell'; give one or the other")
    return density_constants(load_npy_array(args.densities, "--densities")).to_dict()


def _compute_approx_pp_to_mipp(args) -> dict:
    from audit.bounds.pufferfish import THEOREM_1, approx_pp_to_mipp, tv_bound_from_approx_pp

    density = _density_inputs(args)
    method = "density" if any(v is not None for v in density.values()) else "finite"
    if args.support is not None:
        check_int(args.support, "--support", minimum=2)
    mi = approx_pp_to_mipp(args.epsilon, args.delta, method=method, output_support=args.support,
                           secret_values=args.secret_values, **density)
    part = "Part 1" if method == "finite" else "Part 2, formula (4)"
    payload = {"epsilon": args.epsilon, "delta": args.delta, "method": method,
               "delta_prime": tv_bound_from_approx_pp(args.epsilon, args.delta), "mi_epsilon": mi,
               "source": f"{THEOREM_1} (inverse implication, {part})"}
    return info_out(args, payload, ["mi_epsilon"])


def _configure_dp_epsilon_from_mi(parser) -> None:
    parser.add_argument("--mi", type=number, required=True,
                        help="certified MI lower bound L (nats, or bits with --bits); L <= 0 gives 0")


def _compute_dp_epsilon_from_mi(args) -> dict:
    from audit.bounds.pufferfish import THEOREM_1, dp_epsilon_lower_bound_from_mi

    mi = check_finite_number(args.mi, "--mi")
    return {"mi": mi, "unit": unit(args), "epsilon": dp_epsilon_lower_bound_from_mi(info_in(args, mi)),
            "source": THEOREM_1 + " (ε-DP ⇒ min(ε, ε²/2)-MI DP, inverted; ε is not converted by --bits)"}


def _configure_composition(parser) -> None:
    parser.add_argument("--mi-epsilons", required=True, help="ε_1,...,ε_k of the MI PP mechanisms (comma-separated)")
    parser.add_argument("--method", choices=COMPOSITION_METHODS, default="adaptive",
                        help="adaptive (Thm 2), non-adaptive (Prop. 1 + Remark 5), universally-composable "
                             "(Cor. 1 / Remark 6), mixture (Thm 2 convexity); default adaptive")
    parser.add_argument("--eta", type=number, help="non-adaptive: η of Proposition 1 if known")
    parser.add_argument("--output-supports", help="non-adaptive: |spt M_i| for all k mechanisms (first unused)")
    parser.add_argument("--output-variances", help="non-adaptive, log-concave 1-D: Var(M_i | g, w) for all k")
    parser.add_argument("--noise-variances", help="non-adaptive, log-concave 1-D: Var(M_i | X) for all k")
    parser.add_argument("--weights", help="mixture: probabilities p_1,...,p_k")


def _compute_composition(args) -> dict:
    epsilons = number_list(args.mi_epsilons, "--mi-epsilons")
    bound = compose_mi_pp(
        [info_in(args, e) for e in epsilons], method=args.method, eta=info_in(args, args.eta),
        output_supports=number_list(args.output_supports, "--output-supports"),
        output_variances=number_list(args.output_variances, "--output-variances"),
        noise_variances=number_list(args.noise_variances, "--noise-variances"),
        weights=number_list(args.weights, "--weights"),
    )
    payload = bound.to_dict()
    fields = [name for name in bound.INFORMATION_FIELDS if payload[name] is not None]
    return info_out(args, payload, fields)


def _configure_utility(parser) -> None:
    parser.add_argument("--mi-epsilon", type=number, required=True, help="MI PP budget ε (nats, or bits with --bits)")
    parser.add_argument("--h-f-given-g", type=number, required=True, help="H(f(X) | g(X))")
    parser.add_argument("--h-g-given-f", type=number, required=True, help="H(g(X) | f(X))")
    parser.add_argument("--h-g", type=number, required=True, help="H(g(X))")


def _compute_utility(args) -> dict:
    from audit.bounds.pufferfish import utility_bounds

    result = utility_bounds(info_in(args, args.mi_epsilon), h_f_given_g=info_in(args, args.h_f_given_g),
                            h_g_given_f=info_in(args, args.h_g_given_f), h_g=info_in(args, args.h_g))
    payload = {"mi_epsilon": args.mi_epsilon, **result.to_dict(),
               "source": PUFFERFISH.cite("Propositions 7-8")}
    payload = info_out(args, payload, ["upper_bound", "lower_bound", "lower_bound_1", "lower_bound_2"])
    payload["mi_epsilon"] = args.mi_epsilon  # echoed as given
    return payload


CALCULATORS = [
    Calculator("pp-to-mipp", "ε-PP/DP ⇒ (ε ∧ ε²/2)-MI PP (Theorem 1)", _configure_pp_to_mipp, _compute_pp_to_mipp),
    Calculator("mipp-to-pp", "ε''-MI PP ⇒ (ε', √(2ε''))-PP when Θ = all distributions (Theorem 1)",
               _configure_mipp_to_pp, _compute_mipp_to_pp),
    Calculator("approx-pp-to-mipp", "(ε, δ)-PP ⇒ ε*-MI PP (Theorem 1, finite support or density form (4))",
               _configure_approx_pp_to_mipp, _compute_approx_pp_to_mipp),
    Calculator("dp-epsilon-from-mi", "certified MI lower bound ⇒ lower bound on ε of ε-DP (Theorem 1 inverted)",
               _configure_dp_epsilon_from_mi, _compute_dp_epsilon_from_mi),
    Calculator("composition", "MI PP level of composed mechanisms (Theorem 2, Prop. 1, Remark 5, Cor. 1)",
               _configure_composition, _compute_composition),
    Calculator("utility", "bounds on the utility I(f; M) of ε-MI PP mechanisms (Propositions 7-8)",
               _configure_utility, _compute_utility),
]
