"""A DP-SGD call's training sets on its torch device, each distinct record crossing from the host once a call.

An audit's databases are mostly the same records: the MI sample's are drawn from a prior over neighbouring
databases (:class:`~mechanisms.inputs.neighbouring_pair.NeighbouringPair`: the canary or a null record in the last
row, the other rows one base set), and the event runs repeat one database for every run (a broadcast,
:meth:`mechanisms.execution.runner.MechanismRunner.runs_of`). Copied as they are, the runner's chunk of the
d = 8,257 release (256 databases of 16 records of 258 values) is 8.5 MB from pageable memory a call, 33 MB in the
chunks a GPU gets, all but 2 KB of it rows already sent. :func:`~estimators.distinct_parts.database_parts` finds, on
the host, the records that every database holds alike (read once, from the first database) and the distinct values
of the others;
:func:`device_databases` copies those and builds the batch on the device by broadcasting and gathering, which
copy values and never compute any (:mod:`estimators.distinct_parts`, which builds the critics' other records too).
The tensor is the one a copy of the whole array gives, value for value (the comparisons are of the values' bits, so
a −0.0 or a NaN is never taken for another value) and laid out alike (C order): training from it is bit for bit
what training from the copy was (``tests/test_device_databases.py``).
"""

from __future__ import annotations

import numpy as np

from estimators.distinct_parts import database_parts, parts_on_device

__all__ = ["device_databases"]


def device_databases(torch, dbs, dtype, device):
    """The training sets ``dbs`` ``(m, n, k)`` as a contiguous tensor of ``dtype`` on the torch ``device``, equal
    value for value to a copy of the whole array and laid out as it is (C order).

    An array of one's own (writable) on the CPU is taken as it is (``torch.as_tensor``: its memory, where the dtype
    allows). Anything else, on any device, is built from its :func:`~estimators.distinct_parts.database_parts`: the
    first database and the distinct varying records cross by :func:`estimators.device.to_device` (from page-locked
    memory, without the host waiting; counted by its listeners), the batch is the first database spread over the m
    runs with each run's varying records gathered into their rows, on the device
    (:func:`estimators.distinct_parts.parts_on_device`). On the CPU the same route runs, so the tests there run the
    one a GPU takes. A batch without shared
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
    return parts_on_device(parts, arr.shape, dtype, device)
