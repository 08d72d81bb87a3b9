"""Your own training code as an audited mechanism: ``train(db, rng) -> release``.

The protocol. ``train`` receives one training set ``db`` (an ``(n, k)`` float array: one row per
example, in whatever column layout your code reads) and a :class:`numpy.random.Generator`; it
trains once and returns what an adversary sees, the *release*: a ``torch.nn.Module`` (its
parameters), a state dict (a mapping of names to tensors or arrays), a tensor or array (final
weights, a gradient trace), a number or a vector of scores (a canary's loss). Every random choice
(initialisation, batches, DP noise) must come from ``rng``, for example through
:func:`torch_generator`, so that a seed reproduces the audit. :func:`training_mechanism` wraps
``train`` into miaudit's batched mechanism (one call per training set, releases flattened to
one vector each by :func:`release_vector`), which ``run_audit`` and ``miaudit audit --mechanism
FILE.py:NAME`` accept. From the command line ``train`` itself also runs through the per-database route,
``miaudit audit --mechanism FILE.py:train --per-database`` (:mod:`mechanisms.outputs.encoding` encodes a
state dict, tensor or scores; return ``model.state_dict()`` rather than the module there).

Batching over runs. An audit trains thousands of runs, and this route trains them one call of ``train``
at a time: ``train`` is your code, and nothing in it says how two runs could share one computation. A
script built on Opacus is always one run per call: its ``PrivacyEngine`` wraps one model, one optimizer
and one data loader, puts per-sample-gradient hooks on that one module, and keeps one accountant, so
runs cannot be stacked into one model from outside (``miaudit experiment training-throughput`` measures
this route at tens of runs per second on a 2-core CPU, against about 10⁵ for the batched trainers). The
runs can be batched when you write the training over a batch of training sets yourself: a function
``train_batch(dbs, rng) -> (m, d)`` whose m models' parameters are stacked (for example with
``torch.func.functional_call`` and ``vmap`` over the stacked parameters, or explicit batched tensor
algebra as :class:`~mechanisms.training.torch_dpsgd.TorchDPSGD` does) is already a batched mechanism,
audited as ``--mechanism FILE.py:train_batch`` without this wrapper, on whatever device it puts its
tensors. The built-in trainers (:class:`~mechanisms.training.dpsgd.DPSGD`,
:class:`~mechanisms.training.torch_dpsgd.TorchDPSGD`, :func:`~mechanisms.training.one_run_digits.digits_one_runs`)
are written that way.

The neighbouring relation of DP-SGD accountants is add/remove (Abadi et al. 2016; Opacus and
dp-accounting account for adding or removing one example): audit a pair of training sets with and
without the canary (:func:`mechanisms.training.canaries.canary_pair`, n and n − 1 rows), and take the
claim from your accountant with :func:`accountant_claim` (which keeps a dp-accounting accountant's own
``neighboring_relation``, add/remove or replace-one).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from estimators.validation import InputError, check_probability
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.claims.notions import DifferentialPrivacy
from mechanisms.inputs.relation import ADD_REMOVE, REPLACE_ONE

__all__ = ["accountant_claim", "release_vector", "torch_generator", "training_mechanism"]


def release_vector(release) -> np.ndarray:
    """One training run's release as a flat float64 vector.

    A ``torch.nn.Module``: its parameters in ``named_parameters`` order; a mapping (a state dict):
    its values in key order; a tensor, array, number or sequence of numbers: its entries in C order.
    Tensors are detached and copied to the CPU.
    """
    if hasattr(release, "named_parameters") and callable(release.named_parameters):
        return _concatenate([p for _, p in release.named_parameters()])
    if isinstance(release, Mapping):
        if not release:
            raise InputError("the release is an empty mapping: return the trained parameters or scores")
        return _concatenate(list(release.values()))
    return _as_vector(release)


def _as_vector(value) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().to("cpu").double().numpy()
    try:
        return np.asarray(value, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InputError(f"the release must be a module, a state dict, a tensor, an array or numbers; got "
                         f"{type(value).__name__}") from None


def _concatenate(parts) -> np.ndarray:
    return np.concatenate([_as_vector(p) for p in parts]) if parts else np.zeros(0)


def training_mechanism(train, *, name: str | None = None) -> PerDatabaseMechanism:
    """``train(db, rng) -> release`` as a batched mechanism ``mech(dbs, rng) -> (m, d)``.

    Each training set of the batch is trained once, in order, with the same generator; its
    release becomes one row (:func:`release_vector`). An error in ``train`` is reported in one line
    naming it and the training set.
    """
    if not callable(train):
        raise InputError(f"argument 'train' must be callable train(db, rng) -> release, got {type(train).__name__}")

    def one_run(db, rng):
        return release_vector(train(db, rng))

    return PerDatabaseMechanism(one_run, name=name or getattr(train, "__name__", "train"))


def torch_generator(rng: np.random.Generator, device: str = "cpu"):
    """A ``torch.Generator`` seeded from ``rng`` (pass it to Opacus as ``noise_generator``, to data
    loaders and initialisers), so that the training's randomness comes from the audit's seed."""
    import torch

    generator = torch.Generator(device=device)
    generator.manual_seed(int(rng.integers(2**63)))
    return generator


#: dp-accounting's ``NeighboringRelation`` names and the relations of :mod:`mechanisms.inputs.relation` they are.
_DP_ACCOUNTING_RELATIONS = {"ADD_OR_REMOVE_ONE": ADD_REMOVE, "REPLACE_ONE": REPLACE_ONE}


def accountant_claim(accountant, delta: float) -> DifferentialPrivacy:
    """The (ε, δ)-DP claim your accountant makes after training, under the neighbouring relation it accounts for.

    Parameters
    ----------
    accountant : object
        An Opacus ``PrivacyEngine`` or accountant (``RDPAccountant``, ``PRVAccountant``,
        ``GaussianAccountant``: ``get_epsilon(delta)``), or a dp-accounting accountant
        (``RdpAccountant``, ``PLDAccountant``: ``get_epsilon(target_delta)``), after the training's
        steps were recorded (composed).
    delta : float
        The δ the ε is read at.

    Returns
    -------
    DifferentialPrivacy
        ``dp:ε:δ`` with the accountant named in its origin. Its relation is the accountant's: a dp-accounting
        accountant's ``neighboring_relation`` (``ADD_OR_REMOVE_ONE``: add/remove, ``REPLACE_ONE``: replace-one;
        ``REPLACE_SPECIAL``, replacing a record by a special one, is refused: no relation of miaudit is it);
        Opacus accounts for adding or removing one example (Abadi et al. 2016), so add/remove.

    Raises
    ------
    InputError
        For an accountant that is neither, one that recorded no step, or a ``REPLACE_SPECIAL`` accountant.
    """
    delta = check_probability(delta, "delta")
    source = getattr(accountant, "accountant", accountant)  # a PrivacyEngine holds its accountant
    kind = type(source).__name__
    module = type(source).__module__.split(".")[0]
    relation = ADD_REMOVE
    if module == "dp_accounting":
        stated = getattr(getattr(source, "neighboring_relation", None), "name", "ADD_OR_REMOVE_ONE")
        if stated not in _DP_ACCOUNTING_RELATIONS:
            raise InputError(f"argument 'accountant': the {kind} accounts for neighbouring relation {stated}, which "
                             "miaudit does not audit (add/remove: ADD_OR_REMOVE_ONE, replace-one: REPLACE_ONE); state "
                             "the claim with --claim and --relation instead")
        relation = _DP_ACCOUNTING_RELATIONS[stated]
        epsilon = source.get_epsilon(target_delta=delta)
    elif hasattr(source, "get_epsilon"):
        epsilon = source.get_epsilon(delta=delta)
    else:
        raise InputError(f"argument 'accountant' must be an Opacus PrivacyEngine or accountant, or a dp-accounting "
                         f"accountant (with get_epsilon); got {kind}")
    epsilon = float(epsilon)
    if not np.isfinite(epsilon) or epsilon <= 0:
        raise InputError(f"the accountant {kind} reports ε = {epsilon} at δ = {delta:g}: record the training's steps "
                         f"in it before reading the claim")
    return DifferentialPrivacy(epsilon, delta, origin=f"{module} {kind} at δ = {delta:g}, {relation}",
                               relation=relation)
