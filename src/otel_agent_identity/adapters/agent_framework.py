"""Microsoft Agent Framework (agent-framework-core, agent-framework-a2a, agent-framework-openai).

Wraps ``Agent.run``, ``A2AAgent.run``, ``WorkflowAgent.run`` and ``Workflow.run`` (both return
shapes: a coroutine, and a ``ResponseStream`` with ``stream=True``, whose combinators and
``await`` keep the run's scope). ``Agent`` runs are enriched on the framework's own
``invoke_agent`` span when its telemetry is on (``OBSERVABILITY_SETTINGS.ENABLED``), else we create
one; ``A2AAgent`` (CLIENT ``invoke_agent``) and ``WorkflowAgent`` (INTERNAL ``invoke_workflow``)
emit none, so we create it. A plain ``Workflow.run()`` gets an execution id on the framework's
``workflow.run``/``executor.process`` spans, and no span of ours.

Conversation id, in order: registered override; ``agent._get_otel_conversation_id(session)``
(ADR-0029: ``AgentSession.service_session_id`` when a string, A2A ``context_id``); then this
module's rule, the framework's durable ``AgentSession.session_id``. No session, no id. An
OpenAI Responses chain (agent-framework-openai ``OpenAIChatClient``: the continuation value is the
previous ``resp_*``, single-result identity per ADR-0029) is the session's ``session_id``; a
``conv_*`` conversation is the service's. A sub-agent handed its caller's session
(``as_tool(propagate_session=True)``) reports the caller's conversation. An ``A2AAgent``'s
conversation is the remote one (the A2A contextId, service-assigned on the first turn, learned
from the response by the a2a-sdk adapter), so the local session id is never used.

State continuity: an ``Agent`` run with a session records ``agent_identity.conversation.resumed``
at its start (:func:`resumed_state`): whether it continues prior conversation state or starts from
nothing, which the collector compares with what the caller asked to continue.

An ``A2AAgent`` run is a delegation: its ``agent_identity.delegation.id`` is the one given with
``otel_agent_identity.delegation(key=...)``, else UUID5 of the ``message_id`` of the last input
``Message`` (A2AAgent sends it as the A2A ``Message.message_id``; re-running the same ``Message``
keeps the id), else random. A message without ``message_id`` gets a fresh one from A2AAgent on
every run, so only the a2a-sdk adapter sees it (it refines the id at the send, and injects
``traceparent``): see :mod:`otel_agent_identity.adapters.a2a`.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler, SpanSpec
from otel_agent_identity.adapters._base import Wrapped, agent_span_spec, call_in, nonempty_str
from otel_agent_identity.scope import current_scope, new_delegation_id
from otel_agent_identity.span_processor import attributes_of, set_trusted

_logger = logging.getLogger(__name__)

NAME = "agent_framework"
REQUIREMENTS = ("agent-framework-core >= 1.23, < 2",)

_TARGETS = [
    ("agent_framework", "Agent", "run"),
    ("agent_framework", "WorkflowAgent", "run"),
    ("agent_framework", "Workflow", "run"),
]
_A2A_TARGET = ("agent_framework_a2a", "A2AAgent", "run")  # wrapped when the application imports it
_KINDS = {"Agent": "agent", "A2AAgent": "a2a", "WorkflowAgent": "workflow", "Workflow": "plain_workflow"}
_CHAT_TARGET = ("agent_framework", "BaseChatClient", "get_response")
_wrapped = Wrapped()
_observability: Any = None  # agent_framework.observability, imported at instrument()
_history: tuple = ()  # (HistoryProvider, InMemoryHistoryProvider), imported at instrument()
_is_local_sentinel: Any = None  # agent_framework's is_local_history_conversation_id, if it has one


def _effective_options(agent: Any, call: Any) -> dict:
    """The run's options as the framework merges them: run ``options`` over ``agent.default_options``
    (a run value of None falls back to the default)."""
    merged = dict(getattr(agent, "default_options", None) or {})
    options = (call.kwargs or {}).get("options") or {}
    if hasattr(options, "items"):
        merged.update({k: v for k, v in options.items() if v is not None})
    return merged


_RESPONSES_TYPES: dict[type, bool] = {}


def _is_responses_client(client: Any) -> bool:
    """The OpenAI Responses client (agent-framework-openai ``RawOpenAIChatClient`` and subclasses)."""
    cls = type(client)
    found = _RESPONSES_TYPES.get(cls)
    if found is None:
        found = _RESPONSES_TYPES[cls] = any(
            c.__name__ == "RawOpenAIChatClient" and c.__module__.startswith("agent_framework_openai")
            for c in cls.__mro__
        )
    return found


def _is_response_id(client: Any, value: Any) -> bool:
    """A continuation value of the Responses client that is single-result identity: it sends every
    value but a ``conv_*`` conversation as ``previous_response_id`` (``resp_*``, ADR-0029)."""
    return isinstance(value, str) and not value.startswith("conv_") and _is_responses_client(client)


def _shared_session(session: Any, call: Any) -> str | None:
    """The enclosing run's conversation id when this run was handed its session
    (``as_tool(propagate_session=True)`` passes ``AgentSession(session_id=parent.session_id)``)."""
    outer = call.outer
    sid = getattr(session, "session_id", None)
    if outer is None or not isinstance(sid, str) or outer.session_id != sid:
        return None
    return outer.conversation_id


def agent_step(agent: Any, session: Any, call: Any) -> str | None:
    """The agent's own ``_get_otel_conversation_id(session)``, except for a session shared with the
    enclosing run (the service state of the sub-agent's copy is isolated, not the story) and a
    response id of the OpenAI Responses client (a chain's next ``previous_response_id``, new every
    turn: the response's identity, not the conversation's); the framework rule answers then."""
    if call.outer is not None and session is not None and _shared_session(session, call) is not None:
        return None
    value = agent._get_otel_conversation_id(session)
    if type(value) is str and not value.startswith("conv_") and _is_responses_client(getattr(agent, "client", None)):
        return None
    return value


def session_rule(agent: Any, session: Any, call: Any) -> str | None:
    """Framework rule: the durable ``AgentSession.session_id`` (str), unless the service will name
    the conversation.

    The service names it when it stores history (``store`` of the effective options, else
    ``client.STORES_BY_DEFAULT``: the framework's own test) and the continuation is a real
    conversation; the agent step reports it once it exists, so turn 1 and turn 2 report the same
    id. An OpenAI Responses chain (``previous_response_id``, no ``conv_*`` conversation) is the
    session's story: its ``session_id``, on every turn, the first included. A sub-agent handed the
    enclosing run's session (same ``session_id``) reports the enclosing run's conversation id.
    """
    if session is None:
        return None
    shared = _shared_session(session, call)
    if shared is not None:
        return shared
    sid = getattr(session, "session_id", None)
    if not isinstance(sid, str):
        return None
    options = _effective_options(agent, call)
    client = getattr(agent, "client", None)
    continuation = getattr(session, "service_session_id", None) or options.get("conversation_id")
    if _is_responses_client(client) and not (isinstance(continuation, str) and continuation.startswith("conv_")):
        return sid
    store = options.get("store")
    if store is None:
        store = getattr(client, "STORES_BY_DEFAULT", False)
    return None if store else sid


def resumed_state(agent: Any, session: Any) -> bool | None:
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


_FRAMEWORK_PROVIDER = "microsoft.agent_framework"  # what the framework's own invoke_agent spans say


def _span_spec(agent: Any, kind: str) -> SpanSpec:
    """The span we create: ``invoke_agent {name}`` (CLIENT for an ``A2AAgent``), or
    ``invoke_workflow {name}`` for a ``WorkflowAgent``, with the GenAI semconv attributes."""
    name = (
        nonempty_str(getattr(agent, "name", None)) or nonempty_str(getattr(agent, "id", None)) or type(agent).__name__
    )
    provider = (
        nonempty_str(getattr(agent, "otel_provider_name", None))
        or nonempty_str(getattr(type(agent), "AGENT_PROVIDER_NAME", None))
        or _FRAMEWORK_PROVIDER
    )
    extra: dict[str, Any] = {}
    for key, value in (
        (attrs.GEN_AI_AGENT_ID, getattr(agent, "id", None)),
        (attrs.GEN_AI_AGENT_DESCRIPTION, getattr(agent, "description", None)),
    ):
        if nonempty_str(value):
            extra[key] = value
    if kind == "workflow":
        workflow = getattr(agent, "workflow", None)
        extra[attrs.GEN_AI_WORKFLOW_NAME] = nonempty_str(getattr(workflow, "name", None)) or name
    if kind == "a2a":
        version = _a2a_protocol_version(agent)
        if version:
            extra[attrs.A2A_PROTOCOL_VERSION] = version
    return agent_span_spec(
        name,
        provider,
        operation=attrs.INVOKE_WORKFLOW if kind == "workflow" else attrs.INVOKE_AGENT,
        kind=SpanKind.CLIENT if kind == "a2a" else SpanKind.INTERNAL,
        extra=extra,
    )


def _a2a_protocol_version(agent: Any) -> str | None:
    """The A2A protocol version an ``A2AAgent``'s a2a-sdk client speaks: its transport's Agent Card
    interface's ``protocol_version``; a legacy (``Compat*``) transport speaks 0.3; an interface
    without one gets a2a-sdk's ``PROTOCOL_VERSION_CURRENT`` (what its transports send in ``A2A-Version``)."""
    client = getattr(agent, "client", None)
    transport = getattr(client, "_transport", None)
    if transport is None:
        return None
    if type(transport).__name__.startswith("Compat"):
        return "0.3"
    url = getattr(transport, "url", None)
    for interface in getattr(getattr(client, "_card", None), "supported_interfaces", None) or ():
        if getattr(interface, "url", None) == url and nonempty_str(getattr(interface, "protocol_version", None)):
            return interface.protocol_version
    try:
        from a2a.utils.constants import PROTOCOL_VERSION_CURRENT
    except ImportError:
        return None
    return PROTOCOL_VERSION_CURRENT


def _last_message_id(args: tuple, kwargs: dict) -> str | None:
    """``message_id`` (str) of the last input message of ``run(messages, ...)``, else None."""
    messages = args[0] if args else kwargs.get("messages")
    if isinstance(messages, (list, tuple)):
        messages = messages[-1] if messages else None
    mid = getattr(messages, "message_id", None)
    return mid if isinstance(mid, str) and mid else None


def _run_wrapper(handler: RunHandler, kind: str):
    """Wrapper of ``run(self, messages=None, *, stream=False, session=None, **kw)``."""
    if kind == "plain_workflow":
        return lambda wrapped, instance, args, kwargs: _workflow_run(handler, wrapped, instance, args, kwargs)
    if kind == "agent":

        def agent_wrapper(wrapped, instance, args, kwargs):
            try:
                session = kwargs.get("session")
                run = handler.start(
                    NAME,
                    instance,
                    session,
                    args,
                    kwargs,
                    rule=session_rule,
                    span=None if _observability.OBSERVABILITY_SETTINGS.ENABLED else _span_spec(instance, kind),
                    resumed=resumed_state(instance, session),
                    agent_step=agent_step,
                )
            except Exception:
                run = None
            if run is None:
                return wrapped(*args, **kwargs)
            run.scope.span_ending = _chat_span_ending
            return run.call(wrapped, args, kwargs)

        return agent_wrapper

    def wrapper(wrapped, instance, args, kwargs):
        try:
            delegation_id = new_delegation_id(_last_message_id(args, kwargs)) if kind == "a2a" else None
            run = handler.start(
                NAME,
                instance,
                kwargs.get("session"),
                args,
                kwargs,
                rule=None if kind == "a2a" else session_rule,
                span=_span_spec(instance, kind),
                delegation_id=delegation_id,
            )
        except Exception:
            run = None
        return call_in(run, wrapped, args, kwargs)

    return wrapper


def _workflow_run(handler: RunHandler, wrapped, instance, args, kwargs):
    """``Workflow.run(message=None, *, stream=False, ...)`` called directly (not by the
    ``WorkflowAgent`` run that wraps this workflow): a run with an execution id and no
    conversation, stamped on the framework's ``workflow.run`` and ``executor.process`` spans and
    on every agent run inside (their ``parent.execution.id``). No span of our own."""
    try:
        outer = current_scope()
        if outer is not None and getattr(outer.owner, "workflow", None) is instance:
            return wrapped(*args, **kwargs)  # part of that WorkflowAgent's run
        run = handler.start(NAME, instance, None, args, kwargs, claim=False)
    except Exception:
        run = None
    return call_in(run, wrapped, args, kwargs)


def _learn(scope: Any, span: Any, response: Any, client: Any = None) -> None:
    """First turn: adopt ``ChatResponse.conversation_id`` (the id the service just assigned), not a
    response id of the Responses client nor the framework's local-history sentinel."""
    cid = getattr(response, "conversation_id", None)
    if _is_response_id(client, cid) or (_is_local_sentinel is not None and _is_local_sentinel(cid)):
        return
    if scope.learn(cid) and span.is_recording():
        set_trusted(span, {attrs.GEN_AI_CONVERSATION_ID: scope.conversation_id})  # the open chat span


def _chat_span_ending(span: Any, scope: Any) -> None:
    """``span_ending`` of an ``Agent`` run's scope: a span of the run is about to end and its
    ``gen_ai.conversation.id`` is not the run's. The framework's chat telemetry sets it after the
    span started (so over our stamp), and again with the response, to the chat option
    ``conversation_id``: for a Responses chain, the previous response id. On a chat span the run's
    id replaces it (also when a count limit evicted the framework's value); without one, a
    response id stays (the public API removes no attribute; it is also on the previous chat span
    as ``gen_ai.response.id``). On every span of the framework's tracer, our other ids that a count
    limit evicted are written again (the framework never writes them). Other spans (the
    application's own included) keep what was set."""
    # the framework's spans by their tracer (and chat by its name): an attribute may have been evicted
    if getattr(span.instrumentation_scope, "name", None) != "agent_framework":
        return
    current = attributes_of(span)
    ids = {k: current.get(k, v) for k, v in scope.attributes.items() if k != attrs.GEN_AI_CONVERSATION_ID}
    if span.name.startswith("chat") and scope.conversation_id is not None:
        ids[attrs.GEN_AI_CONVERSATION_ID] = scope.conversation_id  # the run's over the framework's
    if any(current.get(k) != v for k, v in ids.items()):
        # ours the newest: those it has moved first (no eviction), then the missing in place of the oldest
        set_trusted(span, {k: v for k, v in ids.items() if k in current})
        set_trusted(span, ids)


def _chat_wrapper(handler: RunHandler):
    def wrapper(wrapped, instance, args, kwargs):
        scope = current_scope()
        if scope is None or (scope.conversation_id is not None and not scope.provisional):
            return wrapped(*args, **kwargs)  # nothing to learn (the chat span is corrected as it ends)
        try:
            span = trace.get_current_span()  # the framework's chat span (it is current here)
        except Exception:
            span = trace.INVALID_SPAN  # learning below then sets no attribute on it
        return _learn_from(wrapped(*args, **kwargs), instance, scope, span)

    return wrapper


def _learn_from(result, instance, scope, span):
    """``BaseChatClient.get_response(messages, *, stream=False, ...)`` inside a run whose
    conversation is not known yet (or only provisionally): the chat span and all later spans get
    the service's id."""
    try:
        if inspect.iscoroutine(result):
            return _await_and_learn(result, scope, span, instance)
        if hasattr(result, "with_result_hook"):

            def _hook(final):
                _learn(scope, span, final, instance)
                return final

            return result.with_result_hook(_hook)
    except Exception:
        pass
    return result


async def _await_and_learn(coro, scope, span, client):
    response = await coro
    try:  # noqa: SIM105 - per chat call: a try is free, contextlib.suppress is not
        _learn(scope, span, response, client)
    except Exception:
        pass
    return response


def instrument(handler: RunHandler) -> None:
    """Wrap the run methods; a class missing from this framework version is skipped."""
    import importlib

    global _observability, _is_local_sentinel
    _observability = importlib.import_module("agent_framework.observability")
    _load_history_types()
    _is_local_sentinel = getattr(importlib.import_module("agent_framework"), "is_local_history_conversation_id", None)
    if _is_local_sentinel is None:
        _is_local_sentinel = getattr(
            importlib.import_module("agent_framework._sessions"), "is_local_history_conversation_id", None
        )
    for module_name, cls_name, method in _TARGETS:
        try:
            module = importlib.import_module(module_name)
            cls = getattr(module, cls_name)
        except (ImportError, AttributeError):
            continue
        _wrapped.wrap(cls, method, _run_wrapper(handler, _KINDS[cls_name]))
    module_name, cls_name, method = _CHAT_TARGET
    cls = getattr(importlib.import_module(module_name), cls_name)
    _wrapped.wrap(cls, method, _chat_wrapper(handler))


def instrument_a2a_agent(handler: RunHandler) -> None:
    """Wrap ``A2AAgent.run`` (package ``agent-framework-a2a``, imported by the application: it
    imports the a2a-sdk, which an application without A2A never pays for). It imports
    ``agent_framework`` first, so :func:`instrument` has run."""
    import importlib

    module_name, cls_name, method = _A2A_TARGET
    cls = getattr(importlib.import_module(module_name), cls_name)
    _wrapped.wrap(cls, method, _run_wrapper(handler, _KINDS[cls_name]))


uninstrument = _wrapped.uninstrument
