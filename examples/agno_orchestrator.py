"""An Agno agent whose tool asks a remote specialist over A2A (a2a-sdk client), several turns on
one Agno session per conversation.

``agno.agent.Agent`` over the offline model of ``offline_agno.py``, an ``InMemoryDb`` with the
session's history added to the model's context, one async tool, ``ask_specialist(city)``, that
sends an A2A message to the specialist and continues the A2A context the specialist gave it on an
earlier turn of the same session (``a2a_delegate.Delegate``, one per ``session_id``, found by the
tool through Agno's ``RunContext``). Agno's call home is off (``AGNO_TELEMETRY=false`` unless set
otherwise): it would post every run's session_id and run_id to its vendor. No tracing code: run it
under the launcher, e.g.

    OTEL_SERVICE_NAME=agno-app opentelemetry-instrument python examples/agno_orchestrator.py \
        --specialist http://127.0.0.1:9101/ --session conv-agno --turns 3

Prints one JSON line per turn on stdout: ``{"session", "turn", "seen", "run_id", "requested",
"context_id", "trace_id"}`` (``seen``: how many messages the model saw at the end of the turn, the
ground truth of whether the run resumed the session's history; ``run_id``: Agno's; the rest:
``Delegate.last``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("AGNO_TELEMETRY", "false")

from a2a_delegate import Delegate, connect, run_conversations
from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.run import RunContext
from offline_agno import OfflineToolModel

_delegates: dict[str, Delegate] = {}  # session_id -> its A2A conversation with the specialist


async def ask_specialist(city: str, run_context: RunContext) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    return await _delegates[run_context.session_id].ask(f"weather in {city}?")


async def converse(url: str, session_id: str, turns: int) -> None:
    agent = Agent(
        name="weather_agent",
        model=OfflineToolModel(),
        tools=[ask_specialist],
        db=InMemoryDb(),
        add_history_to_context=True,
    )
    async with connect(url) as delegate:
        _delegates[session_id] = delegate
        for turn in range(1, turns + 1):
            out = await agent.arun("Paris", session_id=session_id)
            print(
                json.dumps(
                    {
                        "session": out.session_id,
                        "turn": turn,
                        "seen": int(out.content.split()[0][5:]),
                        "run_id": out.run_id,
                        **delegate.last,
                    }
                ),
                flush=True,
            )
            print(f"[{session_id}] turn {turn}: {out.content}", file=sys.stderr)


if __name__ == "__main__":
    run_conversations(__doc__.splitlines()[0], "session", "conv-agno", converse)
