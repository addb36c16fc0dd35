"""The A2A server side: one SERVER span per ``on_message_send(_stream)`` call.

``on_message_send(params: SendMessageRequest, context: ServerCallContext) -> Task | Message`` and
``on_message_send_stream(params, context) -> AsyncGenerator[event]``. The span's parent is the
current span when a transport instrumentation already started one (it extracted the headers
itself), else the W3C ``traceparent`` of ``context.state["headers"]`` (the JSON-RPC and REST routes
put the HTTP request headers there). Only trace context is read here; identity forwarded by an
allowlisted caller is the boundary guard's (``otel_agent_identity.boundary.inbound_context``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otel_agent_identity import attributes as attrs
from otel_agent_identity import boundary, continuity, metrics
from otel_agent_identity._errors import end_span
from otel_agent_identity._streams import StreamProxy
from otel_agent_identity.adapters.a2a import attributes as facts
from otel_agent_identity.scope import attach_context, delegation_id_of, detach_context, suppressed
from otel_agent_identity.span_processor import set_ids

_logger = logging.getLogger(__name__)
_PROPAGATOR = TraceContextTextMapPropagator()
_BAGGAGE = W3CBaggagePropagator()


def request_headers(call_context: Any) -> Mapping[str, str]:
    """Request headers, lower-cased: ``state["headers"]`` (HTTP routes) or the gRPC invocation
    metadata of ``state["grpc_context"]`` (``GrpcHandler``)."""
    state = getattr(call_context, "state", None)
    if not isinstance(state, Mapping):
        return {}
    headers = state.get("headers")
    if not isinstance(headers, Mapping):
        grpc_context = state.get("grpc_context")
        try:
            headers = dict(grpc_context.invocation_metadata() or ()) if grpc_context is not None else {}
        except Exception:
            headers = {}
    return {str(k).lower(): v for k, v in headers.items() if isinstance(v, str)}


def parent_context(headers: Mapping[str, str]) -> otel_context.Context:
    """The current context when it already continues the caller's trace (a transport server span
    extracted the headers), else the context extracted from ``traceparent``: a current span of
    another trace (a2a-sdk's own spans of a request no wrapped dispatcher served start a new
    trace) loses to the header."""
    current = trace.get_current_span().get_span_context()
    extracted = _PROPAGATOR.extract(headers)
    remote = trace.get_current_span(extracted).get_span_context()
    if not remote.is_valid or (current.is_valid and current.trace_id == remote.trace_id):
        return otel_context.get_current()
    return extracted


#: the context key under which :func:`dispatch_wrapper` hands its SERVER span (a one-item list,
#: emptied when the request handler's wrapper takes it) to the request handler's wrapper
_EARLY_KEY = otel_context.create_key("agent_identity.a2a_early_span")
_SENDS = {"SendMessage": False, "SendStreamingMessage": True}  # JSON-RPC method -> streaming


def _early_box() -> list | None:
    """The box holding the SERVER span the dispatcher's wrapper started for this request, while
    no request handler's wrapper has taken it (emptied it), else None."""
    box = otel_context.get_current().get(_EARLY_KEY)
    return box if type(box) is list and box else None


def dispatch_wrapper(tracer: trace.Tracer, streaming: bool | None):
    """Wrapper of an a2a-sdk HTTP dispatcher's route endpoint (``args[0]``: the Starlette
    ``Request``): ``JsonRpcDispatcher.handle_requests`` (``streaming=None``: the JSON-RPC method
    tells) or ``RestDispatcher.on_message_send(_stream)``. a2a-sdk's own spans
    (``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED``) begin in the dispatcher, which extracts no
    ``traceparent``: for a send whose ``traceparent`` no current span continues, our SERVER span
    starts here, on the caller's context, and the dispatcher runs in it, so every span of the
    request is in the caller's trace and ours stays the first one in this service (the collector's
    entry span). The request handler's wrapper takes the span (attributes, ending); one it never
    took (the request failed before the handler) ends here."""

    def wrapper(wrapped, instance, args, kwargs):
        request = args[0] if args else kwargs.get("request")
        headers = getattr(request, "headers", None)
        try:
            if not isinstance(headers, Mapping) or "traceparent" not in headers or suppressed():
                return wrapped(*args, **kwargs)
            parent = parent_context(headers)
        except Exception:
            _logger.debug("otel-agent-identity: reading a2a request headers failed", exc_info=True)
            return wrapped(*args, **kwargs)
        if parent is otel_context.get_current():  # a transport span continues the caller's trace
            return wrapped(*args, **kwargs)
        return _dispatch(tracer, streaming, request, parent, wrapped, args, kwargs)

    return wrapper


async def _dispatch(tracer, streaming, request, parent, wrapped, args, kwargs):
    if streaming is None:
        try:
            body = await request.json()  # Starlette keeps it: the dispatcher reads it again for free
            streaming = _SENDS.get(body.get("method")) if isinstance(body, dict) else None
        except Exception:
            streaming = None
        if streaming is None:  # not a send (or unreadable: the dispatcher answers the error)
            return await wrapped(*args, **kwargs)
    try:
        span = tracer.start_span(facts.method_name(streaming), context=parent, kind=SpanKind.SERVER)
        box = [span]
        token = attach_context(otel_context.set_value(_EARLY_KEY, box, trace.set_span_in_context(span, parent)))
    except Exception:
        _logger.debug("otel-agent-identity: a2a server span failed", exc_info=True)
        return await wrapped(*args, **kwargs)
    error = None
    try:
        return await wrapped(*args, **kwargs)
    except BaseException as exc:
        error = exc
        raise
    finally:
        detach_context(token)
        if box:  # the request handler never took it
            end_span(span, error)


def agent_name(handler: Any) -> str | None:
    card = getattr(handler, "_agent_card", None) or getattr(handler, "agent_card", None)
    name = getattr(card, "name", None)
    return name if isinstance(name, str) and name else None


def _inbound(span: Any, headers: Mapping[str, str], ctx: otel_context.Context) -> otel_context.Context:
    """Hand the request's W3C baggage to the boundary guard: it records identity an allowlisted
    caller forwarded, and the serving agent run later compares its own conversation id."""
    if "baggage" not in headers:
        return ctx
    try:
        return boundary.inbound_context(span, baggage.get_all(_BAGGAGE.extract(headers)), ctx)
    except Exception:
        _logger.debug("otel-agent-identity: recording upstream identity failed", exc_info=True)
        return ctx


def start_server_span(tracer: trace.Tracer, handler: Any, params: Any, call_context: Any, streaming: bool):
    """Start the SERVER span of one A2A request (or take the one :func:`dispatch_wrapper` started
    for it); returns ``(span, context with the span)``."""
    headers = request_headers(call_context)
    span_attrs = facts.request_attributes(params, streaming=streaming)
    version = headers.get("a2a-version")
    if version:
        span_attrs[attrs.A2A_PROTOCOL_VERSION] = version
    name = agent_name(handler)
    if name:
        span_attrs[attrs.GEN_AI_AGENT_NAME] = name
    box = _early_box()
    if box is not None:  # a2a-sdk's dispatcher spans are its children: the request runs under them
        span = box[0]
        span.set_attributes(span_attrs)
        ctx = _inbound(span, headers, otel_context.get_current())
    else:
        parent = parent_context(headers)
        span = tracer.start_span(
            facts.method_name(streaming), context=parent, kind=SpanKind.SERVER, attributes=span_attrs
        )
        ctx = _inbound(span, headers, trace.set_span_in_context(span, parent))
    message = getattr(params, "message", None)
    ctx = _served_delegation(span, message, name, ctx)
    ctx = continuity.with_serving_requested(ctx, facts.requested_context(message), span, name)
    if box is not None:
        box.clear()  # taken: the request's owner ends it (until here the dispatcher's wrapper would)
    return span, ctx


def _served_delegation(span: Any, message: Any, agent: str | None, ctx: Any) -> Any:
    """The request's delegation: the id an allowlisted caller forwarded (baggage, the same for a
    retry from another process), else the one the caller derives from ``Message.message_id`` (a
    re-sent message). A delegation this process already received marks the span
    ``agent_identity.delegation.redelivered`` and counts ``agent_identity.delegation.duplicate_deliveries``;
    returns ``ctx`` carrying the key, so the run that executes it can tell a duplicate execution
    (:func:`otel_agent_identity.continuity.note_execution`)."""
    forwarded = facts.span_attribute(span, attrs.UPSTREAM_DELEGATION_ID)
    message_id = getattr(message, "message_id", None)
    key = (
        forwarded
        if isinstance(forwarded, str) and forwarded
        else (delegation_id_of(message_id) if isinstance(message_id, str) and message_id else None)
    )
    if key and continuity.served_delegations.seen_before(key):
        span.set_attribute(attrs.DELEGATION_REDELIVERED, True)
        metrics.count(metrics.DELEGATION_DUPLICATE_DELIVERIES, agent=agent, framework="a2a")
    return continuity.with_served_delegation(ctx, span, key, agent)


def observe(span: Any, event: Any, requested: str | None = None, ctx: Any = None) -> None:
    """Put an outgoing event's task id, state and context id (the context the server answered
    in) on the span; ``agent_identity.conversation.changed`` when it is not the ``requested`` one.
    ``ctx``: the request's context (the serving run's agent conversation is remembered under the
    context answered in: :func:`otel_agent_identity.continuity.served_context`)."""
    try:
        seen = facts.event_facts(event)
        if ctx is not None and seen.get("context_id"):  # sampled or not: the process answered in it
            continuity.served_context(ctx, seen["context_id"])
        if not span.is_recording():
            return
        span.set_attributes(facts.event_attributes(seen))
        facts.mark_failed_task(span, seen)
        if seen.get("context_id"):
            set_ids(span, {attrs.GEN_AI_CONVERSATION_ID: seen["context_id"]})
            if facts.mark_changed(span, requested, seen["context_id"]):
                metrics.count(
                    metrics.CONVERSATION_CHANGES,
                    agent=facts.span_attribute(span, attrs.GEN_AI_AGENT_NAME),
                    framework="a2a",
                    reason=metrics.REASON_SERVED,
                )
    except Exception:
        _logger.debug("otel-agent-identity: could not read an a2a server event", exc_info=True)


class Request:
    """One served request, the owner (:mod:`otel_agent_identity._streams`) of its handler's result:
    its SERVER ``span`` and the OpenTelemetry ``ctx`` with that span; :meth:`finish` ends the span once."""

    __slots__ = ("ctx", "done", "requested", "span")

    def __init__(self, span: Any, ctx: Any, requested: str | None) -> None:
        self.span, self.ctx, self.requested, self.done = span, ctx, requested, False

    def enter(self) -> Any:
        return attach_context(self.ctx)

    def exit(self, token: Any) -> None:
        detach_context(token)

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        """End the SERVER span (once), with ERROR status and ``error.type`` when ``error`` (the
        handler's own exception, which the caller re-raises) is a failure. Never raises."""
        if not self.done:
            self.done = True
            end_span(self.span, error)

    def observe(self, event: Any) -> None:
        observe(self.span, event, self.requested, self.ctx)


def server_wrapper(tracer: trace.Tracer, streaming: bool):
    """Wrapper of ``on_message_send`` (``streaming=False``) or ``on_message_send_stream``: the
    handler's result (a coroutine, an event stream) runs in the SERVER span's context (the executor
    is scheduled during the first pull and captures it). The span ends with it: returned, failed,
    cancelled, exhausted, closed, or dropped unfinished (a client that abandons an SSE response:
    the route's generators are closed, never this stream, which is then collected)."""

    def wrapper(wrapped, instance, args, kwargs):
        if suppressed():  # suppress_instrumentation: no span of ours
            return wrapped(*args, **kwargs)
        try:
            params = args[0] if args else kwargs.get("params")
            call_context = args[1] if len(args) > 1 else kwargs.get("context")
            span, ctx = start_server_span(tracer, instance, params, call_context, streaming)
            request = Request(span, ctx, facts.requested_context(getattr(params, "message", None)))
        except Exception:
            _logger.debug("otel-agent-identity: a2a server span failed", exc_info=True)
            return wrapped(*args, **kwargs)
        return run_owned(request, streaming, wrapped, args, kwargs)

    return wrapper


def run_owned(owner: Any, streaming: bool, wrapped, args, kwargs):
    """Call ``wrapped(*args, **kwargs)`` for ``owner`` (a :class:`Request`, or anything with its
    ``enter``/``exit``/``finish``/``observe``): a stream (``streaming``) runs every pull in the
    owner's context and ``observe`` sees each event; a coroutine is awaited in it and ``observe``
    sees its result. The owner finishes with it (also on an error, which is re-raised)."""
    if streaming:
        token = owner.enter()
        try:
            stream = wrapped(*args, **kwargs)
        except BaseException as exc:
            owner.finish(error=exc)
            raise
        finally:
            owner.exit(token)
        return StreamProxy(stream, owner, owner.observe)
    return _send(wrapped, args, kwargs, owner)


async def _send(wrapped, args, kwargs, request: Any):
    token = request.enter()
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        request.finish(error=exc)
        raise
    finally:
        request.exit(token)
    request.observe(result)
    request.finish()
    return result
