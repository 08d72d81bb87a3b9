"""A batch of arrays as what its members share and the distinct values of the rest, and its device tensor built
from those parts.

An audit's batches are mostly the same values: DP-SGD's training sets (the canary or a null record in the last row,
the other rows one base set: :mod:`mechanisms.training.device_databases`) and a DP record's other records w, the
public part of its critics' input v (the same in every draw of a two-point prior: :mod:`estimators.device_inputs`).
:func:`database_parts` finds, on the host, the rows that every member holds alike (read once, from the first member)
and the distinct values of the others; :func:`parts_on_device` copies those and builds the batch on the device by
broadcasting and gathering, which copy values and never compute any. The tensor is the one a copy of the whole array
gives, value for value (the comparisons are of the values' bits, so a −0.0 or a NaN is never taken for another value)
and laid out alike (C order) (``tests/test_device_databases.py``, ``tests/test_critic_columns.py``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["DatabaseParts", "database_parts", "parts_on_device", "rows_on_device"]


class DatabaseParts(NamedTuple):
    """A batch ``(m, n, k)`` (m databases of n records of k values; or m draws of n columns, k = 1) as the records
    they share and the distinct values of the others."""

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
    from .validation import without_repeats

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


def parts_on_device(parts: DatabaseParts, shape: tuple, dtype, device):
    """The batch of shape ``(m, n, k)`` whose :func:`database_parts` are ``parts``, as a contiguous tensor of the torch
    ``dtype`` on ``device``: the first member and the distinct varying rows cross by
    :func:`estimators.device.to_device` (from page-locked memory, without the host waiting; counted by its listeners),
    the batch is the first member spread over the m members with each member's varying rows gathered into their
    rows, on the device. Equal value for value to a copy of the whole array, laid out as it is (C order)."""
    from .device import to_device

    m, n, k = shape
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


def rows_on_device(values: np.ndarray, device):
    """The (n, d) block ``values`` (float64) on the torch ``device``, built from its distinct parts (its columns as the
    records of :func:`database_parts`: a column every row holds alike crosses once, the others as their distinct rows
    with one index a row), or copied whole where those are not smaller; from page-locked memory either way."""
    import torch

    from .device import to_device

    parts = database_parts(values[:, :, None])
    if parts is None:
        return to_device(values, device, pinned=True)
    return parts_on_device(parts, values.shape + (1,), torch.float64, device).view(values.shape)
