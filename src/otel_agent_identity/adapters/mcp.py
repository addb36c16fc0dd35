"""Boundary guard for mcp (>= 2.3) clients: identity-bearing baggage never reaches an MCP server
unless the server is allowlisted (policy: :mod:`otel_agent_identity.boundary`).

Choke point: every request, from ``ClientSession`` and ``Client`` over any stream transport, is
sent by ``JSONRPCDispatcher.send_raw_request``, which merges the caller's ``_meta`` (Agent
Framework's MCP tools inject the global propagators there) and then injects the global
propagators itself (``inject_trace_context``). We filter that final ``_meta`` right after the
injection, in the caller's context. Notifications carry no injected ``_meta``.

Destination of a dispatcher: the transport that made its write stream, recorded when
``streamable_http_client(url)`` (the URL) or ``stdio_client(params)`` (the command and its base
name) is entered; Agent Framework's ``MCPStdioTool``/``MCPStreamableHTTPTool`` add the tool's
``name``. An unknown destination (another transport, a stream pair made by hand) is never
allowlisted: identity is stripped.

Receiver side (an instrumented MCP server): mcp's ``OpenTelemetryMiddleware`` opens a SERVER span
per request; inside it, the forwarded ids in the request's ``_meta`` baggage are recorded with
:func:`otel_agent_identity.boundary.record_upstream` (a mismatch needs a local identity scope).
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import os
import sys
from typing import Any

from opentelemetry import baggage as otel_baggage
from opentelemetry import trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator

from otel_agent_identity import boundary
from otel_agent_identity.adapters._base import Wrapped
from otel_agent_identity.boundary import FORWARDED_KEYS, Destination
from otel_agent_identity.scope import current_scope, suppressed

NAME = "mcp"
REQUIREMENTS = ("mcp >= 2.3, < 3",)

_logger = logging.getLogger(__name__)
_DESTINATION: contextvars.ContextVar[Destination | None] = contextvars.ContextVar(
    "otel_agent_identity_mcp_destination", default=None
)

#: id(write stream) -> (write stream, destination), while the transport is open
_streams: dict[int, tuple[Any, Destination]] = {}
_wrapped = Wrapped()
_aliases: list[tuple[Any, str, Any]] = []  # (module, attribute, original) patched by alias scan

_DISPATCHER = "mcp.shared.jsonrpc_dispatcher"
_SERVER_OTEL = "mcp.server._otel"
_TRANSPORTS = (("mcp.client.stdio", "stdio_client"), ("mcp.client.streamable_http", "streamable_http_client"))
_AF_TOOLS = ("MCPStdioTool", "MCPStreamableHTTPTool", "MCPWebsocketTool")


class _Registering:
    """Async context manager around a transport's: records its write stream's destination."""

    def __init__(self, inner: Any, destination: Destination) -> None:
        self._inner = inner
        self.destination = destination
        self._key: int | None = None

    async def __aenter__(self) -> Any:
        streams = await self._inner.__aenter__()
        try:
            write = streams[1]
            self._key = id(write)
            _streams[self._key] = (write, self.destination)
        except Exception:
            _logger.debug("otel-agent-identity: MCP transport streams not recognised", exc_info=True)
        return streams

    async def __aexit__(self, *exc: Any) -> Any:
        if self._key is not None:
            _streams.pop(self._key, None)
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:  # anything else the caller reads: the transport's own
        return getattr(self._inner, name)


def _transport_destination(name: str, args: tuple, kwargs: dict) -> Destination:
    if name == "stdio_client":
        server = kwargs.get("server", args[0] if args else None)
        command = getattr(server, "command", None)
        if isinstance(command, str) and command:
            return Destination(names=(command, os.path.basename(command)))
        return Destination()
    url = kwargs.get("url", args[0] if args else None)
    return Destination(url=str(url)) if url is not None else Destination()


def _transport_wrapper(name: str):
    """Wrapper of ``stdio_client(server, ...)`` / ``streamable_http_client(url, ...)``."""

    def wrapper(wrapped, instance, args, kwargs):
        inner = wrapped(*args, **kwargs)
        try:
            return _Registering(inner, _transport_destination(name, args, kwargs))
        except Exception:
            return inner

    return wrapper


def _af_tool_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of Agent Framework ``MCPTool.get_mcp_client(self)``: adds the tool's ``name``."""
    result = wrapped(*args, **kwargs)
    if isinstance(result, _Registering):
        result.destination = result.destination.with_name(getattr(instance, "name", None))
    return result


async def _send_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``JSONRPCDispatcher.send_raw_request(method, params, opts=None, ...)``."""
    entry = _streams.get(id(getattr(instance, "_write_stream", None)))
    destination = entry[1] if entry is not None and entry[0] is instance._write_stream else None
    token = _DESTINATION.set(destination)
    try:
        return await wrapped(*args, **kwargs)
    finally:
        _DESTINATION.reset(token)


def _inject_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``inject_trace_context(meta: dict)``: injects, then filters ``meta`` in place."""
    result = wrapped(*args, **kwargs)
    meta = args[0] if args else kwargs.get("meta")
    try:
        if isinstance(meta, dict):
            filtered = boundary.filter_meta(meta, _DESTINATION.get())
            meta.clear()
            meta.update(filtered)
    except Exception:
        _logger.debug("otel-agent-identity: MCP _meta filter failed; baggage removed", exc_info=True)
        if isinstance(meta, dict):
            for key in [k for k in meta if isinstance(k, str) and k.lower() == "baggage"]:
                meta.pop(key, None)
    return result


def _forwarded(meta: Any) -> dict[str, str]:
    """The documented keys in the baggage of an inbound ``_meta`` (dict or model)."""
    if hasattr(meta, "model_dump"):
        meta = meta.model_dump(by_alias=True)
    value = meta.get("baggage") if isinstance(meta, dict) else None
    if not isinstance(value, str):
        return {}
    entries = otel_baggage.get_all(W3CBaggagePropagator().extract({"baggage": value}))
    return {k: v for k, v in entries.items() if k in FORWARDED_KEYS and isinstance(v, str)}


async def _server_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``OpenTelemetryMiddleware.__call__(self, ctx, call_next)``."""
    if suppressed():  # suppress_instrumentation: no attribute of ours
        return await wrapped(*args, **kwargs)
    try:
        forwarded = _forwarded(getattr(args[0], "meta", None))
    except Exception:
        forwarded = {}
    if not forwarded or len(args) < 2:
        return await wrapped(*args, **kwargs)
    call_next = args[1]

    async def recording_call_next(ctx):
        scope = current_scope()
        boundary.record_upstream(trace.get_current_span(), forwarded, scope.conversation_id if scope else None)
        return await call_next(ctx)

    return await wrapped(args[0], recording_call_next, *args[2:], **kwargs)


def instrument(handler: Any = None) -> None:
    """Install the guard (``handler`` is unused: the guard needs no run handler)."""
    dispatcher = importlib.import_module(_DISPATCHER)
    _wrapped.wrap(dispatcher, "inject_trace_context", _inject_wrapper)
    _wrapped.wrap(dispatcher.JSONRPCDispatcher, "send_raw_request", _send_wrapper)
    server_otel = importlib.import_module(_SERVER_OTEL)
    _wrapped.wrap(server_otel.OpenTelemetryMiddleware, "__call__", _server_wrapper)
    for module_name, name in _TRANSPORTS:
        module = importlib.import_module(module_name)
        original = getattr(module, name)
        _wrapped.wrap(module, name, _transport_wrapper(name))
        _patch_aliases(name, original, getattr(module, name))


def instrument_agent_framework_tools(handler: Any = None) -> None:
    """Install the guard on Agent Framework's MCP tools (module ``agent_framework._mcp``, imported
    by the application)."""
    af = importlib.import_module("agent_framework._mcp")
    for cls_name in _AF_TOOLS:
        cls = getattr(af, cls_name, None)
        if cls is not None and "get_mcp_client" in vars(cls):
            _wrapped.wrap(cls, "get_mcp_client", _af_tool_wrapper)


def _patch_aliases(name: str, original: Any, wrapper: Any) -> None:
    """Modules that did ``from mcp.client.stdio import stdio_client`` before us get the wrapper too."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict) and namespace.get(name) is original:
            setattr(module, name, wrapper)
            _aliases.append((module, name, original))


def uninstrument() -> None:
    """Restore every wrapped function and alias."""
    while _aliases:
        module, name, original = _aliases.pop()
        setattr(module, name, original)
    _wrapped.uninstrument()
    _streams.clear()
