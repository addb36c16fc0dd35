"""Small helpers over exported spans."""

from __future__ import annotations

from offline_chat import OfflineChatClient, get_weather

from agent_framework import Agent

CONV = "gen_ai.conversation.id"
EXEC = "agent_identity.execution.id"


def make_agent(mode: str = "service", name: str = "helper", prefix: str = "offline", **kwargs) -> Agent:
    return Agent(client=OfflineChatClient(mode=mode, prefix=prefix), name=name, tools=[get_weather], **kwargs)


def by_execution(spans) -> dict[str, list]:
    out: dict[str, list] = {}
    for span in spans:
        out.setdefault(span.attributes.get(EXEC), []).append(span)
    return out


def agent_spans(spans) -> list:
    return [s for s in spans if s.name.startswith("invoke_agent")]
