"""What every adapter module shares: wrapping and unwrapping, its ``invoke_agent`` span spec, its
bounded caches. An adapter module keeps one :class:`Wrapped` and exports its ``uninstrument``::

    _wrapped = Wrapped()
    uninstrument = _wrapped.uninstrument

    def instrument(handler):  # named in adapters.HOOKS
        _wrapped.wrap(SomeClass, "run", make_wrapper(handler))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.trace import SpanKind
from wrapt import wrap_function_wrapper

from otel_agent_identity import attributes as attrs
from otel_agent_identity._runs import SpanSpec


def nonempty_str(value: Any) -> str | None:
    """``value`` if it is a non-empty ``str``, else None (framework and protocol fields read as names)."""
    return value if isinstance(value, str) and value else None


class Wrapped:
    """The ``(owner, attribute name)`` pairs one adapter wrapped, newest last.

    Args:
        on_uninstrument: called first by :meth:`uninstrument` (the adapter's own state to reset).
    """

    __slots__ = ("_on_uninstrument", "pairs")

    def __init__(self, on_uninstrument: Callable[[], None] | None = None) -> None:
        self.pairs: list[tuple[Any, str]] = []
        self._on_uninstrument = on_uninstrument

    def wrap(self, owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
        """``wrapt.wrap_function_wrapper(owner, name, wrapper)`` (a ``wrapt.FunctionWrapper``
        replaces the attribute), remembered for :meth:`uninstrument`. Raises what wrapt raises
        (e.g. ``AttributeError`` for a missing attribute): the caller is the adapter's hook."""
        wrap_function_wrapper(owner, name, wrapper)
        self.pairs.append((owner, name))

    def __contains__(self, pair: tuple[Any, str]) -> bool:
        """Whether ``(owner, name)`` is wrapped already (hooks that run once per imported module)."""
        return pair in self.pairs

    def uninstrument(self) -> None:
        """Restore every wrapped attribute, newest first."""
        if self._on_uninstrument is not None:
            self._on_uninstrument()
        while self.pairs:
            owner, name = self.pairs.pop()
            unwrap(owner, name)


class BoundedCache(dict):
    """A dict emptied when it reaches ``limit`` entries: values built per agent (a span spec), whose
    keys (agent names) an application may make per user or per request. Read with ``get``."""

    __slots__ = ("limit",)

    def __init__(self, limit: int = 256) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any) -> Any:
        """Store ``value`` under ``key`` (not stored when ``key`` is unhashable) and return it."""
        try:
            if len(self) >= self.limit:
                self.clear()
            self[key] = value
        except TypeError:
            pass
        return value


def call_in(run: Any, wrapped: Any, args: tuple, kwargs: dict) -> Any:
    """``wrapped(*args, **kwargs)`` in ``run`` (a :class:`~otel_agent_identity._runs.Run`: its
    return shape kept, :meth:`~otel_agent_identity._streams.Shapes.call`), or bare when ``run`` is
    None (no run could start). Raises what ``wrapped`` raises."""
    if run is None:
        return wrapped(*args, **kwargs)
    return run.call(wrapped, args, kwargs)


def agent_span_spec(
    name: str,
    provider: str | None,
    *,
    operation: str = attrs.INVOKE_AGENT,
    kind: SpanKind = SpanKind.INTERNAL,
    name_key: str | None = attrs.GEN_AI_AGENT_NAME,
    extra: dict[str, Any] | None = None,
    not_failures: tuple = (),
) -> SpanSpec:
    """The span of a run whose framework emits none: ``{operation} {name}`` with the GenAI
    semconv attributes ``gen_ai.operation.name``, ``gen_ai.provider.name`` (when given) and
    ``name_key`` (``gen_ai.agent.name``, ``gen_ai.workflow.name`` for a workflow, None for a name
    that is only the span's) = ``name``, plus ``extra``. The spec is read only (the tracer
    copies its attributes): cache it per agent."""
    span_attrs: dict[str, Any] = {attrs.GEN_AI_OPERATION_NAME: operation}
    if name_key:
        span_attrs[name_key] = name
    if provider:
        span_attrs[attrs.GEN_AI_PROVIDER_NAME] = provider
    if extra:
        span_attrs.update(extra)
    return SpanSpec(f"{operation} {name}", kind, span_attrs, not_failures)
