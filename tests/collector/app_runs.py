# SPDX-License-Identifier: Apache-2.0
"""An instrumented Agent Framework app (run it under ``opentelemetry-instrument``) doing ``--runs``
agent runs with the offline chat client, ``--concurrency`` at a time, each a two-turn conversation
turn with a tool call. Prints one JSON line: runs completed, exceptions, the slowest run, the
exporter's export calls on the app's thread and on others (the SDK's worker), RSS
(``/proc/self/statm``) after 20 % of the runs and at the end, spans the SDK ended (a counting span
processor added to the launcher's provider; 0 when the SDK is disabled) and the seconds shutdown
took (the exporter flushing, bounded by its own timeout)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from offline_chat import OfflineChatClient
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from agent_framework import Agent, tool


@tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return "sunny"


class CountingProcessor:
    """A span processor that counts ended spans (proof that the instrumentation ran)."""

    ended = 0

    def on_start(self, span, parent_context=None) -> None:
        pass

    def on_end(self, span) -> None:
        CountingProcessor.ended += 1

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def _on_ending(self, span) -> None:
        pass


EXPORTS = {"app_thread": 0, "other_threads": 0}
_APP_THREAD = threading.get_ident()
_export = OTLPSpanExporter.export


def _counted_export(self, spans):
    """The SDK exporter's export, counting on which thread it runs (the app's must never wait on it)."""
    EXPORTS["app_thread" if threading.get_ident() == _APP_THREAD else "other_threads"] += 1
    return _export(self, spans)


OTLPSpanExporter.export = _counted_export


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=20)
    args = parser.parse_args()
    provider = trace.get_tracer_provider()
    if hasattr(provider, "add_span_processor"):
        provider.add_span_processor(CountingProcessor())
    agent = Agent(client=OfflineChatClient(mode="service", prefix="load"), name="weather", tools=[get_weather])
    done, errors, slowest, rss_early = 0, [], 0.0, None

    async def one(i: int) -> None:
        nonlocal done, slowest
        began = time.monotonic()
        try:
            reply = await agent.run("what's the weather in Paris?", session=agent.create_session())
            assert reply.text, "empty reply"
            done += 1
        except Exception as exc:
            errors.append(repr(exc))
        slowest = max(slowest, time.monotonic() - began)

    began = time.monotonic()
    for start in range(0, args.runs, args.concurrency):
        await asyncio.gather(*(one(i) for i in range(start, min(start + args.concurrency, args.runs))))
        if rss_early is None and start >= args.runs // 5:
            rss_early = rss_mib()
    runs_seconds = time.monotonic() - began
    rss_end = rss_mib()
    shutdown_began = time.monotonic()
    if hasattr(provider, "shutdown"):
        provider.shutdown()
    print(
        json.dumps(
            {
                "runs": done,
                "errors": errors[:5],
                "error_count": len(errors),
                "slowest_run_s": slowest,
                "runs_seconds": runs_seconds,
                "rss_early_mib": rss_early,
                "rss_end_mib": rss_end,
                "spans_ended": CountingProcessor.ended,
                "shutdown_s": time.monotonic() - shutdown_began,
                "provider": type(provider).__name__,
                "exports_on_app_thread": EXPORTS["app_thread"],
                "exports_on_other_threads": EXPORTS["other_threads"],
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
