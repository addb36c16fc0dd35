"""Offline LangGraph parts for the tests: the deterministic chat model of
``examples/offline_langchain.py`` (it calls a tool, then reports how many messages it saw: the
ground truth of conversation continuity), a tool, and graph builders.

The model makes a ``chat offline`` span and the tool an ``execute_tool get_weather`` span, as an
instrumented model client and tool would, so the tests can see which ids spans inside a run carry.
"""

from __future__ import annotations

import warnings
from typing import Any, TypedDict

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from offline_langchain import OfflineToolModel
from opentelemetry import trace

from span_tree import in_run  # noqa: F401  (re-exported to the suite)

CONV = "gen_ai.conversation.id"
EXEC = "agent_identity.execution.id"
PARENT = "agent_identity.parent.execution.id"
_tracer = trace.get_tracer("lg-tests")


@tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    with _tracer.start_as_current_span("execute_tool get_weather", attributes={"offline.city": city}):
        return f"sunny in {city}"


def make_agent(name: str = "weather_agent", checkpointer: Any = "memory"):
    """A prebuilt ReAct agent (a ``CompiledStateGraph``) over the offline model."""
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's
        return create_react_agent(
            OfflineToolModel(),
            [get_weather],
            name=name,
            checkpointer=InMemorySaver() if checkpointer == "memory" else checkpointer,
        )


def seen_counts(result: dict) -> list[int]:
    """The ``seen=<n>`` counts the model reported in a graph's final messages."""
    return [
        int(m.content.split()[0].split("=")[1])
        for m in result["messages"]
        if isinstance(m, AIMessage) and m.content.startswith("seen=")
    ]


class S(TypedDict):
    x: int


def counter_graph(name: str, node=None, checkpointer: Any = None):
    """A one-node StateGraph adding 1 to ``x`` (or running ``node``)."""
    g = StateGraph(S)
    g.add_node("step", node or (lambda s: {"x": s["x"] + 1}))
    g.add_edge(START, "step")
    g.add_edge("step", END)
    return g.compile(name=name, checkpointer=checkpointer)


def agent_spans(spans) -> list:
    return [s for s in spans if s.name.startswith("invoke_agent")]
