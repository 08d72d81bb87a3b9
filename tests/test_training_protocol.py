"""Your own training code (mechanisms.training.protocol, mechanisms.training.canaries): releases flattened in a
stated order, the claim read from Opacus's and dp-accounting's accountants against an independent accountant, the
Dirac canary's per-sample gradients under Opacus, and (integration) the docs' complete Opacus script audited end to end
under add/remove."""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import needs
from estimators.validation import InputError
from mechanisms.errors import MechanismError
from mechanisms.training.canaries import (CANARY, NULL, canary_pair, gradient_canary_row, input_canary_row,
                                          null_pair, null_record_row)
from mechanisms.training.protocol import accountant_claim, release_vector, training_mechanism

torch = pytest.importorskip("torch")


def test_release_vector_flattens_every_release_form_in_a_stated_order():
    layer = torch.nn.Linear(2, 1)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, 2.0]]))
        layer.bias.copy_(torch.tensor([3.0]))
    np.testing.assert_array_equal(release_vector(layer), [1.0, 2.0, 3.0])  # named_parameters order
    np.testing.assert_array_equal(release_vector({"b": torch.tensor([5.0]), "a": np.array([[6.0, 7.0]])}),
                                  [5.0, 6.0, 7.0])  # the mapping's key order
    np.testing.assert_array_equal(release_vector(torch.tensor([[1.5], [2.5]])), [1.5, 2.5])
    np.testing.assert_array_equal(release_vector(4), [4.0])
    with pytest.raises(InputError, match="release"):
        release_vector("weights")


def test_training_mechanism_trains_each_set_once_and_names_a_failing_train():
    calls = []

    def train(db, rng):
        calls.append(db.shape)
        return {"mean": torch.tensor([db.mean()]), "noise": rng.normal()}

    dbs = np.arange(12, dtype=float).reshape(3, 2, 2)
    out = training_mechanism(train)(dbs, np.random.default_rng(0))
    assert out.shape == (3, 2) and calls == [(2, 2)] * 3
    np.testing.assert_allclose(out[:, 0], dbs.mean(axis=(1, 2)))

    def broken(db, rng):
        raise ValueError("no data")

    with pytest.raises(MechanismError, match="'broken' raised ValueError on database 0"):
        training_mechanism(broken)(dbs, np.random.default_rng(0))


def test_canary_rows_and_pairs():
    base = np.zeros((3, 4))
    assert gradient_canary_row(2)[-1] == CANARY and null_record_row(2)[-1] == NULL
    np.testing.assert_array_equal(input_canary_row([1.0, 2.0], 1), [1.0, 2.0, 1.0, 0.0])
    assert canary_pair(base, gradient_canary_row(2)).relation == "add-remove"
    pair = null_pair(base, gradient_canary_row(2))
    assert pair.first.shape == pair.second.shape == (4, 4) and pair.second[-1, -1] == NULL
    with pytest.raises(InputError, match="'canary'"):
        canary_pair(base, [1.0, 2.0])


@pytest.mark.integration  # seconds of cross-checking against Opacus and dp-accounting
@needs("opacus", "dp_accounting")
def test_accountant_claim_matches_an_independent_accountant():
    from opacus.accountants import RDPAccountant

    from mechanisms.training.accountant import dpsgd_epsilon

    sigma, q, steps, delta = 1.3, 0.1, 50, 1e-5
    opacus_accountant = RDPAccountant()
    for _ in range(steps):
        opacus_accountant.step(noise_multiplier=sigma, sample_rate=q)
    claim = accountant_claim(opacus_accountant, delta)
    # dp-accounting's RDP accountant (another library, other orders): the same ε within a few percent.
    assert claim.epsilon == pytest.approx(dpsgd_epsilon(sigma, q, steps, delta), rel=0.05)
    assert claim.delta == delta and claim.relation == "add-remove" and "RDPAccountant" in claim.origin
    import dp_accounting

    ledger = dp_accounting.rdp.RdpAccountant()
    ledger.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
    # (default orders here, miaudit's own list there: equal to 1e-3)
    assert accountant_claim(ledger, delta).epsilon == pytest.approx(dpsgd_epsilon(sigma, q, steps, delta), rel=1e-3)
    with pytest.raises(InputError, match="record the training's steps"):
        accountant_claim(RDPAccountant(), delta)
    with pytest.raises(InputError, match="'accountant'"):
        accountant_claim(object(), delta)


@pytest.mark.integration  # imports Opacus (seconds)
@needs("opacus")
def test_dirac_canary_per_sample_gradient_is_the_clip_norm_on_its_own_weight():
    from opacus import GradSampleModule

    from mechanisms.training.canaries import DiracCanary, canary_loss

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(2, 1)
            torch.nn.init.zeros_(self.linear.weight)
            torch.nn.init.zeros_(self.linear.bias)
            self.canary = DiracCanary(0.7)

        def forward(self, x, flags):
            return self.linear(x).squeeze(-1), self.canary(flags)

    model = GradSampleModule(Model())
    x = torch.tensor([[1.0, -2.0], [0.5, 0.5], [0.0, 0.0], [0.0, 0.0]])
    y = torch.tensor([1.0, 0.0, 0.0, 0.0])
    flags = torch.tensor([0.0, 0.0, CANARY, NULL])
    logits, canary = model(x, flags)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="none")
    canary_loss(loss, canary, flags).mean().backward()  # Opacus's loss_reduction="mean": grad_sample undoes the 1/B
    canary_grad = model._module.canary.weight.weight.grad_sample.reshape(4)
    np.testing.assert_allclose(canary_grad.numpy(), [0.0, 0.0, 0.7, 0.0])
    weight_grad = model._module.linear.weight.grad_sample.reshape(4, 2)
    # Ordinary rows: (sigmoid(0) − y)·x; the canary and the null record: nothing on the model.
    np.testing.assert_allclose(weight_grad.numpy(), [[-0.5, 1.0], [0.25, 0.25], [0.0, 0.0], [0.0, 0.0]])


def _docs_files(tmp_path):
    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "training.md").read_text()
    for name in ("opacus_train.py",):
        body = re.search(rf'```python title="{name}"\n(.*?)```', page, flags=re.S).group(1)
        (tmp_path / name).write_text(body)


@pytest.mark.integration
@needs("opacus")
def test_the_docs_opacus_script_is_audited_end_to_end_under_add_remove(tmp_path, monkeypatch):
    """The how-to's Opacus script (σ = 1, exactly 2-GDP): the claim of a σ = 4 accountant is refuted, the
    certified bounds stay below the run's truth."""
    from audit.engine import run_audit
    from audit.spec import AuditSpec

    _docs_files(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    warnings.filterwarnings("ignore")
    from opacus_train import mechanism, train

    rng = np.random.default_rng(0)
    base = np.hstack([rng.normal(size=(15, 2)), rng.random((15, 1)) < 0.5, np.zeros((15, 1))])
    train(np.vstack([base, gradient_canary_row(2)]), rng, noise_multiplier=4.0)
    claim = accountant_claim(train.engine, delta=1e-5)
    assert 1.8 < claim.epsilon < 2.3
    result = run_audit(AuditSpec(mechanism=mechanism, priors=(canary_pair(base, gradient_canary_row(2)).prior(),),
                                 records=(15,), samples=1000, claim=claim, relation="add-remove", seed=0, quiet=True))
    assert result.claim_verdict == "refuted"
    # The σ = 1 run is exactly 2-GDP: (ε, 1e-5) with ε = 10.0, so no certified bound may exceed these.
    assert result.dp_epsilon_lower_bound_event < 10.0
    assert result.event_test.gaussian_dp.mu_lower_bound <= 2.0
