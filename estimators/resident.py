"""Data blocks kept on a torch device: copied from the host once, read there by every reader.

An audit reads the same host arrays on its device many times: the float-bit statistics
(:mod:`audit.statistics.float_bits`) and the ideal rounding (:func:`audit.statistics.arithmetic.device_round_significand`)
at each fit, held-out score and cross-fitting fold; the critic scorer (:class:`estimators.neural.CriticScorer`) at
each value of the event test's T(a, y) − T(b, y), whose outputs y are the same for both values; the MI critics'
input v (:class:`estimators.critic_problems.CriticColumns`), the MI sample's outputs beside the other records, whose
rows the event test's statistics read again (their training and held-out draws, :func:`rows_of`). Copied at each read,
these were most of an audit's host→device bytes on the DP-SGD grid's widest release (d = 8,257; issue 42). A
:class:`ResidentOutputs` store, entered by :func:`keep_on_device` (for an audit's look, :func:`audit.engine._run_audit`,
and by each bit statistic's fit), keeps the first device copy of each block for as long as the block lives on the
host, and gives it to every later reader; a block's rows chosen by :meth:`ResidentOutputs.rows` (a cross-fitting
fold's) are gathered on the device from the block's copy instead of copied again. A block made on the device from a kept one and
brought back (the ideal rounding of the outputs, which the critic scorer reads) keeps its device tensor as its host
array's copy (:func:`keep_made`) instead of being copied there again, and so does a block whose rows repeat (DP's
other records w in v, the same row in every draw of a two-point prior), made there from its distinct rows
(:func:`distinct_input`). The values are the same tensors
either way, so every code, score and statistic is bit for bit what the copies gave.

A block is known by its memory, on a device named with its index (``cuda`` is the current CUDA device, as a
tensor's ``cuda:0``): the address of its first value, its shape, strides and dtype, and the NumPy array that owns
that memory; the entry is dropped when that array is freed (a weak reference's callback), so an address
is never mistaken for a later array's. Blocks are taken as the runs they hold, never changed once made (as
:class:`audit.statistics.arithmetic.RoundedOutputs` takes them). At most :data:`RESIDENT_BYTES` are kept at once;
a block past that is copied at each use, as without a store. The store lives in ``estimators`` so that the scorer
reads it; the audit enters it (:func:`audit.engine._run_audit`, the bit statistics and the classifier critics' folds).

The store entered is a context variable. A thread started plainly has an empty context: an audit run on one (a
stage that ``experiments.stage_pipeline`` computes in its thread pool) enters a store of its own, and so do the
float-bit statistics fitted there. A bounded user call runs on a daemon thread with a copy of its caller's context
(:func:`mechanisms.calls.user_call.run_on_daemon_thread`) and reads the caller's store while the caller waits. The
other threads copy no output blocks (TorchDPSGD's pilot trainings of the last-iterate search and the one-run stage
copy databases, new arrays at each call; the GPU sampler, the watchdog read none).
"""

from __future__ import annotations

import contextlib
import contextvars
import weakref

import numpy as np

from .device import to_device
from .distinct_parts import rows_on_device

__all__ = ["RESIDENT_BYTES", "ResidentOutputs", "device_columns", "device_input", "distinct_input", "keep_made",
           "keep_on_device", "kept_device_bytes", "on_device", "resident_block", "rows_of"]

#: The most bytes of output blocks a store keeps on the device at once (2 GiB: a 10,000-run MI sample of the
#: d = 8,257 release is 0.66 GB; beyond the cap blocks are copied in chunks of
#: :data:`audit.statistics.float_bits.DEVICE_CHUNK_ELEMENTS` values at each use, as without a store).
RESIDENT_BYTES = 2**31

_STORE: contextvars.ContextVar = contextvars.ContextVar("miaudit_resident_outputs", default=None)


def _owner(array: np.ndarray) -> np.ndarray:
    """The NumPy array at the root of ``array``'s chain of views (the one whose life holds its memory)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _key(array: np.ndarray) -> tuple:
    """The block ``array`` holds: the address of its first value, its shape, strides and dtype."""
    return (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype.str)


def _device_name(device) -> str:
    """The device a store's copy lives on, by name, with its index: ``"cuda"`` (the audit's device, as
    :func:`estimators.device.resolve_device` gives it) is the current CUDA device, ``"cuda:0"`` as a tensor's
    ``device`` names it (the critic scorer's), so that both readers find one copy."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return str(device)


class ResidentOutputs:
    """Device copies of output blocks, each made once and kept while its host block lives (module docstring).

    Parameters
    ----------
    max_bytes : int
        The most bytes kept on the devices at once (:data:`RESIDENT_BYTES`).
    """

    def __init__(self, max_bytes: int = RESIDENT_BYTES):
        self.max_bytes = max_bytes
        self.kept_bytes = 0
        self._tensors: dict = {}  # (device, key) -> the block's tensor there
        self._selections: dict = {}  # key -> (the block rows were chosen from, their indices)
        self._owners: dict = {}  # id(owner) -> (weak reference to the owner, the keys it holds)

    def _watch(self, array: np.ndarray, key: tuple) -> None:
        owner = _owner(array)
        if id(owner) not in self._owners:
            self._owners[id(owner)] = (weakref.ref(owner, lambda _, at=id(owner): self._forget(at)), [])
        self._owners[id(owner)][1].append(key)

    def _forget(self, owner_id: int) -> None:
        _, keys = self._owners.pop(owner_id, (None, []))
        for key in keys:  # (device, block) of a kept tensor, or a selection's block
            tensor = self._tensors.pop(key, None)
            if tensor is not None:
                self.kept_bytes -= tensor.numel() * tensor.element_size()
            self._selections.pop(key, None)

    def _keep(self, key: tuple, array: np.ndarray, tensor):
        size = tensor.numel() * tensor.element_size()
        if self.kept_bytes + size <= self.max_bytes:
            # On the CPU (the device routes of experiments.stage_profile) the tensor is the array's memory and holds
            # the array: a copy of its own lets the array be freed, and its entry with it.
            self._tensors[key] = tensor.clone() if tensor.device.type == "cpu" else tensor
            self.kept_bytes += size
            self._watch(array, key)
            return self._tensors[key]
        return tensor

    def tensor(self, array: np.ndarray, device, pinned: bool = False):
        """``array`` on the torch ``device``: its kept copy, or one made now (from its block's kept copy where its
        rows were chosen by :meth:`rows`; else by :func:`estimators.device.to_device`, from page-locked memory
        where ``pinned``) and kept; None where it is not kept and does not fit (:data:`RESIDENT_BYTES`): the
        caller then copies it itself."""
        key = _key(array)
        found = self._tensors.get((_device_name(device), key))
        if found is not None:
            return found
        size = array.nbytes
        if self.kept_bytes + size > self.max_bytes:
            return None
        chosen = self._selections.get(key)
        if chosen is not None:
            block = self.tensor(chosen[0], device)
            if block is not None:
                return self._keep((_device_name(device), key), array, block[to_device(chosen[1], device)])
        return self._keep((_device_name(device), key), array, to_device(array, device, pinned=pinned))

    def kept(self, array: np.ndarray, device):
        """``array``'s kept copy on the torch ``device``, or None (nothing is copied)."""
        return self._tensors.get((_device_name(device), _key(array)))

    def made(self, array: np.ndarray, tensor, device) -> None:
        """Keep ``tensor``, computed on the torch ``device`` and brought back as ``array`` (the same values), as
        ``array``'s copy there: a later reader of ``array`` reads it instead of copying ``array`` (the ideal
        rounding's result, which the critic scorer reads: :func:`audit.statistics.arithmetic.device_round_significand`).
        Nothing is kept where ``array`` has a copy already or ``tensor`` does not fit (:data:`RESIDENT_BYTES`)."""
        key = (_device_name(device), _key(array))
        if key not in self._tensors and self.kept_bytes + array.nbytes <= self.max_bytes:
            self._keep(key, array, tensor)

    def rows(self, array: np.ndarray, index) -> np.ndarray:
        """``array[index]`` (rows chosen by an integer or boolean index), whose device copy, when one is asked for,
        is gathered on the device from ``array``'s (:meth:`tensor`)."""
        index = np.asarray(index)
        index = np.flatnonzero(index) if index.dtype == bool else index.astype(np.int64, copy=False)
        chosen = array[index]
        key = _key(chosen)
        self._selections[key] = (array, index)
        self._watch(chosen, key)
        return chosen

    def bytes_on(self, device) -> int:
        """Bytes of the tensors kept on the torch ``device`` (:attr:`kept_bytes` counts every device's)."""
        if not self._tensors:
            return 0
        name = _device_name(device)
        return sum(tensor.numel() * tensor.element_size() for (place, _), tensor in self._tensors.items()
                   if place == name)

    def clear(self) -> None:
        """Drop every kept tensor (the device memory is freed once no reader holds one)."""
        self._tensors.clear()
        self._selections.clear()
        self._owners.clear()
        self.kept_bytes = 0

    def __len__(self) -> int:
        return len(self._tensors)


def keep_on_device(max_bytes: int = RESIDENT_BYTES, own: bool = False):
    """Context manager: output blocks copied to a device inside are kept there for every reader inside
    (:class:`ResidentOutputs`, yielded); inside another, that one's store (one copy for the whole audit), unless
    ``own``: a store of its own, emptied on leaving, for blocks whose host arrays outlive their readers (a cell's
    outputs, which live as long as the audit's look, read by its folds' fits alone)."""
    store = _STORE.get()
    if store is not None and not own:
        return contextlib.nullcontext(store)
    return _entered(ResidentOutputs(max_bytes))


@contextlib.contextmanager
def _entered(store: ResidentOutputs):
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)
        store.clear()


def kept_device_bytes(device, adding: int = 0) -> tuple[int, int]:
    """(bytes the store entered keeps on the torch ``device`` now, bytes of ``adding`` more that it would keep):
    the second is ``adding`` up to the room its cap leaves (:data:`RESIDENT_BYTES` less what it keeps on every
    device; a block past the cap is copied at each use and freed after it, :meth:`ResidentOutputs.tensor`). Where no
    store is entered, none is kept now and the room is a fresh store's, the one an audit enters
    (:func:`audit.engine._run_audit`). Read by the memory check of a critic training on a GPU
    (:func:`estimators.memory.check_gpu_critic_memory`), whose device memory the store shares."""
    store = _STORE.get()
    if store is None:
        return 0, min(max(adding, 0), RESIDENT_BYTES)
    return store.bytes_on(device), min(max(adding, 0), max(store.max_bytes - store.kept_bytes, 0))


def resident_block(array: np.ndarray, device, pinned: bool = False):
    """``array`` on the torch ``device`` from the store entered (:func:`keep_on_device`), copied there at its first
    use (``pinned``: :meth:`ResidentOutputs.tensor`); None where no store is entered or the block does not fit in it
    (the caller copies it in chunks)."""
    store = _STORE.get()
    return None if store is None else store.tensor(array, device, pinned)


def keep_made(array: np.ndarray, tensor, device) -> None:
    """Keep ``tensor`` (made on the torch ``device``, its values brought back as ``array``) as ``array``'s copy in
    the store entered (:meth:`ResidentOutputs.made`); nothing where no store is entered."""
    store = _STORE.get()
    if store is not None:
        store.made(array, tensor, device)


def on_device(device) -> bool:
    """Whether :func:`device_input` reads the store on ``device`` (a torch device): off the CPU. On the CPU the
    tensor of an array is the array's own memory, no copy, and a kept one would be a copy of it
    (:meth:`ResidentOutputs.tensor`); ``experiments.stage_profile.device_routes`` reads it on the CPU too, to
    count the bytes a GPU run copies."""
    return device.type != "cpu"


def device_input(array: np.ndarray, device, pinned: bool = False):
    """``array`` on the torch ``device`` for a reader that reads it again while it lives (the critic scorer's
    outputs, read at both values of T(a, y) − T(b, y)): the entered store's copy (:func:`resident_block`, made at
    the first read) where :func:`on_device`, else :func:`estimators.device.to_device`'s copy (``pinned``: from
    page-locked memory without waiting, on a GPU). The same values either way."""
    block = resident_block(array, device, pinned) if on_device(device) else None
    return to_device(array, device, pinned=pinned) if block is None else block


def rows_of(array: np.ndarray, index) -> np.ndarray:
    """``array[index]`` (rows), recorded in the store entered so that a device copy of them is gathered from
    ``array``'s (:meth:`ResidentOutputs.rows`); plain indexing where no store is entered."""
    store = _STORE.get()
    return array[index] if store is None else store.rows(array, index)


def distinct_input(array: np.ndarray, device):
    """``array`` (n, d, float64) on the torch ``device`` for a reader that reads it again while it lives and whose
    rows repeat (DP's other records w, the public part of the critics' input v: the same row in every draw of a
    two-point prior): where :func:`on_device`, the entered store's copy, made at the first read from the block's
    distinct rows (:func:`estimators.distinct_parts.rows_on_device`: 3,870 numbers where the block is 1,000 rows of
    them) and kept as ``array``'s copy (:meth:`ResidentOutputs.made`); else :func:`estimators.device.to_device`'s copy.
    The same values either way."""
    if not on_device(device):
        return to_device(array, device, pinned=True)
    store = _STORE.get()
    found = None if store is None else store.kept(array, device)
    if found is not None:
        return found
    tensor = rows_on_device(array, device)
    if store is not None:
        store.made(array, tensor, device)
    return tensor


def device_columns(blocks, device, width: int | None = None, pinned: bool = False):
    """Column blocks side by side as one float64 tensor on ``device``, zero columns appended up to ``width``: the
    values of ``np.concatenate`` of the blocks and :func:`estimators.critic_problems.pad_columns` copied there.
    ``blocks``: an (n, ·) array or a tuple of them, as :meth:`estimators.critic_problems.ProblemCritics.feature_blocks`
    gives them: the first (the outputs' block) is read through :func:`device_input` (a block the caller reads again
    while it lives, copied once), the others (w's) through :func:`distinct_input` (their distinct rows cross)."""
    import torch

    blocks = tuple(np.asarray(block, dtype=np.float64)
                   for block in (blocks if isinstance(blocks, tuple) else (blocks,)))
    parts = [device_input(blocks[0], device, pinned)] + [distinct_input(block, device) for block in blocks[1:]]
    missing = 0 if width is None else width - sum(part.shape[-1] for part in parts)
    if missing > 0:  # zeros, as pad_columns': a constant input (estimators.critic_problems.pad_columns)
        parts.append(torch.zeros(parts[0].shape[:-1] + (missing,), dtype=torch.float64, device=parts[0].device))
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)
