"""The stage profile charges sampled time to the innermost miaudit frame's stage."""

import time

from experiments.stage_profile import OTHER, profile_by_stage, stage_of


def test_stage_of_takes_the_innermost_known_module():
    # numpy inside a certificate inside the event search: the certificate's.
    assert stage_of(["numpy.core", "audit.certificates.event_bounds", "audit.search.event_search"]) == "certificates"
    # the mechanism's training inside the event search's runs: the training's.
    assert stage_of(["torch.nn", "mechanisms.training.dpsgd", "mechanisms.execution.runner",
                     "audit.search.event_search"]) == "mechanism runs (DP-SGD training)"
    assert stage_of(["builtins", "importlib"]) == OTHER
    assert stage_of(["audit.searching_for_nothing"]) == "audit bookkeeping"  # a prefix must end at a dot


def _busy_in(module: str, seconds: float):
    """A function whose frames belong to ``module`` that spins for ``seconds``."""
    namespace = {"__name__": module, "time": time}
    exec("def spin(seconds):\n    end = time.perf_counter() + seconds\n    while time.perf_counter() < end:\n        pass\n",
         namespace)
    return lambda: namespace["spin"](seconds)


def test_profile_charges_the_time_to_the_stage_that_spent_it():
    certificate, search = _busy_in("audit.certificates.fake", 0.3), _busy_in("audit.search.fake", 0.15)

    def run():
        certificate()
        search()
        return "done"

    value, seconds = profile_by_stage(run, interval=0.005)
    assert value == "done"
    assert 0.2 < seconds["certificates"] < 0.45
    assert 0.08 < seconds["statistics and event search"] < 0.3
