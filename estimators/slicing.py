"""Random slices for sliced mutual information.

SI(X; Y) = E_{θ,φ}[ I(θᵀX; φᵀY) ] with θ, φ uniform on the unit spheres (Pufferfish paper,
Eq. (5); Goldfeld and Greenewald 2021). The k-sliced variant (Goldfeld et al. 2022) projects
onto uniformly random k-dimensional orthonormal frames (uniform on the Stiefel manifold).
"""

from __future__ import annotations

import numpy as np

from .validation import InputError, check_int


def random_frames(n_slices: int, dim: int, slice_dim: int, rng: np.random.Generator) -> np.ndarray:
    """``n_slices`` uniformly random orthonormal frames in R^dim, shape (n_slices, dim, k).

    k = min(slice_dim, dim): projecting a variable of dimension below ``slice_dim`` onto a
    frame of its full dimension is an invertible map and loses nothing. For k = 1 the frames
    are uniform on the sphere S^{dim−1} (normalized standard Gaussians); for k > 1 they are
    the Q factor of a Gaussian matrix with the signs of R's diagonal fixed, which is uniform
    on the Stiefel manifold (Mezzadri 2007, "How to generate random matrices from the
    classical compact groups", Section 5).
    """
    n_slices = check_int(n_slices, "slices", 1)
    slice_dim = check_int(slice_dim, "slice_dim", 1)
    k = min(slice_dim, dim)
    gauss = rng.standard_normal((n_slices, dim, k))
    if k == 1:
        return gauss / np.linalg.norm(gauss, axis=1, keepdims=True)
    q, r = np.linalg.qr(gauss)
    signs = np.sign(np.diagonal(r, axis1=1, axis2=2))
    signs[signs == 0] = 1.0
    return q * signs[:, None, :]


def project(samples: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """Project samples (n, dim) onto each frame (p, dim, k); returns (p, n, k)."""
    return np.einsum("nd,pdk->pnk", samples, frames, optimize=True)


def check_slice_dim(slice_dim: int, dims: dict, name: str = "slice_dim") -> None:
    """Raise :class:`InputError` naming ``name`` when ``slice_dim`` exceeds every variable's dimension.

    A variable of fewer dimensions than ``slice_dim`` is projected whole (:func:`random_frames`); where that holds
    for every variable the slices are no slices, and the value asked for would be silently cut down.

    Parameters
    ----------
    slice_dim : int
    dims : dict
        Each variable's name (as the caller's user knows it: ``"x"`` or ``"--x"``) and its dimension.
    name : str
        How the message names the setting (``"slice_dim"``, ``"--slice-dim"``).
    """
    largest = max(dims.values())
    if slice_dim > largest:
        shown = ", ".join(f"{variable} {d}" for variable, d in dims.items())
        raise InputError(f"argument '{name}' ({slice_dim}) is larger than every variable's dimension ({shown}): give "
                         f"at most {largest} (a variable of fewer dimensions is projected whole)")
