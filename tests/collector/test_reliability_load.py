# SPDX-License-Identifier: Apache-2.0
"""At the limit, on loopback (docs/reliability.md), with the shipped single-node config:

- memory_limiter: prompt-sized spans (a 32 KiB ``gen_ai.input.messages`` on each chat span) in
  rate steps held 10 s by groupbytrace push the heap over the limit; the receiver answers 503, the
  collector counts the refusals, the SDK retries, and once the load drops everything refused is
  delivered and judged (a retry later than wait_duration as a fragment, never a mismatch). Peak RSS
  (VmHWM) stays under the memory budget: ``limit_mib`` (also GOMEMLIMIT) plus the collector's non-heap
  memory (``NON_HEAP_MIB``).
- Throughput with and without agentidentity, one run, the same pre-encoded agent-shaped requests
  replayed to two collectors side by side (single-node and tier 2): collector CPU seconds per span.
- groupbytrace ``num_traces`` overflow: evicted traces are counted, never a false mismatch."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import collector_support as cs
import pytest
import reliability_support as rs

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]

LIMIT_MIB, SPIKE_MIB = 160, 40
NON_HEAP_MIB = 192  # binary pages (an 80 MB binary), goroutine stacks, runtime, freed pages not yet
#                    returned: RSS above the Go heap limit (peaks of 244-313 MiB measured at limit 160)
CONFIGS_DIR = Path(__file__).parent / "configs"
WITHOUT = str(CONFIGS_DIR / "without-agentidentity.yaml")


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])  # kB
    raise KeyError(field)


def _cpu_seconds(pid: int) -> float:
    parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / 100  # utime + stime, clock ticks (USER_HZ 100)


def test_memory_limiter_refuses_then_the_sdk_delivers(tmp_path):
    col = cs.start_collector(
        "single-node.yaml",
        tmp_path,
        MEMORY_LIMIT_MIB=str(LIMIT_MIB),
        MEMORY_SPIKE_MIB=str(SPIKE_MIB),
        GOMEMLIMIT=f"{LIMIT_MIB}MiB",
        GROUPBYTRACE_WAIT="10s",
        DRAIN_DELAY="1s",
        AGENT_IDENTITY_SPANS_FILE_MAX_MB="2000",
    )
    try:
        out = tmp_path / "load.json"
        result = rs.finish_loadgen(
            rs.start_loadgen(col.endpoint, out, rates="50:4,400:12,20:10", payload_bytes=32768, timeout=60), out
        )
        samples = rs.parse_metrics(col.metrics())
        refused = rs.metric_sum(samples, "otelcol_processor_memory_limiter_refused_spans")
        acked = rs.key_set(result["acked"])

        def judged():
            return acked <= set(rs.span_keys(rs.read_spans_tolerant(col.spans_file)))

        cs.wait_for(judged, 60, "every acknowledged span judged and written")
        peak_mib = _status(col.proc.pid, "VmHWM") / 1024
        spans = rs.read_spans_tolerant(col.spans_file)
        figures = {
            "steps": result["steps"],
            "created": len(result["created"]),
            "acked": len(acked),
            "refused_spans": refused,
            "peak_rss_mib": round(peak_mib, 1),
            "limit_mib": LIMIT_MIB,
            "budget_mib": LIMIT_MIB + NON_HEAP_MIB,
            "sdk_retries_logged": result["stderr"].count("Service Unavailable"),
            "verdicts": dict(rs.verdicts(spans)),
        }
        print(json.dumps(figures))
        # Refusals happened and were visible: on the collector's counters and as a retryable 503.
        assert refused > 0 and rs.metric_sum(samples, "otelcol_receiver_refused_spans") == refused
        assert figures["sdk_retries_logged"] > 0
        # The SDK's retries delivered everything once the load dropped; all of it judged.
        assert len(acked) == figures["created"] and result["failed"] == 0
        # A batch the SDK retried for longer than wait_duration lands as a fragment of its trace:
        # judged no_callee/unresolved, never a mismatch (and not a page: docs/reliability.md).
        traces, v = figures["created"] // 5, figures["verdicts"]
        flagged = {r: n for r, n in v.items() if r in ("context_changed", "state_not_resumed")}
        assert flagged == {}, v
        # every trace is judged continued, or (a fragment) its caller half no_callee / its callee half
        # callee_unknown (the agent span in the other fragment); each fragment leaves unresolved orphans
        assert v.get("continued", 0) + v.get("no_callee", 0) + v.get("callee_unknown", 0) == traces, v
        assert v.get("unresolved", 0) >= v.get("no_callee", 0), v
        assert peak_mib < LIMIT_MIB + NON_HEAP_MIB, figures
    finally:
        col.stop()


THROUGHPUT = {  # name: (config, overlays for both, overlay that removes agentidentity)
    "single-node": ("single-node.yaml", (), WITHOUT),
    "tier2": (
        "tier2-identity.yaml",
        (str(CONFIGS_DIR / "tier2-http.yaml"),),
        str(CONFIGS_DIR / "tier2-without-agentidentity.yaml"),
    ),
}
# `make test-reliability` replays 20,000 traces (100,000 spans) per collector, `make test` 4,000.
THROUGHPUT_TRACES = 20_000 if os.environ.get("AGENT_IDENTITY_RELIABILITY_FULL") == "1" else 4_000


@pytest.mark.parametrize("pipeline", list(THROUGHPUT))
def test_throughput_with_and_without_agentidentity(tmp_path, pipeline):
    """The same pre-encoded agent-shaped requests (loadgen's traces, made by the SDK, backfill on) to
    two collectors side by side, one with and one without agentidentity: collector CPU per span.
    The sender replays encoded bytes, so the collectors are the bottleneck."""
    config, overlays, without = THROUGHPUT[pipeline]
    requests, spans = rs.agent_requests(THROUGHPUT_TRACES)
    # The shipped timers (tier 2: ACK_TIMEOUT 330 s, ACK_RESEND_AFTER 15 s): the spans groupbytrace
    # drops as they reach a trace it is releasing are passed on again by ack_hold after 15 s, not
    # after the 330 s timeout (this replay stalled on them, with and without agentidentity)
    env = {
        "GROUPBYTRACE_WAIT": "1s",
        "DRAIN_DELAY": "1s",
        "AGENT_IDENTITY_SPANS_FILE_MAX_MB": "2000",
    }
    cols = {
        "with": cs.start_collector(config, tmp_path, name="with", extra_configs=overlays, **env),
        "without": cs.start_collector(config, tmp_path, name="without", extra_configs=(*overlays, without), **env),
    }
    try:
        cpu0 = {k: _cpu_seconds(c.proc.pid) for k, c in cols.items()}
        t0 = time.monotonic()
        rs.replay([c.endpoint for c in cols.values()], requests)

        def written(c: cs.Collector) -> bool:
            return rs.metric_sum(rs.parse_metrics(c.metrics()), "otelcol_exporter_sent_spans", exporter="file") >= spans

        for k, c in cols.items():
            cs.wait_for(lambda c=c: written(c), 120, f"{k}: every span written")
        written_s = round(time.monotonic() - t0, 1)  # replay start to every span of both written
        cpu = {k: _cpu_seconds(c.proc.pid) - cpu0[k] for k, c in cols.items()}
        figures = {
            k: {"spans": spans, "collector_cpu_s": round(cpu[k], 2), "spans_per_cpu_s": round(spans / cpu[k])}
            for k in cols
        }
        figures["judging_share_of_cpu"] = round((cpu["with"] - cpu["without"]) / cpu["with"], 3)
        figures["written_after_s"] = written_s
        figures["resent"] = {k: c.log.read_text().count("passed on again") for k, c in cols.items()}
        v = rs.verdicts(rs.read_spans_tolerant(cols["with"].spans_file))
        figures["verdicts"] = dict(v)
        print(pipeline, json.dumps(figures))
        # Every trace judged continued, never flagged. On a loaded machine a trace whose spans reach
        # groupbytrace more than wait_duration apart (tier 2's loopback hop) is judged as two
        # fragments: its caller half no_callee, its callee half callee_unknown or unresolved (and a
        # request re-sent by the loopback exporter is judged again).
        assert {r for r in v if r in ("context_changed", "state_not_resumed")} == set(), v
        assert v["continued"] + v.get("no_callee", 0) >= THROUGHPUT_TRACES, v
        assert v["continued"] >= 0.9 * THROUGHPUT_TRACES, v
        assert rs.verdicts(rs.read_spans_tolerant(cols["without"].spans_file)) == {}
    finally:
        for c in cols.values():
            c.stop()


def test_groupbytrace_overflow_is_counted_never_a_mismatch(tmp_path):
    col = cs.start_collector(
        "single-node.yaml", tmp_path, GROUPBYTRACE_NUM_TRACES="20", GROUPBYTRACE_WAIT="2s", DRAIN_DELAY="3s"
    )
    try:
        out = tmp_path / "load.json"
        result = rs.finish_loadgen(rs.start_loadgen(col.endpoint, out, traces=300, rate=100), out)
        acked = rs.key_set(result["acked"])

        samples = rs.parse_metrics(col.metrics())  # evictions happen on arrival: final now

        def judged():  # the traces still held when the load ended are released after wait_duration
            return rs.verdicts(rs.read_spans_tolerant(col.spans_file)).get("continued", 0) > 0

        cs.wait_for(judged, 120, "a verdict on a trace that was not evicted")  # bounded, not timed
        col.stop()  # SIGTERM: the drain lets the last released traces out
        spans = rs.read_spans_tolerant(col.spans_file)
        written = set(rs.span_keys(spans)) & acked
        figures = {
            "acked": len(acked),
            "written": len(written),
            "evicted": rs.metric_sum(samples, "otelcol_processor_groupbytrace_traces_evicted"),
            "verdicts": dict(rs.verdicts(spans)),
        }
        print(json.dumps(figures))
        # The overflow happened and is counted; evicted spans are dropped (never judged, never exported
        # by this pipeline: the raw path of the two-tier design keeps them), and nothing is a mismatch.
        assert figures["evicted"] > 0 and len(written) < len(acked)
        assert figures["verdicts"].get("mismatch", 0) == 0 and figures["verdicts"].get("continued", 0) > 0
    finally:
        col.stop()
