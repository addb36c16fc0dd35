"""A CrewAI agent served over A2A (a2a-sdk 0.3, as ``crewai[a2a]`` pins it) on 127.0.0.1: the
application's a2a-sdk ``AgentExecutor`` calls CrewAI's executor helper
(``crewai.a2a.utils.task.execute``), which builds a fresh ``Task`` per request: nothing keyed by the
contextId, so a second turn starts from nothing (CrewAI's forgetful A2A server). No tracing code of
its own: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=crewai opentelemetry-instrument python examples/crewai_specialist.py --port 9141

Ground truth: per model call, how many messages of the request's conversation the model was given
(1 + the earlier requests of that contextId whose text is in its prompt), as JSON lines
``{"trace_id", "messages", "conversation_id"}`` appended to ``--truth PATH``. The earlier requests
are kept for that count only, never given to the agent. One request at a time (the tests' callers).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # CrewAI's phone-home
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

import uvicorn
from a2a.server.agent_execution import AgentExecutor
from a2a.server.apps import A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard
from crewai.a2a.utils import task as crewai_a2a_task
from offline_crewai import OfflineCrewLLM, _text
from opentelemetry import trace

from crewai import Agent


class TruthLLM(OfflineCrewLLM):
    """The offline model, recording how much of the request's conversation it saw."""

    truth: str | None = None
    request: dict | None = None  # {"context_id", "earlier": [texts]}: set by the executor per request

    def call(self, messages, tools=None, callbacks=None, available_functions=None, from_task=None, **kwargs):
        if self.truth and self.request:
            prompt = "\n".join(map(_text, [messages] if isinstance(messages, str) else messages))
            seen = 1 + sum(1 for text in self.request["earlier"] if text in prompt)
            trace_id = format(trace.get_current_span().get_span_context().trace_id, "032x")
            record = {"trace_id": trace_id, "messages": seen, "conversation_id": self.request["context_id"]}
            with open(self.truth, "a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")
        return super().call(messages, tools, callbacks, available_functions, from_task, **kwargs)


class CrewExecutor(AgentExecutor):
    """The application's a2a-sdk executor, as CrewAI documents it: its helper does the work."""

    def __init__(self, name: str, truth: str | None) -> None:
        llm = TruthLLM(truth=truth)
        self.agent = Agent(role=name, goal="answer", backstory="A CrewAI specialist (offline).", llm=llm)
        self.requests: dict[str, list[str]] = {}  # contextId -> request texts: ground truth only

    async def execute(self, context, event_queue) -> None:
        earlier = self.requests.setdefault(context.context_id, [])
        self.agent.llm.request = {"context_id": context.context_id, "earlier": list(earlier)}
        earlier.append(context.get_user_input())
        await crewai_a2a_task.execute(self.agent, context, event_queue)

    async def cancel(self, context, event_queue) -> None:
        raise NotImplementedError


def a2a_app(executor: AgentExecutor, name: str, url: str):
    """The a2a-sdk 0.3 Starlette app serving ``executor`` at ``url`` (Agent Card: ``name``, no streaming)."""
    card = AgentCard(
        name=name,
        description="Answers questions (offline, CrewAI).",
        url=url,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[],
    )
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore())
    return A2AStarletteApplication(agent_card=card, http_handler=handler).build()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="crewai")
    parser.add_argument("--truth", help="append the messages seen per model call to this file")
    args = parser.parse_args()
    app = a2a_app(CrewExecutor(args.name, args.truth), args.name, f"http://127.0.0.1:{args.port}/")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
