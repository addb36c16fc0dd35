"""An Agent Framework app with no tracing code of its own: run it under the launcher.

    opentelemetry-instrument --traces_exporter console --metrics_exporter none \
        --service_name weather-app python examples/agent_framework_app.py

Two conversations of two turns each (one service-managed, one local-history), with a tool call.
Its own output goes to stderr, so stdout holds only what the exporter writes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from offline_chat import OfflineChatClient

from agent_framework import Agent, tool


@tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return "sunny"


async def main() -> None:
    for mode in ("service", "local"):
        agent = Agent(client=OfflineChatClient(mode=mode, prefix="app"), name=f"weather-{mode}", tools=[get_weather])
        session = agent.create_session()
        for question in ("what's the weather in Paris?", "thanks!"):
            reply = await agent.run(question, session=session)
            print(f"[{mode}] {question} -> {reply.text}", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
