"""Server half of the a2a-sdk adapter: one SERVER span per ``on_message_send(_stream)`` call.

``on_message_send(params: SendMessageRequest, context: ServerCallContext) -> Task | Message`` and
``on_message_send_stream(params, context) -> AsyncGenerator[event]``. The span's parent is the
current span when a transport instrumentation already started one (it extracted the headers
itself), else the W3C ``traceparent`` of ``context.state["headers"]`` (the JSON-RPC and REST routes
put the HTTP request headers there). Only trace context is read here; identity forwarded by an
allowlisted caller is the boundary guard's (``otel_agent_identity.boundary.inbound_context``).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Mapping
from typing import Any

import wrapt
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otel_agent_identity import attributes as attrs
from otel_agent_identity import boundary, continuity, metrics
from otel_agent_identity._errors import is_one_of, record_error
from otel_agent_identity.adapters import _a2a_attrs as facts
from otel_agent_identity.scope import delegation_id_of, suppressed
from otel_agent_identity.span_processor import set_ids

_logger = logging.getLogger(__name__)
_PROPAGATOR = TraceContextTextMapPropagator()
_BAGGAGE = W3CBaggagePropagator()


def _headers(call_context: Any) -> Mapping[str, str]:
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


def _parent(headers: Mapping[str, str]) -> otel_context.Context:
    """The current context when it already continues the caller's trace (a transport server span
    extracted the headers), else the context extracted from ``traceparent``. a2a-sdk's own
    method spans (``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED``) start a new trace per request: they
    are current here but are not the caller's trace, so they lose to the header."""
    current = trace.get_current_span().get_span_context()
    extracted = _PROPAGATOR.extract(headers)
    remote = trace.get_current_span(extracted).get_span_context()
    if not remote.is_valid or (current.is_valid and current.trace_id == remote.trace_id):
        return otel_context.get_current()
    return extracted


def _agent_name(handler: Any) -> str | None:
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
    """Start the SERVER span of one A2A request; returns ``(span, context with the span)``."""
    headers = _headers(call_context)
    parent = _parent(headers)
    span_attrs: dict[str, Any] = {attrs.A2A_METHOD_NAME: facts.method_name(streaming)}
    span_attrs.update(facts.message_attributes(getattr(params, "message", None)))
    tenant = getattr(params, "tenant", None)
    if isinstance(tenant, str) and tenant:
        span_attrs[attrs.A2A_TENANT] = tenant
    version = headers.get("a2a-version")
    if version:
        span_attrs[attrs.A2A_PROTOCOL_VERSION] = version
    name = _agent_name(handler)
    if name:
        span_attrs[attrs.GEN_AI_AGENT_NAME] = name
    span = tracer.start_span(facts.method_name(streaming), context=parent, kind=SpanKind.SERVER, attributes=span_attrs)
    ctx = _inbound(span, headers, trace.set_span_in_context(span, parent))
    message = getattr(params, "message", None)
    ctx = _served_delegation(span, message, name, ctx)
    return span, continuity.with_serving_requested(ctx, facts.requested_context(message), span)


def _served_delegation(span: Any, message: Any, agent: str | None, ctx: Any) -> Any:
    """The request's delegation: the id an allowlisted caller forwarded (baggage, the same for a
    retry from another process), else the one the caller derives from ``Message.message_id`` (a
    re-sent message). A delegation this process already received marks the span
    ``agent_identity.delegation.redelivered`` and counts ``agent_identity.delegation.duplicate_deliveries``;
    returns ``ctx`` carrying the key, so the run that executes it can tell a duplicate execution
    (:func:`otel_agent_identity.continuity.note_execution`)."""
    forwarded = (getattr(span, "attributes", None) or {}).get(attrs.UPSTREAM_DELEGATION_ID)
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
        if not span.is_recording():
            return
        span.set_attributes(facts.event_attributes(seen))
        facts.mark_failed_task(span, seen)
        if seen.get("context_id"):
            if ctx is not None:
                continuity.served_context(ctx, seen["context_id"])
            set_ids(span, {attrs.GEN_AI_CONVERSATION_ID: seen["context_id"]})
            if facts.mark_changed(span, requested, seen["context_id"]):
                metrics.count(
                    metrics.CONVERSATION_CHANGES, agent=_span_agent(span), framework="a2a", reason=metrics.REASON_SERVED
                )
    except Exception:
        _logger.debug("otel-agent-identity: could not read an a2a server event", exc_info=True)


def _span_agent(span: Any) -> str | None:
    return (getattr(span, "attributes", None) or {}).get(attrs.GEN_AI_AGENT_NAME)


def end(span: Any, error: BaseException | None = None) -> None:
    """End the SERVER span, with ERROR status and ``error.type`` when ``error`` (the handler's own
    exception, which the caller re-raises) is a failure. Never raises."""
    if error is not None and not is_one_of(error, (GeneratorExit, asyncio.CancelledError)):
        record_error(span, error)
    try:
        span.end()
    except Exception:
        _logger.debug("otel-agent-identity: ending an a2a server span failed", exc_info=True)


def server_wrapper(tracer: trace.Tracer, streaming: bool):
    """Wrapper of ``on_message_send`` (``streaming=False``) or ``on_message_send_stream``."""

    def wrapper(wrapped, instance, args, kwargs):
        if suppressed():  # suppress_instrumentation: no span of ours
            return wrapped(*args, **kwargs)
        try:
            params = args[0] if args else kwargs.get("params")
            call_context = args[1] if len(args) > 1 else kwargs.get("context")
            span, ctx = start_server_span(tracer, instance, params, call_context, streaming)
            requested = facts.requested_context(getattr(params, "message", None))
        except Exception:
            _logger.debug("otel-agent-identity: a2a server span failed", exc_info=True)
            return wrapped(*args, **kwargs)
        if streaming:
            token = otel_context.attach(ctx)
            try:
                stream = wrapped(*args, **kwargs)
            except BaseException as exc:
                end(span, exc)
                raise
            finally:
                otel_context.detach(token)
            return ServerStream(stream, span, ctx, requested)
        return _send(wrapped, args, kwargs, span, ctx, requested)

    return wrapper


async def _send(wrapped, args, kwargs, span, ctx, requested):
    token = otel_context.attach(ctx)
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        end(span, exc)
        raise
    finally:
        otel_context.detach(token)
    observe(span, result, requested, ctx)
    end(span)
    return result


class ServerStream(wrapt.ObjectProxy):
    """The handler's event stream; every pull runs in the SERVER span's context (the executor is
    scheduled during the first pull and captures it). The span ends with the stream: exhausted,
    failed, cancelled, closed, or dropped unfinished (a client that abandons an SSE response:
    the route's generators are closed, never this stream, which is then collected)."""

    def __init__(self, wrapped: Any, span: Any, ctx: Any, requested: str | None = None) -> None:
        super().__init__(wrapped)
        self._self_span = span
        self._self_ctx = ctx
        self._self_requested = requested
        self._self_done = [False]  # shared with the finaliser
        weakref.finalize(self, _end_once, self._self_done, span)

    def __aiter__(self):
        return self

    def _finish(self, error: BaseException | None = None) -> None:
        _end_once(self._self_done, self._self_span, error)

    async def __anext__(self):
        token = otel_context.attach(self._self_ctx)
        try:
            event = await self.__wrapped__.__anext__()
        except StopAsyncIteration:
            self._finish()
            raise
        except BaseException as exc:
            self._finish(exc)
            raise
        finally:
            otel_context.detach(token)
        observe(self._self_span, event, self._self_requested, self._self_ctx)
        return event

    async def aclose(self):
        try:
            await self.__wrapped__.aclose()
        finally:
            self._finish()


def _end_once(done: list, span: Any, error: BaseException | None = None) -> None:
    if not done[0]:
        done[0] = True
        end(span, error)
