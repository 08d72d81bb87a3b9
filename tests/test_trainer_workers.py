"""A catalog DP-SGD entry whose trainer ``--device`` swapped reaches worker processes with that trainer.

The audit's process swaps the entry's NumPy trainer (:class:`DPSGD`) for the torch one (:class:`TorchDPSGD`) on
the device chosen (:func:`mechanisms.training.torch_dpsgd.trainer_for_device`); a worker process rebuilds the
mechanism from its source, ``catalog:NAME``, and before got the NumPy trainer back: the same laws, other numbers,
so a run with workers differed from the same run in one process.
"""

import pickle
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import pytest

from audit.config.building import build_spec
from audit.config.trainer_device import with_trainer
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.execution.worker import MechanismReference
from mechanisms.training.dpsgd import DPSGD
from mechanisms.training.torch_dpsgd import TorchDPSGD

ENTRY = {"spec": "catalog:dpsgd_s1_q1_t4"}


def _spec(device="cpu", **audit):
    return build_spec({"mechanism": dict(ENTRY), "audit": {"device": device, **audit}})


def test_the_source_a_worker_loads_gives_the_trainer_the_device_chose():
    spec = _spec("cpu")
    assert type(spec.mechanism) is TorchDPSGD and spec.mechanism.device == "cpu"
    shipped = pickle.loads(pickle.dumps(MechanismReference("dpsgd", spec.mechanism_source)))
    assert shipped.mechanism is None  # it travels by its source, as to a worker
    assert shipped.resolve() == spec.mechanism
    # Parameters of the entry travel with the trainer.
    with_params = build_spec({"mechanism": {**ENTRY, "params": {"steps": 3}}, "audit": {"device": "cpu"}})
    loaded = pickle.loads(pickle.dumps(MechanismReference("dpsgd", with_params.mechanism_source))).resolve()
    assert type(loaded) is TorchDPSGD and loaded.steps == 3 == with_params.mechanism.steps
    # Where the NumPy trainer is kept (auto without a GPU), the source is the entry's, as before.
    kept = _spec("auto")
    assert type(kept.mechanism) is DPSGD and kept.mechanism_source == ENTRY["spec"]


def test_auto_s_choice_of_the_torch_trainer_reaches_the_source_of_both_relations_audits():
    import dataclasses

    from mechanisms.inputs.relation import ADD_REMOVE

    spec = _spec("auto", samples=3000)
    companion = dataclasses.replace(spec, relation=ADD_REMOVE, claim=dataclasses.replace(spec.claim, relation=ADD_REMOVE),
                                    presence_column=None, companion=None)
    # The companion's neural critics go to the GPU, so the trainer follows (test_training_device_cost).
    chosen = with_trainer(dataclasses.replace(spec, companion=companion), cuda_available=True)
    assert type(chosen.mechanism) is TorchDPSGD and chosen.mechanism.device == "cuda"
    for one in (chosen, chosen.companion):
        assert one.mechanism_source == {"spec": ENTRY["spec"], "trainer": "cuda"}


@pytest.mark.integration
def test_two_local_workers_run_the_torch_trainer_of_the_audit_s_process():
    spec = _spec("cpu")
    reference = MechanismReference("dpsgd", spec.mechanism_source)
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        in_worker = pool.submit(reference.resolve).result(timeout=300)
    assert type(in_worker) is TorchDPSGD and in_worker.device == "cpu"

    prior = spec.priors[0]
    databases = prior(300, np.random.default_rng(1))

    def outputs(mechanism, workers):
        settings = ExecutionSettings(workers=workers, chunk_size=50)
        with MechanismRunner(mechanism, "dpsgd", settings, source=spec.mechanism_source) as runner:
            return runner.sample(databases, np.random.default_rng(2))

    alone, pooled = outputs(spec.mechanism, 1), outputs(spec.mechanism, 2)
    np.testing.assert_array_equal(pooled, alone)
    # The NumPy trainer draws other numbers (the same laws): the workers did not run it.
    numpy_trainer = DPSGD(**{name: getattr(spec.mechanism, name) for name in DPSGD.__dataclass_fields__})
    with MechanismRunner(numpy_trainer, "dpsgd", ExecutionSettings(chunk_size=50)) as runner:
        assert not np.array_equal(runner.sample(databases, np.random.default_rng(2)), alone)
