"""One output row per database: the checks and the stacking the adapters share.
"""

from __future__ import annotations


import numpy as np

from estimators.validation import check_real

from mechanisms.base import MechanismError


def _as_output_row(value, who: str, index: int) -> np.ndarray:
    check_real(value, f"{who} output for database {index}",
               error=lambda message: MechanismError(message, mechanism=who, database_index=index))
    try:
        row = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MechanismError(f"{who} returned non-numeric output for database {index}: {exc}",
                             mechanism=who, database_index=index) from None
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
