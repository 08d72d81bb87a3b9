"""The two forms of a result object: its JSON form (a walk over its dataclass fields) and its
one-line headline ``repr`` (in the style of ``scipy.stats`` results such as ``BinomTestResult``).

Every result type of the project is a frozen dataclass. Its JSON form is the walk of
:func:`fields_to_dict`, so a field added to a result appears in ``to_dict()`` (and in the
command line's ``--json`` and the JSON report) without another edit. A class writes its own
``to_dict`` only where the JSON contract is not a function of its fields (a computed or
renamed key, a field left out): then it still calls :func:`fields_to_dict` for the walk.

>>> from dataclasses import dataclass
>>> import numpy as np
>>> @dataclass(frozen=True)
... class Bound:
...     value: float
...     per_slice: np.ndarray
...     notes: tuple = ()
>>> fields_to_dict(Bound(np.float64(0.5), np.array([0.25, np.inf]), ("tied",)))
{'value': 0.5, 'per_slice': [0.25, None], 'notes': ['tied']}
>>> headline_repr(Bound(np.float64(0.5), np.array([0.25, np.inf])), ("value", "notes"))
'Bound(value=0.5, notes=())'
"""

from __future__ import annotations

import dataclasses
import enum
import math

import numpy as np


def to_jsonable(value, *, null_nonfinite: bool = True):
    """The JSON-ready form of ``value``: only dict, list, str, int, float, bool and ``None``.

    Parameters
    ----------
    value : object
        A dataclass instance (its ``to_dict()`` when the class defines one, else the walk of
        :func:`fields_to_dict`), a dict (values converted, keys kept), a list, tuple or
        ndarray (a list), a NumPy scalar (the Python scalar), an :class:`enum.Enum` (its
        value), or anything else, returned as it is.
    null_nonfinite : bool, default True
        Map inf and NaN to ``None`` (JSON has neither; the JSON contract writes ``null``).
        ``False`` keeps them as floats, for the results whose ``to_dict`` has always returned
        them (the command line's ``--json`` still writes them as ``null``).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        value = to_dict() if callable(to_dict) else fields_to_dict(value, null_nonfinite=null_nonfinite)
    if isinstance(value, dict):
        return {k: to_jsonable(v, null_nonfinite=null_nonfinite) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, null_nonfinite=null_nonfinite) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, null_nonfinite=null_nonfinite)
    if null_nonfinite and isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def fields_to_dict(obj, *, order=(), exclude=(), extra=None, null_nonfinite: bool = True) -> dict:
    """The JSON-ready dict of a dataclass instance: one key per field, values by :func:`to_jsonable`.

    Parameters
    ----------
    obj : dataclass instance
    order : sequence of str, optional
        Keys (fields or keys of ``extra``) that come first, in this order; every other key
        follows in field-declaration order, then ``extra``'s order. A new field therefore
        always appears, after the keys the contract orders.
    exclude : sequence of str, optional
        Fields left out.
    extra : dict, optional
        Computed keys that are not fields (a property, a statement); a key that is also a field
        replaces the field's value.
    null_nonfinite : bool, default True
        See :func:`to_jsonable`.
    """
    values = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.name not in exclude}
    values.update(extra or {})
    unknown = [key for key in order if key not in values]
    if unknown:
        raise ValueError(f"{type(obj).__name__}: order names keys that are not in the dict: {unknown}")
    ordered = {key: values[key] for key in order}
    ordered.update(values)  # keys already placed keep their position
    return to_jsonable(ordered, null_nonfinite=null_nonfinite)


def headline_repr(obj, names, *, extra=None, digits: int = 6) -> str:
    """``Name(a=…, b=…)`` with the attributes ``names`` of ``obj``, then ``extra``'s items, leaving
    out ``None`` and empty strings.

    Floats print with ``digits`` significant digits; NumPy scalars as Python numbers. Meant
    for a result's headline numbers, never its arrays (scipy's result objects print the same
    way, e.g. ``BinomTestResult(k=7, n=10, alternative='two-sided', statistic=0.7, pvalue=…)``).
    """
    parts = []
    items = [(name, getattr(obj, name)) for name in names] + list((extra or {}).items())
    for name, value in items:
        if value is None or value == "":
            continue
        if isinstance(value, np.generic):
            value = value.item()
        text = repr(float(f"{value:.{digits}g}")) if isinstance(value, float) else repr(value)
        parts.append(f"{name}={text}")
    return f"{type(obj).__name__}({', '.join(parts)})"
