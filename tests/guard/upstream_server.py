"""A specialist that answers with what ``otel_agent_identity.upstream()`` returned where its work ran:
``--kind plain`` in an a2a-sdk ``AgentExecutor.execute``, ``--kind a2a-executor`` in the chat call
of an Agent Framework agent served by ``A2AExecutor`` (inside the framework's run). The reply is
the JSON of the ids (``null`` when None). Run under ``opentelemetry-instrument``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from a2a.helpers.proto_helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor
from a2a_serve import serve
from agent_framework.a2a import A2AExecutor
from offline_chat import OfflineChatClient

import otel_agent_identity
from agent_framework import Agent, Content


def seen() -> str:
    up = otel_agent_identity.upstream()
    return json.dumps(up._asdict() if up is not None else None)


class PlainExecutor(AgentExecutor):
    async def execute(self, context, event_queue) -> None:
        await event_queue.enqueue_event(new_text_message(seen(), context_id=context.context_id))

    async def cancel(self, context, event_queue) -> None:
        return None


class UpstreamChatClient(OfflineChatClient):
    """The offline model answering with the ids ``upstream()`` gives inside the agent run."""

    def _reply(self, messages, options):
        return [Content.from_text(seen())]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="upstream")
    parser.add_argument("--kind", choices=("plain", "a2a-executor"), default="plain")
    args = parser.parse_args()
    if args.kind == "plain":
        executor = PlainExecutor()
    else:
        executor = A2AExecutor(Agent(client=UpstreamChatClient(mode="local", prefix=args.name), name=args.name))
    serve(executor, args.name, args.port)


if __name__ == "__main__":
    main()
