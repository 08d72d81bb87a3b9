"""The additive-noise mechanism f(X) + Z (or Aᵀf(X) + Z) as a batched miaudit mechanism."""

from __future__ import annotations

import numpy as np

from estimators.validation import InputError, as_generator, check_choice, check_int, check_nonnegative, plain

from mechanisms.calibration._inputs import projection_matrix

NOISES = ("laplace", "gaussian")


class NoisyMechanism:
    """``mech(dbs, rng) -> (m, dim)``: a query plus i.i.d. Laplace or Gaussian noise.

    Parameters
    ----------
    query : callable
        ``query(dbs) -> (m, d)`` on a database batch of shape ``(m, n, k)``; a ``(m,)``
        result is read as d = 1.
    noise : {"laplace", "gaussian"}
        Lap(0, b) per coordinate, or N(0, σ² I).
    scale : float
        b or σ, ≥ 0 (0 releases the query itself, e.g. Theorem 6's free-privacy regime).
    dim : int
        Output dimension (d, or ℓ after a projection).
    projection : None, array_like (d, ℓ) or "gaussian"
        ``None``: f(X) + Z. A matrix A: Aᵀf(X) + Z (Theorem 5 part 1). ``"gaussian"``:
        Aᵀf(X) + Z with A of i.i.d. N(0, 1/d) entries drawn afresh for every database
        and never released (Theorem 5 part 2, Remark 12).
    input_dim : int, optional
        d, the query dimension; required with ``projection="gaussian"``.

    Notes
    -----
    The whole batch is computed with array operations: no Python loop over databases.
    """

    def __init__(self, query, noise, scale, dim, *, projection=None, input_dim=None):
        if not callable(query):
            raise InputError(f"argument 'query' must be callable, got {plain(query)}")
        self.query = query
        self.noise = check_choice(noise, "noise", NOISES)
        self.scale = check_nonnegative(scale, "scale")
        self.dim = check_int(dim, "dim", minimum=1)
        self.input_dim = None if input_dim is None else check_int(input_dim, "input_dim", minimum=1)
        if projection is None:
            self.matrix = None
            self.input_dim = self.input_dim or self.dim
            if self.input_dim != self.dim:
                raise InputError(f"argument 'input_dim' ({self.input_dim}) must equal 'dim' ({self.dim}) "
                                 "without a projection")
        elif isinstance(projection, str):
            check_choice(projection, "projection", ("gaussian",))
            if self.input_dim is None:
                raise InputError("argument 'input_dim' is required with projection='gaussian'")
            if self.dim > self.input_dim:
                raise InputError(f"argument 'dim' ({self.dim}) must be <= 'input_dim' ({self.input_dim})")
            self.matrix = "gaussian"
        else:
            self.matrix = projection_matrix(projection, self.input_dim)
            self.input_dim = self.matrix.shape[0]
            if self.matrix.shape[1] != self.dim:
                raise InputError(f"argument 'projection' has {self.matrix.shape[1]} columns but 'dim' is {self.dim}")

    def _query_values(self, dbs: np.ndarray) -> np.ndarray:
        values = np.asarray(self.query(dbs), dtype=np.float64)
        m = dbs.shape[0]
        if values.shape == (m,):
            values = values[:, None]
        if values.shape != (m, self.input_dim):
            raise InputError(f"argument 'query' returned shape {values.shape}, expected ({m}, {self.input_dim})")
        if not np.all(np.isfinite(values)):
            raise InputError("argument 'query' returned NaN or inf")
        return values

    def __call__(self, dbs, rng=None) -> np.ndarray:
        """Release the noisy query for each database of the batch ``dbs`` (m, n, k)."""
        dbs = np.asarray(dbs, dtype=np.float64)
        if dbs.ndim != 3:
            raise InputError(f"argument 'dbs' must have shape (m, n, k), got shape {dbs.shape}")
        rng = as_generator(rng)
        values = self._query_values(dbs)
        m = dbs.shape[0]
        if isinstance(self.matrix, np.ndarray):
            values = values @ self.matrix
        elif self.matrix == "gaussian":
            # Remark 12: entries N(0, 1/d) give E‖Φ_j‖² = 1 and E[Φ_j] = 0 (Theorem 5 part 2).
            matrices = rng.normal(0.0, 1.0 / np.sqrt(self.input_dim), size=(m, self.input_dim, self.dim))
            values = np.einsum("md,mdl->ml", values, matrices)
        if self.noise == "laplace":
            noise = rng.laplace(0.0, self.scale, size=(m, self.dim))
        else:
            noise = rng.normal(0.0, self.scale, size=(m, self.dim))
        return values + noise

    def __repr__(self) -> str:
        proj = None if self.matrix is None else ("gaussian" if isinstance(self.matrix, str) else self.matrix.shape)
        return f"NoisyMechanism(noise={plain(self.noise)}, scale={plain(self.scale)}, dim={self.dim}, projection={proj})"
