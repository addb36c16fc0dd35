"""Specialist A2A servers in their own processes (under ``opentelemetry-instrument``, console
exporter), whose spans the tests read back from stdout while the server keeps running."""

from __future__ import annotations

import json
import threading
import time

import pytest

import a2a_harness as h


class ServerProcess:
    """A specialist process; ``spans()`` parses what its console exporter printed so far."""

    def __init__(self, service: str, forgetful: bool) -> None:
        self.proc, self.url = h.start_specialist(service, None, forgetful=forgetful)
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


def trace_hex(value) -> str:
    """A trace id as 32 hex digits (console-exporter ids are ``0x``-prefixed strings, SDK ids ints)."""
    return value[2:] if isinstance(value, str) else format(value, "032x")


def span_hex(value) -> str:
    """A span id as 16 hex digits."""
    return value[2:] if isinstance(value, str) else format(value, "016x")
