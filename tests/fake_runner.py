"""The part of :class:`~mechanisms.execution.runner.MechanismRunner` the event search uses, for tests that
give it a mechanism of their own: subclasses define ``sample(dbs, rng, what="")``."""

import numpy as np


class SamplingRunner:
    def runs_of(self, database, count, rng, *, what="", budget=None):
        """(databases, outputs) of ``count`` runs of one database, as the runner's ``runs_of`` returns them."""
        batch = np.repeat(np.asarray(database, dtype=np.float64)[None], count, axis=0)
        return batch, self.sample(batch, rng, what)
