# SPDX-License-Identifier: Apache-2.0
"""The world of test_real_traffic.py: the collector(s) with their shipped timers, the specialists,
a Prometheus with the shipped alert rules, the supervisor and the crash-retry callers, all at real
speed; then what the collector made of it, next to the ground truth."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import a2a_harness as h
import collector_support as cs

TURNS = 3
LATENCY = "3"  # seconds per model call: the supervisor's plan and summarise, each specialist's answer
REAL_APP_ENV = h.REAL_APP_ENV  # the apps' real defaults: BatchSpanProcessor's 5 s delay
#: the shipped collector configs' own timers (collector_support shortens groupbytrace's wait otherwise)
SHIPPED_COLLECTOR_ENV: dict[str, str | None] = {"GROUPBYTRACE_WAIT": None}
#: specialist service -> (specialist.py shape, whether it really continues a context)
SPECIALISTS = {
    "lg-continues": ("langgraph-thread", True),
    "lg-forgets": ("langgraph-new-thread", False),
    "agno-continues": ("agno-session", True),
    "agno-forgets": ("agno-new-session", False),
    "oai-continues": ("openai-session", True),
    "oai-forgets": ("openai-no-session", False),
    "af-continues": ("session-local", True),
    "af-forgets": ("a2a-executor", False),
}
#: how the client names a new context on turn 1, per framework of the specialist
_MINTED = {"lg": "direct-minted", "oai": "direct-minted", "agno": "a2a-agent-minted", "af": "a2a-agent-minted"}
#: supervisor conversation -> (how it sends: examples/supervisor.py KIND, specialist service)
CONVERSATIONS = {
    **{svc: ("a2a-agent", svc) for svc in SPECIALISTS},
    **{f"{svc}-minted": (_MINTED[svc.split("-")[0]], svc) for svc in SPECIALISTS},
    "af-continues-poll": ("task-poll", "af-continues"),
    "af-continues-subscribe": ("task-subscribe", "af-continues"),
}
#: the payment specialists of the crash-retry: naive, and idempotent on the order (no allowlist needed)
PAYMENTS = {"naive": False, "ledger": True}
FLAGGED = ("context_changed", "state_not_resumed")
#: the mismatch alerts the forgetting specialists fire, as ``(alertname, callee_service)``
MISMATCH_ALERTS = {("AgentIdentityConversationMismatch", svc) for svc, (_, keeps) in SPECIALISTS.items() if not keeps}
SERVER = 2  # OTLP span kind
#: seconds after the traffic for every span to leave the collector (all arrive within ~10 s; the
#: join's agent_wait and first_turn_wait are 15 s)
VERDICT_TIMEOUT = 90.0


@dataclass
class World:
    """What one topology's run produced (see :func:`run_world`)."""

    topology: str
    work: Path
    records: list[dict] = field(default_factory=list)  # the supervisor's, one per send
    truth: dict[str, list[int]] = field(default_factory=dict)  # trace id -> messages the callee's model saw
    spans: list[h.Span] = field(default_factory=list)  # every span the collector(s) wrote
    metrics: list[tuple[str, dict, float]] = field(default_factory=list)  # agent_identity_* of every collector
    alerts: list[dict] = field(default_factory=list)  # Prometheus ALERTS series (labels), pending or firing
    recovery: dict[str, list[dict]] = field(default_factory=dict)  # payments kind -> both checkout records
    waited: dict[str, float] = field(default_factory=dict)  # seconds spent per phase
    #: payments kind -> whether both attempts' traces reached one judging instance (always on a
    #: single node; in two tiers the loadbalancer routes by trace id: with 2 instances, half the
    #: time; the delegation memory is per instance, so only then is the duplicate found)
    one_judge: dict[str, bool] = field(default_factory=dict)

    def expected_duplicates(self) -> dict[str, int]:
        """callee service -> duplicate executions the collector can find: the naive specialist's
        second charge (ground truth: its record) when both attempts met on one instance."""
        extra = len(read_charges(self, "naive")) - 1
        return {"payments-naive": extra} if extra and self.one_judge.get("naive") else {}

    def expected_alerts(self) -> set[tuple[str, str]]:
        """The alerts the failures fire, as ``(alertname, callee_service)``; every other alert
        must stay quiet."""
        dups = {("AgentIdentityDuplicateExecution", svc) for svc in self.expected_duplicates()}
        return MISMATCH_ALERTS | dups

    def entry(self, trace_id: str, service: str) -> list[h.Span]:
        """The callee's entry spans (our A2A SERVER span) in ``trace_id``."""
        return [
            s
            for s in self.spans
            if s.trace_id == trace_id and s.service == service and s.kind == SERVER and s.name.startswith("Send")
        ]

    def hop_table(self) -> list[dict]:
        """One row per supervisor send: its record, the ground truth (``seen``), the verdict it calls
        for (``want``) and the collector's (``got``: ``agent_identity.hop.result`` of the entry span,
        ``none`` when it has none, ``missing`` when the collector wrote no entry span)."""
        rows = []
        for rec in self.records:
            kind, specialist = CONVERSATIONS[rec["conversation"]]
            seen = self.truth.get(rec["trace_id"], [])
            want = "first_turn" if rec["turn"] == 1 else h.expected_result(rec, seen)
            entries = self.entry(rec["trace_id"], specialist)
            got = "+".join(str(s.attributes.get("agent_identity.hop.result", "none")) for s in entries) or "missing"
            rows.append({**rec, "kind": kind, "specialist": specialist, "seen": seen, "want": want, "got": got})
        return sorted(rows, key=lambda r: (r["conversation"], r["turn"]))

    def duplicates(self) -> dict[str, int]:
        """callee service -> its entry spans marked ``agent_identity.delegation.duplicate=true``."""
        out: dict[str, int] = {}
        for s in self.spans:
            if s.kind == SERVER and s.attributes.get("agent_identity.delegation.duplicate") is True:
                out[s.service] = out.get(s.service, 0) + 1
        return out

    def report(self) -> str:
        lines = [f"== {self.topology}: verdicts vs ground truth (phases, s: {self.waited})"]
        for row in self.hop_table():
            mark = "ok " if row["got"] == row["want"] else "BAD"
            lines.append(
                f"{mark} {row['conversation']:<24} turn {row['turn']} {row['kind']:<16} seen={row['seen']} "
                f"want={row['want']:<17} got={row['got']}"
            )
        for name in (
            "agent_identity_hops",
            "agent_identity_mismatches",
            "agent_identity_unresolved",
            "agent_identity_no_callee",
            "agent_identity_duplicate_executions",
            "agent_identity_lost_responses",
        ):
            label = "callee_service" if name != "agent_identity_no_callee" else "caller_service"
            lines.append(f"{name}: {by_label(self.metrics, name, label)}")
        lines.append(
            f"duplicate-marked entry spans: {self.duplicates()} (both attempts on one judge: {self.one_judge})"
        )
        lines.append(f"charges: { {k: len(read_charges(self, k)) for k in PAYMENTS} }")
        alerts = {
            (a["alertname"], a.get("callee_service") or a.get("caller_service"), a["alertstate"]) for a in self.alerts
        }
        lines.append(f"alerts: {sorted(alerts)}")
        return "\n".join(lines)


def by_label(samples: list[tuple[str, dict, float]], name: str, label: str) -> dict[str, float]:
    """Sum of ``name`` (or ``name_total``) per value of ``label``."""
    out: dict[str, float] = {}
    for n, labels, value in samples:
        if n in (name, name + "_total"):
            key = labels.get(label, "")
            out[key] = out.get(key, 0.0) + value
    return out


def read_charges(world: World, kind: str) -> list[dict]:
    """The charges the ``kind`` payment specialist really made (its own record)."""
    return h.read_charges(world.work / f"charges-{kind}.jsonl")


def _otelcol_total(col: cs.Collector, prefix: str) -> float:
    """Sum of the collector's own metric series whose name starts with ``prefix``."""
    total = 0.0
    for line in col.metrics().splitlines():
        if line.startswith(prefix):
            with suppress(ValueError):
                total += float(line.rsplit(" ", 1)[1])
    return total


def _all_spans_left(judges: list[cs.Collector]) -> bool:
    """Every span each judging collector accepted has been exported (nothing held)."""
    for col in judges:
        accepted = _otelcol_total(col, "otelcol_receiver_accepted_spans")
        sent = _otelcol_total(col, "otelcol_exporter_sent_spans")
        if not accepted or sent < accepted:
            return False
    return True


def _alerts(prom: cs.Prometheus, world: World) -> list[dict]:
    """ALERTS once Prometheus scraped the collectors' final counts and evaluated the rules after
    that (bounded), and the :meth:`World.expected_alerts` fire (or the bound passed)."""
    final = sum(v for n, _, v in world.metrics if n.startswith(("agent_identity_hops", "agent_identity_unresolved")))

    def scraped() -> bool:
        got = prom.query("sum(agent_identity_hops) + (sum(agent_identity_unresolved) or vector(0))")
        return bool(got) and float(got[0]["value"][1]) >= final

    cs.wait_for(scraped, 60, "prometheus scraped the final counts")
    since = time.time()

    def evaluated_and_fired() -> list[dict] | None:
        body = cs.http_get(f"http://127.0.0.1:{prom.port}/api/v1/rules")
        groups = json.loads(body)["data"]["groups"] if body else []
        if not groups or any(_epoch(g.get("lastEvaluation", "")) < since for g in groups):
            return None
        alerts = [r["metric"] for r in prom.query("ALERTS")]
        fired = {(a["alertname"], a.get("callee_service")) for a in alerts if a["alertstate"] == "firing"}
        return alerts if fired >= world.expected_alerts() else None

    try:
        return cs.wait_for(evaluated_and_fired, 60, "the expected alerts to fire")
    except TimeoutError:
        return [r["metric"] for r in prom.query("ALERTS")]


def _epoch(rfc3339: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


@contextmanager
def run_world(topology: str, work: Path) -> Iterator[World]:
    """Run every scenario once in ``topology`` (``single-node`` or ``two-tier``); yields the World."""
    world = World(topology, work)
    collectors: list[cs.Collector] = []
    procs: list[subprocess.Popen] = []
    prom = None
    began = time.monotonic()
    try:
        collectors, judges, endpoint = cs.start_topology(topology, work, **SHIPPED_COLLECTOR_ENV)
        prom = cs.start_prometheus(
            work / "prometheus",
            [f"127.0.0.1:{c.metrics_port}" for c in collectors],
            rule_files=tuple(p.name.removesuffix(".rules.yaml") for p in (cs.CONFIGS / "alerts").glob("*.rules.yaml")),
        )

        def specialist(svc: str) -> tuple[str, subprocess.Popen, str]:
            shape = SPECIALISTS[svc][0]
            proc, url = h.start_specialist(
                svc,
                endpoint,
                shape=shape,
                truth=work / f"truth-{svc}.jsonl",
                stdout=subprocess.DEVNULL,
                OFFLINE_MODEL_LATENCY=LATENCY,
                **REAL_APP_ENV,
            )
            return svc, proc, url

        def payments(kind: str) -> tuple[str, subprocess.Popen, str]:
            proc, url = h.start_charge_specialist(
                f"payments-{kind}",
                endpoint,
                work / f"charges-{kind}.jsonl",
                idempotent=False,
                by_order=PAYMENTS[kind],
                stdout=subprocess.DEVNULL,
                **REAL_APP_ENV,
            )
            return kind, proc, url

        with ThreadPoolExecutor(max_workers=len(SPECIALISTS) + len(PAYMENTS)) as pool:
            started = [pool.submit(specialist, svc) for svc in SPECIALISTS]
            started += [pool.submit(payments, kind) for kind in PAYMENTS]
            urls, pay_urls = {}, {}
            for fut in started:
                try:
                    key, proc, url = fut.result()
                except Exception:
                    for other in started:  # stop those that did start
                        if other.done() and other.exception() is None:
                            h.stop(other.result()[1])
                    raise
                procs.append(proc)
                (pay_urls if key in PAYMENTS else urls)[key] = url
        world.waited["start"] = round(time.monotonic() - began, 1)

        errors: list[BaseException] = []

        def recover(kind: str) -> None:
            try:
                world.recovery[kind] = h.run_recovery(
                    pay_urls[kind],
                    work / f"checkout-{kind}.sqlite",
                    endpoint,
                    f"checkout-{kind}",
                    order=f"order-{kind}",
                    allowlist="",  # the default: nothing forwarded to the callee
                    **REAL_APP_ENV,
                )
            except BaseException as exc:
                errors.append(exc)

        traffic_began = time.monotonic()
        threads = [threading.Thread(target=recover, args=(kind,)) for kind in PAYMENTS]
        for t in threads:
            t.start()
        conversations = [(name, kind, urls[svc]) for name, (kind, svc) in CONVERSATIONS.items()]
        world.records = h.run_supervisor(endpoint, conversations, TURNS, LATENCY)
        for t in threads:
            t.join(600)
        if errors:
            raise errors[0]
        world.waited["traffic"] = round(time.monotonic() - traffic_began, 1)
        assert all(r["error"] is None for r in world.records), [r for r in world.records if r["error"]]

        waiting = time.monotonic()
        traces = [(r["trace_id"], CONVERSATIONS[r["conversation"]][1]) for r in world.records]
        traces += [(rec["trace_id"], f"payments-{k}") for k, recs in world.recovery.items() for rec in recs]

        def judged() -> bool:
            world.spans = [s for c in judges for s in h.read_spans(c.spans_file)]
            return all(world.entry(t, svc) for t, svc in traces) and _all_spans_left(judges)

        with suppress(TimeoutError):  # the tests say which hops got no verdict
            cs.wait_for(judged, VERDICT_TIMEOUT, "every entry span out of the collector")
        world.waited["verdicts"] = round(time.monotonic() - waiting, 1)
        for kind, recs in world.recovery.items():
            judges_of = [
                {
                    i
                    for i, c in enumerate(judges)
                    if any(s.trace_id == rec["trace_id"] for s in h.read_spans(c.spans_file))
                }
                for rec in recs
            ]
            world.one_judge[kind] = len(set().union(*judges_of)) == 1
        world.truth = {}
        for svc in SPECIALISTS:
            for trace_id, counts in h.read_truth(work / f"truth-{svc}.jsonl").items():
                world.truth.setdefault(trace_id, []).extend(counts)
        world.metrics = [m for c in judges for m in h.scrape(c.metrics_port)]
        waiting = time.monotonic()
        world.alerts = _alerts(prom, world)
        world.waited["alerts"] = round(time.monotonic() - waiting, 1)
        world.waited["total"] = round(time.monotonic() - began, 1)
        yield world
    finally:
        for proc in procs:
            h.stop(proc)
        if prom is not None:
            prom.stop()
        for col in collectors:
            col.stop()
