"""Offline LlamaIndex parts for the tests: agents on the offline model (it reports how many
conversation messages it saw: the ground truth of continuity), a tool that makes an
``execute_tool`` span, and span helpers."""

from __future__ import annotations

import json
from typing import Any

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from offline_llama_index import offline_llm
from opentelemetry import trace

from span_tree import in_run  # noqa: F401  (re-exported to the suite)

CONV = "gen_ai.conversation.id"
EXEC = "agent_identity.execution.id"
DELEG = "agent_identity.delegation.id"
PARENT = "agent_identity.parent.execution.id"
PARENT_CONV = "agent_identity.parent.conversation.id"
RESUMED = "agent_identity.conversation.resumed"
_tracer = trace.get_tracer("li-tests")


def get_weather(city: str) -> str:
    """Return the weather for a city."""
    with _tracer.start_as_current_span("execute_tool get_weather", attributes={"offline.city": city}):
        return f"sunny in {city}"


def weather_agent(name: str = "weather", tools: Any = None, **kwargs: Any) -> FunctionAgent:
    return FunctionAgent(
        name=name,
        description=f"{name} agent",
        llm=offline_llm(),
        tools=[get_weather] if tools is None else tools,
        system_prompt="be brief",
        **kwargs,
    )


def team() -> AgentWorkflow:
    """A root agent ``front`` that can hand off to ``weather``."""
    front = weather_agent("front", tools=[], can_handoff_to=["weather"])
    return AgentWorkflow(agents=[front, weather_agent()], root_agent="front")


def handoff_to(agent: str) -> str:
    """The user message on which the offline model calls the ``handoff`` tool."""
    return "call handoff " + json.dumps({"to_agent": agent, "reason": "its job"})


def weather_in(city: str) -> str:
    """The user message on which the offline model calls ``get_weather``."""
    return "call get_weather " + json.dumps({"city": city})


def agent_spans(spans) -> list:
    return [s for s in spans if s.name.startswith(("invoke_agent", "invoke_workflow"))]


def seen_on(spans) -> list[int]:
    """What the model saw, call by call (its ``chat offline`` spans, in start order)."""
    chats = sorted((s for s in spans if s.name == "chat offline"), key=lambda s: s.start_time)
    return [s.attributes["offline.seen"] for s in chats]
