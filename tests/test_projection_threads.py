"""The slices' projections run under the thread count the critics' training chooses
(estimators.critic_problems.projection_threads), read from the BLAS library itself while they run (threadpoolctl)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import threadpoolctl
import torch

import estimators.critic_problems as critic_problems
from estimators import CriticConfig
from estimators import device as device_settings
from estimators.critic_problems import MIProblem, fit_problems, projection_threads
from estimators.neural import SMALL_STEP_WORK, step_threads


@pytest.fixture
def free_cores_answer(monkeypatch):
    """Set what free_cores found last (None: nothing within IDLE_REUSE seconds)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)

    def answer(cores):
        at = -float("inf") if cores is None else time.monotonic()
        monkeypatch.setitem(device_settings._FREE_CORES, "at", at)
        monkeypatch.setitem(device_settings._FREE_CORES, "cores", cores)
    return answer


def _problem(n=50):
    rng = np.random.default_rng(0)
    return MIProblem(rng.standard_normal((n, 3)), rng.standard_normal((n, 2)))


def test_projection_threads_are_the_trainings_where_known(free_cores_answer):
    config = CriticConfig()
    cpu = torch.device("cpu")
    small = SMALL_STEP_WORK // (config.batch_size * config.hidden) - 1  # critics whose step is small
    free_cores_answer(None)
    assert projection_threads([_problem()], small, config, "cpu") == 1 == step_threads(small, config.batch_size,
                                                                                       config.hidden, cpu)
    large = 4 * small
    assert projection_threads([_problem()], large, config, "cpu") == 1  # not known yet: one thread
    for cores in (1, 2, 64):
        free_cores_answer(cores)
        expected = min(torch.get_num_threads(), cores)
        assert projection_threads([_problem()], large, config, "cpu") == expected
        # the training's own choice, which reads the same answer
        assert step_threads(large, config.batch_size, config.hidden, cpu) == expected
    # a chained problem trains two critics a slice: half the slices make as large a step
    free_cores_answer(2)
    chained = MIProblem(_problem().x, _problem().y, _problem().x[:, :1], chain=True)
    assert projection_threads([chained], large // 2 + 1, config, "cpu") == min(torch.get_num_threads(), 2)


def test_projection_threads_keep_an_explicit_omp_num_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setitem(device_settings._FREE_CORES, "at", -float("inf"))
    assert projection_threads([_problem()], 4096, CriticConfig(), "cpu") == torch.get_num_threads()


def test_fit_problems_projects_under_that_many_blas_threads(monkeypatch, free_cores_answer):
    seen = []
    projections = critic_problems.problem_projections

    def watched(*args, **kwargs):
        seen.append({info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"})
        return projections(*args, **kwargs)

    monkeypatch.setattr(critic_problems, "problem_projections", watched)
    monkeypatch.setattr(critic_problems, "fit_critics", lambda *args, **kwargs: None)  # the inputs alone
    free_cores_answer(None)
    fit_problems([_problem(), _problem()], slices=1024, rng=np.random.default_rng(1), objective="dv",
                 config=CriticConfig(), device="cpu")
    assert seen == [{1}, {1}]
