"""Shared machinery of the experiments: what an experiment declares, what it returns, and how
its CSV tables, PNG figure and Markdown summary are written.

An experiment module defines ``EXPERIMENTS``, a list of :class:`Experiment`. Each
``Experiment.run(context)`` computes its numbers and returns an :class:`ExperimentOutput`
(tables, one figure, findings); :func:`run_experiment` times it and writes the files,
each one atomically (written to a temporary file in the same folder, then renamed), so
an interrupted run never leaves a half-written CSV or PNG behind.
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from estimators.validation import InputError

__all__ = ["Experiment", "ExperimentOutput", "ExperimentResult", "RunContext", "Table", "new_figure",
           "read_table", "run_experiment", "write_atomic"]

DEFAULT_OUT_ROOT = "experiments-out"


@dataclass(frozen=True)
class RunContext:
    """What a run was asked for.

    Attributes
    ----------
    quick : bool
        ``--quick``: a reduced setting that finishes in under 30 s on a 2-core CPU.
    seed : int
        Seed of every random draw of the run.
    device : str or None
        The resolved torch device (``"cpu"``, ``"cuda"``, ``"cuda:0"``) for experiments that
        train; ``None`` for experiments that do not.
    out_dir : Path or None
        The run's output folder (for experiments that keep files there, such as cached environments).
    stage_seconds : dict
        Seconds of each stage run by :meth:`stage`, in the order they finished (pipelined stages may finish out
        of order).
    stage_spans : dict
        Each stage's (start, end) wall-clock times (``time.time()``), to set samples taken meanwhile against it.
        Stages may overlap (``dpsgd-audit --workers K`` queues every stage's audits at once): a stage's span then
        runs from when its work began (its first audit's start, in whichever process) to its table's writing, and
        the stages' seconds add up to more than the run's.
    grid : str or None
        ``--grid``: one of the experiment's named sizes (:attr:`Experiment.grids`); ``None``, its default.
    workers : int
        ``--workers``: processes that run a study's independent audits side by side
        (:class:`experiments.row_pool.JobPool`; its stages pipelined by :func:`experiments.stage_pipeline.run_stages`;
        1: here, one after another).
    page : Path or None
        ``--page``, for an experiment that writes its own page (:attr:`Experiment.writes_page`); else ``None``.
    """

    quick: bool
    seed: int
    device: str | None = None
    out_dir: Path | None = None
    stage_seconds: dict = field(default_factory=dict)
    grid: str | None = None
    stage_spans: dict = field(default_factory=dict)
    workers: int = 1
    page: Path | None = None

    def rng(self, stream: int = 0) -> np.random.Generator:
        """An independent generator for ``stream`` (same seed and stream give the same numbers)."""
        return np.random.default_rng([self.seed, stream])

    def stage(self, name: str, compute: Callable, began: Callable | None = None) -> "Table":
        """Run one stage of a long experiment: ``compute()`` returns its table's columns, which are written
        to ``<out_dir>/<name>.csv`` at once (a run cut short keeps the stages it finished), with a line on
        stderr saying the stage's seconds; the stage's seconds are kept in :attr:`stage_seconds`, its span in
        :attr:`stage_spans`.

        ``began``, for a stage whose work was handed to worker processes (``compute`` waits for it), returns, once
        ``compute`` is done, when that work began (``time.time()``; NaN: not known, then this call's start): the
        stage's span and seconds run from then, not from this call (which may come before the workers start it,
        or after)."""
        print(f"{name}: started", file=sys.stderr, flush=True)
        wall_started = time.time()
        table = Table(name, compute())
        ended = time.time()
        began_at = began() if began is not None else math.nan
        if not math.isnan(began_at):
            wall_started = began_at
        # Wall clock (not perf_counter) throughout: the start may come from a worker process's clock.
        seconds = ended - wall_started
        self.stage_seconds[name] = seconds
        self.stage_spans[name] = (wall_started, ended)
        if self.out_dir is not None:
            _write_text(Path(self.out_dir) / f"{name}.csv", table.to_csv())
        print(f"{name}: done in {seconds:.1f} s", file=sys.stderr, flush=True)
        return table


@dataclass(frozen=True)
class Table:
    """One CSV file: named columns of equal length (numbers or strings).

    Attributes
    ----------
    name : str
        File stem; the file is ``<name>.csv``.
    columns : dict
        Column name → 1-D sequence. Floats are written with ``repr`` (full precision).
    """

    name: str
    columns: dict

    def __post_init__(self):
        lengths = {key: len(values) for key, values in self.columns.items()}
        if not lengths:
            raise InputError(f"table '{self.name}' has no columns")
        if len(set(lengths.values())) != 1:
            raise InputError(f"table '{self.name}' has columns of different lengths: {lengths}")

    @property
    def n_rows(self) -> int:
        return len(next(iter(self.columns.values())))

    def to_csv(self) -> str:
        """The table as CSV text with a header row."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(list(self.columns))
        for row in zip(*self.columns.values()):
            writer.writerow([_cell(value) for value in row])
        return buffer.getvalue()


def read_table(path) -> dict:
    """Read a CSV written by :class:`Table` back: column name → NumPy array.

    Columns whose every cell parses as a float come back as float64 arrays; ``true``/``false``
    columns as bool arrays; anything else as arrays of str.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header, body = rows[0], rows[1:]
    out = {}
    for index, name in enumerate(header):
        cells = [row[index] for row in body]
        if cells and all(cell in ("true", "false") for cell in cells):
            out[name] = np.array([cell == "true" for cell in cells])
            continue
        try:
            out[name] = np.array([float(cell) for cell in cells], dtype=np.float64)
        except ValueError:
            out[name] = np.array(cells, dtype=str)
    return out


def _cell(value):
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


@dataclass(frozen=True)
class ExperimentOutput:
    """What an experiment's ``run`` returns.

    Attributes
    ----------
    tables : list of Table
        The numbers (one CSV each).
    figure : matplotlib.figure.Figure
        The figure (saved as ``<name>.png``); build it with :func:`new_figure`.
    settings : dict
        The parameters of this run (shown in the summary and the JSON result).
    findings : list of str
        What the numbers show, each a sentence with the numbers it rests on (Markdown).
    """

    tables: list
    figure: object
    settings: dict
    findings: list


@dataclass(frozen=True)
class Experiment:
    """A registered experiment.

    Attributes
    ----------
    name : str
        The name used on the command line (``miaudit experiment NAME``).
    description : str
        One line: what it computes.
    source : str
        The paper and figure/example it reproduces (or "study" for new studies).
    run : callable
        ``run(context: RunContext) -> ExperimentOutput``.
    trains : bool
        Whether it trains models and so takes ``--device``.
    full_runtime : str
        The documented wall time of the full (non-quick) run, with the machine it was measured on; a
        ``--quick`` run's page quotes it (a full run's page states its own time, :func:`_full_run_time`).
    grids : tuple of str
        The named sizes ``--grid`` may pick (none: the experiment has one size besides ``--quick``).
    parallel : bool
        Whether it runs its audits in ``--workers`` processes (:attr:`RunContext.workers`).
    writes_page : bool
        Whether it writes its page itself, at :attr:`RunContext.page` (``--page``), instead of the summary-and-tables
        page of :func:`experiments.docs_page.benchmark_page` (``scans``: a page built from per-library records;
        ``real-bugs``: its table of cases with each case's command).
    """

    name: str
    description: str
    source: str
    run: Callable
    trains: bool = False
    full_runtime: str = "not measured"
    grids: tuple = ()
    parallel: bool = False
    writes_page: bool = False

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "source": self.source,
                "trains": self.trains, "full_runtime": self.full_runtime}


@dataclass(frozen=True)
class ExperimentResult:
    """What :func:`run_experiment` did: the files written, the time and the machine."""

    name: str
    source: str
    out_dir: str
    quick: bool
    seed: int
    device: str
    seconds: float
    csv_files: tuple
    png_file: str
    summary_file: str
    settings: dict = field(default_factory=dict)
    findings: tuple = ()
    page_file: str | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source, "out_dir": self.out_dir, "quick": self.quick,
                "seed": self.seed, "device": self.device, "seconds": self.seconds,
                "files": {"csv": list(self.csv_files), "png": self.png_file, "summary": self.summary_file,
                          "page": self.page_file},
                "settings": self.settings, "findings": list(self.findings)}


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float = 6.4, height: float = 4.4):
    """A matplotlib Figure on the Agg canvas (no display, no global pyplot state) and its axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(nrows, ncols, squeeze=False)
    return figure, axes


def write_atomic(path: Path, write: Callable) -> None:
    """Write ``path`` by ``write(file_object)`` into memory, then atomically into place with
    :func:`audit.report.writing.write_file_set`: only a regular file (or nothing) is ever replaced,
    and a failure leaves the previous file as it was."""
    from audit.report.writing import write_file_set

    buffer = io.BytesIO()
    write(buffer)
    write_file_set({Path(path): buffer.getvalue()}, flag="--out")


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, lambda handle: handle.write(text.encode("utf-8")))


def machine_description(device: str | None) -> str:
    """The machine a run used: CPU model and core count, and the torch device where it trains."""
    cpu = platform.processor() or platform.machine()
    host = f"{cpu}, {os.cpu_count()} CPU cores, Python {platform.python_version()}, NumPy {np.__version__}"
    if device is None:
        return f"CPU only (NumPy/SciPy; this experiment does not train) — {host}"
    if device.startswith("cuda"):
        import torch

        return f"{device} ({torch.cuda.get_device_name(torch.device(device))}) — {host}"
    return f"{device} — {host}"


def miaudit_version() -> str:
    """The installed miaudit's version (``unknown`` when run from a checkout that is not installed)."""
    from importlib import metadata

    try:
        return metadata.version("miaudit")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _command(experiment: Experiment, context: RunContext) -> str:
    """The command that repeats the run: with ``--device`` (cpu or cuda) for an experiment that trains."""
    device = f" --device {str(context.device).split(':')[0]}" if experiment.trains and context.device else ""
    grid = f" --grid {context.grid}" if context.grid else ""
    workers = f" --workers {context.workers}" if context.workers > 1 else ""
    return (f"miaudit experiment {experiment.name}{' --quick' if context.quick else ''}{grid} --seed {context.seed}"
            f"{device}{workers}")


#: The repository root of this checkout: a page written inside it is named relative to it.
REPOSITORY_ROOT = Path(__file__).resolve().parents[1]


def page_argument(page) -> str:
    """``page`` as a reader types it: relative to the repository root when it lies inside, else as given."""
    resolved = Path(page).resolve()
    return resolved.relative_to(REPOSITORY_ROOT).as_posix() if resolved.is_relative_to(REPOSITORY_ROOT) else str(page)


def load_average() -> float:
    """The machine's 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


def _full_run_time(experiment: Experiment, context: RunContext, seconds: float, device_text: str,
                  loads: tuple = (float("nan"), float("nan"))) -> str:
    """The page's "full (non-quick) run time": this run's own wall time and load where the run is a full
    one (not ``--quick``), else the time documented in :attr:`Experiment.full_runtime`.

    A run of a named size (``--grid``) is full at that size: its measured time is stated with the grid,
    and the documented text follows for the experiment's other sizes.
    """
    if context.quick:
        return experiment.full_runtime
    grid = f", grid `{context.grid}`" if context.grid else ""
    measured = (f"{seconds:.2f} s, this run{grid} (load average {loads[0]:.2f} at the start, {loads[1]:.2f} at the "
                f"end, on {os.cpu_count()} cores; {device_text})")
    return f"{measured}; documented for its sizes: {experiment.full_runtime}" if experiment.grids else measured


def _summary(experiment: Experiment, output: ExperimentOutput, context: RunContext, seconds: float,
             device_text: str, files: list, loads: tuple = (float("nan"), float("nan"))) -> str:
    mode = "quick (`--quick`)" if context.quick else "full (the paper's setting)"
    lines = [
        f"# {experiment.name}",
        "",
        f"{experiment.description}",
        "",
        f"**Source:** {experiment.source}",
        "",
        "## Run",
        "",
        f"- mode: {mode}" + (f", grid `{context.grid}`" if context.grid else ""),
        f"- seed: {context.seed}",
        f"- device: {device_text}",
        f"- miaudit version: {miaudit_version()}",
        f"- wall time: {seconds:.2f} s",
        f"- load average (1 minute): {loads[0]:.2f} at the start, {loads[1]:.2f} at the end, on {os.cpu_count()} cores",
        f"- finished: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"- full (non-quick) run time: {_full_run_time(experiment, context, seconds, device_text, loads)}",
        f"- command: `{_command(experiment, context)}`",
        "",
        "## Settings",
        "",
    ]
    lines += [f"- {key}: {value}" for key, value in output.settings.items()]
    lines += ["", "## What it shows", ""]
    lines += [f"- {finding}" for finding in output.findings]
    lines += ["", "## Files", ""]
    lines += [f"- `{name}`" for name in files]
    return "\n".join(lines) + "\n"


def run_experiment(experiment: Experiment, *, out_dir=None, quick: bool = False, seed: int = 0,
                   device: str = "auto", page=None, grid: str | None = None, workers: int = 1) -> ExperimentResult:
    """Run ``experiment`` and write its CSV tables, PNG figure and ``summary.md`` into ``out_dir``.

    Parameters
    ----------
    experiment : Experiment
    out_dir : str or Path, optional
        Default ``experiments-out/<name>``; created if missing.
    quick : bool
        The reduced setting (under 30 s on a 2-core CPU).
    seed : int
    device : {"auto", "cpu", "cuda"}
        Used only by experiments that train; resolved by :func:`estimators.device.resolve_device`.
    page : str or Path, optional
        Also write a documentation page here (:func:`experiments.docs_page.benchmark_page`: the
        summary, then the tables), e.g. ``docs/benchmarks/NAME.md``; an experiment that writes its own page
        (:attr:`Experiment.writes_page`) is given it as :attr:`RunContext.page` instead.
    grid : str, optional
        One of ``experiment.grids`` (``--grid``); not with ``quick``.
    workers : int >= 1
        ``--workers``: processes for the experiment's independent audits (experiments with
        :attr:`Experiment.parallel` only); its tables are the same with any number.
    """
    from estimators.device import resolve_device
    from estimators.validation import check_choice, check_int

    seed = check_int(seed, "seed", minimum=0)
    workers = check_int(workers, "--workers", minimum=1)
    if workers > 1 and not experiment.parallel:
        raise InputError(f"argument '--workers': experiment {experiment.name!r} runs in one process (--workers "
                         "applies to the experiments whose audits are independent, such as dpsgd-audit)")
    if grid is not None:
        if not experiment.grids:
            raise InputError(f"argument '--grid': experiment {experiment.name!r} has one size (and --quick)")
        check_choice(grid, "--grid", experiment.grids)
        if quick:
            raise InputError("arguments '--grid' and '--quick' are alternatives: give one")
    resolved = str(resolve_device(device)) if experiment.trains else None
    directory = Path(out_dir) if out_dir is not None else Path(DEFAULT_OUT_ROOT) / experiment.name
    if directory.exists() and not directory.is_dir():
        raise InputError(f"argument 'out' is not a directory: {directory}")
    directory.mkdir(parents=True, exist_ok=True)
    context = RunContext(quick=bool(quick), seed=seed, device=resolved, out_dir=directory, grid=grid, workers=workers,
                         page=Path(page) if page is not None and experiment.writes_page else None)

    load_before, start = load_average(), time.perf_counter()
    output = experiment.run(context)
    seconds, load_after = time.perf_counter() - start, load_average()

    csv_names = []
    for table in output.tables:
        name = f"{table.name}.csv"
        _write_text(directory / name, table.to_csv())
        csv_names.append(name)
    png_name = f"{experiment.name}.png"
    write_atomic(directory / png_name, lambda handle: output.figure.savefig(handle, format="png", dpi=120))
    device_text = machine_description(resolved)
    summary_name = "summary.md"
    summary = _summary(experiment, output, context, seconds, device_text, csv_names + [png_name],
                       (load_before, load_after))
    _write_text(directory / summary_name, summary)
    if page is not None and not experiment.writes_page:
        from experiments.docs_page import benchmark_page

        run_on = (f"{datetime.date.today().isoformat()}, {device_text}, load average {load_before:.2f} at the start "
                  f"and {load_after:.2f} at the end, miaudit {miaudit_version()}")
        _write_text(Path(page), benchmark_page(summary, output.tables,
                                               f"{_command(experiment, context)} --page {page_argument(page)}",
                                               run_on=run_on))
    return ExperimentResult(
        name=experiment.name, source=experiment.source, out_dir=str(directory), quick=context.quick, seed=seed,
        device=device_text, seconds=seconds, csv_files=tuple(str(directory / n) for n in csv_names),
        png_file=str(directory / png_name), summary_file=str(directory / summary_name),
        settings=dict(output.settings), findings=tuple(output.findings),
        page_file=None if page is None else str(page))
