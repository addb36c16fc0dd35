"""a2a-sdk 0.3 (protocol 0.3, pydantic types; what Strands' and CrewAI's A2A extras pin): the same
CLIENT and SERVER spans, attributes and delegation ids as 1.x, read from 0.3's shapes.

Client: ``a2a.client.base_client.BaseClient.send_message(request: Message, *, configuration=None,
context=None, request_metadata=None, extensions=None)``, an async generator of ``(Task, update)``
events or one ``Message``: the send is set up as a 1.x one (:func:`.client._begin_send`) from the request
``Message``; the W3C ``traceparent`` goes in ``ClientCallContext.state["http_kwargs"]["headers"]``
(the HTTP headers 0.3's JSON-RPC and REST transports send). Server: ``DefaultRequestHandler``
``on_message_send(params: MessageSendParams, context)`` / ``on_message_send_stream``, wrapped by
:func:`.server.server_wrapper` as they are (``params.message``; ``context.state["headers"]``).
Task states are reported by their 1.x names (``completed`` -> ``TASK_STATE_COMPLETED``).
"""

from __future__ import annotations

import logging
from functools import cache
from importlib import metadata
from typing import Any

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import RunHandler
from otel_agent_identity._streams import NO_OWNER, StreamProxy
from otel_agent_identity.adapters._base import nonempty_str
from otel_agent_identity.adapters.a2a import client

_logger = logging.getLogger(__name__)
_PROPAGATOR = TraceContextTextMapPropagator()  # traceparent/tracestate only; baggage never rides along


@cache
def installed() -> bool:
    """Whether the installed a2a-sdk is a 0.x release (read once from its distribution metadata)."""
    try:
        return metadata.version("a2a-sdk").startswith("0.")
    except metadata.PackageNotFoundError:
        return False


class _Request:
    """A 0.3 request ``Message`` in the shape :func:`.client.begin_send` reads (``request.message``)."""

    __slots__ = ("message",)

    def __init__(self, message: Any) -> None:
        self.message = message


def inject_trace_context(request_context: Any, ctx: Any = None) -> Any:
    """Return a 0.3 ``ClientCallContext`` whose ``state["http_kwargs"]["headers"]`` carry
    ``traceparent`` of ``ctx`` (the current ``Context`` when None); the caller's ``request_context``
    (or None) is copied, never mutated."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=ctx)
    if not carrier:
        return request_context
    from a2a.client.middleware import ClientCallContext

    state = dict(getattr(request_context, "state", None) or {})
    http_kwargs = dict(state.get("http_kwargs") or {})
    http_kwargs["headers"] = {**(http_kwargs.get("headers") or {}), **carrier}
    state["http_kwargs"] = http_kwargs
    return ClientCallContext(state=state)


def send_wrapper(handler: RunHandler):
    """Wrapper of 0.3's ``BaseClient.send_message(request: Message, *, context=None, ...)``."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            given = kwargs.get("context")
            message = args[0] if args else kwargs.get("request")
            rest = {k: v for k, v in kwargs.items() if k not in ("request", "context")}
            hop = client._begin_send(handler, instance, (_Request(message),), rest)
            if hop is not None:
                run, _, seen = hop
                kwargs = dict(kwargs)
                kwargs["context"] = inject_trace_context(
                    given, None if run is None else trace.set_span_in_context(run.span)
                )
                _protocol_version(run.span if run is not None else seen.span, instance)
        except Exception:
            _logger.debug("otel-agent-identity: a2a send tracking failed", exc_info=True)
            hop = None
        if hop is None:
            return wrapped(*args, **kwargs)
        if run is not None:
            return StreamProxy(run.call(wrapped, args, kwargs), NO_OWNER, seen)
        return StreamProxy(wrapped(*args, **kwargs), seen, seen)  # A2AAgent: its span outlives the send

    return wrapper


def _protocol_version(span: Any, sender: Any) -> None:
    """``a2a.protocol.version`` of the card (0.3 cards have ``protocol_version``, no interfaces list)."""
    version = nonempty_str(getattr(getattr(sender, "_card", None), "protocol_version", None))
    if version and span.is_recording():
        span.set_attribute(attrs.A2A_PROTOCOL_VERSION, version)
