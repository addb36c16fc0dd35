"""A specialist agent served over A2A on 127.0.0.1 (a2a-sdk JSON-RPC routes, uvicorn), in one of the
five shapes real A2A services take. No tracing code of its own: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=specialist opentelemetry-instrument python examples/specialist.py \
        --port 9101 --shape session-local

``--shape``:
  - ``session-service``: an a2a-sdk ``AgentExecutor`` keeping one ``AgentSession`` per contextId,
    the agent on a service-managed model (server-side threads: the agent reports the thread id,
    another namespace than the contextId). Continues. A request sent with ``return_immediately``
    is served as a long-running task (SUBMITTED, WORKING, then the reply as an artifact).
  - ``session-local``: the same executor, the agent on a local-history model. Continues.
  - ``a2a-executor``: Agent Framework's own ``agent_framework.a2a.A2AExecutor(agent)``, which builds
    a new ``AgentSession(session_id=contextId)`` per request: it keeps the id and loses the state.
  - ``plain``: a plain ``AgentExecutor`` (no agent framework) answering in the request's context,
    keeping the history of each context itself, and declaring whether it had one
    (``otel_agent_identity.resumed``). Continues.
  - ``plain-new-context``: a plain executor answering every request in a new contextId. Forgets.
  - ``plain-forgets`` (not one of the five): a plain executor answering in the request's context
    but keeping no history, declaring so (``resumed(False)``). Forgets.
  - ``plain-undeclared`` (not one of the five): ``plain`` without the ``resumed`` declaration (the
    collector cannot judge its state: ``state_unknown``). Continues.
  - ``new-session`` (not one of the five): ``A2AExecutor`` serving an agent that drops the session
    id it is given, so even the agent's own conversation id is new on every request.

Framework shapes (an a2a-sdk executor around a LangGraph graph, an Agno agent or an OpenAI Agents
SDK agent, one continuing and one forgetting per framework, and healthy shapes a naive rule
flags): ``examples/framework_specialists.py`` (``--db PATH``: the Agno shapes' SQLite file, shared
by replicas).

Ground truth: every shape reports how many messages its model (the plain executors: the executor)
had in context per request, as JSON lines ``{"trace_id", "messages", "conversation_id"}`` appended
to ``--truth PATH`` (1, 3, 5 when it continues; 1, 1, 1 when it forgets).
Prints ``ready <url>`` on stdout once it accepts requests.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import framework_specialists
from a2a.helpers.proto_helpers import get_message_text, new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor
from a2a.server.tasks import TaskUpdater
from a2a.types import Part
from a2a_serve import executor_app, serve, write_truth
from agent_framework.a2a import A2AExecutor
from offline_chat import OfflineChatClient
from starlette.applications import Starlette

import otel_agent_identity
from agent_framework import Agent, AgentSession

SHAPES = ("session-service", "session-local", "a2a-executor", "plain", "plain-new-context")
#: what really happens on turns 2+ of one contextId, per shape
CONTINUES = {
    "session-service": True,
    "session-local": True,
    "a2a-executor": False,
    "plain": True,
    "plain-new-context": False,
    "plain-forgets": False,
    "plain-undeclared": True,
    "new-session": False,
    **framework_specialists.CONTINUES,
}


class ForgetfulAgent(Agent):
    """Drops the session id it is given: every request becomes a new conversation."""

    def create_session(self, *, session_id: str | None = None, **kwargs) -> AgentSession:
        return super().create_session(**kwargs)


class SessionExecutor(AgentExecutor):
    """One ``AgentSession`` per contextId, kept in memory: the agent continues every context.

    A request sent with ``return_immediately`` is served as a long-running task: answered
    SUBMITTED, then WORKING, then the agent runs and the task completes with its reply as an
    artifact (the caller polls ``GetTask`` or subscribes, ``SubscribeToTask``)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.sessions: dict[str, AgentSession] = {}

    async def execute(self, context, event_queue) -> None:
        task = bool(getattr(context.configuration, "return_immediately", False))
        if task:
            if context.current_task is None:
                await event_queue.enqueue_event(new_task_from_user_message(context.message))
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            await updater.start_work()
        session = self.sessions.get(context.context_id)
        if session is None:
            session = self.sessions[context.context_id] = self.agent.create_session(session_id=context.context_id)
        reply = await self.agent.run(context.get_user_input(), session=session)
        if task:
            await updater.add_artifact([Part(text=reply.text)], name="reply")
            await updater.complete()
        else:
            await event_queue.enqueue_event(new_text_message(reply.text, context_id=context.context_id))

    async def cancel(self, context, event_queue) -> None:
        return None


class PlainExecutor(AgentExecutor):
    """No agent framework: the executor keeps each context's history itself (its "model" sees it).
    ``new_context``: answers every request in a new contextId, whose history is empty; ``keep``:
    False keeps no history; ``declare``: False never calls ``otel_agent_identity.resumed``."""

    def __init__(self, truth: str | None, new_context: bool = False, keep: bool = True, declare: bool = True) -> None:
        self.truth = truth
        self.new_context = new_context
        self.keep, self.declare = keep, declare
        self.history: dict[str, int] = {}

    async def execute(self, context, event_queue) -> None:
        ctx = uuid.uuid4().hex if self.new_context else context.context_id
        if self.declare:
            otel_agent_identity.resumed(ctx in self.history)  # no framework adapter can tell: declared
        seen = self.history.get(ctx, 0) + 1
        if self.keep:
            self.history[ctx] = seen + 1  # and the reply
        write_truth(self.truth, seen, ctx)
        text = f"echo: {get_message_text(context.message)}"
        await event_queue.enqueue_event(new_text_message(text, context_id=ctx))

    async def cancel(self, context, event_queue) -> None:
        return None


def build_executor(
    shape: str, name: str, truth: str | None, stream: bool = False, db: str | None = None
) -> AgentExecutor:
    if shape in framework_specialists.CONTINUES:
        return framework_specialists.build_executor(shape, name, lambda n, cid: write_truth(truth, n, cid), db)
    if shape.startswith("plain"):
        keep, declare = shape != "plain-forgets", shape != "plain-undeclared"
        return PlainExecutor(truth, new_context=shape == "plain-new-context", keep=keep, declare=declare)
    mode = "service" if shape == "session-service" else "local"
    agent_cls = ForgetfulAgent if shape == "new-session" else Agent
    agent = agent_cls(client=OfflineChatClient(mode=mode, prefix=name, truth=truth or ""), name=name)
    if shape in ("a2a-executor", "new-session"):
        return A2AExecutor(agent, stream=stream)
    return SessionExecutor(agent)


def build_app(
    url: str,
    name: str,
    shape: str = "a2a-executor",
    truth: str | None = None,
    stream: bool = False,
    db: str | None = None,
) -> Starlette:
    """The Starlette app of one specialist (``url``: its public JSON-RPC URL)."""
    return executor_app(build_executor(shape, name, truth, stream, db), url, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="specialist")
    parser.add_argument("--shape", choices=list(CONTINUES), default="a2a-executor")
    parser.add_argument(
        "--truth",
        default=os.environ.get("OFFLINE_CHAT_TRUTH"),
        help="append the messages seen per request to this file",
    )
    parser.add_argument("--stream", action="store_true", help="a2a-executor: run the agent streaming")
    parser.add_argument("--db", help="Agno shapes: the SQLite file of the sessions (replicas share one)")
    parser.add_argument("--v03", action="store_true", help="serve A2A 0.3 clients too (a2a-sdk 1.x's 0.3 compat)")
    args = parser.parse_args()
    executor = build_executor(args.shape, args.name, args.truth, args.stream, args.db)
    serve(executor, args.name, args.port, v03=args.v03)


if __name__ == "__main__":
    main()
