"""``miaudit estimate``: estimate (sliced, conditional) MI between samples stored in .npy files."""

from __future__ import annotations

import numpy as np

from audit.cli.main import add_device_option
from estimators.estimate import CONDITIONAL_FORMS, ESTIMATORS, estimate_mi
from estimators.validation import InputError



def configure(parser) -> None:
    parser.add_argument("--x", required=True, metavar="X.npy", help="samples of X, shape (n,) or (n, d)")
    parser.add_argument("--y", required=True, metavar="Y.npy", help="samples of Y, shape (n,) or (n, d)")
    parser.add_argument("--z", metavar="Z.npy", help="conditioning samples Z: estimates I(X; Y, Z) (see --conditional)")
    parser.add_argument("--conditional", choices=CONDITIONAL_FORMS, default="independent",
                        help="with --z: 'independent' estimates I(X; Y, Z) = I(X; Y | Z) for independent X, Z; "
                             "'chain' estimates I(X; Y, Z) - I(X; Z) (no certificate)")
    parser.add_argument("--estimator", choices=ESTIMATORS, default="dv", help="base estimator (default: dv)")
    parser.add_argument("--sliced", action="store_true", help="estimate sliced MI")
    parser.add_argument("--slices", type=int, default=128, metavar="P", help="number of random slices (default: 128)")
    parser.add_argument("--slice-dim", type=int, default=1, metavar="K", help="dimension of each slice (default: 1)")
    parser.add_argument("--alpha", type=float, default=0.05, help="the lower bound holds with probability 1 - alpha")
    parser.add_argument("--bits", action="store_true", help="report information in bits (default: nats)")
    add_device_option(parser)


def _load(path: str, flag: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"argument '{flag}': no such file {path!r}") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"argument '{flag}': cannot read {path!r} as .npy ({exc})") from None


def run(args):
    result = estimate_mi(
        _load(args.x, "--x"), _load(args.y, "--y"), None if args.z is None else _load(args.z, "--z"),
        estimator=args.estimator, sliced=args.sliced, slices=args.slices, slice_dim=args.slice_dim,
        conditional=args.conditional, alpha=args.alpha, unit="bits" if args.bits else "nats",
        seed=args.seed, device=args.device, quiet=args.quiet,
    )
    full = result.to_dict()
    payload = {k: full[k] for k in
               ("estimator", "sliced", "slices", "value", "unit", "lower_bound", "confidence", "stderr", "n", "seconds")}
    if result.sliced:
        payload["max_slice_lower_bound"] = full["max_slice_lower_bound"]
        payload["per_slice"] = full["per_slice"]
    payload["quantity"] = result.details["quantity"]
    lines = [f"{payload['quantity']} by {result.estimator}{' (sliced, %d slices)' % result.slices if result.sliced else ''}:",
             f"  estimate     {result.value:.4f} {result.unit}" + (f" ± {result.stderr:.4f}" if result.stderr is not None else "")]
    if result.lower_bound is not None:
        lines.append(f"  lower bound  {result.lower_bound:.4f} {result.unit} (certified, confidence {result.confidence:.3g})")
    else:
        lines.append("  lower bound  none (this estimator gives no certificate)")
    if result.max_slice_lower_bound is not None:
        lines.append(f"  best slice   {result.max_slice_lower_bound:.4f} {result.unit} (certified lower bound on the full MI)")
    lines.append(f"  n = {result.n}, {result.seconds:.1f} s")
    return payload, "\n".join(lines)
