"""A long-running task's methods, both sides: ``GetTask``, ``SubscribeToTask`` and ``CancelTask``.

Client: ``BaseClient.get_task(request: GetTaskRequest, *, context=None) -> Task``,
``cancel_task(request: CancelTaskRequest, ...) -> Task`` and ``subscribe(request:
SubscribeToTaskRequest, ...) -> AsyncIterator[StreamResponse]``: a CLIENT span named after the A2A
method, ``traceparent`` injected into ``ClientCallContext.service_parameters`` as for a send.
Server: the request handlers' ``on_get_task``, ``on_cancel_task`` (coroutines) and
``on_subscribe_to_task`` (an event stream): a SERVER span named after the method, parented on
the request's ``traceparent`` (as a send's, :func:`.server.start_server_span`).

Attributes: ``a2a.method.name``; ``a2a.task.id`` (the request's ``id``, else the answer's);
``a2a.task.state`` (the last state answered, e.g. ``TASK_STATE_WORKING``); ``gen_ai.conversation.id``
(the task's ``context_id``, once an answer carries it); client side ``server.address``/``server.port``,
server side ``gen_ai.agent.name`` (the Agent Card's). A2A ids come from the remote peer: checked
by :func:`.attributes.protocol_id`. Nothing of ours runs on a send: a send costs what it did.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from otel_agent_identity import attributes as attrs
from otel_agent_identity._errors import end_span
from otel_agent_identity.adapters.a2a import attributes as facts
from otel_agent_identity.adapters.a2a import server
from otel_agent_identity.adapters.a2a.client import inject_trace_context
from otel_agent_identity.scope import attach_context, detach_context, suppressed
from otel_agent_identity.span_processor import set_ids

_logger = logging.getLogger(__name__)

#: ``BaseClient`` method -> A2A method name
CLIENT_METHODS = {"get_task": "GetTask", "subscribe": "SubscribeToTask", "cancel_task": "CancelTask"}
#: request handler method -> A2A method name
SERVER_METHODS = {"on_get_task": "GetTask", "on_subscribe_to_task": "SubscribeToTask", "on_cancel_task": "CancelTask"}
_STREAMS = "SubscribeToTask"


class _Call:
    """One task call's span: the owner of its result (``enter``/``exit``/``finish``, see
    :mod:`otel_agent_identity._streams`), and the observer of each answer (``observe``)."""

    __slots__ = ("ctx", "done", "span")

    def __init__(self, span: Any, ctx: Any) -> None:
        self.span, self.ctx, self.done = span, ctx, False

    def enter(self) -> Any:
        return attach_context(self.ctx)

    def exit(self, token: Any) -> None:
        detach_context(token)

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        if not self.done:
            self.done = True
            end_span(self.span, error)

    def observe(self, item: Any) -> None:
        """An answer (a ``Task``, a ``StreamResponse`` or an update event): its task id, state and
        context id on the span. Never raises."""
        try:
            seen = facts.event_facts(item)
            span = self.span
            if not span.is_recording():
                return
            out = facts.event_attributes(seen)
            if facts.span_attribute(span, attrs.A2A_TASK_ID):
                out.pop(attrs.A2A_TASK_ID, None)  # the requested task's id stays
            span.set_attributes(out)
            if seen.get("context_id"):
                set_ids(span, {attrs.GEN_AI_CONVERSATION_ID: seen["context_id"]})
        except Exception:
            _logger.debug("otel-agent-identity: could not read an a2a task answer", exc_info=True)


def _request_attributes(method: str, request: Any) -> dict[str, Any]:
    out: dict[str, Any] = {attrs.A2A_METHOD_NAME: method}
    task_id = facts.protocol_id(getattr(request, "id", None), "task_id")
    if task_id:
        out[attrs.A2A_TASK_ID] = task_id
    return out


def client_wrapper(tracer: trace.Tracer, method: str):
    """Wrapper of ``BaseClient.get_task``/``subscribe``/``cancel_task`` (``method``: the A2A name)."""

    def wrapper(wrapped, instance, args, kwargs):
        if suppressed():
            return wrapped(*args, **kwargs)
        try:
            request = args[0] if args else kwargs.get("request")
            span_attrs = _request_attributes(method, request)
            span_attrs.update(facts.endpoint_attributes(instance))
            span = tracer.start_span(method, kind=SpanKind.CLIENT, attributes=span_attrs)
            ctx = trace.set_span_in_context(span)
            kwargs = {**kwargs, "context": inject_trace_context(kwargs.get("context"), ctx)}
            call = _Call(span, ctx)
        except Exception:
            _logger.debug("otel-agent-identity: a2a task call tracking failed", exc_info=True)
            return wrapped(*args, **kwargs)
        return server.run_owned(call, method == _STREAMS, wrapped, args, kwargs)

    return wrapper


def server_wrapper(tracer: trace.Tracer, method: str):
    """Wrapper of a request handler's ``on_get_task``/``on_subscribe_to_task``/``on_cancel_task``
    ``(params, context: ServerCallContext)``."""

    def wrapper(wrapped, instance, args, kwargs):
        if suppressed():
            return wrapped(*args, **kwargs)
        try:
            params = args[0] if args else kwargs.get("params")
            call_context = args[1] if len(args) > 1 else kwargs.get("context")
            parent = server.parent_context(server.request_headers(call_context))
            span_attrs = _request_attributes(method, params)
            name = server.agent_name(instance)
            if name:
                span_attrs[attrs.GEN_AI_AGENT_NAME] = name
            span = tracer.start_span(method, context=parent, kind=SpanKind.SERVER, attributes=span_attrs)
            call = _Call(span, trace.set_span_in_context(span, parent))
        except Exception:
            _logger.debug("otel-agent-identity: a2a task call span failed", exc_info=True)
            return wrapped(*args, **kwargs)
        return server.run_owned(call, method == _STREAMS, wrapped, args, kwargs)

    return wrapper
