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


class cpu_threads:
    """Context manager: run torch CPU work with ``n`` intra-op threads, then restore the setting.

    Tiny batched critics gain nothing from intra-op parallelism, and when the cores are
    shared the threads' synchronization can slow each step down many times over.
    """

    def __init__(self, n: int):
        self.n = n
        self.saved = None

    def __enter__(self):
        import torch

        self.saved = torch.get_num_threads()
        if self.n != self.saved:
            torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc):
        import torch

        if torch.get_num_threads() != self.saved:
            torch.set_num_threads(self.saved)
        return False
