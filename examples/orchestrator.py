"""An orchestrator agent that delegates to specialists over A2A, several turns per conversation.

Agent Framework ``Agent`` on the offline service-managed client, with one tool,
``get_weather(city)``, that asks a remote specialist. By default through ``A2AAgent`` (one A2A
session per orchestrator conversation, so the specialist is asked to continue the same contextId
every turn); with ``--direct`` through an a2a-sdk client (``send_message``), sending each turn the
contextId of the specialist's last reply. ``--stream``: either way over the streaming method
(``SendStreamingMessage``; A2A 0.3's ``message/stream``) when the specialist's card allows it. No
tracing code: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=orchestrator opentelemetry-instrument python examples/orchestrator.py \
        --specialist http://127.0.0.1:9101/ --turns 3 --retry-turn 2

``--specialist URL1,URL2`` is one specialist behind several replicas: the turns alternate between
them (one A2A session, one contextId).

``--retry-turn N`` re-sends turn N's delegation after the specialist completed it, as a client
does when the response is lost (same A2A ``message_id``, so the same delegation id: the collector
counts the second execution as a duplicate). Prints one JSON line per delegation on stdout:
``{"conversation", "turn", "attempt", "specialist", "message_id", "requested", "answered",
"error", "trace_id"}`` (``requested``: the contextId sent, null on a first turn; ``answered``:
the one the reply came in, also when A2AAgent refused it: its "context_id ('X') ... differs" error
names it; ``error``: what the send raised).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import Message as A2AMessage
from a2a.types import Part, Role, SendMessageRequest
from agent_framework.a2a import A2AAgent
from offline_chat import OfflineChatClient
from opentelemetry import trace

from agent_framework import Agent, Message, tool

_state: dict = {}
# agent_framework_a2a.A2AAgent._validate_context: a reply in another context than the session's
_DIFFERS = re.compile(r"context_id returned from the A2A agent \('([^']*)'\) differs")


@tool
async def get_weather(city: str) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    message_id = uuid.uuid4().hex
    sends = 2 if _state.get("retry") else 1
    reply = ""
    for attempt in range(1, sends + 1):
        send = _send_direct if _state.get("direct") else _send_a2a_agent
        requested = _state.get("context_id")
        answered, error = None, None
        try:
            reply, answered = await send(f"weather in {city}? (turn {_state['turn']})", message_id)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            answered = m.group(1) if (m := _DIFFERS.search(str(exc))) else None
        _record(message_id, attempt, requested, answered, error)
    return reply


def _replica(key: str):
    """This turn's replica of ``_state[key]`` (a list: the turns alternate between them)."""
    replicas = _state[key]
    return replicas[(_state["turn"] - 1) % len(replicas)]


async def _send_a2a_agent(text: str, message_id: str) -> tuple[str, str | None]:
    specialist: A2AAgent = _replica("specialist")
    session = _state["session"]
    message = Message(role="user", contents=[text], message_id=message_id)
    if _state.get("stream"):
        reply = await specialist.run(message, session=session, stream=True).get_final_response()
    else:
        reply = await specialist.run(message, session=session)
    context = (session.service_session_id or {}).get("context_id")
    _state["context_id"] = context
    return reply.text, context


async def _send_direct(text: str, message_id: str) -> tuple[str, str | None]:
    request = SendMessageRequest(
        message=A2AMessage(
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            message_id=message_id,
            context_id=_state.get("context_id") or "",
        )
    )
    answered, reply = None, ""
    async for event in _replica("client").send_message(request):
        payload = getattr(event, event.WhichOneof("payload")) if hasattr(event, "WhichOneof") else event
        answered = getattr(payload, "context_id", None) or answered
        parts = getattr(payload, "parts", None) or ()
        reply = " ".join(p.text for p in parts if p.text) or reply
    _state["context_id"] = answered  # a client continues the context it was answered in
    return reply, answered


def _record(message_id: str, attempt: int, requested, answered, error) -> None:
    ctx = trace.get_current_span().get_span_context()
    print(
        json.dumps(
            {
                "conversation": _state["conversation"],
                "turn": _state["turn"],
                "attempt": attempt,
                "specialist": _state["conversation"],
                "message_id": message_id,
                "requested": requested or None,
                "answered": answered,
                "error": error,
                "trace_id": format(ctx.trace_id, "032x"),
            }
        ),
        flush=True,
    )


async def converse(
    url: str, name: str, turns: int, retry_turn: int, direct: bool = False, card: bool = False, stream: bool = False
) -> None:
    """One orchestrator conversation of ``turns`` turns delegating to the specialist at ``url``
    (``card``: ``A2AAgent`` built from the specialist's Agent Card, so it speaks the card's A2A
    protocol version, e.g. 0.3 to a2a-java 0.3; else from the URL alone, A2A 1.0; ``stream``: send
    over the streaming method)."""
    # one id namespace per conversation: two conversations of one process never share an id
    client = OfflineChatClient(mode="service", prefix=f"orchestrator_{name}", truth="")
    orchestrator = Agent(client=client, name="orchestrator", tools=[get_weather])
    session = orchestrator.create_session()
    _state.clear()
    _state.update(conversation=name, direct=direct, stream=stream)
    urls = url.split(",")
    async with httpx.AsyncClient(timeout=30) as http:
        if direct:
            _state["client"] = [
                await create_client(u, client_config=ClientConfig(httpx_client=http, streaming=stream)) for u in urls
            ]
            await _turns(orchestrator, session, name, turns, retry_turn)
            return
        if card:
            cards = [await A2ACardResolver(http, u).get_agent_card() for u in urls]
            replicas = [A2AAgent(name=name, agent_card=c, http_client=http) for c in cards]
        else:
            replicas = [A2AAgent(name=name, url=u) for u in urls]
        _state.update(specialist=replicas, session=replicas[0].create_session())
        async with contextlib.AsyncExitStack() as stack:
            for specialist in replicas:
                await stack.enter_async_context(specialist)
            await _turns(orchestrator, session, name, turns, retry_turn)


async def _turns(orchestrator, session, name, turns, retry_turn) -> None:
    for turn in range(1, turns + 1):
        _state.update(turn=turn, retry=turn == retry_turn)
        reply = await orchestrator.run(f"what's the weather in Paris? (turn {turn})", session=session)
        print(f"[{name}] turn {turn}: {reply.text}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--specialist",
        action="append",
        required=True,
        metavar="URL",
        help="specialist JSON-RPC URL; repeat for one conversation per specialist",
    )
    parser.add_argument("--name", action="append", default=[], help="specialist names, in --specialist order")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--retry-turn", type=int, default=0, help="re-send this turn's delegation (0: none)")
    parser.add_argument("--direct", action="store_true", help="send with an a2a-sdk client, not A2AAgent")
    parser.add_argument("--card", action="store_true", help="build A2AAgent from the specialist's Agent Card")
    parser.add_argument("--stream", action="store_true", help="send over the streaming method")
    args = parser.parse_args()

    async def run_all() -> None:
        for i, url in enumerate(args.specialist):
            name = args.name[i] if i < len(args.name) else f"specialist-{i + 1}"
            retry = args.retry_turn if i == 0 else 0
            await converse(url, name, args.turns, retry, args.direct, args.card, args.stream)

    asyncio.run(run_all())


if __name__ == "__main__":
    main()
