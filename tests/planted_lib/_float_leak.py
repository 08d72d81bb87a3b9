"""An entry point whose only leak is in its float bits (scanned alone, ``planted_lib._float_leak``): the exactly ε-DP
jittered count of :mod:`planted_lib._float_exact` with its lowest significand bit replaced by the parity of the
true count, so the lowest bit of every output tells neighbouring inputs apart (ε = ∞ on the bit patterns).

Only the float-bit event test can refute it: the other statistics read the outputs rounded to 32 significant bits
(:func:`audit.statistics.arithmetic.round_significand`), where the planted bit is gone except where the bits
between it and the 32nd decide a tie of the rounding (bits 33 to 52 all a single 1 then zeros: about 2⁻²⁰ of the
outputs), so the rounded law is the jittered count's, exactly ε-DP, up to that.
"""

import numpy as np

from planted_lib._float_exact import jittered_count


def parity_bit_count(array, epsilon=1.0, random_state=None):
    """:func:`planted_lib._float_exact.jittered_count` with the lowest significand bit set to the parity of the
    number of records ≥ 5."""
    parity = int(np.sum(np.asarray(array, dtype=float) >= 5)) & 1
    value = np.float64(jittered_count(array, epsilon, random_state))
    bits = value.view(np.int64)
    return float(((bits & ~np.int64(1)) | np.int64(parity)).view(np.float64))
