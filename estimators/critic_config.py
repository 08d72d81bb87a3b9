"""The critic ensemble's hyper-parameters, in a module that imports no torch.

The command line builds its flags from these fields, so ``miaudit audit --help`` and usage
errors need them without loading torch (issue 13, §3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .choices import NEURAL_ESTIMATORS  # noqa: F401 - imported from here by the audit
from .validation import InputError, check_choice, check_finite_number, check_int, check_positive, check_probability, plain

# The critic architectures: the Pufferfish paper's shallow class G_ℓ(a) (Section VI-C), or an MLP.
ARCHITECTURES = ("shallow", "mlp")

#: The widest ``output_range`` (lo, hi) a critic may have. The critics train in float32, where e^T overflows
#: past 88.7 (NWJ's objective holds e^{T−1}); the certificate bounds E_Q[e^T] from below by e^lo in float64,
#: which underflows to 0 below −745 and would make the certified bound −log 0 = +inf. Within these limits every
#: e^T is finite and positive, and the range's float32 resolution stays below 1e-4 nats.
OUTPUT_RANGE_LIMITS = (-700.0, 88.0)


@dataclass(frozen=True)
class CriticConfig:
    """Hyper-parameters of the critic ensemble and its training.

    Attributes
    ----------
    architecture : {"shallow", "mlp"}
        ``"shallow"``: the paper's class G_ℓ(a), ℓ = ``hidden`` ReLU units plus a linear skip.
        ``"mlp"``: ``depth`` hidden layers of width ``hidden``.
    batch_size : int
        Samples of one training step, at least 2 (the product pairs of a step pair each sample with
        another); a training split with fewer samples is used whole.
    output_range : (lo, hi)
        Every critic is bounded to this interval, which the certified bound requires. Values
        of e^T enter the certificate through e^hi, so ``hi`` is kept small; DV is invariant to
        shifts of T, so a small ``hi`` costs little as long as the log-likelihood ratio's
        useful range (after a shift) fits in [lo, hi]. Within :data:`OUTPUT_RANGE_LIMITS`.
    split : (train, validation, test)
        Fractions of the samples for training, early stopping / candidate selection, and
        estimation / certification.
    mine_rate : float in (0, 1)
        Rate of MINE's moving average of E_Q[e^T].
    eval_shifts : int
        Product samples of the estimate: the test split's y rolled by this many distinct shifts,
        so the test split needs more samples than this.
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
        for name in ("hidden", "depth", "max_steps", "eval_every", "patience", "max_critics_per_chunk",
                     "eval_shifts"):
            check_int(getattr(self, name), name, 1)
        check_int(self.batch_size, "batch_size", 2)
        check_positive(self.learning_rate, "learning_rate")
        check_probability(self.mine_rate, "mine_rate")
        check_positive(self.min_delta, "min_delta")
        lo, hi = _numbers(self.output_range, "output_range", "two numbers (lo, hi)", 2)
        low_limit, high_limit = OUTPUT_RANGE_LIMITS
        if not low_limit <= lo < 0 < hi <= high_limit:
            raise InputError(f"argument 'output_range' must satisfy {low_limit:g} <= lo < 0 < hi <= {high_limit:g}, "
                             f"got {plain(self.output_range)}")
        fractions = np.array(_numbers(self.split, "split", "three positive fractions summing to 1", 3))
        if np.any(fractions <= 0) or abs(fractions.sum() - 1.0) > 1e-9:
            raise InputError(f"argument 'split' must be three positive fractions summing to 1, got {plain(self.split)}")
        if self.project_a is not None:
            if self.architecture != "shallow":
                raise InputError("argument 'project_a' needs architecture='shallow' (the class G_ℓ(a))")
            check_positive(self.project_a, "project_a")
        return self


def _numbers(values, name: str, wanted: str, count: int) -> list[float]:
    """``values`` as ``count`` finite real numbers, or one :class:`InputError` naming ``name``."""
    listed = values.tolist() if isinstance(values, np.ndarray) and values.ndim == 1 else values
    if not isinstance(listed, (list, tuple)) or len(listed) != count:
        raise InputError(f"argument '{name}' must be {wanted}, got {plain(values)}")
    return [check_finite_number(value, name) for value in listed]


def checked_config(config, name: str = "critic") -> CriticConfig:
    """``config`` validated (:meth:`CriticConfig.validated`), the default for None; one :class:`InputError`
    naming ``name`` for anything that is not a :class:`CriticConfig` (a dict of its fields, say)."""
    if config is None:
        return CriticConfig()
    if not isinstance(config, CriticConfig):
        raise InputError(f"argument '{name}' must be an estimators.CriticConfig (or None for the defaults), got "
                         f"{type(config).__name__}; build one with CriticConfig(field=value, ...)")
    return config.validated()


#: Hidden activations one scoring pass of held-out rows allows itself, and the fewest rows a pass takes:
#: critics score their rows in blocks of :func:`scoring_rows` (the memory check counts the same block).
SCORING_ACTIVATIONS = 1 << 24
MIN_SCORING_ROWS = 256


def scoring_rows(n_critics: int, hidden: int) -> int:
    """Rows of one scoring pass of ``n_critics`` critics of ``hidden`` units: at least :data:`MIN_SCORING_ROWS`,
    else :data:`SCORING_ACTIVATIONS` hidden activations."""
    return max(MIN_SCORING_ROWS, SCORING_ACTIVATIONS // max(1, n_critics * hidden))
