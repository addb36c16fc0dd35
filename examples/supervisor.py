"""A supervisor holding many conversations at once, each delegating every turn to one specialist
over A2A, at realistic speed: an Agent Framework ``Agent`` on the offline service-managed client
whose run is a plan model call (it asks for the tool ``get_weather``), the delegation (the tool),
and a summarise model call; with ``OFFLINE_MODEL_LATENCY=3`` each model call takes 3 s.

``--conversation NAME=KIND@URL`` (repeat; all run concurrently, ``--turns`` turns each). KIND, how
the tool sends:
  - ``a2a-agent``: Agent Framework ``A2AAgent``, one session per conversation; the server names
    the context on turn 1.
  - ``a2a-agent-minted``: ``A2AAgent`` with ``get_session(service_session_id=<a new uuid>)``: the
    client names the context on turn 1.
  - ``direct-minted``: an a2a-sdk client sending ``context_id=uuid4()`` on turn 1, then the context
    it was answered in.
  - ``task-poll`` / ``task-subscribe``: a long-running task: an a2a-sdk client sends with
    ``return_immediately`` (answered SUBMITTED/WORKING), then polls ``GetTask`` every 0.5 s, or
    ``SubscribeToTask``, until the task is terminal; the context continues across turns.

No tracing code: run it under the launcher. Prints one JSON line per send on stdout:
``{"conversation", "kind", "turn", "requested", "answered", "first_state", "state", "message_id",
"error", "trace_id"}`` (``requested``: the contextId sent, null when none; ``answered``: the one
the reply came in; ``first_state``/``state``: the task state of the send's answer and the last one
seen, null for a message reply).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, get_message_text
from a2a.types import (
    GetTaskRequest,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.types import Message as A2AMessage
from agent_framework.a2a import A2AAgent
from offline_chat import OfflineChatClient
from opentelemetry import trace

from agent_framework import Agent, Message, tool

KINDS = ("a2a-agent", "a2a-agent-minted", "direct-minted", "task-poll", "task-subscribe")
_TERMINAL = {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED}


def _state_name(state) -> str | None:
    return TaskState.Name(state) if state else None


class Conversation:
    """One supervisor conversation with one specialist (``kind``: how it sends, see the module)."""

    def __init__(self, name: str, kind: str, url: str, http: httpx.AsyncClient) -> None:
        self.name, self.kind, self.url, self.http = name, kind, url, http
        self.turn = 0
        self.context_id: str | None = uuid.uuid4().hex if kind.endswith("minted") else None
        self.specialist: A2AAgent | None = None
        self.session = None
        self.client = None
        self.streams = None

    async def open(self) -> None:
        if self.kind.startswith("a2a-agent"):
            self.specialist = A2AAgent(name=self.name, url=self.url, http_client=self.http)
            if self.context_id:
                self.session = self.specialist.get_session(service_session_id=self.context_id)
            else:
                self.session = self.specialist.create_session()
        else:
            config = ClientConfig(httpx_client=self.http, streaming=False)
            self.client = await create_client(self.url, client_config=config)
            if self.kind == "task-subscribe":  # SubscribeToTask needs a streaming client
                self.streams = await create_client(self.url, client_config=ClientConfig(httpx_client=self.http))

    async def delegate(self, city: str) -> str:
        """The supervisor's tool: one send to the specialist; prints its record."""
        message_id, requested = uuid.uuid4().hex, self.context_id
        rec = dict(
            conversation=self.name,
            kind=self.kind,
            turn=self.turn,
            requested=requested,
            answered=None,
            first_state=None,
            state=None,
            message_id=message_id,
            error=None,
        )
        text = f"weather in {city}? (turn {self.turn})"
        reply = ""
        try:
            if self.specialist is not None:
                out = await self.specialist.run(
                    Message(role="user", contents=[text], message_id=message_id), session=self.session
                )
                reply = out.text
                rec["answered"] = (self.session.service_session_id or {}).get("context_id")
            else:
                reply = await self._send_direct(text, message_id, rec)
        except Exception as exc:
            rec["error"] = f"{type(exc).__name__}: {exc}"
        self.context_id = rec["answered"] or self.context_id
        ctx = trace.get_current_span().get_span_context()
        print(json.dumps({**rec, "trace_id": format(ctx.trace_id, "032x")}), flush=True)
        return reply

    async def _send_direct(self, text: str, message_id: str, rec: dict) -> str:
        task = self.kind.startswith("task")
        request = SendMessageRequest(
            message=A2AMessage(
                role=Role.ROLE_USER, parts=[Part(text=text)], message_id=message_id, context_id=self.context_id or ""
            ),
            configuration=SendMessageConfiguration(return_immediately=task),
        )
        reply, task_id = "", None
        async for event in self.client.send_message(request):
            payload = getattr(event, event.WhichOneof("payload"))
            rec["answered"] = getattr(payload, "context_id", None) or rec["answered"]
            if event.HasField("task"):
                task_id = event.task.id
                rec["first_state"] = rec["first_state"] or _state_name(event.task.status.state)
                rec["state"] = _state_name(event.task.status.state)
                reply = " ".join(get_artifact_text(a) for a in event.task.artifacts) or reply
            elif event.HasField("message"):
                reply = get_message_text(event.message)
        if task and task_id and rec["state"] not in {_state_name(s) for s in _TERMINAL}:
            reply = await (self._poll if self.kind == "task-poll" else self._subscribe)(task_id, rec)
        return reply

    async def _poll(self, task_id: str, rec: dict) -> str:
        while True:
            got = await self.client.get_task(GetTaskRequest(id=task_id))
            rec["state"] = _state_name(got.status.state)
            if got.status.state in _TERMINAL:
                return " ".join(get_artifact_text(a) for a in got.artifacts)
            await asyncio.sleep(0.5)

    async def _subscribe(self, task_id: str, rec: dict) -> str:
        reply = ""
        try:
            stream = self.streams.subscribe(SubscribeToTaskRequest(id=task_id))
            async for event in stream:
                reply = self._streamed(event, rec) or reply
        except Exception as exc:  # finished before the subscription: read it once
            if "terminal state" not in str(exc):
                raise
            return await self._poll(task_id, rec)
        return reply

    @staticmethod
    def _streamed(event, rec: dict) -> str:
        """The reply text in one ``SubscribeToTask`` event (empty when none); notes its task state."""
        kind = event.WhichOneof("payload")
        if kind == "task":
            rec["state"] = _state_name(event.task.status.state)
            return " ".join(get_artifact_text(a) for a in event.task.artifacts)
        if kind == "status_update":
            rec["state"] = _state_name(event.status_update.status.state)
        elif kind == "artifact_update":
            return get_artifact_text(event.artifact_update.artifact)
        return ""


async def converse(conv: Conversation, turns: int) -> None:
    """``turns`` supervisor runs in one session: plan (model), delegate (tool), summarise (model)."""

    async def get_weather(city: str) -> str:
        """Ask the weather specialist (a remote agent, over A2A)."""
        return await conv.delegate(city)

    client = OfflineChatClient(mode="service", prefix=f"supervisor_{conv.name}", truth="")
    supervisor = Agent(client=client, name="supervisor", tools=[tool(get_weather, name="get_weather")])
    session = supervisor.create_session()
    await conv.open()
    async with contextlib.AsyncExitStack() as stack:
        if conv.specialist is not None:
            await stack.enter_async_context(conv.specialist)
        for turn in range(1, turns + 1):
            conv.turn = turn
            reply = await supervisor.run(f"what's the weather in Paris? (turn {turn})", session=session)
            print(f"[{conv.name}] turn {turn}: {reply.text}", file=sys.stderr)


async def run_all(conversations: list[tuple[str, str, str]], turns: int) -> None:
    async with httpx.AsyncClient(timeout=300) as http:
        convs = [Conversation(name, kind, url, http) for name, kind, url in conversations]
        await asyncio.gather(*(converse(c, turns) for c in convs))


def parse_conversation(value: str) -> tuple[str, str, str]:
    """``NAME=KIND@URL`` -> ``(name, kind, url)``; raises argparse.ArgumentTypeError."""
    name, _, rest = value.partition("=")
    kind, _, url = rest.partition("@")
    if not name or kind not in KINDS or not url:
        raise argparse.ArgumentTypeError(f"expected NAME=KIND@URL with KIND one of {KINDS}: {value!r}")
    return name, kind, url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversation", action="append", type=parse_conversation, required=True)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run_all(args.conversation, args.turns))


if __name__ == "__main__":
    main()
