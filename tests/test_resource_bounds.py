"""Issue 32 B: memory, time and processes with bounds (catalog sizes, listings, set-up)."""

from __future__ import annotations

import itertools
import os
import tracemalloc

import numpy as np
import pytest

from estimators.validation import InputError
from mechanisms.catalog import get_entry
from mechanisms.catalog.parameters import MAX_INTEGER_PARAMETER
from mechanisms.catalog.sparse_vector_exposure import (ABOVE, BELOW, NOT_ANSWERED, indicator_patterns,
                                                       pattern_count, pattern_log_probabilities)


def _brute_force_patterns(queries, cutoff):
    """Every ⊤/⊥ string, cut at the cutoff-th ⊤ (later queries not answered), deduplicated."""
    out = set()
    for bits in itertools.product((BELOW, ABOVE), repeat=queries):
        tops, pattern = 0, []
        for bit in bits:
            if cutoff is not None and tops >= cutoff:
                pattern.append(NOT_ANSWERED)
            else:
                pattern.append(bit)
                tops += bit
        out.add(tuple(pattern))
    return sorted(out)


@pytest.mark.parametrize("queries", range(1, 9))
@pytest.mark.parametrize("cutoff", [None, 1, 2, 3, 8])
def test_pattern_count_and_listing_match_brute_force(queries, cutoff):
    expected = _brute_force_patterns(queries, cutoff)
    assert pattern_count(queries, cutoff) == len(expected)
    assert indicator_patterns(queries, cutoff) == expected


def test_pattern_log_probabilities_one_draw_matches_the_pattern_loop():
    # The one-threshold-draw path multiplies pattern matrices; check it against the per-pattern
    # sum of the same log terms, written out here, and that the probabilities sum to 1.
    from mechanisms.catalog.exposure import integration_grid, laplace_log_cdf, laplace_log_pdf, laplace_log_sf
    from scipy.special import logsumexp

    answers, threshold, rho, nu = np.array([0.3, 1.2, -0.5, 0.9]), 1.0, 2.0, 4.0
    patterns = indicator_patterns(4, 2)
    got = pattern_log_probabilities(answers, patterns, threshold, rho, nu)
    r, log_w = integration_grid(answers - threshold, max(rho, nu))
    gap = threshold + r[None, :] - answers[:, None]
    expected = []
    for pattern in patterns:
        log_f = laplace_log_pdf(r, rho).copy()
        for i, s in enumerate(pattern):
            if s == ABOVE:
                log_f += laplace_log_sf(gap[i], nu)
            elif s == BELOW:
                log_f += laplace_log_cdf(gap[i], nu)
        expected.append(logsumexp(log_f + log_w))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert np.exp(got).sum() == pytest.approx(1.0, abs=1e-4)  # the trapezoid grid: ~1e-5


@pytest.mark.parametrize("spec, parameter", [
    ("svt4?queries=1000000000", "queries"),
    ("histogram?bins=1000000", "bins"),
    ("laplace_sum?attributes=1000000", "attributes"),
    ("bloom_one_time_rappor?filter_size=1000000", "filter_size"),
    ("laplace_sum?records=99999999999999999999", "records"),
])
def test_catalog_size_parameters_are_bounded(spec, parameter):
    with pytest.raises(InputError, match=rf"parameter '{parameter}' of catalog:\w+ must be at most "
                                         rf"{MAX_INTEGER_PARAMETER}"):
        get_entry(spec)


def test_listing_an_entry_at_the_largest_size_is_cheap_in_memory():
    # Issue 32 B1: svt4?queries=1000 took 2.1 GB to list (every 2^q pattern string was written out).
    tracemalloc.start()
    try:
        entry = get_entry(f"svt4?queries={MAX_INTEGER_PARAMETER}")
        summary = entry.to_dict()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert summary["exposing_pair_epsilon"] is None  # too many output patterns: not computed
    assert peak < 50 * 2**20, peak


def test_ray_address_where_nothing_listens_is_one_line_not_minutes_of_retries():
    import socket

    from mechanisms.execution.backends import check_ray_address

    with socket.socket() as closed:  # a port that was free a moment ago: nothing listens there
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(InputError, match=rf"argument 'ray_address' \(--ray-address\): no Ray cluster at "
                                         rf"127.0.0.1:{port} accepted a connection"):
        check_ray_address(f"127.0.0.1:{port}", timeout=2.0)
    with pytest.raises(InputError, match="must be HOST:PORT"):
        check_ray_address("nowhere")
    check_ray_address("auto")


def _server(answer: bytes | None):
    """A TCP server on a free local port answering each connection with ``answer`` (None: silence, held open)."""
    import socket
    import threading

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    held = []

    def serve():
        while True:
            try:
                connection, _ = listening.accept()
            except OSError:
                return
            held.append(connection)
            if answer is not None:
                connection.recv(64)
                connection.sendall(answer)
                connection.close()

    threading.Thread(target=serve, daemon=True).start()
    return listening


@pytest.mark.parametrize("answer,why", [(None, "within 1.5 s"),
                                        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "\\(its answer is not HTTP/2\\)"),
                                        (b"", "\\(it closed the connection\\)")])
def test_a_port_that_accepts_but_is_not_ray_is_one_line_within_the_limit(answer, why):
    import time

    from mechanisms.execution.backends import check_ray_address

    with _server(answer) as server:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(InputError, match=rf"argument 'ray_address' \(--ray-address\): {address} is not a Ray "
                                             rf"cluster: it accepted a connection but did not answer as a gRPC server {why}"):
            check_ray_address(address, timeout=1.5)
        assert time.monotonic() - started < 5
    # A gRPC server's first frame is SETTINGS (RFC 9113 section 3.4: length 0, type 4, flags 0, stream 0): accepted.
    with _server(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])) as server:
        check_ray_address(f"ray://127.0.0.1:{server.getsockname()[1]}", timeout=1.5)


def test_joining_a_ray_cluster_is_bounded_in_time(monkeypatch):
    # ray.init itself retries a cluster that answers but never completes the handshake for minutes.
    import sys
    import threading
    import time
    import types

    from mechanisms.execution import backends

    blocked = threading.Event()
    fake_ray = types.SimpleNamespace(init=lambda **options: blocked.wait(), is_initialized=lambda: False)
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    monkeypatch.setattr(backends, "RAY_INIT_TIMEOUT", 0.5)
    monkeypatch.setattr(backends, "check_ray_address", lambda address: None)
    started = time.monotonic()
    with pytest.raises(InputError, match=r"argument 'ray_address' \(--ray-address\): could not join the Ray "
                                         r"cluster at 127.0.0.1:6379 within 0.5 s"):
        backends.RayBackend(backends.MechanismReference("m", source="catalog:laplace_sum"), "127.0.0.1:6379", None)
    assert time.monotonic() - started < 3
    blocked.set()


def test_sys_exit_at_import_is_one_error_naming_the_file(tmp_path):
    # It ended the audit silently with the file's status (5).
    from mechanisms.adapters.loading import load_object

    (tmp_path / "quits.py").write_text("import sys\nsys.exit(5)\n")
    with pytest.raises(InputError, match=r"--mechanism '.*quits.py:mech': executing '.*quits.py' called "
                                         r"sys.exit\(5\)"):
        load_object(f"{tmp_path / 'quits.py'}:mech", "--mechanism")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_config_path_that_is_a_pipe_or_device_or_huge_is_refused(tmp_path):
    from audit.config.files import MAX_CONFIG_BYTES, load_config

    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)  # opening it would block until a writer comes
    with pytest.raises(InputError, match=r"is not a regular file \(a pipe or device\?\)"):
        load_config(fifo)
    with pytest.raises(InputError, match=r"is not a regular file"):
        load_config("/dev/zero")  # never ends
    big = tmp_path / "big.toml"
    big.write_text("# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    with pytest.raises(InputError, match=r"is larger than 1 MiB"):
        load_config(big)
    small = tmp_path / "ok.toml"
    small.write_text('[mechanism]\nspec = "catalog:laplace_sum"\n')
    assert load_config(small)["mechanism"] == {"spec": "catalog:laplace_sum"}


def test_free_cores_counts_the_idle_share_of_this_process_cpus(monkeypatch):
    # Issue 30 item 4: torch's threads are cut to the cores other processes leave idle.
    from estimators import device

    allowed = {0, 1, 2, 3}
    monkeypatch.setattr(device.os, "sched_getaffinity", lambda pid: allowed)
    monkeypatch.setattr(device.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(device, "_own_ticks", lambda: 0.0)
    monkeypatch.setitem(device._FREE_CORES, "watch", None)  # no window a fit started: each call watches its own
    for idle_share, expected in ((1.0, 4), (0.5, 2), (0.3, 1), (0.0, 1), (0.8, 3)):
        readings = iter([(0.0, 0.0), (idle_share * 400.0, 400.0)])  # (idle, total) jiffies before, after
        monkeypatch.setattr(device, "_cpu_times", lambda cpus: next(readings))
        assert device.free_cores(refresh=True) == expected, idle_share
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert device.free_threads(8) == 3  # the last reading (0.8 of 4 cores), reused
    assert device.free_threads(2) == 2  # never more than torch's own setting
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert device.free_threads(4) == 4  # the user's explicit choice is kept
    # this process's own busy threads (100 of the 400 ticks) are not another process's load
    own = iter([0.0, 100.0])
    monkeypatch.setattr(device, "_own_ticks", lambda: next(own))
    readings = iter([(0.0, 0.0), (0.3 * 400.0, 400.0)])
    monkeypatch.setattr(device, "_cpu_times", lambda cpus: next(readings))
    assert device.free_cores(refresh=True) == 2  # round(4 x (120 + 100) / 400) = round(2.2)


def test_free_cores_reads_the_window_a_fit_started_and_pauses_only_for_what_it_lacks(monkeypatch):
    # The thread choice paused 0.1 s in every fit; a window started before the fit's projections is read instead.
    from estimators import device

    allowed = {0, 1}
    clock, slept = [100.0], []
    monkeypatch.setattr(device.os, "sched_getaffinity", lambda pid: allowed)
    monkeypatch.setattr(device.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(device.time, "sleep", lambda seconds: (slept.append(seconds), clock.__setitem__(0, clock[0] + seconds)))
    monkeypatch.setattr(device, "_own_ticks", lambda: 0.0)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for key in ("watch", "at", "cores"):  # this test's answers are not left for later tests to reuse
        monkeypatch.setitem(device._FREE_CORES, key, device._FREE_CORES[key])
    device._FREE_CORES["watch"] = None

    def readings(*pairs):
        values = iter(pairs)
        monkeypatch.setattr(device, "_cpu_times", lambda cpus: next(values))

    # Started 0.03 s before the choice: it pauses the 0.07 s the window lacks; the answer is the window's share.
    readings((0.0, 0.0), (100.0, 200.0))
    device.watch_cores()
    clock[0] += 0.03
    assert device.free_cores(refresh=True) == 1  # round(2 x 100 / 200)
    assert slept == [pytest.approx(device.IDLE_WINDOW - 0.03)]
    # Started 0.5 s before: no pause at all; a second watch_cores while one runs keeps the earlier start.
    slept.clear()
    readings((0.0, 0.0), (180.0, 200.0))
    device.watch_cores()
    clock[0] += 0.2
    device.watch_cores()  # kept: reads nothing
    clock[0] += 0.3
    assert device.free_cores(refresh=True) == 2 and slept == []  # round(2 x 180 / 200) = round(1.8)
    # The window is read once: the next choice watches a fresh one for the whole IDLE_WINDOW.
    readings((0.0, 0.0), (20.0, 200.0))
    assert device.free_cores(refresh=True) == 1 and slept == [device.IDLE_WINDOW]
    # A window older than IDLE_REUSE is not read (a fresh one is), nor one started on other CPUs.
    slept.clear()
    readings((0.0, 0.0), (0.0, 0.0), (200.0, 200.0))
    device.watch_cores()
    clock[0] += device.IDLE_REUSE + 1
    assert device.free_cores(refresh=True) == 2 and slept == [device.IDLE_WINDOW]
    slept.clear()
    readings((0.0, 0.0), (0.0, 0.0), (200.0, 200.0))
    device.watch_cores()
    allowed = {0, 1, 2}
    monkeypatch.setattr(device.os, "sched_getaffinity", lambda pid: allowed)
    clock[0] += 1.0
    assert device.free_cores(refresh=True) == 3 and slept == [device.IDLE_WINDOW]
    # Where the user set OMP_NUM_THREADS no window is watched (free_threads keeps the user's choice).
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setattr(device, "_cpu_times", lambda cpus: pytest.fail("read /proc/stat"))
    device.watch_cores()
    assert device._FREE_CORES["watch"] is None


def test_cpu_times_reads_only_this_process_cpus(tmp_path, monkeypatch):
    import builtins
    import io

    from estimators import device

    stat = ("cpu  10 0 10 100 0 0 0 0 0 0\n"
            "cpu0 1 0 1 50 2 0 0 0 0 0\n"
            "cpu1 9 0 9 50 0 0 0 1 0 0\n"
            "intr 5\n")
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda path, *a, **k: io.StringIO(stat) if path == "/proc/stat"
                        else real_open(path, *a, **k))
    assert device._cpu_times({0}) == (52.0, 54.0)  # idle + iowait, all eight fields
    assert device._cpu_times(None) == (52.0 + 50.0, 54.0 + 69.0)
