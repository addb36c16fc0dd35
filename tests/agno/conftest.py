"""Agno tests: real agno, the offline model, telemetry off, and no connection leaving the process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["AGNO_TELEMETRY"] = "false"  # Agno posts session_id/run_id to its vendor by default
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest

pytest.importorskip("agno")

from net_guard import no_network  # noqa: F401  (autouse: the network guard on every test here)
