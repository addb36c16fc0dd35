"""a2a-sdk (>= 1.3, protocol 1.0): every ``SendMessage`` is a delegation, both sides in one trace.

Client (``a2a.client.base_client.BaseClient.send_message``, which Agent Framework's ``A2AAgent``
also calls): injects W3C ``traceparent`` (only trace context, never baggage: identity crossing a
boundary is the guard's business) into ``ClientCallContext.service_parameters``, which the HTTP
transports send as headers and gRPC as metadata. Inside an ``A2AAgent`` run the send enriches that
run's CLIENT ``invoke_agent`` span; a direct send gets a CLIENT ``invoke_agent {card name}`` span
of its own. (The A2A semconv names a pure A2A client span ``{a2a.method.name}``; ours stands for the
delegation, the remote agent's invocation, which is what the collector compares hops from, so it
carries ``gen_ai.operation.name=invoke_agent`` and the ``a2a.*`` attributes.) a2a-sdk's own method
spans (on unless ``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false``) are left alone.

Delegation id of a send: ``otel_agent_identity.delegation(key=...)`` when the application gave one,
else UUID5 of the request's ``Message.message_id`` (so re-sending the same message keeps the id),
else random. Conversation id of a direct send: ``Message.context_id`` as sent, else the
``context_id`` the server assigned in its first response event.

Server (``DefaultRequestHandlerV2`` and ``LegacyRequestHandler`` ``on_message_send`` /
``on_message_send_stream``): a SERVER span named after the A2A method, parented on the
``traceparent`` header (``ServerCallContext.state["headers"]``) unless a transport server span is
already current. The executor runs in a copy of that context (a2a-sdk captures it per request), so
the serving agent run is its descendant. Attributes: :mod:`otel_agent_identity.adapters._a2a_attrs`.
"""

from __future__ import annotations

import logging
from typing import Any

import wrapt
from opentelemetry import trace
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otel_agent_identity import attributes as attrs
from otel_agent_identity import continuity, metrics
from otel_agent_identity._runs import RunHandler, SpanSpec
from otel_agent_identity.adapters import _a2a_attrs as facts
from otel_agent_identity.adapters._a2a_server import server_wrapper
from otel_agent_identity.scope import current_scope, new_delegation_id
from otel_agent_identity.span_processor import set_trusted

NAME = "a2a"
REQUIREMENTS = ("a2a-sdk >= 1.3, < 2",)

_logger = logging.getLogger(__name__)
_PROPAGATOR = TraceContextTextMapPropagator()  # traceparent/tracestate only; baggage never rides along
_wrapped: list[tuple[Any, str]] = []


class SendTarget:
    """What the extractor of a direct send looks at (the ``session`` of its run).

    ``context_id`` is the request's ``Message.context_id``, replaced by the server's when the
    request had none (first turn). Register an override for ``BaseClient`` to report another id.
    """

    def __init__(self, context_id: str | None) -> None:
        self.context_id = context_id or None


def context_rule(agent: Any, session: Any, call: Any) -> str | None:
    """Framework rule of a direct send: the A2A ``contextId`` (str) of :class:`SendTarget`."""
    return getattr(session, "context_id", None)


def inject_trace_context(request_context: Any, ctx: Any = None) -> Any:
    """Return a ``ClientCallContext`` whose ``service_parameters`` carry ``traceparent`` of ``ctx``.

    Args:
        request_context: the caller's ``a2a.client.ClientCallContext`` or None (a new one is made;
            the caller's is copied, never mutated).
        ctx: an OpenTelemetry ``Context``; the current one when None.
    """
    from a2a.client.client import ClientCallContext

    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=ctx)
    if not carrier:
        return request_context
    if request_context is None:
        return ClientCallContext(service_parameters=carrier)
    params = dict(request_context.service_parameters or {})
    params.update(carrier)
    return request_context.model_copy(update={"service_parameters": params})


def _enclosing_agent_span(scope: Any) -> trace.Span | None:
    """The CLIENT ``invoke_agent`` span of an ``A2AAgent`` run, when this send is that run's."""
    span = trace.get_current_span()
    if scope is None or scope.delegation_id is None or not span.is_recording():
        return None
    if getattr(span, "kind", None) is not SpanKind.CLIENT:
        return None
    span_attrs = getattr(span, "attributes", None) or {}
    return span if span_attrs.get(attrs.GEN_AI_OPERATION_NAME) == attrs.INVOKE_AGENT else None


def _send_wrapper(handler: RunHandler):
    """Wrapper of ``BaseClient.send_message(request, *, context=None)`` (an async generator)."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            hop = _begin_send(handler, instance, args, kwargs)
            if hop is not None:
                request = args[0] if args else kwargs.get("request")
                requested = facts.requested_context(getattr(request, "message", None))
        except Exception:
            _logger.debug("otel-agent-identity: a2a send tracking failed", exc_info=True)
            hop = None
        if hop is None:
            return wrapped(*args, **kwargs)
        run, span, target, kwargs, memo = hop
        if run is not None:
            return SendStream(run.call(wrapped, args, kwargs), span, run.scope, target, requested, memo)
        return SendStream(wrapped(*args, **kwargs), span, current_scope(), None, requested, memo)

    return wrapper


def _begin_send(handler: RunHandler, client: Any, args: tuple, kwargs: dict):
    """Set up one send of ``request: SendMessageRequest`` by ``client: BaseClient``.

    Returns ``(run or None, delegation span, SendTarget or None, kwargs with the traceparent
    context, restart memo or None)``, or None when no tracking could start. May raise (the wrapper
    catches it).
    """
    request = args[0] if args else kwargs.get("request")
    message = getattr(request, "message", None)
    did = new_delegation_id(transport_key=getattr(message, "message_id", None) or None)
    request_attrs = facts.request_attributes(request, client, streaming=facts.client_streams(client))
    scope = current_scope()
    span = _enclosing_agent_span(scope)
    kwargs = dict(kwargs)
    if span is not None:  # A2AAgent run: its span is this delegation
        if scope.delegation_id != did:
            scope.delegation_id = did
            scope.refresh()
        request_attrs.pop(attrs.GEN_AI_CONVERSATION_ID, None)  # the A2AAgent extractor's to set (requested_id stays)
        span.set_attributes(request_attrs)
        set_trusted(span, {attrs.DELEGATION_ID: did})
        kwargs["context"] = inject_trace_context(kwargs.get("context"))
        memo = _check_restart(span, scope.parent_conversation_id, client, message, "agent_framework")
        return None, span, None, kwargs, memo
    outer = scope
    name = facts.card_name(client)
    spec_attrs = {attrs.GEN_AI_OPERATION_NAME: attrs.INVOKE_AGENT, **request_attrs}
    if name:
        spec_attrs[attrs.GEN_AI_AGENT_NAME] = name
    target = SendTarget(getattr(message, "context_id", None))
    run = handler.start(
        framework=NAME,
        agent=client,
        session=target,
        args=args,
        kwargs=kwargs,
        rule=context_rule,
        span=SpanSpec(f"{attrs.INVOKE_AGENT} {name or 'a2a'}", SpanKind.CLIENT, spec_attrs),
        delegation_id=did,
    )
    if run is None:
        return None
    kwargs["context"] = inject_trace_context(kwargs.get("context"), trace.set_span_in_context(run.span))
    memo = _check_restart(run.span, outer.conversation_id if outer else None, client, message, NAME)
    return run, run.span, target, kwargs, memo


def _remote_key(client: Any) -> str | None:
    """The remote agent of a send: its Agent Card ``name``, else the transport URL."""
    return facts.card_name(client) or facts.transport_url(client)


def _check_restart(span: Any, own: str | None, client: Any, message: Any, framework: str):
    """A delegate restarted: in the caller's conversation ``own`` a context was in effect with this
    remote agent and the send requests another one (or none). Marks ``span`` with the previous
    context and counts it, unless inside :func:`otel_agent_identity.new_conversation`.

    Returns ``(own, remote)`` for :class:`SendStream` to remember the context in effect, or None
    (no own conversation: nothing to compare with)."""
    remote = _remote_key(client)
    if not own or not remote:
        return None
    requested = facts.requested_context(message)
    last = continuity.delegate_contexts.last(own, remote)
    if last and requested != last and not continuity.new_conversation_declared():
        span.set_attribute(attrs.CONVERSATION_PREVIOUS_ID, last)
        local_name = (getattr(span, "attributes", None) or {}).get(attrs.GEN_AI_AGENT_NAME)  # A2AAgent(name=...)
        metrics.count(metrics.DELEGATE_RESTARTS, agent=facts.card_name(client) or local_name, framework=framework)
    if requested:
        continuity.delegate_contexts.remember(own, remote, requested)
    return own, remote


class SendStream(wrapt.ObjectProxy):
    """The send's response stream: each event's task id and state go on the delegation span.

    A response in another context than the one sent (``requested``) marks the span
    ``agent_identity.conversation.changed=true``: the caller alone sees a callee that answered
    elsewhere, instrumented or not. First turn (no contextId sent): the ``context_id`` the server
    assigned becomes the hop's conversation id, for spans started from then on (``scope.learn``) and on the delegation span
    (a direct send: through :func:`context_rule` when its run finishes; an ``A2AAgent`` run without
    a session, whose extractor has nothing to report: set here).
    """

    def __init__(
        self,
        wrapped: Any,
        span: Any,
        scope: Any,
        target: SendTarget | None,
        requested: str | None = None,
        memo: tuple | None = None,
    ) -> None:
        super().__init__(wrapped)
        self._self_memo = memo
        self._self_span = span
        self._self_scope = scope
        self._self_target = target
        self._self_requested = requested

    def __aiter__(self):
        return self

    async def __anext__(self):
        item = await self.__wrapped__.__anext__()
        try:
            observed = facts.event_facts(item)
            span, target, assigned = self._self_span, self._self_target, observed.get("context_id")
            if target is not None and target.context_id is None and assigned:
                target.context_id = assigned  # first turn: the server's id
            scope = self._self_scope
            if assigned and scope is not None and scope.learn(assigned) and target is None and span.is_recording():
                set_trusted(span, {attrs.GEN_AI_CONVERSATION_ID: scope.conversation_id})
            if span.is_recording():
                span.set_attributes(facts.event_attributes(observed))
                facts.mark_failed_task(span, observed)
                if facts.mark_changed(span, self._self_requested, assigned):
                    metrics.count(
                        metrics.CONVERSATION_CHANGES,
                        agent=(getattr(span, "attributes", None) or {}).get(attrs.GEN_AI_AGENT_NAME),
                        framework=NAME,
                        reason=metrics.REASON_CALLEE,
                    )
            if assigned and self._self_memo is not None:  # the context in effect with this remote agent
                continuity.delegate_contexts.remember(*self._self_memo, assigned)
        except Exception:
            _logger.debug("otel-agent-identity: could not read an a2a event", exc_info=True)
        return item


def instrument_client(handler: RunHandler) -> None:
    """Wrap ``BaseClient.send_message`` (module ``a2a.client.base_client``, imported by the application)."""
    import importlib

    base = importlib.import_module("a2a.client.base_client")
    wrapt.wrap_function_wrapper(base.BaseClient, "send_message", _send_wrapper(handler))
    _wrapped.append((base.BaseClient, "send_message"))


#: the server request handlers, each wrapped when the application imports its module
_SERVER_TARGETS = (
    ("a2a.server.request_handlers.default_request_handler_v2", "DefaultRequestHandlerV2"),
    ("a2a.server.request_handlers.default_request_handler", "LegacyRequestHandler"),
)


def instrument_server(handler: RunHandler) -> None:
    """Wrap ``on_message_send``/``on_message_send_stream`` of each request handler class of this
    a2a-sdk version whose module is imported and not wrapped yet (imports nothing)."""
    import sys

    for module_name, cls_name in _SERVER_TARGETS:
        cls = getattr(sys.modules.get(module_name), cls_name, None)
        if cls is None:
            continue
        for method, streaming in (("on_message_send", False), ("on_message_send_stream", True)):
            if method in cls.__dict__ and (cls, method) not in _wrapped:
                wrapt.wrap_function_wrapper(cls, method, server_wrapper(handler.tracer, streaming))
                _wrapped.append((cls, method))


def uninstrument() -> None:
    """Restore every wrapped method."""
    while _wrapped:
        cls, method = _wrapped.pop()
        unwrap(cls, method)
