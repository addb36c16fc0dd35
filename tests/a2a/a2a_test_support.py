"""Helpers of the A2A e2e tests: a specialist server process whose console-exported spans are
read back from its stdout while it runs, and id formatting."""

from __future__ import annotations

import json
import threading
import time

import a2a_harness as h


class ServerProcess:
    """A specialist process; ``spans()`` parses what its console exporter printed so far."""

    def __init__(self, service: str, forgetful: bool) -> None:
        # a2a-sdk's own method spans stay on here: the SERVER span must still continue the caller
        self.proc, self.url = h.start_specialist(service, None, forgetful=forgetful,
                                                 OTEL_INSTRUMENTATION_A2A_SDK_ENABLED="true")
        self._text: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._text.append(line)

    def spans(self) -> list[dict]:
        decoder, text, out, i = json.JSONDecoder(), "".join(self._text), [], 0
        while (i := text.find("{\n", i)) != -1:
            try:
                span, i = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                break  # a span still being written
            out.append(span)
        return out

    def wait_for(self, predicate, count: int = 1, timeout: float = 20.0) -> list[dict]:
        """Spans matching ``predicate`` once at least ``count`` of them were exported."""
        deadline = time.monotonic() + timeout
        while True:
            found = [s for s in self.spans() if predicate(s)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.1)

    def stop(self) -> None:
        h.stop(self.proc)


def trace_hex(value) -> str:
    """A trace id as 32 hex digits (console-exporter ids are ``0x``-prefixed strings, SDK ids ints)."""
    return value[2:] if isinstance(value, str) else format(value, "032x")


def span_hex(value) -> str:
    """A span id as 16 hex digits."""
    return value[2:] if isinstance(value, str) else format(value, "016x")
