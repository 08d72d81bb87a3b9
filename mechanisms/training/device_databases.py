"""A DP-SGD call's training sets on its torch device, each distinct record crossing from the host once a call.

An audit's databases are mostly the same records: the MI sample's are drawn from a prior over neighbouring
databases (:class:`~mechanisms.inputs.neighbouring_pair.NeighbouringPair`: the canary or a null record in the last
row, the other rows one base set), and the event runs repeat one database for every run (a broadcast,
:meth:`mechanisms.execution.runner.MechanismRunner.runs_of`). Copied as they are, the runner's chunk of the
d = 8,257 release (256 databases of 16 records of 258 values) is 8.5 MB from pageable memory a call, 33 MB in the
chunks a GPU gets, all but 2 KB of it rows already sent. :func:`database_parts` finds, on the host, the records that
every database holds alike (read once, from the first database) and the distinct values of the others;
:func:`device_databases` copies those and builds the batch on the device by broadcasting and gathering, which
copy values and never compute any. The tensor is the one a copy of the whole array gives, value for value (the
comparisons are of the values' bits, so a −0.0 or a NaN is never taken for another value) and laid out alike
(C order): training from it is bit for bit what training from the copy was (``tests/test_device_databases.py``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["DatabaseParts", "database_parts", "device_databases"]


class DatabaseParts(NamedTuple):
    """A batch of training sets ``(m, n, k)`` as the records they share and the distinct values of the others."""

    first: np.ndarray  #: the first database ``(n, k)``: the records every database holds alike are read from it
    varying: np.ndarray  #: the records (row indices, increasing) that differ between databases ``(r,)``
    distinct: np.ndarray  #: the distinct values of those records ``(u, r, k)``, u ≤ m
    which: np.ndarray | None  #: database i holds ``distinct[which[i]]`` ``(m,)``; None where u = m (in order)


def _bits(arr: np.ndarray) -> np.ndarray:
    """``arr``'s values as unsigned integers of their bits (C order): equal exactly where the values' bits are."""
    arr = np.ascontiguousarray(arr)
    return arr.view(f"u{arr.itemsize}") if arr.itemsize in (1, 2, 4, 8) else arr.view(np.uint8)


def database_parts(dbs) -> DatabaseParts | None:
    """The :class:`DatabaseParts` of the batch ``dbs`` ``(m, n, k)``, or None where they would not be smaller than
    the batch (every record differs between databases and no two databases are alike) or the batch is not a
    non-empty 3-D array: its copy is then the whole batch.

    A record is shared where its bits are the same in every database; two databases' varying records are one
    distinct value where their bits are the same. A broadcast batch (:func:`numpy.broadcast_to`, the runner's
    event runs) shares every record and is read once, without comparing (:func:`~estimators.validation.without_repeats`).

    Parameters
    ----------
    dbs : array_like of shape (m, n, k)
        The training sets (numbers); never changed.

    Returns
    -------
    DatabaseParts or None
    """
    from estimators.validation import without_repeats

    arr = np.asarray(dbs)
    if arr.ndim != 3 or arr.size == 0 or arr.dtype.kind not in "biuf":
        return None
    m, n, k = arr.shape
    none = np.empty(0, dtype=np.int64)
    if without_repeats(arr).shape[0] == 1:  # one database m times: its records, each once
        return DatabaseParts(arr[0], none, arr[:1, :0], np.zeros(m, dtype=np.int64))
    bits = _bits(arr)
    varying = np.flatnonzero((bits != bits[:1]).any(axis=(0, 2)))
    if len(varying) == 0:
        return DatabaseParts(arr[0], none, arr[:1, :0], np.zeros(m, dtype=np.int64))
    rows = np.ascontiguousarray(bits[:, varying]).reshape(m, -1)
    keys = rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize)))[:, 0]
    _, first_of, which = np.unique(keys, return_index=True, return_inverse=True)
    if len(first_of) == m:  # no two databases alike: each run's varying records, in order
        if len(varying) == n:
            return None
        return DatabaseParts(arr[0], varying, arr[:, varying], None)
    return DatabaseParts(arr[0], varying, arr[first_of][:, varying], which.reshape(m).astype(np.int64, copy=False))


def device_databases(torch, dbs, dtype, device):
    """The training sets ``dbs`` ``(m, n, k)`` as a contiguous tensor of ``dtype`` on the torch ``device``, equal
    value for value to a copy of the whole array and laid out as it is (C order).

    An array of one's own (writable) on the CPU is taken as it is (``torch.as_tensor``: its memory, where the dtype
    allows). Anything else, on any device, is built from its :func:`database_parts`: the first database and the
    distinct varying records cross by :func:`estimators.device.to_device` (from page-locked memory, without the host
    waiting; counted by its listeners), the batch is
    the first database spread over the m runs with each run's varying records gathered into their rows, on the
    device. On the CPU the same route runs, so the tests there run the one a GPU takes. A batch without shared
    records or repeated databases is copied whole (read-only memory first copied on the host: torch shares none).

    Parameters
    ----------
    torch : module
        The torch module (imported by the caller).
    dbs : array_like of shape (m, n, k)
        The training sets; never changed.
    dtype : torch.dtype
        The tensor's dtype (each value converted as a copy of the whole array converts it).
    device : torch.device
        Where the tensor lives.

    Returns
    -------
    torch.Tensor of shape (m, n, k), contiguous
    """
    from estimators.device import to_device

    arr = np.asarray(dbs)
    if device.type == "cpu" and arr.flags.writeable:
        return torch.as_tensor(arr, dtype=dtype, device=device)
    parts = database_parts(arr)
    if parts is None:
        return to_device(np.ascontiguousarray(arr) if arr.flags.writeable else arr.copy(), device, dtype)
    m, n, k = arr.shape
    # From page-locked memory: on a GPU the host queues the copies and goes on (estimators.device.to_device).
    data = to_device(np.array(parts.first), device, dtype, pinned=True).expand(m, n, k).contiguous()
    if len(parts.varying):
        rows = to_device(parts.distinct, device, dtype, pinned=True)
        if parts.which is not None:
            rows = rows[to_device(parts.which, device, pinned=True)]
        low, high = int(parts.varying[0]), int(parts.varying[-1]) + 1
        index = slice(low, high) if high - low == len(parts.varying) else to_device(parts.varying, device, pinned=True)
        data[:, index] = rows
    return data
