"""``miaudit calibrate laplace|gaussian``: noise scale for a privacy notion."""

from __future__ import annotations

from estimators.validation import InputError
from mechanisms.claims.claim import CALIBRATION_NOTIONS as NOTIONS

from audit.config.flag_values import integer, number, number_list, with_flag_names


# Library argument names and the flags that carry them, so errors name what the user typed.
_FLAGS = {
    "epsilon": "--epsilon", "delta": "--delta", "dim": "--dim", "l1_sensitivity": "--l1-sensitivity",
    "l2_sensitivity": "--l2-sensitivity", "cond_var": "--cond-var", "cond_std": "--cond-std",
    "projection_dim": "--projection-dim", "op_norm": "--op-norm", "max_column_norm": "--max-column-norm",
    "random_projection": "--random-projection", "mean_sq_norm": "--mean-sq-norm", "analytic": "--analytic",
    "compact": "--compact", "notion": "--notion", "noise": "NOISE", "input_dim": "--dim",
}


def configure(parser) -> None:
    parser.add_argument("noise", choices=("laplace", "gaussian"), help="the noise law")
    parser.add_argument("--notion", required=True, choices=NOTIONS, help="the privacy notion to meet")
    parser.add_argument("--epsilon", type=number, required=True, help="epsilon (nats for the MI notions)")
    parser.add_argument("--delta", type=number, help="delta in (0, 1), approx-dp only")
    parser.add_argument("--dim", type=integer, help="query dimension d (default 1 with a sensitivity; "
                                               "with a projection: the input dimension)")
    parser.add_argument("--l1-sensitivity", type=number, help="l1 sensitivity of the query")
    parser.add_argument("--l2-sensitivity", type=number, help="l2 sensitivity of the query")
    parser.add_argument("--cond-var", help="per-coordinate conditional variances v1,...,vd of the query "
                                           "(one value with --dim d: the same for every coordinate)")
    parser.add_argument("--cond-std", help="per-coordinate expected conditional standard deviations (Laplace)")
    parser.add_argument("--projection-dim", type=integer, help="projection dimension l (Theorem 5)")
    parser.add_argument("--op-norm", type=number, help="bound on E||Sigma_f|w||_op (Theorem 5)")
    parser.add_argument("--max-column-norm", type=number, default=None,
                        help="largest column norm of the deterministic projection (default 1: unit-norm columns)")
    parser.add_argument("--random-projection", action="store_true",
                        help="Theorem 5 part 2: a fresh N(0, 1/d) matrix per release (Remark 12); needs --mean-sq-norm")
    parser.add_argument("--mean-sq-norm", type=number, help="bound on E||E[f|w]||^2 (random projection)")
    parser.add_argument("--analytic", action="store_true", help="gaussian approx-dp: Balle-Wang analytic calibration")
    parser.add_argument("--compact", action="store_true", help="gaussian mi-dp: Corollary 3's compact scalar form")


def _per_coordinate(text, flag, dim):
    if text is None:
        return None
    values = number_list(text, flag)
    # One value with --dim d: the same in every coordinate (the library takes a single number
    # with its dim that way, without building a d-long list).
    return values[0] if len(values) == 1 and dim is not None else values


def run(args):
    from mechanisms.calibration import calibrate  # SciPy: loaded only for a calibration

    max_column_norm = args.max_column_norm
    assumed_unit_columns = args.projection_dim is not None and not args.random_projection and max_column_norm is None
    if assumed_unit_columns:
        max_column_norm = 1.0
    try:
        result = calibrate(
            args.noise, args.notion, args.epsilon, delta=args.delta, dim=args.dim,
            l1_sensitivity=args.l1_sensitivity, l2_sensitivity=args.l2_sensitivity,
            cond_var=_per_coordinate(args.cond_var, "--cond-var", args.dim),
            cond_std=_per_coordinate(args.cond_std, "--cond-std", args.dim),
            projection_dim=args.projection_dim, op_norm=args.op_norm, max_column_norm=max_column_norm,
            random_projection=args.random_projection, mean_sq_norm=args.mean_sq_norm,
            analytic=args.analytic, compact=args.compact)
    except InputError as exc:
        raise InputError(with_flag_names(str(exc), _FLAGS)) from None
    payload = result.to_dict()
    delta = "" if result.delta is None else f", delta={result.delta:g}"
    name = "b" if result.noise == "laplace" else "sigma"
    text = (f"{result.noise} noise for {result.notion} (epsilon={result.epsilon:g}{delta}, dim={result.dim}):\n"
            f"  {name} = {result.scale:.6g}   variance per coordinate = {result.variance:.6g}"
            f"   total = {result.total_variance:.6g}\n"
            f"  rule: {result.rule}")
    if assumed_unit_columns:
        text += "\n  assumes projection columns of norm <= 1 (set --max-column-norm otherwise)"
    return payload, text
