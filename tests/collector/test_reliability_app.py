# SPDX-License-Identifier: Apache-2.0
"""The application side when telemetry is down (docs/reliability.md): an Agent Framework app under
``opentelemetry-instrument`` (our instrumentation, the SDK's BatchSpanProcessor and OTLP/HTTP
exporter) does 10,000 agent runs while its collector endpoint refuses connections, while it is a
black hole (accepts, reads, never answers), and with ``OTEL_SDK_DISABLED=true``. Every run returns
its reply with no exception; no run waits on the exporter (every export runs on the SDK's worker
thread, never on the app's); memory stays flat (the SDK's queue is bounded: it drops, it does not
grow); the exit waits at most the SDK's shutdown timeout (30 s) and one export timeout. Timings
(slowest run, shutdown) are reported, in docs/reliability.md, not asserted."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from a2a_harness import free_port

pytestmark = [pytest.mark.e2e]

APP = Path(__file__).with_name("app_runs.py")
LAUNCHER = Path(sys.executable).with_name("opentelemetry-instrument")
RUNS = 10_000
EXPORT_TIMEOUT = 5  # seconds, OTEL_EXPORTER_OTLP_TIMEOUT
RSS_GROWTH_MIB = 25  # from 20 % of the runs to the end
SDK_SHUTDOWN_TIMEOUT = 30  # seconds: BatchSpanProcessor.shutdown's bound


class BlackHole:
    """A TCP listener on 127.0.0.1 that accepts and reads everything and never answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    @staticmethod
    def _drain(conn: socket.socket) -> None:
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass

    def close(self) -> None:
        self.stopped.set()
        self.sock.close()
        for conn in self.conns:
            conn.close()


def _start(endpoint: str, **env: str) -> subprocess.Popen:
    full_env = dict(
        os.environ,
        OTEL_SERVICE_NAME="weather-app",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_TIMEOUT=str(EXPORT_TIMEOUT),
        **env,
    )
    return subprocess.Popen(
        [str(LAUNCHER), sys.executable, str(APP), "--runs", str(RUNS)],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_ten_thousand_runs_with_telemetry_down():
    hole = BlackHole()
    try:
        procs = {
            "refused": _start(f"http://127.0.0.1:{free_port()}"),  # nothing listens there
            "black_hole": _start(f"http://127.0.0.1:{hole.port}"),
            "sdk_disabled": _start(f"http://127.0.0.1:{hole.port}", OTEL_SDK_DISABLED="true"),
        }
        results = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=900)
            assert proc.returncode == 0, f"{name}: {err[-3000:]}"
            results[name] = json.loads(out.strip().splitlines()[-1])
    finally:
        hole.close()
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    print(json.dumps(results, indent=1))
    for name, r in results.items():
        assert r["runs"] == RUNS and r["error_count"] == 0, (name, r["errors"])
        assert r["exports_on_app_thread"] == 0, (name, r)
        assert r["rss_end_mib"] - r["rss_early_mib"] < RSS_GROWTH_MIB, (name, r)
    # The instrumentation ran (agent, chat and tool spans ended) where the SDK is on, not where it is off.
    # The exporter was tried (and failed) all along.
    for name in ("refused", "black_hole"):
        r = results[name]
        assert r["spans_ended"] >= 3 * RUNS and r["exports_on_other_threads"] > 0, (name, r)
        assert r["shutdown_s"] < SDK_SHUTDOWN_TIMEOUT + EXPORT_TIMEOUT, (name, r)
    assert results["sdk_disabled"]["spans_ended"] == 0 and results["sdk_disabled"]["exports_on_other_threads"] == 0
