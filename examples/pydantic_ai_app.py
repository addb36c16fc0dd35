"""A Pydantic AI agent whose tool asks a remote specialist over A2A (a2a-sdk client), several turns
of one conversation (each turn passes the previous turns' ``message_history``).

The offline model of ``offline_pydantic_ai.py``, one tool, ``ask_specialist(city)``, that sends an
A2A message continuing the context the specialist gave it on an earlier turn of the same
conversation (``a2a_delegate.Delegate``, one per conversation). No tracing code: run it under the
launcher, e.g.

    OTEL_SERVICE_NAME=pa-app opentelemetry-instrument python examples/pydantic_ai_app.py \
        --specialist http://127.0.0.1:9101/ --conversation conv-pa --turns 3

``--native``: Pydantic AI's own instrumentation on (its ``invoke_agent`` span is then enriched).
Prints one JSON line per turn on stdout: ``{"conversation", "turn", "seen", "run_id",
"requested", "context_id", "trace_id"}`` (``seen``: how many messages the model saw at the end of
the turn, the ground truth of whether the run had the earlier turns; the rest:
``Delegate.last``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from a2a_delegate import Delegate, connect, run_conversations
from offline_pydantic_ai import seen, tool_model

from pydantic_ai import Agent, RunContext

weather_agent = Agent(tool_model("ask_specialist"), deps_type=Delegate)


@weather_agent.tool
async def ask_specialist(ctx: RunContext[Delegate], city: str) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    return await ctx.deps.ask(f"weather in {city}?")


async def converse(url: str, conversation: str, turns: int) -> None:
    async with connect(url) as delegate:
        history = None
        for turn in range(1, turns + 1):
            result = await weather_agent.run(
                "Paris",
                deps=delegate,
                message_history=history,
                conversation_id=conversation if history is None else None,
            )
            history = result.all_messages()
            print(
                json.dumps(
                    {
                        "conversation": result.conversation_id,
                        "turn": turn,
                        "seen": seen(result.output),
                        "run_id": result.run_id,
                        **delegate.last,
                    }
                ),
                flush=True,
            )
            print(f"[{conversation}] turn {turn}: {result.output}", file=sys.stderr)


if __name__ == "__main__":
    if "--native" in sys.argv:
        sys.argv.remove("--native")
        Agent.instrument_all()
    run_conversations(__doc__.splitlines()[0], "conversation", "conv-pa", converse)
