"""A LangGraph agent whose tool asks a remote specialist over A2A (a2a-sdk client), several turns
on one LangGraph thread.

``create_react_agent`` over the offline model of ``offline_langchain.py``, ``InMemorySaver``
checkpointer, one tool, ``ask_specialist(city)``, that sends an A2A message to the specialist and
continues the A2A context the specialist gave it on an earlier turn of the same thread
(``a2a_delegate.Delegate``, one per thread). No tracing code: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=langgraph-app opentelemetry-instrument python examples/langgraph_app.py \
        --specialist http://127.0.0.1:9101/ --thread conv-lg --turns 3

Prints one JSON line per turn on stdout: ``{"thread", "turn", "seen", "requested", "context_id",
"trace_id"}`` (``seen``: how many messages the model saw at the end of the turn, the ground truth
of whether the graph resumed the thread's history; the rest: ``Delegate.last``).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from a2a_delegate import Delegate, connect, run_conversations
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from offline_langchain import OfflineToolModel

_delegates: dict[str, Delegate] = {}  # thread_id -> its A2A conversation with the specialist


@tool
async def ask_specialist(city: str, config: RunnableConfig) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    return await _delegates[config["configurable"]["thread_id"]].ask(f"weather in {city}?")


async def converse(url: str, thread: str, turns: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's
        from langgraph.prebuilt import create_react_agent

        agent = create_react_agent(
            OfflineToolModel(), [ask_specialist], name="weather_graph", checkpointer=InMemorySaver()
        )
    async with connect(url) as delegate:
        _delegates[thread] = delegate
        for turn in range(1, turns + 1):
            # a new text every turn: Agent Framework sessions drop a repeated message without an id
            # (its identity is role and text), so the same question twice reads as forgetting
            question = f"Paris, day {turn}"
            result = await agent.ainvoke({"messages": [("user", question)]}, {"configurable": {"thread_id": thread}})
            answer = result["messages"][-1].content
            print(
                json.dumps(
                    {"thread": thread, "turn": turn, "seen": int(answer.split()[0].split("=")[1]), **delegate.last}
                ),
                flush=True,
            )
            print(f"[{thread}] turn {turn}: {answer}", file=sys.stderr)


if __name__ == "__main__":
    run_conversations(__doc__.splitlines()[0], "thread", "conv-lg", converse)
