"""One output row per database: the checks and the stacking the adapters share.
"""

from __future__ import annotations


import numpy as np

from estimators.validation import check_real

from mechanisms.base import MechanismError, read_tensors
from mechanisms.outputs.limits import (first_inexact_number, first_text_entry, inexact_number_text, number_noun,
                                      parsed_text_text)

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
    text = first_text_entry(value)
    if text is not None:  # the cast above parsed it: "0.1000…01" read as 0.1
        raise MechanismError(f"{who} returned {parsed_text_text(text[1], index, _TEXT_KEPT)}",
                             mechanism=who, database_index=index)
    inexact = first_inexact_number(value)
    if inexact is not None:
        raise MechanismError(f"{who} returned {number_noun(inexact[1])} that float64 does not hold exactly for "
                             f"database {index}: {inexact_number_text(inexact[1], _AS_CATEGORY)}", mechanism=who,
                             database_index=index)
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
