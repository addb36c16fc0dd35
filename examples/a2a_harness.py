"""Processes of the A2A demo and e2e tests, all on 127.0.0.1: the collector (single-node config),
specialists and the orchestrator under ``opentelemetry-instrument``, and readers of what the
collector wrote (file exporter spans, Prometheus metrics). Used by ``demo.py`` and ``tests/a2a``.
"""

from __future__ import annotations

import asyncio
import http.client
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
COLLECTOR_CONFIG = ROOT / "collector-config" / "single-node.yaml"
LAUNCHER = Path(sys.executable).with_name("opentelemetry-instrument")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def serving_in_loop(build: Callable[[str], object], timeout: float = 30.0) -> AsyncIterator[str]:
    """Serve the ASGI app ``build(url)`` (uvicorn, no lifespan) on a free 127.0.0.1 port in the
    running event loop, for tests that read the server's spans and metrics in their own process;
    yields its URL and stops it on exit. Raises TimeoutError when it does not start in ``timeout`` s."""
    import uvicorn

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    config = uvicorn.Config(build(url), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if task.done():
                task.result()
            if time.monotonic() > deadline:
                raise TimeoutError(f"uvicorn did not start on {url}")
            await asyncio.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        await task


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    """Wait until 127.0.0.1:``port`` accepts connections. Raises RuntimeError on exit or timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


@dataclass
class Collector:
    """A running ``otelcol-agentidentity`` with the single-node config on free ports."""

    proc: subprocess.Popen
    otlp_http: int
    metrics_port: int
    spans_file: Path
    log: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.otlp_http}"

    def stop(self) -> None:
        stop(self.proc)


def start_collector(
    binary: str | Path, workdir: Path, groupbytrace_wait: str = "3s", overlays: tuple[Path, ...] = ()
) -> Collector:
    """Start the collector; its spans go to ``workdir/spans.jsonl``. ``overlays``: config files
    merged over the single-node config, in order. Raises RuntimeError if it fails."""
    otlp_http, otlp_grpc, metrics, health = free_port(), free_port(), free_port(), free_port()
    spans_file, log = workdir / "spans.jsonl", workdir / "collector.log"
    env = dict(
        os.environ,
        OTLP_HTTP_ENDPOINT=f"127.0.0.1:{otlp_http}",
        OTLP_GRPC_ENDPOINT=f"127.0.0.1:{otlp_grpc}",
        AGENT_IDENTITY_METRICS_HOST="127.0.0.1",
        AGENT_IDENTITY_METRICS_PORT=str(metrics),
        AGENT_IDENTITY_SPANS_FILE=str(spans_file),
        GROUPBYTRACE_WAIT=groupbytrace_wait,
        COLLECTOR_LOG_LEVEL="warn",
        HEALTH_CHECK_ENDPOINT=f"127.0.0.1:{health}",  # the default port is fixed: never clash with another collector
    )
    with open(log, "wb") as out:
        configs = [arg for path in (COLLECTOR_CONFIG, *overlays) for arg in ("--config", str(path))]
        proc = subprocess.Popen([str(binary), *configs], env=env, stdout=out, stderr=subprocess.STDOUT)
    collector = Collector(proc, otlp_http, metrics, spans_file, log)
    try:
        wait_port(otlp_http, proc)
        wait_port(metrics, proc)
    except RuntimeError as exc:
        collector.stop()
        raise RuntimeError(f"{exc}; collector log:\n{log.read_text()[-2000:]}") from exc
    return collector


def otel_env(service: str, endpoint: str | None, **extra: str | None) -> dict[str, str]:
    """Environment of an instrumented process: OTLP/HTTP to ``endpoint`` (None: console exporter);
    an ``extra`` value of None drops that variable (e.g. ``OTEL_BSP_SCHEDULE_DELAY=None``: the
    SDK's default 5 s batch delay instead of the tests' 100 ms).

    a2a-sdk's own per-method spans are off (``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false``) so traces
    read as agent -> hop -> agent; pass ``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED="true"`` to keep them.
    So is the Starlette (ASGI) server tracing the test extra installs: our A2A SERVER span is the
    callee's entry span; pass ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=None`` to put the HTTP SERVER
    span above it.
    """
    env = dict(
        os.environ,
        OTEL_SERVICE_NAME=service,
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_BSP_SCHEDULE_DELAY="100",
        PYTHONUNBUFFERED="1",
        OTEL_INSTRUMENTATION_A2A_SDK_ENABLED="false",
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="starlette",
    )
    if endpoint:
        env.update(
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        )
    else:
        env.update(OTEL_TRACES_EXPORTER="console")
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def start_specialist(
    service: str,
    endpoint: str | None,
    shape: str = "a2a-executor",
    truth: Path | None = None,
    stream: bool = False,
    forgetful: bool = False,
    db: Path | None = None,
    **extra: str | None,
):
    """Start ``specialist.py --shape shape`` under the launcher; returns ``(process, url)`` once it
    is ready. ``truth``: the file its model appends the messages it saw per request to; ``db``: the
    SQLite file of an Agno shape (replicas share one).
    ``forgetful=True`` (older callers) is ``shape="new-session"``.

    Its stdout is a pipe (the console exporter, when ``endpoint`` is None); its stderr goes to the
    file ``process.log_path`` (a pipe nobody reads could fill up and stall the server).
    """
    args = ["--shape", "new-session" if forgetful else shape]
    if truth is not None:
        args += ["--truth", str(truth)]
    if stream:
        args.append("--stream")
    if db is not None:
        args += ["--db", str(db)]
    return start_server("specialist.py", service, endpoint, *args, **extra)


def start_server(
    script: str,
    service: str,
    endpoint: str | None,
    *args: str,
    stdout: int = subprocess.PIPE,
    python: str | Path | None = None,
    **extra: str | None,
):
    """Start ``examples/<script> --port P --name service *args`` under the launcher; returns
    ``(process, url)`` once it listens (``stdout``: a pipe unless told, e.g. ``subprocess.DEVNULL``;
    stderr the file ``process.log_path``; ``python``: another venv's interpreter, run under that
    venv's launcher). Raises RuntimeError (with its log) if it never listens."""
    port = free_port()
    python = Path(python or sys.executable)
    launcher = python.with_name("opentelemetry-instrument")
    cmd = [str(launcher), str(python), str(EXAMPLES / script), "--port", str(port), "--name", service, *args]
    with tempfile.NamedTemporaryFile(prefix=f"{service}-", suffix=".log", delete=False) as log:
        proc = subprocess.Popen(cmd, env=otel_env(service, endpoint, **extra), stdout=stdout, stderr=log, text=True)
    proc.log_path = Path(log.name)
    try:
        wait_port(port, proc)
    except RuntimeError as exc:
        tail = proc.log_path.read_text(errors="replace")[-2000:]  # before stop(), which removes the log
        stop(proc)
        raise RuntimeError(f"{service}: {exc}; log:\n{tail}") from exc
    return proc, f"http://127.0.0.1:{port}/"


class _RoundRobin(http.server.BaseHTTPRequestHandler):
    """Forwards each POST to the next replica (``server.replicas``), a GET to the first."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._forward(self.server.replicas[0])

    def do_POST(self) -> None:
        with self.server.lock:
            target = self.server.replicas[self.server.sent % len(self.server.replicas)]
            self.server.sent += 1
        self._forward(target)

    def _forward(self, target: str) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        url = urlsplit(target)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        skip = {"host", "connection", "content-length", "transfer-encoding"}
        conn.request(self.command, self.path, body, {k: v for k, v in self.headers.items() if k.lower() not in skip})
        with conn.getresponse() as resp:
            data = resp.read()
            self.send_response(resp.status)
            for key, value in resp.getheaders():
                if key.lower() not in skip:
                    self.send_header(key, value)
        conn.close()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def load_balancer() -> Iterator[tuple[str, list[str]]]:
    """A round-robin HTTP load balancer on 127.0.0.1 (each POST to the next replica, in order):
    yields ``(url, replicas)``; append the replicas' URLs to ``replicas`` once they listen (start
    them with ``url`` as their public URL). Stopped on exit."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RoundRobin)
    server.replicas, server.sent, server.lock = [], 0, threading.Lock()
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/", server.replicas
    finally:
        server.shutdown()
        server.server_close()


def console_spans(text: str) -> list[dict]:
    """The spans the console exporter printed in ``text`` (one JSON object each); a span still
    being written at the end is left out."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while (i := text.find("{\n", i)) != -1:
        try:
            span, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        out.append(span)
    return out


class SpecialistProcess:
    """``start_specialist`` with the console exporter, its stdout read in the background;
    ``spans()`` parses what it exported so far. ``env``: extra environment variables."""

    def __init__(
        self,
        service: str,
        shape: str = "a2a-executor",
        truth: Path | None = None,
        stream: bool = False,
        forgetful: bool = False,
        **env: str,
    ) -> None:
        self.proc, self.url = start_specialist(
            service, None, shape=shape, truth=truth, stream=stream, forgetful=forgetful, **env
        )
        self._text: list[str] = []
        threading.Thread(target=lambda: self._text.extend(self.proc.stdout), daemon=True).start()

    def spans(self) -> list[dict]:
        return console_spans("".join(self._text))

    def wait_for(self, predicate, count: int = 1, timeout: float = 60.0) -> list[dict]:
        """Spans matching ``predicate`` once at least ``count`` of them were exported (or at timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [s for s in self.spans() if predicate(s)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.1)

    def stop(self) -> None:
        stop(self.proc)


def run_orchestrator(
    specialists: list[tuple[str, str]],
    endpoint: str | None,
    turns: int = 3,
    retry_turn: int = 0,
    direct: bool = False,
    card: bool = False,
    stream: bool = False,
    **extra: str,
) -> tuple[list[dict], subprocess.CompletedProcess]:
    """Run ``orchestrator.py`` under the launcher against ``[(name, url), ...]`` (``direct``: an
    a2a-sdk client instead of ``A2AAgent``; ``card``: ``A2AAgent`` from the specialist's Agent Card;
    ``stream``: over the streaming method);
    returns its delegation records (one dict per send) and the completed process. Raises
    CalledProcessError."""
    cmd = [
        str(LAUNCHER),
        sys.executable,
        str(EXAMPLES / "orchestrator.py"),
        "--turns",
        str(turns),
        "--retry-turn",
        str(retry_turn),
    ]
    if direct:
        cmd.append("--direct")
    if card:
        cmd.append("--card")
    if stream:
        cmd.append("--stream")
    for name, url in specialists:
        cmd += ["--specialist", url, "--name", name]
    proc = subprocess.run(
        cmd, env=otel_env("orchestrator", endpoint, **extra), capture_output=True, text=True, timeout=120, check=True
    )
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"conversation"')]
    return records, proc


#: the apps' real defaults for the realistic-latency runs: BatchSpanProcessor's 5 s delay (not the
#: tests' 100 ms), a2a-sdk's own spans as shipped
REAL_APP_ENV: dict[str, str | None] = {"OTEL_BSP_SCHEDULE_DELAY": None, "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED": None}


def run_supervisor(endpoint: str, conversations: list[tuple[str, str, str]], turns: int, latency: str) -> list[dict]:
    """Run ``supervisor.py`` under the launcher with the apps' real defaults (:data:`REAL_APP_ENV`)
    and ``latency`` seconds per model call, holding ``[(name, kind, url), ...]`` conversations of
    ``turns`` turns at once; returns its records (one per send). Raises RuntimeError when it fails."""
    cmd = [str(LAUNCHER), sys.executable, str(EXAMPLES / "supervisor.py"), "--turns", str(turns)]
    for name, kind, url in conversations:
        cmd += ["--conversation", f"{name}={kind}@{url}"]
    env = otel_env("supervisor", endpoint, OFFLINE_MODEL_LATENCY=latency, **REAL_APP_ENV)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode:
        raise RuntimeError(f"supervisor exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"conversation"')]


def run_both_callers(specialists: list[tuple[str, str]], endpoint: str, turns: int) -> dict[str, list[dict]]:
    """:func:`run_orchestrator` once with ``A2AAgent`` and once with a direct a2a-sdk client against
    the same specialists; returns ``{"a2a_agent": records, "direct": records}``. Raises
    CalledProcessError."""
    return {
        caller: run_orchestrator(specialists, endpoint, turns=turns, direct=caller == "direct")[0]
        for caller in ("a2a_agent", "direct")
    }


@contextmanager
def collector_run(binary: str | Path, workdir: Path, groupbytrace_wait: str = "3s") -> Iterator[tuple[Collector, list]]:
    """:func:`start_collector`, yielding ``(collector, processes)``: every process the caller appends
    to ``processes`` is stopped on exit, then the collector."""
    collector = start_collector(binary, workdir, groupbytrace_wait)
    procs: list[subprocess.Popen] = []
    try:
        yield collector, procs
    finally:
        for proc in procs:
            stop(proc)
        collector.stop()


@contextmanager
def app_hops(
    binary: str | Path,
    workdir: Path,
    app: str,
    service: str,
    flag: str,
    shapes: tuple[str, ...],
    start: Callable[[str, str, Path], tuple[subprocess.Popen, str]],
    turns: int,
    **extra: str,
) -> Iterator[tuple[list[dict], list[Span], dict[str, list[int]]]]:
    """One framework's caller app against one specialist per shape, through the collector: starts
    the collector and ``start(shape, endpoint, truth_file) -> (process, url)`` per shape, runs
    ``examples/<app> --turns N`` (``--specialist url --<flag> conv-<shape>`` per shape) under the
    launcher as ``service`` (``extra``: its environment), waits for one hop per record. Yields
    ``(records, spans, truth)``: the app's JSON lines starting ``{"<flag>"``, every span the collector
    wrote, :func:`read_truth`. Raises RuntimeError when the app fails."""
    truth = workdir / "truth.jsonl"
    with collector_run(binary, workdir, groupbytrace_wait="1s") as (collector, procs):
        cmd = [str(LAUNCHER), sys.executable, str(EXAMPLES / app), "--turns", str(turns)]
        for shape in shapes:
            proc, url = start(shape, collector.endpoint, truth)
            procs.append(proc)
            cmd += ["--specialist", url, f"--{flag}", f"conv-{shape}"]
        proc = subprocess.run(
            cmd, env=otel_env(service, collector.endpoint, **extra), capture_output=True, text=True, timeout=120
        )
        if proc.returncode:
            raise RuntimeError(f"{app} exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
        records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith(f'{{"{flag}"')]
        yield records, wait_for_hops(collector.spans_file, len(records)), read_truth(truth)


def app_verdicts(
    records: list[dict], spans: list[Span], truth: dict[str, list[int]], caller: str
) -> tuple[list[str], list[str]]:
    """Per record of :func:`app_hops`: the collector's verdict on its hop and the one its ground
    truth calls for (:func:`expected_result`, the reply in the contextId sent). Returns ``(got,
    want)``. Raises AssertionError when a record's trace has not exactly one hop from ``caller``."""
    got, want = [], []
    for rec in records:
        hops = [s for s in hop_spans(spans) if s.trace_id == rec["trace_id"]]
        if len(hops) != 1 or hops[0].attributes["agent_identity.hop.caller.service.name"] != caller:
            raise AssertionError(f"not one hop from {caller} in trace {rec['trace_id']}: {hops}")
        got.append(hops[0].attributes["agent_identity.hop.result"])
        want.append(expected_result({**rec, "answered": rec["context_id"]}, truth[rec["trace_id"]]))
    return got, want


def read_truth(path: Path) -> dict[str, list[int]]:
    """trace id -> the message counts the callee's model reported in that trace (ground truth)."""
    out: dict[str, list[int]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                out.setdefault(rec["trace_id"], []).append(rec["messages"])
    return out


def expected_verdict(record: dict, counts: list[int]) -> bool | None:
    """Ground truth of one delegation: None when the caller requested nothing (a first turn: no
    verdict to flag), False when the callee's model saw prior messages (it continued), True when
    it started from nothing (it forgot)."""
    if not record.get("requested"):
        return None
    return all(n <= 1 for n in counts)


def expected_result(record: dict, counts: list[int]) -> str:
    """The hop verdict the ground truth calls for (the processor's ``agent_identity.hop.result``):
    ``first_turn`` when the caller requested nothing; ``continued`` when the callee's model saw
    prior messages; when it saw only the new one, ``context_changed`` if the reply came in another
    contextId than the one sent (as the caller saw it), else ``state_not_resumed``."""
    forgot = expected_verdict(record, counts)
    if forgot is None:
        return "first_turn"
    if not forgot:
        return "continued"
    return "context_changed" if record.get("answered") != record["requested"] else "state_not_resumed"


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Terminate a process we started (and reap it); remove its stderr log unless AGENT_IDENTITY_KEEP_LOGS."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log = getattr(proc, "log_path", None)
    if log is not None and not os.environ.get("AGENT_IDENTITY_KEEP_LOGS"):
        log.unlink(missing_ok=True)


# -- reading what the collector wrote ------------------------------------------------------------
@dataclass
class Span:
    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict = field(default_factory=dict)


def _value(v: dict):
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    return None


def read_spans(path: Path) -> list[Span]:
    """Every span of the file exporter's JSON lines (OTLP JSON), with its resource ``service.name``."""
    spans: list[Span] = []
    if not path.exists():
        return spans
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line).get("resourceSpans", []):
            res = {a["key"]: _value(a["value"]) for a in rs.get("resource", {}).get("attributes", [])}
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    spans.append(
                        Span(
                            str(res.get("service.name")),
                            s["name"],
                            int(s.get("kind", 0)),
                            s["traceId"],
                            s["spanId"],
                            s.get("parentSpanId", ""),
                            {a["key"]: _value(a["value"]) for a in s.get("attributes", [])},
                        )
                    )
    return spans


def hop_spans(spans: list[Span]) -> list[Span]:
    """Callee entry spans the processor analysed as hops (they carry ``agent_identity.hop.result``)."""
    return [s for s in spans if "agent_identity.hop.caller.service.name" in s.attributes]


def wait_for_hops(path: Path, expected: int, timeout: float = 120.0) -> list[Span]:
    """Poll the spans file until ``expected`` hops arrived (or ``timeout``); returns all spans."""
    deadline = time.monotonic() + timeout
    while True:
        spans = read_spans(path)
        if len(hop_spans(spans)) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


_METRIC = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(port: int) -> list[tuple[str, dict, float]]:
    """The collector's own Prometheus metrics whose name starts with ``agent_identity``."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = []
    for line in text.splitlines():
        m = _METRIC.match(line)
        if m and m.group(1).startswith("agent_identity"):
            out.append((m.group(1), dict(_LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def metric_sum(samples: list[tuple[str, dict, float]], name: str, **labels: str) -> float:
    """Sum of samples of ``name`` (with or without a ``_total`` suffix) matching ``labels``."""
    return sum(
        v
        for n, lab, v in samples
        if n in (name, name + "_total") and all(lab.get(k) == want for k, want in labels.items())
    )


# -- issue 16: a caller that restarts its delegate, and the Python metrics through the collector ----
PYTHON_METRICS_OVERLAY = ROOT / "collector-config" / "backends" / "python-metrics.yaml"
METRICS_ENV = {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_METRIC_EXPORT_INTERVAL": "500"}


def run_restarting_caller(service: str, url: str, endpoint: str | None, *args: str, turns: int = 3) -> list[dict]:
    """Run ``restarting_caller.py`` (``args``: e.g. ``"--keep"``, ``"--direct"``) under the launcher
    as ``service``, its metrics over OTLP to ``endpoint``; returns its records (one per send).
    Raises RuntimeError (with its stderr) when it fails."""
    cmd = [
        str(LAUNCHER),
        sys.executable,
        str(EXAMPLES / "restarting_caller.py"),
        "--specialist",
        url,
        "--caller",
        service,
        "--turns",
        str(turns),
        *args,
    ]
    proc = subprocess.run(
        cmd, env=otel_env(service, endpoint, **METRICS_ENV), capture_output=True, text=True, timeout=120
    )
    if proc.returncode:
        raise RuntimeError(f"{service} exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"caller"')]


def read_metrics(path: Path) -> dict[tuple, float]:
    """What the python-metrics overlay's file exporter wrote: ``(service.name, metric name, sorted
    label pairs) -> latest cumulative value`` of every sum."""
    out: dict[tuple, float] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        for rm in json.loads(line).get("resourceMetrics", []):
            res = {a["key"]: _value(a["value"]) for a in rm.get("resource", {}).get("attributes", [])}
            for sm in rm.get("scopeMetrics", []):
                for metric in sm.get("metrics", []):
                    for dp in metric.get("sum", {}).get("dataPoints", []):
                        labels = tuple(sorted((a["key"], _value(a["value"])) for a in dp.get("attributes", [])))
                        key = (res.get("service.name"), metric["name"], labels)
                        out[key] = max(out.get(key, 0), float(dp.get("asInt", dp.get("asDouble", 0))))
    return out


def metric_total(metrics: dict, service: str, name: str, **labels: str) -> float:
    """Sum over :func:`read_metrics` output of ``name`` for ``service`` matching ``labels``."""
    return sum(
        v
        for (svc, n, lab), v in metrics.items()
        if svc == service and n == name and all(dict(lab).get(k) == want for k, want in labels.items())
    )


# -- issue 27: the recovery scenario (a delegation retried after a crash) ---------------------------
def start_charge_specialist(
    service: str,
    endpoint: str | None,
    record: Path,
    idempotent: bool,
    hold: float = 3.0,
    hold_each: bool = False,
    by_order: bool = False,
    **extra: str | None,
):
    """``charge_specialist.py`` under the launcher (naive, or ``idempotent``: a ledger keyed by
    ``otel_agent_identity.upstream()``, or ``by_order``: keyed by the order), holding its first
    response (``hold_each``: every response) ``hold`` seconds; every charge it really makes is a
    JSON line in ``record``. Returns ``(process, url)``."""
    args = ["--record", str(record), "--hold", str(hold)] + (["--idempotent"] if idempotent else [])
    args += ["--hold-each"] if hold_each else []
    args += ["--by-order"] if by_order else []
    return start_server("charge_specialist.py", service, endpoint, *args, **extra)


def run_checkout(
    url: str,
    db: Path,
    endpoint: str | None,
    allowlist: str,
    timeout: float = 1.0,
    service: str = "checkout",
    order: str = "order-42",
    **extra: str | None,
) -> tuple[dict, int]:
    """One ``checkout_orchestrator.py`` process under the launcher (it resumes from ``db`` when a
    run is checkpointed there), allowlisting ``allowlist``; returns its record and exit status
    (3: it crashed on a failed send). Raises RuntimeError on any other failure."""
    cmd = [
        str(LAUNCHER),
        sys.executable,
        str(EXAMPLES / "checkout_orchestrator.py"),
        "--specialist",
        url,
        "--db",
        str(db),
        "--timeout",
        str(timeout),
        "--order",
        order,
    ]
    env = otel_env(service, endpoint, OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST=allowlist, **extra)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"resumed"')]
    if proc.returncode not in (0, 3) or not lines:
        raise RuntimeError(f"{service} exited with {proc.returncode}:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1]), proc.returncode


def run_recovery(
    url: str,
    db: Path,
    endpoint: str | None,
    caller: str,
    order: str = "order-42",
    first_url: str | None = None,
    allowlist: str | None = None,
    **extra: str | None,
) -> list[dict]:
    """The recovery scenario: a first checkout process (sending to ``first_url``, default ``url``,
    with a 1 s timeout) whose send fails and which exits before ``charge`` is checkpointed, then a
    second that resumes from ``db`` and completes (a 30 s timeout: the network recovered; no test
    depends on the machine's speed). ``allowlist``: the callers' allowlist (default ``url``: the
    specialist receives the delegation id; ``""``: nothing forwarded, the default of a real
    deployment); ``extra``: their environment. Returns both records; raises RuntimeError when
    either did otherwise."""
    allow = url if allowlist is None else allowlist
    first, status = run_checkout(first_url or url, db, endpoint, allow, service=caller, order=order, **extra)
    if status != 3 or not first["error"] or first["resumed"]:
        raise RuntimeError(f"{caller}: the first attempt did not fail as planned: {first}")
    second, status = run_checkout(url, db, endpoint, allow, timeout=30.0, service=caller, order=order, **extra)
    if status != 0 or not second["resumed"] or not second["receipt"] or second["error"]:
        raise RuntimeError(f"{caller}: the resumed attempt did not complete: {second}")
    return [first, second]


def read_charges(path: Path) -> list[dict]:
    """The charge specialist's own record: one dict per charge it really made (ground truth)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
