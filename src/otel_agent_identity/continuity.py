"""In-process memory for continuity signals no single span shows, in bounded memory.

- :class:`DelegateContexts`: per (caller's own conversation, remote agent), the last contextId in
  effect, so a send that starts a new context where one was in effect (a delegate restarted every
  turn) is marked ``agent_identity.conversation.previous_id``.
- :class:`SeenKeys`: delegation keys already served by this process (duplicate executions).
- :func:`new_conversation`: the application says a new conversation/context is intended.
- :func:`serving_requested`: the contextId the A2A request being served asked to continue.

Memory: at most ``MAX_CONVERSATIONS`` caller conversations x ``MAX_AGENTS_PER_CONVERSATION``
remote agents, and ``MAX_DELEGATIONS`` delegation keys; an entry untouched for ``IDLE_SECONDS``
(the conversation went quiet) is dropped, the least recently used goes first when full.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator, Optional

from opentelemetry import context as otel_context

MAX_CONVERSATIONS = 1024
MAX_AGENTS_PER_CONVERSATION = 16
MAX_DELEGATIONS = 4096
IDLE_SECONDS = 1800.0

_NEW_CONVERSATION = otel_context.create_key("agent_identity.new_conversation")
_SERVING_REQUESTED = otel_context.create_key("agent_identity.serving_requested")


@contextmanager
def new_conversation() -> Iterator[None]:
    """Declare that runs and A2A sends started inside intentionally begin a conversation of their own.

    A send to a remote agent inside starts a new context on purpose (a new task): it is not marked
    as a restarted delegate (``agent_identity.conversation.previous_id``) nor counted; the context
    it gets is remembered from then on. A nested agent run inside whose conversation differs from
    its parent's is not marked ``agent_identity.conversation.parent_differs``. Usage::

        with otel_agent_identity.new_conversation():
            await specialist.run("start over: ...")   # A2AAgent without the previous session
    """
    from otel_agent_identity.scope import attach_context, current_context, detach_context, with_value

    token = attach_context(with_value(current_context(), _NEW_CONVERSATION, True))
    try:
        yield
    finally:
        detach_context(token)


def new_conversation_declared() -> bool:
    """Whether the caller is inside :func:`new_conversation` (in its OpenTelemetry ``Context``)."""
    return bool(otel_context.get_value(_NEW_CONVERSATION))


def serving_requested() -> Optional[str]:
    """The ``Message.context_id`` (str) of the inbound A2A request being served (the SERVER span's
    OTel context, which the executor inherits), None outside one or on a first turn."""
    value = otel_context.get_value(_SERVING_REQUESTED)
    return value if isinstance(value, str) and value else None


def with_serving_requested(ctx: Any, context_id: Optional[str]) -> Any:
    """``ctx`` (an OTel ``Context``) carrying the contextId the served request asked to continue."""
    return otel_context.set_value(_SERVING_REQUESTED, context_id, ctx) if context_id else ctx


def conversation_id() -> Optional[str]:
    """The conversation id (str) of the run the caller is in, None outside one or when it has none.

    The one-liner to map ids when one framework's agent runs inside another's (e.g. in a LangGraph
    node: the graph's ``thread_id``), so both runs are one conversation::

        agno_agent.run(question, session_id=otel_agent_identity.conversation_id())
    """
    from otel_agent_identity.scope import current_scope

    scope = current_scope()
    return scope.conversation_id if scope is not None else None


class DelegateContexts:
    """``own conversation id -> {remote agent -> last effective contextId}``, bounded, idle-expired."""

    def __init__(self, max_conversations: int = MAX_CONVERSATIONS, idle_seconds: float = IDLE_SECONDS) -> None:
        self.max_conversations, self.idle_seconds = max_conversations, idle_seconds
        self._lock = threading.Lock()
        self._data: "OrderedDict[str, tuple[float, dict[str, str]]]" = OrderedDict()

    def _agents(self, conversation: str, now: float) -> Optional[dict]:
        entry = self._data.get(conversation)
        if entry is None:
            return None
        if now - entry[0] > self.idle_seconds:
            del self._data[conversation]
            return None
        return entry[1]

    def last(self, conversation: str, agent: str) -> Optional[str]:
        """The contextId last in effect with ``agent`` in ``conversation``, or None."""
        with self._lock:
            agents = self._agents(conversation, time.monotonic())
            return agents.get(agent) if agents else None

    def remember(self, conversation: str, agent: str, context_id: str) -> None:
        """Record ``context_id`` as in effect with ``agent`` in ``conversation`` (most recent use)."""
        now = time.monotonic()
        with self._lock:
            agents = self._agents(conversation, now) or {}
            agents.pop(agent, None)
            agents[agent] = context_id
            while len(agents) > MAX_AGENTS_PER_CONVERSATION:
                agents.pop(next(iter(agents)))
            self._data[conversation] = (now, agents)
            self._data.move_to_end(conversation)
            self._evict(now)

    def rekey(self, old: str, new: str) -> None:
        """The caller's conversation got its service-assigned id (first turn): keep its entries."""
        with self._lock:
            entry = self._data.pop(old, None)
            if entry is not None and new not in self._data:
                self._data[new] = entry

    def _evict(self, now: float) -> None:
        while self._data:
            oldest, (touched, _agents) = next(iter(self._data.items()))
            if len(self._data) <= self.max_conversations and now - touched <= self.idle_seconds:
                break
            del self._data[oldest]

    def __len__(self) -> int:
        return len(self._data)


class SeenKeys:
    """A bounded, idle-expired set of keys: :meth:`seen_before` is True from the second sighting."""

    def __init__(self, max_keys: int = MAX_DELEGATIONS, idle_seconds: float = IDLE_SECONDS) -> None:
        self.max_keys, self.idle_seconds = max_keys, idle_seconds
        self._lock = threading.Lock()
        self._data: "OrderedDict[str, float]" = OrderedDict()

    def seen_before(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            touched = self._data.pop(key, None)
            self._data[key] = now
            while self._data:
                oldest, at = next(iter(self._data.items()))
                if len(self._data) <= self.max_keys and now - at <= self.idle_seconds:
                    break
                del self._data[oldest]
            return touched is not None and now - touched <= self.idle_seconds


#: the process-wide memories
delegate_contexts = DelegateContexts()
served_delegations = SeenKeys()
