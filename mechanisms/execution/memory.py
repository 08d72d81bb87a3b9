"""How much memory a sampling budget needs, checked before anything is allocated."""

from __future__ import annotations

import os

from estimators.critic_config import scoring_rows
from estimators.validation import InputError

__all__ = ["audit_memory_parts", "available_memory", "cgroup_memory_headroom", "check_audit_memory", "check_output_memory",
           "critic_memory_parts", "format_bytes"]

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


def format_bytes(count: float) -> str:
    """``count`` bytes as a readable size (``1.5 GiB``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if count < 1024 or unit == "PiB":
            return f"{count:.3g} {unit}"
        count /= 1024
    return f"{count:.3g} PiB"  # pragma: no cover


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
                        critics_per_chunk: int, architecture: str = "shallow") -> dict:
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
    """
    chunk = min(critics, critics_per_chunk)
    if critics <= 0 or samples <= 0:
        return {"critic features": 0, "critic models": 0}
    features = FLOAT_BYTES * critics * samples * input_width + chunk * samples * input_width * (FLOAT_BYTES + 2 * CRITIC_BYTES)
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


def audit_memory_parts(samples: int, shape: tuple, priors: int, *, event_runs: int = 0,
                       output_width: int = 1, other_records: int | None = None) -> dict:
    """Bytes an audit holds at once, part by part (float64 arrays; a lower bound on its peak).

    - ``databases``: ``samples`` databases of shape ``(n, k)`` per prior, drawn in chunks and
      then joined (both alive at the join: twice);
    - ``outputs``: the mechanism's ``output_width`` numbers per database, chunks and joined
      array likewise (``output_width=1`` before the mechanism has run: at least one number);
    - ``event runs``: the event test's ``event_runs`` runs of each of its two databases, held together
      until both are scored (:func:`audit.search.event_search.event_search`), their outputs (twice, as
      above) and one score per run;
    - ``event scoring``: with ``other_records`` given (a record's neural critic reads that many numbers of
      the other records: (n − 1)·k, or k column sums), scoring one input's runs through it (``audit.engine``'s
      event statistic), per run, at its largest (inside :func:`estimators.standardization.critic_inputs`): the copy of
      the database with the record set (n·k numbers), the other records (``check_batch_output``'s float64
      copy), the critic's second input v = (output, other records) and its zero-padded copy, and what v's
      standardization holds at once (:data:`CRITIC_INPUT_BYTES` a value: a float64 temporary and the float32
      inputs).

    Measured peak RSS above the interpreter with torch loaded (``resource.getrusage``; an MI-DP audit of
    ``--prior builtin:bernoulli --n N --records 0 --samples 400``, 100 critic steps, glibc's mmap threshold fixed
    so that freed arrays leave the RSS; 2-core machine) against these parts with the critics' (predicted): N =
    5,000: 244 MiB (145 MiB); N = 10,000: 400 MiB (290 MiB); N = 20,000: 711 MiB (580 MiB). Without the event
    test's scoring and second input the check predicted 80, 159 and 318 MiB: the event test, not the critic's
    training, is the peak. The remaining 99, 110 and 131 MiB are the torch runtime's code and thread buffers
    (about 90 MiB, which no array shape gives) and arrays this count does not see (a lower bound, as said).

    The critics' features and models are :func:`critic_memory_parts`.
    """
    n, k = shape
    database = n * k * FLOAT_BYTES
    output = output_width * FLOAT_BYTES
    others = other_records or 0
    critic_values = others + output_width  # v = (output, other records)
    scored = 0 if other_records is None else event_runs
    return {
        "databases": 2 * priors * samples * database,
        "outputs": 2 * priors * samples * output,
        "event runs": 2 * event_runs * (database + 2 * output + FLOAT_BYTES),
        "event scoring": scored * (database + others * FLOAT_BYTES
                                   + critic_values * (2 * FLOAT_BYTES + CRITIC_INPUT_BYTES)),
    }


def check_audit_memory(samples: int, shape: tuple, priors: int, *, event_runs: int = 0, output_width: int = 1,
                       critics: dict | None = None, available: int | None = None, other_records: int | None = None) -> int:
    """Refuse an audit whose arrays cannot fit in memory (:func:`audit_memory_parts`), before any is allocated.

    ``critics`` are the parts of the largest critic training (:func:`critic_memory_parts`), held
    beside the databases and outputs (the event runs come after the critics are trained; the
    larger of the two counts).

    Returns
    -------
    int
        The bytes needed.

    Raises
    ------
    InputError
        Naming the budget that needs the most (``samples``, flag ``--samples``, or
        ``event_runs``, ``--event-runs``), with the size needed, part by part, and the size
        available (:func:`available_memory`: a container's cgroup limit included).
    """
    parts = audit_memory_parts(samples, shape, priors, event_runs=event_runs, output_width=output_width,
                               other_records=other_records)
    critic_parts = dict(critics or {})
    training = sum(critic_parts.values())
    event = parts["event runs"] + parts["event scoring"]
    need = parts["databases"] + parts["outputs"] + max(event, training)
    available = available_memory() if available is None else available
    if available is None or need <= available:
        return need
    n, k = shape
    listed = ", ".join(f"{name} {format_bytes(size)}" for name, size in {**parts, **critic_parts}.items() if size)
    hint = "lower --samples"
    if event > parts["databases"] + parts["outputs"] + training:
        name, flag, value = "event_runs", "--event-runs", event_runs
        hint = f"lower {flag}"
    else:
        name, flag, value = "samples", "--samples", samples
        if training > parts["databases"] + parts["outputs"]:
            hint = "lower --samples, --slices or the audited --records"
    raise InputError(
        f"argument '{name}' ({value}): the audit needs at least {format_bytes(need)} of memory ({listed}; "
        f"databases of {n} x {k}, {output_width} output value(s) each, {priors} prior(s)), but only "
        f"{format_bytes(available)} is available; {hint}")


def check_output_memory(databases: int, output_width: int, what: str, *, available: int | None = None) -> int:
    """Refuse a job whose outputs (``databases`` × ``output_width`` float64, chunks and joined) cannot fit.

    Checked once the mechanism's output width is known (after its first call), before the
    job's chunks run: a mechanism with a million outputs per database is refused here, not
    killed by the kernel. ``what`` names a database of the job (``"audit sample"``).
    """
    need = 2 * databases * output_width * FLOAT_BYTES
    available = available_memory() if available is None else available
    if available is not None and need > available:
        flag = "--event-runs" if "event" in what else "--samples"
        raise InputError(
            f"argument '{flag.lstrip('-').replace('-', '_')}' ({databases} {what}s): the mechanism's outputs need "
            f"{format_bytes(need)} of memory ({databases} x {output_width} float64 values, chunks and joined), but "
            f"only {format_bytes(available)} is available; lower {flag}")
    return need
