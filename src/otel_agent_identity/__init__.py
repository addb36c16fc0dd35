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
import sys
import threading
from collections.abc import Collection
from typing import Any

import wrapt
from opentelemetry import trace
from opentelemetry.instrumentation.dependencies import DependencyConflict, get_dependency_conflicts
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]  # the module is "# type: ignore"

from otel_agent_identity import boundary, metrics
from otel_agent_identity._runs import RunHandler
from otel_agent_identity.adapters import ADAPTERS, GUARDS, HOOKS
from otel_agent_identity.boundary import Upstream, upstream
from otel_agent_identity.config import Config
from otel_agent_identity.continuity import conversation_id, new_conversation, resumed
from otel_agent_identity.extractors import ExtractorRegistry, RunCall, register_extractor, registry
from otel_agent_identity.package import SCHEMA_URL, _instruments, _instruments_any
from otel_agent_identity.scope import current_scope, delegation, execution, suppressed
from otel_agent_identity.span_processor import IdentitySpanProcessor
from otel_agent_identity.version import __version__

__all__ = [
    "AgentIdentityInstrumentor",
    "ExtractorRegistry",
    "IdentitySpanProcessor",
    "RunCall",
    "Upstream",
    "__version__",
    "conversation_id",
    "current_scope",
    "delegation",
    "execution",
    "new_conversation",
    "register_extractor",
    "registry",
    "resumed",
    "upstream",
]

_logger = logging.getLogger(__name__)


class AgentIdentityInstrumentor(BaseInstrumentor):
    """Instruments each supported agent framework when the application imports it; never imports one.

    ``instrument()`` registers a post-import hook per module of
    :data:`otel_agent_identity.adapters.HOOKS` (wrapt's): a framework imported already is wrapped at
    once, one imported later is wrapped as its import completes, before the application can use
    it. A framework whose installed version is outside the adapter's known range is skipped with
    one warning, at that moment. ``instrument()`` twice does not wrap twice; ``uninstrument()``
    restores the originals and makes the hooks still pending no-ops (wrapt cannot remove a hook:
    one per module is registered per process, whatever the number of ``instrument()`` calls).
    """

    _handler: RunHandler | None = None
    _adapters: list[Any]  # the adapters loaded, set by _instrument

    def instrument(self, **kwargs: Any) -> Any:
        """As :meth:`BaseInstrumentor.instrument`; while instrumentation is suppressed
        (``opentelemetry.instrumentation.utils.suppress_instrumentation``) it changes nothing."""
        if suppressed():
            return None
        return super().instrument(**kwargs)

    def instrumentation_dependencies(self) -> Collection[str]:
        """The frameworks this instruments, one requirement per adapter (:mod:`otel_agent_identity.package`).
        Any one of them suffices (contrib's ``instruments-any``, see :meth:`_check_dependency_conflicts`);
        each adapter checks its own when the application imports its framework."""
        return _instruments_any

    def _check_dependency_conflicts(self) -> DependencyConflict | None:
        """``instrument()``'s check, as the launcher's of pyproject.toml's ``instruments-any`` extra: a
        conflict only when none of :meth:`instrumentation_dependencies` is installed in its range (a
        framework not installed never disables the others)."""
        return get_dependency_conflicts(_instruments, _instruments_any)

    def _instrument(self, **kwargs: Any) -> None:
        global _active
        config = Config.load(**kwargs)
        boundary.configure(config)
        registry.max_id_length = config.max_id_length
        provider = kwargs.get("tracer_provider") or trace.get_tracer_provider()
        tracer = trace.get_tracer(__name__, __version__, provider, schema_url=SCHEMA_URL)
        handler = RunHandler(tracer, IdentitySpanProcessor(stamp_spans=config.stamp_spans), registry)
        # no provider yet (the application sets the global one later): attach at the first run
        handler.provider = None if "tracer_provider" in kwargs else provider
        handler.config = config
        handler.attach_processor(provider)
        metrics.configure(kwargs.get("meter_provider"), provider)
        self._handler = handler
        self._adapters: list[Any] = []
        self._loaded: dict[str, Any] = {}  # adapter name -> module, or None when skipped
        self._done: set[tuple] = set()  # the HOOKS rows run
        self._extractors_loaded = False
        _active = self
        for module_name in dict.fromkeys(row[0] for row in HOOKS):  # table order, once each
            if module_name not in _registered:
                _registered.add(module_name)
                wrapt.register_post_import_hook(_on_import, module_name)  # runs now when imported
            elif module_name in sys.modules:  # its hook ran for an earlier instrument()
                self._on_import(module_name)

    def _on_import(self, module_name: str) -> None:
        """Run the :data:`HOOKS` rows of ``module_name`` (just imported) not run yet. Never raises:
        an exception here would fail the application's import."""
        with _lock:  # claims the rows; they run outside it (a wrap may wait on another import's lock)
            handler = self._handler
            rows = [row for row in HOOKS if row[0] == module_name and row not in self._done]
            self._done.update(rows)
            todo = [(row, self._adapter(row[1])) for row in rows] if handler is not None else []
        for (_, name, function), adapter in todo:
            if adapter is None or self._loaded.get(name) is None:
                continue
            try:
                getattr(adapter, function)(handler)
            except Exception:
                _logger.warning("otel-agent-identity: could not instrument %s; skipped", name, exc_info=True)
                with _lock:
                    self._loaded[name] = None
                    if adapter in self._adapters:
                        self._adapters.remove(adapter)
                _quietly(adapter.uninstrument)

    def _adapter(self, name: str) -> Any:
        """The adapter module ``name``, loaded and its version checked once; None when skipped."""
        if name in self._loaded:
            return self._loaded[name]
        config = self._handler.config if self._handler is not None else None
        adapter = None
        if config is None:  # uninstrumented meanwhile
            return None
        if config.frameworks is None or name in config.frameworks or name in GUARDS:
            try:
                adapter = _load_adapter(name, ADAPTERS[name])
            except Exception:
                _logger.warning("otel-agent-identity: could not load the %s adapter; skipped", name, exc_info=True)
        self._loaded[name] = adapter
        if adapter is not None:
            self._adapters.append(adapter)
            if name not in GUARDS and not self._extractors_loaded:
                # the first framework: the extractor plugins (an entry-point scan of every installed
                # distribution, the costliest step of start-up) are loaded only now, before its first run
                self._extractors_loaded = True
                registry.load_entry_points()
        return adapter

    def _uninstrument(self, **kwargs: Any) -> None:
        global _active
        with _lock:
            _active = None  # pending hooks: no-ops until the next instrument()
            for adapter in self._adapters:
                _quietly(adapter.uninstrument)
            self._adapters = []
            self._loaded = {}
            self._done = set()
        boundary.configure(None)
        metrics.reset()
        if self._handler is not None:
            self._handler.processor.enabled = False  # a provider cannot drop a processor; it goes quiet
            self._handler = None


#: the instrumentor whose hooks are live (None: uninstrumented), the modules given a hook, and the
#: lock of the instrumentor's bookkeeping
_active: AgentIdentityInstrumentor | None = None
_registered: set[str] = set()
_lock = threading.RLock()


def _on_import(module: Any) -> None:
    """wrapt's post-import hook (one per module of HOOKS, per process)."""
    try:
        active = _active
        if active is not None:
            active._on_import(module.__name__)
    except Exception:
        _logger.debug("otel-agent-identity: import hook failed", exc_info=True)


def _quietly(fn: Any) -> None:
    try:
        fn()
    except Exception:
        _logger.debug("otel-agent-identity: restoring an adapter failed", exc_info=True)


def _load_adapter(name: str, module_name: str):
    module = importlib.import_module(module_name)
    conflict = get_dependency_conflicts(module.REQUIREMENTS)
    if conflict is None:
        return module
    if getattr(conflict, "found", None) is not None:
        _logger.warning("otel-agent-identity: skipping %s: %s", name, conflict)
    return None
