"""Strands Agents tests (run in ``.venv-strands``: Strands' A2A extra pins a2a-sdk 0.3 and mcp < 2.2):
the real framework with an offline ``Model`` (``examples/offline_strands.py``), ``callback_handler=None``
(no printing) and an explicit ``model=`` (never Bedrock). Strands has no phone-home."""

from __future__ import annotations

import pytest

pytest.importorskip("strands")
