"""Loading a user's array from a ``.npy`` file, safely and with messages that point the right way.

Only the ``.npy`` format is read, never with pickle: a file that holds Python objects is
refused, and no message suggests loading it unsafely. Other files get a message that says what
the file is (a ``.npz`` archive, text, ...) and how to make a ``.npy`` file from it.
"""

from __future__ import annotations

import os
import zipfile

import numpy as np

from .validation import InputError, as_float_array

__all__ = ["load_npy_array"]

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_NUMERIC_KINDS = "biuf"  # bool, signed and unsigned integers, floats


def _archive_message(path: str, argument: str) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [name[:-4] for name in archive.namelist() if name.endswith(".npy")]
    except (OSError, zipfile.BadZipFile):
        names = []
    first = names[0] if names else "NAME"
    listed = f" (arrays: {', '.join(names)})" if names else ""
    return (f"argument '{argument}': {path!r} is a .npz archive{listed}, not a .npy array file; extract one array "
            f"with: python -c \"import numpy as np; np.save('{first}.npy', np.load({path!r})['{first}'])\"")


def _declared_array(path: str) -> tuple[tuple, np.dtype, int] | None:
    """(shape, dtype, bytes of data after the header) that a ``.npy`` file's header declares, or None
    where the header cannot be read here (np.load then says why)."""
    try:
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read is None:
                return None
            shape, _, dtype = read(handle)
            return shape, dtype, os.fstat(handle.fileno()).st_size - handle.tell()
    except (OSError, ValueError, EOFError):
        return None


def _size_text(size: float) -> str:
    """A number of bytes in words, from bytes to TB."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


def load_npy_array(path, argument: str, *, ndim=None, shape: str | None = None, allow_nan: bool = False) -> np.ndarray:
    """Load the numeric array stored in the ``.npy`` file ``path`` as validated float64.

    Parameters
    ----------
    path : str or os.PathLike
        The file the user named.
    argument : str
        The user's name for it in messages, e.g. ``"--x"``.
    ndim : int or tuple of int, optional
        The allowed numbers of axes (default: any).
    shape : str, optional
        How the expected shape reads in messages, e.g. ``"(n,) or (n, d)"``.
    allow_nan : bool
        Whether NaN entries (missing values) are kept rather than refused; infinities are refused either way.

    Returns
    -------
    ndarray
        float64, real, finite (or NaN where ``allow_nan``).

    Raises
    ------
    InputError
        Naming ``argument``: no such file, a folder, unreadable, not a ``.npy`` file (a ``.npz``
        archive is named as such, with how to extract an array), a pipe or device, too large
        for memory, Python objects inside,
        non-numeric or complex data, an empty array, a wrong number of axes, NaN or inf.
    """
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InputError(f"argument '{argument}' must be the path of a .npy file, got {path!r}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError(f"argument '{argument}': no such file {path!r}")
    if os.path.isdir(path):
        raise InputError(f"argument '{argument}': {path!r} is a folder, not a .npy array file")
    if not os.path.isfile(path):
        # A FIFO or device would block or never end; .npy files are regular files.
        raise InputError(f"argument '{argument}': {path!r} is not a regular file (a pipe or device?); "
                         "give a .npy array file")
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(_NPY_MAGIC))
    except OSError as exc:
        raise InputError(f"argument '{argument}': cannot read {path!r} ({exc.strerror or exc})") from None
    if magic.startswith(_ZIP_MAGIC):
        raise InputError(_archive_message(path, argument))
    if magic != _NPY_MAGIC:
        raise InputError(f"argument '{argument}': {path!r} is not a .npy array file (it does not start with the "
                         ".npy signature); save the array with numpy.save, e.g. for a text table: "
                         "np.save('X.npy', np.loadtxt('X.csv', delimiter=','))")
    declared = _declared_array(path)
    declared_bytes = None
    if declared is not None and not declared[1].hasobject:
        declared_shape, dtype, data_bytes = declared
        declared_bytes = int(np.prod(declared_shape, dtype=object)) * dtype.itemsize
        if declared_bytes > data_bytes:  # a header that declares more than the file holds is never allocated
            raise InputError(f"argument '{argument}': {path!r} is not a readable .npy array file (truncated or "
                             f"corrupt: its header declares an array of shape {declared_shape}, {dtype}, "
                             f"{_size_text(declared_bytes)}, but the file holds {_size_text(data_bytes)} of data)")
    try:
        array = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc):
            # Never pass on numpy's hint to load with pickle: that runs code from the file.
            raise InputError(f"argument '{argument}': {path!r} holds Python objects, not numbers; miaudit loads "
                             "only numeric .npy arrays (save one with numpy.save on a float array)") from None
        raise InputError(f"argument '{argument}': {path!r} is not a readable .npy array file ({exc})") from None
    except (OSError, EOFError) as exc:
        raise InputError(f"argument '{argument}': {path!r} is not a readable .npy array file (truncated or "
                         f"corrupt: {exc})") from None
    except MemoryError:
        size = _size_text(declared_bytes if declared_bytes is not None else os.path.getsize(path))
        raise InputError(f"argument '{argument}': {path!r} holds an array of {size}, which does not fit in "
                         "memory") from None
    if array.dtype.kind not in _NUMERIC_KINDS + "c":  # complex data get as_float_array's message
        raise InputError(f"argument '{argument}': {path!r} holds data of type {array.dtype}, not numbers")
    if array.size == 0:
        raise InputError(f"argument '{argument}': {path!r} holds an empty array (shape {array.shape}); "
                         "it needs at least one value")
    try:
        if allow_nan and array.dtype.kind == "f":  # the NaN kept, everything else checked as always
            infinite = np.flatnonzero(np.isinf(array))
            if len(infinite):  # named here: the generic check below would say "NaN or inf" without the file
                raise InputError(f"argument '{argument}': {path!r} contains inf (first at flat index {infinite[0]}); "
                                 "only NaN, a missing value, may stand for a number that is not finite")
            missing = np.isnan(array)
            checked = as_float_array(np.where(missing, 0.0, array), argument, ndim=ndim, shape=shape)
            checked[missing] = np.nan
            return checked
        return as_float_array(array, argument, ndim=ndim, shape=shape)
    except MemoryError:
        raise InputError(f"argument '{argument}': {path!r} holds {array.size} values; as float64 they need "
                         f"{array.size * 8 / 2**30:.1f} GiB, more than the memory available") from None
