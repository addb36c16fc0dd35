"""The whole product: collector + specialists + orchestrator, each its own process on 127.0.0.1:
one trace per turn across processes, and a re-sent delegation counted once as a duplicate.
(Verdicts against ground truth, per specialist shape: test_a2a_shapes.py.)

Needs the collector binary: ``AGENT_IDENTITY_COLLECTOR=/path/to/otelcol-agentidentity`` (``make
test-python`` sets it after ``make collector``)."""

from __future__ import annotations

import os
import time

import a2a_harness as h
import pytest

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One orchestrator run: 3 turns with each specialist, turn 2 to the first one re-sent."""
    collector = h.start_collector(COLLECTOR, tmp_path_factory.mktemp("collector"))
    procs = []
    try:
        specialists = []
        for name in ("session-local", "a2a-executor"):
            proc, url = h.start_specialist(name, collector.endpoint, shape=name)
            procs.append(proc)
            specialists.append((name, url))
        records, _ = h.run_orchestrator(specialists, collector.endpoint, turns=3, retry_turn=2)
        spans = h.wait_for_hops(collector.spans_file, len(records))
        samples, deadline = [], time.monotonic() + 120  # bounded, generous: a loaded machine is slow
        while time.monotonic() < deadline:
            samples = h.scrape(collector.metrics_port)
            if h.metric_sum(samples, "agent_identity_hops") >= len(records):
                break
            time.sleep(0.5)
        yield records, spans, samples
    finally:
        for proc in procs:
            h.stop(proc)
        collector.stop()


def _hops(spans, service):
    return [s for s in h.hop_spans(spans) if s.service == service]


def test_every_turn_is_one_trace_across_both_processes(run):
    records, spans, _ = run
    for rec in records:
        services = {s.service for s in spans if s.trace_id == rec["trace_id"]}
        assert {"orchestrator", rec["specialist"]} <= services


def test_the_retry_continues_and_only_the_per_request_session_is_flagged(run):
    _, spans, samples = run
    assert [s.attributes["agent_identity.hop.result"] for s in _hops(spans, "session-local")].count("continued") == 3
    assert h.metric_sum(samples, "agent_identity_mismatches", callee_service="session-local") == 0
    assert (
        h.metric_sum(samples, "agent_identity_mismatches", callee_service="a2a-executor", reason="state_not_resumed")
        == 2
    )


def test_retry_keeps_its_delegation_id_and_the_duplicate_is_counted_once(run):
    records, spans, samples = run
    retried = [r for r in records if r["turn"] == 2 and r["specialist"] == "session-local"]
    assert len(retried) == 2 and retried[0]["message_id"] == retried[1]["message_id"]
    by_id = {s.span_id: s for s in spans}
    hops = [s for s in _hops(spans, "session-local") if s.trace_id == retried[0]["trace_id"]]
    assert len(hops) == 2

    def delegation(span):
        while "agent_identity.delegation.id" not in span.attributes:
            span = by_id[span.parent_id]
        return span.attributes["agent_identity.delegation.id"]

    assert len({delegation(by_id[s.parent_id]) for s in hops}) == 1  # one delegation, two executions
    assert [bool(s.attributes.get("agent_identity.delegation.duplicate")) for s in hops].count(True) == 1
    assert not any(
        s.attributes.get("agent_identity.delegation.duplicate")
        for s in h.hop_spans(spans)
        if s.trace_id != retried[0]["trace_id"]
    )
    assert (
        h.metric_sum(
            samples,
            "agent_identity_duplicate_executions",
            caller_service="orchestrator",
            callee_service="session-local",
        )
        == 1
    )
