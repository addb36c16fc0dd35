"""The real stack of the backend tests, once per module: Zipkin, the collector binary (single-node
config exporting to Zipkin, plus the sessions overlay), three specialists of the demo's shapes (one
that continues, one that answers in a new context, one that keeps the context and loses the state,
each model writing the messages it saw: the ground truth) and the orchestrator (``A2AAgent``, three
turns each, turn 2 to the continuing one re-sent) under ``opentelemetry-instrument``, all on
127.0.0.1. Skipped, with the reason, when the collector,
java or the Zipkin jar is missing."""

from __future__ import annotations

import os
import shutil

import a2a_harness as h
import pytest
import zipkin_backend as zb
from backend_support import COLLECTOR, SESSIONS_OVERLAY, SPECIALISTS, Stack, collector_missing


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    reason = collector_missing() or zb.missing()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("backend")
    zipkin = zb.start_zipkin(work)
    procs, collector = [], None
    saved = dict(os.environ)
    try:
        os.environ.update(zipkin.collector_env())
        collector = h.start_collector(COLLECTOR, work, overlays=(SESSIONS_OVERLAY,))
        specialists, truth = [], work / "truth.jsonl"
        for shape in SPECIALISTS:
            proc, url = h.start_specialist(shape, collector.endpoint, shape=shape, truth=truth)
            procs.append(proc)
            specialists.append((shape, url))
        records, _ = h.run_orchestrator(specialists, collector.endpoint, turns=3, retry_turn=2)
        spans = h.wait_for_hops(collector.spans_file, len(records))
        conversations = zb.conversations_of(records, spans)
        stack = Stack(zipkin, records, h.read_truth(truth), conversations, spans)
        for conversation_id, name in conversations.items():
            zipkin.wait_for_traces(conversation_id, len(stack.traces_of(name)))
        yield stack
    finally:
        os.environ.clear()
        os.environ.update(saved)
        for proc in procs:
            h.stop(proc)
        if collector is not None:
            collector.stop()
        zipkin.stop()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def chromium(tmp_path):
    """``chromium(url, *flags)`` runs headless Debian Chromium on ``url`` (its own profile directory,
    15 s of virtual time for the page's requests); returns the completed process."""
    if not CHROMIUM:
        pytest.skip("chromium is not installed (make system-deps installs Debian's chromium)")
    import subprocess

    def run(url: str, *flags: str) -> subprocess.CompletedProcess:
        cmd = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=15000",
            *flags,
            url,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)

    return run
