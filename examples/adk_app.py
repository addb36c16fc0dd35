"""A Google ADK agent whose tool asks a remote specialist over A2A (a2a-sdk client), several turns
on one ADK session.

``LlmAgent`` over the offline model of ``offline_adk.py``, ``InMemorySessionService``, one tool,
``ask_specialist(city)``, that sends an A2A message continuing the context the specialist gave it
on an earlier turn of the same session (``a2a_delegate.Delegate``, one per session). No tracing
code: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=adk-app opentelemetry-instrument python examples/adk_app.py \
        --specialist http://127.0.0.1:9101/ --session conv-adk --turns 3

Prints one JSON line per turn on stdout: ``{"session", "turn", "seen", "invocation_id",
"requested", "context_id", "trace_id"}`` (``seen``: how many contents the model saw at the end of
the turn, the ground truth of whether the run had the session's history; the rest:
``Delegate.last``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from a2a_delegate import Delegate, connect, run_conversations
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import ToolContext
from google.genai import types
from offline_adk import OfflineLlm, seen

_delegates: dict[str, Delegate] = {}  # session id -> its A2A conversation with the specialist


async def ask_specialist(city: str, tool_context: ToolContext) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    return await _delegates[tool_context.session.id].ask(f"weather in {city}?")


runner = Runner(
    app_name="adk-app",
    agent=LlmAgent(name="weather_agent", model=OfflineLlm(), tools=[ask_specialist]),
    session_service=InMemorySessionService(),
    auto_create_session=True,
)


async def converse(url: str, session: str, turns: int) -> None:
    async with connect(url) as delegate:
        _delegates[session] = delegate
        for turn in range(1, turns + 1):
            message = types.Content(role="user", parts=[types.Part(text="Paris")])
            events = [e async for e in runner.run_async(user_id="u", session_id=session, new_message=message)]
            answer = events[-1].content.parts[0].text
            print(
                json.dumps(
                    {
                        "session": session,
                        "turn": turn,
                        "seen": seen(answer),
                        "invocation_id": events[-1].invocation_id,
                        **delegate.last,
                    }
                ),
                flush=True,
            )
            print(f"[{session}] turn {turn}: {answer}", file=sys.stderr)


if __name__ == "__main__":
    run_conversations(__doc__.splitlines()[0], "session", "conv-adk", converse)
