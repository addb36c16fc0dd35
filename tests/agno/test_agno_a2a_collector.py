"""End to end: examples/agno_orchestrator.py (an Agno agent whose tool asks an A2A specialist)
under ``opentelemetry-instrument``, one session per specialist, against a specialist that keeps
the A2A context's history and one that answers in a new context every time, all exporting to the
real collector binary on 127.0.0.1. The hop verdicts are checked against the specialists' own
models (how many messages they saw), both ways."""

from __future__ import annotations

import os

import a2a_harness as h
import pytest
from agno_support import CONV, EXEC, PARENT

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
APP = "agno_orchestrator.py"
SHAPES, TURNS = ("session-local", "plain-new-context"), 2

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]


def _start_specialist(shape: str, endpoint: str, truth):
    return h.start_specialist(shape, endpoint, shape=shape, truth=truth)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("agno-a2a")
    with h.app_hops(
        COLLECTOR, work, APP, "agno-app", "session", SHAPES, _start_specialist, TURNS, AGNO_TELEMETRY="false"
    ) as run:
        yield run


def test_agno_resumed_each_sessions_history(run):
    records, _, _ = run
    assert [(r["session"], r["turn"], r["seen"]) for r in records] == [
        (f"conv-{s}", turn, 3 + 4 * (turn - 1)) for s in SHAPES for turn in range(1, TURNS + 1)
    ]


def test_every_span_of_a_run_carries_its_session_and_run_id(run):
    records, spans, _ = run
    for rec in records:
        mine = [s for s in spans if s.trace_id == rec["trace_id"] and s.service == "agno-app"]
        (agent,) = [s for s in mine if s.name == "invoke_agent weather_agent"]
        assert agent.parent_id == "" and agent.attributes["gen_ai.provider.name"] == "agno"
        assert agent.attributes[CONV] == rec["session"] and agent.attributes[EXEC] == rec["run_id"]
        (hop,) = [s for s in mine if s.kind == 3 and s.name.startswith("invoke_agent")]  # the A2A CLIENT span
        assert hop.parent_id == agent.span_id and hop.attributes[PARENT] == rec["run_id"]
        assert all(s.attributes.get(EXEC) for s in mine)


def test_the_collector_verdict_of_every_hop_is_the_ground_truth(run):
    got, want = h.app_verdicts(*run, caller="agno-app")
    assert got == want
    assert want == ["first_turn", "continued", "first_turn", "context_changed"]  # both ways: kept and forgot
