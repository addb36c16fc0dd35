"""Issue 16, shape 2: an agent of another framework inside a run, in another story. A LangGraph node
runs an Agent Framework agent, or invokes another graph; the nested run records the parent's
conversation and, when its own differs with no mapping declared, is marked
``agent_identity.conversation.parent_differs`` and counted. Ground truth: the ids the frameworks
really used (the Agent Framework session's ``session_id``, the graph's ``thread_id``).
"""

from __future__ import annotations

import pytest

from metric_points import metric_points

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph
from offline_chat import OfflineChatClient
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from typing_extensions import TypedDict

import otel_agent_identity
from agent_framework import Agent

CONV = "gen_ai.conversation.id"
PARENT_CONV = "agent_identity.parent.conversation.id"
DIFFERS = "agent_identity.conversation.parent_differs"


@pytest.fixture
def reader():
    return InMemoryMetricReader()


@pytest.fixture
def instrumented(tracer_provider, exporter, reader):
    inst = otel_agent_identity.AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
    yield exporter
    inst.uninstrument()


def counted(reader, name: str) -> dict[tuple, int]:
    return {tuple(sorted(point.attributes.items())): point.value for point in metric_points(reader, name)}


class S(TypedDict):
    q: str
    used: str


def graph_calling_agent(agent: Agent, mapping: str):
    """A one-node graph whose node runs ``agent``; ``mapping``: how the node picks the session."""

    async def node(state: S) -> dict:
        if mapping == "mapped":  # the documented one-liner: the graph's thread id as the session id
            session = agent.create_session(session_id=otel_agent_identity.conversation_id())
        else:
            session = agent.create_session()
        if mapping == "declared":
            with otel_agent_identity.new_conversation():
                await agent.run(state["q"], session=session)
        else:
            await agent.run(state["q"], session=session)
        return {"used": session.session_id}

    g = StateGraph(S)
    g.add_node("ask", node)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g.compile(name="planner")


@pytest.mark.parametrize("mapping", ["own-session", "mapped", "declared"])
async def test_agent_framework_agent_in_a_langgraph_node(instrumented, reader, tracer_provider, mapping):
    agent = Agent(client=OfflineChatClient(mode="local", prefix="n"), name="helper")
    result = await graph_calling_agent(agent, mapping).ainvoke(
        {"q": "hello", "used": ""}, config={"configurable": {"thread_id": "thread-7"}}
    )
    spans = instrumented.get_finished_spans()
    (outer,) = [s for s in spans if s.name == "invoke_agent planner"]
    (inner,) = [
        s
        for s in spans
        if s.attributes.get("gen_ai.agent.name") == "helper"
        and s.attributes.get("gen_ai.operation.name") == "invoke_agent"
    ]
    truth_differs = result["used"] != "thread-7"  # what the agent really used vs the graph's thread
    assert outer.attributes[CONV] == "thread-7" and inner.attributes[CONV] == result["used"]
    assert truth_differs == (mapping != "mapped")
    marked = inner.attributes.get(DIFFERS) is True
    assert marked == (truth_differs and mapping != "declared")
    assert inner.attributes.get(PARENT_CONV) == "thread-7"  # recorded whenever the parent has one
    assert DIFFERS not in outer.attributes
    points = counted(reader, "agent_identity.conversation.parent_differs")
    assert sum(points.values()) == int(marked)
    if marked:
        (labels,) = points
        service = tracer_provider.resource.attributes["service.name"]  # the SDK default here
        assert dict(labels) == {"service": service, "agent": "helper", "framework": "agent_framework"}


@pytest.mark.parametrize("own_thread", [False, True])
def test_graph_invoked_in_a_node_with_or_without_its_own_thread(instrumented, reader, own_thread):
    class C(TypedDict):
        x: int

    inner_g = StateGraph(C)
    inner_g.add_node("inc", lambda s: {"x": s["x"] + 1})
    inner_g.add_edge(START, "inc")
    inner_g.add_edge("inc", END)
    inner = inner_g.compile(name="inner")

    def call_inner(state: C) -> dict:
        config = {"configurable": {"thread_id": "other-thread"}} if own_thread else None
        return inner.invoke(state, config=config)

    outer_g = StateGraph(C)
    outer_g.add_node("call", call_inner)
    outer_g.add_edge(START, "call")
    outer_g.add_edge("call", END)
    outer_g.compile(name="outer").invoke({"x": 0}, config={"configurable": {"thread_id": "main-thread"}})
    spans = instrumented.get_finished_spans()
    (inner_span,) = [s for s in spans if s.name == "invoke_agent inner"]
    assert inner_span.attributes[CONV] == ("other-thread" if own_thread else "main-thread")
    assert (inner_span.attributes.get(DIFFERS) is True) == own_thread
    assert sum(counted(reader, "agent_identity.conversation.parent_differs").values()) == int(own_thread)


async def test_no_parent_no_mark(instrumented, reader):
    agent = Agent(client=OfflineChatClient(mode="local", prefix="top"), name="solo")
    await agent.run("hi", session=agent.create_session())
    (span,) = [
        s
        for s in instrumented.get_finished_spans()
        if s.attributes.get("gen_ai.agent.name") == "solo"
        and s.attributes.get("gen_ai.operation.name") == "invoke_agent"
    ]
    assert PARENT_CONV not in span.attributes and DIFFERS not in span.attributes
    assert counted(reader, "agent_identity.conversation.parent_differs") == {}


@pytest.mark.parametrize("propagate", [True, False])
async def test_agent_framework_sub_agent_as_tool(instrumented, reader, propagate):
    """``as_tool(propagate_session=True)`` shares the parent's session: one story. The default
    private session is another conversation (the child's service assigns its own): marked."""
    from helpers import make_agent

    from agent_framework import Content

    child = make_agent("service", name="researcher", prefix="child")
    parent = make_agent("service", name="coordinator", prefix="parent")
    original = parent.client._reply
    parent.client._reply = lambda messages, options: [
        Content.from_function_call(c.call_id, c.name, arguments={"task": "look it up"})
        if c.type == "function_call" and c.name == "researcher"
        else c
        for c in original(messages, options)
    ]
    session = parent.create_session()
    await parent.run("please ask researcher", session=session, tools=[child.as_tool(propagate_session=propagate)])
    spans = instrumented.get_finished_spans()
    (inner,) = [s for s in spans if s.name == "invoke_agent researcher"]
    assert child.client.calls >= 1  # the sub-agent really ran
    truth_differs = not propagate  # a private session: the child's service gave it its own thread
    assert inner.attributes[PARENT_CONV] == session.service_session_id
    assert (inner.attributes.get(DIFFERS) is True) == truth_differs
    assert (inner.attributes[CONV] != session.service_session_id) == truth_differs
    assert sum(counted(reader, "agent_identity.conversation.parent_differs").values()) == int(truth_differs)
