"""Host-device synchronisation points of a run, counted by caller on the CPU (issue 42).

A GPU idles while its host waits for it: every read of a device tensor's value (``.item()``, ``float(t)``,
``bool(t)`` in an ``if``, ``int(t)``, ``.tolist()``, ``.numpy()``), every copy to the host (``.cpu()``,
``.to("cpu")``), every operator whose output's size depends on the values (``nonzero``, ``unique``,
``masked_select``, indexing by a boolean mask) and every copy from pageable host memory to the device makes
the host wait until the GPU has run everything queued, and then the GPU wait for the host's next launches.
A CPU profile does not see them: on the CPU they cost nothing. :func:`count_syncs` wraps those calls and
counts them by caller (the first frame outside torch and this module, as ``file:line``), by the stage of
:func:`experiments.stage_profile.stage_of`, and by phase: inside a critic training step, elsewhere in a
critic training (:func:`estimators.neural._fit_chunk`), inside a DP-SGD training call
(:meth:`mechanisms.training.torch_dpsgd.TorchDPSGD.train_batch`), or elsewhere. Counted on CPU tensors, the
places are where a CUDA run of the same code syncs, less the branches a CUDA device takes alone and plus the
CPU's own (a NumPy route on the CPU; a tensor a CUDA run keeps on the host too, a CPU generator's draws), so
each place is to be read, not summed blindly. A value read on a tensor that a counted copy to the host made at
the same place is not counted again (``t.cpu().numpy()`` is one sync). A copy to the device from page-locked memory
(:func:`estimators.device.to_device` with ``pinned``) is counted on the CPU as every copy is, and apart too (the
tables' "page-locked" column): on a CUDA device it is queued without the host waiting, so a CPU run prints its
count both ways, as counted and as a GPU waits (:meth:`SyncCount.gpu_summary`).

The bytes copied from the host to the device are counted too, by caller: those of every copy made through
:func:`estimators.device.to_device` (the audit's copies of data: outputs, critic inputs, index blocks), which tells
its listeners each copy's size on any device, and of ``torch.as_tensor``/``torch.tensor`` of host data naming a
device. On the CPU they are the bytes a CUDA run copies there; on a GPU, those of copies to it.

So are the copies from the device to the host, by caller, each a sync: ``.cpu()``, a ``.to`` the host on a device run,
and ``Tensor.copy_`` into a host tensor (the ideal rounding's result, brought back in one copy or chunk by chunk:
:func:`audit.statistics.arithmetic.device_round_significand`), but into page-locked memory without blocking. A CPU
run cannot tell a host tensor by its device: there a ``copy_`` counts where the host then reads its destination's
memory (``.numpy()``, a value: that tensor lives on the host in a CUDA run), at the ``copy_``'s place, and the read
does not count (a host tensor's read waits for nothing); a ``copy_`` whose destination the host never reads is a
copy on the device (a critic step's buffers) and does not count.

``python -m experiments.sync_count [--stage dimension|epsilon|critic] [--features P] [--runs N] [--device D]
[--device-routes] [--gpu-chunks] [--seed S] [--top K]`` counts the syncs of the DP-SGD GPU grid's parameter-release
audits (:func:`experiments.dimension_profile.profile_dimension`'s), of its ε stage's audits at target ε = 1
(:func:`experiments.epsilon_profile.profile_epsilon`'s), or of one neural critic training
(:func:`estimators.neural.fit_critics` on Gaussian data), and prints syncs per critic training step and per
training call with the places that sync most, then the bytes copied to the device and back to the host by place;
``--device-routes`` runs the statistics' device code on the CPU (:func:`experiments.stage_profile.device_routes`), so
that their copies count as beside a GPU. On ``--device cuda`` the device's own routes run and only reads of
device tensors and copies that cross between devices count (:func:`count_syncs`): what
``experiments/gpu_check.sh`` checks the CPU's count by.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import threading
import weakref
from collections import Counter

#: Tensor methods that read a value on the host (each a sync on a CUDA tensor).
READS = ("item", "__bool__", "__float__", "__int__", "__index__", "tolist", "numpy", "__array__", "equal")
#: Tensor methods whose output's size depends on the values (the host waits to learn it).
SHAPED = ("nonzero", "unique", "masked_select")
#: The phases a sync is charged to, innermost first.
PHASES = ("critic step", "critic training", "DP-SGD training call", "other")

_HERE = os.path.abspath(__file__)
_TORCH = os.path.dirname(os.path.abspath(__import__("torch").__file__)) + os.sep


def _transparent() -> frozenset:
    """The code of the copy helpers (:func:`estimators.device.to_device`, :func:`estimators.resident.device_input`
    and :func:`~estimators.resident.distinct_input`, :func:`estimators.distinct_parts.parts_on_device` and
    :func:`~estimators.distinct_parts.rows_on_device`): their copies are charged to their caller (a store's copy, to
    the store: :mod:`estimators.resident`)."""
    from estimators.device import to_device
    from estimators.distinct_parts import parts_on_device, rows_on_device
    from estimators.resident import device_input, distinct_input

    return frozenset(f.__code__ for f in (to_device, device_input, distinct_input, parts_on_device, rows_on_device))


@dataclasses.dataclass
class SyncCount:
    """What :func:`count_syncs` counted."""

    places: Counter = dataclasses.field(default_factory=Counter)  #: (phase, stage, kind, "file:line") -> syncs
    #: (phase, stage, kind, "file:line") -> those of its syncs that are copies to the device from page-locked memory
    #: (:func:`estimators.device.to_device` with ``pinned``): counted on the CPU, not waiting on a GPU
    pinned: Counter = dataclasses.field(default_factory=Counter)
    copied: Counter = dataclasses.field(default_factory=Counter)  #: "file:line" -> bytes copied to the device
    copies: Counter = dataclasses.field(default_factory=Counter)  #: "file:line" -> copies to the device
    returned: Counter = dataclasses.field(default_factory=Counter)  #: "file:line" -> bytes copied to the host
    returns: Counter = dataclasses.field(default_factory=Counter)  #: "file:line" -> copies to the host
    critic_steps: int = 0  #: critic training steps run (the fits' ``steps``)
    critic_fits: int = 0  #: critic trainings (:func:`estimators.neural._fit_chunk` calls)
    training_calls: int = 0  #: DP-SGD training calls (:meth:`TorchDPSGD.train_batch`)

    def syncs(self, gpu: bool = False) -> Counter:
        """Syncs by (phase, stage, kind, place); ``gpu``: as a GPU waits, the copies from page-locked memory left
        out (on a CUDA device they are queued without the host waiting: :func:`estimators.device.to_device`)."""
        return self.places - self.pinned if gpu else Counter(self.places)

    def by_phase(self, gpu: bool = False) -> Counter:
        """Syncs by phase (``gpu``: :meth:`syncs`)."""
        counted: Counter = Counter()
        for (phase, _, _, _), n in self.syncs(gpu).items():
            counted[phase] += n
        return counted

    def per_step(self, gpu: bool = False) -> float:
        """Syncs a critic training takes per step: all of its syncs (its steps' and its evaluations') over its
        steps; NaN without steps (``gpu``: :meth:`syncs`)."""
        phases = self.by_phase(gpu)
        syncs = phases["critic step"] + phases["critic training"]
        return syncs / self.critic_steps if self.critic_steps else float("nan")

    def per_training_call(self, gpu: bool = False) -> float:
        """Syncs inside a DP-SGD training call, on average; NaN without calls (``gpu``: :meth:`syncs`)."""
        calls = self.by_phase(gpu)["DP-SGD training call"]
        return calls / self.training_calls if self.training_calls else float("nan")

    def table(self, top: int = 12) -> str:
        """Markdown table of the ``top`` places that synced most, with their phase, stage and kind."""
        lines = ["| place | phase | stage | kind | syncs | of them page-locked copies |",
                 "| --- | --- | --- | --- | --- | --- |"]
        for key, n in self.places.most_common(top):
            phase, stage, kind, place = key
            lines.append(f"| {place} | {phase} | {stage} | {kind} | {n:,} | {self.pinned[key]:,} |")
        return "\n".join(lines)

    def copy_table(self, top: int = 12) -> str:
        """Markdown table of the ``top`` places that copied most bytes from the host to the device."""
        lines = ["| place | copies to the device | bytes | MB |", "| --- | --- | --- | --- |"]
        for place, n in self.copied.most_common(top):
            lines.append(f"| {place} | {self.copies[place]:,} | {n:,} | {n / 1e6:,.1f} |")
        return "\n".join(lines)

    def return_table(self, top: int = 12) -> str:
        """Markdown table of the ``top`` places that copied most bytes from the device to the host (``.cpu()``, a
        ``copy_`` into a host tensor, ``.to`` the CPU on a device run)."""
        lines = ["| place | copies to the host | bytes | MB |", "| --- | --- | --- | --- |"]
        for place, n in self.returned.most_common(top):
            lines.append(f"| {place} | {self.returns[place]:,} | {n:,} | {n / 1e6:,.1f} |")
        return "\n".join(lines)

    def return_summary(self) -> str:
        """One line: the bytes copied from the device to the host, in all and in how many copies."""
        return (f"{sum(self.returned.values()):,} bytes ({sum(self.returned.values()) / 1e6:,.1f} MB) device→host in "
                f"{sum(self.returns.values()):,} copies from {len(self.returned)} places")

    def copy_summary(self) -> str:
        """One line: the bytes copied from the host to the device, in all and in how many copies."""
        return (f"{sum(self.copied.values()):,} bytes ({sum(self.copied.values()) / 1e6:,.1f} MB) host→device in "
                f"{sum(self.copies.values()):,} copies from {len(self.copied)} places")

    def summary(self, gpu: bool = False) -> str:
        """One line: syncs in all, by phase, per critic step and per training call (``gpu``: :meth:`syncs`)."""
        phases = self.by_phase(gpu)
        return (f"{sum(phases.values()):,} syncs ({', '.join(f'{p} {phases[p]:,}' for p in PHASES if phases[p])}); "
                f"{self.critic_fits} critic trainings, {self.critic_steps:,} steps: {self.per_step(gpu):.3f} syncs "
                f"per step; {self.training_calls} DP-SGD training calls: {self.per_training_call(gpu):.2f} syncs "
                "per call")

    def gpu_summary(self) -> str:
        """One line: :meth:`summary` as a GPU waits, with the page-locked copies it leaves out."""
        return (f"as a GPU waits, copies from page-locked memory not counted ({sum(self.pinned.values()):,} of "
                f"them): {self.summary(gpu=True)}")


def _caller():
    """(``file:line`` of the first frame outside torch and this module, that frame's stack of module names)."""
    frame = sys._getframe(2)
    transparent = _transparent()
    while frame is not None:
        path = frame.f_code.co_filename
        if not (path.startswith(_TORCH) or os.path.abspath(path) == _HERE or frame.f_code in transparent):
            break
        frame = frame.f_back
    if frame is None:
        return "?", []
    place = f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}"
    modules = []
    while frame is not None:
        modules.append(frame.f_globals.get("__name__", ""))
        frame = frame.f_back
    return place, modules


def _page_locked() -> bool:
    """Whether the copy being made is :func:`estimators.device.to_device`'s from page-locked memory (``pinned``):
    the first frame outside torch and this module is that helper's, called with ``pinned`` true. On a CPU run its
    plain ``.to`` is counted like every copy; on a CUDA device it is queued without the host waiting."""
    from estimators.device import to_device

    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith(_TORCH)
                                 or os.path.abspath(frame.f_code.co_filename) == _HERE):
        frame = frame.f_back
    return frame is not None and frame.f_code is to_device.__code__ and bool(frame.f_locals.get("pinned"))


def _crosses(tensor, args, kwargs, loose: bool = True) -> bool:
    """Whether ``tensor.to(*args, **kwargs)`` is a blocking copy between devices, or, where ``loose`` (a CPU run,
    whose device cannot be told from the one a CUDA run names there), names the CPU: a copy that waits for a GPU."""
    import torch

    if kwargs.get("non_blocking") or (len(args) > 1 and isinstance(args[1], bool) and args[1]):
        return False
    targets = [torch.device(t) for t in [kwargs.get("device")] + [a for a in args if isinstance(a, (str, torch.device))]
               if t is not None]
    return any((loose and t.type == "cpu") or t.type != tensor.device.type for t in targets)


def _bool_index(index) -> bool:
    """Whether an index holds a boolean tensor (a mask: its result's size depends on its values)."""
    import torch

    parts = index if isinstance(index, tuple) else (index,)
    return any(torch.is_tensor(p) and p.dtype == torch.bool for p in parts)


@contextlib.contextmanager
def count_syncs(device="cpu"):
    """Count the host-device synchronisation points of the code run inside, on this thread (a
    :class:`SyncCount`, yielded and filled as it runs); torch's own calls inside a counted one are not counted.

    ``device``: where the run's tensors live. On the CPU every read of a tensor and every copy naming a device
    counts (each would sync in a CUDA run of the same code); on a GPU only the reads of a device tensor and the
    copies that cross between devices do (a tensor kept on the host costs no sync there)."""
    import torch

    from estimators import neural
    from estimators.device import COPY_LISTENERS
    from experiments.stage_profile import stage_of
    from mechanisms.training import torch_dpsgd

    counted = SyncCount()
    loose = torch.device(device).type == "cpu"
    state = threading.local()
    # id -> (weak reference, place) of the tensors a counted copy to the host made: read at that place (on the
    # same line, as t.cpu().numpy()) they cost no second sync; read anywhere else they are counted (on the CPU
    # .cpu() returns the tensor itself).
    host: dict = {}
    this_thread = threading.get_ident()
    saved: list = []

    # A CPU run's copy_ calls by the storage they fill: [(weak reference to the destination's base tensor, its sync's
    # key, bytes)]. Where the host then reads that storage (.numpy(), a value), the destination is a host tensor in a
    # CUDA run and each copy_ into it a copy from the device that waits (counted then, at its own place); a copy_ whose
    # destination the host never reads is a copy on the device (critic_pairs' buffers, the rounding's result).
    filled: dict = {}

    def key_of(kind: str) -> tuple:
        """(phase, stage, ``kind``, place) of a sync at the caller."""
        place, modules = _caller()
        phases = getattr(state, "phases", [])
        return phases[-1] if phases else "other", stage_of(modules), kind, place

    def record(kind: str, tensor=None, pinned: bool = False) -> str | None:
        """Count one sync of ``kind`` at its caller (``pinned``: a copy from page-locked memory, counted apart too)
        and return the caller's place; None where ``tensor`` came from a counted copy to the host at the same place
        (``t.cpu().numpy()``: one sync)."""
        key = key_of(kind)
        made = host.get(id(tensor)) if tensor is not None else None
        if made is not None and made[0]() is tensor and made[1] == key[3]:
            return None
        counted.places[key] += 1
        if pinned:
            counted.pinned[key] += 1
        return key[3]

    def copied(place: str, nbytes: int) -> None:
        counted.copied[place] += nbytes
        counted.copies[place] += 1

    def returned(place: str, nbytes: int) -> None:
        counted.returned[place] += nbytes
        counted.returns[place] += 1

    def storage_of(tensor) -> int | None:
        try:
            return tensor.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):  # a tensor without storage of its own (sparse, meta)
            return None

    def read_filled(tensor) -> bool:
        """On a CPU run, count the copy_ calls that filled ``tensor``'s storage as copies to the host (``filled``);
        whether there were any (the read itself then waits for nothing on a GPU: not counted)."""
        entries = filled.pop(storage_of(tensor), None) or []
        live = [(key, nbytes) for base, key, nbytes in entries if base() is not None]
        for key, nbytes in live:
            counted.places[key] += 1
            returned(key[3], nbytes)
        return bool(live)

    def copy_into(original):
        def wrapper(self, src, *args, **kwargs):
            if (threading.get_ident() != this_thread or getattr(state, "inside", False) or not torch.is_tensor(src)
                    or not torch.is_tensor(self)):
                return original(self, src, *args, **kwargs)
            non_blocking = kwargs.get("non_blocking", args[0] if args else False)
            nbytes = self.numel() * self.element_size()
            if loose and not non_blocking:
                storage = storage_of(self)
                if storage is not None:
                    base = self if self._base is None else self._base
                    entries = [e for e in filled.get(storage, []) if e[0]() is not None]  # a freed storage's: gone
                    filled[storage] = entries + [(weakref.ref(base), key_of("copy to the host"), nbytes)]
            elif (not loose and self.device.type == "cpu" and src.device.type != "cpu"
                  and not (non_blocking and self.is_pinned())):  # into page-locked memory without waiting: queued
                key = key_of("copy to the host")
                counted.places[key] += 1
                returned(key[3], nbytes)
            state.inside = True
            try:
                return original(self, src, *args, **kwargs)
            finally:
                state.inside = False
        return wrapper

    def listener(target, nbytes: int) -> None:  # estimators.device.to_device's copies
        if threading.get_ident() == this_thread and (loose or torch.device(target).type != "cpu"):
            copied(_caller()[0], nbytes)

    def guarded(kind, original, when=None, made_on_host=False, sized=False, pinned=None, back=None):
        def wrapper(self, *args, **kwargs):
            if threading.get_ident() != this_thread or getattr(state, "inside", False):
                return original(self, *args, **kwargs)
            if when is not None and not when(self, args, kwargs):
                return original(self, *args, **kwargs)
            if not loose and torch.is_tensor(self) and self.device.type == "cpu" and kind != "copy between devices":
                return original(self, *args, **kwargs)  # on a GPU run, a host tensor's read waits for nothing
            if loose and kind == "value read" and torch.is_tensor(self) and filled and read_filled(self):
                return original(self, *args, **kwargs)  # a host tensor copy_ filled: those copies were the syncs
            place = record(kind, self, pinned is not None and pinned())
            state.inside = True
            try:
                value = original(self, *args, **kwargs)
            finally:
                state.inside = False
            if made_on_host and place is not None and torch.is_tensor(value):
                host[id(value)] = (weakref.ref(value), place)
            if sized and place is not None and torch.is_tensor(value):
                copied(place, value.numel() * value.element_size())
            if back is not None and place is not None and torch.is_tensor(value) and back(self, value):
                returned(place, value.numel() * value.element_size())
            return value
        return wrapper

    def patch(owner, name, replacement) -> None:
        saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, replacement)

    def phase(name, original, after=None):
        def wrapper(*args, **kwargs):
            if threading.get_ident() != this_thread:
                return original(*args, **kwargs)
            state.phases = getattr(state, "phases", []) + [name]
            try:
                value = original(*args, **kwargs)
            finally:
                state.phases = state.phases[:-1]
            if after is not None:
                after(value)
            return value
        return wrapper

    for name in READS:
        patch(torch.Tensor, name, guarded("value read", getattr(torch.Tensor, name)))
    for name in SHAPED:
        patch(torch.Tensor, name, guarded("data-dependent size", getattr(torch.Tensor, name)))
    patch(torch.Tensor, "cpu", guarded("copy to the host", torch.Tensor.cpu, made_on_host=True,
                                       back=lambda tensor, value: True))
    patch(torch.Tensor, "copy_", copy_into(torch.Tensor.copy_))
    # A CPU run's .to(device) names the CPU: a copy to the host, or to the device, in a CUDA run (both sync
    # from pageable memory: torch's non_blocking=False copies wait for the stream).
    # Its bytes count as a copy to the host on a device run, where the direction is known (a CPU run's names the CPU).
    patch(torch.Tensor, "to", guarded("copy between devices", torch.Tensor.to, made_on_host=True, pinned=_page_locked,
                                      back=lambda tensor, value: not loose and value.device.type == "cpu"
                                      and tensor.device.type != "cpu",
                                      when=lambda tensor, args, kwargs: _crosses(tensor, args, kwargs, loose)))
    for name in ("as_tensor", "tensor"):
        patch(torch, name, guarded("copy to the device", getattr(torch, name), sized=True,
                                   when=lambda data, args, kwargs: kwargs.get("device") is not None
                                   and not torch.is_tensor(data)
                                   and (loose or torch.device(kwargs["device"]).type != "cpu")))
    patch(torch.Tensor, "__getitem__", guarded("data-dependent size", torch.Tensor.__getitem__,
                                               when=lambda self, args, kwargs: _bool_index(args[0])))
    for name in ("nonzero", "unique", "masked_select", "equal", "allclose"):
        kind = "value read" if name in ("equal", "allclose") else "data-dependent size"
        patch(torch, name, guarded(kind, getattr(torch, name)))

    def count_fit(fit) -> None:
        # Its steps from the fit itself: on a GPU a CUDA graph's replays call no training_step.
        counted.critic_fits += 1
        counted.critic_steps += fit.steps

    def count_call(_) -> None:
        counted.training_calls += 1

    COPY_LISTENERS.append(listener)
    patch(neural, "training_step", phase("critic step", neural.training_step))
    patch(neural, "_fit_chunk", phase("critic training", neural._fit_chunk, count_fit))
    patch(torch_dpsgd.TorchDPSGD, "train_batch",
          phase("DP-SGD training call", torch_dpsgd.TorchDPSGD.train_batch, count_call))
    try:
        yield counted
    finally:
        COPY_LISTENERS.remove(listener)
        for owner, name, original in reversed(saved):
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


_MISSING = object()


def critic_run(samples: int = 4000, critics: int = 4, max_steps: int = 300, seed: int = 0, device="cpu"):
    """One neural critic training (:func:`estimators.neural.fit_critics`, the default critic but ``max_steps``)
    on ``critics`` pairs of correlated Gaussians (ρ = 0.5, d = 2 each) of ``samples`` samples."""
    import numpy as np

    from estimators.critic_config import CriticConfig
    from estimators.neural import fit_critics

    rng = np.random.default_rng(seed)
    u = rng.normal(size=(critics, samples, 2))
    v = 0.5 * u + np.sqrt(0.75) * rng.normal(size=(critics, samples, 2))
    return fit_critics(u, v, config=CriticConfig(max_steps=max_steps), seed=seed, device=device, quiet=True)


def main(argv=None) -> int:
    from estimators.device import resolve_device
    from estimators.validation import check_choice, check_int
    from experiments.stage_profile import device_routes, gpu_chunks

    parser = argparse.ArgumentParser(prog="python -m experiments.sync_count", description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="dimension")
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--top", type=int, default=12, help="how many places the table lists")
    parser.add_argument("--device-routes", action="store_true",
                        help="the statistics' device code on the CPU, as beside a GPU (stage_profile.device_routes): "
                             "their copies to the device counted")
    parser.add_argument("--gpu-chunks", action="store_true",
                        help="TorchDPSGD's runs in the chunks a CUDA device gets (stage_profile.gpu_chunks)")
    args = parser.parse_args(argv)
    stage = check_choice(args.stage, "--stage", ("dimension", "epsilon", "critic"))
    runs = check_int(args.runs, "--runs", minimum=400)
    features = check_int(args.features, "--features", minimum=2)
    device = str(resolve_device(args.device))
    with gpu_chunks() if args.gpu_chunks else contextlib.nullcontext(), \
            device_routes() if args.device_routes else contextlib.nullcontext(), count_syncs(device) as counted:
        if stage == "dimension":
            from experiments.dpsgd_audit import dimension_rows, gpu_grid

            grid = dataclasses.replace(gpu_grid(), dims=(features,), runs=runs)
            rows = dimension_rows(grid, device, args.seed)
            what = ", ".join(f"{n} d = {d}" for n, d in zip(rows["notion"], rows["parameters_d"]))
        elif stage == "epsilon":
            from experiments.dpsgd_audit import _audit, epsilon_jobs, gpu_grid

            grid = dataclasses.replace(gpu_grid(), runs=runs)
            settings, jobs = epsilon_jobs(grid, device, args.seed)
            chosen = [job for row, job in zip(settings, jobs) if row["target_epsilon"] == grid.epsilons[0]]
            for job in chosen:
                _audit(*job)
            what = f"{len(chosen)} ε audits at target ε = {grid.epsilons[0]:g}"
        else:
            critic_run(seed=args.seed, device=device)
            what = "one critic training"
    size = "" if stage == "critic" else f", {runs} runs"
    chunks = (", device routes" if args.device_routes else "") + (", GPU chunks" if args.gpu_chunks else "")
    top = check_int(args.top, "--top", minimum=1)
    print(f"host-device syncs, {stage} ({what}){size}, device {device}{chunks}: {counted.summary()}")
    if device == "cpu":  # a CUDA run counts no page-locked copy: the two lines would be the same
        print(counted.gpu_summary())
    print(counted.table(top))
    print(f"\nhost→device copies: {counted.copy_summary()}")
    print(counted.copy_table(top))
    print(f"\ndevice→host copies: {counted.return_summary()}")
    print(counted.return_table(top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
