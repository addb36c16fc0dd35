"""End to end through the real collector: examples/strands_app.py (a Strands orchestrator whose tool
asks a remote agent over A2A with a2a-sdk 0.3) under ``opentelemetry-instrument``, against two
Strands ``A2AServer`` specialists (examples/strands_specialist.py, at most one context's Agent in
memory): ``session`` keeps each context in a ``FileSessionManager`` and continues after its Agent
was evicted; ``memory`` has no session manager and forgets. Two conversations per specialist,
turns interleaved (each evicts the other). A third conversation asks through Strands' ``A2AAgent``,
which never sends a contextId. Every hop's verdict is checked against the specialists' own models
(how many messages they saw), both ways.

Needs the collector binary: ``AGENT_IDENTITY_COLLECTOR`` (``make test-strands`` sets it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import a2a_harness as h
import pytest

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
SHAPES, TURNS = ("session", "memory"), 2
CONV, RESUMED = "gen_ai.conversation.id", "agent_identity.conversation.resumed"
CLIENT, SERVER = 3, 2  # OTLP span kinds

pytestmark = [pytest.mark.e2e, pytest.mark.collector]


def _app(url: str, endpoint: str, *args: str) -> list[dict]:
    cmd = [str(h.LAUNCHER), sys.executable, str(h.EXAMPLES / "strands_app.py"), "--specialist", url, *args]
    done = subprocess.run(cmd, env=h.otel_env("strands-app", endpoint), capture_output=True, text=True, timeout=180)
    if done.returncode:
        raise RuntimeError(f"strands_app.py exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"session"')]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("strands-a2a")
    truth = work / "truth.jsonl"
    with h.collector_run(COLLECTOR, work, groupbytrace_wait="1s") as (collector, procs):
        records = []
        for shape in SHAPES:
            proc, url = h.start_server(
                "strands_specialist.py", f"strands-{shape}", collector.endpoint, "--shape", shape,
                "--truth", str(truth), stdout=subprocess.DEVNULL,
            )  # fmt: skip
            procs.append(proc)
            convs = [arg for c in (f"conv-{shape}-a", f"conv-{shape}-b") for arg in ("--conversation", c)]
            records += _app(url, collector.endpoint, *convs, "--turns", str(TURNS))
            if shape == "session":
                agent_records = _app(url, collector.endpoint, "--conversation", "conv-agent", "--via", "a2a-agent")
        spans = h.wait_for_hops(collector.spans_file, len(records) + len(agent_records))
        yield records, agent_records, spans, h.read_truth(truth)


def test_the_verdict_of_every_hop_is_the_ground_truth_both_ways(run):
    records, _, spans, truth = run
    assert [(r["session"], r["turn"]) for r in records] == [
        (f"conv-{s}-{c}", t) for s in SHAPES for t in range(1, TURNS + 1) for c in "ab"
    ]
    got, want = h.app_verdicts(records, spans, truth, caller="strands-app")
    assert got == want
    assert want == ["first_turn"] * 2 + ["continued"] * 2 + ["first_turn"] * 2 + ["state_not_resumed"] * 2


def test_the_serving_runs_record_resumed_as_their_models_saw(run):
    records, _, spans, truth = run
    for rec in records:
        shape = rec["session"].split("-")[1]
        (agent,) = [
            s
            for s in spans
            if s.trace_id == rec["trace_id"] and s.service == f"strands-{shape}" and s.name.startswith("invoke_agent")
        ]
        assert agent.attributes[RESUMED] is (truth[rec["trace_id"]] != [1]), rec  # the model's own account
        assert agent.attributes[RESUMED] is (shape == "session" and rec["turn"] > 1), rec
        assert agent.attributes[CONV] == rec["context_id"] or shape == "memory", rec
        assert rec["seen"] == 3 + 4 * (rec["turn"] - 1)  # the orchestrator itself continued its session


def test_a2a_agent_restarts_the_remote_conversation_every_call(run):
    _, agent_records, spans, truth = run
    assert [r["turn"] for r in agent_records] == [1, 2]
    clients = []
    for rec in agent_records:
        assert truth[rec["trace_id"]] == [1]  # the remote agent started from nothing each time
        (hop,) = [s for s in h.hop_spans(spans) if s.trace_id == rec["trace_id"]]
        assert hop.attributes["agent_identity.hop.result"] == "first_turn"  # nothing was asked to continue
        (client,) = [
            s
            for s in spans
            if s.trace_id == rec["trace_id"] and s.service == "strands-app" and s.kind == CLIENT
            and s.name.startswith("invoke_agent")
        ]  # fmt: skip
        clients.append(client.attributes)
    first, second = clients
    assert first[CONV] != second[CONV]  # a new remote conversation
    assert "agent_identity.conversation.previous_id" not in first
    assert second["agent_identity.conversation.previous_id"] == first[CONV]  # visible on the caller's side
    assert second["agent_identity.parent.conversation.id"] == "conv-agent"
