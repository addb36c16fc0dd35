"""An orchestrator that restarts its delegate every turn: within one conversation of its own it sends
each turn to the same remote agent without the contextId that agent answered in last time (a fresh
context per turn, as some A2A tool wrappers do). Every hop then looks like a first turn, while the
specialist starts from nothing every time; the instrumentation marks sends 2, 3, ... with
``agent_identity.conversation.previous_id`` and counts ``agent_identity.delegate.restarts``.

Agent Framework ``Agent`` on the offline service-managed client with one tool, ``get_weather(city)``,
that asks the specialist through ``A2AAgent.run(...)`` without a session (default) or, with
``--direct``, an a2a-sdk client sending ``context_id=""``. ``--keep``: the well-behaved caller
(the session, or the last contextId, is kept: never marked). ``--new-task-turn N``: turn N starts
a new task on purpose, inside ``otel_agent_identity.new_conversation()`` (not marked). No other
tracing code: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=restarting-caller OTEL_METRICS_EXPORTER=otlp opentelemetry-instrument \
        python examples/restarting_caller.py --specialist http://127.0.0.1:9101/ --turns 3

Prints one JSON line per send on stdout: ``{"caller", "turn", "requested", "answered", "previous",
"deliberate", "trace_id"}`` (``previous``: the context answered in on the turn before, null on turn
1; ``requested``: the contextId sent, null when none; the ground truth of a restart is
``previous and requested != previous and not deliberate``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Message as A2AMessage
from a2a.types import Part, Role, SendMessageRequest
from agent_framework.a2a import A2AAgent
from offline_chat import OfflineChatClient
from opentelemetry import trace

import otel_agent_identity
from agent_framework import Agent, tool

_state: dict = {}


@tool
async def get_weather(city: str) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    keep, previous = _state["keep"], _state.get("answered")
    deliberate = _state["turn"] == _state["new_task_turn"]
    requested = previous if keep and not deliberate else None
    text = f"weather in {city}? (turn {_state['turn']})"
    scope = otel_agent_identity.new_conversation() if deliberate else contextlib.nullcontext()
    with scope:
        if _state["direct"]:
            reply, answered = await _send_direct(text, requested)
        else:
            reply, answered = await _send_a2a_agent(text, keep and not deliberate)
    ctx = trace.get_current_span().get_span_context()
    print(
        json.dumps(
            {
                "caller": _state["caller"],
                "turn": _state["turn"],
                "requested": requested,
                "answered": answered,
                "previous": previous,
                "deliberate": deliberate,
                "trace_id": format(ctx.trace_id, "032x"),
            }
        ),
        flush=True,
    )
    _state["answered"] = answered
    return reply


async def _send_a2a_agent(text: str, keep: bool) -> tuple[str, str | None]:
    specialist: A2AAgent = _state["specialist"]
    if keep:
        session = _state.setdefault("session", specialist.create_session())
    else:  # the restarting wrapper: a new session (no contextId) per call
        session = _state["session"] = specialist.create_session()
    reply = await specialist.run(text, session=session)
    return reply.text, (session.service_session_id or {}).get("context_id")


async def _send_direct(text: str, context_id: str | None) -> tuple[str, str | None]:
    request = SendMessageRequest(
        message=A2AMessage(
            role=Role.ROLE_USER, parts=[Part(text=text)], message_id=uuid.uuid4().hex, context_id=context_id or ""
        )
    )
    answered, reply = None, ""
    async for event in _state["client"].send_message(request):
        payload = getattr(event, event.WhichOneof("payload"))
        answered = getattr(payload, "context_id", None) or answered
        reply = " ".join(p.text for p in (getattr(payload, "parts", None) or ()) if p.text) or reply
    return reply, answered


async def converse(url: str, caller: str, turns: int, keep: bool, direct: bool, new_task_turn: int) -> None:
    """One orchestrator conversation of ``turns`` turns, each delegating once to ``url``."""
    orchestrator = Agent(
        client=OfflineChatClient(mode="service", prefix=caller, truth=""), name="orchestrator", tools=[get_weather]
    )
    session = orchestrator.create_session()
    _state.clear()
    _state.update(caller=caller, keep=keep, direct=direct, new_task_turn=new_task_turn)
    async with httpx.AsyncClient(timeout=30) as http:
        if direct:
            _state["client"] = await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False))
        else:
            _state["specialist"] = A2AAgent(name="specialist", url=url, http_client=http)
        for turn in range(1, turns + 1):
            _state["turn"] = turn
            reply = await orchestrator.run(f"what's the weather in Paris? (turn {turn})", session=session)
            print(f"[{caller}] turn {turn}: {reply.text}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specialist", required=True, metavar="URL", help="specialist JSON-RPC URL")
    parser.add_argument("--caller", default="restarting", help="name of this conversation (ids namespace)")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the context (the well-behaved caller)")
    parser.add_argument("--direct", action="store_true", help="send with an a2a-sdk client, not A2AAgent")
    parser.add_argument(
        "--new-task-turn",
        type=int,
        default=0,
        help="this turn starts a new task on purpose, inside new_conversation() (0: none)",
    )
    args = parser.parse_args()
    asyncio.run(converse(args.specialist, args.caller, args.turns, args.keep, args.direct, args.new_task_turn))


if __name__ == "__main__":
    main()
