"""Fixtures of the boundary-guard tests: echo servers on 127.0.0.1 (subprocesses), a global
propagator that includes W3C baggage, identity planted in baggage by the application, and the
real instrumentor with or without an allowlist."""

from __future__ import annotations

import socket
import stat
import subprocess
import sys
import time

import pytest
from guard_helpers import APP_IDENTITY_KEYS, PLANTED, SERVERS, free_port
from opentelemetry import baggage, context, propagate, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator


def _start(mode: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVERS), mode, str(port)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"{mode} echo server exited") from None
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{mode} echo server did not start")


@pytest.fixture(scope="session")
def servers():
    """Two MCP streamable-HTTP servers and two HTTP echo endpoints: ``{"mcp_ok": url, ...}``."""
    procs, urls = [], {}
    try:
        for key, mode, path in (
            ("mcp_ok", "mcp-http", "/mcp"),
            ("mcp_other", "mcp-http", "/mcp"),
            ("http_ok", "http", "/tool"),
            ("http_other", "http", "/tool"),
        ):
            proc, port = _start(mode)
            procs.append(proc)
            urls[key] = f"http://127.0.0.1:{port}{path}"
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


@pytest.fixture(scope="session")
def stdio_commands(tmp_path_factory):
    """Two launchers of the stdio MCP echo server with distinct command names: ``{"ok": path, "other": path}``."""
    folder = tmp_path_factory.mktemp("stdio")
    out = {}
    for key in ("ok", "other"):
        path = folder / f"echo-mcp-{key}"
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SERVERS}" mcp-stdio\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        out[key] = str(path)
    return out


@pytest.fixture
def planted(tracer_provider):
    """Global propagator = traceparent + baggage; identity planted in baggage; a span is current."""
    previous = propagate.get_global_textmap()
    propagate.set_global_textmap(CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()]))
    ctx = context.get_current()
    for key, value in PLANTED.items():
        ctx = baggage.set_baggage(key, value, ctx)
    token = context.attach(ctx)
    try:
        with trace.get_tracer("guard-tests").start_as_current_span("app"):
            yield
    finally:
        context.detach(token)
        propagate.set_global_textmap(previous)


@pytest.fixture
def guard(tracer_provider, exporter):
    """``guard(allowlist=[...])`` installs the real instrumentor (uninstalled after the test)."""
    from otel_agent_identity import AgentIdentityInstrumentor

    inst = AgentIdentityInstrumentor()

    def install(allowlist=()):
        inst.instrument(tracer_provider=tracer_provider, allowlist=list(allowlist), baggage_keys=APP_IDENTITY_KEYS)
        return inst

    yield install
    inst.uninstrument()
