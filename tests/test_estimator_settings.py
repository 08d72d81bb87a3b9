"""``estimate_mi``'s settings that only some estimates use, and the memory checks of its estimates and of
``fit_critics``.

A setting the chosen estimate does not use (``slices``/``slice_dim`` unsliced, ``conditional`` without ``z``,
``k`` for another estimator than KSG, ``correction`` for another than the plug-in, ``critic``/``device`` for a
classical one, ``alpha``/``bound`` for an estimate that certifies nothing) is one error naming it, never ignored;
left unset (``UNSET``), the defaults work. ``seed`` and ``quiet`` are accepted by every estimate. Neural critics whose training cannot fit in the memory available are
refused before they train, by the audit's count of the critics (bytes counted here by hand from the arrays'
shapes, the parameters by torch), once per estimate; ``fit_critics`` runs the same check on the inputs it is
handed; a classical sliced estimate is checked on its projections.
"""

from __future__ import annotations

import inspect
import pickle
import re

import numpy as np
import pytest

from estimators import memory
from estimators import neural
from estimators.choices import UNSET
from estimators.critics import CriticEnsemble
from estimators.estimate import estimate_mi
from estimators.neural import CriticConfig, fit_critics
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
    ("gaussian", {"conditional": "independent"}, "conditional"),  # no z
    ("ksg", {"correction": "miller-madow"}, "correction"),
    ("gaussian", {"correction": None}, "correction"),  # None (no correction) is a given value
    ("dv", {"correction": None}, "correction"),
    ("ksg", {"alpha": 0.05}, "alpha"),
    ("plugin", {"alpha": 0.1}, "alpha"),
    ("gaussian", {"bound": "bernstein"}, "bound"),
    ("dv", {"z": "chain", "alpha": 0.05}, "alpha"),  # a chain-rule difference certifies nothing
    ("nwj", {"z": "chain", "bound": "hoeffding"}, "bound"),
    ("ksg", {"critic": CriticConfig()}, "critic"),
    ("gaussian", {"critic": None}, "critic"),
    ("plugin", {"device": "cpu"}, "device"),
    ("gaussian", {"device": "auto"}, "device"),
])
def test_a_setting_the_estimate_does_not_use_is_one_error_naming_it(estimator, setting, named):
    x, y = _samples()
    setting = dict(setting)
    if setting.pop("z", None) == "chain":
        setting.update(z=np.round(x), conditional="chain")
    with pytest.raises(InputError) as error:
        estimate_mi(np.round(x), np.round(y), estimator=estimator, **setting)
    message = str(error.value)
    assert message.startswith(f"argument '{named}' applies only ") and len(message.splitlines()) == 1
    assert f"drop {named}" in message


def test_the_settings_left_unset_or_used_work():
    x, y = _samples()
    # Unsliced Gaussian MI of (x, y) by the covariance's closed form, -1/2 log(det Σ / (det Σx det Σy)).
    joint = np.cov(np.column_stack([x, y]), rowvar=False)
    closed = -0.5 * np.log(np.linalg.det(joint) / (np.linalg.det(joint[:3, :3]) * np.linalg.det(joint[3:, 3:])))
    assert estimate_mi(x, y, estimator="gaussian").value == pytest.approx(closed, rel=1e-9)
    unset = dict(slices=UNSET, slice_dim=UNSET, conditional=UNSET, alpha=UNSET, device=UNSET, critic=UNSET,
                 bound=UNSET, k=UNSET, correction=UNSET)
    assert estimate_mi(x, y, estimator="gaussian", **unset).value == pytest.approx(closed, rel=1e-9)
    # Sliced with the default count, and with both settings given.
    assert estimate_mi(x, y, estimator="gaussian", sliced=True).slices == 128
    assert estimate_mi(x, y, estimator="gaussian", sliced=True, slices=6, slice_dim=2).slices == 6
    # k used by KSG: k = 1 and k = 5 estimate on other neighbourhoods.
    assert estimate_mi(x, y, estimator="ksg", k=1).value != estimate_mi(x, y, estimator="ksg", k=5).value


def test_seed_and_quiet_are_accepted_by_every_estimate_and_change_only_what_is_random_or_shown(capsys):
    """Not refused as the settings above are (estimate_mi's docstring): the unsliced Gaussian estimate is its closed
    form whatever the seed; the plug-in's and KSG's (data without ties) are the same for two seeds; a sliced estimate
    and KSG on data with ties are seeded; no classical estimate shows anything, quiet or not."""
    x, y = _samples()
    joint = np.cov(np.column_stack([x, y]), rowvar=False)
    closed = -0.5 * np.log(np.linalg.det(joint) / (np.linalg.det(joint[:3, :3]) * np.linalg.det(joint[3:, 3:])))
    assert estimate_mi(x, y, estimator="gaussian", seed=7, quiet=False).value == pytest.approx(closed, rel=1e-9)
    for estimator, data in (("gaussian", (x, y)), ("plugin", (x[:, 0] > 0, y[:, 0] > 0)), ("ksg", (x, y))):
        values = {estimate_mi(*data, estimator=estimator, seed=seed, quiet=quiet).value
                  for seed, quiet in ((0, True), (7, False), (np.random.default_rng(3), True))}
        assert len(values) == 1, estimator
    assert capsys.readouterr() == ("", "")
    sliced = {estimate_mi(x, y, estimator="gaussian", sliced=True, slices=4, seed=seed).value for seed in (0, 7)}
    ties = {estimate_mi(np.round(x), np.round(y), estimator="ksg", seed=seed).value for seed in (0, 7)}
    assert len(sliced) == 2 and len(ties) == 2


def test_the_plugin_correction_unset_is_miller_madow_and_none_is_none():
    # Pairs counted by hand: (0,0) x6, (0,1) x2, (1,1) x4, (1,2) x4, (2,0) x2, (2,2) x2; n = 20.
    pairs = [(0, 0)] * 6 + [(0, 1)] * 2 + [(1, 1)] * 4 + [(1, 2)] * 4 + [(2, 0)] * 2 + [(2, 2)] * 2
    x, y = np.array(pairs, dtype=float).T
    n = 20

    def entropy(counts):
        p = np.array(counts) / n
        return -np.sum(p * np.log(p))

    plain = entropy([8, 8, 4]) + entropy([8, 6, 6]) - entropy([6, 2, 4, 4, 2, 2])
    # Miller (1955): each entropy gains (m - 1) / (2n), m its symbols seen: (3 - 1) + (3 - 1) - (6 - 1) = -1.
    corrected = plain - 1 / (2 * n)
    assert estimate_mi(x, y, estimator="plugin").value == pytest.approx(corrected, rel=1e-12)
    assert estimate_mi(x, y, estimator="plugin", correction=UNSET).value == pytest.approx(corrected, rel=1e-12)
    assert estimate_mi(x, y, estimator="plugin", correction=None).value == pytest.approx(plain, rel=1e-12)


def test_unset_reads_as_unset_in_help_and_survives_pickling():
    signature = inspect.signature(estimate_mi)
    assert all(signature.parameters[name].default is UNSET for name in
               ("slices", "slice_dim", "conditional", "alpha", "device", "critic", "bound", "k", "correction"))
    assert "correction: 'str | None' = UNSET" in str(signature) and repr(UNSET) == "UNSET"
    assert pickle.loads(pickle.dumps(UNSET)) is UNSET and type(UNSET)() is UNSET


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


@pytest.mark.parametrize("case", ["features", "critic"])
def test_fit_critics_refuses_a_training_that_cannot_fit_counting_what_it_is_not_handed(monkeypatch, case):
    # 64 critics of 600 samples of 3 + 2 inputs; the stacked inputs exist already, so only the rest is counted.
    rng = np.random.default_rng(2)
    u, v = rng.standard_normal((64, 600, 3)), rng.standard_normal((64, 600, 2))
    # A narrow critic's activations (4 a sample) weigh less than its inputs' copies (5 × 16 bytes a sample).
    config = CriticConfig(hidden=4) if case == "features" else CriticConfig(hidden=4096)
    features, models = _expected_bytes(64, 600, 5, config)
    features -= 8 * 64 * 600 * 5
    assert (models > features) == (case == "critic")
    need = features + models
    monkeypatch.setattr(memory, "available_memory", lambda: need - 1)

    def train(*a, **k):
        raise _Trained

    monkeypatch.setattr(neural, "_fit_chunk", train)
    with pytest.raises(InputError) as error:
        fit_critics(u, v, config=config)
    message = str(error.value)
    named = "argument 'config'" if case == "critic" else "arguments 'u' and 'v' (64 critic(s)) (600 samples)"
    assert message.startswith(named) and f"at least {memory.format_bytes(need)} of memory" in message
    assert len(message.splitlines()) == 1
    monkeypatch.setattr(memory, "available_memory", lambda: need)
    with pytest.raises(_Trained):
        fit_critics(u, v, config=config)


def test_an_estimate_runs_one_memory_check(monkeypatch):
    """A neural estimate is checked once, before its projections (the critics' count holds them); a classical
    sliced one on its projections."""
    calls = []
    for module, name in ((memory, "check_critic_memory"), (memory, "check_projection_memory")):
        checked = getattr(module, name)
        for where in ("estimators.estimate", "estimators.neural"):
            monkeypatch.setattr(f"{where}.{name}", lambda *a, _c=checked, _n=name, **k: (calls.append(_n), _c(*a, **k))[1],
                                raising=False)

    def train(*a, **k):
        raise _Trained

    monkeypatch.setattr(neural, "_fit_chunk", train)
    x, y = _samples()
    for kwargs in ({}, dict(sliced=True, slices=4), dict(z=y, conditional="chain")):
        calls.clear()
        with pytest.raises(_Trained):
            estimate_mi(x, y, **kwargs)
        assert calls == ["check_critic_memory"]
    calls.clear()
    estimate_mi(x, y, estimator="gaussian", sliced=True, slices=4)
    assert calls == ["check_projection_memory"]


def test_a_classical_sliced_estimate_whose_projections_cannot_fit_is_refused(monkeypatch):
    x, y = _samples(400)
    # 16 slices of 400 samples projected onto 2 + 2 columns (slice_dim 2 of x's 3 and y's 2), float64.
    need = 16 * 400 * 4 * 8
    monkeypatch.setattr(memory, "available_memory", lambda: need - 1)
    with pytest.raises(InputError) as error:
        estimate_mi(x, y, estimator="ksg", sliced=True, slices=16, slice_dim=2)
    message = str(error.value)
    assert message.startswith("argument 'slices' (16): projecting 400 samples of 4 values onto 16 slices needs at "
                              f"least {memory.format_bytes(need)} of memory (projected samples")
    monkeypatch.setattr(memory, "available_memory", lambda: need)
    assert estimate_mi(x, y, estimator="gaussian", sliced=True, slices=16, slice_dim=2).slices == 16
