"""Google ADK (``google-adk`` 2.13+).

Wraps ``google.adk.runners.Runner.run_async`` and ``Runner.run_live`` (async generators; the sync
``Runner.run`` runs ``run_async`` in a thread with a copy of the caller's context, and an
``AgentTool`` runs its agent through a nested ``Runner.run_async``), and
``Runner._new_invocation_context``, ADK's documented extension point where every run gets its
invocation (both the node runtime of an ``LlmAgent`` root and the classic agent path build it
there, before the run's first agent span).

ADK emits its own spans on the global tracer provider (``invoke_workflow``, ``invoke_agent``,
``generate_content``, ``execute_tool``): the run's first ``invoke_agent`` span (the root agent's)
is enriched with the run's ids, parent ids and ``resumed``; no span of ours is added. Every span
started inside the run carries the ids, the ``execute_tool`` spans included, which ADK leaves
without a conversation id. Each step of the run's generator runs in its scope.

- Conversation id (``gen_ai.conversation.id``, source ``framework``): the run's ``session_id``
  (keyword-only, known before the run: ``session.id``, as ADK's own spans report it).
- Execution id (``agent_identity.execution.id``): the run's ``invocation_id`` (``e-<uuid>``, on
  every ``Event``): the ``invocation_id=`` argument of a resumed invocation, else the one ADK
  makes, adopted when it makes it.
- ``agent_identity.conversation.resumed``: whether the session held earlier events when the
  invocation started.
- ``AgentTool``: its agent runs in a nested ``Runner`` with a fresh in-memory session on every
  call; the nested run records the outer run's execution and conversation ids and is marked
  ``agent_identity.conversation.parent_differs`` (a new story each call: it starts from nothing).
  Sub-agents reached by ``transfer_to_agent`` stay in the same invocation and session.
"""

from __future__ import annotations

import importlib
from typing import Any

from opentelemetry import trace

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler
from otel_agent_identity.adapters._base import Wrapped, call_in
from otel_agent_identity.extractors import registry
from otel_agent_identity.scope import current_scope
from otel_agent_identity.span_processor import attributes_of, set_trusted

NAME = "google_adk"
REQUIREMENTS = ("google-adk >= 2.13, < 3",)

_wrapped = Wrapped()
#: id(scope) -> _Pending: runs whose invocation ADK has not built yet (bounded: oldest dropped)
_PENDING: dict[int, _Pending] = {}
_PENDING_MAX = 4096


def session_rule(agent: Any, session_id: Any, call: Any) -> str | None:
    """Framework rule: the run's ``session_id`` (str), passed in as the ``session``."""
    return session_id


class _Pending:
    """A run until ADK built its invocation: what the invocation tells (its id, the session's
    earlier events) reaches the run's scope and its agent span, whichever starts first."""

    __slots__ = ("claim", "known", "scope", "span")
    known: dict[str, Any]

    def __init__(self, scope: Any) -> None:
        self.scope, self.claim, self.span, self.known = scope, scope.claim_agent_span, None, {}
        scope.claim_agent_span = self.claimed

    def claimed(self, span: Any) -> None:
        """The run's agent span (ADK's root ``invoke_agent``) started: the run handler enriches it."""
        self.span = span
        self.claim(span)
        if self.known:
            set_trusted(span, self.known)

    def adopt(self, context: Any) -> None:
        """ADK built the run's ``InvocationContext``."""
        scope, known = self.scope, self.known
        invocation_id = getattr(context, "invocation_id", None)
        previous = scope.execution_id
        if type(invocation_id) is str and invocation_id != previous and registry.accepts(invocation_id):
            scope.execution_id = invocation_id
            scope.refresh()
            known[attrs.EXECUTION_ID] = invocation_id
            # ADK opens the run's ``invoke_workflow`` span before it builds the invocation: current here
            current: Any = trace.get_current_span()
            if current.is_recording() and attributes_of(current).get(attrs.EXECUTION_ID) == previous:
                set_trusted(current, {attrs.EXECUTION_ID: invocation_id})
        events = getattr(getattr(context, "session", None), "events", None)
        if isinstance(events, list):
            known[attrs.CONVERSATION_RESUMED] = bool(events)
        if self.span is not None and known:
            set_trusted(self.span, known)


def _run_wrapper(handler: RunHandler):
    """Wrapper of ``Runner.run_async(*, user_id, session_id, invocation_id=None, new_message, ...)``
    and ``Runner.run_live(*, user_id=None, session_id=None, live_request_queue, ..., session=None)``
    (async generators: ``Run.call`` keeps the shape, each step in the run's scope)."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            session_id = kwargs.get("session_id")
            if session_id is None:  # run_live(session=...)
                session_id = getattr(kwargs.get("session"), "id", None)
            invocation_id = kwargs.get("invocation_id")
            run = handler.start(
                NAME,
                getattr(instance, "agent", None),
                session_id,
                args,
                kwargs,
                rule=session_rule,
                span=None,
                run_id=invocation_id if type(invocation_id) is str else None,
                recheck=False,
            )
            if run is not None:
                if len(_PENDING) >= _PENDING_MAX:
                    del _PENDING[next(iter(_PENDING))]
                _PENDING[id(run.scope)] = _Pending(run.scope)
        except Exception:
            run = None
        return call_in(run, wrapped, args, kwargs)

    return wrapper


def _invocation_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``Runner._new_invocation_context(session, *, invocation_id=None, ...)``: the run
    adopts ADK's invocation id and records whether the session held earlier events."""
    context = wrapped(*args, **kwargs)
    try:
        scope = current_scope()
        pending = _PENDING.pop(id(scope), None) if scope is not None else None
        if pending is not None and pending.scope is scope:
            pending.adopt(context)
    except Exception:
        pass
    return context


def instrument(handler: RunHandler) -> None:
    """Wrap ``Runner.run_async``, ``Runner.run_live`` and ``Runner._new_invocation_context``.
    Raises ImportError/AttributeError when this ADK has none of them (the instrumentor then skips
    the adapter with a warning)."""
    cls = importlib.import_module("google.adk.runners").Runner
    if not hasattr(cls, "_new_invocation_context"):  # an unknown shape
        raise AttributeError("google.adk.runners.Runner._new_invocation_context")
    for method in ("run_async", "run_live"):
        _wrapped.wrap(cls, method, _run_wrapper(handler))
    _wrapped.wrap(cls, "_new_invocation_context", _invocation_wrapper)


uninstrument = _wrapped.uninstrument
