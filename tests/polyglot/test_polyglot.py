# SPDX-License-Identifier: Apache-2.0
"""Hops from Python callers to real A2A agents in other languages, judged by the real collector.

Two agent processes, each serving five agents on 127.0.0.1 (``make polyglot-js polyglot-java``
installs them): ``js/agent.cjs``, ``@a2a-js/sdk`` 1.3 (A2A 1.0) under the Node OpenTelemetry SDK
(HTTP and Express instrumentation, OTLP to the collector); ``java/``, a2a-java 0.3.3.Final
(``io.github.a2asdk``, A2A 0.3: the newest a2a-java on Maven Central here; its 1.x, with
``extras/opentelemetry``, does not resolve) behind the JDK HTTP server under the OpenTelemetry Java
agent. The agents keep, forget or move their conversations, each with HTTP spans only or with the
``resumed`` contract (``+resumed``: a few lines of their own OpenTelemetry code). Each request
records the history the agent really saw (the ground truth). The callers are the orchestrator's
Agent Framework ``A2AAgent`` and its direct a2a-sdk client, under our plugin. Checked both ways,
per delegation:

- HTTP spans only: turn 1 ``first_turn``; a reply in another context ``context_changed`` (read
  from the caller's send span); else ``state_unknown`` (no state verdict without ``resumed``),
  never a mismatch nor ``no_callee``, counted in ``agent_identity_state_unknown``;
- with ``resumed``: ``continued`` when the agent saw prior messages, ``state_not_resumed`` when it
  did not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import a2a_harness as h
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collector"))
import collector_support as cs

pytestmark = [pytest.mark.e2e, pytest.mark.collector]

HERE = Path(__file__).parent
JAVA = HERE / "java" / "target"
# language -> (working directory, command line before its --agent arguments)
LANGS = {
    "js": (HERE / "js", ["node", "--require", "./otel.cjs", "agent.cjs"]),
    "java": (
        HERE / "java",
        ["java", "-javaagent:target/otel/opentelemetry-javaagent.jar", "-cp", "@CLASSPATH@", "polyglot.A2AJavaAgent"],
    ),
}
AGENTS = ("keeps", "forgets", "moves", "keeps+resumed", "forgets+resumed")
TURNS = 3
# agent_identity.hop.mismatch per result: state_unknown is no verdict (absent), neither flagged nor healthy
MISMATCH = {
    "first_turn": False,
    "continued": False,
    "context_changed": True,
    "state_not_resumed": True,
    "state_unknown": None,
}


def _command(lang: str) -> list[str]:
    """The agent process's command line; pytest.skip when its part is not installed."""
    if lang == "js":
        if not shutil.which("node") or not (HERE / "js" / "node_modules" / "@a2a-js" / "sdk").is_dir():
            pytest.skip("tests/polyglot/js is not installed (make polyglot-js)")
        return LANGS[lang][1]
    if not shutil.which("java") or not (JAVA / "classpath.txt").exists():
        pytest.skip("tests/polyglot/java is not built (make polyglot-java)")
    classpath = f"{JAVA / 'classes'}{os.pathsep}{(JAVA / 'classpath.txt').read_text().strip()}"
    return [classpath if arg == "@CLASSPATH@" else arg for arg in LANGS[lang][1]]


@pytest.fixture(scope="module", params=list(LANGS))
def world(request, tmp_path_factory):
    """The collector (single-node config, shipped join defaults) and one language's agents; yields
    ``(collector, {spec: url}, truth_file)``."""
    lang = request.param
    cmd = _command(lang)
    work = tmp_path_factory.mktemp(f"polyglot-{lang}")
    collector = cs.start_collector("single-node.yaml", work)
    truth = work / "truth.jsonl"
    ports = {spec: h.free_port() for spec in AGENTS}
    args = [arg for spec, port in ports.items() for arg in ("--agent", f"{spec}={port}")]
    env = dict(
        os.environ,
        OTEL_SERVICE_NAME=f"{lang}-agents",
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
        OTEL_BSP_SCHEDULE_DELAY="200",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        AGENT_TRUTH=str(truth),
    )
    with open(work / "agents.log", "wb") as out:
        proc = subprocess.Popen([*cmd, *args], cwd=LANGS[lang][0], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        for port in ports.values():
            h.wait_port(port, proc, timeout=120)
        yield collector, {spec: f"http://127.0.0.1:{port}/" for spec, port in ports.items()}, truth
    finally:
        h.stop(proc)  # SIGTERM: both SDKs flush on shutdown
        collector.stop()


def _expected(spec: str, record: dict, counts: list[int]) -> str:
    """The verdict the agent's ground truth calls for, as far as its telemetry lets the collector
    judge: state continuity needs ``resumed``."""
    want = h.expected_result(record, counts)
    if "+resumed" not in spec and want in ("continued", "state_not_resumed"):
        return "state_unknown"
    return want


def _judged(collector, traces: set[str]) -> list:
    """Every span the collector wrote, once each of ``traces`` has its hop verdict (bounded)."""

    def ready():
        spans = h.read_spans(collector.spans_file)
        return spans if traces <= {s.trace_id for s in h.hop_spans(spans)} else None

    return cs.wait_for(ready, 120, "a verdict on every delegation")


@pytest.mark.parametrize("direct", [False, True], ids=["a2a_agent", "a2a_sdk_client"])
def test_hops_judged_both_ways(world, direct):
    collector, urls, truth_file = world
    # A2AAgent from the agent's card: it then speaks the card's protocol version (a2a-java: 0.3)
    records, _ = h.run_orchestrator(list(urls.items()), collector.endpoint, turns=TURNS, direct=direct, card=True)
    assert len(records) == TURNS * len(AGENTS), records
    spans = _judged(collector, {rec["trace_id"] for rec in records})
    truth: dict[str, list[int]] = {}
    for line in truth_file.read_text().splitlines():
        rec = json.loads(line)
        truth.setdefault(rec["trace_id"], []).append(rec["messages"])
    got, want, mismatch = {}, {}, {}
    for rec in records:
        key = (rec["specialist"], rec["turn"])
        hops = [s for s in h.hop_spans(spans) if s.trace_id == rec["trace_id"]]
        assert len(hops) == 1, (key, hops)
        got[key] = hops[0].attributes["agent_identity.hop.result"]
        want[key] = _expected(rec["specialist"], rec, truth[rec["trace_id"]])
        mismatch[key] = hops[0].attributes.get("agent_identity.hop.mismatch")
    assert got == want
    assert mismatch == {key: MISMATCH[result] for key, result in want.items()}
    # Every judgeable kind of verdict was seen, so the test cannot pass on one answer alone.
    assert {"first_turn", "context_changed", "state_unknown", "continued", "state_not_resumed"} <= set(want.values())
    kinds = {s.attributes.get("agent_identity.hop.callee.kind") for s in h.hop_spans(spans)}
    assert "http" in kinds
    assert not [s for s in spans if s.attributes.get("agent_identity.hop.result") == "no_callee"]


def test_state_unknown_counted_per_callee(world):
    """After the two callers (module order): every state_unknown hop is counted, by callee kind."""
    collector, _, _ = world
    spans = h.read_spans(collector.spans_file)
    n = sum(1 for s in h.hop_spans(spans) if s.attributes["agent_identity.hop.result"] == "state_unknown")
    assert n > 0

    def counted() -> bool:
        return h.metric_sum(h.scrape(collector.metrics_port), "agent_identity_state_unknown", callee_kind="http") == n

    cs.wait_for(counted, 30, f"agent_identity_state_unknown == {n}")


def test_retried_delegation_is_one_duplicate(world):
    """A delegation the caller sends twice (same message id, so the same delegation id) to an agent
    that has no execution id of its own: each request it served counts as an execution, so the
    second is flagged ``agent_identity.delegation.duplicate`` and counted once. Ground truth: the
    agent recorded two executions in that trace."""
    collector, urls, truth_file = world
    records, _ = h.run_orchestrator(
        [("keeps", urls["keeps"])], collector.endpoint, turns=2, retry_turn=2, direct=True, card=True
    )
    retried = [rec for rec in records if rec["turn"] == 2]
    assert [rec["attempt"] for rec in retried] == [1, 2] and len({rec["trace_id"] for rec in retried}) == 1
    trace_id = retried[0]["trace_id"]
    spans = _judged(collector, {trace_id})
    executions = [json.loads(line) for line in truth_file.read_text().splitlines()]
    assert sum(1 for rec in executions if rec["trace_id"] == trace_id) == 2
    entries = [s for s in h.hop_spans(spans) if s.trace_id == trace_id]
    assert sorted(bool(s.attributes.get("agent_identity.delegation.duplicate")) for s in entries) == [False, True]

    def counted() -> bool:
        samples = h.scrape(collector.metrics_port)
        return h.metric_sum(samples, "agent_identity_duplicate_executions", caller_service="orchestrator") == 1

    cs.wait_for(counted, 30, "agent_identity_duplicate_executions == 1")
