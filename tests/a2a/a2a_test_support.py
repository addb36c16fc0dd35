"""Helpers of the A2A e2e tests: specialist server processes and id formatting."""

from __future__ import annotations

import uuid

import a2a_harness as h
from a2a.types import Message as A2AMessage
from a2a.types import Part, Role, SendMessageRequest


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


async def send_text(client, context_id: str) -> str:
    """One send of a text message by a2a-sdk ``client`` requesting ``context_id`` (empty: none);
    returns the contextId the server answered in."""
    message = A2AMessage(
        role=Role.ROLE_USER, parts=[Part(text="hi")], message_id=uuid.uuid4().hex, context_id=context_id
    )
    answered = ""
    async for event in client.send_message(SendMessageRequest(message=message)):
        answered = getattr(getattr(event, event.WhichOneof("payload")), "context_id", "") or answered
    return answered
