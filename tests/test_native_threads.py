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
