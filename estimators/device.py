"""Device selection: ``auto`` picks CUDA when present, else CPU. Nothing requires a GPU."""

from __future__ import annotations

from .validation import InputError, check_choice

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str = "auto"):
    """Return a :class:`torch.device` for ``"auto"``, ``"cpu"`` or ``"cuda"``.

    Raises :class:`InputError` for ``"cuda"`` when no CUDA device is available.
    """
    import torch

    if isinstance(device, torch.device):
        return device
    check_choice(device, "device", DEVICES)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("argument 'device' is 'cuda' but no CUDA device is available")
    return torch.device(device)
