"""The black-box last-iterate search: its batched pilot against the NumPy trainer run candidate by candidate, its
candidates, and what it hands to the certifying audit."""

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.training import DPSGD
from mechanisms.catalog.dpsgd import FACTORIES, canary_pair
from mechanisms.training.dpsgd import worst_case_init
from audit.search.last_iterate import candidate_canaries, search_last_iterate
from mechanisms.training.records import GRADIENT_CANARY, NULL, ORDINARY, null_record, with_record
from mechanisms.training.torch_dpsgd import TorchDPSGD


def _base():
    return canary_pair().first[:-1]  # the catalog's 15 examples [x_0 = 0, x_1, y, role]


def test_candidate_canaries_are_the_ood_point_and_the_mislabelled_majority_mean():
    base = _base()
    canaries = candidate_canaries(base, value=3.0, large_norm=7.0)
    np.testing.assert_array_equal(canaries["out-of-distribution"], [3.0, 0.0, 1.0, ORDINARY])
    labels = base[:, -2]
    majority = 1.0 if labels.sum() * 2 >= len(labels) else 0.0
    mean = base[labels == majority, :-2].sum(axis=0) / np.count_nonzero(labels == majority)
    np.testing.assert_allclose(canaries["mislabelled"], [*mean, 1.0 - majority, ORDINARY])
    np.testing.assert_allclose(canaries["large-norm"], [*(7.0 * mean), 1.0 - majority, ORDINARY])


@pytest.mark.parametrize("release", ["loss", "margin"])
def test_stacked_initialisations_and_canaries_train_as_the_numpy_trainer_one_by_one(release):
    """Noise-free, every run of one batched call equals DPSGD (NumPy) with that run's θ₀ and canary."""
    base = _base()
    settings = dict(records=16, features=2, noise_multiplier=0.0, clip_norm=1.0, steps=4, learning_rate=1.0,
                    release=release)
    rows, dbs, inits = [], [], []
    for canary in candidate_canaries(base).values():
        for theta0 in (np.zeros(3), worst_case_init(2, canary)):
            for db in (with_record(base, canary), with_record(base, null_record(base))):
                rows.append(canary), dbs.append(db), inits.append(theta0)
    got = TorchDPSGD(**settings).train_batch(np.stack(dbs), np.random.default_rng(0), init=np.stack(inits),
                                             canaries=np.stack(rows))
    for i, (canary, db, theta0) in enumerate(zip(rows, dbs, inits)):
        expected = DPSGD(**settings, canary=tuple(canary), init=tuple(theta0))(db[None], np.random.default_rng(0))
        np.testing.assert_allclose(got[i], expected[0], rtol=1e-10, atol=1e-12)
    with pytest.raises(InputError, match="'init'"):
        TorchDPSGD(**settings).train_batch(np.stack(dbs), np.random.default_rng(0), init=np.zeros((1, 3)))


def test_search_scores_every_candidate_and_hands_the_best_to_a_fresh_audit():
    entry = FACTORIES["dpsgd_s1_q1_t4"]()  # full batch, T = 4, σ = 1: the white-box canary is exactly 2-GDP
    base = _base()
    search = search_last_iterate(entry.mechanism, base, pilot_runs=200, certification_runs=1000, seed=0)
    assert len(search.candidates) == 3 * 2
    mus = [c.predicted_mu for c in search.candidates]
    assert search.chosen.predicted_mu == max(mus)
    # The loss falls when the canary is trained on: scored in both orientations, every candidate shows it, and
    # none is predicted above the white-box μ = 2 by more than the pilot's noise.
    assert min(mus) > 0.5 and max(mus) < 2.3
    mechanism, pair = search.mechanism, search.pair
    assert type(mechanism) is DPSGD and mechanism.release == "loss"
    assert mechanism.canary == search.chosen.canary and mechanism.init == search.chosen.init
    np.testing.assert_array_equal(pair.first[:-1], base)
    np.testing.assert_array_equal(pair.first[-1], search.chosen.canary)
    assert pair.second[-1, -1] == NULL
    assert search.to_dict()["chosen"] == search.chosen.label
    outputs = mechanism(np.repeat(pair.first[None], 3, axis=0), np.random.default_rng(1))
    assert outputs.shape == (3, 1) and np.all(outputs > 0)  # a logistic loss


def test_search_refuses_what_it_cannot_search():
    entry = FACTORIES["dpsgd_s1_q1_t4"]()
    base = _base()
    with pytest.raises(InputError, match="'base'"):
        search_last_iterate(entry.mechanism, base[:-1])
    with pytest.raises(InputError, match="'inits'"):
        search_last_iterate(entry.mechanism, base, inits=("random",))
    gradient = base[0].copy()
    gradient[-1] = GRADIENT_CANARY
    with pytest.raises(InputError, match="canaries"):
        search_last_iterate(entry.mechanism, base, canaries={"gradient": gradient})
    with pytest.raises(InputError, match="'mechanism'"):
        search_last_iterate(TorchDPSGD(16, 2, 1.0, hidden=3), base)


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_stacked_training_on_cuda_equals_the_cpu_and_the_search_runs_there():
    base = _base()
    canaries = list(candidate_canaries(base).values())
    dbs = np.stack([with_record(base, c) for c in canaries])
    inits = np.stack([worst_case_init(2, c) for c in canaries])
    settings = dict(records=16, features=2, noise_multiplier=0.0, steps=4, release="loss")
    cpu = TorchDPSGD(**settings).train_batch(dbs, np.random.default_rng(0), init=inits, canaries=np.stack(canaries))
    gpu = TorchDPSGD(**settings, device="cuda").train_batch(dbs, np.random.default_rng(0), init=inits,
                                                            canaries=np.stack(canaries))
    np.testing.assert_allclose(gpu, cpu, rtol=1e-9, atol=1e-11)
    search = search_last_iterate(FACTORIES["dpsgd_s1_q1_t4"]().mechanism, base, pilot_runs=200, device="cuda")
    assert len(search.candidates) == 6 and search.chosen.predicted_mu > 0.5
