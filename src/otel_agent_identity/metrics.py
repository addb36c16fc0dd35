"""Continuity signals as OpenTelemetry metrics, for users without the ``agentidentity`` collector.

Instruments come from the metrics API: without an SDK ``MeterProvider`` (the global one, or
``instrument(meter_provider=...)``) every ``add`` is a no-op. Labels are bounded: ``service`` (the
tracer provider's resource ``service.name``, one per process), ``agent`` (an agent or Agent Card
name from the application's code), ``framework`` (the adapter name) and ``reason`` (a fixed set).
Never an id. An agent name is cut to 64 characters; after 100 distinct names per instrument the
rest count as ``other``. Names and meanings: docs/attributes.md, "Metrics (Python)".
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opentelemetry import metrics as otel_metrics

from otel_agent_identity.package import SCHEMA_URL
from otel_agent_identity.version import __version__

_logger = logging.getLogger(__name__)

CONVERSATION_CHANGES = "agent_identity.conversation.changes"
DELEGATE_RESTARTS = "agent_identity.delegate.restarts"
STATE_NOT_RESUMED = "agent_identity.state.not_resumed"
DELEGATION_DUPLICATE_DELIVERIES = "agent_identity.delegation.duplicate_deliveries"
DELEGATION_DUPLICATE_EXECUTIONS = "agent_identity.delegation.duplicate_executions"
PARENT_CONVERSATION_DIFFERS = "agent_identity.conversation.parent_differs"
CONVERSATION_REBUILT = "agent_identity.conversation.rebuilt"

#: ``reason`` values of ``agent_identity.conversation.changes``
REASON_RUN = "run"  # the agent span's id after the run differs from the one before it
REASON_CALLEE = "callee_context"  # an A2A CLIENT span: the callee answered in another context
REASON_SERVED = "served_context"  # an A2A SERVER span: this server answered in another context

_DESCRIPTIONS = {
    CONVERSATION_CHANGES: "Continuity breaks (agent_identity.conversation.changed=true), by where they were seen",
    DELEGATE_RESTARTS: "Sends to a remote agent that started a new context where an earlier one was in effect "
    "in the same caller conversation",
    STATE_NOT_RESUMED: "Agent runs serving an A2A request to continue a contextId this process answered in "
    "before that started from no prior state",
    DELEGATION_DUPLICATE_DELIVERIES: "Inbound A2A requests whose delegation this process already received",
    DELEGATION_DUPLICATE_EXECUTIONS: "Agent runs serving an inbound A2A request whose delegation this process "
    "already executed",
    PARENT_CONVERSATION_DIFFERS: "Nested agent runs whose conversation differs from their parent run's, "
    "with no declared mapping",
    CONVERSATION_REBUILT: "Agent runs serving an A2A request for a contextId under another agent conversation than "
    "the one this process served it with last, without resuming prior state",
}
_MAX_NAME = 64
_MAX_NAMES = 100

_lock = threading.Lock()
_counters: dict[str, Any] = {}
_names: dict[str, set] = {}
_service = "unknown_service"


def configure(meter_provider: Any = None, tracer_provider: Any = None) -> None:
    """Create the counters on ``meter_provider`` (None: the global one, also when set later) and
    take ``service`` from ``tracer_provider.resource`` (``service.name``). Never raises."""
    global _service
    try:
        meter = otel_metrics.get_meter(__name__, __version__, meter_provider, schema_url=SCHEMA_URL)
        counters = {
            name: meter.create_counter(name, unit="{event}", description=text) for name, text in _DESCRIPTIONS.items()
        }
        resource = getattr(tracer_provider, "resource", None)
        service = getattr(resource, "attributes", {}).get("service.name") if resource is not None else None
        with _lock:
            _counters.clear()
            _counters.update(counters)
            _names.clear()
            _service = service if isinstance(service, str) and service else "unknown_service"
    except Exception:
        _logger.debug("otel-agent-identity: could not create metrics", exc_info=True)


def reset() -> None:
    """Drop the counters (``uninstrument()``): later signals are not counted."""
    with _lock:
        _counters.clear()
        _names.clear()


def _agent_label(instrument: str, agent: Any) -> str:
    name = agent[:_MAX_NAME] if isinstance(agent, str) and agent else ""
    seen = _names.setdefault(instrument, set())
    if not name or name in seen:
        return name
    if len(seen) >= _MAX_NAMES:
        return "other"
    seen.add(name)
    return name


def count(instrument: str, *, agent: Any = None, framework: str = "", reason: str | None = None) -> None:
    """Add 1 to ``instrument`` (one of the names above) with the bounded labels. Never raises."""
    try:
        with _lock:
            counter = _counters.get(instrument)
            if counter is None:
                return
            labels = {"service": _service, "agent": _agent_label(instrument, agent), "framework": framework}
        if reason is not None:
            labels["reason"] = reason
        counter.add(1, labels)
    except Exception:
        _logger.debug("otel-agent-identity: could not count %s", instrument, exc_info=True)
