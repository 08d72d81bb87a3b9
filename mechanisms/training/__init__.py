"""Auditing DP-SGD: training runs as batched mechanisms, canaries, the accountant's claims.

One concept per module: :mod:`~mechanisms.training.records` (training sets, canaries, the
neighbouring relation), :mod:`~mechanisms.training.dpsgd` (the functional, batched DP-SGD
mechanism and its releases), :mod:`~mechanisms.training.accountant` (claims from the
accountant), :mod:`~mechanisms.catalog.dpsgd` (correct and buggy DP-SGD entries),
:mod:`~mechanisms.training.torch_dpsgd` (the same step in torch, on a GPU, with an optional MLP;
torch is imported when a run starts). The black-box search over canaries and initialisations of a
final-model audit is an audit procedure: :mod:`audit.search.last_iterate`.
"""

from mechanisms.training.accountant import dpsgd_claim, dpsgd_epsilon, dpsgd_rdp_claim, dpsgd_zcdp_claim, noise_for_epsilon
from mechanisms.training.dpsgd import BUGS, DPSGD, RELEASES, SAMPLINGS
from mechanisms.training.records import (digits_training_set, gaussian_training_set, gradient_canary, input_canary, null_record,
                      with_record)
from mechanisms.training.torch_dpsgd import TorchDPSGD, on_device

__all__ = ["BUGS", "DPSGD", "RELEASES", "SAMPLINGS", "digits_training_set", "dpsgd_claim", "dpsgd_epsilon",
           "dpsgd_rdp_claim", "dpsgd_zcdp_claim", "gaussian_training_set", "gradient_canary", "input_canary",
           "noise_for_epsilon", "null_record", "on_device", "TorchDPSGD", "with_record"]
