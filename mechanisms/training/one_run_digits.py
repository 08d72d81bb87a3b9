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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, check_choice, check_int, check_positive, check_probability

from .accountant import dpsgd_epsilon, noise_for_epsilon

__all__ = ["CANARY_KINDS", "OneRunTraining", "digits_one_run"]

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


def _softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def _features(x):
    return np.hstack([x, np.ones((len(x), 1))])


def digits_one_run(*, epsilon: float = 4.0, delta: float = 1e-5, canaries: int = 1000, kind: str = "gradient",
                   steps: int = 20, clip_norm: float = 1.0, learning_rate: float = 2.0, accountant: str = "rdp",
                   seed: int = 0) -> OneRunTraining:
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

    Returns
    -------
    OneRunTraining
    """
    check_positive(epsilon, "epsilon")
    check_probability(delta, "delta")
    m = check_int(canaries, "canaries", 2)
    steps = check_int(steps, "steps", 1)
    check_choice(kind, "kind", CANARY_KINDS)
    rng = np.random.default_rng(seed)
    x, y = _digits()
    split = rng.permutation(len(x))
    train, held = split[: len(x) // 2], split[len(x) // 2:]
    if kind == "input" and m > len(held):
        raise InputError(f"argument 'canaries' must be at most {len(held)} for input canaries (the held-out half)")
    sigma = noise_for_epsilon(epsilon, 1.0, steps, delta, accountant)
    claimed = dpsgd_epsilon(sigma, 1.0, steps, delta, accountant)
    included = rng.random(m) < 0.5  # the coins (Steinke et al. Algorithm 1), drawn before training
    features = _features(x[train])
    labels = np.eye(CLASSES)[y[train]]
    if kind == "input":
        canary_rows = held[:m]
        canary_x = _features(x[canary_rows])
        # A wrong label for each canary: the true one shifted by 1..9 (uniform over the nine others).
        canary_y = (y[canary_rows] + rng.integers(1, CLASSES, size=m)) % CLASSES
        features = np.vstack([features, canary_x[included]])
        labels = np.vstack([labels, np.eye(CLASSES)[canary_y[included]]])
        test_rows = held[m:] if len(held) > m else held
    else:
        test_rows = held
    width = features.shape[1] * CLASSES
    extra = m if kind == "gradient" else 0
    theta = np.zeros(width + extra)
    # Divided by the expected batch size (as Opacus does), fixed before the coins: the actual size would
    # tell how many canaries were included.
    batch = len(train) + m // 2
    for _ in range(steps):
        weights = theta[:width].reshape(features.shape[1], CLASSES)
        residual = _softmax(features @ weights) - labels  # (n, 10): ∂ℓ/∂logits
        # Per-sample gradient r_j ⊗ x_j has norm ‖r_j‖·‖x_j‖; clipping scales each by min(1, C/norm).
        norms = np.linalg.norm(residual, axis=1) * np.linalg.norm(features, axis=1)
        scale = np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))
        gradient = np.zeros_like(theta)
        gradient[:width] = (features.T @ (residual * scale[:, None])).ravel()
        if extra:
            gradient[width:] = clip_norm * included  # each included Dirac canary: C on its own weight
        noisy = gradient + sigma * clip_norm * rng.standard_normal(theta.shape)
        theta = theta - learning_rate * noisy / batch
    weights = theta[:width].reshape(features.shape[1], CLASSES)
    accuracy = float(np.mean(np.argmax(_features(x[test_rows]) @ weights, axis=1) == y[test_rows]))
    if kind == "gradient":
        scores = -theta[width:] * batch / learning_rate
    else:
        probabilities = _softmax(canary_x @ weights)
        scores = np.log(np.maximum(probabilities[np.arange(m), canary_y], 1e-300))  # minus the loss
    return OneRunTraining(scores=scores, included=included, claimed_epsilon=claimed, delta=delta,
                          noise_multiplier=sigma, steps=steps, canaries=m, examples=len(train), kind=kind,
                          accountant=accountant, test_accuracy=accuracy)
