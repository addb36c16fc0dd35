"""a2a-sdk (>= 1.3, protocol 1.0; 0.3, protocol 0.3: :mod:`.v03`): every ``SendMessage`` is a
delegation, both sides in one trace.

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
already current; over HTTP it starts in the dispatcher's send endpoint (``JsonRpcDispatcher``,
``RestDispatcher``), before a2a-sdk's own spans, so they too are in the caller's trace. The
executor runs in a copy of that context (a2a-sdk captures it per request), so the serving agent
run is its descendant. A long-running task's ``GetTask``, ``SubscribeToTask`` and ``CancelTask``
get a CLIENT and a SERVER span each (:mod:`.tasks`). Attributes: :mod:`.attributes`; the client
side is :mod:`.client`, the server side :mod:`.server`.
"""

from __future__ import annotations

import importlib
import sys

from otel_agent_identity._runs import RunHandler
from otel_agent_identity.adapters._base import Wrapped
from otel_agent_identity.adapters.a2a import v03
from otel_agent_identity.adapters.a2a.client import NAME, SendTarget, context_rule, inject_trace_context, send_wrapper
from otel_agent_identity.adapters.a2a.server import dispatch_wrapper, server_wrapper
from otel_agent_identity.adapters.a2a.tasks import CLIENT_METHODS, SERVER_METHODS
from otel_agent_identity.adapters.a2a.tasks import client_wrapper as task_client_wrapper
from otel_agent_identity.adapters.a2a.tasks import server_wrapper as task_server_wrapper

__all__ = ["NAME", "REQUIREMENTS", "SendTarget", "context_rule", "inject_trace_context", "uninstrument"]

REQUIREMENTS = ("a2a-sdk >= 0.3, < 2, != 1.0.*, != 1.1.*, != 1.2.*",)  # 0.3.x (.v03) or 1.3+

_wrapped = Wrapped()


def instrument_client(handler: RunHandler) -> None:
    """Wrap ``BaseClient.send_message`` (module ``a2a.client.base_client``, imported by the application)."""
    base = importlib.import_module("a2a.client.base_client")
    if v03.installed():  # a2a-sdk 0.3: sends only (its task methods keep their own behaviour)
        _wrapped.wrap(base.BaseClient, "send_message", v03.send_wrapper(handler))
        return
    _wrapped.wrap(base.BaseClient, "send_message", send_wrapper(handler))
    for method, a2a_method in CLIENT_METHODS.items():  # a long-running task's GetTask, SubscribeToTask, CancelTask
        if method in base.BaseClient.__dict__:
            _wrapped.wrap(base.BaseClient, method, task_client_wrapper(handler.tracer, a2a_method))


#: the server request handlers, each wrapped when the application imports its module
_SERVER_TARGETS = (
    ("a2a.server.request_handlers.default_request_handler_v2", "DefaultRequestHandlerV2"),
    ("a2a.server.request_handlers.default_request_handler", "LegacyRequestHandler"),
    ("a2a.server.request_handlers.default_request_handler", "DefaultRequestHandler"),  # a2a-sdk 0.3
)


#: the HTTP dispatchers' route endpoints that serve a send: (module, class, {method: streaming,
#: None when the request tells})
_DISPATCH_TARGETS: tuple[tuple[str, str, dict[str, bool | None]], ...] = (
    ("a2a.server.routes.jsonrpc_dispatcher", "JsonRpcDispatcher", {"handle_requests": None}),
    (
        "a2a.server.routes.rest_dispatcher",
        "RestDispatcher",
        {"on_message_send": False, "on_message_send_stream": True},
    ),
)


def instrument_server(handler: RunHandler) -> None:
    """Wrap ``on_message_send``/``on_message_send_stream`` of each request handler class, and the
    send endpoints of each HTTP dispatcher class, of this a2a-sdk version whose module is imported
    and not wrapped yet (imports nothing). A dispatcher's routes hold its bound methods: routes
    an application built before ``instrument()`` keep the unwrapped ones (the SERVER span then
    starts in the request handler, below a2a-sdk's dispatcher spans, which start a trace of their own)."""
    for module_name, cls_name in _SERVER_TARGETS:
        cls = getattr(sys.modules.get(module_name), cls_name, None)
        if cls is None:
            continue
        for method, streaming in (("on_message_send", False), ("on_message_send_stream", True)):
            if method in cls.__dict__ and (cls, method) not in _wrapped:
                _wrapped.wrap(cls, method, server_wrapper(handler.tracer, streaming))
        for method, a2a_method in () if v03.installed() else SERVER_METHODS.items():  # 1.x tasks only
            if method in cls.__dict__ and (cls, method) not in _wrapped:
                _wrapped.wrap(cls, method, task_server_wrapper(handler.tracer, a2a_method))
    for module_name, cls_name, methods in _DISPATCH_TARGETS:
        cls = getattr(sys.modules.get(module_name), cls_name, None)
        for endpoint, sends in methods.items() if cls is not None else ():
            if endpoint in cls.__dict__ and (cls, endpoint) not in _wrapped:
                _wrapped.wrap(cls, endpoint, dispatch_wrapper(handler.tracer, sends))


uninstrument = _wrapped.uninstrument
