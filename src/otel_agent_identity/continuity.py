"""In-process memory for continuity signals no single span shows, in bounded memory.

- :class:`DelegateContexts`: per (caller's own conversation, remote agent), the last contextId in
  effect, so a send that starts a new context where one was in effect (a delegate restarted every
  turn) is marked ``agent_identity.conversation.previous_id``.
- :class:`SeenKeys`: delegation keys this process already received (``served_delegations``: duplicate
  deliveries) and already executed (``executed_delegations``: duplicate executions, see
  :func:`note_execution`).
- ``answered_contexts``: (A2A endpoint, contextId) pairs a remote agent answered this process in,
  so a send can tell a client-minted first contextId from a context to continue.
- :func:`new_conversation`: the application says a new conversation/context is intended.
- :func:`serving_answered_before`: whether the A2A request being served (the SERVER span's OTel
  context, which the executor inherits) asked to continue a contextId this process answered in
  before (``served_contexts``, per serving Agent Card): a run that resumes nothing then lost state
  (counted), unlike a client-minted first turn.
- :func:`resumed`: the application declares whether the request being served resumed prior state.
- ``served_conversations``: per (contextId, serving agent), the agent conversation this process
  served it with last, so a run that serves a known contextId under another agent conversation (a
  callee that rebuilds its conversation every request) is marked ``agent_identity.conversation.previous_id``.

Memory: at most ``MAX_CONVERSATIONS`` caller conversations x ``MAX_AGENTS_PER_CONVERSATION``
remote agents (served: contextIds x serving agents), and ``MAX_DELEGATIONS`` delegation keys (and
answered contexts); an
entry untouched for ``IDLE_SECONDS`` (the conversation went quiet) is dropped, the least recently
used goes first when full.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context

from otel_agent_identity import attributes as attrs
from otel_agent_identity import metrics
from otel_agent_identity._context import SCOPE_KEY, attach_context, current_context, detach_context, with_value

_logger = logging.getLogger(__name__)

MAX_CONVERSATIONS = 1024
MAX_AGENTS_PER_CONVERSATION = 16
MAX_DELEGATIONS = 4096
IDLE_SECONDS = 1800.0

_NEW_CONVERSATION = otel_context.create_key("agent_identity.new_conversation")
_SERVING_REQUESTED = otel_context.create_key("agent_identity.serving_requested")
_SERVED_DELEGATION = otel_context.create_key("agent_identity.served_delegation")
_serving_delegations = False  # no inbound request carried a delegation key yet: note_execution returns at once


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
    token = attach_context(with_value(current_context(), _NEW_CONVERSATION, True))
    try:
        yield
    finally:
        detach_context(token)


def new_conversation_declared() -> bool:
    """Whether the caller is inside :func:`new_conversation` (in its OpenTelemetry ``Context``)."""
    return bool(otel_context.get_value(_NEW_CONVERSATION))


class _Serving:
    """The inbound A2A request being served: the contextId it asked to continue, its SERVER span,
    the serving Agent Card's name (``card``), whether this process answered in the requested
    contextId before the request arrived (``answered_before``), and the agent conversation the run
    serving it ended in (set by that run)."""

    __slots__ = ("agent", "answered_before", "answered_in", "card", "conversation", "requested", "span")

    def __init__(self, requested: str | None, span: Any, card: str | None) -> None:
        self.requested, self.span, self.card = requested, span, card or ""
        # read as the request arrives: its own answer (a stream's first event may precede the run) is not "before"
        self.answered_before = served_contexts.has(_served_key(self.card, requested)) if requested else False
        self.answered_in: str | None = None  # the context last remembered as answered (once per request)
        self.agent: str = ""
        self.conversation: str | None = None


def _serving(ctx: Any = None) -> _Serving | None:
    value = otel_context.get_value(_SERVING_REQUESTED, ctx)
    return value if type(value) is _Serving else None


def serving_answered_before() -> bool:
    """Whether the inbound A2A request being served asked to continue a contextId this process had
    already answered in (``served_contexts``, kept ``IDLE_SECONDS``): a run serving it that resumes
    nothing lost state. False outside a served request, on a first turn, for a contextId the client
    minted itself (nothing to resume yet) and after a restart (memory empty: the collector's hop
    verdict ``state_not_resumed`` covers it)."""
    serving = _serving()
    return serving is not None and serving.answered_before


def with_serving_requested(ctx: Any, context_id: str | None, span: Any = None, card: str | None = None) -> Any:
    """``ctx`` (an OTel ``Context``) carrying the contextId the served request asked to continue
    (str, or None on a first turn), its SERVER ``span`` and the serving Agent Card's name ``card``."""
    if not context_id and span is None:
        return ctx
    _serving_seen[0] = True
    return otel_context.set_value(_SERVING_REQUESTED, _Serving(context_id or None, span, card), ctx)


_warned_resumed = [False]
_serving_seen = [False]  # no A2A request served in this process yet: served_run has nothing to do


def resumed(value: bool) -> bool:
    """Declare whether the inbound A2A request being served resumed prior conversation state
    (``value``: bool): for a server whose agent no adapter wraps (a plain a2a-sdk ``AgentExecutor``,
    another framework). Recorded as ``agent_identity.conversation.resumed`` on the request's SERVER
    span, where the collector reads it before the serving agent span's own; ``False`` for a request
    that asked to continue a contextId this process already answered in
    (:func:`serving_answered_before`) is counted in ``agent_identity.state.not_resumed``. Call it
    inside the executor (any task or thread that inherited its context)::

        history = self.histories.get(context.context_id)
        otel_agent_identity.resumed(history is not None)

    Returns True when recorded; False (one warning) outside a served A2A request or for a value
    that is not a bool. Never raises."""
    try:
        serving = _serving()
        if serving is None or serving.span is None or type(value) is not bool:
            if not _warned_resumed[0]:
                _warned_resumed[0] = True
                _logger.warning(
                    "otel-agent-identity: resumed(%s) outside a served A2A request, or not a bool; "
                    "ignored (warned once)",
                    type(value).__name__,
                )
            return False
        span = serving.span
        span.set_attribute(attrs.CONVERSATION_RESUMED, value)
        if value is False and serving.answered_before:
            agent = (getattr(span, "attributes", None) or {}).get(attrs.GEN_AI_AGENT_NAME)
            metrics.count(metrics.STATE_NOT_RESUMED, agent=agent, framework="a2a")
        return True
    except Exception:
        _logger.debug("otel-agent-identity: resumed() failed", exc_info=True)
        return False


def served_run(agent: str | None, conversation: str | None) -> str | None:
    """The run serving the current A2A request ended in agent ``conversation`` (str): remember it
    for its contextId and serving ``agent`` (its name), and return the agent conversation this
    process served the requested contextId with last when it was another (else None)."""
    if not _serving_seen[0]:
        return None
    serving = _serving()
    if serving is None or not conversation:
        return None
    serving.agent, serving.conversation = agent or "", conversation
    requested = serving.requested
    if not requested:
        return None  # a first turn: remembered under the context the server answered in (served_context)
    last = served_conversations.last(requested, serving.agent)
    served_conversations.remember(requested, serving.agent, conversation)
    return last if last is not None and last != conversation else None


def served_context(ctx: Any, context_id: str | None) -> None:
    """The A2A request served in ``ctx`` answered in ``context_id``: remember that this process
    answered in it (``served_contexts``) and the agent conversation that served it under that
    contextId too (on a first turn the server made it). Never raises."""
    try:
        serving = _serving(ctx)
        if serving is None or not context_id:
            return
        if context_id != serving.answered_in:  # a stream's events repeat it: remembered once
            serving.answered_in = context_id
            served_contexts.seen_before(_served_key(serving.card, context_id))
        if serving.conversation and context_id != serving.requested:
            served_conversations.remember(context_id, serving.agent, serving.conversation)
    except Exception:
        _logger.debug("otel-agent-identity: served context not remembered", exc_info=True)


def conversation_id() -> str | None:
    """The conversation id (str) of the run the caller is in, None outside one or when it has none.

    The one-liner to map ids when one framework's agent runs inside another's (e.g. in a LangGraph
    node: the graph's ``thread_id``), so both runs are one conversation::

        agno_agent.run(question, session_id=otel_agent_identity.conversation_id())
    """
    scope: Any = current_context().get(SCOPE_KEY)
    return scope.conversation_id if scope is not None else None


class DelegateContexts:
    """``own conversation id -> {remote agent -> last effective contextId}``, bounded, idle-expired."""

    def __init__(self, max_conversations: int = MAX_CONVERSATIONS, idle_seconds: float = IDLE_SECONDS) -> None:
        self.max_conversations, self.idle_seconds = max_conversations, idle_seconds
        self._lock = threading.Lock()
        self._data: OrderedDict[str, tuple[float, dict[str, str]]] = OrderedDict()

    def _agents(self, conversation: str, now: float) -> dict | None:
        entry = self._data.get(conversation)
        if entry is None:
            return None
        if now - entry[0] > self.idle_seconds:
            del self._data[conversation]
            return None
        return entry[1]

    def last(self, conversation: str, agent: str) -> str | None:
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
        self._data: OrderedDict[str, float] = OrderedDict()

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

    def has(self, key: str) -> bool:
        """Whether ``key`` was recorded (and not expired), without recording it."""
        with self._lock:
            touched = self._data.get(key)
            return touched is not None and time.monotonic() - touched <= self.idle_seconds


#: the process-wide memories
delegate_contexts = DelegateContexts()
served_delegations = SeenKeys()


#: delegation keys whose work this process executed (an agent run served them)
executed_delegations = SeenKeys()


def with_served_delegation(ctx: Any, span: Any, key: str | None, agent: str | None) -> Any:
    """``ctx`` (the OTel ``Context`` of an inbound request, whose SERVER span is ``span``) carrying
    the request's delegation ``key``, for :func:`note_execution`; ``ctx`` itself without a key."""
    if not key:
        return ctx
    global _serving_delegations
    _serving_delegations = True
    return otel_context.set_value(_SERVED_DELEGATION, [(span, key, agent)], ctx)


def note_execution() -> None:
    """Called as an outermost agent run starts: the first one serving an inbound request executes
    that request's delegation. When this process executed the same delegation before (within
    ``IDLE_SECONDS``, ``MAX_DELEGATIONS`` kept), the request's SERVER span is marked
    ``agent_identity.delegation.duplicate=true`` and ``agent_identity.delegation.duplicate_executions``
    counts it. A delivery answered without an agent run (a ledger replay) executes nothing.

    Why here and not only in the collector: a retry after a crash is another trace, which the
    collector's per-trace analysis never sees next to the first (and in two tiers it may reach
    another instance); the serving process sees both deliveries whatever the trace. Never raises."""
    if not _serving_delegations:
        return
    try:
        served: Any = otel_context.get_value(_SERVED_DELEGATION)
        if not served:
            return
        try:
            span, key, agent = served.pop()  # atomic: the first run of the request claims it
        except IndexError:
            return
        if executed_delegations.seen_before(key):
            if span.is_recording():
                span.set_attribute(attrs.DELEGATION_DUPLICATE, True)
            metrics.count(metrics.DELEGATION_DUPLICATE_EXECUTIONS, agent=agent, framework="a2a")
    except Exception:
        pass


#: ``destination + NUL + contextId`` of every context a remote agent answered this process in:
#: a send requesting one of them is not a first turn (``agent_identity.conversation.answered_before``)
answered_contexts = SeenKeys()

#: ``Agent Card name + NUL + contextId`` of every context this process answered a served A2A request in:
#: a later request asking to continue one of them is one whose lost state is counted
#: (:func:`serving_answered_before`)
served_contexts = SeenKeys()


def _served_key(card: str, context_id: str) -> str:
    """The ``served_contexts`` key of ``context_id`` served by the Agent Card named ``card``."""
    return f"{card}\0{context_id}"


#: contextId -> {serving agent name -> the agent conversation that served it last}
served_conversations = DelegateContexts()
