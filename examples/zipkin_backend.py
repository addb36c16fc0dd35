"""A Zipkin server on 127.0.0.1 for ``make demo`` and the backend tests, and the links of its UI.

Zipkin 3.6.1 (Apache-2.0) is the exec jar ``io.zipkin:zipkin-server:3.6.1:jar:exec`` that
``make zipkin`` copies from Maven Central into ``.cache/zipkin/`` (Java 17). It keeps spans in
memory and is started with ``AUTOCOMPLETE_KEYS=gen_ai.conversation.id``, so the backend itself
lists the conversations (``/api/v2/autocompleteValues``) and its search bar offers them.
The collector's ``single-node.yaml`` exports to it when ``Zipkin.collector_env()`` is set.

UI links (Zipkin Lens 3.6.1, read from its source): a link runs its search on load only when it
has ``endTs`` and a ``lookback`` that is a preset (``1h``...), ``millis`` or ``range``; an
autocomplete key must be its own URL parameter (``?gen_ai.conversation.id=X``), since inside
``annotationQuery`` it leaves an empty tag-query condition and the page waits for a click.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import a2a_harness as h

ZIPKIN_VERSION = "3.6.1"
ZIPKIN_JAR = Path(
    os.environ.get("ZIPKIN_JAR", h.ROOT / ".cache" / "zipkin" / f"zipkin-server-{ZIPKIN_VERSION}-exec.jar")
)
CONVERSATION_KEY = "gen_ai.conversation.id"
FLAGGED_QUERY = "agent_identity.hop.mismatch=true"
REASON_QUERY = "agent_identity.hop.result={}"
REASONS = ("context_changed", "state_not_resumed")  # the flagged results
DUPLICATES_QUERY = "agent_identity.delegation.duplicate=true"


def missing() -> str:
    """Why Zipkin cannot start here ("" when it can): no ``java`` or no jar."""
    if not shutil.which("java"):
        return "java is not installed (Zipkin needs Java 17)"
    if not ZIPKIN_JAR.is_file():
        return f"no Zipkin jar at {ZIPKIN_JAR} (run `make zipkin`)"
    return ""


@dataclass
class Zipkin:
    """A running Zipkin server (in-memory storage) on 127.0.0.1:``port``."""

    proc: subprocess.Popen
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def collector_env(self) -> dict[str, str]:
        """Environment that makes ``single-node.yaml`` export to this server as well as to the file."""
        return {"AGENT_IDENTITY_TRACE_EXPORTERS": "[file, zipkin]", "ZIPKIN_ENDPOINT": f"{self.url}/api/v2/spans"}

    def api(self, path: str, **params: str) -> object:
        """GET ``/api/v2/<path>`` with query ``params``; the decoded JSON. Raises urllib errors."""
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v2/{path}{'?' + query if query else ''}", timeout=10) as r:
            return json.load(r)

    def conversation_link(self, conversation_id: str, end_ms: int | None = None, lookback: str = "1h") -> str:
        """The UI search of every trace that has a span with this ``gen_ai.conversation.id``."""
        return self._link({CONVERSATION_KEY: conversation_id}, end_ms, lookback)

    def flagged_link(self, end_ms: int | None = None, lookback: str = "1h", reason: str | None = None) -> str:
        """The UI search of every trace with a flagged hop (``agent_identity.hop.mismatch=true``), or
        with one flagged for ``reason`` (``agent_identity.hop.result=<reason>``, one of ``REASONS``)."""
        query = REASON_QUERY.format(reason) if reason else FLAGGED_QUERY
        return self._link({"annotationQuery": query}, end_ms, lookback)

    def duplicates_link(self, end_ms: int | None = None, lookback: str = "1h") -> str:
        """The UI search of every trace with a duplicate execution (``agent_identity.delegation.duplicate=true``)."""
        return self._link({"annotationQuery": DUPLICATES_QUERY}, end_ms, lookback)

    def _link(self, criteria: dict[str, str], end_ms: int | None, lookback: str) -> str:
        end = end_ms if end_ms is not None else int(time.time() * 1000) + 60_000
        query = urllib.parse.urlencode(
            {**criteria, "lookback": lookback, "endTs": str(end), "limit": "100"}, quote_via=urllib.parse.quote
        )
        return f"{self.url}/zipkin/?{query}"

    def wait_for_traces(self, conversation_id: str, count: int, timeout: float = 30.0) -> list[str]:
        """Trace ids Zipkin holds for the conversation, once there are ``count`` (or at ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            traces = self.api("traces", annotationQuery=f"{CONVERSATION_KEY}={conversation_id}", limit="1000")
            ids = sorted({t[0]["traceId"] for t in traces if t})
            if len(ids) >= count or time.monotonic() > deadline:
                return ids
            time.sleep(0.5)

    def stop(self) -> None:
        h.stop(self.proc)


def start_zipkin(workdir: Path, timeout: float = 90.0) -> Zipkin:
    """Start Zipkin on a free port of 127.0.0.1, logging to ``workdir/zipkin.log``; returns once
    ``/health`` answers 200. Raises RuntimeError when it cannot start (see ``missing()``)."""
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    port, log = h.free_port(), workdir / "zipkin.log"
    env = dict(os.environ, AUTOCOMPLETE_KEYS=CONVERSATION_KEY, STORAGE_TYPE="mem", SELF_TRACING_ENABLED="false")
    cmd = [
        "java",
        "-Xms64m",
        "-Xmx512m",
        "-XX:TieredStopAtLevel=1",
        "-jar",
        str(ZIPKIN_JAR),
        "--armeria.ports[0].ip=127.0.0.1",
        f"--armeria.ports[0].port={port}",
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    zipkin = Zipkin(proc, port, log)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            zipkin.stop()
            raise RuntimeError(f"Zipkin did not become ready on 127.0.0.1:{port}; log:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{zipkin.url}/health", timeout=2) as r:
                if r.status == 200:
                    return zipkin
        except OSError:
            pass
        time.sleep(0.5)


def conversations_of(records: list[dict], spans: list[h.Span]) -> dict[str, str]:
    """``{caller conversation id: record's "conversation" label}`` of the callers' delegation
    ``records`` (``a2a_harness.run_orchestrator``, the demo's other callers): the
    ``gen_ai.conversation.id`` of the root span of each record's trace, the caller's own agent run
    (from the collector's spans)."""
    roots = {s.trace_id: s.attributes.get(CONVERSATION_KEY) for s in spans if not s.parent_id}
    out: dict[str, str] = {}
    for rec in records:
        if roots.get(rec["trace_id"]):
            out.setdefault(roots[rec["trace_id"]], rec["conversation"])
    return out


def start_for_demo(workdir: Path) -> Zipkin | None:
    """Start Zipkin and point the collector started next (``a2a_harness.start_collector``, which
    copies ``os.environ``) at it; None, with the reason printed, when Zipkin cannot start."""
    try:
        zipkin = start_zipkin(workdir)
    except RuntimeError as exc:
        print(f"zipkin: not started ({str(exc).splitlines()[0]}); the demo runs without a trace backend")
        return None
    os.environ.update(zipkin.collector_env())
    print(f"zipkin: {zipkin.url}/zipkin/ (the collector exports the marked spans to it)")
    return zipkin


def show_links(zipkin: Zipkin | None, records: list[dict], spans: list[h.Span]) -> None:
    """After the demo's checks: print the UI links of its conversations and of the flagged hops
    (once Zipkin holds every trace of the run), then ``keep_open``. Nothing when ``zipkin`` is None."""
    if zipkin is None:
        return
    conversations = conversations_of(records, spans)
    for conversation_id in conversations:
        want = len({r["trace_id"] for r in records if r["conversation"] == conversations[conversation_id]})
        got = zipkin.wait_for_traces(conversation_id, want, timeout=15)
        if len(got) != want:
            print(f"zipkin: {len(got)} of the {want} traces of conversation {conversation_id} arrived")
    show(zipkin, conversations)
    keep_open(zipkin)


def show(zipkin: Zipkin, conversations: dict[str, str]) -> None:
    """Print one UI link per conversation (``{id: label}``), the flagged-hops link and the report command."""
    print(f"\nZipkin UI {zipkin.url}/zipkin/ (spans in memory, gone when the demo ends)")
    for conversation_id, label in conversations.items():
        print(f"  conversation {conversation_id} ({label}): {zipkin.conversation_link(conversation_id)}")
    print(f"  flagged hops: {zipkin.flagged_link()}")
    for reason in REASONS:
        print(f"    {reason}: {zipkin.flagged_link(reason=reason)}")
    print(f"  duplicate executions: {zipkin.duplicates_link()}")
    python = os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd()) else "python"
    print(f"  from the terminal: {python} -m otel_agent_identity.report --zipkin {zipkin.url} --since 1h")


def keep_open(zipkin: Zipkin) -> None:
    """Keep Zipkin up until the user presses Enter; return at once when ``DEMO_KEEP=0`` or stdin
    is not a terminal (CI), so nothing ever waits there."""
    if os.environ.get("DEMO_KEEP", "1") == "0" or not sys.stdin or not sys.stdin.isatty():
        return
    try:
        input("\nZipkin keeps running: press Enter to stop it (DEMO_KEEP=0 skips this) ")
    except (EOFError, KeyboardInterrupt):
        print()
