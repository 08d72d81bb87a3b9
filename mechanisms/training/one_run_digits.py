"""One DP-SGD training run on scikit-learn's digits with m canaries, for one-run audits.

The model is a softmax regression on the 8×8 digits (64 pixel features scaled to [0, 1], a bias,
10 classes: 650 weights), trained by full-batch DP-SGD (Abadi et al. 2016, Algorithm 1: per-sample
gradients clipped to ℓ₂ norm C, summed, N(0, σ²C² I) added, divided by the batch size, an SGD step).
Each of m canaries is in the training set when its fair coin says so (Steinke, Nasr and Jagielski
2023, Algorithm 1), which is add/remove of that canary; the claim is the accountant's ε at δ for
q = 1 and T steps (:func:`mechanisms.training.accountant.dpsgd_epsilon`).

Two kinds of canary:

- ``"gradient"`` (white-box, the Dirac canary of Nasr et al. 2023): canary i's per-sample gradient
  is C·e_{650+i}, on a weight of its own that no real example's gradient touches, so after clipping
  it is exactly C. The release is the final parameters; canary i's score is −θ_{650+i}·n/η, the
  sum over the steps of the noisy gradient's coordinate: N(T·C, T σ²C²) when included, N(0, T σ²C²)
  when not.
- ``"input"`` (black-box): canary i is a digit from the held-out half of the data with a wrong label
  (drawn by the seed); the release is the final model, canary i's score minus its cross-entropy loss.

Training is torch, batched over runs (:func:`digits_one_runs`: several seeds' runs as one stacked model,
all per-sample gradients in one batched forward and backward, clipped by the outer-product norm), on the
CPU or CUDA.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, check_choice, check_int, check_positive, check_probability

from mechanisms.training.accountant import dpsgd_epsilon, noise_for_epsilon

__all__ = ["CANARY_KINDS", "OneRunTraining", "digits_one_run", "digits_one_runs"]

CANARY_KINDS = ("gradient", "input")
CLASSES = 10


@dataclass(frozen=True)
class OneRunTraining:
    """One training run's canary scores and coins.

    Attributes
    ----------
    scores : ndarray of shape (m,)
    included : ndarray of bool, shape (m,)
    claimed_epsilon : float
        The accountant's ε at ``delta`` (RDP unless ``accountant`` says PLD).
    delta, noise_multiplier : float
    steps, canaries, examples : int
        T, m and the number of real training examples.
    kind, accountant : str
    test_accuracy : float
        The final model's accuracy on the held-out half (canaries excluded).
    """

    scores: np.ndarray
    included: np.ndarray
    claimed_epsilon: float
    delta: float
    noise_multiplier: float
    steps: int
    canaries: int
    examples: int
    kind: str
    accountant: str
    test_accuracy: float


def _digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.data / 16.0, data.target.astype(np.int64)


#: Pixels of one of scikit-learn's digits (8 × 8): with the bias, (64 + 1) × 10 softmax parameters.
DIGITS_PIXELS = 64


def one_run_memory(canaries: int, kind: str = "gradient", steps: int = 20, runs: int = 1) -> int:
    """Bytes :func:`digits_one_runs` holds at once at least (its largest arrays), before it allocates any.

    Every run's noise for every step (runs × steps × parameters float64, where the parameters are the
    model's and one per gradient canary), drawn per run and then stacked (twice); five vectors of
    parameters per run (the model, its gradient, the noisy step, the canaries' gradient, a temporary);
    the coins' uniform draws (float64 per canary). The command line compares it with the memory
    available before any work (``miaudit one-run``).
    """
    parameters = (DIGITS_PIXELS + 1) * CLASSES + (canaries if kind == "gradient" else 0)
    return 8 * runs * (2 * steps * parameters + 5 * parameters + canaries)


def _softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def _features(x):
    return np.hstack([x, np.ones((len(x), 1))])


def digits_one_run(*, epsilon: float = 4.0, delta: float = 1e-5, canaries: int = 1000, kind: str = "gradient",
                   steps: int = 20, clip_norm: float = 1.0, learning_rate: float = 2.0, accountant: str = "rdp",
                   seed: int = 0, device: str = "cpu") -> OneRunTraining:
    """Train once with ``canaries`` canaries each included by a fair coin; return their scores.

    Parameters
    ----------
    epsilon, delta : float
        The noise multiplier σ is the accountant's for (ε, δ) at q = 1 and ``steps``
        (:func:`mechanisms.training.accountant.noise_for_epsilon`).
    canaries : int
        m. Gradient canaries need nothing else; input canaries are drawn from the held-out half
        (at most its size, 898).
    kind : {"gradient", "input"}
    steps : int
        T, full-batch steps.
    clip_norm, learning_rate : float
    accountant : {"rdp", "pld"}
    seed : int
        Seeds the coins, the input canaries' labels and the noise.
    device : {"cpu", "cuda", "auto"}
        Where the run trains (:func:`digits_one_runs`).

    Returns
    -------
    OneRunTraining
    """
    return digits_one_runs(epsilon=epsilon, delta=delta, canaries=canaries, kind=kind, steps=steps,
                           clip_norm=clip_norm, learning_rate=learning_rate, accountant=accountant, seeds=(seed,),
                           device=device)[0]


@dataclass(frozen=True)
class _RunSetup:
    """One run's draws, made before training in :func:`digits_one_run`'s order: split, coins, labels, noise."""

    train: np.ndarray
    test_rows: np.ndarray
    included: np.ndarray
    canary_x: np.ndarray | None
    canary_y: np.ndarray | None
    noise: np.ndarray  # (T, D): step t's standard normal draws


def _setup(seed, x, y, m: int, kind: str, steps: int, width: int) -> _RunSetup:
    rng = np.random.default_rng(seed)
    split = rng.permutation(len(x))
    train, held = split[: len(x) // 2], split[len(x) // 2:]
    if kind == "input" and m > len(held):
        raise InputError(f"argument 'canaries' must be at most {len(held)} for input canaries (the held-out half)")
    included = rng.random(m) < 0.5  # the coins (Steinke et al. Algorithm 1), drawn before training
    canary_x = canary_y = None
    test_rows = held
    if kind == "input":
        canary_rows = held[:m]
        canary_x = _features(x[canary_rows])
        # A wrong label for each canary: the true one shifted by 1..9 (uniform over the nine others).
        canary_y = (y[canary_rows] + rng.integers(1, CLASSES, size=m)) % CLASSES
        test_rows = held[m:] if len(held) > m else held
    # The noise of every step, drawn after the coins and labels as the steps would draw it one by one.
    noise = rng.standard_normal((steps, width + (m if kind == "gradient" else 0)))
    return _RunSetup(train, test_rows, included, canary_x, canary_y, noise)


def _clipped_gradient_sums(weights, data, onehot, row_weights, clip_norm: float):
    """Σ_i w_i · min(1, C/‖g_i‖) · g_i for R softmax regressions on their n examples, shape ``(R, 650)``.

    One batched forward and backward: autograd gives every example's gradient of its own loss with respect to
    its logits (its *backprop* b_i, (R, n, 10)); example i's parameter gradient is the outer product
    g_i = x_i ⊗ b_i, whose norm is ‖x_i‖·‖b_i‖, so the clipped sum is Σ_i s_i x_i ⊗ b_i without storing the
    n per-sample gradients (how Opacus computes a linear layer's per-sample gradients from activations and
    backprops; the norm identity is the "ghost norm" of Goodfellow 2015 and Li et al. 2022, "Large language
    models can be strong differentially private learners", Section 4).
    """
    import torch

    runs, _, features = data.shape
    logits = torch.einsum("rnf,rfc->rnc", data, weights.reshape(runs, features, CLASSES)).detach()
    logits.requires_grad_(True)
    loss = (torch.logsumexp(logits, dim=2) - (logits * onehot).sum(dim=2)).sum()  # per-example losses, summed
    (backprops,) = torch.autograd.grad(loss, logits)  # (R, n, 10): each example's own ∂ℓ_i/∂logits_i
    norms = torch.linalg.vector_norm(data, dim=2) * torch.linalg.vector_norm(backprops, dim=2)
    scale = torch.clamp(clip_norm / torch.clamp(norms, min=1e-300), max=1.0) * row_weights
    return torch.einsum("rn,rnf,rnc->rfc", scale, data, backprops).reshape(runs, features * CLASSES)


def digits_one_runs(*, epsilon: float = 4.0, delta: float = 1e-5, canaries: int = 1000, kind: str = "gradient",
                    steps: int = 20, clip_norm: float = 1.0, learning_rate: float = 2.0, accountant: str = "rdp",
                    seeds=(0,), device: str = "cpu") -> list:
    """:func:`digits_one_run` for each seed in ``seeds``, the runs trained together as one batched model in torch.

    The R runs' parameters are stacked ``(R, D)``; every step computes all R·n per-sample gradients of the
    cross-entropy loss in one batched forward and backward (:func:`_clipped_gradient_sums`), clips each to
    ℓ₂ norm C, sums the examples each run trains on (its own training half and its included canaries: a 0/1
    weight per row, so runs of different sizes share one tensor), adds that run's noise and steps. Each run's draws (split, coins, labels, noise) come from its own seed in the order a lone run
    draws them, so run r equals ``digits_one_run(seed=seeds[r])``.

    Returns
    -------
    list of OneRunTraining
        In the order of ``seeds``.
    """
    import torch

    from estimators.device import resolve_device

    check_positive(epsilon, "epsilon")
    check_probability(delta, "delta")
    m = check_int(canaries, "canaries", 2)
    steps = check_int(steps, "steps", 1)
    check_choice(kind, "kind", CANARY_KINDS)
    seeds = list(seeds)
    if not seeds:
        raise InputError("argument 'seeds' must hold at least one seed")
    device = resolve_device(device)
    x, y = _digits()
    features_dim = x.shape[1] + 1
    width = features_dim * CLASSES
    runs = [_setup(seed, x, y, m, kind, steps, width) for seed in seeds]
    sigma = noise_for_epsilon(epsilon, 1.0, steps, delta, accountant)
    claimed = dpsgd_epsilon(sigma, 1.0, steps, delta, accountant)
    # Rows of run r: its training half, then (input canaries) its m canaries, weighted by their coins.
    rows = [np.vstack([_features(x[r.train])] + ([r.canary_x] if kind == "input" else [])) for r in runs]
    labels = [np.eye(CLASSES)[np.concatenate([y[r.train]] + ([r.canary_y] if kind == "input" else []))] for r in runs]
    weights = [np.concatenate([np.ones(len(r.train))] + ([r.included] if kind == "input" else [])) for r in runs]
    as_tensor = lambda value: torch.as_tensor(np.stack(value), dtype=torch.float64, device=device)  # noqa: E731
    data, target, weight = as_tensor(rows), as_tensor(labels), as_tensor(weights)
    noise = as_tensor([r.noise for r in runs])  # (R, T, D)
    extra = m if kind == "gradient" else 0
    canary_gradient = as_tensor([clip_norm * r.included for r in runs]) if extra else None
    theta = torch.zeros((len(runs), width + extra), dtype=torch.float64, device=device)
    # Divided by the expected batch size (as Opacus does), fixed before the coins: the actual size would
    # tell how many canaries were included.
    batch = len(runs[0].train) + m // 2
    for step in range(steps):
        gradient = _clipped_gradient_sums(theta[:, :width], data, target, weight, clip_norm)
        if extra:  # each included Dirac canary: C on its own weight
            gradient = torch.cat([gradient, canary_gradient], dim=1)
        noisy = gradient + sigma * clip_norm * noise[:, step]
        theta = theta - learning_rate * noisy / batch
    theta = theta.cpu().numpy()
    results = []
    for r, setup in enumerate(runs):
        w = theta[r, :width].reshape(features_dim, CLASSES)
        accuracy = float(np.mean(np.argmax(_features(x[setup.test_rows]) @ w, axis=1) == y[setup.test_rows]))
        if kind == "gradient":
            scores = -theta[r, width:] * batch / learning_rate
        else:
            probabilities = _softmax(setup.canary_x @ w)
            scores = np.log(np.maximum(probabilities[np.arange(m), setup.canary_y], 1e-300))  # minus the loss
        results.append(OneRunTraining(scores=scores, included=setup.included, claimed_epsilon=claimed, delta=delta,
                                      noise_multiplier=sigma, steps=steps, canaries=m, examples=len(setup.train),
                                      kind=kind, accountant=accountant, test_accuracy=accuracy))
    return results
