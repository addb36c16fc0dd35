"""Google ADK tests (run in ``.venv-adk``: ADK pins opentelemetry <= 1.44): the real framework with
an offline ``BaseLlm``."""

from __future__ import annotations

import pytest

pytest.importorskip("google.adk")
