"""An application exception that cannot be formatted, and the span check of every test that raises it."""

from __future__ import annotations

from opentelemetry.trace import StatusCode


class Unprintable(Exception):
    """Its ``__str__`` and ``__repr__`` raise: nothing of ours may format it on the way to the caller."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ of an unprintable error")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__ of an unprintable error")


def assert_error_span(span, error_type: str = "Unprintable") -> None:
    """``span`` ended, with ERROR status and ``error.type``."""
    assert span.end_time is not None and span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == error_type
