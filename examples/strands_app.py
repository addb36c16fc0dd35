"""A Strands Agents orchestrator whose tool asks a remote agent over A2A (a2a-sdk 0.3), several
conversations, their turns interleaved (turn 1 of each, then turn 2 of each, ...).

Each conversation is an ``Agent`` on a ``FileSessionManager(session_id=<conversation>)`` over the
offline model of ``offline_strands.py``, with one tool, ``ask_specialist(input)``:
``--via client`` (default) sends with an a2a-sdk 0.3 client, continuing the contextId the
specialist answered in on the conversation's earlier turn; ``--via a2a-agent`` asks through
Strands' ``A2AAgent``, which never sends a contextId. No tracing code: run it under the launcher,
e.g.

    OTEL_SERVICE_NAME=strands-app opentelemetry-instrument python examples/strands_app.py \
        --specialist http://127.0.0.1:9131/ --conversation conv-a --conversation conv-b --turns 2

Prints one JSON line per turn on stdout: ``{"session", "turn", "seen", "requested", "context_id",
"trace_id"}`` (``seen``: how many messages the orchestrator's model saw at the end of the turn;
``requested``/``context_id``: the contextId sent (None on a first turn, and always with
``A2AAgent``) and the one answered in; ``trace_id``: the turn's trace).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TextPart
from offline_strands import OfflineModel, seen
from opentelemetry import trace
from strands import Agent, tool
from strands.agent.a2a_agent import A2AAgent
from strands.session.file_session_manager import FileSessionManager


async def converse(url: str, conversations: list[str], turns: int, via: str) -> None:
    storage = tempfile.mkdtemp(prefix="strands-app-")
    contexts: dict[str, str] = {}
    current: dict = {}
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        remote = A2AAgent(endpoint=url, name=card.name)

        @tool
        async def ask_specialist(input: str) -> str:
            """Asks the remote specialist (over A2A)."""
            current["trace_id"] = format(trace.get_current_span().get_span_context().trace_id, "032x")
            if via == "a2a-agent":
                current["requested"], current["context_id"] = None, None
                return str(await remote.invoke_async(input))
            requested = contexts.get(current["session"])
            message = Message(
                role=Role.user,
                parts=[Part(root=TextPart(text=input))],
                message_id=uuid.uuid4().hex,
                context_id=requested,
            )
            event = [event async for event in client.send_message(message)][-1]
            reply = event[0] if isinstance(event, tuple) else event  # a (Task, update) pair, or a Message
            contexts[current["session"]] = reply.context_id
            current["requested"], current["context_id"] = requested, reply.context_id
            parts = [p for a in getattr(reply, "artifacts", None) or () for p in a.parts] or (reply.parts or [])
            return "".join(p.root.text for p in parts if getattr(p.root, "text", None))

        for turn in range(1, turns + 1):
            for session in conversations:
                current.clear()
                current["session"] = session
                agent = Agent(
                    name="orchestrator",
                    model=OfflineModel(),
                    tools=[ask_specialist],
                    callback_handler=None,
                    session_manager=FileSessionManager(session_id=session, storage_dir=storage),
                )
                answer = str(await agent.invoke_async(f"question {turn}"))
                record = {"session": session, "turn": turn, "seen": seen(answer), **current}
                print(json.dumps(record), flush=True)
                print(f"[{session}] turn {turn}: {answer}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specialist", required=True)
    parser.add_argument("--conversation", action="append", required=True)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--via", choices=("client", "a2a-agent"), default="client")
    args = parser.parse_args()
    asyncio.run(converse(args.specialist, args.conversation, args.turns, args.via))


if __name__ == "__main__":
    main()
