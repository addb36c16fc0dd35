"""OpenTelemetry instrumentation that makes AI-agent identity observable.

For every agent run of a supported framework it asks the agent's extractor for
``gen_ai.conversation.id``, gives the run an ``agent_identity.execution.id`` (and each hop to
another agent an ``agent_identity.delegation.id``) and stamps them on the agent span and on every
span started inside the run. Identity never leaves the process unless a destination is allowlisted.

Usage, with the launcher (the ``opentelemetry_instrumentor`` entry point is ``agent_identity``)::

    export OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH=256
    opentelemetry-instrument python app.py

or in code, after the SDK tracer provider is set::

    from otel_agent_identity import AgentIdentityInstrumentor
    AgentIdentityInstrumentor().instrument(tracer_provider=provider)

Options (``instrument()`` arguments override ``OTEL_INSTRUMENTATION_AGENT_IDENTITY_*``, see
:mod:`otel_agent_identity.environment_variables`): ``frameworks``, ``max_id_length``,
``stamp_spans``, ``allowlist``, ``baggage_keys``; ``meter_provider`` (default: the global one)
for the continuity counters of :mod:`otel_agent_identity.metrics`.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any, Collection

from opentelemetry import trace
from opentelemetry.instrumentation.dependencies import get_dependency_conflicts
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor

from otel_agent_identity import boundary, metrics, span_processor
from otel_agent_identity.boundary import Upstream, upstream
from otel_agent_identity._runs import RunHandler
from otel_agent_identity.adapters import ADAPTERS, GUARDS
from otel_agent_identity.config import Config
from otel_agent_identity.continuity import conversation_id, new_conversation, resumed
from otel_agent_identity.extractors import ExtractorRegistry, RunCall, register_extractor, registry
from otel_agent_identity.scope import current_scope, delegation, execution, suppressed
from otel_agent_identity.span_processor import IdentitySpanProcessor
from otel_agent_identity.version import __version__

__all__ = [
    "AgentIdentityInstrumentor",
    "ExtractorRegistry",
    "IdentitySpanProcessor",
    "RunCall",
    "Upstream",
    "conversation_id",
    "current_scope",
    "delegation",
    "execution",
    "new_conversation",
    "register_extractor",
    "registry",
    "upstream",
    "resumed",
    "__version__",
]

_logger = logging.getLogger(__name__)


class AgentIdentityInstrumentor(BaseInstrumentor):
    """Instruments every supported agent framework that is importable; skips the others quietly.

    A framework whose installed version is outside the adapter's known range is skipped with one
    warning. ``instrument()`` twice does not wrap twice; ``uninstrument()`` restores the originals.
    """

    _handler: RunHandler | None = None
    _adapters: list = []

    def instrument(self, **kwargs: Any) -> Any:
        """As :meth:`BaseInstrumentor.instrument`; while instrumentation is suppressed
        (``opentelemetry.instrumentation.utils.suppress_instrumentation``) it changes nothing."""
        if suppressed():
            return None
        return super().instrument(**kwargs)

    def instrumentation_dependencies(self) -> Collection[str]:
        return ()  # each adapter checks its own framework

    def _instrument(self, **kwargs: Any) -> None:
        config = Config.load(**kwargs)
        boundary.configure(config)
        registry.max_id_length = config.max_id_length
        registry.load_entry_points()
        provider = kwargs.get("tracer_provider") or trace.get_tracer_provider()
        tracer = trace.get_tracer(__name__, __version__, provider)
        handler = RunHandler(tracer, IdentitySpanProcessor(stamp_spans=config.stamp_spans), registry)
        # no provider yet (the application sets the global one later): attach at the first run
        handler.provider = None if "tracer_provider" in kwargs else provider
        handler.config = config
        handler.attach_processor(provider)
        metrics.configure(kwargs.get("meter_provider"), provider)
        self._handler = handler
        self._adapters = []
        for name, module_name in ADAPTERS.items():
            if config.frameworks is not None and name not in config.frameworks and name not in GUARDS:
                continue
            adapter = _load_adapter(name, module_name)
            if adapter is None:
                continue
            try:
                adapter.instrument(handler)
                self._adapters.append(adapter)
            except Exception:  # noqa: BLE001 - an unknown framework shape must not break start-up
                _logger.warning("otel-agent-identity: could not instrument %s; skipped", name, exc_info=True)
                adapter.uninstrument()

    def _uninstrument(self, **kwargs: Any) -> None:
        for adapter in self._adapters:
            adapter.uninstrument()
        self._adapters = []
        boundary.configure(None)
        metrics.reset()
        if self._handler is not None:
            self._handler.processor.enabled = False  # a provider cannot drop a processor; it goes quiet
            self._handler = None
        span_processor.uninstall()


def _load_adapter(name: str, module_name: str):
    module = importlib.import_module(module_name)
    conflict = get_dependency_conflicts(module.REQUIREMENTS)
    if conflict is None:
        return module
    if getattr(conflict, "found", None) is not None:
        _logger.warning("otel-agent-identity: skipping %s: %s", name, conflict)
    return None
