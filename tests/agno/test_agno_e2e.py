"""End to end: the Agno app under ``opentelemetry-instrument``, exporting OTLP to the real collector
binary; the spans the collector wrote carry the ids Agno reported. The app refuses every
non-loopback lookup or connect (``AGNO_APP_NET_GUARD=1``) and reports none was tried."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import a2a_harness as h
import pytest
from agno_support import CONV, EXEC, PARENT

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
APP = Path(__file__).with_name("agno_app.py")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    collector = h.start_collector(COLLECTOR, tmp_path_factory.mktemp("agno-collector"), groupbytrace_wait="1s")
    try:
        env = h.otel_env("agno-app", collector.endpoint, AGNO_TELEMETRY="false", AGNO_APP_NET_GUARD="1")
        proc = subprocess.run(
            [str(h.LAUNCHER), sys.executable, str(APP)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        records = [r for r in lines if "kind" in r]
        deadline, spans = time.monotonic() + 120, []
        while time.monotonic() < deadline:  # the collector groups by trace, then writes
            spans = [s for s in h.read_spans(collector.spans_file) if s.service == "agno-app"]
            if len([s for s in spans if s.name.startswith("invoke_")]) >= 8:
                break
            time.sleep(0.5)
        yield records, lines[-1], spans
    finally:
        collector.stop()


def _span(spans, name, execution_id):
    (span,) = [s for s in spans if s.name == name and s.attributes.get(EXEC) == execution_id]
    return span


def test_no_network_call_left_the_app(run):
    _, last, _ = run
    assert last == {"network_attempts": []}


def test_every_span_carries_its_runs_ids(run):
    _, _, spans = run
    assert len([s for s in spans if s.name.startswith("invoke_")]) == 8
    assert spans and all(s.attributes.get(EXEC) and s.attributes.get(CONV) for s in spans)


def test_agent_turns_carry_the_generated_session_and_their_run_ids(run):
    records, _, spans = run
    turns = [r for r in records if r["kind"] in ("agent", "agent-stream")]
    assert len({r["session_id"] for r in turns}) == 1 and "history=1" in turns[1]["content"]
    for r in turns:
        span = _span(spans, "invoke_agent weather", r["run_id"])
        assert span.attributes[CONV] == r["session_id"] and span.attributes["gen_ai.provider.name"] == "agno"
        lookups = [s for s in spans if s.name == "weather lookup" and s.parent_id == span.span_id]
        assert all(s.attributes[EXEC] == r["run_id"] for s in lookups)
    assert len([s for s in spans if s.name == "weather lookup"]) == 4  # Paris, Rome, Oslo, Lima


def test_team_member_run_is_a_child_of_the_team_run(run):
    records, _, spans = run
    (team,) = [r for r in records if r["kind"] == "team"]
    assert team["member_parent_run_id"] == team["run_id"]  # Agno's own parent_run_id
    lead = _span(spans, "invoke_agent desk", team["run_id"])
    member = _span(spans, "invoke_agent forecaster", team["member_run_id"])
    assert lead.attributes[CONV] == member.attributes[CONV] == team["session_id"]
    assert member.attributes[PARENT] == team["run_id"] and member.trace_id == lead.trace_id


def test_workflow_steps_are_children_of_the_workflow_run(run):
    records, _, spans = run
    (wf,) = [r for r in records if r["kind"] == "workflow"]
    root = _span(spans, "invoke_workflow pipeline", wf["run_id"])
    assert root.attributes[CONV] == wf["session_id"] and root.attributes["gen_ai.workflow.name"] == "pipeline"
    for name, run_id in zip(("first", "second"), wf["step_run_ids"], strict=False):
        step = _span(spans, f"invoke_agent {name}", run_id)
        assert step.attributes[CONV] == wf["session_id"] and step.attributes[PARENT] == wf["run_id"]
        assert step.trace_id == root.trace_id
