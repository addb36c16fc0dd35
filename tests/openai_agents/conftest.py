"""OpenAI Agents SDK tests: no API key, the SDK's own trace export replaced by nothing (each test
that looks at SDK traces installs its own processor), and a real HTTP service on 127.0.0.1 for
tools and the Conversations API."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.pop("OPENAI_API_KEY", None)
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agents import set_trace_processors, set_tracing_disabled
from oa_helpers import LocalService


@pytest.fixture(autouse=True)
def _no_sdk_export():
    set_trace_processors([])  # the default processor would post to the OpenAI backend
    yield
    set_trace_processors([])
    set_tracing_disabled(True)


@pytest.fixture(scope="session")
def service():
    with LocalService() as svc:
        yield svc
