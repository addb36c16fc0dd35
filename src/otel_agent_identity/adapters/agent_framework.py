"""Microsoft Agent Framework (agent-framework-core, agent-framework-a2a).

Wraps ``Agent.run``, ``A2AAgent.run`` and ``WorkflowAgent.run`` (both return shapes: a coroutine,
and a ``ResponseStream`` with ``stream=True``). ``Agent`` runs are enriched on the framework's own
``invoke_agent`` span when its telemetry is on (``OBSERVABILITY_SETTINGS.ENABLED``), else we create
one; ``A2AAgent`` (CLIENT) and ``WorkflowAgent`` (INTERNAL) emit none, so we create it.

Conversation id, in order: registered override; ``agent._get_otel_conversation_id(session)``
(ADR-0029: ``AgentSession.service_session_id`` when a string, A2A ``context_id``); then this
module's rule, the framework's durable ``AgentSession.session_id``. No session, no id. An
``A2AAgent``'s conversation is the remote one (the A2A contextId, service-assigned on the first
turn, learned from the response by the a2a-sdk adapter), so the local session id is never used.

State continuity: an ``Agent`` run with a session records ``agent_identity.conversation.resumed``
at its start (:func:`resumed_state`): whether it continues prior conversation state or starts from
nothing, which the collector compares with what the caller asked to continue.

An ``A2AAgent`` run is a delegation: its ``agent_identity.delegation.id`` is the one given with
``otel_agent_identity.delegation(key=...)``, else UUID5 of the ``message_id`` of the last input
``Message`` (A2AAgent sends it as the A2A ``Message.message_id``; re-running the same ``Message``
keeps the id), else random. A message without ``message_id`` gets a fresh one from A2AAgent on
every run, so only the a2a-sdk adapter sees it (it refines the id at the send, and injects
``traceparent``): see :mod:`otel_agent_identity.adapters.a2a_sdk`.
"""

from __future__ import annotations

from typing import Any, Optional

import inspect

from opentelemetry import trace
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.trace import SpanKind
from wrapt import wrap_function_wrapper

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler, SpanSpec
from otel_agent_identity.scope import current_scope, new_delegation_id

NAME = "agent_framework"
REQUIREMENTS = ("agent-framework-core >= 1.23, < 2",)

_TARGETS = [
    ("agent_framework", "Agent", "run"),
    ("agent_framework", "WorkflowAgent", "run"),
    ("agent_framework.a2a", "A2AAgent", "run"),
]
_CHAT_TARGET = ("agent_framework", "BaseChatClient", "get_response")
_wrapped: list[tuple[Any, str]] = []
_observability: Any = None  # agent_framework.observability, imported at instrument()
_history: tuple = ()  # (HistoryProvider, InMemoryHistoryProvider), imported at instrument()


def session_rule(agent: Any, session: Any, call: Any) -> Optional[str]:
    """Framework rule: the durable ``AgentSession.session_id`` (str) of a local-history session.

    When the service stores history (``options["store"]``, else ``client.STORES_BY_DEFAULT``, the
    framework's own test) the conversation id is the service's, which the agent step reports once
    it exists; the session id is then never used, so turn 1 and turn 2 report the same id.
    """
    if session is None:
        return None
    options = (call.kwargs or {}).get("options") or {}
    store = options.get("store") if hasattr(options, "get") else None
    if store is None:
        store = getattr(getattr(agent, "client", None), "STORES_BY_DEFAULT", False)
    if store:
        return None
    sid = getattr(session, "session_id", None)
    return sid if isinstance(sid, str) else None


def resumed_state(agent: Any, session: Any) -> Optional[bool]:
    """Whether a run of ``agent`` on ``session`` (an ``AgentSession``, before the run) resumes
    prior conversation state.

    True when the session has a ``service_session_id`` (the service holds the history: a thread,
    a response chain) or messages in its local history (``session.state[<source_id>]["messages"]``,
    where ``InMemoryHistoryProvider`` keeps them). False when it has neither and every history
    provider of the agent keeps its messages there (the default). None (not recorded) without a
    session, or when a history provider stores elsewhere (a file, a database): we cannot tell.
    """
    if session is None:
        return None
    if getattr(session, "service_session_id", None):
        return True
    state = getattr(session, "state", None)
    if isinstance(state, dict):  # AgentSession.state and each provider's entry are plain dicts
        for value in state.values():
            if type(value) is dict and value.get("messages"):
                return True
    if not _history:
        _load_history_types()
    if _history:
        base, in_memory = _history
        for provider in getattr(agent, "context_providers", None) or ():
            if isinstance(provider, base) and not isinstance(provider, in_memory):
                return None
    return False


def _load_history_types() -> None:
    global _history
    try:
        import agent_framework

        _history = (agent_framework.HistoryProvider, agent_framework.InMemoryHistoryProvider)
    except (ImportError, AttributeError):  # another framework version: providers not checked
        _history = ()


def _framework_emits_span() -> bool:
    return bool(_observability.OBSERVABILITY_SETTINGS.ENABLED)


def _span_spec(agent: Any, kind: SpanKind) -> SpanSpec:
    name = getattr(agent, "name", None) or getattr(agent, "id", None) or type(agent).__name__
    span_attrs = {attrs.GEN_AI_OPERATION_NAME: attrs.INVOKE_AGENT, attrs.GEN_AI_AGENT_NAME: str(name)}
    agent_id = getattr(agent, "id", None)
    if isinstance(agent_id, str):
        span_attrs[attrs.GEN_AI_AGENT_ID] = agent_id
    return SpanSpec(f"{attrs.INVOKE_AGENT} {name}", kind, span_attrs)


def _last_message_id(args: tuple, kwargs: dict) -> Optional[str]:
    """``message_id`` (str) of the last input message of ``run(messages, ...)``, else None."""
    messages = args[0] if args else kwargs.get("messages")
    if isinstance(messages, (list, tuple)):
        messages = messages[-1] if messages else None
    mid = getattr(messages, "message_id", None)
    return mid if isinstance(mid, str) and mid else None


def _run_wrapper(handler: RunHandler, kind: str):
    """Wrapper of ``run(self, messages=None, *, stream=False, session=None, **kw)``."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            delegation_id = new_delegation_id(_last_message_id(args, kwargs)) if kind == "a2a" else None
            if kind == "agent" and _framework_emits_span():
                spec = None
            else:
                spec = _span_spec(instance, SpanKind.CLIENT if kind == "a2a" else SpanKind.INTERNAL)
            session = kwargs.get("session")
            run = handler.start(
                framework=NAME, agent=instance, session=session, args=args, kwargs=kwargs,
                rule=None if kind == "a2a" else session_rule, span=spec, delegation_id=delegation_id,
                resumed=resumed_state(instance, session) if kind == "agent" else None,
            )
        except Exception:  # noqa: BLE001 - never break the application
            run = None
        if run is None:
            return wrapped(*args, **kwargs)
        return run.call(wrapped, args, kwargs)

    return wrapper


def _learn(scope: Any, span: Any, response: Any) -> None:
    """First turn: adopt ``ChatResponse.conversation_id`` (the id the service just assigned)."""
    if scope.learn(getattr(response, "conversation_id", None)) and span.is_recording():
        span.set_attribute(attrs.GEN_AI_CONVERSATION_ID, scope.conversation_id)


def _chat_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``BaseChatClient.get_response(messages, *, stream=False, ...)`` inside a run
    whose conversation is not known yet: the chat span and all later spans get the service's id."""
    result = wrapped(*args, **kwargs)
    try:
        scope = current_scope()
        if scope is None or scope.conversation_id is not None:
            return result
        span = trace.get_current_span()
        if inspect.iscoroutine(result):
            return _await_and_learn(result, scope, span)
        if hasattr(result, "with_result_hook"):
            def _hook(final):
                _learn(scope, span, final)
                return final

            return result.with_result_hook(_hook)
    except Exception:  # noqa: BLE001
        pass
    return result


async def _await_and_learn(coro, scope, span):
    response = await coro
    try:
        _learn(scope, span, response)
    except Exception:  # noqa: BLE001
        pass
    return response


def instrument(handler: RunHandler) -> None:
    """Wrap the run methods; a class missing from this framework version is skipped."""
    import importlib

    global _observability
    _observability = importlib.import_module("agent_framework.observability")
    _load_history_types()
    kinds = {"Agent": "agent", "A2AAgent": "a2a", "WorkflowAgent": "workflow"}
    for module_name, cls_name, method in _TARGETS:
        try:
            module = importlib.import_module(module_name)
            cls = getattr(module, cls_name)
        except (ImportError, AttributeError):
            continue
        wrap_function_wrapper(cls, method, _run_wrapper(handler, kinds[cls_name]))
        _wrapped.append((cls, method))
    module_name, cls_name, method = _CHAT_TARGET
    cls = getattr(importlib.import_module(module_name), cls_name)
    wrap_function_wrapper(cls, method, _chat_wrapper)
    _wrapped.append((cls, method))


def uninstrument() -> None:
    """Restore every wrapped method."""
    while _wrapped:
        cls, method = _wrapped.pop()
        unwrap(cls, method)
