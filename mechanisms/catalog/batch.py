"""Validation of the database batches that the catalog mechanisms accept.

Every catalog mechanism works on a batch of m databases of shape ``(m, n, k)`` whose
entries lie in ``[0, 1]``: the sensitivities behind the claimed guarantees (a column sum
moves by at most 1 when one record changes) hold only on that domain, so data outside it
is refused rather than clipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError, as_float_array, check_int, check_positive

__all__ = ["VECTORIZED_CHUNK_SIZE", "EpsilonRecordsMechanism", "VectorizedMechanism", "as_database_batch",
           "column_sums"]

#: Databases per call the catalog mechanisms ask the audit's runner for
#: (:func:`mechanisms.base.preferred_chunk_size`): they are vectorized, a call of 4096 costs
#: about as much as one of 256, and the runner's fixed cost per call is then spread thin.
VECTORIZED_CHUNK_SIZE = 4096


class VectorizedMechanism:
    """What every catalog mechanism declares to the audit's runner: every draw is from its rng argument
    (:func:`mechanisms.base.draws_only_from_rng`) and its calls are vectorized, so large chunks
    (:func:`mechanisms.base.preferred_chunk_size`)."""

    draws_only_from_rng = True
    preferred_chunk_size = VECTORIZED_CHUNK_SIZE


@dataclass(frozen=True)
class EpsilonRecordsMechanism(VectorizedMechanism):
    """A catalog mechanism set by its privacy parameter ε and the record count n of its databases.

    Attributes
    ----------
    epsilon : float
        ε > 0, finite.
    records : int
        n >= 1, the records of each database it accepts.

    Subclasses add their own fields after these two and, when they check more, call
    ``super().__post_init__()`` first.
    """

    epsilon: float
    records: int

    def __post_init__(self):
        check_positive(self.epsilon, "epsilon")
        check_int(self.records, "records", minimum=1)


def as_database_batch(dbs, *, records: int, attributes: int, binary: bool = False,
                      name: str = "dbs") -> np.ndarray:
    """Return ``dbs`` as a float64 array of shape ``(m, records, attributes)``.

    Parameters
    ----------
    dbs : array_like
        The database batch.
    records, attributes : int
        The record count n and attribute count k the mechanism was built for.
    binary : bool
        Require every entry to be exactly 0 or 1 (bit-valued records).
    name : str
        Argument name used in error messages.

    Raises
    ------
    InputError
        Non-numeric data, a shape other than ``(m, records, attributes)`` with m >= 1,
        NaN/inf, entries outside [0, 1] (or not in {0, 1} when ``binary``).
    """
    expected = f"(m, {records}, {attributes}) with m >= 1"
    arr = as_float_array(dbs, name, ndim=3, shape=expected, first_axis="database")
    if arr.shape[0] < 1 or arr.shape[1:] != (records, attributes):
        raise InputError(f"argument '{name}' must have shape {expected}, got shape {arr.shape}")
    if binary:
        if not np.all((arr == 0.0) | (arr == 1.0)):
            raise InputError(f"argument '{name}' must contain only 0 and 1 (bit-valued records)")
    elif np.any(arr < 0.0) or np.any(arr > 1.0):
        raise InputError(f"argument '{name}' must have every entry in [0, 1]")
    return arr


def column_sums(dbs: np.ndarray) -> np.ndarray:
    """The k counting-query answers of each database: sums over records, shape ``(m, k)``.

    With entries in [0, 1], changing one record moves each answer by at most 1
    (ℓ∞ sensitivity 1, ℓ₁ sensitivity k, ℓ₂ sensitivity √k).
    """
    return dbs.sum(axis=1)
