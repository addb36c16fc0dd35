# SPDX-License-Identifier: Apache-2.0
"""Helpers of the collector end-to-end tests: the built collector, the sender
processes (sender.py), the file exporter's output and a real Prometheus, all on
127.0.0.1 with free ports and per-test directories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from a2a_harness import Span, free_port, read_spans  # noqa: F401 - shared with the demo

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "collector-config"
SENDER = Path(__file__).with_name("sender.py")
COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR", "")


def wait_for(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns a truthy value; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def http_get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.read().decode()
    except OSError:
        return None


@dataclass
class Process:
    """A server process we started; ``stop`` ends exactly it."""

    proc: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        """SIGKILL: no shutdown, nothing flushed."""
        self.proc.kill()
        self.proc.wait()

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.proc.args[0]} exited: {self.log.read_text()[-3000:]}")


@dataclass
class Collector(Process):
    metrics_port: int = 0
    spans_file: Path = field(default_factory=Path)
    otlp_http: int = 0
    otlp_grpc: int = 0
    health_port: int = 0
    judge_grpc: int = 0  # tier2-identity.yaml's loopback door of its judging pipeline
    start_args: dict = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.otlp_http}"

    def metrics(self) -> str:
        return http_get(f"http://127.0.0.1:{self.metrics_port}/metrics") or ""


def start_collector(
    config: str,
    workdir: Path,
    name: str = "collector",
    ports: dict | None = None,
    extra_configs: tuple[str, ...] = (),
    **env: str | None,
) -> Collector:
    """Start the collector with ``collector-config/<config>`` (then each of ``extra_configs``, merged
    over it) on free loopback ports, or on ``ports`` (a restart: ``restart_collector``);
    ``env`` overrides its environment (e.g. ``GROUPBYTRACE_WAIT``, default 1s; a value of None
    drops the variable: the shipped default applies). Returns once its
    pipelines run (health_check answers 200, where the config has one; else its telemetry
    endpoint). A free port taken by another process before the collector bound it: started again
    on new ports (at most 3 times)."""
    for attempt in range(3):
        try:
            return _start_collector(config, workdir, name, ports, extra_configs, env)
        except PortTaken:
            if ports is not None or attempt == 2:
                raise
    raise AssertionError("unreachable")


class PortTaken(RuntimeError):
    """The collector exited at start: a port chosen for it was taken in between."""


def _start_collector(config, workdir, name, ports, extra_configs, env) -> Collector:
    workdir.mkdir(parents=True, exist_ok=True)
    ports = dict(
        ports
        or {"otlp_http": free_port(), "otlp_grpc": free_port(), "metrics_port": free_port(), "health_port": free_port()}
    )
    ports.setdefault("judge_grpc", free_port())
    spans_file, log = workdir / f"{name}-spans.jsonl", workdir / f"{name}.log"
    full_env = dict(
        os.environ,
        HEALTH_CHECK_ENDPOINT=f"127.0.0.1:{ports['health_port']}",
        AGENT_IDENTITY_QUEUE_DIR=str(workdir / f"{name}-queue"),
        TRACE_BACKEND_ENDPOINT="127.0.0.1:9",  # tier 1's raw path: nothing listens unless a test sets one
        OTLP_HTTP_ENDPOINT=f"127.0.0.1:{ports['otlp_http']}",
        OTLP_GRPC_ENDPOINT=f"127.0.0.1:{ports['otlp_grpc']}",
        JUDGE_ENDPOINT=f"127.0.0.1:{ports['judge_grpc']}",
        AGENT_IDENTITY_METRICS_HOST="127.0.0.1",
        AGENT_IDENTITY_METRICS_PORT=str(ports["metrics_port"]),
        AGENT_IDENTITY_SPANS_FILE=str(spans_file),
        GROUPBYTRACE_WAIT="1s",
    )
    full_env.update({k: v for k, v in env.items() if v is not None})
    for key in [k for k, v in env.items() if v is None]:  # None: the shipped config's default
        full_env.pop(key, None)
    args = [COLLECTOR]
    for path in (config, *extra_configs):
        args += ["--config", str(CONFIGS / path)]
    has_health = any("health_check" in (CONFIGS / path).read_text() for path in (config, *extra_configs))
    with open(log, "ab") as out:  # appended across restarts
        proc = subprocess.Popen(args, env=full_env, stdout=out, stderr=subprocess.STDOUT)
    col = Collector(
        proc,
        log,
        spans_file=spans_file,
        **ports,
        start_args=dict(config=config, workdir=workdir, name=name, extra_configs=extra_configs, **env),
    )
    try:

        def ready() -> bool:
            col.check_alive()
            if has_health:  # the telemetry endpoint is up before the receivers
                return http_get(f"http://127.0.0.1:{col.health_port}/") is not None
            return bool(col.metrics())

        wait_for(ready, 60, f"{name} pipelines running")
    except Exception as exc:
        col.stop()
        if "address already in use" in log.read_text(errors="replace"):
            raise PortTaken(str(exc)) from exc
        raise
    return col


def restart_collector(col: Collector) -> Collector:
    """Start ``col``'s collector again with the same config, ports, files and queue directory."""
    ports = {k: getattr(col, k) for k in ("otlp_http", "otlp_grpc", "metrics_port", "health_port", "judge_grpc")}
    return start_collector(ports=ports, **col.start_args)


def start_topology(topology: str, workdir: Path, **env: str | None) -> tuple[list[Collector], list[Collector], str]:
    """The shipped collector topology ``"single-node"`` (single-node.yaml) or ``"two-tier"``
    (tier1-loadbalancer.yaml routing by trace id to two tier2-identity.yaml instances); ``env``:
    the judging collectors' environment (as for :func:`start_collector`). Returns ``(every
    collector, those that judge, the apps' OTLP endpoint)``; stop them in reverse order."""
    if topology == "single-node":
        col = start_collector("single-node.yaml", workdir, **env)
        return [col], [col], col.endpoint
    tier2 = [start_collector("tier2-identity.yaml", workdir, name=n, **env) for n in ("t2a", "t2b")]
    endpoints = ", ".join(f"127.0.0.1:{c.otlp_grpc}" for c in tier2)
    tier1 = start_collector("tier1-loadbalancer.yaml", workdir, name="tier1", TIER2_ENDPOINTS=f"[{endpoints}]")
    return [*tier2, tier1], tier2, tier1.endpoint


def send_trace(endpoint: str, **options: Any) -> str:
    """Run sender.py as the caller process (it starts the callee process); return the trace id."""
    args = [sys.executable, str(SENDER), "caller", "--endpoint", endpoint]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=60)
    return out.stdout.strip().splitlines()[-1]


def prometheus_missing() -> str:
    if shutil.which("prometheus") is None:
        return "prometheus is not installed (make system-deps: apt-get install prometheus)"
    return ""


@dataclass
class Prometheus(Process):
    port: int = 0

    def query(self, expr: str) -> list[dict]:
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        body = http_get(url)
        if not body:
            return []
        data = json.loads(body)
        return data["data"]["result"] if data.get("status") == "success" else []


def start_prometheus(
    workdir: Path, targets: list[str], rule_files: tuple[str, ...] = ("agent-identity",)
) -> Prometheus:
    """A private Prometheus (own config, data dir and free port) scraping ``targets`` every second,
    evaluating ``collector-config/alerts/<name>.rules.yaml`` for each of ``rule_files``."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(
        json.dumps(
            {  # JSON is YAML
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(CONFIGS / "alerts" / f"{name}.rules.yaml") for name in rule_files],
                "scrape_configs": [{"job_name": "otelcol", "static_configs": [{"targets": targets}]}],
            }
        )
    )
    port, log = free_port(), workdir / "prometheus.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    prom = Prometheus(proc, log, port=port)
    try:

        def ready() -> bool:
            prom.check_alive()
            return http_get(f"http://127.0.0.1:{port}/-/ready") is not None

        wait_for(ready, 30, "prometheus ready")
    except Exception:
        prom.stop()
        raise
    return prom
