# SPDX-License-Identifier: Apache-2.0
"""End to end, single node: the built collector with collector-config/single-node.yaml on
127.0.0.1, spans from two Python processes per trace (sender.py), the marks read back from the file
exporter and the counts from the telemetry endpoint and from a real Prometheus."""

from __future__ import annotations

import re

import collector_support as cs
import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]

SERVER = 2  # OTLP span kind
# groupbytrace's wait: a trace's spans all arrive well within it even on a loaded machine (a trace's
# last span follows its first by a process exit and two exports); "fragmented" lingers past it
WAIT_S = 3


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One collector; traces: correct, forgetful, retried delegation, first turn, fragmented."""
    collector = cs.start_collector(
        "single-node.yaml", tmp_path_factory.mktemp("single-node"), GROUPBYTRACE_WAIT=f"{WAIT_S}s"
    )
    try:
        send = lambda **kw: cs.send_trace(collector.endpoint, service="orchestrator", **kw)  # noqa: E731
        traces = {
            "correct": send(
                conversation="conv-a", context_id="conv-a", callee_service="specialist", callee_conversation="conv-a"
            ),
            "forgetful": send(
                conversation="conv-b", context_id="conv-b", callee_service="forgetful", callee_conversation="conv-new-b"
            ),
            "retried": send(
                conversation="conv-c",
                context_id="conv-c",
                callee_service="specialist",
                callee_conversation="conv-c",
                attempts=2,
            ),
            "first_turn": send(
                conversation="conv-d", context_id="", callee_service="specialist", callee_conversation="conv-assigned"
            ),
            # the caller's spans arrive WAIT_S after groupbytrace released the callee's: two fragments
            "fragmented": send(
                conversation="conv-e",
                context_id="conv-e",
                callee_service="late",
                callee_conversation="conv-new-e",
                linger=2 * WAIT_S,
            ),
        }
        # every span: caller 2, callee 3 per attempt (2 attempts in "retried")
        expected = 2 * len(traces) + 3 * (len(traces) + 1)

        def all_exported():
            spans = cs.read_spans(collector.spans_file)
            return spans if len(spans) >= expected else None

        spans = cs.wait_for(all_exported, 30, "every span in the file exporter's output")
        yield collector, traces, spans
    finally:
        collector.stop()


def entry_spans(spans, trace_id):
    return [s for s in spans if s.trace_id == trace_id and s.kind == SERVER]


def test_matching_hop_is_continued(run):
    _, traces, spans = run
    (entry,) = entry_spans(spans, traces["correct"])
    assert entry.attributes["agent_identity.hop.result"] == "continued"
    assert entry.attributes["agent_identity.hop.mismatch"] is False
    assert entry.attributes["agent_identity.hop.caller.service.name"] == "orchestrator"


def test_forgetful_callee_is_a_mismatch(run):
    _, traces, spans = run
    (entry,) = entry_spans(spans, traces["forgetful"])
    assert entry.service == "forgetful"
    assert entry.attributes["agent_identity.hop.result"] == "context_changed"
    assert entry.attributes["agent_identity.hop.mismatch"] is True
    assert entry.attributes["agent_identity.hop.caller.conversation.id"] == "conv-b"
    assert entry.attributes["agent_identity.hop.callee.conversation.id"] == "conv-new-b"


def test_first_turn_is_not_compared(run):
    _, traces, spans = run
    (entry,) = entry_spans(spans, traces["first_turn"])
    assert entry.attributes["agent_identity.hop.result"] == "not_required"
    assert "agent_identity.hop.mismatch" not in entry.attributes


def test_fragmented_trace_is_joined_and_judged_whole(run):
    """The caller's spans arrive after groupbytrace released the callee's: the join holds the
    callee's fragment until its caller side arrives and judges the hop once, whole. The callee
    "late" answered in conv-new-e when asked to continue conv-e: a mismatch, nothing unresolved."""
    collector, traces, spans = run
    (entry,) = entry_spans(spans, traces["fragmented"])
    assert entry.attributes["agent_identity.hop.result"] == "context_changed"
    assert entry.attributes["agent_identity.hop.mismatch"] is True
    text = collector.metrics()
    assert "agent_identity_unresolved{" not in text
    assert re.search(r'^agent_identity_mismatches\{[^}]*callee_service="late"[^}]*\} 1$', text, re.M)


def test_second_execution_of_one_delegation_is_marked(run):
    _, traces, spans = run
    entries = entry_spans(spans, traces["retried"])
    assert len(entries) == 2
    duplicate = [e.attributes.get("agent_identity.delegation.duplicate") for e in entries]
    assert sorted(duplicate, key=bool) == [None, True]


def test_every_span_leaves_and_backfill_reaches_the_chat_span(run):
    _, traces, spans = run
    for name, trace_id in traces.items():
        attempts = 2 if name == "retried" else 1
        assert len([s for s in spans if s.trace_id == trace_id]) == 2 + 3 * attempts, name
    (chat,) = [s for s in spans if s.trace_id == traces["forgetful"] and s.name == "chat model"]
    assert chat.attributes["gen_ai.conversation.id"] == "conv-new-b"
    assert chat.attributes["agent_identity.conversation.backfilled"] is True


def test_telemetry_endpoint_counts_by_service_never_by_conversation(run):
    collector, _, _ = run
    text = collector.metrics()
    assert re.search(r'^agent_identity_mismatches\{[^}]*callee_service="forgetful"[^}]*\} 1$', text, re.M)
    assert re.search(r'^agent_identity_duplicate_executions\{[^}]*callee_service="specialist"[^}]*\} 1$', text, re.M)
    assert "conv-" not in text


@pytest.mark.skipif(bool(cs.prometheus_missing()), reason=cs.prometheus_missing() or "prometheus present")
def test_prometheus_reads_the_mismatch_count_and_fires_the_alert(run, tmp_path):
    collector, _, _ = run
    prom = cs.start_prometheus(tmp_path / "prometheus", [f"127.0.0.1:{collector.metrics_port}"])
    try:

        def mismatches():
            result = prom.query("sum by (caller_service, callee_service) (agent_identity_mismatches)")
            return {
                (r["metric"]["caller_service"], r["metric"]["callee_service"]): float(r["value"][1]) for r in result
            }

        assert cs.wait_for(mismatches, 30, "agent_identity_mismatches in Prometheus") == {
            ("orchestrator", "forgetful"): 1.0,
            ("orchestrator", "late"): 1.0,
        }
        alerts = cs.wait_for(
            lambda: prom.query('ALERTS{alertname="AgentIdentityConversationMismatch"}'), 30, "the mismatch alert"
        )
        assert {a["metric"]["callee_service"] for a in alerts} == {"forgetful", "late"}
    finally:
        prom.stop()
