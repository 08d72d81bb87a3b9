"""One slice → fit → certify path: estimate_mi and the audit engine share it and agree."""

import copy
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

import audit.statistics.secret_critics as secret_critics
from audit.engine import run_audit
from audit.spec import AuditSpec
from estimators.certify import certify_critics, sliced_lower_bound
from estimators.critic_problems import MIProblem, fit_problems
from estimators.estimate import estimate_mi
from estimators.neural import CriticConfig
from mechanisms.catalog import get_entry

FAST = CriticConfig(max_steps=150)


def _fake_fit(rng, m, n_val=400, n_test=600):
    """Critic values of m fixed critics on validation and test splits, in [lo, hi] = [-3, 3]."""
    def values(*shape, shift):
        return np.clip(rng.normal(shift, 0.8, shape), -3.0, 3.0)
    return SimpleNamespace(output_range=(-3.0, 3.0),
                           validation_joint=values(m, n_val, shift=0.4), validation_product=values(m, n_val // 2, shift=-0.3),
                           test_joint=values(m, n_test, shift=0.4), test_product=values(m, n_test // 2, shift=-0.3))


@pytest.mark.parametrize("delta", [0.05, 0.001])
def test_sliced_bound_of_one_slice_is_that_critics_dv_bound(delta):
    """With one slice the averaged bound is the critic's own DV bound: DV is shift-invariant and
    the Bernstein bound of e^(T − s) is e^(−s) times that of e^T, so the shift cancels."""
    fit = _fake_fit(np.random.default_rng(4), 3)
    per_critic, _ = certify_critics(fit, delta)
    for i in range(3):
        assert sliced_lower_bound(fit, slice(i, i + 1), delta) == pytest.approx(per_critic[i], rel=1e-9, abs=1e-12)


def test_a_fits_cap_candidates_computed_once_are_each_secrets_own():
    """SMI-DP computes the candidate caps of every certifiable secret's slices once
    (audit.certificates.secret_bounds._rows_cap_candidates) for its bounds at α/K and α/k: each secret's rows are
    those of its slices alone, and its sliced bound at any level the same to the bit as with caps of its own."""
    from audit.certificates.secret_bounds import _rows_cap_candidates
    from estimators.certify import cap_candidates

    fit = _fake_fit(np.random.default_rng(6), 9)
    groups = [slice(0, 3), slice(6, 9)]  # the slices of two certifiable secrets; rows 3-5 are another's
    shared = _rows_cap_candidates(fit, groups)
    assert np.isnan(shared[3:6]).all()
    for group in groups:
        own = cap_candidates(fit.validation_joint[group], fit.validation_product[group], 3.0)
        assert np.array_equal(shared[group], own)
        for delta in (0.05, 0.05 / 2, 0.001):
            assert sliced_lower_bound(fit, group, delta, candidates=shared) == sliced_lower_bound(fit, group, delta)


@pytest.mark.train
def test_fit_problems_places_terms_and_chain_critics():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 2))
    z = x[:, :1] + rng.normal(size=(600, 1))
    y = rng.normal(size=(600, 3))
    trained = fit_problems([MIProblem(x, y), MIProblem(x, y, z, chain=True)], slices=4, rng=rng, objective="dv",
                           config=FAST, device="cpu")
    first, second = trained.problems
    assert (first.terms, first.chain) == (slice(0, 4), None)
    assert (second.terms, second.chain) == (slice(4, 8), slice(8, 12))
    assert len(trained.fit.estimates) == 12
    np.testing.assert_array_equal(second.values(trained.fit.estimates),
                                  trained.fit.estimates[4:8] - trained.fit.estimates[8:12])
    # The frames of each problem are its own; features rebuild one slice's inputs as at training.
    s = 2
    u, v = second.features(x, y, z, second.terms.start + s)
    frames = second.slicing.frames
    scale = {name: 2.0 ** second.slicing.exponents[name] for name in ("x", "y", "z")}
    np.testing.assert_allclose(u, (x * scale["x"]) @ frames["x"][s])
    np.testing.assert_allclose(v, np.concatenate(((y * scale["y"]) @ frames["y"][s], (z * scale["z"]) @ frames["z"][s]),
                                                 axis=1))
    # feature_blocks: v as its blocks, side by side the same values; unsliced, y itself (no copy) and z.
    blocked_u, blocks = second.feature_blocks(x, y, z, second.terms.start + s)
    np.testing.assert_array_equal(blocked_u, u)
    np.testing.assert_array_equal(np.concatenate(blocks, axis=1), v)
    unsliced = dataclasses.replace(second, slicing=None)
    whole, alone = unsliced.feature_blocks(x, y, z, 4)[1], unsliced.feature_blocks(x, y, None, 4)[1]
    assert len(whole) == 2 and whole[0] is y and whole[1] is z and len(alone) == 1 and alone[0] is y


@pytest.mark.train
def test_estimate_mi_and_the_engine_give_the_same_sliced_certificate(monkeypatch):
    """An SMI-DP audit of one record and estimate_mi on that record's data, with the generator
    the engine used, train the same critics and certify the same averaged bound."""
    captured = []
    original = secret_critics.fit_problems

    def capture(problems, **kwargs):
        if kwargs.get("slices"):
            captured.append((list(problems), kwargs["slices"], copy.deepcopy(kwargs["rng"])))
        return original(problems, **kwargs)
    monkeypatch.setattr(secret_critics, "fit_problems", capture)
    entry = get_entry("histogram_buggy")
    spec = AuditSpec(mechanism=entry.mechanism, priors=[entry.prior], notion="smi-dp", epsilon=0.05, slices=6,
                     records=(2,), samples=3000, event_runs=0, critic=FAST, seed=5, device="cpu")
    result = run_audit(spec)
    (problems, slices, rng), = captured
    (problem,) = problems
    assert not problem.chain  # independent rows: I(X_2; M, X_-2) = I(X_2; M | X_-2)
    estimate = estimate_mi(problem.x, problem.y, problem.z, sliced=True, slices=slices, alpha=spec.alpha, seed=rng,
                           critic=FAST, device="cpu")
    (evidence,) = [e for e in result.per_record if e.record == 2]
    assert estimate.lower_bound == pytest.approx(result.lower_bound, rel=1e-12)
    assert evidence.lower_bound == pytest.approx(result.lower_bound, rel=1e-12)  # one secret: both at α
    np.testing.assert_allclose(estimate.per_slice, evidence.per_slice, rtol=1e-12)


def test_cell_critic_is_the_full_critic_else_the_best_slice():
    from audit.certificates.secret_bounds import cell_critic
    from audit.statistics.secret_critics import SecretFits
    from estimators.critic_problems import ProblemCritics, ProblemFit

    cell = SimpleNamespace(name="record 0")
    validation = np.array([0.1, 0.5, 0.3, 0.9, 0.2])
    sliced = ProblemFit(SimpleNamespace(validation=validation), (ProblemCritics(slice(1, 4), None, None),))
    full = ProblemFit(SimpleNamespace(validation=np.array([0.05])), (ProblemCritics(slice(0, 1), None, None),))
    best_slice = cell_critic(SecretFits(cells=(cell,), sliced=sliced), 0)
    assert (best_slice.kind, best_slice.index, best_slice.score) == ("slices", 3, 0.9)  # slices 1..3: 0.5, 0.3, 0.9
    assert (cell_critic(SecretFits(cells=(cell,), full=full, sliced=sliced), 0).kind) == "full"
    assert cell_critic(SecretFits(cells=(cell,)), 0) is None


def test_stacked_inputs_pad_and_stack_and_keep_a_lone_full_width_array_uncopied():
    from estimators.critic_problems import stacked_inputs

    wide, narrow = np.arange(24.0).reshape(1, 4, 6), np.ones((2, 4, 3))
    assert stacked_inputs([wide], 6) is wide  # one problem at full width: the audit's own outputs, not a copy
    stacked = stacked_inputs([wide, narrow], 6)
    expected = np.zeros((3, 4, 6))
    expected[0], expected[1:, :, :3] = wide[0], 1.0
    np.testing.assert_array_equal(stacked, expected)
    np.testing.assert_array_equal(stacked_inputs([narrow], 5)[..., 3:], 0.0)
