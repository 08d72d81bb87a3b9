"""How much memory a critic training holds, and how much this process may still allocate.

The estimators' share of the memory checks: :func:`critic_memory_parts` counts what a batched critic training
holds at once, :func:`available_memory` what the machine (and a container's cgroup limit) still allows,
:func:`check_critic_memory` refuses a critic training (:func:`~estimators.estimate.estimate_mi`'s, before it
projects any slice; :func:`~estimators.neural.fit_critics`'s, on the inputs it is handed) that cannot fit, and
:func:`check_projection_memory` a classical sliced estimate whose projected samples cannot. The audit's check
(:func:`mechanisms.execution.memory.check_audit_memory`) adds its databases and outputs to the same critic count.
All compare with the one limit, :func:`available_memory`, but for what a critic training on a CUDA device holds on
the GPU (one chunk's inputs, the models: :func:`critic_memory_places`), which is compared with the GPU's free memory
(:func:`gpu_free_memory`, :func:`check_gpu_critic_memory`), beside the audit's store of device copies that shares it
(:func:`estimators.resident.kept_device_bytes`: what it keeps and what its caller adds).
"""

from __future__ import annotations

import os

from .critic_config import CriticConfig, scoring_rows
from .resident import kept_device_bytes
from .validation import InputError

__all__ = ["CRITIC_BYTES", "CRITIC_INPUT_BYTES", "FLOAT_BYTES", "PARAMETER_COPIES", "available_memory",
           "cgroup_memory_headroom", "check_critic_memory", "check_gpu_critic_memory", "check_projection_memory",
           "critic_config_memory", "critic_memory_parts", "critic_memory_places", "format_bytes", "gpu_free_memory",
           "on_cuda"]

FLOAT_BYTES = 8

#: A cgroup limit at or above this is "no limit" (v1 writes 2^63 rounded down to a page).
_NO_LIMIT = 2**62

#: (limit file, usage file) of cgroup v2 and of cgroup v1's memory controller.
_CGROUP_FILES = (("memory.max", "memory.current"), ("memory.limit_in_bytes", "memory.usage_in_bytes"))


def _read_bytes(path: str) -> int | None:
    try:
        with open(path) as handle:
            text = handle.read(64).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # v2 writes "max" for no limit


def _cgroup_folders(root: str) -> list:
    """The memory cgroup folders of this process and their parents, under the mount ``root``.

    Read from ``/proc/self/cgroup``: the v2 line ``0::/PATH`` and the v1 line ``N:...memory...:/PATH``;
    each path is tried under ``root`` (v2) and ``root/memory`` (v1), and ``root`` itself (a
    container's namespaced view shows its own cgroup at the mount point).
    """
    paths = []
    try:
        with open("/proc/self/cgroup") as handle:
            for line in handle:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3 and (parts[1] == "" or "memory" in parts[1].split(",")):
                    paths.append(parts[2])
    except OSError:
        pass
    folders = []
    for mount in (root, os.path.join(root, "memory")):
        for path in paths:
            relative = path.strip("/")
            while True:  # a parent's limit binds the children too
                folders.append(os.path.join(mount, relative))
                if not relative:
                    break
                relative = os.path.dirname(relative)
    return list(dict.fromkeys(folders))


def cgroup_memory_headroom(root: str = "/sys/fs/cgroup") -> int | None:
    """Bytes this process's control groups still allow (limit − usage, the tightest), or None without a limit.

    A container's memory limit is a cgroup limit (``memory.max`` in v2, ``memory.limit_in_bytes``
    in v1): the kernel's ``MemAvailable`` counts the whole host and would let an audit grow until
    the container is killed (issue 32 B1).
    """
    headroom = None
    for folder in _cgroup_folders(root):
        for limit_file, usage_file in _CGROUP_FILES:
            limit = _read_bytes(os.path.join(folder, limit_file))
            if limit is None or limit >= _NO_LIMIT:
                continue
            usage = _read_bytes(os.path.join(folder, usage_file)) or 0
            free = max(limit - usage, 0)
            headroom = free if headroom is None else min(headroom, free)
    return headroom


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation, or None if unknown.

    The smaller of the kernel's ``MemAvailable`` (Linux; else free physical pages) and the
    headroom under this process's cgroup memory limit (:func:`cgroup_memory_headroom`).
    """
    host = None
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    host = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if host is None:
        try:
            host = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            host = None
    limits = [v for v in (host, cgroup_memory_headroom()) if v is not None]
    return min(limits) if limits else None


_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def format_bytes(count: float) -> str:
    """``count`` bytes as a readable size: ``1,000 B``, ``1.5 GiB``, ``580 MiB``, ``1,023 KiB``.

    Below 1,024 bytes (as rounded) a whole number of bytes; above, the largest binary unit whose value
    still rounds below 1,024, to three significant figures (``:.3g``) below 100 and a whole number with
    thousands separators from 100 on, so that ``.3g``'s exponent form (``1e+03 B``) is never printed.
    Counts past 1,024 PiB stay in PiB.
    """
    value = float(count)
    for unit in _BYTE_UNITS:
        if round(value) < 1024 or unit == _BYTE_UNITS[-1]:
            break
        value /= 1024
    if unit == "B" or value >= 99.5:
        return f"{round(value):,} {unit}"
    return f"{value:.3g} {unit}"


#: Bytes of a critic's parameters and activations (float32: :func:`estimators.standardization.critic_inputs`).
CRITIC_BYTES = 4

#: Bytes a value of a critic's input takes inside :func:`estimators.standardization.critic_inputs` at its largest,
#: on the path every input takes (none past ``COMPRESS_BEYOND``): its float64 temporary, u − 2·centre divided in
#: place, and the float32 inputs it returns. Where values lie past that bound, the call holds 26 bytes a value
#: while it compresses them (this count is a lower bound).
CRITIC_INPUT_BYTES = FLOAT_BYTES + CRITIC_BYTES

#: Copies of each trained parameter alive at once: the parameter, its gradient, Adam's two moment
#: estimates and the best-so-far snapshot (:func:`estimators.neural._fit_chunk`).
PARAMETER_COPIES = 5

def critic_memory_parts(critics: int, samples: int, input_width: int, *, hidden: int, depth: int, batch_size: int,
                        critics_per_chunk: int, architecture: str = "shallow", inputs_held: bool = False) -> dict:
    """Bytes one batched critic training holds at once (a lower bound on its peak), part by part.

    ``critics`` critics T_m(u, v) trained as one batched ensemble on ``samples`` pairs of
    ``input_width`` = du + dv numbers (:func:`estimators.neural.fit_critics`), in chunks of at most
    ``critics_per_chunk`` critics (C below):

    - ``critic features``: the stacked inputs of every critic, float64 (critics × samples ×
      width × 8), and for one chunk the float64 standardization, the float32 inputs and their
      float32 train/validation/test copies (C × samples × width × (8 + 4 + 4));
    - ``critic models``: per critic of the chunk, the parameters (shallow: width·h + h + h + 1 +
      width; deep: width·h + h + (depth − 1)(h² + h) + h + 1) in :data:`PARAMETER_COPIES` copies,
      and the hidden activations of a training step (joint and product batches, each layer) or of
      a scoring pass (rows in blocks of :func:`estimators.critic_config.scoring_rows`),
      whichever is larger, float32.

    With ``inputs_held`` the stacked inputs are left out of the features: the caller already holds them
    (:func:`~estimators.neural.fit_critics` is handed them), so the memory available no longer includes them.
    """
    chunk = min(critics, critics_per_chunk)
    if critics <= 0 or samples <= 0:
        return {"critic features": 0, "critic models": 0}
    stacked = 0 if inputs_held else FLOAT_BYTES * critics * samples * input_width
    features = stacked + chunk * samples * input_width * (FLOAT_BYTES + 2 * CRITIC_BYTES)
    if architecture == "shallow":
        parameters = input_width * hidden + 2 * hidden + 1 + input_width
        layers = 1
    else:
        parameters = input_width * hidden + hidden + (depth - 1) * (hidden * hidden + hidden) + hidden + 1
        layers = depth
    rows_scored = min(samples, scoring_rows(chunk, hidden))
    activations = max(chunk * 2 * min(batch_size, samples) * hidden * layers, chunk * rows_scored * hidden)
    models = CRITIC_BYTES * (PARAMETER_COPIES * chunk * parameters + activations)
    return {"critic features": features, "critic models": models}


def critic_config_memory(critics: int, samples: int, input_width: int, config: CriticConfig, *,
                         inputs_held: bool = False) -> dict:
    """:func:`critic_memory_parts` of ``critics`` critics of ``config``'s architecture, batch and chunks."""
    return critic_memory_parts(critics, samples, input_width, hidden=config.hidden, depth=config.depth,
                               batch_size=config.batch_size, critics_per_chunk=config.max_critics_per_chunk,
                               architecture=config.architecture, inputs_held=inputs_held)


def _refuse(what: str, doing: str, parts: dict, available: int, remedy: str, memory: str = "memory"):
    need = sum(parts.values())
    listed = ", ".join(f"{name} {format_bytes(size)}" for name, size in parts.items())
    raise InputError(f"{what}: {doing} needs at least {format_bytes(need)} of {memory} ({listed}), but only "
                     f"{format_bytes(available)} is available; {remedy}")


def gpu_free_memory(device) -> int | None:
    """Bytes this process may still allocate on the CUDA device ``device``, or None where it cannot be read: the
    driver's free bytes (``torch.cuda.mem_get_info``, other processes' use counted) and what torch's caching
    allocator holds unallocated (``memory_reserved − memory_allocated``: freed by an earlier training, such as a
    sequential audit's earlier look, and given again to this one without the driver). The memory checks' one CUDA
    query."""
    import torch

    try:
        device = torch.device(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(torch.cuda.mem_get_info(device)[0]) + max(int(cached), 0)
    except (RuntimeError, AssertionError, ValueError):  # no driver, no such device, torch built without CUDA
        return None


def on_cuda(device) -> bool:
    """Whether critics trained on ``device`` (None, ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a
    :class:`torch.device`) train on a CUDA device (:func:`estimators.device.resolve_device`)."""
    if device is None or device == "cpu":
        return False
    from .device import resolve_device

    return resolve_device(device).type == "cuda"


def critic_memory_places(critics: int, samples: int, input_width: int, config: CriticConfig, *,
                         inputs_held: bool = False) -> tuple[dict, dict]:
    """(host parts, GPU parts) of :func:`critic_config_memory` where the critics train on a CUDA device: the
    stacked float64 inputs of every critic stay on the host; one chunk's inputs (:func:`critic_memory_parts`'
    per-chunk features: :func:`estimators.neural.fit_critics` copies each chunk to the device, where
    :func:`estimators.standardization.critic_inputs` makes its float32 inputs and their splits) and the models
    (parameters, optimizer state, activations) live on the GPU."""
    parts = critic_config_memory(critics, samples, input_width, config, inputs_held=inputs_held)
    chunk = critic_config_memory(critics, samples, input_width, config, inputs_held=True)["critic features"]
    return ({"critic features": parts["critic features"] - chunk},
            {"critic features": chunk, "critic models": parts["critic models"]})


def _critic_named(config: CriticConfig, config_name: str, config_keys: str) -> str:
    """The critic's settings as a memory message names them: the argument ``config_name`` with the three that set its
    size, and ``config_keys`` (where else its user sets them, e.g. the configuration's ``[critic]`` table)."""
    where = f"; {config_keys}" if config_keys else ""
    return (f"argument '{config_name}' (hidden = {config.hidden}, batch_size = {config.batch_size}, "
            f"max_critics_per_chunk = {config.max_critics_per_chunk}{where})")


def check_gpu_critic_memory(critics: int, samples: int, input_width: int, config: CriticConfig, device, *,
                            config_name: str | None = "critic", config_keys: str = "",
                            samples_name: str = "arguments 'x' and 'y'", slices: int | None = None,
                            slices_name: str = "slices", device_name: str = "device",
                            cpu: str = "device 'cpu'", kept_adding: int = 0) -> int:
    """Refuse a critic training on the CUDA device ``device`` whose GPU parts (:func:`critic_memory_places`) do not
    fit in its free memory (:func:`gpu_free_memory`), naming what its caller's user can change (the names:
    :func:`check_critic_memory`): the critic's settings where the models or a chunk of several critics fill it
    (fewer critics a chunk or a smaller critic fit), else the samples. Where the user cannot set the critic
    (``config_name`` None: ``miaudit estimate``), a chunk of several critics names the slices (``slices`` of them,
    fewer critics on the GPU at once), models larger than the chunk's inputs the device (``device_name``: only the
    CPU helps), and otherwise the samples.

    The device copies the audit's store keeps (:mod:`estimators.resident`, :func:`estimators.resident.kept_device_bytes`)
    share the GPU with the training and are counted with it, as the part ``kept device copies``: those kept now, which
    the driver's free memory no longer holds and which the memory available therefore counts back in (free plus
    kept), and ``kept_adding``, the bytes of blocks the caller puts in the store before the training ends (the
    audit's MI sample, :func:`audit.critic_cost.kept_blocks`), up to the room its cap leaves.

    Returns
    -------
    int
        The GPU bytes needed.

    Raises
    ------
    InputError
        With the GPU bytes needed, part by part, and those free, and the way out: a smaller critic or chunk, fewer
        slices or samples, or the CPU (``cpu``: how the user asks for it).
    """
    gpu = critic_memory_places(critics, samples, input_width, config)[1]
    kept, adding = kept_device_bytes(device, kept_adding)
    if kept + adding:
        gpu["kept device copies"] = kept + adding
    need, free = sum(gpu.values()), gpu_free_memory(device)
    free = None if free is None else free + kept  # the store's copies are the audit's own, held in what it needs
    if free is None or need <= free:
        return need
    chunked = min(critics, config.max_critics_per_chunk) > 1
    if config_name is not None and (gpu["critic models"] > gpu["critic features"] or chunked):
        what = _critic_named(config, config_name, config_keys)
        remedy = "lower its max_critics_per_chunk (fewer critics on the GPU at once), hidden or batch_size, or "
    elif config_name is None and chunked and slices is not None:
        what, remedy = f"argument '{slices_name}' ({slices})", "use fewer slices (fewer critics on the GPU at once), or "
    elif config_name is None and gpu["critic models"] > gpu["critic features"]:
        what, remedy = f"argument '{device_name}' ({device})", ""
    else:
        what, remedy = f"{samples_name} ({samples} samples)", "use fewer samples (or fewer columns), or "
    _refuse(what, f"training {critics} critic(s) on {samples} samples of {input_width} input values on {device}",
            gpu, free, f"{remedy}train on the CPU ({cpu})", memory="GPU memory")


def check_critic_memory(critics: int, samples: int, input_width: int, config: CriticConfig, *,
                        slices: int | None = None, available: int | None = None, inputs_held: bool = False,
                        config_name: str | None = "critic", config_keys: str = "",
                        samples_name: str = "arguments 'x' and 'y'", slices_name: str = "slices",
                        device_name: str = "device", cpu: str = "device 'cpu'", device=None) -> int:
    """Refuse a critic training that cannot fit in memory (:func:`critic_memory_parts`), before it runs.

    The one check of a critic training: :func:`~estimators.estimate.estimate_mi` runs it before it projects any
    slice, counting the critics' stacked inputs it is about to build; :func:`~estimators.neural.fit_critics` runs
    it on the inputs it is handed (``inputs_held``), except where its caller (``estimate_mi``, the audit, whose
    :func:`~mechanisms.execution.memory.check_audit_memory` counts the same critics) has checked already.

    Parameters
    ----------
    critics, samples, input_width : int
        The critics trained as one ensemble, the paired samples and the numbers of one critic's input.
    config : CriticConfig
        Their architecture, batch and chunks.
    slices : int, optional
        The estimate's random slices, if sliced.
    available : int, optional
        Bytes available (default: :func:`available_memory`).
    inputs_held : bool
        The stacked inputs exist already and are not counted (:func:`critic_memory_parts`).
    config_name, samples_name, slices_name, device_name : str
        How the message names what its caller's user can change: the critic's settings (``critic`` of
        ``estimate_mi`` and of an audit, ``config`` of ``fit_critics``; None where the user cannot set them, as
        under ``miaudit estimate``: the slices, samples or device are named instead), the samples, the slices
        (``slices``, or the flag that set them) and the device (``device``, or ``--device``).
    config_keys : str
        Where else the critic's settings are set, said beside them (an audit: its configuration's ``[critic]``
        table and ``--set critic.KEY=VALUE``); empty: nowhere else.
    cpu : str
        How the user asks for the CPU (``device 'cpu'``, ``--device cpu``), the way out of a GPU's memory.
    device : str or torch.device, optional
        Where the critics train. On a CUDA device the parts on the GPU are checked against its free memory
        (:func:`check_gpu_critic_memory`) and only those on the host (the stacked inputs) against ``available``
        (:func:`critic_memory_places`); elsewhere (None: the CPU) all against ``available``.

    Returns
    -------
    int
        The bytes needed.

    Raises
    ------
    InputError
        Naming what to reduce: the argument ``config_name`` where the models (parameters and activations) need
        more than the features (and the user can set it), else ``slices_name`` when sliced, else the samples
        (``samples_name``); with the size needed, part by part, and the size available.
    """
    if on_cuda(device):
        gpu = check_gpu_critic_memory(critics, samples, input_width, config, device, config_name=config_name,
                                      config_keys=config_keys, samples_name=samples_name, slices=slices,
                                      slices_name=slices_name, device_name=device_name, cpu=cpu)
        parts = critic_memory_places(critics, samples, input_width, config, inputs_held=inputs_held)[0]
    else:
        gpu, parts = 0, critic_config_memory(critics, samples, input_width, config, inputs_held=inputs_held)
    need = sum(parts.values())
    available = available_memory() if available is None else available
    if available is None or need <= available:
        return need + gpu
    if config_name is not None and parts.get("critic models", 0) > parts["critic features"]:
        what = _critic_named(config, config_name, config_keys)
        remedy = "use a smaller critic: lower its hidden, batch_size or max_critics_per_chunk"
    elif slices is not None:
        what, remedy = f"argument '{slices_name}' ({slices})", "use fewer slices (or fewer samples)"
    else:
        what, remedy = f"{samples_name} ({samples} samples)", "use fewer samples (or fewer columns)"
    _refuse(what, f"training {critics} critic(s) on {samples} samples of {input_width} input values", parts,
            available, remedy)


def check_projection_memory(slices: int, samples: int, columns: int, name: str = "slices", *,
                            available: int | None = None) -> int:
    """Refuse a sliced estimate whose projected samples alone cannot fit in memory, naming ``name`` (the argument,
    or the flag that set it), before any slice is projected.

    The check of a classical sliced estimate (KSG, Gaussian, plug-in), whose only count is its projections:
    ``slices`` × ``samples`` × ``columns`` float64 values, a lower bound (the estimators' own working memory is
    not counted). A neural estimate is checked by :func:`check_critic_memory` instead, whose features hold the
    same projections (as the critics' stacked inputs) and more, against the same limit: it refuses whatever this
    check would, so one check runs per estimate (``miaudit estimate``'s too: it leaves it to
    :func:`~estimators.estimate.estimate_mi`, which names ``--slices`` for it).

    Returns
    -------
    int
        The bytes needed.
    """
    need = FLOAT_BYTES * slices * samples * columns
    available = available_memory() if available is None else available
    if available is None or need <= available:
        return need
    _refuse(f"argument '{name}' ({slices})", f"projecting {samples} samples of {columns} values onto {slices} slices",
            {"projected samples": need}, available, "use fewer slices")
