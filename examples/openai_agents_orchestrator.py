"""An OpenAI Agents SDK orchestrator whose tool asks a remote specialist over A2A (a2a-sdk client),
several turns on one ``SQLiteSession`` per conversation. Offline (``agents.testing.ScriptedModel``;
no API key); the SDK's own tracing has no processor (nothing leaves the process). No tracing code:
run it under the launcher, e.g.

    OTEL_SERVICE_NAME=openai-agents-app opentelemetry-instrument python \
        examples/openai_agents_orchestrator.py --specialist http://127.0.0.1:9101/ --session conv-oa --turns 3

Each turn the agent calls its ``function_tool`` ``ask_specialist(city)``, which sends an A2A
``Message`` continuing the contextId the specialist answered in on the session's previous turn
(none on turn 1), then answers. Prints one JSON line per turn on stdout: ``{"session", "turn",
"seen", "requested", "context_id", "trace_id"}`` (``seen``: input items this agent's model saw,
growing when the session resumed; ``requested``: the contextId sent; ``context_id``: the one
the reply came in).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import uuid
from dataclasses import dataclass, field

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest
from agents import Agent, RunContextWrapper, Runner, SQLiteSession, function_tool, set_trace_processors
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from opentelemetry import trace

_ids = itertools.count(1)


@dataclass
class Conversation:
    """The run context: the A2A client and what the last send saw."""

    client: object
    context_id: str = ""
    last: dict = field(default_factory=dict)


@function_tool
async def ask_specialist(ctx: RunContextWrapper[Conversation], city: str) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    conv = ctx.context
    requested = conv.context_id
    request = SendMessageRequest(message=Message(
        role=Role.ROLE_USER, parts=[Part(text=f"weather in {city}?")], message_id=uuid.uuid4().hex,
        context_id=requested))
    reply = ""
    async for event in conv.client.send_message(request):
        payload = getattr(event, event.WhichOneof("payload"))
        conv.context_id = getattr(payload, "context_id", "") or conv.context_id  # continue the answered one
        reply = " ".join(p.text for p in getattr(payload, "parts", ()) if p.text) or reply
    conv.last = {"requested": requested or None, "context_id": conv.context_id or None,
                 "trace_id": format(trace.get_current_span().get_span_context().trace_id, "032x")}
    return reply or "(no text)"


def _answer(call) -> list:
    seen = 1 if isinstance(call.input, str) else len(call.input)
    return [assistant_message(f"seen={seen}")]


async def converse(url: str, session_id: str, turns: int) -> None:
    session = SQLiteSession(session_id)
    async with httpx.AsyncClient(timeout=30) as http:
        conv = Conversation(await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False)))
        for turn in range(1, turns + 1):
            model = ScriptedModel([ModelStep(output=[function_call("ask_specialist", {"city": "Paris"},
                                                                   call_id=f"call_{next(_ids)}")]),
                                   ModelStep.respond(_answer)])
            agent = Agent(name="weather_orchestrator", instructions="ask the specialist", tools=[ask_specialist],
                          model=model)
            result = await Runner.run(agent, f"turn {turn}: weather in Paris?", session=session, context=conv)
            seen = int(str(result.final_output).split("=")[1])
            print(json.dumps({"session": session_id, "turn": turn, "seen": seen, **conv.last}), flush=True)
            print(f"[{session_id}] turn {turn}: {result.final_output}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specialist", action="append", required=True, metavar="URL",
                        help="specialist JSON-RPC URL; repeated: the i-th --session talks to the i-th")
    parser.add_argument("--session", action="append", default=[], help="session ids (one conversation each)")
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    set_trace_processors([])

    async def run_all() -> None:
        sessions = args.session or ["conv-oa"]
        urls = args.specialist if len(args.specialist) > 1 else args.specialist * len(sessions)
        for url, session_id in zip(urls, sessions):
            await converse(url, session_id, args.turns)

    asyncio.run(run_all())


if __name__ == "__main__":
    main()
