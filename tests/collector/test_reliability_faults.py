# SPDX-License-Identifier: Apache-2.0
"""Faults, end to end (docs/reliability.md): the shipped two-tier configs as real processes on
127.0.0.1, agent-shaped traces from loadgen.py (the SDK's BatchSpanProcessor and OTLP exporter with
its retries), and a collector process killed (SIGKILL) or stopped (SIGTERM) and started again 3 s
later. Ground truth is what the sender's exporter reported acknowledged.

- Every acknowledged span reaches the backend (tier 1's raw path), whichever process dies.
- Every acknowledged span is judged, whichever process dies: tier 1's queues are on disk, and tier
  2's durable intake keeps each request on disk until ack_hold says its verdicts are exported, so
  after a SIGKILL it sends again what was in flight. A span judged twice carries
  agent_identity.verdict.duplicate on its second verdict, which no counter counts again
  (agent_identity_hops never exceeds the traces sent).
- Nothing is given up on: `agent_identity:unjudged_spans:increase15m` (spans an exporter of the
  judging path dropped) stays 0, in our scrape totals and in a real Prometheus scraping the run.
- A restart never yields a mismatch, and no collector log carries a conversation, execution or
  delegation id."""

from __future__ import annotations

import os
import re
import signal
import time

import collector_support as cs
import pytest
import reliability_support as rs
import yaml

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]

TRACES, RATE = 240, 30  # 8 s of sending, 1,200 spans
DOWN = 3.0  # seconds between the fault and the restart
SCRAPE_EVERY = 0.25  # our scraper (Tier.last); the real Prometheus scrapes every 1 s
# `make test-reliability` also runs the load-limit case (1,200 traces at 100/s); `make test` does not.
FULL = os.environ.get("AGENT_IDENTITY_RELIABILITY_FULL") == "1"
JUDGE_EXPORTERS = ("load_balancing", "otlp_grpc/judge")  # the judging path's exporters


def _wait_backend_has(dep: rs.Deployment, acked: set, timeout: float = 60) -> None:
    def has_all():
        got = set(rs.span_keys(dep.backend_spans()))
        return not (acked - got)

    cs.wait_for(has_all, timeout, "every acknowledged span in the backend")


def _wait_judged(dep: rs.Deployment, acked: set, timeout: float = 60) -> None:
    """Every acknowledged span in tier 2's verdict file, and both judging queues empty (nothing in
    flight that could still be judged again), then one last scrape."""
    cs.wait_for(lambda: acked <= set(rs.span_keys(dep.tier2_spans())), timeout, "every acknowledged span judged")

    def queues_empty():
        dep.scrape_now()
        return (
            rs.metric_sum(dep.tier1.last[-1], "otelcol_exporter_queue_size", exporter="load_balancing") == 0
            and rs.metric_sum(dep.tier2.last[-1], "otelcol_exporter_queue_size", exporter="otlp_grpc/judge") == 0
        )

    cs.wait_for(queues_empty, timeout, "the judging queues empty")


def _alert_expr(name: str) -> str:
    rules = yaml.safe_load((cs.CONFIGS / "alerts" / "agent-identity.rules.yaml").read_text())
    return next(r["expr"] for g in rules["groups"] for r in g["rules"] if r.get("alert") == name)


def _unjudged_counted(dep: rs.Deployment) -> float:
    """The recording rule on our scrape totals: spans the judging path's exporters gave up on (a send
    failed by the shutdown stays in the persistent queue: not given up on)."""
    return sum(
        tier.total(name, {"error_type": "Shutdown"}, exporter=e)
        for tier in (dep.tier1, dep.tier2)
        for e in JUDGE_EXPORTERS
        for name in ("otelcol_exporter_send_failed_spans", "otelcol_exporter_enqueue_failed_spans")
    )


def _run(tmp_path, role: str, sig, prometheus: bool = False, traces: int = TRACES, rate: float = RATE) -> dict:
    dep = rs.Deployment(tmp_path)
    prom = None
    try:
        if prometheus:
            prom = cs.start_prometheus(
                tmp_path / "prom", [f"127.0.0.1:{dep.ports[r]['metrics_port']}" for r in ("tier1", "tier2")]
            )
        dep.scrape_in_background(SCRAPE_EVERY)
        out = tmp_path / "loadgen.json"
        gen = rs.start_loadgen(dep.endpoint, out, traces=traces, rate=rate, timeout=30)
        if sig is not None:
            time.sleep(traces / rate * 0.4)
            victim = getattr(dep, role).current
            victim.proc.send_signal(sig)
            victim.proc.wait(timeout=60)  # a bound, not a timing assertion
            time.sleep(DOWN)
            dep.start(role)
        result = rs.finish_loadgen(gen, out)
        acked = rs.key_set(result["acked"])
        assert acked, result["stderr"][-2000:]
        _wait_backend_has(dep, acked)
        _wait_judged(dep, acked)
        backend = rs.span_keys(dep.backend_spans())
        tier2_spans = dep.tier2_spans()
        tier2 = rs.span_keys(tier2_spans)
        judged = acked & set(tier2)
        first = [
            s
            for s in tier2_spans
            if "agent_identity.hop.result" in s.attributes and not s.attributes.get("agent_identity.verdict.duplicate")
        ]
        figures = {
            "created": len(result["created"]),
            "acked": len(acked),
            "sender_failed": result["failed"],
            "backend_unique": len(acked & set(backend)),
            "backend_duplicates": sum(backend.values()) - len(backend),
            "tier2_unique": len(judged),
            "tier2_duplicates": sum(tier2.values()) - len(tier2),
            "unjudged_true": len(acked - judged),
            "unjudged_counted": _unjudged_counted(dep),
            "verdicts": dict(rs.verdicts(tier2_spans)),
            "duplicate_verdicts": sum(1 for s in tier2_spans if s.attributes.get("agent_identity.verdict.duplicate")),
            # verdict spans not marked duplicate, counted again (a re-judgement the memory missed)
            "unmarked_repeats": len(first) - len(rs.span_keys(first)),
            "hops_counted": dep.tier2.total("agent_identity_hops"),
            "duplicate_verdicts_counted": dep.tier2.total("agent_identity_duplicate_verdicts"),
            "mismatches_counted": dep.tier2.total("agent_identity_mismatches"),
            "no_callee_counted": dep.tier2.total("agent_identity_no_callee"),
        }
        if prom is not None:
            figures["prometheus"] = _alert_check(prom)
        figures["ids_in_logs"] = rs.ids_in_logs(tmp_path, result["ids"])
        print(role, sig, figures)
        # At the default log level, through kills, restarts, errors and retries: no conversation,
        # execution or delegation id in any collector log.
        assert figures["ids_in_logs"] == {}
        return figures
    finally:
        dep.stop()
        if prom is not None:
            prom.stop()


def _alert_check(prom: cs.Prometheus) -> dict:
    """TraceContextLost in a real Prometheus that scraped the run: the alert's expression, and its
    orphaned-spans arm on the counters' totals (a counter that appears with its first increment has
    no rate yet, and these runs are shorter than the rules' 15-minute windows)."""
    expr = _alert_expr("AgentIdentityTraceContextLost")
    arm = expr[expr.index("sum(rate(agent_identity_unresolved") : expr.rindex(")")]
    totals = re.sub(r"rate\((.*?)\[15m\]\)", r"\1", arm)
    time.sleep(3)  # two more scrapes and rule evaluations
    unjudged = [float(r["value"][1]) for r in prom.query("agent_identity:unjudged_spans:increase15m")]
    return {
        "alert": prom.query(expr),
        "orphans_explain_no_callee": bool(prom.query(totals)),
        "arm": totals,
        "unjudged": unjudged,
    }


def _assert_judged_once(f: dict, traces: int = TRACES) -> None:
    """Every acknowledged span judged, nothing given up on, no verdict counted twice, no mismatch."""
    assert f["tier2_unique"] == f["acked"] and f["unjudged_true"] == 0, f
    assert f["unjudged_counted"] == 0, f
    # A verdict given again is marked and counted apart, never in agent_identity_hops.
    assert f["unmarked_repeats"] == 0, f
    assert f["hops_counted"] <= traces, f
    flagged = {r: n for r, n in f["verdicts"].items() if r in ("context_changed", "state_not_resumed")}
    assert flagged == {} and f["mismatches_counted"] == 0, f


def test_no_fault_baseline(tmp_path):
    f = _run(tmp_path, "tier2", None)
    assert f["acked"] == f["created"] == TRACES * 5
    assert f["backend_unique"] == f["acked"] and f["backend_duplicates"] == 0
    _assert_judged_once(f)
    assert f["verdicts"] == {"continued": TRACES} and f["hops_counted"] == TRACES
    assert f["duplicate_verdicts"] == 0 and f["no_callee_counted"] == 0


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_tier1_dies(tmp_path, sig):
    f = _run(tmp_path, "tier1", sig, prometheus=sig == signal.SIGKILL)
    assert f["backend_unique"] == f["acked"] > TRACES * 5 * 0.9
    # Tier 1's judging queue is on disk too: every acknowledged span is judged, once counted.
    _assert_judged_once(f)
    if "prometheus" in f:
        # The senders' retries arrived after wait_duration: fragments, no_callee on the caller's
        # half, unresolved on the callee's. The share is high, yet it is not a page; and nothing
        # was given up on, so the unjudged rule, evaluated by Prometheus, is 0 (present: the
        # tier-1 exporters' failure counters are served at 0).
        p = f["prometheus"]
        assert p["alert"] == [], p
        if f["no_callee_counted"]:
            assert p["orphans_explain_no_callee"], p
        assert p["unjudged"] == [0.0], p


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_tier2_dies(tmp_path, sig):
    f = _run(tmp_path, "tier2", sig, prometheus=True)
    # The raw path does not go through tier 2: no acknowledged span lost.
    assert f["backend_unique"] == f["acked"] > TRACES * 5 * 0.9
    # The durable intake: what tier 2 held when it died is judged after the restart.
    _assert_judged_once(f)
    assert f["prometheus"]["unjudged"] == [0.0], f["prometheus"]


@pytest.mark.skipif(not FULL, reason="the load-limit case runs in make test-reliability")
def test_tier2_sigkill_at_the_load_limit(tmp_path):
    f = _run(tmp_path, "tier2", signal.SIGKILL, traces=1200, rate=100)
    assert f["backend_unique"] == f["acked"] > 1200 * 5 * 0.9
    _assert_judged_once(f, traces=1200)


def test_tier1_queue_survives_its_sigkill_while_downstream_is_down(tmp_path):
    """Tier 2 and the backend are down: tier 1 acknowledges into its persistent queues, is SIGKILLed
    with them full, and after the restart (downstream back) delivers and gets judged every span."""
    dep = rs.Deployment(tmp_path, start_backend=False, start_tier2=False)
    try:
        out = tmp_path / "loadgen.json"
        result = rs.finish_loadgen(rs.start_loadgen(dep.endpoint, out, traces=100, rate=50), out)
        acked = rs.key_set(result["acked"])
        assert len(acked) == 500, result["stderr"][-2000:]
        dep.scrape_now()
        queued = {
            e: rs.metric_sum(dep.tier1.last[-1], "otelcol_exporter_queue_size", exporter=e)
            for e in ("otlp_grpc/backend", "load_balancing")
        }
        assert all(queued.values()), queued  # what tier 1 holds is only in its queues
        dep.tier1.current.kill()
        dep.start("backend")
        dep.start("tier2")
        dep.start("tier1")
        _wait_backend_has(dep, acked)
        cs.wait_for(lambda: acked <= set(rs.span_keys(dep.tier2_spans())), 60, "every span judged")
        v = rs.verdicts(dep.tier2_spans())
        print("queued at the kill (requests):", queued, "verdicts:", dict(v))
        assert v.get("context_changed", 0) == v.get("state_not_resumed", 0) == 0
    finally:
        dep.stop()


def test_restart_mid_turn_counts_the_late_part_unresolved_once(tmp_path):
    """A single-node collector stopped (SIGTERM) and started again in the middle of a turn. Before
    the restart it got the callee's three request-handler spans (ended early, as an a2a-sdk server's
    are); after it, the 13 spans below them and the rest of the hop. The restarted collector never
    saw their parents: each of the 13 is marked unresolved, and the part they form is counted once
    (issue 32), not 13 times. The hop itself is judged (a first turn: no contextId requested)."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    col = cs.start_collector("single-node.yaml", tmp_path, HOP_WINDOW="3s", DRAIN_DELAY="2s")
    tracers, providers = {}, []
    for svc in ("orchestrator", "specialist"):
        provider = TracerProvider(resource=Resource.create({"service.name": svc}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{col.endpoint}/v1/traces")))
        providers.append(provider)
        tracers[svc] = provider.get_tracer("restart-test")
    orch, spec = tracers["orchestrator"], tracers["specialist"]
    conv = {"gen_ai.conversation.id": "conv-restart"}
    try:
        root = orch.start_span(
            "invoke_agent orchestrator", attributes={"gen_ai.operation.name": "invoke_agent", **conv}
        )
        send = orch.start_span(
            "invoke_agent specialist",
            trace.set_span_in_context(root),
            kind=trace.SpanKind.CLIENT,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "specialist", **conv},
        )
        entry = spec.start_span("POST /", trace.set_span_in_context(send), kind=trace.SpanKind.SERVER, attributes=conv)
        agent = spec.start_span(
            "invoke_agent specialist",
            trace.set_span_in_context(entry),
            attributes={"gen_ai.operation.name": "invoke_agent", "agent_identity.conversation.resumed": True, **conv},
        )
        handlers = [spec.start_span(f"handler {i}", trace.set_span_in_context(agent)) for i in range(3)]
        for h in handlers:
            h.end()  # exported now: the collector before its restart gets them
        col.stop()  # SIGTERM: the drain judges and writes what it holds
        col = cs.restart_collector(col)
        late = [spec.start_span(f"event {i}", trace.set_span_in_context(handlers[i % 3])) for i in range(13)]
        for s in (*late, agent, entry, send, root):
            s.end()

        def judged():
            spans = rs.read_spans_tolerant(col.spans_file)
            marked = [s for s in spans if s.attributes.get("agent_identity.hop.result") == "unresolved"]
            return len([s for s in marked if s.name.startswith("event ")]) == 13 and spans

        spans = cs.wait_for(judged, 60, "the 13 late spans judged")
        samples = rs.parse_metrics(col.metrics())
        figures = {
            "verdicts": dict(rs.verdicts(spans)),
            "unresolved_counted": {
                svc: rs.metric_sum(samples, "agent_identity_unresolved", callee_service=svc)
                for svc in ("orchestrator", "specialist")
            },
        }
        print(figures)
        # the restarted process counts the 13 late spans' part once; the hop between is whole
        assert figures["unresolved_counted"] == {"orchestrator": 0, "specialist": 1}, figures
        assert next(s for s in spans if s.name == "POST /").attributes["agent_identity.hop.result"] == "first_turn"
    finally:
        for p in providers:
            p.shutdown()
        col.stop()
