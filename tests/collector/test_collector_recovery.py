# SPDX-License-Identifier: Apache-2.0
"""End to end, the recovery test of the founding essay (issue 27), as real processes through the
built collector, single node and two tiers.

A LangGraph checkout (``examples/checkout_orchestrator.py``: SQLite checkpointer, ``prepare ->
charge -> finish``) delegates ``charge`` inside ``delegation(key="order-N:charge")`` with a 1 s
client timeout to a payment specialist (``examples/charge_specialist.py``: an a2a-sdk
``AgentExecutor`` whose work is one LangGraph run) that completes the charge at once and holds its
first response 3 s. The first checkout process times out and exits before ``charge`` is
checkpointed; a second one resumes and retries (30 s timeout): the same delegation id, in a new trace. Ground
truth: the specialist's own record of the charges it made.

- naive specialist: it charges twice; the second execution is flagged and counted once;
- idempotent specialist (a ledger keyed by ``otel_agent_identity.upstream().delegation_id``): it
  charges once and replays; the retry is a duplicate delivery, never a duplicate execution;
- a first attempt refused at connect (nothing listening) never reached a callee: not a duplicate.
"""

from __future__ import annotations

import threading

import a2a_harness as h
import collector_support as cs
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.collector]

SERVER = 2  # OTLP span kind
# groupbytrace's wait, from a trace's first span: the specialist's graph spans leave at once, its
# SERVER span only after the 3 s hold; the wait must cover that and the exports around it
WAIT = "8s"
DUPLICATE, REDELIVERED = "agent_identity.delegation.duplicate", "agent_identity.delegation.redelivered"


@pytest.fixture(scope="module", params=["single-node", "two-tier"])
def world(request, tmp_path_factory):
    """The collector(s), both specialists, and the three scenarios run once per topology."""
    work = tmp_path_factory.mktemp(request.param)
    collectors, procs = [], []
    try:
        if request.param == "single-node":
            collectors.append(cs.start_collector("single-node.yaml", work, GROUPBYTRACE_WAIT=WAIT))
            endpoint, tier2 = collectors[0].endpoint, collectors
        else:
            tier2 = [
                cs.start_collector("tier2-identity.yaml", work, name=n, GROUPBYTRACE_WAIT=WAIT)
                for n in ("tier2-a", "tier2-b")
            ]
            collectors += tier2
            endpoints = ", ".join(f"127.0.0.1:{c.otlp_grpc}" for c in tier2)
            collectors.append(
                cs.start_collector("tier1-loadbalancer.yaml", work, name="tier1", TIER2_ENDPOINTS=f"[{endpoints}]")
            )
            endpoint = collectors[-1].endpoint
        urls = {}
        for kind in ("naive", "idempotent"):
            proc, urls[kind] = h.start_charge_specialist(
                f"payments-{kind}", endpoint, work / f"{kind}.jsonl", idempotent=kind == "idempotent"
            )
            procs.append(proc)
        refused = f"http://127.0.0.1:{cs.free_port()}/"  # nothing listens there
        records, errors = {}, []

        def run(name, *scenarios):
            try:
                for args in scenarios:
                    records[args[3]] = h.run_recovery(*args)
            except Exception as exc:
                errors.append((name, exc))

        threads = [
            threading.Thread(
                target=run,
                args=(
                    "naive",
                    (urls["naive"], work / "naive.sqlite", endpoint, "checkout-naive", "order-42"),
                    (urls["naive"], work / "refused.sqlite", endpoint, "checkout-refused", "order-43", refused),
                ),
            ),
            threading.Thread(
                target=run,
                args=(
                    "idempotent",
                    (urls["idempotent"], work / "idem.sqlite", endpoint, "checkout-idempotent", "order-42"),
                ),
            ),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not errors, errors

        def spans_and_metrics():
            spans = [s for c in tier2 for s in cs.read_spans(c.spans_file)]
            entries = [s for s in spans if s.kind == SERVER and s.service.startswith("payments")]
            done = len([s for s in entries if "agent_identity.hop.result" in s.attributes]) >= 5
            return (spans, [h.scrape(c.metrics_port) for c in tier2]) if done else None

        spans, samples = cs.wait_for(spans_and_metrics, 120, "the five deliveries judged")
        yield dict(
            topology=request.param,
            records=records,
            spans=spans,
            samples=[x for s in samples for x in s],
            charges={k: h.read_charges(work / f"{k}.jsonl") for k in ("naive", "idempotent")},
        )
    finally:
        for proc in procs:
            h.stop(proc)
        for c in reversed(collectors):
            c.stop()


def _entries(world, caller: str) -> list:
    """The payment specialist's SERVER spans of ``caller``'s deliveries, in delivery order."""
    traces = [r["trace_id"] for r in world["records"][caller]]
    entries = [s for s in world["spans"] if s.kind == SERVER and s.trace_id in traces]
    return sorted(entries, key=lambda s: traces.index(s.trace_id))


def _metric(world, name: str, caller: str) -> float:
    return h.metric_sum(world["samples"], name, caller_service=caller)


def test_both_attempts_are_one_delegation_in_two_traces(world):
    for caller in ("checkout-naive", "checkout-idempotent", "checkout-refused"):
        first, second = world["records"][caller]
        assert first["delegation_id"] == second["delegation_id"] and first["trace_id"] != second["trace_id"]


def test_naive_specialist_second_execution_flagged_and_counted_once(world):
    charges = [
        c
        for c in world["charges"]["naive"]
        if c["trace_id"] in {r["trace_id"] for r in world["records"]["checkout-naive"]}
    ]
    assert len(charges) == 2 and len({c["execution"] for c in charges}) == 2  # it really charged twice
    first, second = _entries(world, "checkout-naive")
    assert not first.attributes.get(DUPLICATE) and second.attributes.get(DUPLICATE) is True
    assert second.attributes.get(REDELIVERED) is True
    assert _metric(world, "agent_identity_duplicate_executions", "checkout-naive") == 1
    assert _metric(world, "agent_identity_duplicate_deliveries", "checkout-naive") == 1


def test_idempotent_specialist_replay_is_a_delivery_not_an_execution(world):
    charges = world["charges"]["idempotent"]
    delegation = world["records"]["checkout-idempotent"][0]["delegation_id"]
    assert [c["delegation"] for c in charges] == [delegation]  # charged once, keyed by upstream()
    first, second = _entries(world, "checkout-idempotent")
    assert not any(s.attributes.get(DUPLICATE) for s in (first, second))
    assert second.attributes.get(REDELIVERED) is True and not first.attributes.get(REDELIVERED)
    assert second.attributes.get("agent_identity.upstream.delegation.id") == delegation
    assert _metric(world, "agent_identity_duplicate_executions", "checkout-idempotent") == 0
    assert _metric(world, "agent_identity_duplicate_deliveries", "checkout-idempotent") == 1


def test_attempt_refused_at_connect_is_not_a_duplicate(world):
    records = world["records"]["checkout-refused"]
    charges = [c for c in world["charges"]["naive"] if c["delegation"] == records[0]["delegation_id"]]
    assert len(charges) == 1
    (entry,) = _entries(world, "checkout-refused")  # the refused attempt reached no callee
    assert entry.trace_id == records[1]["trace_id"]
    assert not entry.attributes.get(DUPLICATE) and not entry.attributes.get(REDELIVERED)
    assert _metric(world, "agent_identity_duplicate_executions", "checkout-refused") == 0
    assert _metric(world, "agent_identity_duplicate_deliveries", "checkout-refused") == 0


def test_timed_out_attempt_is_judged_and_its_completed_work_visible(world):
    for caller in ("checkout-naive", "checkout-idempotent"):
        first, second = _entries(world, caller)
        # the send timed out (its CLIENT span has no context): still judged against the callee's entry
        assert first.attributes["agent_identity.hop.result"] == "first_turn"
        assert first.attributes.get("agent_identity.hop.response_lost") is True
        assert second.attributes["agent_identity.hop.result"] == "first_turn"
        assert "agent_identity.hop.response_lost" not in second.attributes
        assert _metric(world, "agent_identity_lost_responses", caller) == 1
    assert _metric(world, "agent_identity_lost_responses", "checkout-refused") == 0
    hops = h.metric_sum(world["samples"], "agent_identity_hops", result="not_required")
    assert hops == 0
