"""Progress bars: tqdm on stderr, hidden when stderr is not a terminal or when asked to be quiet."""

from __future__ import annotations

import sys


class _HiddenBar:
    """What a hidden bar does: nothing (a disabled tqdm bar still registers itself in tqdm's shared list
    of bars and scans it, about a millisecond per bar in an audit that makes three of them)."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str, *, quiet: bool = False):
    """Return a tqdm bar on stderr; a hidden bar (``update`` and ``close`` only) when ``quiet`` or stderr
    is not a TTY."""
    if quiet or not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
        return _HiddenBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False)
