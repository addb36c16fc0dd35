"""Boundary guard for outbound HTTP from tools (httpx, httpx2, requests, urllib3, aiohttp): the ``baggage`` header
loses its identity entries unless the request's URL is allowlisted, where the run's ids are
added under the documented keys (policy: :mod:`otel_agent_identity.boundary`).

The filter sits at the last layer before the wire, below the layer where HTTP instrumentations
inject propagation headers (``httpx.HTTPTransport.handle_request``, ``requests.Session.send``), so
the order in which instrumentors are installed does not matter:

* httpx: ``httpcore.ConnectionPool.handle_request`` / ``AsyncConnectionPool.handle_async_request``
  (every default httpx transport, proxies included, ends there);
* httpx2 (mcp's HTTP client): the same methods of ``httpcore2``;
* requests: ``requests.adapters.HTTPAdapter.send`` (and urllib3 below it);
* urllib3 (botocore and many vendor SDKs use it directly): ``urllib3.connection.HTTPConnection.request``,
  which every pool (``PoolManager``, ``connection_from_url``, proxies) calls per request, below
  ``HTTPConnectionPool.urlopen`` where the urllib3 instrumentation injects; the pool's own default
  headers arrive here too;
* aiohttp: ``aiohttp.ClientRequest.send``, after the session's trace configs (where the aiohttp
  instrumentation injects) and default headers were applied.

A library that is not installed, or outside the versions below, is skipped. Custom transports
that bypass these layers (``httpx.MockTransport``, a hand-written requests adapter, a raw
``http.client`` or socket) are not seen: see ``docs/threat-model.md``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from opentelemetry.instrumentation.dependencies import get_dependency_conflicts

from otel_agent_identity import boundary
from otel_agent_identity.adapters._base import Wrapped

NAME = "http"
REQUIREMENTS: tuple[str, ...] = ()  # each library below is optional and checked on its own

_logger = logging.getLogger(__name__)
#: (requirement, module, class, method, wrapper kind)
_TARGETS = (
    ("httpcore >= 1.0, < 2", "httpcore", "ConnectionPool", "handle_request", "core"),
    ("httpcore >= 1.0, < 2", "httpcore", "AsyncConnectionPool", "handle_async_request", "core_async"),
    ("httpcore2 >= 2.0, < 3", "httpcore2", "ConnectionPool", "handle_request", "core"),
    ("httpcore2 >= 2.0, < 3", "httpcore2", "AsyncConnectionPool", "handle_async_request", "core_async"),
    ("requests >= 2.20, < 3", "requests.adapters", "HTTPAdapter", "send", "requests"),
    ("urllib3 >= 2, < 3", "urllib3.connection", "HTTPConnection", "request", "urllib3"),
    ("aiohttp >= 3.9, < 4", "aiohttp.client_reqrep", "ClientRequest", "send", "aiohttp"),
)
_wrapped = Wrapped()
_skipped: set[str] = set()  # requirements found in another version (warned once)


def _filter_core_request(request: Any) -> None:
    """Filter an ``httpcore(2).Request``: ``url`` (scheme/host/port/target bytes), ``headers`` list of bytes pairs."""
    try:
        if not boundary.policy().allowlist and not any(n.lower() == b"baggage" for n, _ in request.headers):
            return  # fast path: nothing to remove, nothing to forward
        url = request.url
        port = f":{url.port}" if url.port else ""
        host = url.host.decode("ascii")
        host = f"[{host}]" if ":" in host else host  # an IPv6 literal, bracketed as in a URL
        destination = boundary.Destination(
            url=f"{url.scheme.decode('ascii')}://{host}{port}{url.target.decode('ascii')}"
        )
        headers = []
        seen = False
        for name, value in request.headers:
            if name.lower() == b"baggage":
                value = boundary.filter_baggage_header(value, None if seen else destination)  # ids once
                seen = True
                if value is None:
                    continue
                value = value.encode("latin-1")
            headers.append((name, value))
        if not seen:
            extra = boundary.filter_baggage_header(None, destination)  # allowlisted: forwarded ids
            if extra is not None:
                headers.append((b"baggage", extra.encode("latin-1")))
        request.headers = headers
    except Exception:
        _logger.debug("otel-agent-identity: could not filter an HTTP request", exc_info=True)
        request.headers = [(n, v) for n, v in request.headers if n.lower() != b"baggage"]


def _core_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``ConnectionPool.handle_request(self, request)``."""
    _filter_core_request(args[0] if args else kwargs.get("request"))
    return wrapped(*args, **kwargs)


async def _core_async_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``AsyncConnectionPool.handle_async_request(self, request)``."""
    _filter_core_request(args[0] if args else kwargs.get("request"))
    return await wrapped(*args, **kwargs)


def _requests_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``HTTPAdapter.send(self, request: PreparedRequest, ...)``."""
    request = args[0] if args else kwargs.get("request")
    try:
        destination = boundary.Destination(url=str(request.url))
        value = boundary.filter_baggage_header(request.headers.get("baggage"), destination)
        if value is None:
            request.headers.pop("baggage", None)
        else:
            request.headers["baggage"] = value
    except Exception:
        _logger.debug("otel-agent-identity: could not filter an HTTP request", exc_info=True)
        try:  # noqa: SIM105 - per request: a try is free, contextlib.suppress is not
            request.headers.pop("baggage", None)
        except Exception:
            pass
    return wrapped(*args, **kwargs)


def _url(scheme: str, host: Any, port: Any, target: str) -> str:
    host = f"[{host}]" if ":" in str(host) else str(host)
    return f"{scheme}://{host}{f':{port}' if port else ''}{target}"


def _filtered_mapping(headers: Any, destination: boundary.Destination) -> Any:
    """``headers`` (a Mapping, or None) with its ``baggage`` entries (any letter case, any count)
    filtered into at most one; the same object when there is nothing to do, else a new one of the
    same kind (``HTTPHeaderDict`` keeps repeated headers)."""
    items = list(headers.items()) if headers is not None else []
    baggage = [v for k, v in items if isinstance(k, str) and k.lower() == "baggage"]
    if not baggage and not boundary.policy().allowlist:
        return headers
    value = boundary.filter_baggage_header(",".join(map(str, baggage)) if baggage else None, destination)
    out = type(headers)() if headers is not None and hasattr(headers, "add") else {}
    for k, v in items:
        if not (isinstance(k, str) and k.lower() == "baggage"):
            out.add(k, v) if hasattr(out, "add") else out.__setitem__(k, v)
    if value is not None:
        out["baggage"] = value
    return out


def _urllib3_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``urllib3.connection.HTTPConnection.request(self, method, url, body=None, headers=None, ...)``."""
    try:
        url = args[1] if len(args) > 1 else kwargs.get("url", "")
        if "://" not in url:  # origin form: the connection names the destination (a tunnel's real host)
            https = (
                type(instance).__name__ == "HTTPSConnection"
                or getattr(instance, "scheme", None) == "https"
                or any(c.__name__ == "HTTPSConnection" for c in type(instance).__mro__)
            )
            host = getattr(instance, "_tunnel_host", None) or instance.host
            port = getattr(instance, "_tunnel_port", None) or instance.port
            url = _url("https" if https else "http", host, port, url)
        if len(args) > 3:
            args = (*args[:3], _filtered_mapping(args[3], boundary.Destination(url=url)), *args[4:])
        else:
            kwargs = dict(kwargs, headers=_filtered_mapping(kwargs.get("headers"), boundary.Destination(url=url)))
    except Exception:
        _logger.debug("otel-agent-identity: could not filter an HTTP request", exc_info=True)
        headers = args[3] if len(args) > 3 else kwargs.get("headers")
        if headers is not None:
            plain = {k: v for k, v in headers.items() if not (isinstance(k, str) and k.lower() == "baggage")}
            if len(args) > 3:
                args = (*args[:3], plain, *args[4:])
            else:
                kwargs = dict(kwargs, headers=plain)
    return wrapped(*args, **kwargs)


async def _aiohttp_wrapper(wrapped, instance, args, kwargs):
    """Wrapper of ``aiohttp.ClientRequest.send(self, conn)``; ``self.headers`` is the request's own CIMultiDict."""
    headers = instance.headers
    try:
        values = headers.getall("baggage", [])
        if values or boundary.policy().allowlist:
            value = boundary.filter_baggage_header(
                ",".join(values) if values else None, boundary.Destination(url=str(instance.url))
            )
            headers.popall("baggage", None)
            if value is not None:
                headers["baggage"] = value
    except Exception:
        _logger.debug("otel-agent-identity: could not filter an HTTP request", exc_info=True)
        try:  # noqa: SIM105 - per request: a try is free, contextlib.suppress is not
            headers.popall("baggage", None)
        except Exception:
            pass
    return await wrapped(*args, **kwargs)


_WRAPPERS = {
    "core": _core_wrapper,
    "core_async": _core_async_wrapper,
    "requests": _requests_wrapper,
    "urllib3": _urllib3_wrapper,
    "aiohttp": _aiohttp_wrapper,
}


def instrument(handler: Any = None) -> None:
    """Install the guard on each library of :data:`_TARGETS` whose module the application has
    imported and that is not guarded yet (imports nothing; ``handler`` is unused)."""
    for requirement, module_name, cls_name, method, kind in _TARGETS:
        cls = getattr(sys.modules.get(module_name), cls_name, None)
        if cls is None or (cls, method) in _wrapped or requirement in _skipped:
            continue
        conflict = get_dependency_conflicts([requirement])
        if conflict is not None:
            _skipped.add(requirement)
            if getattr(conflict, "found", None) is not None:
                _logger.warning("otel-agent-identity: HTTP guard skips %s: %s", module_name, conflict)
            continue
        _wrapped.wrap(cls, method, _WRAPPERS[kind])


def uninstrument() -> None:
    """Restore every wrapped method."""
    _skipped.clear()
    _wrapped.uninstrument()
