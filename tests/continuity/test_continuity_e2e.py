"""Issue 16 through real processes: the collector (single node + the python-metrics overlay), A2A
specialists and callers under ``opentelemetry-instrument``, their metrics sent over OTLP to the
collector's metrics pipeline. Ground truth both ways: what each caller really sent (its records)
and how many messages the specialist's model saw per request.

- a caller that restarts its delegate every turn (``examples/restarting_caller.py``, through
  ``A2AAgent`` and a direct a2a-sdk send) is marked on every turn from 2 and counted; the same
  caller keeping the context is never marked; a deliberate new task is not marked;
- the collector sees those hops as first turns (no peer shows the restart): only the caller can;
- the orchestrator of ``examples/orchestrator.py`` against ``A2AExecutor`` (keeps the contextId,
  state lost) and a session-keeping executor: ``agent_identity.state.not_resumed`` counts exactly
  the sends whose callee started from nothing, and the re-sent delegation counts one duplicate.
"""

from __future__ import annotations

import os
import time

import a2a_harness as h
import pytest

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
OVERLAY = h.PYTHON_METRICS_OVERLAY
PREVIOUS = "agent_identity.conversation.previous_id"
METRICS_ENV = h.METRICS_ENV

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]

#: caller service -> restarting_caller.py arguments
CALLERS = {
    "restarting-a2a-agent": [],
    "keeping-a2a-agent": ["--keep"],
    "restarting-direct": ["--direct"],
    "keeping-direct": ["--direct", "--keep"],
    "new-task-direct": ["--direct", "--keep", "--new-task-turn", "2"],
}


def run_caller(service: str, url: str, endpoint: str, args: list[str]) -> list[dict]:
    return h.run_restarting_caller(service, url, endpoint, *args)


read_metrics, total = h.read_metrics, h.metric_total


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    work = tmp_path_factory.mktemp("continuity")
    metrics_file = work / "metrics.jsonl"
    os.environ["AGENT_IDENTITY_METRICS_FILE"] = str(metrics_file)
    try:
        collector = h.start_collector(COLLECTOR, work, overlays=(OVERLAY,))
    finally:
        del os.environ["AGENT_IDENTITY_METRICS_FILE"]
    procs, truth = [], work / "truth.jsonl"
    try:
        servers = {}
        for name, shape in (("plain", "plain"), ("a2a-executor", "a2a-executor"), ("session-local", "session-local")):
            proc, url = h.start_specialist(name, collector.endpoint, shape=shape, truth=truth, **METRICS_ENV)
            procs.append(proc)
            servers[name] = url
        callers = {svc: run_caller(svc, servers["plain"], collector.endpoint, args) for svc, args in CALLERS.items()}
        orchestrated, _ = h.run_orchestrator(
            [("a2a-executor", servers["a2a-executor"]), ("session-local", servers["session-local"])],
            collector.endpoint,
            turns=3,
            retry_turn=2,
            **METRICS_ENV,
        )
        sends = sum(len(r) for r in callers.values()) + len(orchestrated)
        spans = h.wait_for_hops(collector.spans_file, sends)
    finally:
        for proc in procs:
            h.stop(proc)  # SIGTERM: uvicorn shuts down, the SDK flushes its last metrics
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the metrics of every process (each flushes at exit)
        metrics = read_metrics(metrics_file)
        if {svc for svc, _n, _l in metrics} >= {"orchestrator", "a2a-executor", *CALLERS}:
            break
        time.sleep(0.5)
    time.sleep(2)  # the collector's batch of the last flushes
    metrics = read_metrics(metrics_file)
    collector.stop()
    yield callers, orchestrated, spans, metrics, h.read_truth(truth)


def restarted(rec: dict) -> bool:
    """Ground truth from the caller: a context was in effect and this send asked for another (or none)."""
    return bool(rec["previous"]) and rec["requested"] != rec["previous"] and not rec["deliberate"]


def client_span(spans, service: str, trace_id: str):
    found = [
        s
        for s in spans
        if s.service == service
        and s.trace_id == trace_id
        and s.kind == 3
        and s.attributes.get("gen_ai.operation.name") == "invoke_agent"
    ]
    assert len(found) == 1, (service, trace_id, [s.name for s in found])
    return found[0]


@pytest.mark.parametrize("service", CALLERS)
def test_restarted_delegates_are_marked_every_turn_from_2_and_keeping_callers_never(world, service):
    callers, _, spans, _, truth = world
    records = callers[service]
    assert [r["turn"] for r in records] == [1, 2, 3]
    for rec in records:
        seen = truth[rec["trace_id"]]
        if restarted(rec):  # the specialist really started from nothing
            assert seen == [1], rec
        elif rec["turn"] > 1 and not rec["deliberate"]:
            assert seen[0] > 1, rec  # it continued
        span = client_span(spans, service, rec["trace_id"])
        assert span.attributes.get(PREVIOUS) == (rec["previous"] if restarted(rec) else None), rec
    expected = {"restarting-a2a-agent": 2, "restarting-direct": 2}.get(service, 0)
    assert sum(map(restarted, records)) == expected


@pytest.mark.parametrize("service", CALLERS)
def test_the_metric_counts_the_restarts_by_caller_service_and_remote_agent(world, service):
    callers, _, _, metrics, _ = world
    expected = sum(map(restarted, callers[service]))
    direct = "--direct" in CALLERS[service]
    # the remote Agent Card's name; A2AAgent(url=...) has a minimal card: its own name, "specialist"
    agent, framework = ("plain", "a2a") if direct else ("specialist", "agent_framework")
    assert total(metrics, service, "agent_identity.delegate.restarts") == expected
    assert total(metrics, service, "agent_identity.delegate.restarts", agent=agent, framework=framework) == expected
    for (_svc, _name, labels), _value in metrics.items():  # bounded labels only, never an id
        assert {k for k, _ in labels} <= {"service", "agent", "framework", "reason"}


def test_the_collector_sees_restarted_hops_as_first_turns(world):
    callers, _, spans, _, _ = world
    hops = {s.trace_id: s.attributes["agent_identity.hop.result"] for s in h.hop_spans(spans)}
    for service in ("restarting-a2a-agent", "restarting-direct"):
        for rec in callers[service]:
            assert hops[rec["trace_id"]] == "first_turn", rec  # no peer shows it: the caller's mark does
    for rec in callers["keeping-direct"][1:]:
        assert hops[rec["trace_id"]] == "continued"


def test_state_not_resumed_and_duplicates_match_the_specialists_ground_truth(world):
    _, orchestrated, _, metrics, truth = world
    for service in ("a2a-executor", "session-local"):
        records = [r for r in orchestrated if r["specialist"] == service]
        retries = [r for r in records if r["attempt"] > 1]
        # one request per record (a retry's trace holds both attempts' counts, in order): continuation
        # requested (a contextId sent) and the callee's model saw only the new message
        forgot = sum(1 for r in records if r["requested"] and truth[r["trace_id"]][r["attempt"] - 1] <= 1)
        assert total(metrics, service, "agent_identity.state.not_resumed") == forgot
        assert (
            total(metrics, service, "agent_identity.state.not_resumed", agent=service, framework="agent_framework")
            == forgot
        )
        assert total(metrics, service, "agent_identity.delegation.duplicate_deliveries", framework="a2a") == len(
            retries
        )
        # both shapes run their agent again for the re-sent message: each retry is also a second execution
        assert total(metrics, service, "agent_identity.delegation.duplicate_executions", framework="a2a") == len(
            retries
        )
    assert total(metrics, "a2a-executor", "agent_identity.state.not_resumed") == 3  # turns 2, 2 again, 3
    assert total(metrics, "session-local", "agent_identity.state.not_resumed") == 0
    assert total(metrics, "plain", "agent_identity.delegation.duplicate_deliveries") == 0
