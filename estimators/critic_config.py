"""The critic ensemble's hyper-parameters, in a module that imports no torch.

The command line builds its flags from these fields, so ``miaudit audit --help`` and usage
errors need them without loading torch (issue 13, §3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .choices import NEURAL_ESTIMATORS  # noqa: F401 - imported from here by the audit
from .validation import InputError, check_choice, check_int, check_positive

# The critic architectures: the Pufferfish paper's shallow class G_ℓ(a) (Section VI-C), or an MLP.
ARCHITECTURES = ("shallow", "mlp")


@dataclass(frozen=True)
class CriticConfig:
    """Hyper-parameters of the critic ensemble and its training.

    Attributes
    ----------
    architecture : {"shallow", "mlp"}
        ``"shallow"``: the paper's class G_ℓ(a), ℓ = ``hidden`` ReLU units plus a linear skip.
        ``"mlp"``: ``depth`` hidden layers of width ``hidden``.
    output_range : (lo, hi)
        Every critic is bounded to this interval, which the certified bound requires. Values
        of e^T enter the certificate through e^hi, so ``hi`` is kept small; DV is invariant to
        shifts of T, so a small ``hi`` costs little as long as the log-likelihood ratio's
        useful range (after a shift) fits in [lo, hi].
    split : (train, validation, test)
        Fractions of the samples for training, early stopping / candidate selection, and
        estimation / certification.
    project_a : float or None
        If set (shallow only), project onto the norm constraints of G_ℓ(a) after every step.
    patience, min_delta : int, float
        Training ends once the ensemble's mean validation objective has not improved by more
        than ``min_delta`` nats for ``patience`` evaluations. (With many critics some critic
        always "improves" by noise, so stopping looks at the mean.) Each critic still keeps
        the state of its own best validation value.
    max_critics_per_chunk : int
        Critics trained together at most; larger ensembles are trained chunk by chunk.
    """

    architecture: str = "shallow"
    hidden: int = 32
    depth: int = 2
    learning_rate: float = 1e-2
    batch_size: int = 256
    max_steps: int = 2000
    eval_every: int = 50
    patience: int = 6
    min_delta: float = 1e-3
    output_range: tuple = (-8.0, 3.0)
    split: tuple = (0.4, 0.1, 0.5)
    project_a: float | None = None
    mine_rate: float = 0.01
    max_critics_per_chunk: int = 4096
    eval_shifts: int = 4

    def validated(self) -> "CriticConfig":
        """Return self after checking every field (raises :class:`InputError`)."""
        check_choice(self.architecture, "architecture", ARCHITECTURES)
        for name in ("hidden", "depth", "batch_size", "max_steps", "eval_every", "patience",
                     "max_critics_per_chunk", "eval_shifts"):
            check_int(getattr(self, name), name, 1)
        check_positive(self.learning_rate, "learning_rate")
        check_positive(self.mine_rate, "mine_rate")
        check_positive(self.min_delta, "min_delta")
        lo, hi = self.output_range
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < 0 < hi):
            raise InputError(f"argument 'output_range' must satisfy lo < 0 < hi, got {self.output_range!r}")
        fractions = np.asarray(self.split, dtype=float)
        if fractions.shape != (3,) or np.any(fractions <= 0) or abs(fractions.sum() - 1.0) > 1e-9:
            raise InputError(f"argument 'split' must be three positive fractions summing to 1, got {self.split!r}")
        if self.project_a is not None:
            if self.architecture != "shallow":
                raise InputError("argument 'project_a' needs architecture='shallow' (the class G_ℓ(a))")
            check_positive(self.project_a, "project_a")
        return self


#: Hidden activations one scoring pass of held-out rows allows itself, and the fewest rows a pass takes:
#: critics score their rows in blocks of :func:`scoring_rows` (the memory check counts the same block).
SCORING_ACTIVATIONS = 1 << 24
MIN_SCORING_ROWS = 256


def scoring_rows(n_critics: int, hidden: int) -> int:
    """Rows of one scoring pass of ``n_critics`` critics of ``hidden`` units: at least :data:`MIN_SCORING_ROWS`,
    else :data:`SCORING_ACTIVATIONS` hidden activations."""
    return max(MIN_SCORING_ROWS, SCORING_ACTIVATIONS // max(1, n_critics * hidden))
