"""The host-device synchronisation counter (experiments.sync_count) counts each kind of sync once, at its caller."""

import numpy as np
import pytest
import torch

from experiments.sync_count import PHASES, count_syncs


def _line_of(marker: str) -> str:
    """``file:line`` of this file's line holding ``marker`` (a comment) in its code."""
    import os

    with open(__file__) as handle:
        for number, text in enumerate(handle, start=1):
            if text.rstrip().endswith("# " + marker) and "_line_of" not in text:
                return f"{os.path.relpath(__file__)}:{number}"
    raise AssertionError(marker)


def _reads(x: torch.Tensor) -> None:
    x.sum().item()  # item
    float(x[0])  # float
    if bool((x > 0).any()):  # bool
        pass
    x.tolist()  # tolist
    x.cpu().numpy()  # cpu then numpy: one sync
    np.asarray(x)  # array
    x[x > 0.5]  # mask
    torch.nonzero(x)  # nonzero
    x.to("cpu")  # to cpu
    torch.as_tensor(np.zeros(3), device="cpu")  # to device
    x + 1.0  # no sync


def test_each_sync_is_counted_once_at_its_caller():
    x = torch.linspace(0.0, 1.0, 8)
    with count_syncs() as counted:
        _reads(x)
    by_place = {place: n for (_, _, _, place), n in counted.places.items()}
    expected = {_line_of(marker): 1 for marker in ("item", "float", "bool", "tolist", "cpu then numpy: one sync",
                                                   "array", "mask", "nonzero", "to cpu", "to device")}
    assert by_place == expected
    kinds = {place: kind for (_, _, kind, place) in counted.places}
    assert kinds[_line_of("mask")] == kinds[_line_of("nonzero")] == "data-dependent size"
    assert kinds[_line_of("to device")] == "copy to the device"
    assert sum(counted.by_phase().values()) == 10 and counted.by_phase()["other"] == 10


def test_the_counter_leaves_torch_as_it_found_it():
    before = {name: torch.Tensor.__dict__.get(name) for name in ("item", "__bool__", "cpu", "to", "__getitem__")}
    before_functions = (torch.as_tensor, torch.nonzero)
    with count_syncs():
        pass
    assert {name: torch.Tensor.__dict__.get(name) for name in before} == before
    assert (torch.as_tensor, torch.nonzero) == before_functions
    x = torch.ones(())
    with count_syncs() as counted:
        pass
    x.item()  # outside: not counted
    assert not counted.places


@pytest.mark.train
def test_critic_training_syncs_are_charged_to_it_and_its_steps_counted():
    from experiments.sync_count import critic_run

    with count_syncs() as counted:
        fit = critic_run(samples=600, critics=2, max_steps=60)
    assert counted.critic_fits == 1 and counted.critic_steps == fit.steps == 60
    phases = counted.by_phase()
    assert set(phases) <= set(PHASES)
    # A training step reads nothing back: its syncs are the evaluations' (every 50 steps, and the last) and the
    # fit's set-up and results.
    assert phases["critic step"] == 0 and phases["critic training"] > 0
    assert counted.per_step() == pytest.approx(phases["critic training"] / 60)


def test_a_copy_is_counted_where_it_crosses_devices_or_names_the_cpu_and_blocks():
    from experiments.sync_count import _crosses

    x = torch.ones(2)
    assert _crosses(x, ("cpu",), {}) and _crosses(x, (), {"device": "cpu", "dtype": torch.float64})
    assert _crosses(x, (torch.device("meta"),), {})  # another device: a copy between the two
    assert not _crosses(x, (torch.float32,), {})  # a cast stays where it is
    assert not _crosses(x, ("meta",), {"non_blocking": True}) and not _crosses(x, ("meta", True), {})
    meta = torch.empty(2, device="meta")
    assert not _crosses(meta, ("meta",), {})  # already there: no copy


def test_on_a_device_run_only_device_tensors_and_crossing_copies_count():
    # The meta device stands for a GPU: its tensors live off the host (no values, but every call is made).
    host, device = torch.ones(3), torch.empty(3, device="meta")
    with count_syncs("meta") as counted:
        host.tolist()  # a host tensor: no sync on a GPU run
        host.sum().item()
        torch.as_tensor(np.zeros(2), device="cpu")  # stays on the host
        host.to("meta")  # crosses: counted
        torch.as_tensor(np.zeros(2), device="meta")  # crosses: counted
        device.to("meta")  # already there
    kinds = sorted(kind for (_, _, kind, _) in counted.places.elements())
    assert kinds == ["copy between devices", "copy to the device"]


def _copies(x: np.ndarray, device) -> None:
    from estimators.device import to_device

    to_device(x, device)  # helper
    torch.as_tensor(x[:2], device=device)  # as_tensor
    to_device(x, device, dtype=torch.float32)  # helper cast


def test_bytes_copied_to_the_device_are_counted_at_the_helpers_caller():
    x = np.zeros(5)
    with count_syncs() as counted:
        _copies(x, "cpu")  # on the CPU every copy naming a device counts: what a GPU run copies there
    assert dict(counted.copied) == {_line_of("helper"): 40, _line_of("as_tensor"): 16, _line_of("helper cast"): 20}
    assert sum(counted.copies.values()) == 3
    # The helper's own .to is charged to its caller as a sync, as a copy written there would be.
    syncs = {place for (_, _, kind, place) in counted.places if kind == "copy between devices"}
    assert syncs == {_line_of("helper"), _line_of("helper cast")}
    assert "76 bytes" in counted.copy_summary().replace(",", "") and _line_of("helper") in counted.copy_table()


def test_on_a_device_run_only_copies_to_the_device_count_bytes():
    x = np.zeros(4)
    with count_syncs("meta") as counted:
        _copies(x, "cpu")  # stays on the host
    assert not counted.copied
    with count_syncs("meta") as counted:
        _copies(x, "meta")
    assert sum(counted.copied.values()) == 32 + 16 + 16


def _pinned_copies(x: np.ndarray) -> None:
    from estimators.device import to_device

    to_device(x, "cpu", pinned=True)  # page-locked
    to_device(x, "cpu")  # pageable


def test_a_copy_from_page_locked_memory_counts_on_the_cpu_and_not_as_a_gpu_waits():
    x = np.zeros(3)
    with count_syncs() as counted:
        _pinned_copies(x)
        torch.ones(2).sum().item()  # a read: waits on a GPU too
    locked, pageable = _line_of("page-locked"), _line_of("pageable")
    by_place = {place: n for (_, _, _, place), n in counted.places.items()}
    assert by_place[locked] == by_place[pageable] == 1 and sum(by_place.values()) == 3
    assert {place: n for (_, _, _, place), n in counted.pinned.items()} == {locked: 1}
    # Independently: a GPU waits for the pageable copy and the read, not the page-locked copy.
    assert sum(counted.by_phase().values()) == 3 and sum(counted.by_phase(gpu=True).values()) == 2
    assert sum(counted.syncs(gpu=True).values()) == 2 and locked not in {p for (*_, p) in counted.syncs(gpu=True)}
    assert "(1 of them): 2 syncs" in counted.gpu_summary() and counted.summary().startswith("3 syncs")
    assert "| 1 | 1 |" in counted.table() and "| 1 | 0 |" in counted.table()


def _back_to_the_host(on_device: torch.Tensor) -> np.ndarray:
    host = torch.empty(on_device.shape, dtype=on_device.dtype)
    host.copy_(on_device)  # copy back
    scratch = torch.empty_like(on_device)
    scratch.copy_(on_device * 2.0)  # copy on the device
    return host.numpy()  # read on the host


def test_a_copy_into_a_host_tensor_counts_as_a_copy_to_the_host_at_its_place():
    with count_syncs() as counted:
        _back_to_the_host(torch.arange(5, dtype=torch.float64))
    # The copy_ whose destination the host reads: one sync there, with its 40 bytes; the read itself waits for
    # nothing on a GPU (a host tensor) and the copy_ the host never reads is a copy on the device.
    by_place = {(kind, place): n for (_, _, kind, place), n in counted.places.items()}
    assert by_place == {("copy to the host", _line_of("copy back")): 1}
    assert counted.returned == {_line_of("copy back"): 40} and counted.returns == {_line_of("copy back"): 1}
    assert "device→host in 1 copies" in counted.return_summary()


def test_the_roundings_copies_back_are_counted_with_their_bytes():
    """The ideal rounding (audit.statistics.arithmetic.device_round_significand) brings its result back by copy_:
    chunk by chunk without the store's copy of the outputs, in one copy with it."""
    import os

    from audit.statistics import arithmetic
    from estimators.resident import keep_on_device

    outputs = np.random.default_rng(0).normal(size=(30, 7))
    source = os.path.relpath(arithmetic.__file__)
    with count_syncs() as chunked:
        arithmetic.device_round_significand(outputs, 20, torch.device("cpu"))
    with keep_on_device(), count_syncs() as whole:
        arithmetic.device_round_significand(outputs, 20, torch.device("cpu"))
    places = []
    for counted in (chunked, whole):
        back = {place: n for place, n in counted.returned.items() if place.startswith(source)}
        assert sum(back.values()) == outputs.nbytes and len(back) == 1
        (place,) = back
        places.append(place)
        kinds = {kind for (_, _, kind, at) in counted.places if at == place}
        assert kinds == {"copy to the host"}
        assert not [at for (_, _, kind, at) in counted.places if kind == "value read" and at.startswith(source)]
    assert places[0] != places[1]  # each chunk's copy_, then the one copy_ of the result made whole
