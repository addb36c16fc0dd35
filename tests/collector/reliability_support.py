# SPDX-License-Identifier: Apache-2.0
"""The two-tier deployment of docs/reliability.md as real processes on 127.0.0.1, for the fault and
load tests: a stand-in trace backend (backend-file.yaml), tier 2 (tier2-identity.yaml) and tier 1
(tier1-loadbalancer.yaml, raw path to the backend and judging path to tier 2), the load generator
(loadgen.py) and a scraper that keeps the last value of every collector counter of every process
incarnation (so a SIGKILLed process's counters count as Prometheus' increase() counts them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import collector_support as cs

LOADGEN = Path(__file__).with_name("loadgen.py")
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> dict[tuple, float]:
    """Prometheus text format -> {(name, ((label, value), ...)): value}."""
    out: dict[tuple, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m:
            labels = tuple(sorted(_LABEL.findall(m.group(2) or "")))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def metric_sum(samples: dict[tuple, float], name: str, exclude: dict | None = None, **labels: str) -> float:
    """The samples of ``name`` with all of ``labels`` and none of the ``exclude`` label values."""
    return sum(
        v
        for (n, ls), v in samples.items()
        if n == name
        and all((k, want) in ls for k, want in labels.items())
        and not any(item in ls for item in (exclude or {}).items())
    )


def read_spans_tolerant(path: Path) -> list[cs.Span]:
    """cs.read_spans, skipping a line the file exporter is still writing (or was killed writing)."""
    if not path.exists():
        return []
    good = [line for line in path.read_text().splitlines() if _parses(line)]
    tmp = path.with_suffix(".complete")
    tmp.write_text("\n".join(good) + "\n")
    return cs.read_spans(tmp)


def _parses(line: str) -> bool:
    try:
        json.loads(line)
        return True
    except ValueError:
        return False


@dataclass
class Tier:
    """One collector role; ``incarnations`` are its processes in order (restarts append)."""

    incarnations: list = field(default_factory=list)
    last: list = field(default_factory=list)  # per incarnation: last scraped samples

    @property
    def current(self) -> cs.Collector:
        return self.incarnations[-1]

    def add(self, col: cs.Collector) -> None:
        self.incarnations.append(col)
        self.last.append({})

    def total(self, name: str, exclude: dict | None = None, **labels: str) -> float:
        """The counter summed over incarnations (each at its last scrape): what increase() sees."""
        return sum(metric_sum(samples, name, exclude, **labels) for samples in self.last)

    def scrape(self) -> None:
        text = self.current.metrics()
        if text:
            self.last[-1] = parse_metrics(text)


class Deployment:
    """backend + tier 2 + tier 1, started in that order; ``stop`` ends every process it started."""

    def __init__(
        self,
        workdir: Path,
        wait: str = "2s",
        tier1_env: dict | None = None,
        tier2_env: dict | None = None,
        start_backend: bool = True,
        start_tier2: bool = True,
        tier1_configs: tuple[str, ...] = (),
        tier2_configs: tuple[str, ...] = (),
    ) -> None:
        self.workdir, self.wait = workdir, wait
        self.backend, self.tier2, self.tier1 = Tier(), Tier(), Tier()
        self.tier1_env, self.tier2_env = tier1_env or {}, tier2_env or {}
        self.tier1_configs, self.tier2_configs = tier1_configs, tier2_configs
        self._stop = threading.Event()
        self._scraper: threading.Thread | None = None
        # Ports fixed up front so tier 1 can be started before its destinations exist.
        self.ports = {
            role: {
                "otlp_http": cs.free_port(),
                "otlp_grpc": cs.free_port(),
                "metrics_port": cs.free_port(),
                "health_port": cs.free_port(),
            }
            for role in ("backend", "tier2", "tier1")
        }
        if start_backend:
            self.start("backend")
        if start_tier2:
            self.start("tier2")
        self.start("tier1")

    def start(self, role: str) -> cs.Collector:
        tier: Tier = getattr(self, role)
        if tier.incarnations:
            col = cs.restart_collector(tier.current)
        elif role == "backend":
            col = cs.start_collector("backend-file.yaml", self.workdir, name="backend", ports=self.ports[role])
        elif role == "tier2":
            col = cs.start_collector(
                "tier2-identity.yaml",
                self.workdir,
                name="tier2",
                ports=self.ports[role],
                extra_configs=self.tier2_configs,
                GROUPBYTRACE_WAIT=self.wait,
                DRAIN_DELAY=f"{_seconds(self.wait) + 1}s",
                **self.tier2_env,
            )
        else:
            col = cs.start_collector(
                "tier1-loadbalancer.yaml",
                self.workdir,
                name="tier1",
                ports=self.ports[role],
                extra_configs=self.tier1_configs,
                TIER2_ENDPOINTS=f"[127.0.0.1:{self.ports['tier2']['otlp_grpc']}]",
                TRACE_BACKEND_ENDPOINT=f"127.0.0.1:{self.ports['backend']['otlp_grpc']}",
                **self.tier1_env,
            )
        tier.add(col)
        return col

    def scrape_in_background(self, every: float = 0.25) -> None:
        def loop() -> None:
            while not self._stop.wait(every):
                for tier in (self.tier1, self.tier2):
                    if tier.incarnations and tier.current.proc.poll() is None:
                        tier.scrape()

        self._scraper = threading.Thread(target=loop, daemon=True)
        self._scraper.start()

    def scrape_now(self) -> None:
        for tier in (self.tier1, self.tier2):
            if tier.incarnations and tier.current.proc.poll() is None:
                tier.scrape()

    def stop(self) -> None:
        self._stop.set()
        if self._scraper:
            self._scraper.join(timeout=5)
        for tier in (self.tier1, self.tier2, self.backend):
            for col in tier.incarnations:
                col.stop()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['tier1']['otlp_http']}"

    def backend_spans(self) -> list[cs.Span]:
        return read_spans_tolerant(self.workdir / "backend-spans.jsonl")

    def tier2_spans(self) -> list[cs.Span]:
        return read_spans_tolerant(self.workdir / "tier2-spans.jsonl")


def _seconds(duration: str) -> float:
    return float(duration.rstrip("s"))


def start_loadgen(
    endpoint: str,
    out: Path,
    *,
    traces: int = 0,
    rate: float = 20,
    rates: str = "",
    timeout: float = 30,
    payload_bytes: int = 0,
) -> subprocess.Popen:
    """loadgen.py in its own process; the SDK exporter retries for up to ``timeout`` seconds per batch."""
    args = [sys.executable, str(LOADGEN), "--endpoint", endpoint, "--out", str(out), "--rate", str(rate)]
    args += ["--rates", rates] if rates else ["--traces", str(traces)]
    args += ["--payload-bytes", str(payload_bytes)]
    env = dict(os.environ, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=str(timeout))
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_loadgen(proc: subprocess.Popen, out: Path, timeout: float = 180) -> dict:
    _, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    data = json.loads(out.read_text())
    data["stderr"] = err
    return data


def agent_requests(traces: int, per_request: int = 50) -> tuple[list[bytes], int]:
    """``traces`` agent-shaped traces (loadgen.one_trace, made by the SDK) as OTLP/protobuf export
    requests, one per service per ``per_request`` traces, as each service's SDK exporter would send
    them; returns the requests and the span count. Encoded once, so replaying them costs the
    sender almost nothing and the collector is the bottleneck."""
    import loadgen
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporters, tracers = {}, {}
    for svc in ("orchestrator", "specialist"):
        exporters[svc] = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": svc}))
        provider.add_span_processor(SimpleSpanProcessor(exporters[svc]))
        tracers[svc] = provider.get_tracer("loadgen")
    requests, spans = [], 0
    for start in range(0, traces, per_request):
        for i in range(start, min(start + per_request, traces)):
            loadgen.one_trace(tracers["orchestrator"], tracers["specialist"], f"conv-replay-{i}", [], [])
        for exp in exporters.values():
            batch = exp.get_finished_spans()
            exp.clear()
            spans += len(batch)
            requests.append(encode_spans(batch).SerializeToString())
    return requests, spans


def replay(endpoints: list[str], requests: list[bytes], timeout: float = 120) -> None:
    """POST each request to every endpoint in turn (OTLP/HTTP protobuf, one keep-alive connection
    each), so the collectors receive the same load side by side; a 503 (memory_limiter) is retried."""
    import http.client
    import time
    from urllib.parse import urlparse

    conns = [http.client.HTTPConnection(urlparse(e).hostname, urlparse(e).port, timeout=30) for e in endpoints]
    deadline = time.monotonic() + timeout
    try:
        for body in requests:
            for conn in conns:
                while True:
                    conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
                    resp = conn.getresponse()
                    resp.read()
                    if resp.status == 200:
                        break
                    assert resp.status == 503 and time.monotonic() < deadline, resp.status
                    time.sleep(0.1)
    finally:
        for conn in conns:
            conn.close()


def key_set(pairs) -> set[tuple[str, str]]:
    return {tuple(p) for p in pairs}


def span_keys(spans: list[cs.Span]) -> Counter:
    return Counter((s.trace_id, s.span_id) for s in spans)


def verdicts(spans: list[cs.Span]) -> Counter:
    """agent_identity.hop.result values marked on spans."""
    return Counter(
        s.attributes["agent_identity.hop.result"] for s in spans if "agent_identity.hop.result" in s.attributes
    )


def by_trace(keys) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for t, s in keys:
        out[t].add(s)
    return out


def ids_in_logs(workdir: Path, ids: list[str]) -> dict[str, list[str]]:
    """Conversation, execution and delegation ids (``ids``) found in the collector logs of ``workdir``."""
    found: dict[str, list[str]] = {}
    wanted = set(ids)
    token = re.compile(r"conv-[0-9a-f]+-[0-9]+|[0-9a-f]{32}")
    for log in workdir.glob("*.log"):
        hits = sorted(set(token.findall(log.read_text(errors="replace"))) & wanted)
        if hits:
            found[log.name] = hits[:5]
    return found
