"""`make demo`: the whole product on real input, on 127.0.0.1 only.

Starts the collector (``collector-config/single-node.yaml`` on free ports), two specialist A2A
services under ``opentelemetry-instrument`` (a correct one, and a forgetful one that starts a new
conversation on every request), and the orchestrator (Agent Framework, offline model) that holds
one conversation of several turns with each; turn 2 of the first is re-sent after the specialist
completed it. Then prints, per conversation, each hop as the collector marked it and the counts
read from the collector's Prometheus endpoint.

Exit status: 0 when every forgetful hop is flagged, no correct hop is, and the retried delegation
is counted as exactly one duplicate execution; 1 otherwise; 2 when the demo could not run.
Options: ``--collector PATH`` (default ``collector/_build/otelcol-agentidentity``), ``--turns N``,
``--keep`` (leave the work directory with spans.jsonl and logs).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import a2a_harness as h  # noqa: E402
import zipkin_backend as zb  # noqa: E402

CORRECT, FORGETFUL = "specialist", "forgetful-specialist"


def report(records: list[dict], spans: list[h.Span]) -> list[str]:
    """Print the hops per conversation; return the problems found (empty: all as expected)."""
    by_trace: dict[str, list[h.Span]] = {}
    for s in h.hop_spans(spans):
        by_trace.setdefault(s.trace_id, []).append(s)
    by_id = {s.span_id: s for s in spans}
    problems: list[str] = []
    for conversation in (CORRECT, FORGETFUL):
        recs = [r for r in records if r["conversation"] == conversation]
        context = recs[0]["context_id"] if recs else None
        print(f"\nconversation with {conversation} (A2A contextId {context})")
        seen: set[str] = set()
        for rec in recs:
            hops = sorted(by_trace.get(rec["trace_id"], []), key=lambda s: s.span_id)
            if rec["trace_id"] in seen:
                continue
            seen.add(rec["trace_id"])
            if not hops:
                problems.append(f"{conversation} turn {rec['turn']}: the collector reported no hop")
            for i, hop in enumerate(_in_order(hops), 1):
                problems += _check(conversation, rec["turn"], hop)
                a = hop.attributes
                flags = [f for f, on in (("MISMATCH", a.get("agent_identity.hop.mismatch")),
                                         ("DUPLICATE", a.get("agent_identity.delegation.duplicate"))) if on]
                caller = by_id.get(hop.parent_id)
                delegation = caller.attributes.get("agent_identity.delegation.id", "?") if caller else "?"
                print(f"  turn {rec['turn']} send {i}: {hop.attributes.get('agent_identity.hop.caller.service.name')}"
                      f" -> {hop.service}  delegation {delegation[:12]}  asked {a.get('agent_identity.hop.caller.conversation.id')}"
                      f"  agent used {a.get('agent_identity.hop.callee.conversation.id')}"
                      f"  result={a.get('agent_identity.hop.result')}  {' '.join(flags) or 'ok'}")
    duplicates = [s for s in h.hop_spans(spans) if s.attributes.get("agent_identity.delegation.duplicate")]
    retried = {r["trace_id"] for r in records if r["attempt"] > 1}
    if len(duplicates) != len(retried) or any(s.trace_id not in retried for s in duplicates):
        problems.append(f"expected {len(retried)} duplicate execution(s) on the retried turn, "
                        f"the collector flagged {len(duplicates)}")
    return problems


def _in_order(hops: list[h.Span]) -> list[h.Span]:
    # the first execution of a retried delegation is the unflagged one
    return sorted(hops, key=lambda s: bool(s.attributes.get("agent_identity.delegation.duplicate")))


def _check(conversation: str, turn: int, hop: h.Span) -> list[str]:
    a = hop.attributes
    if conversation == FORGETFUL and a.get("agent_identity.hop.mismatch") is not True:
        return [f"forgetful hop of turn {turn} not flagged (result={a.get('agent_identity.hop.result')})"]
    if conversation == CORRECT and (a.get("agent_identity.hop.mismatch") or a.get("agent_identity.hop.result") != "continued"):
        return [f"correct hop of turn {turn} flagged (result={a.get('agent_identity.hop.result')})"]
    return []


def metrics(port: int, expected_hops: int) -> dict[str, float]:
    """Print the collector's counters (once they count ``expected_hops``); return the ones checked."""
    deadline, samples = time.monotonic() + 15, []
    while time.monotonic() < deadline:
        samples = h.scrape(port)
        if h.metric_sum(samples, "agent_identity_hops") >= expected_hops:
            break
        time.sleep(0.5)
    print("\ncollector metrics (Prometheus, http://127.0.0.1:%d/metrics)" % port)
    for name, labels, value in sorted(samples, key=lambda x: (x[0], sorted(x[1].items()))):
        print(f"  {name}{{{', '.join(f'{k}={v}' for k, v in sorted(labels.items()))}}} {value:g}")
    got = {
        "mismatches into the forgetful specialist": h.metric_sum(samples, "agent_identity_mismatches", callee_service=FORGETFUL),
        "mismatches into the correct specialist": h.metric_sum(samples, "agent_identity_mismatches", callee_service=CORRECT),
        "duplicate executions orchestrator -> specialist": h.metric_sum(
            samples, "agent_identity_duplicate_executions", caller_service="orchestrator", callee_service=CORRECT),
    }
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collector", default=str(h.ROOT / "collector" / "_build" / "otelcol-agentidentity"))
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if not Path(args.collector).exists():
        print(f"demo: no collector at {args.collector}; run `make collector`", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="agent-identity-demo-"))
    procs = []
    collector = zipkin = None
    try:
        zipkin = zb.start_for_demo(work)  # before the collector: it exports to Zipkin too
        collector = h.start_collector(args.collector, work)
        print(f"collector: OTLP/HTTP {collector.endpoint}, spans -> {collector.spans_file}")
        specialists: list[tuple[str, str]] = []
        for name, forgetful in ((CORRECT, False), (FORGETFUL, True)):
            proc, url = h.start_specialist(name, collector.endpoint, forgetful=forgetful)
            procs.append(proc)
            print(f"{name}: A2A server at {url}{' (forgets the contextId it is given)' if forgetful else ''}")
            specialists.append((name, url))
        records, orch = h.run_orchestrator(specialists, collector.endpoint, turns=args.turns, retry_turn=2)
        print("\norchestrator:\n  " + "\n  ".join(orch.stderr.strip().splitlines()[-2 * args.turns:]))
        spans = h.wait_for_hops(collector.spans_file, len(records))
        problems = report(records, spans)
        counts = metrics(collector.metrics_port, len(records))
        forgetful_hops = len([r for r in records if r["conversation"] == FORGETFUL])
        expected = {"mismatches into the forgetful specialist": forgetful_hops,
                    "mismatches into the correct specialist": 0,
                    "duplicate executions orchestrator -> specialist": 1}
        for what, want in expected.items():
            if counts[what] != want:
                problems.append(f"metric {what}: {counts[what]:g}, expected {want}")
        zb.show_links(zipkin, records, spans)  # one link per conversation, one to the flagged hops; waits for Enter
    except Exception as exc:  # noqa: BLE001 - report and exit 2
        print(f"demo could not run: {exc}", file=sys.stderr)
        return 2
    finally:
        for proc in procs:
            h.stop(proc)
        if collector is not None:
            collector.stop()
        if zipkin is not None:
            zipkin.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if problems:
        print("\nFAIL:\n  " + "\n  ".join(problems))
        return 1
    print(f"\nOK: {forgetful_hops} forgetful hop(s) flagged, no correct hop flagged, the retried delegation "
          "counted as 1 duplicate execution")
    return 0


if __name__ == "__main__":
    sys.exit(main())
