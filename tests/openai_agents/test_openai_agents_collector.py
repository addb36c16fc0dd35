"""End to end: the OpenAI Agents example app under ``opentelemetry-instrument`` (our instrumentor
and the httpx instrumentation loaded by the launcher), OTLP/HTTP to the built collector
(collector-config/single-node.yaml), the spans read back from its file exporter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collector"))
import collector_support as cs
from oa_helpers import CONV, EXEC, LAST_AGENT, PARENT_CONV, PARENT_EXEC

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]

LAUNCHER = Path(sys.executable).with_name("opentelemetry-instrument")
APP = cs.ROOT / "examples" / "openai_agents_app.py"
CLIENT = 3  # OTLP span kind


@pytest.fixture(scope="module")
def spans(tmp_path_factory):
    collector = cs.start_collector("single-node.yaml", tmp_path_factory.mktemp("openai-agents"))
    try:
        env = dict(
            os.environ,
            OTEL_SERVICE_NAME="support-app",
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{collector.endpoint}/v1/traces",
            OTEL_METRICS_EXPORTER="none",
            OTEL_LOGS_EXPORTER="none",
            OTEL_BSP_SCHEDULE_DELAY="200",
        )
        env.pop("OPENAI_API_KEY", None)
        proc = subprocess.run(
            [str(LAUNCHER), sys.executable, str(APP)], env=env, capture_output=True, text=True, timeout=120, check=True
        )
        lines = [line for line in proc.stderr.splitlines() if line.startswith("[turn")]
        # ground truth: turn 2 and 3 resumed the session's history; turn 3 was handed off
        seen = [int(line.rsplit("seen ", 1)[1].rstrip(")")) for line in lines]
        assert len(seen) == 3 and seen[0] < seen[1] < seen[2], proc.stderr
        assert lines[2].startswith("[turn 3] weather_agent:")
        found = cs.wait_for(
            lambda: (s := cs.read_spans(collector.spans_file)) and len(s) >= 7 and s,
            30,
            "the app's 7 spans in the collector's output",
        )
        yield found
    finally:
        collector.stop()


def test_every_span_carries_the_runs_ids_through_the_collector(spans):
    assert len(spans) == 7 and {s.service for s in spans} == {"support-app"}
    runs = {s.attributes[EXEC]: s for s in spans if s.name.startswith("invoke_agent")}
    assert len(runs) == 5
    for span in spans:
        assert span.attributes[EXEC] in runs, span.name
        assert "agent_identity.hop.result" not in span.attributes  # one service: no hop


def test_top_level_turns_and_their_http_calls(spans):
    support = [s for s in spans if s.name == "invoke_agent support"]
    assert len(support) == 2
    for run in support:
        assert run.attributes[CONV] == "support-42" and run.attributes["gen_ai.provider.name"] == "openai"
        assert "agent_identity.conversation.backfilled" not in run.attributes
        (http,) = [s for s in spans if s.kind == CLIENT and s.parent_id == run.span_id]
        assert http.attributes[EXEC] == run.attributes[EXEC] and http.attributes[CONV] == "support-42"
        assert "agent_identity.conversation.backfilled" not in http.attributes  # stamped in process


def test_agent_as_tool_is_nested_and_the_collector_backfills_its_conversation(spans):
    support = {s.span_id: s for s in spans if s.name == "invoke_agent support"}
    nested = [s for s in spans if s.name == "invoke_agent weather_agent" and s.parent_id in support]
    assert len(nested) == 2
    for run in nested:
        parent = support[run.parent_id]
        assert run.attributes[PARENT_EXEC] == parent.attributes[EXEC] != run.attributes[EXEC]
        assert run.attributes[PARENT_CONV] == "support-42"
        # no conversation of its own in process; the collector copied the parent's down
        assert run.attributes[CONV] == "support-42" and run.attributes["agent_identity.conversation.backfilled"]


def test_streamed_handoff_records_the_last_agent(spans):
    (triage,) = [s for s in spans if s.name == "invoke_agent triage"]
    assert triage.attributes[CONV] == "support-42" and triage.attributes[LAST_AGENT] == "weather_agent"
    assert PARENT_EXEC not in triage.attributes
