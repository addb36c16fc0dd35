"""The boundary policy: which baggage entries carry identity, and which destinations may receive it.

Identity stays in the process. The adapters (:mod:`~otel_agent_identity.adapters.mcp`,
:mod:`~otel_agent_identity.adapters.http_clients`) call :func:`filter_meta` and
:func:`filter_baggage_header` on every outgoing MCP request and HTTP request: identity-bearing
baggage entries are removed, everything else (``traceparent``, other baggage) is kept. Only for a
destination on the allowlist are the run's ids forwarded, under the keys of ``docs/attributes.md``
("Baggage keys"). A receiver records what it got with :func:`record_upstream`.

Allowlist entries (``OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST`` or ``instrument(allowlist=)``):

* with ``://``: a URL prefix; scheme, host and port must be equal and the path must start with
  the entry's path at a ``/`` boundary (``http://a:80/mcp`` matches ``http://a/mcp/x``, not
  ``http://a/mcpx`` nor ``http://a.evil``);
* otherwise a name or a host pattern: equal to a client-side destination name (an Agent
  Framework MCP tool's ``name``, a stdio server's command or its base name) or, with
  :func:`fnmatch.fnmatchcase` on the lower-cased host, a host pattern (``*.internal.example``).

Nothing here raises into the application: a malformed value is passed through minus identity.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any, NamedTuple
from urllib.parse import quote_plus, unquote_plus, urlsplit

from opentelemetry import context as otel_context

from otel_agent_identity import attributes as attrs
from otel_agent_identity.config import DEFAULT_IDENTITY_BAGGAGE_KEYS, DEFAULT_MAX_ID_LENGTH
from otel_agent_identity.scope import current_scope

_logger = logging.getLogger(__name__)

#: the documented keys identity is forwarded under, to allowlisted destinations only
FORWARDED_KEYS = (attrs.GEN_AI_CONVERSATION_ID, attrs.EXECUTION_ID, attrs.DELEGATION_ID)
_UPSTREAM = {
    attrs.GEN_AI_CONVERSATION_ID: attrs.UPSTREAM_CONVERSATION_ID,
    attrs.EXECUTION_ID: attrs.UPSTREAM_EXECUTION_ID,
    attrs.DELEGATION_ID: attrs.UPSTREAM_DELEGATION_ID,
}
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class Destination(NamedTuple):  # not a frozen dataclass: cheaper to define (start-up) and to build
    """Where a request goes. ``url``: absolute URL (str) or None (stdio); ``names``: client-side
    names (tool name, stdio command) an allowlist entry may equal."""

    url: str | None = None
    names: tuple[str, ...] = ()

    def with_name(self, name: Any) -> Destination:
        """A copy with ``name`` (ignored unless a non-empty str) added to ``names``."""
        if not isinstance(name, str) or not name or name in self.names:
            return self
        return Destination(self.url, (*self.names, name))


class Policy:
    """Identity key patterns (case-insensitive, ``*`` wildcards) and allowlist entries."""

    def __init__(
        self,
        allowlist: Iterable[str] = (),
        identity_keys: Iterable[str] = DEFAULT_IDENTITY_BAGGAGE_KEYS,
        max_id_length: int = DEFAULT_MAX_ID_LENGTH,
    ) -> None:
        self.allowlist = tuple(allowlist)
        keys = tuple(k.strip().lower() for k in identity_keys if k and k.strip())
        self._exact = frozenset(k for k in keys if not any(c in k for c in "*?["))
        self._patterns = tuple(k for k in keys if k not in self._exact)
        self.max_id_length = max_id_length

    def is_identity_key(self, key: str) -> bool:
        """True when the baggage ``key`` (str, compared lower-cased) is an identity key."""
        k = key.strip().lower()
        return k in self._exact or any(fnmatchcase(k, p) for p in self._patterns)

    def allows(self, destination: Destination | None) -> bool:
        """True when ``destination`` matches an allowlist entry; None (unknown) is never allowed."""
        if destination is None or not self.allowlist:
            return False
        return any(_entry_matches(e, destination) for e in self.allowlist)


_policy = Policy()


def configure(config: Any = None) -> Policy:
    """Install the policy of a :class:`~otel_agent_identity.config.Config` (None: the defaults)."""
    global _policy
    if config is None:
        _policy = Policy()
    else:
        _policy = Policy(config.allowlist, config.identity_baggage_keys, config.max_id_length)
    return _policy


def policy() -> Policy:
    """The policy in force."""
    return _policy


def filter_baggage_header(value: Any, destination: Destination | None) -> str | None:
    """Filter one W3C ``baggage`` header value (str or bytes) for ``destination``.

    Identity entries are removed; other members are kept verbatim (a malformed member too). For an
    allowlisted destination the current scope's ids are appended under :data:`FORWARDED_KEYS`.
    Returns the new value, or None when nothing is left (the caller drops the header).
    """
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    members = [] if value is None else _strip_identity(str(value))
    if _policy.allows(destination):
        members.extend(_forwarded_members())
    return ",".join(members) or None


def filter_meta(meta: Mapping[str, Any], destination: Destination | None) -> dict:
    """Filter an MCP ``_meta`` mapping for ``destination``; returns a new dict.

    Only its baggage entries change (see :func:`filter_baggage_header`): every key that is
    ``baggage`` in any letter case is stripped of identity (the ids an allowlisted destination
    receives go into one of them, ``baggage`` when present); an entry left empty is removed.
    """
    out = dict(meta)
    keys = [k for k in out if isinstance(k, str) and k.lower() == "baggage"]
    main = "baggage" if "baggage" in keys or not keys else keys[0]
    for key in dict.fromkeys([*keys, main]):
        try:
            value = filter_baggage_header(out.get(key), destination if key == main else None)
        except Exception:
            _logger.debug("otel-agent-identity: unreadable _meta baggage dropped", exc_info=True)
            value = None
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def forwarded_baggage() -> dict[str, str]:
    """The ids forwarded to an allowlisted destination: documented key -> value, from :func:`current_scope`."""
    scope = current_scope()
    if scope is None:
        return {}
    values = (scope.conversation_id, scope.execution_id, scope.delegation_id)
    return {k: v for k, v in zip(FORWARDED_KEYS, values, strict=True) if isinstance(v, str) and v}


def record_upstream(span: Any, baggage: Mapping[str, Any], local_conversation_id: str | None = None) -> None:
    """Receiver side: record forwarded identity on the server ``span``.

    Args:
        span: the current server span (``opentelemetry.trace.Span``).
        baggage: the request's baggage (key -> value), e.g. ``opentelemetry.baggage.get_all(ctx)``
            of the extracted context.
        local_conversation_id: the conversation id the local agent uses, or None.
    Sets ``agent_identity.upstream.{conversation,execution,delegation}.id`` for each forwarded
    documented key (str, at most ``max_id_length``), and ``agent_identity.upstream.mismatch`` =
    True when the forwarded and local conversation ids are both present and differ. Never raises.
    """
    try:
        if span is None or not span.is_recording():
            return
        for key, value in _forwarded_ids(baggage).items():
            span.set_attribute(_UPSTREAM[key], value)
        upstream = baggage.get(attrs.GEN_AI_CONVERSATION_ID) if baggage else None
        if isinstance(upstream, str) and upstream and local_conversation_id and upstream != local_conversation_id:
            span.set_attribute(attrs.UPSTREAM_MISMATCH, True)
    except Exception:
        _logger.debug("otel-agent-identity: could not record upstream identity", exc_info=True)


def _forwarded_ids(baggage: Mapping[str, Any] | None) -> dict[str, str]:
    """The documented keys of ``baggage`` whose value is an acceptable id: a non-empty printable
    str of at most ``max_id_length`` characters (anything else is ignored)."""
    out = {}
    for key in FORWARDED_KEYS:
        value = baggage.get(key) if baggage else None
        if isinstance(value, str) and value and len(value) <= _policy.max_id_length and value.isprintable():
            out[key] = str.__str__(value)
    return out


class Upstream(NamedTuple):
    """The ids the caller of the request being served forwarded (see :func:`upstream`); each a
    str, or None when the caller did not send it."""

    conversation_id: str | None
    execution_id: str | None
    delegation_id: str | None


_INBOUND = otel_context.create_key("otel_agent_identity.inbound")
_UPSTREAM_IDS = otel_context.create_key("otel_agent_identity.upstream")
_inbound_seen = False  # no inbound request forwarded a conversation id yet: check_served has nothing to do


def upstream() -> Upstream | None:
    """The caller's ids for the inbound request being served, or None.

    Call it inside the serving code (an a2a-sdk ``AgentExecutor.execute``, an Agent Framework
    ``A2AExecutor`` and the agent runs it serves, anything they start with the request's context),
    with a2a-sdk's own spans on or off. Returns ``Upstream(conversation_id, execution_id,
    delegation_id)``: the W3C baggage entries ``gen_ai.conversation.id``,
    ``agent_identity.execution.id`` and ``agent_identity.delegation.id`` of the request, which an
    instrumented caller sends only to a destination on its allowlist
    (``OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST``); a value that is not a printable str of at
    most ``max_id_length`` characters is left out (None). Returns None outside a served request,
    or when the caller forwarded none of them (it did not allowlist this server, or is not
    instrumented). ``delegation_id`` is the caller's ``delegation(key=...)`` id, the same for a
    retry from another process: an idempotency key for the served work. The values are the
    caller's unauthenticated claim: scope what you key by them to the authenticated caller
    (docs/threat-model.md). Never raises.
    """
    try:
        value = otel_context.get_value(_UPSTREAM_IDS)
    except Exception:
        return None
    return value if isinstance(value, Upstream) else None


def inbound_context(span: Any, baggage: Mapping[str, Any], ctx: otel_context.Context) -> otel_context.Context:
    """Receiver side of a hop (e.g. an A2A request): record forwarded identity on the server
    ``span`` and return ``ctx`` (the request's context) with the forwarded ids (:func:`upstream`),
    remembering the forwarded conversation id, so the agent run that serves the request flags
    ``agent_identity.upstream.mismatch`` on ``span`` when its own conversation id differs (see
    :func:`check_served`). Never raises."""
    record_upstream(span, baggage)
    ids = _forwarded_ids(baggage)
    if ids:
        ctx = otel_context.set_value(_UPSTREAM_IDS, Upstream(*(ids.get(k) for k in FORWARDED_KEYS)), ctx)
    upstream = baggage.get(attrs.GEN_AI_CONVERSATION_ID) if baggage else None
    if isinstance(upstream, str) and upstream:
        global _inbound_seen
        _inbound_seen = True
        return otel_context.set_value(_INBOUND, (span, upstream), ctx)
    return ctx


def check_served(conversation_id: str | None) -> None:
    """Called when the outermost agent run serving an inbound request knows its conversation id
    (str or None): flags the request's server span when it differs from the forwarded one."""
    if not _inbound_seen or not conversation_id:
        return
    inbound: Any = otel_context.get_value(_INBOUND)
    if inbound is None or not conversation_id:
        return
    span, upstream = inbound
    if upstream != conversation_id and span.is_recording():
        span.set_attribute(attrs.UPSTREAM_MISMATCH, True)


def _strip_identity(value: str) -> list[str]:
    kept = []
    for member in value.split(","):
        if not member.strip():
            continue
        key = member.split(";", 1)[0].split("=", 1)[0].strip()
        try:  # noqa: SIM105 - per baggage member of every request: a try is free, contextlib.suppress is not
            key = unquote_plus(key)
        except Exception:
            pass
        if _policy.is_identity_key(key):
            continue
        if "=" not in member.split(";", 1)[0]:
            _logger.debug("otel-agent-identity: malformed baggage member kept: %r", member)
        kept.append(member.strip())
    return kept


def _forwarded_members() -> list[str]:
    return [f"{quote_plus(k)}={quote_plus(v)}" for k, v in forwarded_baggage().items()]


def _entry_matches(entry: str, destination: Destination) -> bool:
    entry = entry.strip()
    if not entry:
        return False
    url = destination.url
    if "://" in entry:
        return url is not None and url != "" and _url_prefix_matches(entry, url)
    if entry in destination.names:
        return True
    host = _host(url) if url else None
    return host is not None and host != "" and fnmatchcase(host, entry.lower())


def _url_prefix_matches(entry: str, url: str) -> bool:
    try:
        e, u = urlsplit(entry), urlsplit(url)
        if (e.scheme.lower(), e.hostname, _port(e)) != (u.scheme.lower(), u.hostname, _port(u)):
            return False
    except ValueError:
        return False
    prefix = e.path.rstrip("/")
    return not prefix or u.path == prefix or u.path.startswith(prefix + "/")


def _port(parts: Any) -> int | None:
    return parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None
