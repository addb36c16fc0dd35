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
"""

from __future__ import annotations

import contextvars
import importlib
import logging
import os
import sys
from typing import Any, Optional

from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from otel_agent_identity import boundary
from otel_agent_identity.boundary import Destination

NAME = "mcp"
REQUIREMENTS = ("mcp >= 2.3, < 3",)
#: a guard, not a framework: installed even when ``frameworks`` leaves it out
GUARD = True

_logger = logging.getLogger(__name__)
_DESTINATION: contextvars.ContextVar[Optional[Destination]] = contextvars.ContextVar(
    "otel_agent_identity_mcp_destination", default=None
)
#: id(write stream) -> (write stream, destination), while the transport is open
_streams: dict[int, tuple[Any, Destination]] = {}
_wrapped: list[tuple[Any, str]] = []
_aliases: list[tuple[Any, str, Any]] = []  # (module, attribute, original) patched by alias scan

_DISPATCHER = "mcp.shared.jsonrpc_dispatcher"
_TRANSPORTS = (("mcp.client.stdio", "stdio_client"), ("mcp.client.streamable_http", "streamable_http_client"))
_AF_TOOLS = ("MCPStdioTool", "MCPStreamableHTTPTool", "MCPWebsocketTool")


class _Registering:
    """Async context manager around a transport's: records its write stream's destination."""

    def __init__(self, inner: Any, destination: Destination) -> None:
        self._inner = inner
        self.destination = destination
        self._key: Optional[int] = None

    async def __aenter__(self) -> Any:
        streams = await self._inner.__aenter__()
        try:
            write = streams[1]
            self._key = id(write)
            _streams[self._key] = (write, self.destination)
        except Exception:  # noqa: BLE001 - an unknown shape stays unregistered (identity stripped)
            _logger.debug("otel-agent-identity: MCP transport streams not recognised", exc_info=True)
        return streams

    async def __aexit__(self, *exc: Any) -> Any:
        if self._key is not None:
            _streams.pop(self._key, None)
        return await self._inner.__aexit__(*exc)


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
        except Exception:  # noqa: BLE001
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
    except Exception:  # noqa: BLE001
        _logger.debug("otel-agent-identity: MCP _meta filter failed; baggage removed", exc_info=True)
        if isinstance(meta, dict):
            meta.pop("baggage", None)
    return result


def instrument(handler: Any = None) -> None:
    """Install the guard (``handler`` is unused: the guard needs no run handler)."""
    dispatcher = importlib.import_module(_DISPATCHER)
    wrap_function_wrapper(dispatcher, "inject_trace_context", _inject_wrapper)
    _wrapped.append((dispatcher, "inject_trace_context"))
    wrap_function_wrapper(dispatcher.JSONRPCDispatcher, "send_raw_request", _send_wrapper)
    _wrapped.append((dispatcher.JSONRPCDispatcher, "send_raw_request"))
    for module_name, name in _TRANSPORTS:
        module = importlib.import_module(module_name)
        original = getattr(module, name)
        wrap_function_wrapper(module, name, _transport_wrapper(name))
        _wrapped.append((module, name))
        _patch_aliases(name, original, getattr(module, name))
    try:
        af = importlib.import_module("agent_framework._mcp")
    except ImportError:
        return
    for cls_name in _AF_TOOLS:
        cls = getattr(af, cls_name, None)
        if cls is not None and "get_mcp_client" in vars(cls):
            wrap_function_wrapper(cls, "get_mcp_client", _af_tool_wrapper)
            _wrapped.append((cls, "get_mcp_client"))


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
    while _wrapped:
        owner, name = _wrapped.pop()
        unwrap(owner, name)
    _streams.clear()
