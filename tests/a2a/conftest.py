"""Specialist A2A servers in their own processes (under ``opentelemetry-instrument``, console
exporter), one per module."""

from __future__ import annotations

import pytest
from a2a_test_support import ServerProcess


@pytest.fixture(scope="module")
def specialist():
    """Agent Framework's ``A2AExecutor`` (answers in the request's context)."""
    server = ServerProcess("specialist", shape="a2a-executor")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def new_context():
    """A plain executor answering every request in a new contextId."""
    server = ServerProcess("new-context-specialist", shape="plain-new-context")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def streaming_specialist():
    """``A2AExecutor(agent, stream=True)``: a slow streaming response, one word every 0.3 s."""
    server = ServerProcess("streaming-specialist", shape="a2a-executor", stream=True, OFFLINE_CHAT_STREAM_DELAY="0.3")
    yield server
    server.stop()
