"""``agent_identity.conversation.resumed`` of LangGraph runs, read from what the run's own loop
loaded (its checkpoint) or was given (earlier messages in the input), against what the offline
model really saw (``seen=<n>``): both ways, sync and async."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from lg_support import agent_spans, counter_graph, make_agent, seen_counts

RESUMED = "agent_identity.conversation.resumed"


def _resumed(exporter) -> list:
    return [s.attributes.get(RESUMED) for s in agent_spans(exporter.get_finished_spans())]


def test_a_thread_with_a_checkpoint_resumed_a_new_thread_did_not(instrumentor, exporter):
    agent = make_agent()
    seen = []
    for thread in ("t-1", "t-1", "t-2"):
        out = agent.invoke({"messages": [HumanMessage("Paris")]}, {"configurable": {"thread_id": thread}})
        seen.append(seen_counts(out)[-1])
    assert seen == [3, 7, 3]  # the ground truth: t-1 turn 2 saw turn 1, t-2 started from nothing
    assert _resumed(exporter) == [False, True, False]


def test_a_fresh_thread_every_request_never_resumed(instrumentor, exporter):
    agent = make_agent()
    for n in range(3):
        out = agent.invoke({"messages": [HumanMessage("Paris")]}, {"configurable": {"thread_id": f"new-{n}"}})
        assert seen_counts(out)[-1] == 3
    assert _resumed(exporter) == [False, False, False]


def test_a_stateless_graph_fed_the_whole_history_resumed(instrumentor, exporter):
    agent = make_agent(checkpointer=None)
    history: list = []
    seen = []
    for _turn in range(3):
        history.append(HumanMessage("Paris"))
        out = agent.invoke({"messages": list(history)})
        seen.append(seen_counts(out)[-1])
        history = list(out["messages"])
    assert seen == [3, 7, 11]
    assert _resumed(exporter) == [False, True, True]


def test_streams_and_async_runs_record_it_too(instrumentor, exporter):
    agent = make_agent()
    cfg = {"configurable": {"thread_id": "s-1"}}
    list(agent.stream({"messages": [HumanMessage("Paris")]}, cfg))

    async def go():
        await agent.ainvoke({"messages": [HumanMessage("Paris")]}, cfg)
        async for _ in agent.astream({"messages": [HumanMessage("Paris")]}, {"configurable": {"thread_id": "s-2"}}):
            pass

    asyncio.run(go())
    assert _resumed(exporter) == [False, True, False]


def test_a_graph_without_messages_records_the_checkpoint_or_nothing(instrumentor, exporter):
    saved = counter_graph("counted", checkpointer=InMemorySaver())
    plain = counter_graph("plain")
    cfg = {"configurable": {"thread_id": "c-1"}}
    saved.invoke({"x": 1}, cfg)
    saved.invoke({"x": 1}, cfg)
    plain.invoke({"x": 1})
    spans = {(s.name, s.attributes.get(RESUMED)) for s in agent_spans(exporter.get_finished_spans())}
    assert [s.attributes.get(RESUMED) for s in agent_spans(exporter.get_finished_spans())] == [False, True, None]
    assert ("invoke_agent plain", None) in spans


@pytest.mark.parametrize(
    "messages,expected",
    [
        ([HumanMessage("a")], False),
        ([HumanMessage("a"), AIMessage("b"), HumanMessage("c")], True),
        ({"x": 1}, None),
        (None, None),
        ("text", None),
    ],
)
def test_carries_history(messages, expected):
    from otel_agent_identity.adapters.langgraph import carries_history

    value = {"messages": messages} if isinstance(messages, list) else messages
    assert carries_history(value) is expected
