"""``miaudit bounds lip-design``: the LIP / max-lift privacy–utility design of the LIP paper.

Zamani, Sadeghi and Skoglund, An Information Geometric Approach to Local Information Privacy with Applications
to Max-lift and Local Differential Privacy (arXiv:2501.11757, 2025); the maths is in
:mod:`audit.bounds.lip` and :mod:`mechanisms.constructions.lip`.
"""

from __future__ import annotations

from estimators.units import NATS, convert
from estimators.validation import InputError, check_positive
from mechanisms.constructions.lip import LEAKAGES, leakage_geometry, lip_design  # NumPy only
from mechanisms.papers import LIP

from audit.cli.bounds_calculators.common import Calculator, load_npy_array, number, unit

# The maths modules load SciPy: they are imported where a calculator computes, so that
# `miaudit bounds --help` and its usage errors load neither SciPy nor torch (issue 13, §3).

__all__ = ["CALCULATORS"]


def _configure(parser) -> None:
    parser.add_argument("--pxgy", required=True, metavar="P.npy",
                        help="leakage matrix P_X|Y, rows x, columns y (square, invertible, columns sum to 1)")
    parser.add_argument("--py", required=True, metavar="p.npy", help="distribution of the useful data Y")
    parser.add_argument("--epsilon", required=True, type=number, help="LIP / max-lift bound ε > 0 (a log-ratio)")
    parser.add_argument("--leakage", choices=LEAKAGES, default="lip",
                        help="privacy constraint: lip (Eq. 1c, two-sided) or max-lift (Eq. 28)")


def _design_fields(pxgy, py, eps, leakage, approach) -> dict:
    try:
        design = lip_design(pxgy, py, eps, approach=approach, leakage=leakage)
    except InputError:  # ε outside the range where this binary design is a valid kernel
        return {f"mi_{approach}": None, f"p_u_given_y_{approach}": None, f"p_y_given_u_{approach}": None}
    return {f"mi_{approach}": design.mutual_information, f"p_u_given_y_{approach}": design.p_u_given_y.tolist(),
            f"p_y_given_u_{approach}": design.p_y_given_u.tolist()}


def _compute(args) -> dict:
    from audit.bounds.lip import approximate_optimum, exact_optimum, lip_bounds

    pxgy = load_npy_array(args.pxgy, "--pxgy")
    py = load_npy_array(args.py, "--py")
    eps = check_positive(args.epsilon, "--epsilon")
    out_unit = unit(args)
    geometry = leakage_geometry(pxgy, py)
    bounds = lip_bounds(pxgy, py, [eps], args.leakage).to(out_unit)  # a one-point grid: every field a list
    p1 = approximate_optimum(pxgy, py, eps, "first", args.leakage).to(out_unit)
    p2 = approximate_optimum(pxgy, py, eps, "second", args.leakage).to(out_unit)
    optimum = exact_optimum(pxgy, py, eps, args.leakage).to(out_unit)
    design = {**_design_fields(pxgy, py, eps, args.leakage, "first"),
              **_design_fields(pxgy, py, eps, args.leakage, "second")}
    for key in ("mi_first", "mi_second"):
        design[key] = convert(design[key], NATS, out_unit)
    scalar = {name: float(value[0]) for name, value in bounds.to_dict().items() if isinstance(value, list)}
    del scalar["epsilon"]
    in_range = eps < max(geometry.c1_prime, geometry.c2_prime)
    return {
        "epsilon": eps, "leakage": args.leakage, "unit": out_unit,
        "px": geometry.px.tolist(), "w": geometry.w.tolist(), "sigma_max": geometry.sigma_max,
        "l_star": geometry.l_star.tolist(),
        "P1": p1.value, "P2": p2.value, **scalar,
        "optimum": optimum.value, "optimum_certificate": optimum.certificate,
        "optimum_u_size": optimum.u_alphabet_size, "optimum_p_u_given_y": optimum.p_u_given_y.tolist(),
        "optimum_method": optimum.method + f"; searched {optimum.vertices_searched} vertices, any |U|",
        **design,
        "c1": geometry.c1, "c2": geometry.c2, "c1_prime": geometry.c1_prime, "c2_prime": geometry.c2_prime,
        "epsilon_in_approximation_range": bool(in_range),
        "source": LIP.cite("Lemmas 2-5, Theorems 1-3, Eqs. (12), (19)") + "; "
                  "optimum of problem (1) by vertex LP; optimum_upper by D <= chi^2 and Bhatia-Davis",
    }


CALCULATORS = [
    Calculator(
        name="lip-design",
        help="LIP / max-lift privacy-utility design: sigma_max, P1, P2 with bounds, exact optimum of problem (1)",
        configure=_configure,
        compute=_compute,
    )
]
