"""The critics' inputs u and v on their training device: checked as given, and each chunk of critics made there.

:func:`estimators.neural.fit_critics` trains its critics in chunks (``max_critics_per_chunk``); each chunk's
inputs are float64 tensors on the training device, checked finite (:func:`float64_chunk`). An input is a NumPy
array or a tensor (its chunk copied or moved there), or one that makes its chunks itself on the device
(:class:`estimators.critic_problems.CriticColumns`: the audit's v built there from the outputs kept in its store of
device copies and the other records' distinct rows, instead of copied whole). Either way the chunk's values are the
same, so the fit is bit for bit the same.
"""

from __future__ import annotations

import numpy as np
import torch

from .device import all_finite, to_device
from .validation import InputError, as_float64, check_not_text, check_real, check_unmasked

__all__ = ["float64_chunk", "real_values"]


def real_values(values, name: str):
    """``values`` as a torch tensor or NumPy array (no copy), refusing complex numbers, text, dates, masked
    entries and anything NumPy cannot make a numeric array of (a ragged list); an input that makes its chunks on the
    device itself (``on_device``: :class:`estimators.critic_problems.CriticColumns`, whose blocks are the audit's
    own real arrays) as it is."""
    if hasattr(values, "on_device"):
        return values
    what = f"argument '{name}'"
    check_real(values, what)
    if torch.is_tensor(values):
        return values
    check_not_text(values, what, "a numeric array of shape (M, N, d)")
    check_unmasked(values, what)
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as exc:  # a ragged list
        raise InputError(f"{what} must be a numeric array of shape (M, N, d): {exc}") from None
    if arr.dtype.kind not in "biuf":
        arr = as_float64(arr, what)  # Python objects: numbers become float64, anything else is refused
    return arr


def float64_chunk(values, start: int, stop: int, name: str, device) -> torch.Tensor:
    """Critics start..stop of ``values`` (:func:`real_values`) as a float64 tensor on ``device``, checked finite."""
    if hasattr(values, "on_device"):
        chunk = values.on_device(start, stop, device)
    else:
        part = values[start:stop]
        chunk = (part.double().to(device) if torch.is_tensor(part)
                 else to_device(np.asarray(part, dtype=np.float64), device))
    if not all_finite(chunk):
        raise InputError(f"argument '{name}' contains NaN or inf")
    return chunk
