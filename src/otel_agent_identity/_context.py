"""The OpenTelemetry ``Context`` plumbing every other module builds on (imports none of ours).

A run's :class:`~otel_agent_identity.scope.IdentityScope` is the value under :data:`SCOPE_KEY`;
declarations (:func:`otel_agent_identity.new_conversation`, ``execution``, ``delegation``) are
values under keys of their own modules. With the default runtime context (``contextvars_context``)
the current ``Context`` is read and set on its contextvar directly: one C call each (the
contextvar is the one ``opentelemetry.context.attach`` returns a ``Token`` of: public API).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.instrumentation.utils import suppress_instrumentation

#: the run's :class:`~otel_agent_identity.scope.IdentityScope` in an OpenTelemetry ``Context``
SCOPE_KEY = otel_context.create_key("agent_identity.scope")


def _runtime_var() -> ContextVar | None:
    """The ``ContextVar`` that holds the current OpenTelemetry ``Context``: the one whose
    ``contextvars.Token`` ``opentelemetry.context.attach`` returns (the default runtime context,
    ``contextvars_context``), checked to read what ``get_current`` reads; None with another
    ``OTEL_PYTHON_CONTEXT`` (the API's functions are used then). Never raises."""
    try:
        probe = Context({"agent_identity.probe": True})
        token = otel_context.attach(probe)
        try:
            var = getattr(token, "var", None)
            if type(var) is not ContextVar or var.get() is not probe or otel_context.get_current() is not probe:
                return None
        finally:
            otel_context.detach(token)
        return var if var.get() is not probe else None
    except Exception:
        return None


_CURRENT = _runtime_var()
#: the current OpenTelemetry ``Context`` (``opentelemetry.context.get_current()``)
current_context: Callable[[], Context] = otel_context.get_current if _CURRENT is None else _CURRENT.get
#: make a ``Context`` current; returns the token for :func:`detach_context`
attach_context: Callable[[Context], Token] = otel_context.attach if _CURRENT is None else _CURRENT.set


def detach_context(token: Token) -> None:
    """Restore the ``Context`` that was current before :func:`attach_context`; a token made in
    another ``contextvars`` context (a stream finished in another task) is ignored."""
    if _CURRENT is None:
        otel_context.detach(token)
        return
    try:  # noqa: SIM105 - a try costs nothing here, on every run's exit; contextlib.suppress does
        _CURRENT.reset(token)
    except ValueError:  # created in another context
        pass


def with_value(ctx: Context, key: str, value: Any) -> Context:
    """``ctx`` with ``key`` set to ``value`` (``opentelemetry.context.set_value``)."""
    return Context({**ctx, key: value})


def _suppress_key() -> str:
    """The context key ``opentelemetry.instrumentation.utils.suppress_instrumentation`` sets (its
    name is private: read from what the public context manager sets on an empty ``Context``)."""
    token = otel_context.attach(Context())
    try:
        with suppress_instrumentation():
            keys = [k for k, v in otel_context.get_current().items() if v is True and k != SUPPRESS_KEY_PLAIN]
    finally:
        otel_context.detach(token)
    return keys[0] if keys else SUPPRESS_KEY_PLAIN


#: the context keys of ``suppress_instrumentation`` (and the plain one older code sets;
#: ``is_instrumentation_enabled`` reads both)
SUPPRESS_KEY_PLAIN = "suppress_instrumentation"
SUPPRESS_KEY = _suppress_key()


def suppressed() -> bool:
    """Whether instrumentation is suppressed in the current ``Context`` (see :data:`SUPPRESS_KEY`):
    our wrappers then pass every call through."""
    ctx = current_context()
    return bool(ctx.get(SUPPRESS_KEY) or ctx.get(SUPPRESS_KEY_PLAIN))
