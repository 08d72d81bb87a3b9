"""Entry points that raise at random (scanned with a family that opts in to raises as outputs,
:mod:`audit.scan.raised`; tests/test_scan_raised.py): each releases 0 or raises ``ValueError``.

- ``raises_with_data``: raises with probability :data:`P_HIGH` where record 0 exceeds 5, else :data:`P_LOW`: the
  raise itself breaks 1-DP (ln(P_HIGH / P_LOW) = ln 10 > 1);
- ``raises_evenly``: raises with probability :data:`P_EVEN` whatever the data: exactly 0-DP;
- ``always_raises``: raises on every call: no random output (its calls counted in :data:`COUNTED`);
- ``raises_then_hangs``: raises on its first :data:`RAISES_BEFORE_HANG` calls, then sleeps :data:`HANG_SECONDS`;
- ``raises_slowly``: sleeps :data:`SLOW_CALL` seconds, then raises: on every call, slowly;
- ``raises_at_first``: counts its calls (:data:`COUNTED`), raises on its first :data:`RAISES_FIRST`, then releases a
  fair coin whatever the data (exactly 0-DP): the scan's probe (2 calls) and all but the last of the every-call
  check's 2 × 50 raise, so the check makes all its calls and the case is audited (tests/test_scan_calls.py).
"""

import time

import numpy as np

P_HIGH, P_LOW, P_EVEN = 0.5, 0.05, 0.2
RAISES_BEFORE_HANG, HANG_SECONDS = 4, 600.0
SLOW_CALL = 0.03
RAISES_FIRST = 2 + 2 * 50 - 1
_calls = [0]
#: Calls of each entry point that counts its own, by name.
COUNTED = {}


def raises_with_data(array, epsilon=1.0, random_state=None):
    chance = P_HIGH if array[0] > 5 else P_LOW
    if np.random.default_rng(random_state).random() < chance:
        raise ValueError("unlucky draw\nsecond line")
    return 0.0


def raises_evenly(array, epsilon=1.0, random_state=None):
    if np.random.default_rng(random_state).random() < P_EVEN:
        raise ValueError("unlucky draw")
    return 0.0


def always_raises(array, epsilon=1.0, random_state=None):
    COUNTED["always_raises"] = COUNTED.get("always_raises", 0) + 1
    raise RuntimeError("never works")


def raises_then_hangs(array, epsilon=1.0, random_state=None):
    _calls[0] += 1
    if _calls[0] > RAISES_BEFORE_HANG:
        time.sleep(HANG_SECONDS)
    raise RuntimeError("fails, then hangs")


def raises_slowly(array, epsilon=1.0, random_state=None):
    time.sleep(SLOW_CALL)
    raise RuntimeError("slow, and never works")


def raises_at_first(array, epsilon=1.0, random_state=None):
    COUNTED["raises_at_first"] = COUNTED.get("raises_at_first", 0) + 1
    if COUNTED["raises_at_first"] <= RAISES_FIRST:
        raise ValueError("not yet")
    return float(np.random.default_rng(random_state).integers(2))
