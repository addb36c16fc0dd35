"""A CrewAI agent served over A2A (a2a-sdk 0.3, as ``crewai[a2a]`` pins it) on 127.0.0.1, the
application's a2a-sdk ``AgentExecutor`` in one of two ``--shape``s:

- ``helper`` (default): CrewAI's executor helper (``crewai.a2a.utils.task.execute``), which builds a
  fresh ``Task`` per request: nothing keyed by the contextId, so a second turn starts from nothing
  (CrewAI's forgetful A2A server);
- ``flow``: a conversational ``Flow`` persisted with ``@persist`` (SQLite, ``--storage``), a fresh
  instance per request running ``handle_turn(text, session_id=contextId)``, as CrewAI's
  conversational-flow guide wires a session id: CrewAI restores the context's earlier turns, and
  continues.

Both answer a completed ``Task`` (the reply's text as an artifact), and the card says ``streaming``
(a2a-sdk's handler serves ``message/stream`` from the same executor). No tracing code of its own:
run it under the launcher, e.g.

    OTEL_SERVICE_NAME=crewai opentelemetry-instrument python examples/crewai_specialist.py --port 9141

Ground truth: per model call, how many messages of the request's conversation the model was given
(1 + the earlier requests of that contextId whose text is in its prompt), as JSON lines
``{"trace_id", "messages", "conversation_id"}`` appended to ``--truth PATH``. The earlier requests
are kept for that count only, never given to the agent. One request at a time (the tests' callers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # CrewAI's phone-home
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

import uvicorn
from a2a.server.agent_execution import AgentExecutor
from a2a.server.apps import A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, Task, TaskState, TaskStatus
from a2a.utils import new_agent_text_message, new_text_artifact
from crewai.a2a.utils import task as crewai_a2a_task
from crewai.flow import ConversationConfig, Flow
from crewai.flow.conversational import ConversationState
from crewai.flow.persistence import SQLiteFlowPersistence, persist
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
        self.llm = self.agent.llm  # the model the agent calls (the flow's too)
        self.requests: dict[str, list[str]] = {}  # contextId -> request texts: ground truth only

    async def execute(self, context, event_queue) -> None:
        earlier = self.requests.setdefault(context.context_id, [])
        self.llm.request = {"context_id": context.context_id, "earlier": list(earlier)}
        earlier.append(context.get_user_input())
        await self.serve(context, event_queue)

    async def serve(self, context, event_queue) -> None:
        await crewai_a2a_task.execute(self.agent, context, event_queue)

    async def cancel(self, context, event_queue) -> None:
        raise NotImplementedError


class FlowExecutor(CrewExecutor):
    """One conversational turn per request, the contextId as the persisted flow's session id."""

    def __init__(self, name: str, truth: str | None, storage: str) -> None:
        super().__init__(name, truth)

        @persist(SQLiteFlowPersistence(str(Path(storage) / "flows.db")))
        @ConversationConfig(llm=self.llm)
        class CrewFlow(Flow[ConversationState]):
            pass

        self.flow = CrewFlow

    async def serve(self, context, event_queue) -> None:
        text, task_id, context_id = context.get_user_input(), context.task_id, context.context_id
        # a fresh instance: what the turn knows is what CrewAI restored for the session id
        answer = str(await asyncio.to_thread(self.flow().handle_turn, text, session_id=context_id))
        reply = new_agent_text_message(answer, context_id, task_id)
        task = Task(
            id=task_id,
            context_id=context_id,
            status=TaskStatus(state=TaskState.completed),
            artifacts=[new_text_artifact(f"result_{task_id}", answer)],
            history=[*([context.message] if context.message else []), reply],
        )
        await event_queue.enqueue_event(task)


def a2a_app(executor: AgentExecutor, name: str, url: str):
    """The a2a-sdk 0.3 Starlette app serving ``executor`` at ``url`` (Agent Card: ``name``, streaming)."""
    card = AgentCard(
        name=name,
        description="Answers questions (offline, CrewAI).",
        url=url,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
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
    parser.add_argument("--shape", choices=("helper", "flow"), default="helper")
    parser.add_argument("--storage", help="flow: the SQLite persistence's directory (default a new temporary one)")
    parser.add_argument("--truth", help="append the messages seen per model call to this file")
    args = parser.parse_args()
    if args.shape == "flow":
        executor = FlowExecutor(args.name, args.truth, args.storage or tempfile.mkdtemp(prefix=f"{args.name}-flows-"))
    else:
        executor = CrewExecutor(args.name, args.truth)
    app = a2a_app(executor, args.name, f"http://127.0.0.1:{args.port}/")
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
