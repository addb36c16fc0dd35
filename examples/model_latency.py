"""Realistic model latency for the offline models: ``OFFLINE_MODEL_LATENCY`` (seconds, default 0)
is how long each offline model call takes, spent in ``await think()`` inside the call (the event
loop keeps serving other requests meanwhile). Real agents spend 3-60 s per model call; the
realistic-latency tests and the demo's slow turn set it (``tests/collector/test_real_traffic.py``)."""

from __future__ import annotations

import asyncio
import os


def latency() -> float:
    """Seconds per model call (``OFFLINE_MODEL_LATENCY``; 0 when unset or malformed)."""
    try:
        return max(0.0, float(os.environ.get("OFFLINE_MODEL_LATENCY") or 0))
    except ValueError:
        return 0.0


async def think() -> None:
    """Spend one model call's latency (nothing when it is 0)."""
    seconds = latency()
    if seconds:
        await asyncio.sleep(seconds)
