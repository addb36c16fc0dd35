"""LangGraph tests need the ``langgraph`` extra; the offline parts live in lg_support.py."""

import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph")
sys.path.insert(0, str(Path(__file__).resolve().parent))
