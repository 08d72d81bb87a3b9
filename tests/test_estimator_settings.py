"""``estimate_mi``'s settings that only some estimates use, and its memory check of the critics' training.

A setting the chosen estimate does not use (``slices``/``slice_dim`` unsliced, ``k`` for another estimator than
KSG) is one error naming it, never ignored; left unset, the defaults work. Neural critics whose training cannot
fit in the memory available are refused before they train, by the audit's count of the critics (bytes counted
here by hand from the arrays' shapes, the parameters by torch).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from estimators import memory
from estimators.critics import CriticEnsemble
from estimators.estimate import estimate_mi
from estimators.neural import CriticConfig
from estimators.validation import InputError


def _samples(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    return x, x[:, :2] + rng.standard_normal((n, 2))


@pytest.mark.parametrize("estimator, setting, named", [
    ("gaussian", {"slices": 8}, "slices"),
    ("gaussian", {"slice_dim": 2}, "slice_dim"),
    ("ksg", {"slices": 128}, "slices"),  # the default's value, but given: refused
    ("dv", {"k": 5}, "k"),
    ("gaussian", {"k": 3}, "k"),
    ("plugin", {"k": 2}, "k"),
    ("gaussian", {"sliced": True, "slices": 4, "k": 3}, "k"),
])
def test_a_setting_the_estimate_does_not_use_is_one_error_naming_it(estimator, setting, named):
    x, y = _samples()
    with pytest.raises(InputError) as error:
        estimate_mi(np.round(x), np.round(y), estimator=estimator, **setting)
    message = str(error.value)
    assert message.startswith(f"argument '{named}' applies only to ") and len(message.splitlines()) == 1


def test_the_settings_left_unset_or_used_work():
    x, y = _samples()
    # Unsliced Gaussian MI of (x, y) by the covariance's closed form, -1/2 log(det Σ / (det Σx det Σy)).
    joint = np.cov(np.column_stack([x, y]), rowvar=False)
    closed = -0.5 * np.log(np.linalg.det(joint) / (np.linalg.det(joint[:3, :3]) * np.linalg.det(joint[3:, 3:])))
    assert estimate_mi(x, y, estimator="gaussian").value == pytest.approx(closed, rel=1e-9)
    assert estimate_mi(x, y, estimator="gaussian", slices=None, slice_dim=None, k=None).value == pytest.approx(
        closed, rel=1e-9)
    # Sliced with the default count, and with both settings given.
    assert estimate_mi(x, y, estimator="gaussian", sliced=True).slices == 128
    assert estimate_mi(x, y, estimator="gaussian", sliced=True, slices=6, slice_dim=2).slices == 6
    # k used by KSG: k = 1 and k = 5 estimate on other neighbourhoods.
    assert estimate_mi(x, y, estimator="ksg", k=1).value != estimate_mi(x, y, estimator="ksg", k=5).value


def _expected_bytes(critics, samples, width, config):
    """The audit's count of a critic training, from the shapes: every critic's float64 inputs, one chunk's float64
    standardization and float32 inputs with their float32 split copies; five float32 copies of a chunk's
    parameters (counted by torch) and its largest float32 activations (a training step's joint and product batch,
    or a scoring pass of the held-out rows)."""
    chunk = min(critics, config.max_critics_per_chunk)
    features = 8 * critics * samples * width + chunk * samples * width * (8 + 4 + 4)
    parameters = sum(p.numel() for p in CriticEnsemble(chunk, width, hidden=config.hidden).parameters())
    rows = min(samples, max(256, 2**24 // (chunk * config.hidden)))
    activations = max(chunk * 2 * min(config.batch_size, samples) * config.hidden, chunk * rows * config.hidden)
    return features, 4 * (5 * parameters + activations)


class _Trained(Exception):
    """The check let the estimate through to its training."""


def _refused_or_trained(monkeypatch, available, *args, **kwargs):
    monkeypatch.setattr(memory, "available_memory", lambda: available)

    def train(*a, **k):
        raise _Trained

    monkeypatch.setattr("estimators.estimate.fit_problems", train)
    with pytest.raises((InputError, _Trained)) as raised:
        estimate_mi(*args, **kwargs)
    return raised.value


@pytest.mark.parametrize("case", ["sliced", "chain", "critic"])
def test_critics_that_cannot_fit_are_refused_naming_what_to_reduce(monkeypatch, case):
    # Sizes at which the features outweigh the models' activations (a scoring pass holds up to 2^24 of them).
    n = 10_000 if case == "sliced" else 600
    x, y = _samples(n)
    z = np.random.default_rng(1).standard_normal((n, 3))
    if case == "sliced":  # 256 critics, one per slice, on one-dimensional projections of x and y: 2 inputs
        kwargs, critics, width, named = dict(sliced=True, slices=256), 256, 2, "argument 'slices' (256)"
        config = CriticConfig()
    elif case == "chain":  # two critics (I(X; Y, Z) and I(X; Z)) on all 3 + 2 + 3 columns
        kwargs, critics, width, named = dict(z=z, conditional="chain"), 2, 8, "arguments 'x' and 'y' (600 samples)"
        config = CriticConfig()
    else:  # a wide critic: its parameters and activations outweigh the features
        kwargs, critics, width, named = {}, 1, 5, "argument 'critic'"
        config = CriticConfig(hidden=4096)
    features, models = _expected_bytes(critics, n, width, config)
    need = features + models
    assert (models > features) == (case == "critic")
    refused = _refused_or_trained(monkeypatch, need - 1, x, y, critic=config, **kwargs)
    assert isinstance(refused, InputError)
    message = str(refused)
    assert message.startswith(named) and f"at least {memory.format_bytes(need)} of memory" in message
    assert re.search(r"; (use fewer|use a smaller critic)", message) and len(message.splitlines()) == 1
    # With exactly that much available the estimate goes on to train.
    assert isinstance(_refused_or_trained(monkeypatch, need, x, y, critic=config, **kwargs), _Trained)


def test_classical_estimates_train_no_critics_and_are_not_checked(monkeypatch):
    x, y = _samples()
    monkeypatch.setattr(memory, "available_memory", lambda: 1)
    assert estimate_mi(x, y, estimator="gaussian").value > 0
