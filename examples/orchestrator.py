"""An orchestrator agent that delegates to specialists over A2A, several turns per conversation.

Agent Framework ``Agent`` on the offline service-managed client, with one tool,
``get_weather(city)``, that asks a remote specialist through ``A2AAgent`` (one A2A session per
orchestrator conversation, so the specialist is asked to continue the same contextId every
turn). No tracing code: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=orchestrator opentelemetry-instrument python examples/orchestrator.py \
        --specialist http://127.0.0.1:9101/ --turns 3 --retry-turn 2

``--retry-turn N`` re-sends turn N's delegation after the specialist completed it, as a client
does when the response is lost (same A2A ``message_id``, so the same delegation id: the collector
counts the second execution as a duplicate). Prints one JSON line per delegation on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_framework import Agent, Message, tool  # noqa: E402
from agent_framework.a2a import A2AAgent  # noqa: E402
from opentelemetry import trace  # noqa: E402

from offline_chat import OfflineChatClient  # noqa: E402

_state: dict = {}


@tool
async def get_weather(city: str) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    specialist: A2AAgent = _state["specialist"]
    request = Message(role="user", contents=[f"weather in {city}?"], message_id=uuid.uuid4().hex)
    sends = 2 if _state.get("retry") else 1
    reply = None
    for attempt in range(1, sends + 1):
        reply = await specialist.run(request, session=_state["session"])
        _record(request.message_id, attempt)
    return reply.text if reply is not None else ""


def _record(message_id: str, attempt: int) -> None:
    session = _state["session"]
    ctx = trace.get_current_span().get_span_context()
    print(json.dumps({
        "conversation": _state["conversation"], "turn": _state["turn"], "attempt": attempt,
        "specialist": _state["specialist"].name, "message_id": message_id,
        "context_id": getattr(session, "service_session_id", None) and session.service_session_id.get("context_id"),
        "trace_id": format(ctx.trace_id, "032x"),
    }), flush=True)


async def converse(url: str, name: str, turns: int, retry_turn: int) -> None:
    """One orchestrator conversation of ``turns`` turns delegating to the specialist at ``url``."""
    # one id namespace per conversation: two conversations of one process never share an id
    client = OfflineChatClient(mode="service", prefix=f"orchestrator_{name}")
    orchestrator = Agent(client=client, name="orchestrator", tools=[get_weather])
    specialist = A2AAgent(name=name, url=url)
    session = orchestrator.create_session()
    _state.update(specialist=specialist, session=specialist.create_session(), conversation=name)
    async with specialist:
        for turn in range(1, turns + 1):
            _state.update(turn=turn, retry=turn == retry_turn)
            reply = await orchestrator.run(f"what's the weather in Paris? (turn {turn})", session=session)
            print(f"[{name}] turn {turn}: {reply.text}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specialist", action="append", required=True, metavar="URL",
                        help="specialist JSON-RPC URL; repeat for one conversation per specialist")
    parser.add_argument("--name", action="append", default=[], help="specialist names, in --specialist order")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--retry-turn", type=int, default=0, help="re-send this turn's delegation (0: none)")
    args = parser.parse_args()

    async def run_all() -> None:
        for i, url in enumerate(args.specialist):
            name = args.name[i] if i < len(args.name) else f"specialist-{i + 1}"
            await converse(url, name, args.turns, args.retry_turn if i == 0 else 0)

    asyncio.run(run_all())


if __name__ == "__main__":
    main()
