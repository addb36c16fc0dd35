"""Pure, tolerant readers of a2a-sdk protobuf objects -> A2A semconv span attributes.

Every function accepts any object (missing fields read as absent) and never raises on odd input.
Ids come from these protocol fields: ``Message.message_id`` -> ``a2a.message.id``;
``Message.context_id`` of a request -> ``agent_identity.conversation.requested_id`` (what the
request asked to continue) and ``gen_ai.conversation.id`` (in effect until a response says
otherwise); ``Task.context_id`` / ``TaskStatusUpdateEvent.context_id`` / ... of a response -> the
context the server answered in; ``Message.task_id`` / ``Task.id`` / ``*UpdateEvent.task_id`` ->
``a2a.task.id``; ``TaskStatus.state`` -> ``a2a.task.state`` (enum name, e.g. ``TASK_STATE_COMPLETED``).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.trace import Status, StatusCode

from otel_agent_identity import attributes as attrs
from otel_agent_identity.adapters._base import nonempty_str
from otel_agent_identity.extractors import registry
from otel_agent_identity.span_processor import attributes_of

_logger = logging.getLogger(__name__)
_warned: set[str] = set()

SEND_MESSAGE = "SendMessage"
SEND_STREAMING_MESSAGE = "SendStreamingMessage"


def span_attribute(span: Any, key: str) -> Any:
    """The value of attribute ``key`` on ``span`` (any span: None when it has none or no attributes)."""
    try:
        return attributes_of(span).get(key)
    except Exception:  # a non-recording span has no attributes
        return None


def method_name(streaming: bool) -> str:
    """``SendStreamingMessage`` or ``SendMessage`` (the A2A method names of the semconv)."""
    return SEND_STREAMING_MESSAGE if streaming else SEND_MESSAGE


def client_streams(client: Any) -> bool:
    """Whether ``BaseClient.send_message`` will use the streaming method (config and card agree)."""
    config = getattr(client, "_config", None)
    card = getattr(client, "_card", None)
    caps = getattr(card, "capabilities", None)
    return bool(getattr(config, "streaming", False) and getattr(caps, "streaming", False))


def protocol_id(value: Any, field: str) -> str | None:
    """``value`` if it is an acceptable id (a non-empty printable str of at most ``max_id_length``
    characters: the same rule as extractors' ids), else None, with one warning per ``field``. A2A
    ids (``context_id``, ``message_id``, ``task_id``) come from the remote peer: never trusted onto
    spans as they are."""
    if value is None or value == "":
        return None
    problem = registry.problem(value, remember=False)
    if problem is None:
        return value if type(value) is str else str.__str__(value)
    if field not in _warned:
        _warned.add(field)
        _logger.warning("otel-agent-identity: an A2A %s was %s; left off the spans", field, problem)
    return None


def card_name(client: Any) -> str | None:
    """The target Agent Card's ``name`` (str) or None."""
    return nonempty_str(getattr(getattr(client, "_card", None), "name", None))


def message_attributes(message: Any) -> dict[str, Any]:
    """``a2a.message.id``, ``a2a.task.id``, ``a2a.message.reference_task_ids``, and
    ``gen_ai.conversation.id`` = ``agent_identity.conversation.requested_id`` = the ``context_id``
    as sent (both absent on a first turn) of a request ``Message``."""
    out: dict[str, Any] = {}
    for key, field in (
        (attrs.A2A_MESSAGE_ID, "message_id"),
        (attrs.A2A_TASK_ID, "task_id"),
        (attrs.GEN_AI_CONVERSATION_ID, "context_id"),
    ):
        value = protocol_id(getattr(message, field, None), field)
        if value:
            out[key] = value
    if attrs.GEN_AI_CONVERSATION_ID in out:
        out[attrs.CONVERSATION_REQUESTED_ID] = out[attrs.GEN_AI_CONVERSATION_ID]
    refs = [r for r in (getattr(message, "reference_task_ids", None) or ()) if protocol_id(r, "reference_task_id")]
    if refs:
        out[attrs.A2A_MESSAGE_REFERENCE_TASK_IDS] = refs
    return out


def request_attributes(request: Any, client: Any = None, *, streaming: bool = False) -> dict[str, Any]:
    """Attributes of a ``SendMessageRequest`` (either side: the method, the message's ids, the
    tenant) and, client side, of the ``BaseClient`` sending it (its endpoint)."""
    out: dict[str, Any] = {attrs.A2A_METHOD_NAME: method_name(streaming)}
    out.update(message_attributes(getattr(request, "message", None)))
    tenant = protocol_id(getattr(request, "tenant", None), "tenant")
    if tenant:
        out[attrs.A2A_TENANT] = tenant
    if client is not None:
        out.update(endpoint_attributes(client))
    return out


def transport_url(client: Any) -> str | None:
    """The URL (str) a ``BaseClient`` sends to, or None."""
    return nonempty_str(getattr(getattr(client, "_transport", None), "url", None))


def endpoint_attributes(client: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    url = transport_url(client)
    interfaces = getattr(getattr(client, "_card", None), "supported_interfaces", None) or ()
    for interface in interfaces:
        if url is None or getattr(interface, "url", None) == url:
            url = url or nonempty_str(getattr(interface, "url", None))
            version = nonempty_str(getattr(interface, "protocol_version", None))
            if version:
                out[attrs.A2A_PROTOCOL_VERSION] = version
            break
    if url:
        try:
            parts = urlsplit(url)
            if parts.hostname:
                out[attrs.SERVER_ADDRESS] = parts.hostname
            if parts.port:
                out[attrs.SERVER_PORT] = parts.port
        except ValueError:
            pass
    return out


def event_facts(item: Any) -> dict[str, Any]:
    """``{"context_id", "task_id", "state"}`` (each optional) of a response: a ``StreamResponse``
    (client), or a ``Task`` / ``Message`` / update event (server); a2a-sdk 0.3: a ``(Task, update)``
    client event, pydantic objects, ``TaskState`` values as their 1.x names (``TASK_STATE_COMPLETED``)."""
    if type(item) is tuple and item:  # a2a-sdk 0.3 client: (Task with the update applied, update or None)
        item = item[0]
    payload = item
    which = getattr(item, "WhichOneof", None)
    if callable(which):
        try:
            kind = which("payload")
        except ValueError:  # not a StreamResponse: the object itself is the event
            kind = None
        if kind:
            payload = getattr(item, kind)
    out: dict[str, Any] = {}
    context_id = protocol_id(getattr(payload, "context_id", None), "context_id")
    if context_id:
        out["context_id"] = context_id
    task_id = protocol_id(getattr(payload, "task_id", None), "task_id")
    if task_id is None and hasattr(payload, "status"):  # a Task: its id is the task id
        task_id = protocol_id(getattr(payload, "id", None), "task_id")
    if task_id:
        out["task_id"] = task_id
    state = getattr(getattr(payload, "status", None), "state", None)
    if isinstance(state, str) and state:  # a2a-sdk 0.3: a str enum ("input-required"), named as in 1.x
        out["state"] = "TASK_STATE_" + str.__str__(state).upper().replace("-", "_")
    elif isinstance(state, int) and state:
        try:
            from a2a.types import TaskState

            out["state"] = TaskState.Name(state)
        except Exception:
            pass
    return out


#: task states of work still under way: a send cancelled after one of them lost its response
PENDING_STATES = frozenset({"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"})

#: terminal task states that mean the delegated work failed (A2A ``TaskState``)
FAILED_STATES = frozenset({"TASK_STATE_FAILED", "TASK_STATE_REJECTED"})


def mark_failed_task(span: Any, observed: dict[str, Any]) -> None:
    """Status ERROR and ``error.type`` = the task state on ``span`` when the remote task failed or
    was rejected: the call itself succeeded, the delegated work did not."""
    state = observed.get("state")
    if state in FAILED_STATES and span.is_recording():
        span.set_status(Status(StatusCode.ERROR, f"A2A task {state}"))
        span.set_attribute(ERROR_TYPE, state)


def requested_context(message: Any) -> str | None:
    """The ``context_id`` (str) a request ``Message`` asked to continue, None on a first turn."""
    return protocol_id(getattr(message, "context_id", None), "context_id")


def mark_changed(span: Any, requested: str | None, answered: str | None) -> bool:
    """``agent_identity.conversation.changed=true`` on ``span`` when a response's ``context_id``
    differs from the non-empty requested one (a callee that answered in another context).
    Returns True when this call marked it (False when it was marked already or is not a change)."""
    if requested and answered and answered != requested and span.is_recording():
        before = span_attribute(span, attrs.CONVERSATION_CHANGED)
        span.set_attribute(attrs.CONVERSATION_CHANGED, True)
        return before is not True
    return False


def event_attributes(observed: dict[str, Any]) -> dict[str, Any]:
    """Span attributes of :func:`event_facts` output (the conversation id is left to extractors)."""
    out: dict[str, Any] = {}
    if observed.get("task_id"):
        out[attrs.A2A_TASK_ID] = observed["task_id"]
    if observed.get("state"):
        out[attrs.A2A_TASK_STATE] = observed["state"]
    return out
