"""DP-SGD training runs in torch, on a CPU or a GPU: the step of :mod:`~mechanisms.training.dpsgd`
batched over m runs as one batched model, for logistic regression or a one-hidden-layer MLP.

The step is the one :class:`~mechanisms.training.dpsgd.DPSGD` takes (Abadi et al. 2016,
Algorithm 1, as Opacus 1.6 computes it): per-sample gradients, each clipped to ℓ₂ norm ≤ C,
summed over the sampled examples, N(0, σ²C² I) added, divided by the expected batch size, a
plain SGD step. With ``hidden = 0`` the model is DPSGD's logistic regression (its closed-form
per-sample gradients); with ``hidden = H > 0`` it is the MLP

    logit(x) = w₂ · relu(W₁ x̃ + b₁) + b₂,   x̃ = x (p features),

whose per-sample gradients are written out by the chain rule (backpropagation, Rumelhart,
Hinton and Williams 1986) for all m·n examples at once, with no Python loop over runs or
examples. A step never forms them: each is a few outer products of one example's vectors, so
the clipped sum comes from those factors and their norms (:func:`torch_factored_clipped_sum`),
in O(m·n·(H + p) + m·D) memory instead of the O(m·n·D) of :func:`torch_per_sample_gradients`,
which the tests keep as its reference. The flat parameter vector is ``[W₁ (H×p, row-major), b₁, w₂, b₂]``: its first
coordinate W₁[0, 0] multiplies feature 0, the canary coordinate, which is 0 in every ordinary
example, so as in the logistic model only a canary moves it. A gradient canary's crafted
gradient is ``canary_scale``·C on that coordinate. The MLP starts from one initialisation
(seeded by ``init_seed``, the same for every run): the audit compares training randomness only.

Randomness (Poisson inclusion, shuffles, noise) comes from a torch generator on the device,
seeded from the numpy generator the mechanism is called with: the same seed gives the same
outputs on the same device, but not the numbers :class:`DPSGD` draws (the laws are the same). A noisy
sum is snapped to DPSGD's power-of-two grid (:func:`torch_snap`), so the two release the same values.
:func:`trainer_for_device` is how ``miaudit audit --device`` swaps a catalog entry's NumPy trainer for
this one.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

from estimators.device import to_device
from estimators.validation import InputError, check_choice, check_int

from mechanisms.training.device_databases import device_databases
from mechanisms.training.dpsgd import DPSGD
from mechanisms.training.records import GRADIENT_CANARY, ORDINARY

__all__ = ["TorchDPSGD", "on_device", "torch_clipped_gradient_sum", "torch_factored_clipped_sum",
           "torch_per_sample_gradients", "torch_snap", "trainer_for_device", "trainer_source", "trains_on_gpu",
           "weighs_devices"]

_DTYPES = ("float64", "float32")
#: Runs one call trains on a CUDA device (:attr:`TorchDPSGD.preferred_chunk_size`; the runner cuts it to its
#: database-entry limit, :data:`mechanisms.execution.settings.MAX_CHUNK_ENTRIES`): the runner's default of 256 makes a
#: GPU's steps a few small kernels each, with the host's per-call work (databases, checks, copies) between them.
GPU_CHUNK_RUNS = 4096

#: θ₀ on its device, one tensor for every call that starts from the same θ₀ (:meth:`TorchDPSGD.initial_parameters`),
#: so that it crosses from the host once, not at each call (66 KB at d = 8,257 in float64; issue 42). Keyed by the
#: process (a forked child does not read its parent's device memory), device, dtype and what fixes θ₀; at most
#: :data:`KEPT_INITIAL` kept, the oldest dropped first.
_INITIAL: dict = {}
KEPT_INITIAL = 8


def _torch():
    try:
        import torch
    except ImportError:
        raise InputError("TorchDPSGD needs torch: pip install 'torch==2.13.0'") from None
    return torch


def _split(theta, features: int, hidden: int):
    """Views of the flat ``(m, D)`` parameters: W₁ (m, H, p), b₁ (m, H), w₂ (m, H), b₂ (m,)."""
    m, width = theta.shape[0], hidden * features
    return (theta[:, :width].reshape(m, hidden, features), theta[:, width:width + hidden],
            theta[:, width + hidden:width + 2 * hidden], theta[:, -1])


def torch_logits(theta, x, hidden: int):
    """Logits ``(m, n)`` of the m models on their ``(m, n, p)`` inputs (logistic if ``hidden = 0``)."""
    torch = _torch()
    if hidden == 0:
        return torch.einsum("mnp,mp->mn", x, theta[:, :-1]) + theta[:, -1:]
    w1, b1, w2, b2 = _split(theta, x.shape[2], hidden)
    activation = torch.relu(torch.einsum("mnp,mhp->mnh", x, w1) + b1[:, None, :])
    return torch.einsum("mnh,mh->mn", activation, w2) + b2[:, None]


def torch_per_sample_gradients(theta, dbs, canary_gradient, hidden: int = 0):
    """Per-sample gradients ``(m, n, D)`` of the logistic loss log(1 + e^z) − y z, z the logit.

    ``dbs`` is ``(m, n, p + 2)`` (rows ``[x, y, role]``); null records get 0, gradient canaries
    ``canary_gradient`` (D,). With ``hidden = 0`` this is
    :func:`mechanisms.training.dpsgd.per_sample_gradients` in torch.
    """
    torch = _torch()
    examples = _examples(dbs, canary_gradient)
    x = examples.x
    m, n, p = x.shape
    residual, hidden_grad, activation = _gradient_factors(theta, examples, hidden)
    if hidden == 0:
        grads = torch.cat([residual[:, :, None] * x, residual[:, :, None]], dim=2)
    else:
        grads = torch.cat([(hidden_grad[:, :, :, None] * x[:, :, None, :]).reshape(m, n, hidden * p), hidden_grad,
                           residual[:, :, None] * activation, residual[:, :, None]], dim=2)
    return torch.where(examples.is_canary[:, :, None], canary_gradient, grads)


class _Examples(NamedTuple):
    """What a step reads of the training sets ``(m, n, p + 2)`` that no step changes, computed once a call
    (:func:`_examples`): every step's clipped sum takes the same values from here that it would compute afresh,
    in fewer torch calls a step (each a kernel launch's host time on a GPU, issue 42)."""

    x: object  #: features (m, n, p)
    y: object  #: labels (m, n)
    ordinary: object  #: ordinary examples (m, n), bool
    canary: object  #: gradient canaries (m, n), in x's dtype
    is_canary: object  #: gradient canaries (m, n), bool
    squared_x: object  #: ‖[x_i, 1]‖² (m, n)
    canary_squared: object  #: ‖canary gradient‖² (0-d)


def _examples(dbs, canary_gradient) -> _Examples:
    """The :class:`_Examples` of the training sets ``dbs`` (rows ``[x, y, role]``) and the canary's gradient."""
    x, y, role = dbs[:, :, :-2], dbs[:, :, -2], dbs[:, :, -1]
    canary = (role == GRADIENT_CANARY).to(x.dtype)
    return _Examples(x, y, role == ORDINARY, canary, canary > 0, (x * x).sum(dim=2) + 1.0,
                     (canary_gradient * canary_gradient).sum())


def _gradient_factors(theta, examples: _Examples, hidden: int):
    """(residual ∂loss/∂logit ``(m, n)``, hidden-layer gradient ∂loss/∂pre ``(m, n, H)``, activation
    ``(m, n, H)``) of every example (None, None for the logistic model): the vectors whose outer products with
    the example's features are its per-sample gradient; 0 for every example that is not ordinary."""
    torch = _torch()
    x, y = examples.x, examples.y
    if hidden == 0:
        return (torch.sigmoid(torch_logits(theta, x, 0)) - y) * examples.ordinary, None, None
    w1, b1, w2, _ = _split(theta, x.shape[2], hidden)
    pre = torch.einsum("mnp,mhp->mnh", x, w1) + b1[:, None, :]
    activation = torch.relu(pre)
    logit = torch.einsum("mnh,mh->mn", activation, w2) + theta[:, -1:]
    residual = (torch.sigmoid(logit) - y) * examples.ordinary
    return residual, residual[:, :, None] * w2[:, None, :] * (pre > 0), activation


def torch_clipped_gradient_sum(grads, included, clip_norm: float | None):
    """Σ_i included_i · g_i · min(1, C/‖g_i‖₂), ``(m, D)``: :func:`~mechanisms.training.dpsgd.clipped_gradient_sum`."""
    torch = _torch()
    if clip_norm is not None:
        norms = torch.linalg.vector_norm(grads, dim=2, keepdim=True)
        grads = grads * torch.clamp(clip_norm / torch.clamp(norms, min=1e-300), max=1.0)
    return torch.einsum("mn,mnd->md", included.to(grads.dtype), grads)


def torch_factored_clipped_sum(theta, dbs, included, canary_gradient, clip_norm: float | None, hidden: int = 0):
    """Σ_i included_i · g_i · min(1, C/‖g_i‖₂), ``(m, D)``, from the per-sample gradients' factors, never
    forming the ``(m, n, D)`` per-sample gradients of :func:`torch_per_sample_gradients`.

    Every per-sample gradient of the model is a few outer products of vectors of one example: the logistic
    model's ``r_i [x_i, 1]``, the MLP's ``[vec(h_i x_iᵀ), h_i, r_i a_i, r_i]`` (residual r_i, hidden-layer
    gradient h_i, activation a_i), so its squared norm is a sum of products of squared norms,
    ``‖h_i‖²(‖x_i‖² + 1) + r_i²(‖a_i‖² + 1)``, and the weighted sum Σ_i w_i g_i is one batched product
    ``(w ⊙ h)ᵀ x`` and a few weighted sums: the per-example gradient norms of Goodfellow (2015, "Efficient
    per-example gradient computations", §3) used for clipping as in Li et al. (2022, "Large language models
    can be strong differentially private learners", §4, ghost clipping). A gradient canary's gradient is
    ``canary_gradient`` (its factors are zero: its residual is masked, as a null record's). Equal to
    ``torch_clipped_gradient_sum(torch_per_sample_gradients(...), ...)`` up to rounding; the work and
    memory per step are O(m·n·(H + p) + m·D) instead of O(m·n·D).
    """
    return _factored_clipped_sum(theta, _examples(dbs, canary_gradient), included, canary_gradient, clip_norm,
                                 hidden)


def _factored_clipped_sum(theta, examples: _Examples, included, canary_gradient, clip_norm: float | None,
                          hidden: int):
    """:func:`torch_factored_clipped_sum` of the training sets' :class:`_Examples`."""
    torch = _torch()
    x = examples.x
    m, n, p = x.shape
    weights = included.to(x.dtype)
    residual, hidden_grad, activation = _gradient_factors(theta, examples, hidden)
    if hidden == 0:
        squared = residual * residual * examples.squared_x
    else:
        squared = (hidden_grad * hidden_grad).sum(dim=2) * examples.squared_x + residual * residual * (
            (activation * activation).sum(dim=2) + 1.0)
    squared = torch.where(examples.is_canary, examples.canary_squared, squared)
    if clip_norm is not None:
        weights = weights * torch.clamp(clip_norm / torch.clamp(torch.sqrt(squared), min=1e-300), max=1.0)
    weighted_residual = weights * residual
    if hidden == 0:
        ordinary = torch.cat([torch.einsum("mn,mnp->mp", weighted_residual, x), weighted_residual.sum(dim=1, keepdim=True)],
                             dim=1)
    else:
        weighted_hidden = weights[:, :, None] * hidden_grad
        ordinary = torch.cat([torch.bmm(weighted_hidden.transpose(1, 2), x).reshape(m, hidden * p),
                              weighted_hidden.sum(dim=1), torch.einsum("mn,mnh->mh", weighted_residual, activation),
                              weighted_residual.sum(dim=1, keepdim=True)], dim=1)
    return ordinary + (weights * examples.canary).sum(dim=1, keepdim=True) * canary_gradient


@dataclass(frozen=True)
class TorchDPSGD(DPSGD):
    """:class:`~mechanisms.training.dpsgd.DPSGD` in torch, on ``device``, optionally an MLP.

    Parameters
    ----------
    (all of DPSGD's), and
    device : {"auto", "cpu", "cuda"}
        Where the m runs train (resolved when called; the mechanism stays picklable).
    hidden : int >= 0
        0: logistic regression (d = p + 1); H > 0: one hidden ReLU layer of H units
        (d = H·p + 2H + 1).
    init_seed : int
        Seed of the MLP's one initialisation (W₁, w₂ ~ N(0, 1/fan-in), biases 0).
    dtype : {"float64", "float32"}
        float32 halves memory and is faster on most GPUs.
    """

    device: str = "cpu"
    hidden: int = 0
    init_seed: int = 0
    dtype: str = "float64"

    def __post_init__(self):
        super().__post_init__()
        check_choice(self.device, "device", ("auto", "cpu", "cuda"))
        check_int(self.hidden, "hidden", minimum=0)
        check_int(self.init_seed, "init_seed", minimum=0)
        check_choice(self.dtype, "dtype", _DTYPES)
        if self.init is not None and self.hidden:
            raise InputError("argument 'init' sets the logistic model's parameters; it does not apply with hidden > 0")

    @property
    def preferred_chunk_size(self) -> int | None:
        """Databases per call the runner is asked for (:func:`mechanisms.base.preferred_chunk_size`): on a CUDA
        device :data:`GPU_CHUNK_RUNS`, on the CPU None (the runner's default, and so the CPU's draws for a seed,
        unchanged). The runs of one call train together in :attr:`chunk` runs at a time (memory)."""
        from estimators.device import resolve_device

        return GPU_CHUNK_RUNS if resolve_device(self.device).type == "cuda" else None

    @property
    def parameter_dim(self) -> int:
        """d of the model: p + 1 (logistic), or H·p + 2H + 1 (MLP)."""
        if self.hidden == 0:
            return self.features + 1
        return self.hidden * self.features + 2 * self.hidden + 1

    def initial_parameters(self, torch, device, dtype):
        """θ₀ ``(D,)``: DPSGD's ``init`` or zeros (logistic, as DPSGD), or the MLP's seeded initialisation, on the
        torch ``device``: made and copied there at its first use in this process, then the same tensor
        (:data:`_INITIAL`), to be read and never written (:meth:`train_batch` clones it)."""
        init = None if self.init is None or self.hidden else np.asarray(self.init)
        key = (os.getpid(), str(device), str(dtype), self.features, self.hidden, self.init_seed,
               None if init is None else (init.dtype.str, init.shape, init.tobytes()))
        theta = _INITIAL.get(key)
        if theta is None:
            theta = self._initial_parameters(torch, device, dtype)
            while len(_INITIAL) >= KEPT_INITIAL:
                _INITIAL.pop(next(iter(_INITIAL)), None)
            _INITIAL[key] = theta
        return theta

    def _initial_parameters(self, torch, device, dtype):
        """:meth:`initial_parameters` made on the host and copied to ``device``."""
        theta = torch.zeros(self.parameter_dim, dtype=dtype)
        if self.init is not None and not self.hidden:
            theta = torch.as_tensor(np.asarray(self.init), dtype=dtype)
        if self.hidden:
            generator = torch.Generator().manual_seed(self.init_seed)
            p, h = self.features, self.hidden
            theta[:h * p] = torch.randn(h * p, generator=generator, dtype=dtype) / np.sqrt(p)
            theta[h * p + h:h * p + 2 * h] = torch.randn(h, generator=generator, dtype=dtype) / np.sqrt(h)
        # Drawn on the host (the same θ₀ on every device), sent from page-locked memory: a GPU's host does not wait.
        return to_device(theta, device, pinned=True)

    def _train(self, dbs: np.ndarray, rng) -> np.ndarray:
        return self.train_batch(dbs, rng)

    def train_batch(self, dbs, rng, *, init=None, canaries=None) -> np.ndarray:
        """Train one run per training set and return the releases ``(m, output_dim)``.

        Parameters
        ----------
        dbs : array_like of shape (m, n, p + 2)
            The m training sets (their canary rows may differ from run to run).
        rng : numpy.random.Generator
            Seeds the device's torch generator (inclusion, shuffles, noise).
        init : array_like of shape (m, d), optional
            Each run's θ₀ (default: :meth:`initial_parameters` for every run). Stacked initialisations
            train together: the black-box search of :mod:`audit.search.last_iterate` scores
            several canaries and initialisations in one batched call.
        canaries : array_like of shape (m, p + 2), optional
            The row each run's black-box release (``loss``, ``margin``) evaluates (default: ``canary``).
        """
        from estimators.device import cpu_threads, free_threads, resolve_device

        torch = _torch()
        device, dtype = resolve_device(self.device), getattr(torch, self.dtype)
        # On the CPU as many intra-op threads as the cores other processes leave free (free_threads): torch's
        # threads wait for each other at every operation, and with one of two cores busy elsewhere two threads
        # trained 256 runs 10x slower than one (0.65 s against 0.05 s, the 2-core machine).
        with cpu_threads(free_threads(torch.get_num_threads())) if device.type == "cpu" else nullcontext():
            return self._train_on(torch, device, dtype, dbs, rng, init, canaries)

    def _train_on(self, torch, device, dtype, dbs, rng, init, canaries) -> np.ndarray:
        """:meth:`train_batch` on the resolved ``device`` in ``dtype``."""
        generator = torch.Generator(device=device).manual_seed(int(rng.integers(2**63)))
        data = device_databases(torch, dbs, dtype, device)  # each distinct record crosses once
        m, n, d = data.shape[0], self.records, self.parameter_dim
        if init is None:
            theta = self.initial_parameters(torch, device, dtype).expand(m, d).clone()
        else:
            theta = to_device(np.asarray(init), device, dtype, pinned=True)
            if tuple(theta.shape) != (m, d):
                raise InputError(f"argument 'init' must have shape ({m}, {d}): one θ₀ per training set, got "
                                 f"{tuple(theta.shape)}")
            theta = theta.clone()
        canary_gradient = torch.zeros(d, dtype=dtype, device=device)
        canary_gradient[0] = self.canary_scale * self.clip_norm
        clip = None if self.bug == "no-clipping" else self.clip_norm
        noise_std = self.noise_std
        normaliser = self.sampling_rate * n if self.sampling == "poisson" else self.batch_size
        noise_of = lambda: torch.randn((m, d), generator=generator, dtype=dtype, device=device)  # noqa: E731
        reused = noise_of() if self.bug == "reused-noise" else None
        order = None
        examples = _examples(data, canary_gradient)  # what every step reads of the data, computed once
        traced = self.release in ("gradient_trace", "gradient_sum")  # the releases that read the trace
        trace = torch.zeros((m, self.steps), dtype=dtype, device=device) if traced else None
        for step in range(self.steps):
            if self.sampling == "poisson":
                included = torch.rand((m, n), generator=generator, dtype=dtype, device=device) < self.sampling_rate
            else:  # a fresh permutation per epoch, cut into batches of round(q·n)
                position = step % (n // self.batch_size)
                if position == 0:
                    order = torch.argsort(torch.rand((m, n), generator=generator, device=device), dim=1)
                chosen = order[:, position * self.batch_size:(position + 1) * self.batch_size]
                included = torch.zeros((m, n), dtype=torch.bool, device=device).scatter_(1, chosen, True)
            clipped = _factored_clipped_sum(theta, examples, included, canary_gradient, clip, self.hidden)
            noise = reused if reused is not None else noise_of()
            noisy_sum = clipped + noise_std * noise
            if noise_std > 0:  # DPSGD's snapping (mechanisms.snapping), so the float sum's low bits say nothing
                noisy_sum = torch_snap(noisy_sum)
            if traced:
                trace[:, step] = noisy_sum[:, 0]
            theta = theta - self.learning_rate * noisy_sum / normaliser
        if self.release == "parameters":
            out = theta
        elif self.release == "gradient_trace":
            out = trace
        elif self.release == "gradient_sum":
            out = trace.sum(dim=1, keepdim=True)
        else:
            if canaries is None:
                rows = to_device(np.asarray(self.canary), device, dtype, pinned=True).expand(m, -1)
            else:
                rows = to_device(np.asarray(canaries), device, dtype, pinned=True)
                if tuple(rows.shape) != (m, self.features + 2):
                    raise InputError(f"argument 'canaries' must have shape ({m}, {self.features + 2}): the row each "
                                     f"run's release evaluates, got {tuple(rows.shape)}")
            logit = torch_logits(theta, rows[:, None, :-2], self.hidden)[:, 0]
            label = rows[:, -2]
            if self.release == "margin":
                out = ((2.0 * label - 1.0) * logit)[:, None]
            else:
                out = (torch.nn.functional.softplus(logit) - label * logit)[:, None]
        return out.to(device="cpu", dtype=torch.float64).numpy()


def torch_snap(values):
    """:func:`mechanisms.snapping.snap` in torch: ``values`` rounded to the nearest multiple of
    2^GRID_EXPONENT (ties to even; exact in float64: both scalings are by powers of two)."""
    from mechanisms.snapping import GRID_EXPONENT

    return _torch().round(values * 2.0 ** -GRID_EXPONENT) * 2.0 ** GRID_EXPONENT


def on_device(mechanism: DPSGD, device: str = "auto", **changes) -> TorchDPSGD:
    """The :class:`TorchDPSGD` with ``mechanism``'s settings on ``device`` (and ``changes``)."""
    if not isinstance(mechanism, DPSGD):
        raise InputError(f"argument 'mechanism' must be a DPSGD, got {type(mechanism).__name__}")
    settings = {f.name: getattr(mechanism, f.name) for f in fields(DPSGD)}
    return TorchDPSGD(**{**settings, "device": device, **changes})


def weighs_devices(mechanism, device: str | None, *, cuda_available: bool | None = None) -> bool:
    """Whether :func:`trainer_for_device` weighs the two devices for ``mechanism`` on ``device``: a NumPy
    :class:`DPSGD` under ``"auto"`` (or no device) with a GPU present (``cuda_available``, default
    ``torch.cuda.is_available()``). Only then does it need the audit's work (its runs, its critics' seconds)."""
    if not isinstance(mechanism, DPSGD) or isinstance(mechanism, TorchDPSGD) or device not in (None, "auto"):
        return False
    return _torch().cuda.is_available() if cuda_available is None else bool(cuda_available)


def trainer_for_device(mechanism, device: str | None, runs: int = 0, *, cuda_available: bool | None = None,
                       critic_seconds=()):
    """The trainer an audit on ``device`` runs a DP-SGD mechanism with, and a note saying which.

    ``miaudit audit --device`` routes the catalog's DP-SGD entries here: a :class:`DPSGD` (NumPy) becomes
    the :class:`TorchDPSGD` with the same settings on ``"cuda"`` or ``"cpu"`` when that device is asked for.
    Under ``"auto"`` (or no device given) it trains on CUDA only where a GPU is present and the audit is
    predicted to finish sooner with the trainer there, the GPU's start counted once for the trainer and the
    critics together (:func:`mechanisms.training.device_cost.choose_training_device`), else it stays NumPy on
    the CPU: with classifier critics, an audit of a catalog entry (16 records, T = 4) gains from the GPU only
    past about 360,000 runs. Both trainers take the same step and draw from the same laws
    (``tests/test_training_torch.py``), so the audited mechanism is the same; only the random draws differ.
    Anything else (a :class:`TorchDPSGD` already, another mechanism) is returned as is, with no note.

    Parameters
    ----------
    mechanism : object
    device : {"auto", "cpu", "cuda"} or None
    runs : int
        The runs the audit makes (:func:`audit.config.trainer_device.audit_work`), which ``"auto"`` weighs.
    cuda_available : bool, optional
        Default ``torch.cuda.is_available()`` (a test's stand-in for a GPU).
    critic_seconds : sequence of (float, float)
        The audit's neural critic trainings, their predicted seconds on the CPU and on the GPU without its start.

    Returns
    -------
    (mechanism, note or None)
    """
    if not isinstance(mechanism, DPSGD) or isinstance(mechanism, TorchDPSGD):
        return mechanism, None
    if device in (None, "auto"):
        from mechanisms.training.device_cost import choose_training_device

        if not weighs_devices(mechanism, device, cuda_available=cuda_available):
            return mechanism, None
        device, why = choose_training_device(runs=runs, steps=mechanism.steps, records=mechanism.records,
                                             parameters=mechanism.parameter_dim, cuda_available=True,
                                             critic_seconds=critic_seconds)
        if device == "cpu":
            return mechanism, f"trainer: the NumPy DP-SGD on the CPU (--device auto: {why})"
        return on_device(mechanism, device), (f"trainer: the batched torch DP-SGD (TorchDPSGD) on cuda (--device "
                                              f"auto: {why}; same step and laws as the NumPy trainer)")
    check_choice(device, "device", ("cpu", "cuda"))
    return on_device(mechanism, device), (f"trainer: the batched torch DP-SGD (TorchDPSGD) on {device}, the "
                                          f"--device asked for (same step and laws as the NumPy trainer)")


def trainer_source(source, mechanism):
    """``source``, how worker processes load a catalog entry (``catalog:NAME`` or its ``[mechanism]`` table:
    :class:`mechanisms.execution.worker.MechanismReference`), with the device of the torch trainer ``mechanism``
    that replaced the entry's NumPy one (:func:`trainer_for_device`) as its ``trainer`` key, so that a worker
    loading the entry trains with the audit process's trainer (the two draw different numbers from the same laws);
    ``source`` itself for any other mechanism or source."""
    if not isinstance(mechanism, TorchDPSGD) or source is None:
        return source
    table = {"spec": source} if isinstance(source, str) else dict(source)
    if not str(table.get("spec", "")).startswith("catalog:"):
        return source
    return {**table, "trainer": mechanism.device}


def trains_on_gpu(mechanism) -> bool:
    """Whether ``mechanism`` trains on a CUDA device when called: a :class:`TorchDPSGD` whose ``device`` is
    ``"cuda"``, or ``"auto"`` with a GPU present. An audit of it pays the GPU's start whatever its critics do, so
    their device choice does not count it again (:func:`estimators.device.choose_device`'s ``cuda_started``)."""
    if not isinstance(mechanism, TorchDPSGD):
        return False
    if mechanism.device == "auto":
        return _torch().cuda.is_available()
    return mechanism.device == "cuda"
