"""The serving process's memory of executed delegations (``continuity.note_execution``): the first
outermost run of a request executes its delegation; a second execution of the same delegation, in
any later request, marks that request's SERVER span; a request answered without a run executes
nothing. Real SDK spans; the runs are real LangGraph runs started in the request's context."""

from __future__ import annotations

import uuid

from langgraph.graph import END, START, StateGraph
from opentelemetry import context as otel_context
from opentelemetry import trace

from otel_agent_identity import continuity

DUPLICATE = "agent_identity.delegation.duplicate"


def _graph():
    g = StateGraph(dict)
    g.add_node("work", lambda s: {"done": True})
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g.compile(name="work")


def _serve(tracer, key: str, runs: int):
    """One inbound request of delegation ``key`` whose executor starts ``runs`` graph runs."""
    span = tracer.start_span("SendMessage", kind=trace.SpanKind.SERVER)
    ctx = continuity.with_served_delegation(trace.set_span_in_context(span), span, key, "payments")
    token = otel_context.attach(ctx)
    try:
        for _ in range(runs):
            _graph().invoke({})
    finally:
        otel_context.detach(token)
        span.end()
    return span


def test_second_execution_of_a_delegation_marks_its_request(instrumentor, tracer_provider):
    tracer = tracer_provider.get_tracer("test")
    key = uuid.uuid4().hex
    first = _serve(tracer, key, runs=2)  # two runs in one request: one execution
    replay = _serve(tracer, key, runs=0)  # answered from a ledger: no execution
    again = _serve(tracer, key, runs=1)
    other = _serve(tracer, uuid.uuid4().hex, runs=1)
    assert DUPLICATE not in first.attributes and DUPLICATE not in replay.attributes
    assert again.attributes[DUPLICATE] is True
    assert DUPLICATE not in other.attributes


def test_runs_outside_a_served_request_execute_nothing(instrumentor, tracer_provider):
    _graph().invoke({})
    continuity.note_execution()  # nothing to claim: never raises
