"""``miaudit one-run``: a one-run audit (Steinke, Nasr and Jagielski 2023) of canary scores from one training run.

Either the scores and coins of your own run (``--scores S.npy --included C.npy``), or the built-in
DP-SGD run on scikit-learn's digits with ``--canaries`` canaries (white-box gradient canaries, or
black-box input canaries scored by their loss: :mod:`mechanisms.training.one_run_digits`).
"""

from __future__ import annotations

from audit.config.flag_values import integer, number
from audit.cli.main import add_device_option, check_seed

HELP = "one-run audit: m canaries, one training run, a certified (eps, delta) lower bound (Steinke et al. 2023)"


def configure(parser) -> None:
    parser.add_argument("--scores", metavar="S.npy", help="one score per canary of your run, shape (m,) (with --included)")
    parser.add_argument("--included", metavar="C.npy",
                        help="which canaries your run was trained on: fair coins drawn before it, 0/1 or bool, shape (m,)")
    parser.add_argument("--canary", choices=("gradient", "input"), default=None,
                        help="built-in digits run: white-box Dirac gradient canaries or black-box input canaries "
                             "(default gradient)")
    parser.add_argument("--canaries", type=integer, default=None, metavar="M",
                        help="built-in digits run: the number of canaries m (default 1000; input canaries: at most 898)")
    parser.add_argument("--epsilon", type=number, default=4.0,
                        help="built-in run: the accountant's ε it is trained for (default 4); with --scores: the claimed ε")
    parser.add_argument("--delta", type=number, default=1e-5, help="δ of the guarantee audited (default 1e-5)")
    parser.add_argument("--steps", type=integer, default=None, help="built-in run: full-batch DP-SGD steps T (default 20)")
    parser.add_argument("--accountant", choices=("rdp", "pld"), default=None,
                        help="built-in run: the accountant that sets σ for --epsilon (default rdp)")
    parser.add_argument("--k", type=integer, action="append", metavar="K",
                        help="guess 'included' on the K highest and 'excluded' on the K lowest scores (repeatable: "
                             "α is split between the choices; default 2.5%% of the canaries)")
    parser.add_argument("--guess-grid", action="store_true",
                        help="guess on each side 1%%, 2%%, 3%% and 5%% of the canaries and certify the best of the four, "
                             "α split equally between them (instead of --k)")
    parser.add_argument("--alpha", type=number, default=0.05, help="level (default 0.05)")
    add_device_option(parser)  # where the built-in run trains (one batched torch model: CPU or CUDA)


#: The built-in run's flags and their defaults (None in the parser: given or not is known, see :func:`run`).
BUILT_IN_RUN = {"canary": "gradient", "canaries": 1000, "steps": 20, "accountant": "rdp"}


def run(args):
    from estimators.validation import InputError

    from audit.one_run import one_run_audit

    seed = check_seed(args.seed)
    if args.guess_grid and args.k is not None:
        raise InputError("arguments '--k' and '--guess-grid' are alternatives: give one")
    guesses = "grid" if args.guess_grid else None if args.k is None else [(k, k) for k in args.k]
    if (args.scores is None) != (args.included is None):
        raise InputError("arguments '--scores' and '--included' go together: the scores of your run and its coins")
    given = [name for name in BUILT_IN_RUN if getattr(args, name) is not None]
    if args.scores is not None and given:  # they shape the built-in run alone: your run's scores would ignore them
        raise InputError(f"argument '--{given[0]}' applies to the built-in run only, not to --scores and --included: "
                         f"drop --{given[0]}")
    for name, default in BUILT_IN_RUN.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.scores is not None:
        import numpy as np

        from estimators.array_files import load_npy_array

        scores = load_npy_array(args.scores, "--scores", ndim=1, shape="(m,)")
        coins = load_npy_array(args.included, "--included", ndim=1, shape="(m,)")
        if not np.all((coins == 0) | (coins == 1)):
            raise InputError("argument '--included' must hold 0/1 (or bool) values: the canaries' coins")
        audit = one_run_audit(scores, coins.astype(bool), guesses=guesses, alpha=args.alpha, delta=args.delta,
                              claimed_epsilon=args.epsilon)
        payload = audit.to_dict()
        return payload, audit.text()
    from mechanisms.execution.memory import available_memory, format_bytes
    from mechanisms.training.one_run_digits import digits_one_run, one_run_memory

    need, available = one_run_memory(args.canaries, args.canary, args.steps), available_memory()
    if args.canaries >= 2 and args.steps >= 1 and available is not None and need > available:
        raise InputError(f"argument '--canaries' ({args.canaries}): the built-in run with {args.steps} steps needs at "
                         f"least {format_bytes(need)} of memory (each step's noise for the model's and every gradient "
                         f"canary's parameters, float64), but only {format_bytes(available)} is available; lower "
                         "--canaries or --steps")
    training = digits_one_run(epsilon=args.epsilon, delta=args.delta, canaries=args.canaries, kind=args.canary,
                              steps=args.steps, accountant=args.accountant, seed=seed, device=args.device)
    audit = one_run_audit(training.scores, training.included, guesses=guesses, alpha=args.alpha,
                          delta=training.delta, claimed_epsilon=training.claimed_epsilon)
    payload = audit.to_dict() | {"training": {"kind": training.kind, "noise_multiplier": training.noise_multiplier,
                                              "steps": training.steps, "examples": training.examples,
                                              "accountant": training.accountant,
                                              "test_accuracy": training.test_accuracy, "seed": seed}}
    what = ("white-box Dirac gradient canaries (score: the canary's weight)" if training.kind == "gradient"
            else "black-box input canaries (mislabelled held-out digits; score: minus the loss)")
    head = (f"digits, softmax regression, full-batch DP-SGD: T = {training.steps}, σ = {training.noise_multiplier:.4g}, "
            f"C = 1, {training.examples} examples; {what}; test accuracy {training.test_accuracy:.3f}; "
            f"{training.accountant.upper()} accountant ε = {training.claimed_epsilon:.4g} at δ = {training.delta:g}")
    return payload, head + "\n" + audit.text()
