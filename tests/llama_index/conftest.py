"""LlamaIndex tests: real llama-index-core agent workflows on the offline model
(``examples/offline_llama_index.py``), and no connection leaving the process. LlamaIndex has no
telemetry of its own to switch off (no phone-home, no OpenTelemetry); every agent gets its model
explicitly, so ``Settings.llm``'s OpenAI default is never resolved, and the guard below proves it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest

pytest.importorskip("llama_index.core")

from net_guard import no_network  # noqa: F401  (autouse: the network guard on every test here)
