"""Catalog parameters: ``NAME?KEY=VALUE&KEY=VALUE`` specs and ``[mechanism] params`` tables.

Each catalog entry is built by a factory whose keyword arguments (with their defaults) are the
entry's settable parameters, e.g. ``svt4(epsilon=1.0, queries=5, threshold=1.0, cutoff=1)``.
A value keeps the type of its default: an integer parameter takes only integers, a float
parameter any finite number, an integer at most :data:`MAX_INTEGER_PARAMETER` in size. Ranges are checked by the factory itself, so an invalid value
gets the factory's error, which names the parameter.
"""

from __future__ import annotations

import inspect
import math
import numbers
import re
from urllib.parse import unquote

from estimators.validation import InputError, parse_decimal, parse_decimal_integer

__all__ = ["MAX_INTEGER_PARAMETER", "build", "defaults", "split_spec"]

#: The largest integer parameter (records, bins, queries, filter size, steps, ...): every integer
#: parameter sizes an array or a loop, and without a bound ``svt4?queries=1000000000`` grew a
#: listing to 24 GB (issue 32 B1). What a size within it costs an audit is checked against the
#: memory before anything is drawn (:mod:`mechanisms.execution.memory`).
MAX_INTEGER_PARAMETER = 10_000


def split_spec(spec: str) -> tuple[str, dict]:
    """Split ``"svt4?epsilon=0.1&queries=10"`` into ``("svt4", {"epsilon": "0.1", "queries": "10"})``.

    Raises
    ------
    InputError
        A part without ``=``, an empty key, or a key given twice.
    """
    if not isinstance(spec, str):
        raise InputError(f"catalog spec must be a string, got {spec!r}")
    name, _, query = spec.partition("?")
    params = {}
    for part in filter(None, query.split("&")):
        key, sep, value = part.partition("=")
        key = unquote(key).strip()
        if not sep or not key:
            raise InputError(f"catalog parameter {part!r} in {spec!r} must be KEY=VALUE")
        if key in params:
            raise InputError(f"catalog parameter '{key}' is given twice in {spec!r}")
        params[key] = unquote(value).strip()
    return name.strip(), params


def defaults(factory) -> dict:
    """The settable parameters of ``factory`` and their default values."""
    return {name: p.default for name, p in inspect.signature(factory).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _coerce(name: str, key: str, value, default):
    """``value`` (a string from a spec, or a number from a table) with the type of ``default``."""
    where = f"parameter '{key}' of catalog:{name}"
    if isinstance(default, bool):
        raise AssertionError("catalog parameters are numbers")  # no boolean parameters exist
    if isinstance(value, str):
        text = value
        try:  # plain ASCII decimals: int() and float() would read "1_0" as 10 and accept non-ASCII digits
            value = parse_decimal_integer(text) if isinstance(default, int) else parse_decimal(text)
        except ValueError:
            kind = "an integer" if isinstance(default, int) else "a number"
            raise InputError(f"{where} must be {kind}, got {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{where} must be a number, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, float) and not value.is_integer():
            raise InputError(f"{where} must be an integer, got {value!r}")
        value = int(value)
        if abs(value) > MAX_INTEGER_PARAMETER:
            raise InputError(f"{where} must be at most {MAX_INTEGER_PARAMETER} (a size or count: the entry's "
                             f"arrays grow with it), got {value}")
        return value
    if not math.isfinite(float(value)):
        raise InputError(f"{where} must be finite, got {value!r}")
    return float(value)


def build(name: str, factory, params: dict | None):
    """``factory(**params)`` after checking every key is a parameter and coercing the values.

    Raises
    ------
    InputError
        An unknown key (the message lists the known ones), a value of the wrong type, or a
        value the factory rejects (its message names the parameter).
    """
    known = defaults(factory)
    params = dict(params or {})
    unknown = sorted(set(params) - set(known))
    if unknown:
        listed = ", ".join(f"{k} (default {v!r})" for k, v in known.items()) or "none"
        raise InputError(f"unknown parameter(s) {', '.join(map(repr, unknown))} of catalog:{name}; "
                         f"its parameters: {listed}")
    given = {k: _coerce(name, k, v, known[k]) for k, v in params.items()}
    values = {**known, **given}
    settings = ", ".join(f"{k}={v!r}" for k, v in given.items())
    try:
        entry = factory(**values)
    except InputError as exc:
        message = str(exc)
        named = set(re.findall(r"argument '([^']+)'", message))
        if given and named and not named & set(given):
            # The factory checked a value it derived (a scale, a rate, a count): say which of the user's caused it.
            message += f" (a value computed from the parameter(s) you set: {settings})"
        raise InputError(f"catalog:{name}: {message}") from None
    except (ArithmeticError, ValueError, MemoryError) as exc:  # overflow, a dimension too large for NumPy, ...
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise InputError(f"catalog:{name}: the parameter(s) {settings or '(defaults)'} cannot be used: building the "
                         f"mechanism failed ({why}); choose smaller or more moderate values") from None
    return entry, values
