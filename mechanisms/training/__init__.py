"""Auditing DP-SGD: training runs as batched mechanisms, canaries, the accountant's claims.

One concept per module: :mod:`~mechanisms.training.records` (training sets, canaries, the
neighbouring relation), :mod:`~mechanisms.training.dpsgd` (the functional, batched DP-SGD
mechanism and its releases), :mod:`~mechanisms.training.accountant` (claims from the
accountant), :mod:`~mechanisms.training.catalog` (correct and buggy DP-SGD entries).
"""

from .accountant import dpsgd_claim, dpsgd_epsilon, dpsgd_rdp_claim, dpsgd_zcdp_claim
from .dpsgd import BUGS, DPSGD, RELEASES, SAMPLINGS
from .records import (digits_training_set, gaussian_training_set, gradient_canary, input_canary, null_record,
                      with_record)

__all__ = ["BUGS", "DPSGD", "RELEASES", "SAMPLINGS", "digits_training_set", "dpsgd_claim", "dpsgd_epsilon",
           "dpsgd_rdp_claim", "dpsgd_zcdp_claim", "gaussian_training_set", "gradient_canary", "input_canary",
           "null_record", "with_record"]
