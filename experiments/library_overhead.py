"""Study ``library-overhead``: what miaudit's wrapping costs per database for each mechanism route.

Every route releases the same query — the sum of n = 10 records in [0, 1] plus Laplace noise of
scale 1 — on batches of m databases:

- ``numpy batched``: a batched callable ``mech(dbs, rng)`` (the native protocol; no adapter);
- ``opendp``: an OpenDP measurement (sum >> Laplace) recognized by
  :func:`mechanisms.adapters.recognition.recognize_mechanism`; the raw cost is calling the measurement
  on each database's list directly;
- ``diffprivlib``: a diffprivlib ``Laplace`` object (one seeded copy per batch); the raw cost is
  ``randomise`` on each precomputed sum; ``diffprivlib per-database build`` builds a new
  mechanism per database, for comparison;
- ``external awk (text)``: an awk program speaking the text wire format, started once per batch;
  the raw cost is the same program on the same bytes through :func:`subprocess.run`.

Overhead per database = (wrapped seconds − raw seconds) / m, the median of repeated timings.
Optional libraries that do not import are recorded as ``not installed``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from mechanisms.adapters.callables import _encode_text
from mechanisms.base import sample_mechanism
from mechanisms.adapters.recognition import load_mechanism, recognize_mechanism

from .framework import Experiment, ExperimentOutput, Table, new_figure

N_RECORDS = 10
SCALE = 1.0
AWK_LAPLACE = r"""BEGIN { srand(ENVIRON["MIAUDIT_SEED"] + 0) }
NR == 1 { next }
{ s = 0; for (i = 1; i <= NF; i++) s += $i
  do u = rand(); while (u == 0)
  u -= 0.5
  printf "%.17g\n", (u < 0) ? s + SCALE * log(1 + 2 * u) : s - SCALE * log(1 - 2 * u) }
"""


def _median_seconds(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def _numpy_route():
    def mech(dbs, rng):
        return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, SCALE, (dbs.shape[0], 1))
    return mech, None


def _opendp_route():
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=N_RECORDS), dp.symmetric_distance()
    measurement = space >> dp.t.then_sum() >> dp.m.then_laplace(SCALE)

    def raw(dbs):
        for db in dbs:
            measurement(db[:, 0].tolist())
    return recognize_mechanism(measurement, "opendp laplace").mechanism, raw


def _diffprivlib_routes():
    try:
        from diffprivlib.mechanisms import Laplace
    except ImportError:
        return None
    laplace = Laplace(epsilon=1.0 / SCALE, sensitivity=1.0)
    wrapped = recognize_mechanism(laplace, "diffprivlib laplace").mechanism

    def raw(dbs):
        for value in dbs.sum(axis=(1, 2)):
            laplace.randomise(float(value))

    def per_database_build(dbs, rng):
        out = []
        for value in dbs.sum(axis=(1, 2)):
            mechanism = Laplace(epsilon=1.0 / SCALE, sensitivity=1.0, random_state=int(rng.integers(2**32 - 1)))
            out.append([mechanism.randomise(float(value))])
        return np.array(out)
    return (wrapped, raw), (per_database_build, raw)


def _awk_route(folder: Path):
    awk = shutil.which("awk")
    if awk is None:
        return None
    script = folder / "laplace.awk"
    script.write_text(AWK_LAPLACE.replace("SCALE", repr(SCALE)))
    command = f"{awk} -f {script}"
    wrapped = load_mechanism({"command": command, "timeout": 120}).mechanism

    def raw(dbs):
        subprocess.run([awk, "-f", str(script)], input=_encode_text(dbs), capture_output=True, check=True,
                       env={"MIAUDIT_SEED": "1"})
    return wrapped, raw


def measure(sizes, repeats: int, seed: int) -> list:
    """One row per (route, m): wrapped and raw seconds per database."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        diffprivlib = _diffprivlib_routes()
        routes = {
            "numpy batched": _numpy_route(),
            "opendp": _opendp_route(),
            "diffprivlib": None if diffprivlib is None else diffprivlib[0],
            "diffprivlib per-database build": None if diffprivlib is None else diffprivlib[1],
            "external awk (text)": _awk_route(Path(folder)),
        }
        for route, found in routes.items():
            for m in sizes:
                dbs = np.random.default_rng([seed, m]).random((m, N_RECORDS, 1))
                if found is None:
                    rows.append({"route": route, "databases": m, "status": "not installed",
                                 "seconds_per_database": float("nan"), "raw_seconds_per_database": float("nan"),
                                 "overhead_microseconds_per_database": float("nan")})
                    continue
                mechanism, raw = found
                rng = np.random.default_rng(seed)
                wrapped = _median_seconds(lambda: sample_mechanism(mechanism, dbs, rng), repeats) / m
                bare = float("nan") if raw is None else _median_seconds(lambda: raw(dbs), repeats) / m
                rows.append({"route": route, "databases": m, "status": "ok", "seconds_per_database": wrapped,
                             "raw_seconds_per_database": bare,
                             "overhead_microseconds_per_database": (wrapped - bare) * 1e6 if raw else float("nan")})
    return rows


def _findings(rows) -> list:
    largest = max(row["databases"] for row in rows)
    findings = []
    for row in rows:
        if row["databases"] != largest:
            continue
        if row["status"] != "ok":
            findings.append(f"`{row['route']}`: not installed, not measured.")
            continue
        text = f"`{row['route']}` at m = {largest}: {row['seconds_per_database'] * 1e6:.1f} µs per database"
        if np.isfinite(row["raw_seconds_per_database"]):
            text += (f" ({row['raw_seconds_per_database'] * 1e6:.1f} µs calling the library directly; "
                     f"overhead {row['overhead_microseconds_per_database']:.1f} µs)")
        findings.append(text + ".")
    return findings


def run(context) -> ExperimentOutput:
    sizes = (100, 1000) if context.quick else (100, 1000, 10000)
    repeats = 3 if context.quick else 5
    rows = measure(sizes, repeats, context.seed)
    table = Table("library_overhead", {key: [row[key] for row in rows] for key in rows[0]})
    figure, axes = new_figure()
    ax = axes[0, 0]
    for index, route in enumerate(dict.fromkeys(row["route"] for row in rows)):
        ok = [row for row in rows if row["route"] == route and row["status"] == "ok"]
        if ok:
            ax.loglog([row["databases"] for row in ok], [row["seconds_per_database"] * 1e6 for row in ok], "o-",
                      color=f"C{index}", label=route)
    ax.set_xlabel("databases per batch m")
    ax.set_ylabel("µs per database (wrapped)")
    ax.set_title(f"sum of {N_RECORDS} records + Laplace({SCALE:g}), per route")
    ax.legend(fontsize=8)
    settings = {"records per database": N_RECORDS, "batch sizes": list(sizes), "repeats (median)": repeats,
                "timed": "sample_mechanism on the wrapped mechanism vs the library called directly"}
    return ExperimentOutput([table], figure, settings, _findings(rows))


EXPERIMENTS = [Experiment(
    name="library-overhead",
    description="µs per database of each mechanism route (numpy, OpenDP, diffprivlib, awk program) and the adapter's share",
    source="study (issue 14)",
    run=run,
    full_runtime="75 s on the 2-core x86_64 CPU under load (load average about 14), diffprivlib 0.6.6 installed",
)]
