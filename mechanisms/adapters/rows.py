"""One output row per database: the checks and the stacking the adapters share.
"""

from __future__ import annotations


import numpy as np

from estimators.validation import check_real

from mechanisms.base import MechanismError, read_tensors, refuse_lost_digits
from mechanisms.outputs.limits import numpy_reading

#: How a number that float64 does not hold exactly may be released instead, where outputs are rows of numbers.
_AS_CATEGORY = "str(x) with an OutputEncoder (mechanisms.outputs.encoding), to keep every digit as a category"
#: Where text a function of one database releases is kept whole: in an encoder's categories.
_TEXT_KEPT = ", or give the function an OutputEncoder (mechanisms.outputs.encoding), which reads a string as a category"


def _as_output_row(value, who: str, index: int) -> np.ndarray:
    """One database's output (a number or a vector; a tensor read as its NumPy equal,
    :func:`mechanisms.outputs.arrays.without_tensors`) as a float64 row, or one :class:`MechanismError` naming the
    database: not numeric, not one vector, or holding a number that float64 does not hold exactly
    (:func:`mechanisms.outputs.limits.first_inexact_number`: the cast would round it silently)."""
    value = read_tensors(value, f"{who} returned",
                         lambda message: MechanismError(message, mechanism=who, database_index=index),
                         where=f" for database {index}")
    check_real(value, f"{who} output for database {index}",
               error=lambda message: MechanismError(message, mechanism=who, database_index=index))
    try:
        row = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MechanismError(f"{who} returned non-numeric output for database {index}: {exc}",
                             mechanism=who, database_index=index) from None
    read = numpy_reading(value, tensors_read=True)  # read once for both checks of what the cast parsed or rounded
    refuse_lost_digits(value if read is None else read, who, index, _TEXT_KEPT, _AS_CATEGORY)
    if row.ndim == 0:
        row = row.reshape(1)
    if row.ndim != 1 or row.size == 0:
        raise MechanismError(f"{who} returned shape {row.shape} for database {index}; expected (d,) with d >= 1",
                             mechanism=who, database_index=index)
    return row


def _stack_rows(rows: list[np.ndarray], who: str) -> np.ndarray:
    width = rows[0].size
    for index, row in enumerate(rows):
        if row.size != width:
            raise MechanismError(
                f"{who} returned {row.size} values for database {index} but {width} for database 0",
                mechanism=who, database_index=index)
    return np.stack(rows)
