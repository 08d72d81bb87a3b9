"""``miaudit estimate``: estimate (sliced, conditional) MI between samples stored in .npy files."""

from __future__ import annotations

from audit.config.flag_values import integer, number
from audit.cli.main import add_device_option, check_seed
from estimators.array_files import load_npy_array
from estimators.choices import (CONDITIONAL_FORMS, DEFAULT_ALPHA, DEFAULT_SLICE_DIM, DEFAULT_SLICES, ESTIMATORS,
                                NEURAL_ESTIMATORS, UNSET)
from estimators.validation import check_probability, refuse_unused

#: The flags that give estimate_mi's data, slices and device, for its messages to name
#: (estimators.estimate.ARGUMENT_NAMES); no flag sets its critic, so a memory message names what one does instead.
FLAG_NAMES = {"x": "--x", "y": "--y", "z": "--z", "slices": "--slices", "slice_dim": "--slice-dim", "critic": None,
              "device": "--device", "estimator": "--estimator"}

# Flags that only some runs use default to None, so that a flag the user gave can be told from one left out: given
# to a run that does not use it, it is refused, as estimate_mi refuses the setting (defaults: estimators.choices).


def configure(parser) -> None:
    parser.add_argument("--x", required=True, metavar="X.npy", help="samples of X, shape (n,) or (n, d)")
    parser.add_argument("--y", required=True, metavar="Y.npy", help="samples of Y, shape (n,) or (n, d)")
    parser.add_argument("--z", metavar="Z.npy", help="conditioning samples Z: estimates I(X; Y, Z) (see --conditional)")
    parser.add_argument("--conditional", choices=CONDITIONAL_FORMS, default=None,
                        help="with --z: 'independent' (default) estimates I(X; Y, Z) = I(X; Y | Z) for independent "
                             "X, Z; 'chain' estimates I(X; Y, Z) - I(X; Z) (no certificate)")
    parser.add_argument("--estimator", choices=ESTIMATORS, default="dv", help="base estimator (default: dv)")
    parser.add_argument("--sliced", action="store_true", help="estimate sliced MI")
    parser.add_argument("--slices", type=integer, default=None, metavar="P",
                        help=f"with --sliced: number of random slices (default: {DEFAULT_SLICES})")
    parser.add_argument("--slice-dim", type=integer, default=None, metavar="K",
                        help=f"with --sliced: dimension of each slice (default: {DEFAULT_SLICE_DIM})")
    parser.add_argument("--alpha", type=number, default=None,
                        help=f"neural estimators: the lower bound holds with probability 1 - alpha "
                             f"(default: {DEFAULT_ALPHA})")
    parser.add_argument("--bits", action="store_true", help="report information in bits (default: nats)")
    add_device_option(parser)
    parser.set_defaults(device=None)  # "auto" where it applies: left out, it can be told from --device auto


def _check_flags(args) -> None:
    """Refuse flags the run would not use (each naming the flag), as :func:`estimators.estimate.estimate_mi`
    refuses the settings they set."""
    if not args.sliced:
        for flag, value in (("--slices", args.slices), ("--slice-dim", args.slice_dim)):
            refuse_unused(value, flag, "to sliced estimation", f"add --sliced, or drop {flag}", unset=None)
    if args.z is None:
        refuse_unused(args.conditional, "--conditional", "with --z (a conditioning variable)",
                      "add --z Z.npy, or drop --conditional", unset=None)
    neural = args.estimator in NEURAL_ESTIMATORS
    if not neural:
        refuse_unused(args.device, "--device", "to neural estimators (dv, mine, nwj: their critics)",
                      f"estimator '{args.estimator}' trains no critics; drop --device", unset=None)
    if not neural or (args.z is not None and args.conditional == "chain"):
        why = (f"estimator '{args.estimator}' gives no certified bound (only dv, mine and nwj do)" if not neural else
               "--conditional chain gives no certified bound (a difference of two estimates)")
        refuse_unused(args.alpha, "--alpha", "to certified estimates", f"{why}; drop --alpha", unset=None)


def run(args):
    """The estimate of the files' samples. Their lengths, the slices and slice dimension, the samples' floor and
    the memory are checked once, by :func:`estimators.estimate.estimate_mi`, naming the flags (:data:`FLAG_NAMES`)."""
    from estimators.estimate import estimate_mi  # torch: loaded only for an estimate

    _check_flags(args)
    check_seed(args.seed)
    alpha = UNSET if args.alpha is None else check_probability(args.alpha, "--alpha")
    samples = {flag: load_npy_array(path, flag, ndim=(1, 2), shape="(n,) or (n, d)")
               for flag, path in (("--x", args.x), ("--y", args.y), ("--z", args.z)) if path is not None}
    result = estimate_mi(
        samples["--x"], samples["--y"], samples.get("--z"),
        estimator=args.estimator, sliced=args.sliced, slices=UNSET if args.slices is None else args.slices,
        slice_dim=UNSET if args.slice_dim is None else args.slice_dim,
        conditional=UNSET if args.conditional is None else args.conditional,
        alpha=alpha, unit="bits" if args.bits else "nats", seed=args.seed,
        device=UNSET if args.device is None else args.device, quiet=args.quiet, names=FLAG_NAMES,
    )
    full = result.to_dict()
    payload = {k: full[k] for k in
               ("estimator", "sliced", "slices", "value", "unit", "lower_bound", "confidence", "stderr", "n", "seconds")}
    if result.sliced:
        payload["max_slice_lower_bound"] = full["max_slice_lower_bound"]
        payload["per_slice"] = full["per_slice"]
    payload["quantity"] = result.details["quantity"]
    payload["notes"] = full["notes"]
    lines = [f"{payload['quantity']} by {result.estimator}{' (sliced, %d slices)' % result.slices if result.sliced else ''}:",
             f"  estimate     {result.value:.4f} {result.unit}" + (f" ± {result.stderr:.4f}" if result.stderr is not None else "")]
    if result.lower_bound is not None:
        lines.append(f"  lower bound  {result.lower_bound:.4f} {result.unit} (certified, confidence {result.confidence:.3g})")
    else:
        lines.append("  lower bound  none (this estimator gives no certificate)")
    if result.max_slice_lower_bound is not None:
        lines.append(f"  best slice   {result.max_slice_lower_bound:.4f} {result.unit} (certified lower bound on the full MI)")
    lines.append(f"  n = {result.n}, {result.seconds:.1f} s")
    lines.extend(f"  note: {note}" for note in result.notes)
    return payload, "\n".join(lines)
