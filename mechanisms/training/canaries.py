"""Canaries for your own (Opacus) model, each with the neighbouring relation it models.

A training set is an ``(n, k)`` array whose rows are ``[features..., label, flag]``; ``flag`` says
what a row is, and :func:`canary_loss` turns it into each row's loss:

=========  ========================  =============================================================
flag       row                       relation it models
=========  ========================  =============================================================
``0``      an ordinary example       —
``1``      a gradient (Dirac) canary add/remove of a crafted example whose per-sample gradient is
                                     C·e on one weight of its own (:class:`DiracCanary`) and 0
                                     elsewhere: the worst case the clip norm C allows, the
                                     white-box canary of Nasr et al. (2023)
``-1``     a null record             add/remove with n fixed: the row is there but contributes no
                                     gradient, as a removed example does under Opacus's accounting
                                     (the batch is divided by its expected size either way)
=========  ========================  =============================================================

An *input canary* is an ordinary row (flag 0), e.g. a mislabelled example; its pair with and
without it models add/remove of that example (the black-box canary). :func:`canary_pair` builds the
add/remove pair (n and n − 1 rows) that ``run_audit`` audits under ``relation="add-remove"``;
:func:`null_pair` the pair of n rows each (the canary, or a null record in its place), audited under
``relation="add-remove", presence_column=False``. Prefer the null pair with Opacus: its optimizer divides
by the expected batch size, which a data loader of n − 1 rows changes, and that change is itself a
release the accountant does not cover.
"""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError, as_float_array
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

__all__ = ["CANARY", "NULL", "ORDINARY", "DiracCanary", "canary_loss", "canary_pair", "gradient_canary_row",
           "input_canary_row", "null_pair", "null_record_row"]

ORDINARY, CANARY, NULL = 0.0, 1.0, -1.0


def gradient_canary_row(features: int) -> np.ndarray:
    """A gradient canary's row: zero features and label, flag 1 (its gradient comes from :class:`DiracCanary`)."""
    return np.concatenate([np.zeros(features + 1), [CANARY]])


def null_record_row(features: int) -> np.ndarray:
    """A null record's row: zero features and label, flag −1 (no gradient)."""
    return np.concatenate([np.zeros(features + 1), [NULL]])


def input_canary_row(x, label: float) -> np.ndarray:
    """An input canary's row: its features and label, flag 0 (an ordinary example)."""
    x = as_float_array(x, "x").ravel()
    return np.concatenate([x, [float(label), ORDINARY]])


def canary_pair(base, canary) -> NeighbouringPair:
    """The add/remove pair: ``base`` with ``canary`` as its last row, and ``base`` alone.

    Parameters
    ----------
    base : array_like of shape (n − 1, k)
        The training set without the canary.
    canary : array_like of shape (k,)
        The canary's row (:func:`gradient_canary_row`, :func:`input_canary_row`).
    """
    base, canary = _rows(base, canary)
    return NeighbouringPair(np.vstack([base, canary]), base,
                            why="the canary is the last row of the first training set and absent from the second")


def null_pair(base, canary) -> NeighbouringPair:
    """``base`` with ``canary`` as its last row, and ``base`` with a null record there (n rows each).

    Add/remove with n fixed (the null record contributes no gradient): audit it with
    ``relation="add-remove", presence_column=False``.
    """
    base, canary = _rows(base, canary)
    null = null_record_row(base.shape[1] - 2)
    return NeighbouringPair(np.vstack([base, canary]), np.vstack([base, null]),
                            why="the canary is the last row of the first training set and a null record (no "
                                "gradient) is the last row of the second")


def _rows(base, canary):
    base = as_float_array(base, "base")
    canary = as_float_array(canary, "canary").ravel()
    if base.ndim != 2 or base.shape[1] != canary.size:
        raise InputError(f"argument 'canary' must be one row of the training set's width {base.shape[-1]} "
                         f"(got {canary.size} values)")
    return base, canary


def canary_loss(per_sample_loss, canary_term, flags):
    """Each row's loss: the model's for ordinary rows, the canary term for flag 1, 0 for null records.

    ``per_sample_loss`` (B,) is the model's loss per row (``reduction="none"``), ``canary_term`` (B,)
    the :class:`DiracCanary` output, ``flags`` (B,) the rows' flags. Reduce the result with ``.mean()``
    (Opacus's default ``loss_reduction="mean"``).
    """
    ordinary = (flags == ORDINARY).to(per_sample_loss.dtype)
    canary = (flags == CANARY).to(per_sample_loss.dtype)
    return ordinary * per_sample_loss + canary * canary_term


def _dirac_canary_class():
    import torch

    class DiracCanary(torch.nn.Module):
        """One weight w whose per-sample gradient is ``clip_norm`` for a canary row and 0 for every other.

        ``forward(flags)`` returns ``clip_norm · w · [flag = 1]`` per row; with :func:`canary_loss` the
        canary's per-sample gradient is exactly C on w (and 0 on the rest of the model), so Opacus's
        clipping leaves it whole. A ``torch.nn.Linear(1, 1, bias=False)`` inside, so Opacus computes its
        per-sample gradients; w starts at 0 and, in the released model, is −η/B times the sum over the
        steps of its noisy gradient: the white-box score.
        """

        def __init__(self, clip_norm: float = 1.0):
            super().__init__()
            self.clip_norm = float(clip_norm)
            self.weight = torch.nn.Linear(1, 1, bias=False)
            torch.nn.init.zeros_(self.weight.weight)

        def forward(self, flags):
            marked = (flags == CANARY).to(self.weight.weight.dtype).reshape(-1, 1)
            return self.clip_norm * self.weight(marked).reshape(-1)

    return DiracCanary


def __getattr__(name):
    # DiracCanary subclasses torch.nn.Module: built when first asked for, so importing this module needs no torch.
    if name == "DiracCanary":
        cls = _dirac_canary_class()
        globals()["DiracCanary"] = cls
        return cls
    raise AttributeError(name)
