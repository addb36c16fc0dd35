"""The "ask a remote specialist over A2A" part the example callers' tools share (LangGraph,
OpenAI Agents, Agno): an a2a-sdk client, one A2A conversation per caller conversation, and the
command line and loop that hold several of them.

``Delegate.ask(text)`` sends one A2A ``Message`` continuing the contextId the specialist answered
in on the previous send (none on the first), and records what the send requested and got
(``Delegate.last``), the caller-side record the demo compares the collector's verdict with.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest
from opentelemetry import trace


def reply_text(event) -> str:
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


class Delegate:
    """One A2A conversation with a specialist through an a2a-sdk ``client``.

    ``context_id``: the contextId the specialist last answered in ("" before the first send).
    ``last``: the previous send's record, ``{"requested", "context_id", "trace_id"}`` (the contextId
    sent, None on a first turn; the one the reply came in; the 32-hex trace id the send ran in).
    """

    def __init__(self, client) -> None:
        self.client = client
        self.context_id = ""
        self.last: dict = {}

    async def ask(self, text: str) -> str:
        """Send ``text``; returns the reply's text ("(no text)" when it has none). Transport errors
        of the a2a-sdk client propagate."""
        requested = self.context_id
        request = SendMessageRequest(
            message=Message(
                role=Role.ROLE_USER, parts=[Part(text=text)], message_id=uuid.uuid4().hex, context_id=requested
            )
        )
        reply = ""
        async for event in self.client.send_message(request):
            payload = getattr(event, event.WhichOneof("payload"))
            self.context_id = getattr(payload, "context_id", "") or self.context_id  # continue the answered one
            reply = reply_text(event) or reply
        self.last = {
            "requested": requested or None,
            "context_id": self.context_id or None,
            "trace_id": format(trace.get_current_span().get_span_context().trace_id, "032x"),
        }
        return reply or "(no text)"


@asynccontextmanager
async def connect(url: str) -> AsyncIterator[Delegate]:
    """A ``Delegate`` to the specialist at JSON-RPC ``url`` (non-streaming client), closed on exit."""
    async with httpx.AsyncClient(timeout=30) as http:
        yield Delegate(await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False)))


def run_conversations(
    description: str, option: str, default: str, converse: Callable[[str, str, int], Awaitable[None]]
) -> None:
    """The callers' command line: ``--specialist URL`` and ``--<option> ID`` (both repeatable; the
    i-th conversation talks to the i-th specialist, or all to the only one), ``--turns N``; runs
    ``converse(url, conversation_id, turns)`` for each, one after the other."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--specialist",
        action="append",
        required=True,
        metavar="URL",
        help=f"specialist JSON-RPC URL; repeated: the i-th --{option} talks to the i-th",
    )
    parser.add_argument(
        f"--{option}", action="append", default=[], dest="conversations", help=f"{option} ids (one conversation each)"
    )
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    conversations = args.conversations or [default]
    urls = args.specialist if len(args.specialist) > 1 else args.specialist * len(conversations)

    async def run_all() -> None:
        for url, conversation in zip(urls, conversations, strict=False):
            await converse(url, conversation, args.turns)

    asyncio.run(run_all())
