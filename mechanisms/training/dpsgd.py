"""DP-SGD training runs as a batched mechanism ``mech(dbs, rng) -> (m, d)``.

Each of the m databases is a training set (:mod:`mechanisms.training.records`); the m runs
train m logistic-regression models at once as one batched model, with a functional DP-SGD
step (Abadi et al. 2016, "Deep learning with differential privacy", Algorithm 1) written as
Opacus 1.6 computes it: per-sample gradients of the per-sample loss, each clipped to ℓ₂
norm ≤ C, summed over the sampled examples, Gaussian noise N(0, σ²C² I) added, the sum
divided by the expected batch size q·n, and a plain SGD step θ ← θ − η·(that).

Per-sample gradients are exact in closed form: for the logistic loss
ℓ(θ; x, y) = log(1 + e^{θ·x̃}) − y θ·x̃ with x̃ = (x, 1), ∇ℓ = (sigmoid(θ·x̃) − y) x̃.
A gradient canary's gradient is crafted instead: ``canary_scale``·C on the weight of the
canary coordinate, so it is exactly C after clipping (the Dirac canary of Nasr et al. 2023).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_float_array, as_generator, check_choice, check_int, \
    check_positive, check_probability, without_repeats
from mechanisms.snapping import snap

from mechanisms.training.records import GRADIENT_CANARY, NULL, ORDINARY

__all__ = ["BUGS", "RELEASES", "SAMPLINGS", "DPSGD", "clipped_gradient_sum", "per_sample_gradients", "worst_case_init"]

RELEASES = ("parameters", "gradient_sum", "gradient_trace", "loss", "margin")
SAMPLINGS = ("poisson", "shuffle")
BUGS = ("none", "no-clipping", "unscaled-noise", "reused-noise")


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def per_sample_gradients(theta: np.ndarray, dbs: np.ndarray, canary_gradient: np.ndarray) -> np.ndarray:
    """Per-sample gradients of the logistic loss, shape ``(m, n, d)``.

    ``theta`` is ``(m, d)`` (weights of the p feature columns, then the bias), ``dbs`` is
    ``(m, n, p + 2)``; null records get 0, gradient canaries get ``canary_gradient`` (d,).
    """
    x = dbs[:, :, :-2]
    y, role = dbs[:, :, -2], dbs[:, :, -1]
    logits = np.einsum("mnp,mp->mn", x, theta[:, :-1]) + theta[:, -1:]
    residual = (_sigmoid(logits) - y) * (role == ORDINARY)
    grads = np.concatenate([residual[:, :, None] * x, residual[:, :, None]], axis=2)
    canary = role == GRADIENT_CANARY
    grads[canary] = canary_gradient
    return grads


def clipped_gradient_sum(grads: np.ndarray, included: np.ndarray, clip_norm: float | None) -> np.ndarray:
    """Σ_i included_i · g_i · min(1, C/‖g_i‖₂), shape ``(m, d)`` (no clipping when C is None).

    Clipping as Abadi et al. 2016, Algorithm 1 (Opacus divides by ‖g‖ + 1e-6 instead of ‖g‖).
    """
    if clip_norm is not None:
        norms = np.linalg.norm(grads, axis=2, keepdims=True)
        grads = grads * np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))
    return np.einsum("mn,mnd->md", included.astype(np.float64), grads)


@dataclass(frozen=True)
class DPSGD:
    """T steps of DP-SGD on logistic regression, one model per database, as a mechanism.

    Parameters
    ----------
    records : int
        n, rows per training set (the canary's slot included).
    features : int
        p, feature columns per row (rows are ``[x_1..x_p, y, role]``).
    noise_multiplier : float >= 0
        σ: the noise added to the clipped sum has standard deviation σ·C per coordinate.
    clip_norm : float > 0
        C, the per-sample ℓ₂ clipping norm.
    sampling_rate : float in (0, 1]
        q: Poisson sampling includes each row in a step independently with probability q;
        shuffled sampling cuts a fresh permutation per epoch into batches of round(q·n).
    steps : int
        T, the number of noisy steps.
    learning_rate : float > 0
        η.
    sampling : {"poisson", "shuffle"}
    release : {"parameters", "gradient_sum", "gradient_trace", "loss", "margin"}
        What a run outputs: the final parameters θ_T (white-box, d = p + 1); the canary
        coordinate of the noisy clipped gradient sum, summed over the steps (white-box gradient
        canary, d = 1) or step by step (d = T: an adversary who sees every update, the threat
        model DP-SGD's accounting covers); the canary example's logistic loss or its logit
        margin (2y − 1)·θ_T·x̃ on the final model (black-box, d = 1).
    canary : array_like, optional
        The canary row ``[x, y, role]``: the example a black-box release evaluates. Default:
        x = e_0 (the canary coordinate), y = 1.
    canary_scale : float > 0
        A gradient canary's crafted gradient is ``canary_scale``·C·e_0 before clipping.
    bug : {"none", "no-clipping", "unscaled-noise", "reused-noise"}
        ``"no-clipping"``: per-sample gradients summed unclipped; ``"unscaled-noise"``: noise
        std σ instead of σ·C; ``"reused-noise"``: one noise vector drawn per run and added at
        every step.
    chunk : int
        Runs trained together at a time (bounds memory to about chunk·n·d floats).
    init : array_like of shape (p + 1,), optional
        θ₀, the initial parameters (default zeros). :func:`worst_case_init` gives the black-box
        last-iterate audit's worst case (Annamalai and De Cristofaro 2024).
    """

    #: Every call returns arrays it makes and keeps no reference to (mechanisms.base.returns_fresh_outputs).
    fresh_outputs = True
    #: No call writes to its databases or keeps them (mechanisms.base.reads_databases_only).
    reads_databases_only = True

    records: int
    features: int
    noise_multiplier: float
    clip_norm: float = 1.0
    sampling_rate: float = 1.0
    steps: int = 10
    learning_rate: float = 1.0
    sampling: str = "poisson"
    release: str = "parameters"
    canary: tuple | None = None
    canary_scale: float = 10.0
    bug: str = "none"
    chunk: int = 2048
    init: tuple | None = None

    def __post_init__(self):
        check_int(self.records, "records", minimum=1)
        check_int(self.features, "features", minimum=1)
        if not np.isfinite(self.noise_multiplier) or self.noise_multiplier < 0:
            raise InputError(f"argument 'noise_multiplier' must be finite and >= 0, got {self.noise_multiplier!r}")
        check_positive(self.clip_norm, "clip_norm")
        if self.sampling_rate != 1.0:
            check_probability(self.sampling_rate, "sampling_rate")  # (0, 1), or exactly 1 (full batch)
        check_int(self.steps, "steps", minimum=1)
        check_positive(self.learning_rate, "learning_rate")
        check_choice(self.sampling, "sampling", SAMPLINGS)
        check_choice(self.release, "release", RELEASES)
        check_positive(self.canary_scale, "canary_scale")
        check_choice(self.bug, "bug", BUGS)
        check_int(self.chunk, "chunk", minimum=1)
        if self.sampling == "shuffle" and self.batch_size < 1:
            raise InputError(f"argument 'sampling_rate' gives an empty batch: round(q·n) = 0 for q = "
                             f"{self.sampling_rate} and n = {self.records}")
        canary = self.canary
        if canary is None:
            canary = np.zeros(self.features + 2)
            canary[0], canary[-2], canary[-1] = 1.0, 1.0, GRADIENT_CANARY
        canary = np.asarray(canary, dtype=np.float64)
        if canary.shape != (self.features + 2,):
            raise InputError(f"argument 'canary' must have {self.features + 2} entries [x, y, role], got shape {canary.shape}")
        object.__setattr__(self, "canary", tuple(canary))
        if self.init is not None:
            init = as_float_array(self.init, "init").ravel()
            if init.shape != (self.features + 1,):
                raise InputError(f"argument 'init' must hold the {self.features + 1} parameters of the logistic model "
                                 f"(weights, then the bias), got {init.size}")
            object.__setattr__(self, "init", tuple(init))

    @property
    def parameter_dim(self) -> int:
        """d of the model: p weights and a bias."""
        return self.features + 1

    @property
    def batch_size(self) -> int:
        """round(q·n): the shuffled batch size, and the normaliser of every step."""
        return int(round(self.sampling_rate * self.records))

    @property
    def output_dim(self) -> int:
        return {"parameters": self.parameter_dim, "gradient_trace": self.steps}.get(self.release, 1)

    @property
    def noise_std(self) -> float:
        """The noise's standard deviation per coordinate: σ·C, or σ under the ``"unscaled-noise"`` bug."""
        return self.noise_multiplier * (1.0 if self.bug == "unscaled-noise" else self.clip_norm)

    @property
    def release_on_grid(self) -> bool:
        """Whether every output is a multiple of the snapping grid 2^``GRID_EXPONENT`` (:mod:`mechanisms.snapping`):
        a gradient release of a run that adds noise, whose steps' noisy sums are snapped. Their sum is one too: a
        sum of grid multiples below 2^(52 + GRID_EXPONENT) in size is exact in double precision, and any double
        above has a spacing that is a multiple of the grid. The float-bit event test then finds no bits below the
        grid (:func:`audit.statistics.float_bits.has_fine_bits`) and makes no runs."""
        return self.noise_std > 0 and self.release in ("gradient_trace", "gradient_sum")

    def __call__(self, dbs, rng=None) -> np.ndarray:
        dbs = as_float_array(dbs, "dbs", ndim=3, shape=f"(m, {self.records}, {self.features + 2})",
                             first_axis="database")
        if dbs.shape[1:] != (self.records, self.features + 2):
            raise InputError(f"argument 'dbs' must have shape (m, {self.records}, {self.features + 2}), got {dbs.shape}")
        if not np.all(np.isin(without_repeats(dbs[:, :, -1]), (NULL, ORDINARY, GRADIENT_CANARY))):
            raise InputError("argument 'dbs' must have the role column (last) in {0, 1, 2}")
        rng = as_generator(rng)
        pieces = [self._train(dbs[start:start + self.chunk], rng) for start in range(0, dbs.shape[0], self.chunk)]
        # One piece is returned as it is: a copy of a wide release costs the host as much as its steps' launches.
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=0)

    def _inclusion(self, m: int, step: int, order, rng) -> np.ndarray:
        n = self.records
        if self.sampling == "poisson":
            return rng.random((m, n)) < self.sampling_rate
        batches_per_epoch = n // self.batch_size
        position = step % batches_per_epoch
        if position == 0:
            order[:] = np.argsort(rng.random((m, n)), axis=1)
        chosen = order[:, position * self.batch_size:(position + 1) * self.batch_size]
        included = np.zeros((m, n), dtype=bool)
        np.put_along_axis(included, chosen, True, axis=1)
        return included

    def _train(self, dbs: np.ndarray, rng) -> np.ndarray:
        # A broadcast view (mechanisms.base.reads_databases_only) laid out C-contiguous, as a copy is: NumPy's
        # products may sum in an order that follows the layout, and a release must not depend on how it was passed.
        dbs = np.ascontiguousarray(dbs)
        m, d = dbs.shape[0], self.parameter_dim
        theta = np.zeros((m, d)) if self.init is None else np.tile(np.asarray(self.init), (m, 1))
        canary_gradient = np.zeros(d)
        canary_gradient[0] = self.canary_scale * self.clip_norm
        clip = None if self.bug == "no-clipping" else self.clip_norm
        noise_std = self.noise_std
        normaliser = self.sampling_rate * self.records if self.sampling == "poisson" else self.batch_size
        reused = rng.standard_normal((m, d)) if self.bug == "reused-noise" else None
        order = np.zeros((m, self.records), dtype=np.int64)
        trace = np.zeros((m, self.steps))
        for step in range(self.steps):
            included = self._inclusion(m, step, order, rng)
            grads = per_sample_gradients(theta, dbs, canary_gradient)
            noise = reused if reused is not None else rng.standard_normal((m, d))
            noisy_sum = clipped_gradient_sum(grads, included, clip) + noise_std * noise
            if noise_std > 0:
                # Rounded to a power-of-two grid (Mironov's snapping, mechanisms.snapping) so that the
                # float sum's low bits do not reveal the canary: the trainer stands for real-valued DP-SGD.
                noisy_sum = snap(noisy_sum)
            trace[:, step] = noisy_sum[:, 0]
            theta = theta - self.learning_rate * noisy_sum / normaliser
        if self.release == "parameters":
            return theta
        if self.release == "gradient_trace":
            return trace
        if self.release == "gradient_sum":
            return trace.sum(axis=1, keepdims=True)
        canary = np.asarray(self.canary)
        logit = theta[:, :-1] @ canary[:-2] + theta[:, -1]
        if self.release == "margin":
            return ((2.0 * canary[-2] - 1.0) * logit)[:, None]
        return (np.logaddexp(0.0, logit) - canary[-2] * logit)[:, None]


def worst_case_init(features: int, canary, margin: float = 20.0) -> np.ndarray:
    """θ₀ at which an input canary's loss gradient stays clipped at full norm C through training.

    The worst-case initial parameters of black-box last-iterate audits (Annamalai and De Cristofaro
    2024, "Nearly tight black-box auditing of differentially private machine learning", Section 4):
    the canary ``[x, y, role]`` starts misclassified with logit margin (2y − 1)·θ₀·x̃ = −``margin``
    (θ₀ along −(2y − 1)·x̃, x̃ = (x, 1)), so its residual sigmoid(θ·x̃) − y stays near ∓1 and each step
    adds a clipped gradient of norm C in one fixed direction: the final model's loss on the canary is
    then a near-linear, near-Gaussian statistic of the canary's whole contribution, as a white-box
    view would be.
    """
    check_int(features, "features", minimum=1)
    row = as_float_array(canary, "canary").ravel()
    if row.shape != (features + 2,):
        raise InputError(f"argument 'canary' must have {features + 2} entries [x, y, role], got {row.size}")
    x = np.concatenate([row[:-2], [1.0]])
    sign = 2.0 * row[-2] - 1.0
    return -sign * margin * x / float(x @ x)
