"""Array-likes an output may hold, read as NumPy arrays without losing a value: the one reader of them.

An output's arrays reach miaudit as NumPy arrays, as anything NumPy reads through ``__array__`` (a pandas
column), as a buffer (``memoryview``, ``array.array``) and as PyTorch tensors, which ``np.asarray`` alone
cannot read where a model or DP-SGD releases them:

- a tensor that requires grad (a model's output, a ``torch.nn.Parameter``): ``detach`` (the values are the same);
- a tensor on a GPU: copied to the CPU;
- a sparse tensor (COO, CSR, …): its dense equal (the zeros it leaves out are values it releases);
- a floating tensor NumPy has no dtype for (``bfloat16``, the ``float8`` kinds): cast to float64, which holds each
  of their values exactly (their significands have at most 8 bits and their exponents fit float64's, IEEE 754-2008
  Section 3.6); ``complex32`` to complex64, which the encoder refuses as complex, by name.

float16, float32 and float64 tensors, integer and bool tensors are read at their own dtype, so that the exactness
rule (:func:`mechanisms.outputs.limits.first_inexact_number`) still refuses an int64 beyond 2**53.

A tensor is told by its type (:func:`is_tensor`), never by importing torch: the CLI starts without it.
"""

from __future__ import annotations

import array as _array_module

import numpy as np

__all__ = ["as_array", "is_array_like", "is_tensor", "tensor_array", "without_tensors"]

#: Whether each type met so far is a PyTorch tensor type (the lookup is one dict read per part).
_TENSOR_TYPES: dict[type, bool] = {}

#: Lists nested deeper than this are left to NumPy as they are (it reads at most 64 dimensions, and says so): the
#: search for tensors in them stops there, without recursion errors.
_MAX_NESTING = 64

#: Floating dtypes NumPy reads from a tensor as they are; any other floating tensor is cast to float64.
_NUMPY_FLOATS = frozenset({"torch.float16", "torch.float32", "torch.float64"})


#: Types that are no tensor and hold none: a list of these alone is returned as it is by :func:`without_tensors`
#: without a call an element (a batched mechanism's list of 256 rows of 20 floats: 1.4 ms so, 0.1 ms with them).
_PLAIN_TYPES = frozenset({float, int, bool, str, bytes, type(None), np.float64, np.float32, np.float16, np.int64,
                          np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8, np.bool_, np.str_,
                          np.bytes_})


def is_tensor(value) -> bool:
    """Whether ``value`` is a PyTorch tensor (``torch.Tensor``, a ``torch.nn.Parameter``, a user's subclass): a class
    named ``Tensor`` from a ``torch`` module among its type's bases, found without importing torch."""
    kind = type(value)
    known = _TENSOR_TYPES.get(kind)
    if known is None:
        known = any(base.__name__ == "Tensor" and base.__module__.split(".")[0] == "torch" for base in kind.__mro__) \
            and callable(getattr(kind, "detach", None))
        _TENSOR_TYPES[kind] = known
    return known


def tensor_array(tensor) -> np.ndarray:
    """A PyTorch tensor's values as a NumPy array on the CPU (module docstring): detached, dense, at its own dtype
    where NumPy has it, else at float64 (complex64 for a complex one), every value kept.

    Raises
    ------
    Exception
        Whatever torch raises for a tensor that holds no values to read (a ``meta`` tensor, a nested one): the
        caller names the part of the output and the exception.
    """
    tensor = tensor.detach()
    if str(tensor.layout) != "torch.strided":  # sparse: the zeros it leaves out are released too
        tensor = tensor.to_dense()
    if tensor.is_complex():
        if str(tensor.dtype) == "torch.complex32":
            tensor = tensor.cfloat()
    elif tensor.is_floating_point() and str(tensor.dtype) not in _NUMPY_FLOATS:
        tensor = tensor.double()  # bfloat16, float8: each value is a float64 exactly
    # force: a copy on the CPU, its conjugate and negative views resolved (torch.Tensor.numpy)
    return tensor.numpy(force=True)


def is_array_like(value) -> bool:
    """Whether an output's part is read as an array (:func:`as_array`): a NumPy array, a tensor, a buffer
    (``memoryview``, ``array.array``) or anything with ``__array__`` but a NumPy scalar."""
    return (isinstance(value, (np.ndarray, memoryview, _array_module.array)) or is_tensor(value)
            or (hasattr(value, "__array__") and not isinstance(value, np.generic)))


def without_tensors(values, _depth: int = 0):
    """``values`` with each tensor in it, itself or in lists and tuples at any depth, read by :func:`tensor_array`
    (a 0-d tensor in a list as a NumPy scalar, as a list holds a number): what NumPy then reads as it reads arrays.
    ``values`` itself where it holds no tensor, or nests lists deeper than :data:`_MAX_NESTING`."""
    if is_tensor(values):
        return tensor_array(values)
    if (type(values) is not list and not isinstance(values, tuple)) or _depth >= _MAX_NESTING:
        return values
    if set(map(type, values)) <= _PLAIN_TYPES:  # a row of numbers: its types read in C, not one call an element
        return values
    read = [_element(value, _depth + 1) for value in values]
    if all(new is old for new, old in zip(read, values)):
        return values
    return read if type(values) is list else tuple(read)


def _element(value, depth: int):
    """A list's element with its tensors read (:func:`without_tensors`): a 0-d tensor as a NumPy scalar."""
    if is_tensor(value):
        array = tensor_array(value)
        return array[()] if array.ndim == 0 else array
    return without_tensors(value, depth)


def as_array(values) -> np.ndarray:
    """``np.asarray(values)``, a tensor read by :func:`tensor_array`, alone or in lists and tuples
    (:func:`without_tensors`).

    Raises
    ------
    Exception
        Whatever NumPy or torch raises for ``values`` (ragged lists, an ``__array__`` that fails).
    """
    return np.asarray(without_tensors(values))
