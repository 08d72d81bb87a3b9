"""``estimate_mi``: one entry point for every MI estimator, plain or sliced, with ``method``-style choices.

Quantities
----------
- ``z`` absent: I(X; Y), or with ``sliced=True`` the sliced MI SI(X; Y) (Pufferfish paper, Eq. (5)),
  estimated by the Monte Carlo average over ``slices`` random slices (Eq. (7)).
- ``z`` given, ``conditional="independent"``: I(X; Y, Z), which equals I(X; Y | Z) when X and Z
  are independent (the form the paper uses for DP with independent rows, proof of Prop. 2);
  sliced: I(θᵀX; φᵀY, ψᵀZ).
- ``z`` given, ``conditional="chain"``: I(X; Y, Z) − I(X; Z) = I(X; Y | Z) for dependent X, Z
  (chain rule). A difference of two estimates has no certificate: ``lower_bound`` is None.

Neural estimators (``dv``, ``mine``, ``nwj``) train every critic — one per slice — in one
batched ensemble and certify on a held-out split; classical ones (``ksg``, ``gaussian``,
``plugin``) give point estimates only.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .choices import (CONDITIONAL_FORMS, DEFAULT_ALPHA, DEFAULT_BOUND, DEFAULT_CONDITIONAL, DEFAULT_CORRECTION,
                      DEFAULT_DEVICE, DEFAULT_K, DEFAULT_SLICE_DIM, DEFAULT_SLICES, ESTIMATORS, NEURAL_ESTIMATORS, UNSET)
from .certify import BOUND_METHODS, cap_candidates, certify_critics, sliced_lower_bound
from .critic_problems import MIProblem, fit_problems, problem_projections
from .discrete import CORRECTIONS, plugin_mi_batch
from .gaussian import gaussian_mi_batch
from .ksg import TIE_JITTER, breaks_ties, ksg_mi_batch
from .critic_config import checked_config
from .memory import check_critic_memory, check_projection_memory
from .neural import CriticConfig, MIN_SPLIT_SAMPLES, minimum_split_samples
from .results import MIEstimate
from .slicing import check_slice_dim
from .units import NATS, UNITS
from .validation import (InputError, as_generator, as_samples, check_bool, check_choice, check_int,
                         check_probability, check_same_length, counted, plain, refuse_unused)

#: How :func:`estimate_mi`'s messages name its data and its slices where ``names`` does not say: its arguments.
#: ``critic`` may be None in ``names``: its caller's user cannot set the critic (``miaudit estimate``), so a memory
#: message names the slices, samples or device instead (:func:`estimators.memory.check_critic_memory`).
ARGUMENT_NAMES = {"x": "x", "y": "y", "z": "z", "slices": "slices", "slice_dim": "slice_dim", "critic": "critic",
                  "device": "device", "estimator": "estimator"}


def minimum_samples(estimator: str, dims, *, sliced: bool = False, slice_dim: int = DEFAULT_SLICE_DIM,
                    k: int = DEFAULT_K, critic: CriticConfig | None = None) -> tuple[int, str]:
    """The fewest paired samples ``estimator`` can work with, and why.

    Parameters
    ----------
    estimator : str
        One of ``ESTIMATORS``.
    dims : sequence of int
        Columns of each variable: (dx, dy) or (dx, dy, dz).
    sliced, slice_dim : bool, int
        Sliced estimation projects each variable onto min(``slice_dim``, its dimension) dimensions.
    k : int
        KSG neighbours.
    critic : CriticConfig, optional
        The neural critics' split fractions and ``eval_shifts`` (the test split needs more samples).

    Returns
    -------
    (int, str)
        The minimum n and the reason, e.g. ``(4, "KSG with k = 3 neighbours needs k + 1")``.
    """
    if estimator in NEURAL_ESTIMATORS:
        config = critic or CriticConfig()
        shifts = (f" and more than eval_shifts = {config.eval_shifts} in the test split"
                  if config.eval_shifts >= MIN_SPLIT_SAMPLES else "")
        return (minimum_split_samples(config.split, config.eval_shifts),
                f"the critics need at least {MIN_SPLIT_SAMPLES} samples in each of their train, validation and test "
                f"splits{shifts}")
    if estimator == "ksg":
        return k + 1, f"KSG with k = {counted(k, 'neighbour')} needs k + 1"
    if estimator == "gaussian":
        columns = sum(min(slice_dim, d) if sliced else d for d in dims)
        return columns + 1, f"the sample covariance of {columns} columns is singular with fewer"
    return 2, "at least two samples"


def _setting(value, name: str, used: bool, default, applies: str, remedy: str):
    """``value``, or ``default`` where it is UNSET, for a setting the estimate uses; refused where it was given
    (:func:`~estimators.validation.refuse_unused`) to an estimate that does not use it."""
    if used:
        return default if value is UNSET else value
    refuse_unused(value, name, applies, remedy)
    return default


def _checked_names(names) -> dict:
    """:data:`ARGUMENT_NAMES` with ``names``' entries in their place."""
    if names is None:
        return ARGUMENT_NAMES
    if (not isinstance(names, dict) or not set(names) <= set(ARGUMENT_NAMES)
            or not all((isinstance(v, str) and v) or (k == "critic" and v is None) for k, v in names.items())):
        raise InputError(f"argument 'names' must be a dict from some of {', '.join(ARGUMENT_NAMES)} to non-empty "
                         f"strings ('critic' also to None: not settable), got {plain(names)}")
    return {**ARGUMENT_NAMES, **names}


def _arguments(names: dict, *keys) -> str:
    """The variables ``keys`` as a message names them: ``argument 'x'``, ``arguments '--x' and '--y'``."""
    quoted = [f"'{names[key]}'" for key in keys]
    return f"argument {quoted[0]}" if len(quoted) == 1 else f"arguments {', '.join(quoted[:-1])} and {quoted[-1]}"


def _choice(names: dict, key: str, value: str) -> str:
    """The setting ``key`` given ``value`` as its user would write it: ``device 'cpu'``, ``--device cpu``."""
    return f"{names[key]} {value}" if names[key].startswith("-") else f"{names[key]} '{value}'"


def _classical(estimator, u, v, k, correction, seed, names, v_keys=("y",)):
    """The classical estimate of I(u; v), ``v`` the projections of the variables ``v_keys``, which its messages
    name by ``names``."""
    if estimator == "ksg":
        return ksg_mi_batch(u, v, k=k, seed=seed)
    if estimator == "gaussian":
        together = " together" if len(v_keys) > 1 else ""
        return gaussian_mi_batch(u, v, labels=(_arguments(names, "x"), _arguments(names, *v_keys) + together))
    return plugin_mi_batch(u, v, correction=correction, pair=_arguments(names, "x", *v_keys))


def estimate_mi(x, y, z=None, *, estimator: str = "dv", sliced: bool = False, slices: int = UNSET,
                slice_dim: int = UNSET, conditional: str = UNSET, alpha: float = UNSET, unit: str = NATS, seed=0,
                device=UNSET, critic: CriticConfig | None = UNSET, bound: str = UNSET, k: int = UNSET,
                correction: str | None = UNSET, quiet: bool = True, names: dict | None = None) -> MIEstimate:
    """Estimate (sliced, conditional) mutual information from paired samples.

    The settings that only some estimates use default to ``UNSET`` (:data:`estimators.choices.UNSET`, "not
    given"): left unset they take the defaults below; given to an estimate that does not use them, they are
    refused (one :class:`InputError` naming the argument), never silently ignored. ``seed`` and ``quiet`` are
    the exceptions, accepted by every estimate as every ``miaudit`` command accepts ``--seed`` and ``--quiet``
    (and as scikit-learn's estimators accept ``random_state``): a seed changes nothing where there is nothing
    random, and ``quiet`` nothing where nothing is shown, so one call can try every estimator.

    Parameters
    ----------
    x, y : array-like (n,) or (n, d)
        Paired samples of X and Y: anything NumPy makes a real array of (lists, integer, boolean and
        float16/32/64 arrays, object arrays of numbers, masked arrays without masked entries); each is
        converted to float64, so the estimate equals the float64 data's.
    z : array-like (n,) or (n, dz), optional
        Samples of a conditioning variable Z (see the module docstring for the two forms).
    estimator : {"dv", "mine", "nwj", "ksg", "gaussian", "plugin"}
        Donsker–Varadhan, MINE, NWJ neural critics; Kraskov–Stögbauer–Grassberger k-NN;
        Gaussian/CCA; discrete plug-in (Miller–Madow corrected by default).
    sliced : bool
        Estimate sliced MI over ``slices`` random slices of dimension ``slice_dim``.
    slices : int, optional
        With ``sliced=True``: the random slices (default 128).
    slice_dim : int, optional
        With ``sliced=True``: the dimension of each slice (default 1).
    conditional : {"independent", "chain"}, optional
        With ``z``: the form of the conditional estimate (default ``"independent"``; see the module docstring).
    alpha : float in (0, 1), optional
        Certified estimates (a neural ``estimator``, ``conditional`` not ``"chain"``): ``lower_bound`` holds
        with probability ≥ 1 − α (default 0.05).
    unit : {"nats", "bits"}
    seed : int or numpy.random.Generator
        Seeds what is random in the estimate: the slices of a sliced estimate (any ``estimator``); a neural
        estimator's splits and critics; KSG's tie-breaking noise, where the data have repeated values. An
        unsliced ``"gaussian"`` or ``"plugin"`` estimate, or KSG on data without ties, is the same for every seed.
    device : {"auto", "cpu", "cuda"}, optional
        Neural estimators: where the critics train (default ``"auto"``).
    critic : CriticConfig or None, optional
        Neural estimators: architecture and training of the critics (None or unset: ``CriticConfig()``).
    bound : {"bernstein", "hoeffding"}, optional
        Certified estimates: the concentration inequality of the certificate (default ``"bernstein"``).
    k : int, optional
        With ``estimator="ksg"``: its neighbours (default 3).
    correction : {"miller-madow", None}, optional
        With ``estimator="plugin"``: its bias correction, None for none (default ``"miller-madow"``).
    quiet : bool
        Neural estimators: no progress bar while the critics train (on stderr, where it is a terminal). The
        classical estimators show none either way.
    names : dict, optional
        How the messages about the data, the slices, the samples' floor and the critics' memory name ``x``, ``y``,
        ``z``, ``slices``, ``slice_dim``, ``critic``, ``device`` and ``estimator`` (keys of :data:`ARGUMENT_NAMES`),
        for a caller whose user gave them under other names (``miaudit estimate`` passes its flags,
        ``{"x": "--x", ...}``, and ``"critic": None``, which its user cannot set, and leaves these checks to this
        function); default: these arguments' own names.

    Raises
    ------
    InputError
        One error naming the argument: for text, dates, complex numbers, None, masked entries, NaN or
        inf in the samples; shapes other than (n,) or (n, d), zero columns, samples of different lengths
        or too few for the estimator; a ``sliced`` or ``quiet`` that is not True or False; a ``critic``
        that is not a valid :class:`CriticConfig`; a setting given to an estimate that does not use it
        (``slices`` or ``slice_dim`` without ``sliced=True``, ``conditional`` without ``z``, ``k`` for an
        estimator other than ``"ksg"``, ``correction`` for one other than ``"plugin"``, ``critic`` or
        ``device`` for a classical one, ``alpha`` or ``bound`` for a classical one or ``conditional="chain"``,
        which certify nothing); neural critics whose training cannot fit in the memory available
        (:func:`estimators.memory.check_critic_memory`, the audit's count of the critics: naming ``slices``,
        the samples or ``critic``, whichever to reduce), or a classical sliced estimate whose projected samples
        cannot (:func:`estimators.memory.check_projection_memory`, naming ``slices``); any other argument outside
        its range or choices.

    Returns
    -------
    MIEstimate
        For neural estimators: ``value`` is the objective on the held-out test split;
        ``lower_bound`` is certified at confidence 1 − α (for sliced MI: on the average over
        the drawn slices, by the averaged DV bound); ``per_slice_lower_bounds`` hold
        simultaneously at 1 − α (union bound over slices) and ``max_slice_lower_bound``, their
        maximum, is by data processing a certified lower bound on the full I(X; Y[, Z]).
    """
    started = time.perf_counter()
    check_choice(estimator, "estimator", ESTIMATORS)
    check_choice(unit, "unit", UNITS)
    sliced = check_bool(sliced, "sliced")
    quiet = check_bool(quiet, "quiet")
    neural, has_z = estimator in NEURAL_ESTIMATORS, z is not None
    conditional = check_choice(_setting(conditional, "conditional", has_z, DEFAULT_CONDITIONAL,
                                        "with z (a conditioning variable)", "pass z, or drop conditional"),
                               "conditional", CONDITIONAL_FORMS)
    certified = neural and not (has_z and conditional == "chain")
    uncertified = (f"estimator '{estimator}' gives no certified bound" if not neural else
                   "conditional='chain' gives no certified bound (a difference of two estimates)")
    alpha = check_probability(_setting(alpha, "alpha", certified, DEFAULT_ALPHA, "to certified estimates",
                                       f"{uncertified}; drop alpha"), "alpha")
    bound = check_choice(_setting(bound, "bound", certified, DEFAULT_BOUND, "to certified estimates",
                                  f"{uncertified}; drop bound"), "bound", BOUND_METHODS)
    trains = f"estimator '{estimator}' trains no critics"
    device = _setting(device, "device", neural, DEFAULT_DEVICE, "to neural estimators (their critics)",
                      f"{trains}; drop device")
    critic = _setting(critic, "critic", neural, None, "to neural estimators (their critics)",
                      f"{trains}; drop critic")
    correction = check_choice(_setting(correction, "correction", estimator == "plugin", DEFAULT_CORRECTION,
                                       "to estimator 'plugin' (its bias correction)",
                                       f"estimator '{estimator}' has none; drop correction"),
                              "correction", CORRECTIONS)
    names = _checked_names(names)
    slices = check_int(_setting(slices, "slices", sliced, DEFAULT_SLICES, "to sliced estimation",
                                "pass sliced=True, or drop slices"), names["slices"], 1)
    slice_dim = check_int(_setting(slice_dim, "slice_dim", sliced, DEFAULT_SLICE_DIM, "to sliced estimation",
                                   "pass sliced=True, or drop slice_dim"), names["slice_dim"], 1)
    k = check_int(_setting(k, "k", estimator == "ksg", DEFAULT_K, "to estimator 'ksg' (its neighbours)",
                           f"estimator '{estimator}' has none; drop k"), "k", 1)
    config = checked_config(critic) if neural else None
    x = as_samples(x, names["x"], min_rows=2)
    y = as_samples(y, names["y"], min_rows=2)
    z = None if z is None else as_samples(z, names["z"], min_rows=2)
    n = check_same_length(**{names["x"]: x, names["y"]: y, names["z"]: z})
    if sliced:
        check_slice_dim(slice_dim, {names[key]: a.shape[1] for key, a in (("x", x), ("y", y), ("z", z))
                                    if a is not None}, names["slice_dim"])
    need, why = minimum_samples(estimator, [a.shape[1] for a in (x, y, z) if a is not None], sliced=sliced,
                                slice_dim=slice_dim, k=k, critic=config)
    if n < need:
        raise InputError(f"{_arguments(names, 'x', 'y')} have {counted(n, 'sample')}; "
                         f"{_choice(names, 'estimator', estimator)} needs at least {need} ({why})")
    rng = as_generator(seed)
    columns = sum(min(slice_dim, a.shape[1]) if sliced else a.shape[1] for a in (x, y, z) if a is not None)
    problem = MIProblem(x, y, z, chain=z is not None and conditional == "chain")
    if config is not None:
        # One critic per slice (one unsliced), twice for the chain rule, on (u, v) of ``columns`` numbers; the
        # count holds the projections (the critics' stacked inputs), so it is the one check of a neural estimate.
        check_critic_memory((slices if sliced else 1) * (2 if problem.chain else 1), n, columns, config,
                            slices=slices if sliced else None, device=device, config_name=names["critic"],
                            samples_name=_arguments(names, "x", "y"), slices_name=names["slices"],
                            device_name=names["device"], cpu=_choice(names, "device", "cpu"))
    elif sliced:
        check_projection_memory(slices, n, columns, names["slices"])
    n_slices = slices if sliced else 0
    n_terms = n_slices or 1
    details: dict = {"quantity": _describe(z is not None, conditional, sliced)}

    notes = []
    if estimator in NEURAL_ESTIMATORS:
        # The estimators' one slice -> fit path, shared with the audit engine.
        trained = fit_problems([problem], slices=n_slices, slice_dim=slice_dim, rng=rng, objective=estimator,
                               config=config, device=device, quiet=quiet, desc=f"{estimator} critics")
        fit, critics = trained.fit, trained.problems[0]
        if sliced:
            details["frames"] = critics.slicing.frames  # slice s projects X onto frames["x"][s], Y onto frames["y"][s]
        terms = critics.values(fit.estimates)
        details.update(steps=fit.steps, split_sizes=fit.split_sizes, training_seconds=fit.seconds,
                       history=fit.history, critic=dataclasses.asdict(config))
        lower = per_slice_lower = max_slice_lower = None
        if not problem.chain:
            # The candidate caps (quantiles of the validation values) serve both certificates: computed once.
            candidates = cap_candidates(fit.validation_joint, fit.validation_product, fit.output_range[1])
            per_slice_lower, caps = certify_critics(fit, alpha / n_terms, bound, candidates)
            details["caps"] = caps
            if sliced:
                lower = sliced_lower_bound(fit, critics.terms, alpha, bound, candidates)
                max_slice_lower = float(per_slice_lower.max())
            else:
                lower = float(per_slice_lower[0])
        stderr_single = None if problem.chain else float(fit.stderr[0])
    else:
        u, v_y, v_z, slicing = problem_projections(problem, n_slices, slice_dim, rng)
        if sliced:
            details["frames"] = slicing.frames
        v = v_y if v_z is None else np.concatenate((v_y, v_z), axis=2)
        ksg_seed = int(rng.integers(2**31))
        terms = _classical(estimator, u, v, k, correction, ksg_seed, names, ("y",) if v_z is None else ("y", "z"))
        if problem.chain:
            second = _classical(estimator, u, v_z, k, correction, ksg_seed, names, ("z",))
            if np.isinf(second).any():
                raise InputError(f"argument '{names['z']}' determines '{names['x']}' exactly (an exact linear "
                                 "relation): I(X; Z) is infinite, so the chain-rule difference I(X; Y, Z) - I(X; Z) "
                                 "is undefined")
            terms = terms - second
        if np.isinf(terms).any():
            notes.append(f"{names['x']} is an exact linear function of the other variables: the Gaussian MI is "
                         "infinite (JSON shows null)")
        if estimator == "ksg" and any(breaks_ties(u_s, v_s) for u_s, v_s in zip(u, v)):
            notes.append(f"the data have repeated values (ties); KSG assumes continuous data, so noise of standard "
                         f"deviation {TIE_JITTER:g} (relative to each standardized coordinate, seeded) broke the ties "
                         "(Kraskov et al. 2004, Sec. II); for discrete data the 'plugin' estimator is the right one")
        lower = per_slice_lower = max_slice_lower = None
        stderr_single = None

    value = float(np.mean(terms))
    if sliced:
        stderr = float(np.std(terms, ddof=1) / np.sqrt(n_terms)) if n_terms > 1 else None
    else:
        stderr = stderr_single
    result = MIEstimate(
        estimator=estimator, value=value, unit=NATS, lower_bound=lower,
        confidence=None if lower is None else 1.0 - alpha, stderr=stderr, n=n,
        seconds=time.perf_counter() - started, sliced=bool(sliced), slices=n_terms if sliced else None,
        per_slice=np.asarray(terms, dtype=float) if sliced else None,
        per_slice_lower_bounds=per_slice_lower if sliced else None,
        max_slice_lower_bound=max_slice_lower, details=details, notes=tuple(notes),
    )
    return result.to(unit)


def _describe(has_z: bool, conditional: str, sliced: bool) -> str:
    s = "S" if sliced else ""
    if not has_z:
        return f"{s}I(X; Y)"
    if conditional == "independent":
        return f"{s}I(X; Y, Z) (= {s}I(X; Y | Z) when X and Z are independent)"
    return f"{s}I(X; Y, Z) - {s}I(X; Z) (chain rule, estimate only)"
