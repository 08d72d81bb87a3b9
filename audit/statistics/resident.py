"""The audit's store of output blocks on its torch device (:mod:`estimators.resident`, re-exported here).

An audit's look enters one store (:func:`audit.engine._run_audit`, :func:`keep_on_device`): the float-bit statistics
(:mod:`audit.statistics.float_bits`), the ideal rounding (:func:`audit.statistics.arithmetic.device_round_significand`)
and the critic scorer of the event test's T(a, y) − T(b, y) (:func:`audit.search.event_candidates.critic_statistic`)
read each output block from one device copy; a classifier critic's cell enters a store of its own for its folds
(:func:`audit.statistics.classifier_critic.cross_fitted_candidates`). The store is generic and lives in
``estimators``, the lowest wing, so that the scorer (:class:`estimators.neural.CriticScorer`) reads it too.
"""

from __future__ import annotations

from estimators.resident import RESIDENT_BYTES, ResidentOutputs, keep_on_device, resident_block, rows_of

__all__ = ["RESIDENT_BYTES", "ResidentOutputs", "keep_on_device", "resident_block", "rows_of"]
