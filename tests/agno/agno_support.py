"""Agents, a tool and span helpers shared by the Agno tests."""

from __future__ import annotations

import threading

from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.run import RunContext
from offline_agno_model import OfflineModel
from opentelemetry import trace

CONV = "gen_ai.conversation.id"
EXEC = "agent_identity.execution.id"
PARENT = "agent_identity.parent.execution.id"

_tracer = trace.get_tracer("agno-tests")
#: (run_id, session_id, thread name) of every get_weather call, from Agno's RunContext
TOOL_CALLS: list[tuple] = []


def get_weather(city: str, run_context: RunContext) -> str:
    """Return the weather for a city."""
    with _tracer.start_as_current_span("weather lookup"):
        TOOL_CALLS.append((run_context.run_id, run_context.session_id, threading.current_thread().name))
    return f"sunny in {city}"


def make_agent(name: str = "helper", prefix: str = "offline", **kwargs) -> Agent:
    kwargs.setdefault("db", InMemoryDb())
    kwargs.setdefault("add_history_to_context", kwargs["db"] is not None)
    kwargs.setdefault("tools", [get_weather])
    return Agent(name=name, model=OfflineModel(prefix=prefix), **kwargs)


def agent_spans(spans, name: str | None = None) -> list:
    return [
        s
        for s in spans
        if s.name.startswith(("invoke_agent", "invoke_workflow")) and (name is None or s.name.endswith(" " + name))
    ]


def inside(spans, agent_span) -> list:
    """Spans below ``agent_span`` in its trace (by parent links)."""
    by_id = {s.context.span_id: s for s in spans}
    out = []
    for span in spans:
        parent = span.parent
        while parent is not None:
            if parent.span_id == agent_span.context.span_id:
                out.append(span)
                break
            p = by_id.get(parent.span_id)
            parent = p.parent if p is not None else None
    return out
