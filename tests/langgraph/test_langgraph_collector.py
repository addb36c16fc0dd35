"""End to end: examples/langgraph_app.py (a LangGraph agent whose tool asks an A2A specialist) under
``opentelemetry-instrument``, the specialist in its own process, both exporting to the real
collector binary on 127.0.0.1; the spans are read back from the collector's file exporter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import a2a_harness as h
import pytest

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
APP = h.EXAMPLES / "langgraph_app.py"
THREADS, TURNS = ("conv-a", "conv-b"), 2

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    collector = h.start_collector(COLLECTOR, tmp_path_factory.mktemp("collector"))
    specialist = None
    try:
        specialist, url = h.start_specialist("specialist", collector.endpoint)
        cmd = [str(h.LAUNCHER), sys.executable, str(APP), "--specialist", url, "--turns", str(TURNS)]
        for thread in THREADS:
            cmd += ["--thread", thread]
        proc = subprocess.run(
            cmd, env=h.otel_env("langgraph-app", collector.endpoint), capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"thread"')]
        spans = h.wait_for_hops(collector.spans_file, len(records))
        yield records, spans
    finally:
        if specialist is not None:
            h.stop(specialist)
        collector.stop()


def test_the_graph_resumed_each_threads_history(run):
    records, _ = run
    assert [(r["thread"], r["turn"], r["seen"]) for r in records] == [
        (t, turn, 3 + 4 * (turn - 1)) for t in THREADS for turn in range(1, TURNS + 1)
    ]


def test_every_span_of_a_graph_run_carries_its_thread_and_execution(run):
    records, spans = run
    executions = set()
    for rec in records:
        mine = [s for s in spans if s.trace_id == rec["trace_id"] and s.service == "langgraph-app"]
        (graph,) = [s for s in mine if s.name == "invoke_agent weather_graph"]
        a = graph.attributes
        assert a["gen_ai.conversation.id"] == rec["thread"] and a["gen_ai.provider.name"] == "langgraph"
        assert a["gen_ai.operation.name"] == "invoke_agent" and graph.parent_id == ""
        executions.add(a["agent_identity.execution.id"])
        chats = [s for s in mine if s.name == "chat offline"]
        assert len(chats) == 2
        for chat in chats:
            assert chat.attributes["gen_ai.conversation.id"] == rec["thread"]
            assert chat.attributes["agent_identity.execution.id"] == a["agent_identity.execution.id"]
        (hop,) = [s for s in mine if s.kind == 3 and s.name.startswith("invoke_agent")]  # the A2A CLIENT span
        assert hop.parent_id == graph.span_id
        assert hop.attributes["agent_identity.parent.execution.id"] == a["agent_identity.execution.id"]
        assert hop.attributes["gen_ai.conversation.id"] == rec["context_id"]  # the A2A context, its own namespace
        assert all(s.attributes.get("agent_identity.execution.id") for s in mine)
    assert len(executions) == len(records)


def test_each_turn_is_one_trace_across_both_processes_and_the_collector_judged_the_hop(run):
    records, spans = run
    for rec in records:
        in_trace = [s for s in spans if s.trace_id == rec["trace_id"]]
        assert {s.service for s in in_trace} == {"langgraph-app", "specialist"}
        hops = [s for s in h.hop_spans(in_trace) if s.service == "specialist"]
        assert len(hops) == 1 and hops[0].attributes["agent_identity.hop.caller.service.name"] == "langgraph-app"
        assert "agent_identity.hop.result" in hops[0].attributes
