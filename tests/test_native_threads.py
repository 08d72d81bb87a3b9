"""A per-database mechanism's calls run on one BLAS and one OpenMP thread (estimators.device.native_threads)."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from mechanisms.adapters.callables import PerDatabaseMechanism


def _blas_threads() -> list:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_a_per_database_function_sees_one_blas_thread_and_the_setting_is_restored(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    seen = []

    def release(db, rng):
        seen.append(_blas_threads())
        return float(db.sum() + rng.normal())

    with threadpool_limits(limits=2, user_api="blas"):  # two threads before, whatever the machine's default
        before = _blas_threads()
        rows = PerDatabaseMechanism(release)(np.zeros((3, 2, 1)), np.random.default_rng(0))
        after = _blas_threads()
    assert before and set(before) == {2}  # NumPy's BLAS is loaded
    assert rows.shape == (3, 1)
    assert seen == [[1] * len(before)] * 3
    assert after == before


def test_an_explicit_omp_num_threads_is_left_as_the_user_set_it(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    seen = []

    def release(db, rng):
        seen.append(_blas_threads())
        return 0.0

    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        PerDatabaseMechanism(release)(np.zeros((1, 2, 1)), np.random.default_rng(0))
    assert set(before) == {2} and seen == [before]


def test_libraries_loaded_after_an_earlier_use_are_found_again(monkeypatch):
    # The controller is kept between uses and replaced once Python has imported a module since (a user's function
    # that imports a library loads its native code then); without a new import the same controller serves.
    import sys
    import types

    from estimators import device

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with device.native_threads(1):
        pass
    kept = device._NATIVE_CONTROLLER["controller"]
    with device.native_threads(1):
        pass
    assert device._NATIVE_CONTROLLER["controller"] is kept
    monkeypatch.setitem(sys.modules, "miaudit_test_freshly_imported", types.ModuleType("miaudit_test_freshly_imported"))
    with device.native_threads(1):
        assert _blas_threads() and set(_blas_threads()) == {1}
    assert device._NATIVE_CONTROLLER["controller"] is not kept
