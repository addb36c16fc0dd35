"""Issue 16, shape 2 with the essay's example: a LangGraph node runs an Agno agent. Without a mapping
Agno makes its own session id (another story: marked ``agent_identity.conversation.parent_differs``
and counted); passing the graph's thread id as Agno's ``session_id`` with the one-liner
``otel_agent_identity.conversation_id()`` makes one conversation (nothing marked). Ground truth: the
``session_id`` Agno reports on its ``RunOutput``."""

from __future__ import annotations

import pytest

from metric_points import metric_points

pytest.importorskip("langgraph")

from agno_support import make_agent
from langgraph.graph import END, START, StateGraph
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from typing_extensions import TypedDict

import otel_agent_identity

DIFFERS = "agent_identity.conversation.parent_differs"


class S(TypedDict):
    q: str
    used: str


@pytest.mark.parametrize("mapped", [False, True])
def test_agno_agent_in_a_langgraph_node(tracer_provider, exporter, mapped):
    reader = InMemoryMetricReader()
    inst = otel_agent_identity.AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
    try:
        agent = make_agent("helper", prefix="agno")

        def node(state: S) -> dict:
            session_id = otel_agent_identity.conversation_id() if mapped else None
            out = agent.run(state["q"], session_id=session_id)
            return {"used": out.session_id}

        g = StateGraph(S)
        g.add_node("ask", node)
        g.add_edge(START, "ask")
        g.add_edge("ask", END)
        result = g.compile(name="planner").invoke(
            {"q": "weather in Paris?", "used": ""}, config={"configurable": {"thread_id": "thread-9"}}
        )
    finally:
        inst.uninstrument()
    spans = exporter.get_finished_spans()
    (inner,) = [s for s in spans if s.name == "invoke_agent helper"]
    truth_differs = result["used"] != "thread-9"
    assert truth_differs == (not mapped)
    assert inner.attributes["gen_ai.conversation.id"] == result["used"]
    assert inner.attributes["agent_identity.parent.conversation.id"] == "thread-9"
    assert (inner.attributes.get(DIFFERS) is True) == truth_differs
    points = metric_points(reader, "agent_identity.conversation.parent_differs")
    assert sum(p.value for p in points) == int(truth_differs)
    assert all(p.attributes["framework"] == "agno" and p.attributes["agent"] == "helper" for p in points)
