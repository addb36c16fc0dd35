"""Specialist A2A servers in their own processes (under ``opentelemetry-instrument``, console
exporter), one per module."""

from __future__ import annotations

import pytest
from a2a_test_support import ServerProcess


@pytest.fixture(scope="module")
def specialist():
    server = ServerProcess("specialist", forgetful=False)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def forgetful():
    server = ServerProcess("forgetful-specialist", forgetful=True)
    yield server
    server.stop()
