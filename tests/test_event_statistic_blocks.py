"""The event test's critic statistic T(a, y, rest) − T(b, y, rest) (audit.search.event_candidates.critic_statistic)
builds the blocks of v that do not depend on the record's value once for both values: the outputs' (a sliced
critic's projection of them) and the other records' w where it is DP's (audit.statistics.secret_critics.public_fixed).
Checked against blocks and scores computed here (the projection with NumPy, the scores built per value as
ProblemCritics.feature_blocks gives them), by the copies estimators.device.to_device's listeners are told of, and by
an audit's whole JSON with and without."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from audit_json import timeless_json
from audit.frameworks import SecretFunction, SecretPair, differential_privacy, leaves_out_record
from audit.search import event_candidates
from audit.statistics.secret_critics import public_fixed, secret_values
from estimators.critic_problems import ProblemCritics, Slicing, pad_columns
from estimators.device import COPY_LISTENERS
from mechanisms.inputs.relation import GroupPairPrior

N, K, RUNS = 6, 2, 120


def _sliced_critics(rng, slice_dim: int = 3):
    """ProblemCritics of three slices at critics 4..6, with frames of orthonormal columns and scaling exponents."""
    frames = {name: np.stack([np.linalg.qr(rng.normal(size=(dim, slice_dim)))[0] for _ in range(3)])
              for name, dim in (("x", K), ("y", 5), ("z", (N - 1) * K))}
    frames["x"] = frames["x"][:, :, :K]
    return ProblemCritics(slice(4, 7), None, Slicing(frames, {"x": 0, "y": -3, "z": 2}))


class _Recorder:
    """A scorer of fixed linear critics that records the blocks it is given: T(u, v) = Σ u·a + Σ v·b."""

    def __init__(self, du: int, dv: int):
        self.du, self.dv, self.calls = du, dv, []

    def input_widths(self, index):
        return self.du, self.dv

    def __call__(self, index, u, v):
        self.calls.append((u, v))
        joined = pad_columns(np.concatenate(v, axis=1), self.dv)
        return u @ np.linspace(1.0, 2.0, u.shape[1]) + joined @ np.linspace(-1.0, 0.5, joined.shape[1])


def _statistic(critics, index, pair, scorer, others="records"):
    cell = SimpleNamespace(record=1, pair=pair, others=others, prior=None, missing=False)
    candidate = SimpleNamespace(cell=cell, kind="slices", index=index, critics=critics)
    return event_candidates.critic_statistic(candidate, SimpleNamespace(fit=lambda kind: SimpleNamespace(scorer=scorer)))


def test_a_sliced_critics_outputs_and_other_records_are_projected_once_for_both_values():
    rng = np.random.default_rng(3)
    critics = _sliced_critics(rng)
    pair = differential_privacy(N, K).edges[1]
    dbs, outputs = rng.normal(size=(RUNS, N, K)), rng.normal(size=(RUNS, 5))
    scorer = _Recorder(K, 6)
    got = _statistic(critics, 5, pair, scorer)(np.full(K, 2.0), np.full(K, -1.0), dbs, outputs)
    (u_a, v_a), (u_b, v_b) = scorer.calls
    assert v_a[0] is v_b[0] and v_a[1] is v_b[1]  # the same arrays: one projection, one device copy each
    # The projections computed here: slice 1 (critic 5 of 4..6), the variable scaled by 2^e first (exact).
    others = np.delete(dbs, 1, axis=1).reshape(RUNS, -1)
    np.testing.assert_array_equal(v_a[0], (outputs * 2.0**-3) @ critics.slicing.frames["y"][1])
    np.testing.assert_array_equal(v_a[1], (others * 2.0**2) @ critics.slicing.frames["z"][1])
    np.testing.assert_array_equal(u_a, np.full((RUNS, K), 2.0) @ critics.slicing.frames["x"][1])
    # The scores as each value's own features gave them (ProblemCritics.feature_blocks per value), bit for bit.
    expected = []
    for value in (np.full(K, 2.0), np.full(K, -1.0)):
        batch = dbs.copy()
        batch[:, 1] = value
        u, v = critics.feature_blocks(*pair.evaluate(batch)[:1], outputs, pair.evaluate(batch)[1], 5)
        expected.append(scorer(5, u, v))
    np.testing.assert_array_equal(got, expected[0] - expected[1])


def test_an_unsliced_critic_reads_the_outputs_and_builds_w_once():
    rng = np.random.default_rng(4)
    pair = differential_privacy(N, K).edges[1]
    dbs, outputs = rng.normal(size=(RUNS, N, K)), rng.normal(size=(RUNS, 3))
    scorer = _Recorder(K, 3 + (N - 1) * K + 2)  # two zero columns of padding
    got = _statistic(ProblemCritics(slice(0, 1), None, None), 0, pair, scorer)(np.ones(K), np.zeros(K), dbs, outputs)
    (u_a, v_a), (u_b, v_b) = scorer.calls
    assert v_a[0] is outputs and v_b[0] is outputs and v_a[1] is v_b[1]
    others = np.delete(dbs, 1, axis=1).reshape(RUNS, -1)
    np.testing.assert_array_equal(v_a[1], others)
    weights_u, weights_v = np.linspace(1.0, 2.0, K), np.linspace(-1.0, 0.5, scorer.dv)
    joined = np.concatenate([outputs, others, np.zeros((RUNS, 2))], axis=1) @ weights_v
    np.testing.assert_array_equal(got, (np.ones((RUNS, K)) @ weights_u + joined)
                                  - (np.zeros((RUNS, K)) @ weights_u + joined))


def test_w_is_built_for_each_value_where_it_may_depend_on_it():
    rng = np.random.default_rng(5)
    dbs, outputs = rng.normal(size=(RUNS, N, K)), rng.normal(size=(RUNS, 1))
    # A user's w reading the record itself: built for each value, from that value's databases.
    reads = SecretPair(SecretFunction("record 1", lambda d: d[:, 1, :]),
                       SecretFunction("all records' sum", lambda d: d.sum(axis=(1, 2))[:, None]))
    assert not leaves_out_record(reads.w, 1) and not public_fixed(reads, 1)
    scorer = _Recorder(K, 2)
    _statistic(ProblemCritics(slice(0, 1), None, None), 0, reads, scorer)(np.full(K, 5.0), np.zeros(K), dbs, outputs)
    (_, v_a), (_, v_b) = scorer.calls
    sums = dbs.copy()
    sums[:, 1] = 5.0
    np.testing.assert_array_equal(v_a[1][:, 0], sums.sum(axis=(1, 2)))
    assert v_a[1] is not v_b[1] and not np.array_equal(v_a[1], v_b[1])
    # DP's pairs: w fixed for the pair's own record only, and not as sums (all rows' sum less the record's).
    dp = differential_privacy(N, K)
    assert public_fixed(dp.edges[1], 1) and not public_fixed(dp.edges[1], 2)
    assert not public_fixed(dp.edges[1], 1, others="sums") and not public_fixed(dp.edges[1], None)
    assert not public_fixed(dp.edges[1], 1, prior=object.__new__(GroupPairPrior))
    g, w = secret_values(dp.edges[1], 1, dbs, public=False)
    np.testing.assert_array_equal(g, dbs[:, 1, :])
    assert w is None


def _per_value_statistic(candidate, fits):
    """critic_statistic as it was: every block of v built for each value (ProblemCritics.feature_blocks)."""
    cell, index = candidate.cell, candidate.index
    scorer = fits.fit(candidate.kind).scorer
    width_u = scorer.input_widths(index)[0]

    def scores(value, dbs, outputs):
        batch = dbs.copy()
        batch[:, cell.record] = value
        g, w = secret_values(cell.pair, cell.record, batch, cell.others, cell.prior, cell.missing)
        u, v = candidate.critics.feature_blocks(g, outputs, w, index)
        return scorer(index, pad_columns(u, width_u), v)

    return lambda first, second, dbs, outputs: scores(first, dbs, outputs) - scores(second, dbs, outputs)


@pytest.mark.train
@pytest.mark.parametrize("notion, slices, kind", [("mi-dp", 0, "full"), ("smi-dp", 3, "slices")])
def test_an_audit_builds_v_once_a_statistic_with_the_json_of_one_built_per_value(monkeypatch, notion, slices, kind):
    from audit.engine import run_audit
    from audit.spec import AuditSpec
    from estimators import resident
    from estimators.critic_config import CriticConfig
    from mechanisms.catalog import get_entry

    # The scorer reading the audit's device store on the CPU, as beside a GPU (experiments.stage_profile).
    monkeypatch.setattr(resident, "on_device", lambda device: device is not None)
    entry = get_entry("histogram_buggy")
    spec = AuditSpec(mechanism=entry.mechanism, priors=[entry.prior], notion=notion, epsilon=0.05, slices=slices,
                     records=(2,), samples=1500, event_runs=1500, critic=CriticConfig(max_steps=60), seed=7,
                     device="cpu")
    scored = []

    def counted(statistic_of):
        def wrapped(candidate, fits):
            statistic = statistic_of(candidate, fits)

            def statistic_counted(*values):
                scored.append(candidate.kind)
                return statistic(*values)
            return statistic_counted
        return wrapped

    def run(statistic_of):
        sizes = []
        COPY_LISTENERS.append(lambda device, nbytes: sizes.append(nbytes))
        try:
            with monkeypatch.context() as patched:
                patched.setattr(event_candidates, "critic_statistic", counted(statistic_of))
                return run_audit(spec), sizes
        finally:
            COPY_LISTENERS.pop()

    once, once_sizes = run(event_candidates.critic_statistic)
    calls = len(scored)
    per_value, per_value_sizes = run(_per_value_statistic)
    assert calls and set(scored) == {kind}  # the critic's statistic was scored
    assert timeless_json(once) == timeless_json(per_value)  # bounds, events, notes: the whole result
    # One copy less of each value-free block per statistic call: the other records' w (its projection, sliced)
    # and a sliced critic's projected outputs. w has (n − 1)·k numbers a run.
    assert sum(once_sizes) < sum(per_value_sizes)
    assert len(per_value_sizes) - len(once_sizes) >= calls


@pytest.mark.train
@pytest.mark.parametrize("slices", [0, 3])
def test_a_trained_scorer_gets_each_value_free_block_copied_and_projected_once(monkeypatch, small_critic, slices):
    import torch

    from estimators import resident
    from estimators.critic_problems import MIProblem, fit_problems
    from estimators.resident import keep_on_device

    rng = np.random.default_rng(8)
    pair = differential_privacy(N, K).edges[1]
    train = rng.normal(size=(300, N, K))
    g, w = pair.evaluate(train)
    y = train.sum(axis=(1, 2))[:, None] + rng.normal(size=(300, 1))
    fitted = fit_problems([MIProblem(g, y, w)], slices=slices, slice_dim=2, rng=np.random.default_rng(1),
                          objective="dv", config=small_critic, device=torch.device("cpu"))
    critics = fitted.problems[0]
    index = critics.terms.start + (1 if slices else 0)
    cell = SimpleNamespace(record=1, pair=pair, others="records", prior=None, missing=False)
    candidate = SimpleNamespace(cell=cell, kind="slices" if slices else "full", index=index, critics=critics)
    fits = SimpleNamespace(fit=lambda kind: fitted.fit)
    dbs, outputs = rng.normal(size=(RUNS, N, K)), rng.normal(size=(RUNS, 1))
    values = (np.full(K, 1.5), np.full(K, -0.5))
    projected = []
    if slices:
        project = Slicing.project
        monkeypatch.setattr(Slicing, "project", lambda self, name, *rest: projected.append(name) or project(
            self, name, *rest))
    monkeypatch.setattr(resident, "on_device", lambda device: True)  # the store read on the CPU, as on a GPU
    sizes = []
    COPY_LISTENERS.append(lambda device, nbytes: sizes.append(nbytes))
    try:
        with keep_on_device():
            once = event_candidates.critic_statistic(candidate, fits)(*values, dbs, outputs)
        once_sizes, once_projected, sizes[:], projected[:] = list(sizes), list(projected), [], []
        with keep_on_device():
            per_value = _per_value_statistic(candidate, fits)(*values, dbs, outputs)
    finally:
        COPY_LISTENERS.pop()
    np.testing.assert_array_equal(once, per_value)
    # u (K columns, or its projection on K = 2), y's block (one column: a projection keeps min(slice_dim, 1)) and
    # w's ((n − 1)·k columns, or its projection on 2).
    u_bytes, y_bytes, w_bytes = 8 * RUNS * K, 8 * RUNS, 8 * RUNS * (2 if slices else (N - 1) * K)
    assert sorted(once_sizes) == sorted([u_bytes, u_bytes, y_bytes, w_bytes])
    # Built per value: w's block each time, and y's projection (the outputs themselves, unsliced, the same array).
    assert sorted(sizes) == sorted([u_bytes, u_bytes, y_bytes, w_bytes, w_bytes] + [y_bytes] * (slices > 0))
    if slices:  # x at each value; y and z once a call, against once a value each
        assert sorted(once_projected) == ["x", "x", "y", "z"]
        assert sorted(projected) == ["x", "x", "y", "y", "z", "z"]
    # The scores from the critic's inputs built here: the statistic's own arrays are those per value.
    scorer = fitted.fit.scorer
    expected = []
    for value in values:
        batch = dbs.copy()
        batch[:, 1] = value
        g_v, w_v = np.array(batch[:, 1, :]), np.delete(batch, 1, axis=1).reshape(RUNS, -1)
        if slices:  # each variable times 2^e (exact), then its slice's frame
            s = index - critics.terms.start
            frames, exponents = critics.slicing.frames, critics.slicing.exponents
            u, vy, vz = (np.ldexp(a, exponents[n]) @ frames[n][s] for n, a in (("x", g_v), ("y", outputs), ("z", w_v)))
            v = np.concatenate([vy, vz], axis=1)
        else:
            u, v = g_v, np.concatenate([outputs, w_v], axis=1)
        expected.append(scorer(index, u, v))
    np.testing.assert_array_equal(once, expected[0] - expected[1])
