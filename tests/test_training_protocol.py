"""Your own training code (mechanisms.training.protocol, mechanisms.training.canaries): releases flattened in a
stated order, the claim read from Opacus's and dp-accounting's accountants against an independent accountant, the
Dirac canary's per-sample gradients under Opacus, and the docs' complete Opacus script's audit (run by the page's example test)
under add/remove."""

import re
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


def test_the_docs_opacus_audit_shows_what_the_runs_truth_allows():
    """The how-to's Opacus script (σ = 1, exactly 2-GDP), as the page shows it: the claim of the σ = 4 accountant
    (1.8 < ε < 2.3 at δ = 1e-5) is refuted, the σ = 1 accountant's stands, and no certified bound exceeds the run's
    truth. The page's example test (tests/test_docs_examples.py, ``how-to/training.md``) runs that very script and
    fails unless it prints exactly these lines, so its 2 × 3,000 Opacus runs are not run a second time here."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "training.md").read_text()
    shown = re.search(r"^\$ python opacus_audit\.py\n(.*?)^```", page, flags=re.S | re.M).group(1).splitlines()
    line = re.compile(r"σ = (\S+)'s accountant: \(([\d.]+), 1e-05\)-DP; the σ = 1 run: (\S+), "
                      r"certified ε ≥ ([\d.]+), μ ≥ ([\d.]+)")
    rows = {float(found[1]): found for found in map(line.fullmatch, shown)}
    assert set(rows) == {1.0, 4.0}, shown
    assert 1.8 < float(rows[4.0][2]) < 2.3 and rows[4.0][3] == "refuted"
    assert rows[1.0][3] == "not-refuted"
    # Exactly 2-GDP is (ε, δ(ε))-DP with δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth and Su 2022,
    # Corollary 2.13): ε = 9.997 at δ = 1e-5. No certified bound may exceed it, nor μ̲ exceed μ = 2.
    true_epsilon = brentq(lambda eps: norm.cdf(-eps / 2 + 1) - np.exp(eps) * norm.cdf(-eps / 2 - 1) - 1e-5, 0, 50)
    for found in rows.values():
        assert float(found[4]) < true_epsilon and float(found[5]) <= 2.0


@needs("dp_accounting")
def test_accountant_claim_keeps_a_dp_accounting_accountants_relation():
    import dp_accounting

    from mechanisms.claims.conversion import convert_claim

    claims = {}
    for relation in (dp_accounting.NeighboringRelation.REPLACE_ONE, dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE):
        ledger = dp_accounting.rdp.RdpAccountant(neighboring_relation=relation)
        ledger.compose(dp_accounting.GaussianDpEvent(2.0))
        claims[relation.name] = accountant_claim(ledger, 1e-5)
    replace_one, add_remove = claims["REPLACE_ONE"], claims["ADD_OR_REMOVE_ONE"]
    assert replace_one.relation == "replace-one" and "replace-one" in replace_one.origin
    assert add_remove.relation == "add-remove"
    # A replace-one claim is audited on replace-one pairs as stated; only the add/remove one is converted by group
    # privacy (ε -> 2ε, Vadhan 2017, Lemma 2.2): the (2.166, 1e-5) that became (4.331, 9.72e-5).
    assert convert_claim(replace_one, "replace-one") == replace_one
    assert convert_claim(add_remove, "replace-one").epsilon == pytest.approx(2 * add_remove.epsilon)
    special = dp_accounting.rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_SPECIAL)
    special.compose(dp_accounting.GaussianDpEvent(2.0))
    with pytest.raises(InputError, match="'accountant'.*REPLACE_SPECIAL"):
        accountant_claim(special, 1e-5)
