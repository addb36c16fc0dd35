# SPDX-License-Identifier: Apache-2.0
"""End to end, single node: a hop whose callee did not receive traceparent (it starts a new trace).
No hop exists to compare, so the caller's A2A client span is marked ``no_callee`` and counted in
``agent_identity_no_callee``; the callee's forgotten conversation is not (cannot be) a mismatch."""

from __future__ import annotations

import re

import collector_support as cs
import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]

CLIENT = 3  # OTLP span kind


def test_lost_traceparent_is_counted_as_no_callee(tmp_path):
    # no_callee is given once the hop window ended without a callee: shortened from 5m
    collector = cs.start_collector("single-node.yaml", tmp_path, HOP_WINDOW="4s")
    try:
        lost = cs.send_trace(
            collector.endpoint,
            service="orchestrator",
            conversation="conv-o",
            context_id="conv-l",
            callee_service="specialist",
            callee_conversation="conv-forgot",
            lose_traceparent=1,
        )
        ok = cs.send_trace(
            collector.endpoint,
            service="orchestrator",
            conversation="conv-o",
            context_id="conv-k",
            callee_service="specialist",
            callee_conversation="conv-k",
        )

        def all_exported():
            spans = cs.read_spans(collector.spans_file)
            return spans if len(spans) >= 2 * 5 else None  # 2 caller + 3 callee spans per send

        spans = cs.wait_for(all_exported, 30, "every span in the file exporter's output")
        (lost_client,) = [s for s in spans if s.trace_id == lost and s.kind == CLIENT]
        assert lost_client.attributes["agent_identity.hop.result"] == "no_callee"
        (ok_client,) = [
            s
            for s in spans
            if s.trace_id == ok and s.kind == CLIENT and s.attributes.get("gen_ai.operation.name") == "invoke_agent"
        ]
        assert "agent_identity.hop.result" not in ok_client.attributes
        # the callee's spans of the lost hop are a trace of their own, with no hop
        callee_alone = [s for s in spans if s.trace_id not in (lost, ok)]
        assert len(callee_alone) == 3
        assert not any("agent_identity.hop.result" in s.attributes for s in callee_alone)

        def counted():
            text = collector.metrics()
            return text if "agent_identity_no_callee" in text else None

        text = cs.wait_for(counted, 10, "agent_identity_no_callee on the telemetry endpoint")
        (line,) = [ln for ln in text.splitlines() if ln.startswith("agent_identity_no_callee{")]
        assert re.search(r'caller_service="orchestrator"', line)
        assert re.search(r'callee_agent="specialist"', line)
        assert re.search(r'caller_status="ok"', line)
        assert line.endswith(" 1")
        assert not any(ln.startswith("agent_identity_mismatches") for ln in text.splitlines())
    finally:
        collector.stop()
