"""Progress bars: tqdm on stderr, hidden when stderr is not a terminal or when asked to be quiet."""

from __future__ import annotations

import sys


def progress_bar(total: int, desc: str, *, quiet: bool = False):
    """Return a tqdm bar on stderr; disabled when ``quiet`` or stderr is not a TTY."""
    from tqdm.auto import tqdm

    disable = quiet or not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty())
    return tqdm(total=total, desc=desc, file=sys.stderr, disable=disable, leave=False)
