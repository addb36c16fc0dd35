"""End to end: examples/adk_app.py (a Google ADK agent whose tool asks an A2A specialist) under
``opentelemetry-instrument``, one session per specialist, against two ADK specialists
(examples/adk_specialist.py): one that runs each contextId in its own ADK session and one that
starts a new session per request, all exporting to the real collector binary on 127.0.0.1. The
hop verdicts are checked against the specialists' own models (how many contents they saw), both
ways."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import a2a_harness as h
import pytest

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
APP = "adk_app.py"
SPECIALIST = "adk_specialist.py"
SHAPES, TURNS = ("session", "forgetful"), 2
CONV, EXEC, RESUMED = "gen_ai.conversation.id", "agent_identity.execution.id", "agent_identity.conversation.resumed"

pytestmark = [pytest.mark.e2e, pytest.mark.collector]


def _start_specialist(shape: str, endpoint: str, truth: Path):
    return h.start_server(
        SPECIALIST, f"adk-{shape}", endpoint, "--shape", shape, "--truth", str(truth), stdout=subprocess.DEVNULL
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("adk-a2a")
    with h.app_hops(COLLECTOR, work, APP, "adk-app", "session", SHAPES, _start_specialist, TURNS) as run:
        yield run


def test_the_caller_resumed_each_sessions_history(run):
    records, _, _ = run
    assert [(r["session"], r["turn"], r["seen"]) for r in records] == [
        (f"conv-{s}", turn, 3 + 4 * (turn - 1)) for s in SHAPES for turn in range(1, TURNS + 1)
    ]


def test_every_caller_span_carries_its_session_and_invocation(run):
    records, spans, _ = run
    for rec in records:
        mine = [s for s in spans if s.trace_id == rec["trace_id"] and s.service == "adk-app"]
        (agent,) = [s for s in mine if s.name == "invoke_agent weather_agent"]  # ADK's, enriched: no second one
        assert agent.attributes[CONV] == rec["session"] and agent.attributes[EXEC] == rec["invocation_id"]
        assert agent.attributes[RESUMED] is (rec["turn"] > 1)
        (hop,) = [s for s in mine if s.kind == 3 and s.name.startswith("invoke_agent")]  # the A2A CLIENT span
        assert hop.attributes["agent_identity.parent.execution.id"] == rec["invocation_id"]
        (tool,) = [s for s in mine if s.name == "execute_tool ask_specialist"]
        assert tool.attributes[CONV] == rec["session"] and tool.attributes[EXEC] == rec["invocation_id"]
        assert all(s.attributes.get(EXEC) for s in mine)


def test_the_specialists_serving_runs_record_resumed(run):
    records, spans, truth = run
    for rec in records:
        shape = rec["session"].removeprefix("conv-")
        (agent,) = [
            s
            for s in spans
            if s.trace_id == rec["trace_id"] and s.service == f"adk-{shape}" and s.name.startswith("invoke_agent")
        ]
        assert agent.attributes[RESUMED] is (shape == "session" and rec["turn"] > 1)
        assert agent.attributes[RESUMED] is (truth[rec["trace_id"]] != [1])  # the model's own account


def test_the_collector_verdict_of_every_hop_is_the_ground_truth(run):
    got, want = h.app_verdicts(*run, caller="adk-app")
    assert got == want
    assert want == ["first_turn", "continued", "first_turn", "state_not_resumed"]  # both ways: kept and forgot
