"""The five A2A specialist shapes, each its own process under ``opentelemetry-instrument``, through the
real collector: an ``A2AAgent`` caller running three turns on one session against each, and a direct
a2a-sdk client doing the same. The verdict on every hop must equal the ground truth, the number of
messages the callee's own model (or plain executor) saw: no false alarm and no miss.

Needs the collector binary: ``AGENT_IDENTITY_COLLECTOR`` (``make test-python`` sets it)."""

from __future__ import annotations

import os
import re
import time
import urllib.request

import a2a_harness as h
import pytest
from specialist import CONTINUES, SHAPES

from otel_agent_identity.report import hop_conversations

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
TURNS = 3

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("shapes")
    with h.collector_run(COLLECTOR, work) as (collector, procs):
        specialists = []
        for shape in SHAPES:
            proc, url = h.start_specialist(shape, collector.endpoint, shape=shape, truth=work / "truth.jsonl")
            procs.append(proc)
            specialists.append((shape, url))
        records = h.run_both_callers(specialists, collector.endpoint, TURNS)
        everything = records["a2a_agent"] + records["direct"]
        spans = h.wait_for_hops(collector.spans_file, len(everything))
        samples = _settled_counts(collector, len(everything))
        yield records, spans, h.read_truth(work / "truth.jsonl"), samples, collector


def _settled_counts(collector, hops: int):
    samples, deadline = [], time.monotonic() + 120  # bounded, generous: a loaded machine is slow, not wrong
    while time.monotonic() < deadline:
        samples = h.scrape(collector.metrics_port)
        if h.metric_sum(samples, "agent_identity_hops") >= hops:
            break
        time.sleep(0.5)
    return samples


def _hop(spans, trace_id):
    (hop,) = [s for s in h.hop_spans(spans) if s.trace_id == trace_id]
    return hop.attributes


@pytest.mark.parametrize("caller", ["a2a_agent", "direct"])
@pytest.mark.parametrize("shape", SHAPES)
def test_verdict_equals_the_models_own_history_count(run, caller, shape):
    records, spans, truth, _, _ = run
    recs = [r for r in records[caller] if r["specialist"] == shape]
    assert [r["turn"] for r in recs] == list(range(1, TURNS + 1))
    counts = [truth[r["trace_id"]] for r in recs]
    # the shape is what it claims: 1, 3, 5 when it continues, 1, 1, 1 when it forgets
    assert counts == ([[1], [3], [5]] if CONTINUES[shape] else [[1], [1], [1]])
    for rec, seen in zip(recs, counts, strict=False):
        a = _hop(spans, rec["trace_id"])
        forgot = h.expected_verdict(rec, seen)
        where = f"{shape} via {caller}, turn {rec['turn']}: {a}"
        if forgot is None:  # turn 1: nothing requested, never a mismatch
            assert rec["turn"] == 1 and a["agent_identity.hop.result"] == "first_turn", where
            assert a["agent_identity.hop.mismatch"] is False, where
        else:
            assert a["agent_identity.hop.mismatch"] is forgot, where
            # asked and answered: on a continued hop the entry span shows the id once (report.py)
            assert hop_conversations(a)[0] == rec["requested"], where
            if not forgot:
                assert "agent_identity.hop.requested_id" not in a, where
            want = (
                "continued"
                if not forgot
                else ("context_changed" if shape == "plain-new-context" else "state_not_resumed")
            )
            assert a["agent_identity.hop.result"] == want, where


def test_a_model_thread_is_not_a_mismatch_and_stays_on_the_hop(run):
    records, spans, _, _, _ = run
    for rec in records["a2a_agent"]:
        if rec["specialist"] == "session-service" and rec["turn"] > 1:
            a = _hop(spans, rec["trace_id"])
            assert hop_conversations(a) == (rec["requested"], rec["requested"])
            assert a["gen_ai.conversation.id"] == rec["requested"]  # the entry span's own: not repeated
            assert "agent_identity.hop.callee.conversation.id" not in a
            assert a["agent_identity.hop.callee.agent.conversation.id"].startswith("conv_session-service_")


def test_the_caller_alone_sees_a_callee_answering_elsewhere(run):
    records, spans, _, _, _ = run
    by_id = {s.span_id: s for s in spans}
    for caller in ("a2a_agent", "direct"):
        for rec in records[caller]:
            hop = next(s for s in h.hop_spans(spans) if s.trace_id == rec["trace_id"])
            client = by_id[hop.parent_id]  # the A2A CLIENT span, or a transport span below it
            while client.attributes.get("gen_ai.operation.name") != "invoke_agent":
                client = by_id[client.parent_id]
            client = client.attributes
            changed = rec["specialist"] == "plain-new-context" and rec["turn"] > 1
            assert client.get("agent_identity.conversation.changed") is (True if changed else None), rec
            assert client.get("agent_identity.conversation.requested_id") == rec["requested"], rec
            if caller == "a2a_agent" and changed:
                assert "differs" in rec["error"]  # A2AAgent itself refuses the answer
                assert hop.attributes["agent_identity.hop.result"] == "context_changed", rec
            # the caller received every answer (A2AAgent raised only after it): no response was lost
            assert "agent_identity.hop.response_lost" not in hop.attributes, rec


def test_metrics_count_flagged_hops_by_reason(run):
    _, _, _, samples, _ = run
    per_caller = TURNS - 1  # turns 2 and 3 of each forgetting shape, for each of the two callers
    assert (
        h.metric_sum(samples, "agent_identity_mismatches", callee_service="a2a-executor", reason="state_not_resumed")
        == 2 * per_caller
    )
    assert (
        h.metric_sum(samples, "agent_identity_mismatches", callee_service="plain-new-context", reason="context_changed")
        == 2 * per_caller
    )
    assert h.metric_sum(samples, "agent_identity_mismatches") == 4 * per_caller
    assert h.metric_sum(samples, "agent_identity_lost_responses") == 0  # every send got its answer
    assert h.metric_sum(samples, "agent_identity_hops", result="first_turn") == 2 * len(SHAPES)


def test_every_span_that_enters_the_collector_leaves_it(run):
    _, _, _, _, collector = run
    text, deadline = "", time.monotonic() + 120  # bounded, generous: a loaded machine is slow
    while time.monotonic() < deadline:
        text = urllib.request.urlopen(f"http://127.0.0.1:{collector.metrics_port}/metrics", timeout=5).read().decode()
        accepted = _sum(text, "otelcol_receiver_accepted_spans")
        if accepted and len(h.read_spans(collector.spans_file)) == accepted:
            break
        time.sleep(0.5)
    accepted = _sum(text, "otelcol_receiver_accepted_spans")
    assert accepted > 0 and len(h.read_spans(collector.spans_file)) == accepted
    # (the processor's own outgoing_items no longer equals its incoming_items: spans the join
    # releases at the end of a wait leave from its goroutine, uncounted there; processor README)
    assert _sum(text, "otelcol_processor_incoming_items", processor="agentidentity") >= _sum(
        text, "otelcol_processor_outgoing_items", processor="agentidentity"
    )


def _sum(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        m = re.match(rf"^{name}(?:_total)?(\{{.*\}})?\s+(\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
            total += float(m.group(2))
    return total
