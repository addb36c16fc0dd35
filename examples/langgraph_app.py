"""A LangGraph agent whose tool asks a remote specialist over A2A (a2a-sdk client), several turns
on one LangGraph thread.

``create_react_agent`` over the offline model of ``offline_langchain.py``, ``InMemorySaver``
checkpointer, one tool, ``ask_specialist(city)``, that sends an A2A message to the specialist and
continues the A2A context the specialist gave it on an earlier turn of the same thread. No tracing
code: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=langgraph-app opentelemetry-instrument python examples/langgraph_app.py \
        --specialist http://127.0.0.1:9101/ --thread conv-lg --turns 3

Prints one JSON line per turn on stdout: ``{"thread", "turn", "seen", "context_id", "trace_id"}``
(``seen``: how many messages the model saw at the end of the turn, the ground truth of whether
the graph resumed the thread's history).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import Message, Part, Role, SendMessageRequest  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from opentelemetry import trace  # noqa: E402

from offline_langchain import OfflineToolModel  # noqa: E402

_state: dict = {"contexts": {}}  # thread_id -> the A2A contextId the specialist answered in


def _text(event) -> str:
    """The text of an a2a-sdk response event: a message, or a task's last artifact, status message
    or agent message in its history."""
    kind = event.WhichOneof("payload")
    payload = getattr(event, kind)
    parts = []
    if kind == "message":
        parts = payload.parts
    elif kind == "task":
        agent_turns = [m for m in payload.history if m.role == Role.ROLE_AGENT]
        if payload.artifacts:
            parts = payload.artifacts[-1].parts
        elif payload.status.message.parts:
            parts = payload.status.message.parts
        elif agent_turns:
            parts = agent_turns[-1].parts
    return " ".join(p.text for p in parts if p.text)


@tool
async def ask_specialist(city: str, config: RunnableConfig) -> str:
    """Ask the weather specialist (a remote agent, over A2A)."""
    thread = config["configurable"]["thread_id"]
    request = SendMessageRequest(message=Message(
        role=Role.ROLE_USER, parts=[Part(text=f"weather in {city}?")], message_id=uuid.uuid4().hex,
        context_id=_state["contexts"].get(thread, "")))
    reply = ""
    async for event in _state["client"].send_message(request):
        kind = event.WhichOneof("payload")
        context_id = getattr(getattr(event, kind), "context_id", "")
        if context_id:
            _state["contexts"][thread] = context_id
        reply = _text(event) or reply
    _state["trace_id"] = format(trace.get_current_span().get_span_context().trace_id, "032x")
    return reply


async def converse(url: str, thread: str, turns: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's
        from langgraph.prebuilt import create_react_agent

        agent = create_react_agent(OfflineToolModel(), [ask_specialist], name="weather_graph",
                                   checkpointer=InMemorySaver())
    async with httpx.AsyncClient(timeout=30) as http:
        _state["client"] = await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False))
        for turn in range(1, turns + 1):
            result = await agent.ainvoke({"messages": [("user", "Paris")]}, {"configurable": {"thread_id": thread}})
            answer = result["messages"][-1].content
            print(json.dumps({"thread": thread, "turn": turn, "seen": int(answer.split()[0].split("=")[1]),
                              "context_id": _state["contexts"].get(thread), "trace_id": _state.get("trace_id")}),
                  flush=True)
            print(f"[{thread}] turn {turn}: {answer}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specialist", action="append", required=True, metavar="URL",
                        help="specialist JSON-RPC URL; repeated: the i-th --thread talks to the i-th")
    parser.add_argument("--thread", action="append", default=[], help="LangGraph thread ids (one conversation each)")
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()

    async def run_all() -> None:
        threads = args.thread or ["conv-lg"]
        urls = args.specialist if len(args.specialist) > 1 else args.specialist * len(threads)
        for url, thread in zip(urls, threads):
            await converse(url, thread, args.turns)

    asyncio.run(run_all())


if __name__ == "__main__":
    main()
