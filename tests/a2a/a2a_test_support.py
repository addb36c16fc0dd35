"""Helpers of the A2A e2e tests: specialist server processes and id formatting."""

from __future__ import annotations

import a2a_harness as h


def ServerProcess(service: str, shape: str, stream: bool = False, **env: str) -> h.SpecialistProcess:
    """A specialist process of ``shape`` (``examples/specialist.py``); a2a-sdk's own method spans
    stay on here: the SERVER span must still continue the caller's trace."""
    return h.SpecialistProcess(service, shape, stream=stream, OTEL_INSTRUMENTATION_A2A_SDK_ENABLED="true", **env)


def trace_hex(value) -> str:
    """A trace id as 32 hex digits (console-exporter ids are ``0x``-prefixed strings, SDK ids ints)."""
    return value[2:] if isinstance(value, str) else format(value, "032x")


def span_hex(value) -> str:
    """A span id as 16 hex digits."""
    return value[2:] if isinstance(value, str) else format(value, "016x")
