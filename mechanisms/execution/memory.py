"""How much memory a sampling budget needs, checked before anything is allocated."""

from __future__ import annotations

from estimators.memory import (CRITIC_BYTES, CRITIC_INPUT_BYTES, FLOAT_BYTES, PARAMETER_COPIES,  # noqa: F401
                               available_memory, cgroup_memory_headroom, critic_memory_parts, format_bytes)
from estimators.validation import InputError

__all__ = ["audit_flag", "audit_memory_parts", "available_memory", "budget_name", "cgroup_memory_headroom",
           "check_audit_memory", "check_output_memory", "critic_memory_parts", "format_bytes"]


def audit_flag(key: str) -> str:
    """The command-line flag of the audit setting ``key``: ``--`` and the key, its underscores written as hyphens
    (``event_runs``: ``--event-runs``). ``audit.spec.audit_argument`` names a setting with it."""
    return "--" + key.replace("_", "-")


def budget_name(key: str, names: dict | None = None) -> str:
    """How a memory refusal names the budget ``key`` (``samples``, ``slices``, ``records``, ``event_runs``) it asks
    to lower: as ``names`` names it, as its caller's user sets it (an audit gives the argument, the flag and the
    configuration key: ``audit.critic_cost.AUDIT_MEMORY_NAMES``); else by its flag (:func:`audit_flag`)."""
    return (names or {}).get(key) or audit_flag(key)


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
      copy, built once for both values of the record: :func:`audit.statistics.secret_critics.public_fixed`), the
      critic's second input v = (output, other records) once (the scorer puts v's blocks side by side, zero-padded,
      in one array: :func:`estimators.resident.device_columns`; on a GPU that array is on the device and the host
      holds the page-locked copies its blocks are sent from, v's size again at most; the audit's sliced critics
      read one-dimensional projections, a column each), and what v's standardization holds at once
      (:data:`CRITIC_INPUT_BYTES` a value: a float64 temporary and the float32 inputs).

    Measured peak RSS above the interpreter with torch loaded (``resource.getrusage``; an MI-DP audit of
    ``--prior builtin:bernoulli --n N --records 0 --samples 400``, 100 critic steps, glibc's mmap threshold fixed
    so that freed arrays leave the RSS; 2-core machine) against these parts with the critics' (predicted): N =
    5,000: 244 MiB (130 MiB); N = 10,000: 400 MiB (259 MiB); N = 20,000: 711 MiB (519 MiB). Without the event
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
        "event scoring": scored * (database + others * FLOAT_BYTES + critic_values * (FLOAT_BYTES + CRITIC_INPUT_BYTES)),
    }


def check_audit_memory(samples: int, shape: tuple, priors: int, *, event_runs: int = 0, output_width: int = 1,
                       critics: dict | None = None, available: int | None = None, other_records: int | None = None,
                       names: dict | None = None) -> int:
    """Refuse an audit whose arrays cannot fit in memory (:func:`audit_memory_parts`), before any is allocated.

    ``critics`` are the parts of the largest critic training (:func:`critic_memory_parts`), held
    beside the databases and outputs (the event runs come after the critics are trained; the
    larger of the two counts).

    ``names`` says how the way out names each budget (keys ``samples``, ``slices``, ``records``,
    ``event_runs``), as its caller's user sets it: the audit gives the argument, the flag and the configuration
    key (``audit.critic_cost.AUDIT_MEMORY_NAMES``); by default the flags (:func:`budget_name`).

    Returns
    -------
    int
        The bytes needed.

    Raises
    ------
    InputError
        Naming the budget that needs the most (``samples`` or ``event_runs``), with the size needed, part by
        part, the size available (:func:`available_memory`: a container's cgroup limit included) and what to
        lower, as ``names`` names it.
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
    samples_name = budget_name("samples", names)
    if event > parts["databases"] + parts["outputs"] + training:
        name, value = "event_runs", event_runs
        hint = f"lower {budget_name('event_runs', names)}"
    else:
        name, value = "samples", samples
        hint = f"lower {samples_name}"
        if training > parts["databases"] + parts["outputs"]:  # one critic per audited record and slice
            hint = (f"lower {samples_name} or {budget_name('slices', names)}, or audit fewer records: "
                    f"{budget_name('records', names)}")
    raise InputError(
        f"argument '{name}' ({value}): the audit needs at least {format_bytes(need)} of memory ({listed}; "
        f"databases of {n} x {k}, {output_width} output value(s) each, {priors} prior(s)), but only "
        f"{format_bytes(available)} is available; {hint}")


def check_output_memory(databases: int, output_width: int, what: str, *, budget: str | None,
                        available: int | None = None, names: dict | None = None) -> int:
    """Refuse a job whose outputs (``databases`` × ``output_width`` float64, chunks and joined) cannot fit.

    Checked once the mechanism's output width is known (after its first call), before the
    job's chunks run: a mechanism with a million outputs per database is refused here, not
    killed by the kernel. ``what`` names a database of the job (``"audit sample"``); ``budget`` is the budget
    that sizes the job, the one the refusal asks to lower (``"samples"``, ``"event_runs"``), named as ``names``
    names it (as in :func:`check_audit_memory`: an audit's runner gives ``audit.critic_cost.AUDIT_MEMORY_NAMES``;
    by default the flags, :func:`budget_name`); ``None`` for a job of a fixed size, which no budget lowers: the
    refusal then names the mechanism, whose outputs are too wide.
    """
    need = 2 * databases * output_width * FLOAT_BYTES
    available = available_memory() if available is None else available
    if available is not None and need > available:
        job = f"{databases} {what}s"
        if budget is None:
            key, job, remedy = "mechanism", job + ", a fixed count", "only a mechanism of fewer output values fits"
        else:
            key, remedy = budget, f"lower {budget_name(budget, names)}"
        raise InputError(
            f"argument '{key}' ({job}): the mechanism's outputs need "
            f"{format_bytes(need)} of memory ({databases} x {output_width} float64 values, chunks and joined), but "
            f"only {format_bytes(available)} is available; {remedy}")
    return need
