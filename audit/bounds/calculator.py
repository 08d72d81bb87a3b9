"""The calculator protocol behind ``miaudit bounds NAME``.

Each bounds module (one per paper) exposes ``CALCULATORS``, a list of :class:`Calculator`.
``compute(args)`` receives the parsed ``argparse.Namespace`` (including ``args.bits``, which
switches information inputs and outputs to bits) and returns the JSON payload: a flat dict
whose fields are named in the bounds issue (``mi_epsilon``, ``delta``, ``mu``, ...), plus
``unit`` where an information value is involved and ``source`` naming the theorem used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Calculator:
    """One ``miaudit bounds`` sub-command."""

    name: str
    help: str
    configure: Callable  # (argparse.ArgumentParser) -> None
    compute: Callable  # (argparse.Namespace) -> dict

    def describe(self, payload: dict) -> str:
        """Readable text for a payload: one ``field: value`` line each."""
        width = max((len(k) for k in payload), default=0)
        return "\n".join(f"{k.ljust(width)}  {_fmt(v)}" for k, v in payload.items())


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    return str(value)
