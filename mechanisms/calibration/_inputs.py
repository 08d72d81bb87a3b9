"""Input checks shared by the calibration rules (one clear InputError naming the argument)."""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError, check_int, check_positive


def check_epsilon(epsilon) -> float:
    """ε must be a finite number > 0."""
    return check_positive(epsilon, "epsilon")


def nonnegative_vector(values, name: str, dim=None) -> np.ndarray:
    """Per-coordinate values (variances, standard deviations) as a 1-D float array ≥ 0.

    A scalar is one coordinate. When ``dim`` is given the length must equal it.
    """
    try:
        arr = np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise InputError(f"argument '{name}' must be numeric: {exc}") from None
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"argument '{name}' must be a non-empty 1-D list of per-coordinate values, "
                         f"got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"argument '{name}' contains NaN or inf")
    if np.any(arr < 0):
        raise InputError(f"argument '{name}' must be >= 0 in every coordinate, got {arr.tolist()}")
    if dim is not None:
        dim = check_int(dim, "dim", minimum=1)
        if arr.size != dim:
            raise InputError(f"argument '{name}' has {arr.size} coordinates but 'dim' is {dim}")
    return arr


def resolve_dim(dim) -> int:
    """The query dimension of a sensitivity-based rule (default 1)."""
    return 1 if dim is None else check_int(dim, "dim", minimum=1)


def exactly_one(**candidates) -> str:
    """Name of the single argument that is not ``None``; raise unless exactly one is given."""
    given = [name for name, value in candidates.items() if value is not None]
    if len(given) != 1:
        listed = ", ".join(f"'{n}'" for n in candidates)
        found = ", ".join(f"'{n}'" for n in given) or "none"
        raise InputError(f"give exactly one of the arguments {listed} (got {found})")
    return given[0]


def projection_matrix(matrix, input_dim=None) -> np.ndarray:
    """A deterministic projection as a float (d, ℓ) array with ℓ ≤ d, finite entries."""
    try:
        arr = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"argument 'matrix' must be numeric: {exc}") from None
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"argument 'matrix' must have shape (d, l), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError("argument 'matrix' contains NaN or inf")
    if arr.shape[1] > arr.shape[0]:
        raise InputError(f"argument 'matrix' must have l <= d columns, got shape {arr.shape}")
    if input_dim is not None and arr.shape[0] != input_dim:
        raise InputError(f"argument 'matrix' has {arr.shape[0]} rows but 'input_dim' is {input_dim}")
    return arr
