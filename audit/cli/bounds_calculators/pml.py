"""``miaudit bounds pml-*`` calculators for the PML paper (Dobrushin coefficients of (ε, c)-PML kernels).

Grosse, Saeidian, Oechtering and Skoglund, Dobrushin Coefficients of Private Mechanisms Beyond Local
Differential Privacy (arXiv:2601.09498, 2026); the maths is in
:mod:`audit.bounds.pml` and :mod:`mechanisms.constructions.pml`.
"""

from __future__ import annotations

from typing import Callable

from audit.bounds.pml import divergence_bound, eta_tv
from estimators.units import NATS, convert
from estimators.validation import check_int, check_positive
from mechanisms.constructions.pml import kernel_leakage
from mechanisms.papers import PML

from audit.cli.bounds_calculators.common import Calculator, info_in, integer, load_npy_array, number, unit

__all__ = ["CALCULATORS"]


def _epsilon_in_nats(args) -> float:
    return info_in(args, check_positive(args.epsilon, "--epsilon"))


def _configure_kernel(parser) -> None:
    parser.add_argument("--kernel", required=True, help="row-stochastic matrix K.npy (rows = inputs, columns = outputs)")
    parser.add_argument("--c", type=number, required=True, help="minimum mass of the priors in Q_X(c), 0 < c <= 1/N")


def _compute_kernel(args) -> dict:
    result = kernel_leakage(load_npy_array(args.kernel, "--kernel"), args.c)
    out_unit = unit(args)
    return {
        "pml": convert(result.pml, NATS, out_unit),
        "ldp": convert(result.ldp, NATS, out_unit),
        "c": result.c,
        "n_inputs": result.n_inputs,
        "n_outputs": result.n_outputs,
        "unit": out_unit,
        "source": PML.cite("Definition 2 and Lemma 4 (pml), Eq. (1) (ldp)"),
    }


def _configure_privacy(parser) -> None:
    parser.add_argument("--epsilon", type=number, required=True, help="PML level epsilon (nats; bits with --bits)")
    parser.add_argument("--c", type=number, required=True, help="minimum mass of the priors in Q_X(c), 0 < c <= 1/N")
    parser.add_argument("--n", type=integer, required=True, help="input alphabet size N")


def _compute_dobrushin(args) -> dict:
    check_int(args.n, "--n", minimum=1)
    eta = eta_tv(_epsilon_in_nats(args), args.c, args.n)
    return {"epsilon": args.epsilon, "c": args.c, "n": args.n, "eta_tv": eta, "unit": unit(args),
            "source": PML.cite("Theorem 1 (Theorems 2 and 3)")}


def _configure_divergence(parser) -> None:
    _configure_privacy(parser)
    parser.add_argument("--tv", type=number, required=True, help="TV(P_X || Q_X) of the input priors, in [0, 1 - N c]")


def _divergence_calculator(divergence: str, information: bool, source: str) -> Callable:
    def compute(args) -> dict:
        check_int(args.n, "--n", minimum=1)
        bound = divergence_bound(divergence, _epsilon_in_nats(args), args.c, args.n, args.tv)
        out_unit = unit(args)
        if information:
            bound = convert(bound, NATS, out_unit)
        return {"epsilon": args.epsilon, "c": args.c, "n": args.n, "tv": args.tv, "bound": bound,
                "divergence": divergence, "unit": out_unit, "source": source}

    return compute


CALCULATORS = [
    Calculator("pml-kernel", "(eps, c)-PML level and LDP level of a kernel K.npy",
               _configure_kernel, _compute_kernel, unbounded_fields=("pml", "ldp")),
    Calculator("pml-dobrushin", "largest Dobrushin coefficient eta_TV(eps, c) of an (eps, c)-PML kernel",
               _configure_privacy, _compute_dobrushin),
    Calculator("pml-kl", "KL contraction bound for (eps, c)-PML kernels given the input TV",
               _configure_divergence,
               _divergence_calculator("kl", True, PML.cite("Corollary 1"))),
    Calculator("pml-hellinger", "squared-Hellinger contraction bound for (eps, c)-PML kernels given the input TV",
               _configure_divergence,
               _divergence_calculator("hellinger", False, PML.cite("Corollary 2"))),
]
