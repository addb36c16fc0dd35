"""An OpenAI Agents SDK orchestrator whose tool asks a remote specialist over A2A (a2a-sdk client),
several turns on one ``SQLiteSession`` per conversation. Offline (``agents.testing.ScriptedModel``;
no API key); the SDK's own tracing has no processor (nothing leaves the process). No tracing code:
run it under the launcher, e.g.

    OTEL_SERVICE_NAME=openai-agents-app opentelemetry-instrument python \
        examples/openai_agents_orchestrator.py --specialist http://127.0.0.1:9101/ --session conv-oa --turns 3

Each turn the agent calls its ``function_tool`` ``ask_specialist(city)``, which sends an A2A
``Message`` continuing the contextId the specialist answered in on the session's previous turn
(none on turn 1; ``a2a_delegate.Delegate``, the run context), then answers. Prints one JSON line
per turn on stdout: ``{"session", "turn", "seen", "requested", "context_id", "trace_id"}``
(``seen``: input items this agent's model saw, growing when the session resumed; ``requested``:
the contextId sent; ``context_id``: the one the reply came in).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from a2a_delegate import Delegate, connect, run_conversations
from agents import Agent, RunContextWrapper, Runner, SQLiteSession, function_tool, set_trace_processors
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

_ids = itertools.count(1)


@function_tool
async def ask_specialist(ctx: RunContextWrapper[Delegate], city: str) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    return await ctx.context.ask(f"weather in {city}?")


def _answer(call) -> list:
    seen = 1 if isinstance(call.input, str) else len(call.input)
    return [assistant_message(f"seen={seen}")]


async def converse(url: str, session_id: str, turns: int) -> None:
    session = SQLiteSession(session_id)
    async with connect(url) as delegate:
        for turn in range(1, turns + 1):
            model = ScriptedModel(
                [
                    ModelStep(
                        output=[function_call("ask_specialist", {"city": "Paris"}, call_id=f"call_{next(_ids)}")]
                    ),
                    ModelStep.respond(_answer),
                ]
            )
            agent = Agent(
                name="weather_orchestrator", instructions="ask the specialist", tools=[ask_specialist], model=model
            )
            result = await Runner.run(agent, f"turn {turn}: weather in Paris?", session=session, context=delegate)
            seen = int(str(result.final_output).split("=")[1])
            print(json.dumps({"session": session_id, "turn": turn, "seen": seen, **delegate.last}), flush=True)
            print(f"[{session_id}] turn {turn}: {result.final_output}", file=sys.stderr)


if __name__ == "__main__":
    set_trace_processors([])
    run_conversations(__doc__.splitlines()[0], "session", "conv-oa", converse)
