"""The critic scorer's inputs with one read of the device a call (estimators.standardization.paired_inputs, the
flags of standardized and compressed given): the same float32 inputs as critic_inputs' own reads, bit for bit, at
ordinary values, past the compression's threshold, past float64's range and with a scale whose double overflows; and
a scorer call's syncs counted (experiments.sync_count)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from estimators.standardization import (COMPRESS_BEYOND, compressed, critic_inputs, overflows, paired_inputs,
                                        reaches_far, standardized)

LARGEST = sys.float_info.max


def _cases():
    rng = np.random.default_rng(0)
    ordinary = torch.as_tensor(rng.normal(size=(50, 3)))
    far = ordinary.clone()
    far[3, 1] = 1e9  # past COMPRESS_BEYOND robust standard deviations
    beyond = ordinary.clone()
    beyond[7, 0], beyond[8, 2] = LARGEST, -1e308  # the quotient passes float64's range
    centre = torch.as_tensor(rng.normal(size=(1, 3)) * 0.1)
    scale = torch.as_tensor(rng.random((1, 3)) + 0.5)
    tiny = scale * 1e-300
    wide = scale.clone()
    wide[0, 1] = 1.5e308  # 2·scale overflows for this feature
    return [(ordinary, centre, scale), (far, centre, scale), (beyond, centre, tiny), (ordinary, centre, wide),
            (beyond, centre, wide), (ordinary[:0], centre, scale)]


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.numpy().view(np.int32)


@pytest.mark.parametrize("case", range(6))
def test_given_flags_give_critic_inputs_bit_for_bit(case):
    u, centre, scale = _cases()[case]
    expected = critic_inputs(u, centre, scale)
    is_wide = overflows(scale)[0]
    for wide in (None, is_wide, True):  # True for every feature: the halving form is the plain one where it fits
        t = standardized(u, centre, scale, wide)
        far = bool(reaches_far(t))
        for given in (None, far) + ((True,) if u.numel() else ()):  # True where none is far: the same values
            np.testing.assert_array_equal(_bits(compressed(t, u, centre, scale, given)), _bits(expected))
    assert bool(reaches_far(standardized(u, centre, scale))) == bool(
        u.numel() and (standardized(u, centre, scale).abs() > COMPRESS_BEYOND).any())


def test_paired_inputs_are_two_calls_of_critic_inputs():
    cases = _cases()
    for (u, cu, su), (v, cv, sv) in [(cases[0], cases[2]), (cases[1], cases[3]), (cases[5], cases[5])]:
        for wide in ((None, None), tuple(overflows(su, sv))):
            uu, vv = paired_inputs(u, v, (cu, su), (cv, sv), wide)
            np.testing.assert_array_equal(_bits(uu), _bits(critic_inputs(u, cu, su)))
            np.testing.assert_array_equal(_bits(vv), _bits(critic_inputs(v, cv, sv)))


@pytest.mark.train
def test_a_scorer_call_reads_the_device_once_and_scores_as_before():
    from estimators.neural import CriticConfig, fit_critics
    from experiments.sync_count import count_syncs

    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 600, 1))
    y = np.concatenate([x + rng.normal(size=(1, 600, 1)), rng.normal(size=(1, 600, 40))], axis=2)
    fit = fit_critics(x, y, config=CriticConfig(max_steps=40), seed=0, quiet=True)
    u, v = rng.normal(size=(300, 1)), rng.normal(size=(300, 41))
    with count_syncs() as counted:
        scores = fit.scorer(0, u, v)
    kinds = sorted(kind for (_, _, kind, _) in counted.places.elements())
    # On the CPU: the two copies (a GPU's are queued from page-locked memory), one read, the scores back.
    assert kinds == ["copy between devices", "copy between devices", "copy to the host", "value read"]
    from estimators import neural

    def two_calls(u, v, u_stats, v_stats, wide):  # the scorer before: critic_inputs of each, with its own reads
        return critic_inputs(u, *u_stats), critic_inputs(v, *v_stats)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(neural, "paired_inputs", two_calls)
        before = fit.scorer(0, u, v)
    np.testing.assert_array_equal(scores, before)
