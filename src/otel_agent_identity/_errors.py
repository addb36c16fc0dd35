"""Recording the application's exception on a span without ever touching it in a way that can fail.

The exception is the application's object: its ``__str__``, ``__repr__``, ``__class__`` or its
class's ``__qualname__`` may raise. Whatever they do, the span gets ERROR status and ``error.type``
and nothing of ours escapes; the caller re-raises the very same object, traceback intact.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.trace import Status, StatusCode

_logger = logging.getLogger(__name__)
#: ``error.type`` when even the class name cannot be read (the semconv's fallback value)
_OTHER = "_OTHER"
#: how a call can stop that is not its failure: cancellation, a consumer closing a stream early
NOT_FAILURES: tuple[type[BaseException], ...] = (asyncio.CancelledError, GeneratorExit)


def error_type(error: BaseException) -> str:
    """``error.type`` of ``error``: its class's ``__qualname__`` (a str), ``_OTHER`` when unreadable."""
    try:
        name = type(error).__qualname__
        return name if type(name) is str and name else _OTHER
    except Exception:
        return _OTHER


def describe(error: BaseException) -> str | None:
    """``str(error)`` (bounded to 1,000 characters), None when it raises or is not a str."""
    try:
        text = str(error)
    except Exception:
        return None
    return text[:1000] if type(text) is str else None


def record_error(span: Any, error: BaseException) -> None:
    """Status ERROR (description ``str(error)`` when it can be read) and ``error.type`` on ``span``.
    Never raises."""
    try:
        span.set_status(Status(StatusCode.ERROR, describe(error)))
        span.set_attribute(ERROR_TYPE, error_type(error))
    except Exception:
        _logger.debug("otel-agent-identity: could not record an error on a span", exc_info=True)


def is_one_of(error: BaseException, types: tuple) -> bool:
    """``isinstance(error, types)``, False when the check itself raises (a ``__class__`` property)."""
    try:
        return isinstance(error, types)
    except Exception:
        return False


def end_span(span: Any, error: BaseException | None = None, not_failures: tuple = ()) -> None:
    """End ``span`` (one we started); first ERROR status and ``error.type`` when ``error`` (the
    application's own exception, which the caller re-raises) is a failure: not one of
    :data:`NOT_FAILURES` nor of ``not_failures`` (control-flow exceptions of a framework). Never raises."""
    if error is not None and not is_one_of(error, NOT_FAILURES + not_failures if not_failures else NOT_FAILURES):
        record_error(span, error)
    try:
        span.end()
    except Exception:
        _logger.debug("otel-agent-identity: ending a span failed", exc_info=True)
