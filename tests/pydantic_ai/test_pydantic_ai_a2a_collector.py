"""End to end: examples/pydantic_ai_app.py (a Pydantic AI agent whose tool asks an A2A specialist)
under ``opentelemetry-instrument``, one conversation per specialist, against two Pydantic AI
specialists (examples/pydantic_ai_specialist.py): one that passes each context's earlier messages
to its agent and one that forgets them, all exporting to the real collector binary on 127.0.0.1.
The hop verdicts are checked against the specialists' own models (how many messages they saw),
both ways. The caller runs with our agent span; the specialists with Pydantic AI's own
instrumentation (the forgetful one) and without it (the healthy one)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import a2a_harness as h
import pytest

pytest.importorskip("pydantic_ai")

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
APP = "pydantic_ai_app.py"
SPECIALIST = "pydantic_ai_specialist.py"
SHAPES, TURNS = ("history", "forgetful"), 2
CONV, EXEC, RESUMED = "gen_ai.conversation.id", "agent_identity.execution.id", "agent_identity.conversation.resumed"

pytestmark = [pytest.mark.e2e, pytest.mark.collector]


def _start_specialist(shape: str, endpoint: str, truth: Path):
    native = ["--native"] if shape == "forgetful" else []
    return h.start_server(
        SPECIALIST, f"pa-{shape}", endpoint, "--shape", shape, "--truth", str(truth), *native, stdout=subprocess.DEVNULL
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("pa-a2a")
    with h.app_hops(COLLECTOR, work, APP, "pa-app", "conversation", SHAPES, _start_specialist, TURNS) as run:
        yield run


def test_the_caller_kept_each_conversations_history(run):
    records, _, _ = run
    assert [(r["conversation"], r["turn"], r["seen"]) for r in records] == [
        (f"conv-{s}", turn, 3 + 4 * (turn - 1)) for s in SHAPES for turn in range(1, TURNS + 1)
    ]


def test_every_caller_span_carries_its_conversation_and_run_id(run):
    records, spans, _ = run
    for rec in records:
        mine = [s for s in spans if s.trace_id == rec["trace_id"] and s.service == "pa-app"]
        (agent,) = [s for s in mine if s.name == "invoke_agent weather_agent"]
        assert agent.parent_id == "" and agent.attributes["gen_ai.provider.name"] == "pydantic_ai"
        assert agent.attributes[CONV] == rec["conversation"] and agent.attributes[EXEC] == rec["run_id"]
        assert agent.attributes[RESUMED] is (rec["turn"] > 1)
        (hop,) = [s for s in mine if s.kind == 3 and s.name.startswith("invoke_agent")]  # the A2A CLIENT span
        assert hop.attributes["agent_identity.parent.execution.id"] == rec["run_id"]
        assert all(s.attributes.get(EXEC) for s in mine)
        assert all(s.attributes[EXEC] == rec["run_id"] for s in mine if s.parent_id == agent.span_id and s is not hop)


def test_the_specialists_serving_runs_record_resumed(run):
    records, spans, truth = run
    for rec in records:
        shape = rec["conversation"].removeprefix("conv-")
        served = [
            s
            for s in spans
            if s.trace_id == rec["trace_id"] and s.service == f"pa-{shape}" and s.name.startswith("invoke_agent")
        ]
        (agent,) = served  # one agent span: the framework's, enriched, when its instrumentation is on
        assert ("gen_ai.agent.call.id" in agent.attributes) is (shape == "forgetful")
        assert agent.attributes[RESUMED] is (shape == "history" and rec["turn"] > 1)
        assert agent.attributes[RESUMED] is (truth[rec["trace_id"]] != [1])  # the model's own account


def test_the_collector_verdict_of_every_hop_is_the_ground_truth(run):
    got, want = h.app_verdicts(*run, caller="pa-app")
    assert got == want
    assert want == ["first_turn", "continued", "first_turn", "state_not_resumed"]  # both ways: kept and forgot
