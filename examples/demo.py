"""`make demo`: the whole product on real input, on 127.0.0.1 only.

Starts the collector (``collector-config/single-node.yaml`` on free ports) and five specialist A2A
services under ``opentelemetry-instrument``, one per shape real A2A services take
(``examples/specialist.py``): two that keep a session per contextId (service-managed and local
history), Agent Framework's own ``A2AExecutor`` (a new session per request: keeps the id, loses the
state), a plain executor answering in the request's context, and one answering in a new context
every time. The orchestrator (Agent Framework, offline model) holds a three-turn conversation with
each through ``A2AAgent``, and a direct a2a-sdk client does the same with the plain ones; turn 2 to
the first specialist is re-sent after it completed (a lost response: one delegation, two executions).
Three more callers, each its own service, hold three-turn conversations in which a tool sends over
A2A (a2a-sdk client, ``examples/a2a_delegate.py``) to one specialist that continues and to one or
two that forget: a LangGraph agent (``examples/langgraph_app.py``, one thread per specialist), an
OpenAI Agents SDK agent (``examples/openai_agents_orchestrator.py``, one ``SQLiteSession`` per
specialist) and an Agno agent (``examples/agno_orchestrator.py``, one ``session_id`` per specialist,
``AGNO_TELEMETRY=false``) that talks to both forgetting shapes (state lost, context changed). Last,
a caller that restarts its delegate every turn (a fresh context per send,
``examples/restarting_caller.py``) beside one that keeps it: the collector sees only first turns
there; the caller marks each restart on its CLIENT span and counts it in the Python-side counter
``agent_identity.delegate.restarts`` (exported over OTLP to the collector's metrics overlay).
Then the founding essay's recovery test (``recovery``): a LangGraph checkout that crashes on a
timed-out charge and resumes, against a naive and an idempotent payment specialist; the charges each
really made printed beside the duplicate executions and deliveries the collector reports.
Last, two conversations at realistic latency (``realistic``): 3 s per model call, the apps'
default 5 s batch delay and the shipped collector timers; a supervisor (plan, delegate, summarise)
with a specialist that continues a context the client named and one that forgets.

Eight more specialists run their agent on another framework behind a plain a2a-sdk executor
(``examples/framework_specialists.py``), one that continues each contextId and one that forgets it
per framework: LangGraph (a checkpointer with ``thread_id`` = contextId; a fresh ``thread_id`` per
request), Agno (``session_id`` = contextId with history in the context; a new session per request),
the OpenAI Agents SDK (a ``SQLiteSession`` per contextId; no session) and a LlamaIndex
``FunctionAgent`` (a ``Memory`` with ``session_id`` = contextId; a ``Context`` persisted per
contextId with ``to_dict`` and restored with ``Context.from_dict``, which with pydantic 2.14
silently comes back without its memory); the orchestrator holds a three-turn conversation with
each through ``A2AAgent``.

Each specialist's model reports how many messages it saw: the ground truth. The demo prints, per
turn, that truth next to the collector's verdict, then the collector's counters.

Exit status: 0 when every verdict equals the ground truth (turn 1: never flagged; a callee that saw
prior messages: not flagged; one that saw only the new message: flagged), the counters agree, and
the retried delegation is counted as exactly one duplicate execution, every restart of a
delegate (and only those) is marked and counted, and the recovery test's duplicate executions equal
the charges made beyond the first (deliveries: the attempts beyond the first); 1 otherwise; 2 when the demo
could not run. Options: ``--collector PATH`` (default ``collector/_build/otelcol-agentidentity``),
``--turns N``, ``--keep`` (leave the work directory with spans.jsonl, truth.jsonl and logs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import a2a_harness as h
import zipkin_backend as zb

#: (shape, what it is), in the order the demo talks to them; the first gets the retried turn
SPECIALISTS = (
    ("session-local", "a2a-sdk executor, one AgentSession per contextId, local history"),
    ("session-service", "a2a-sdk executor, one AgentSession per contextId, service-managed threads"),
    ("a2a-executor", "Agent Framework A2AExecutor: a new AgentSession per request"),
    ("plain", "plain a2a-sdk executor answering in the request's context"),
    ("plain-new-context", "plain a2a-sdk executor answering in a new contextId every time"),
)
#: specialists whose agent runs on another framework, served by a plain a2a-sdk executor
FRAMEWORK_SPECIALISTS = (
    ("langgraph-thread", "LangGraph graph, a checkpointer, thread_id = contextId"),
    ("langgraph-new-thread", "LangGraph graph, a fresh thread_id per request"),
    ("agno-session", "Agno agent, session_id = contextId, history in the context"),
    ("agno-new-session", "Agno agent, a new session per request"),
    ("openai-session", "OpenAI Agents SDK agent, a SQLiteSession per contextId"),
    ("openai-no-session", "OpenAI Agents SDK agent, no session"),
    ("llama-memory", "LlamaIndex FunctionAgent, Memory(session_id = contextId)"),
    ("llama-context", "LlamaIndex FunctionAgent, its Context persisted as JSON, restored with Context.from_dict"),
)
DIRECT = ("plain", "plain-new-context")  # also driven by a direct a2a-sdk client
RETRIED = SPECIALISTS[0][0]
#: the other frameworks' callers: (label, service, script, conversation option, specialists it talks to)
FRAMEWORK_CALLERS = (
    ("LangGraph", "langgraph-app", "langgraph_app.py", "--thread", ("session-local", "a2a-executor")),
    (
        "OpenAI Agents",
        "openai-agents-app",
        "openai_agents_orchestrator.py",
        "--session",
        ("session-service", "plain-new-context"),
    ),
    ("Agno", "agno-app", "agno_orchestrator.py", "--session", ("session-service", "a2a-executor", "plain-new-context")),
)


def start_framework_callers(urls: dict[str, str], endpoint: str, turns: int) -> list:
    """Start every ``FRAMEWORK_CALLERS`` caller, one process each holding one conversation per
    specialist, all at once (they run while the orchestrator does); ``framework_records`` waits
    for them."""
    procs = []
    for label, service, script, option, shapes in FRAMEWORK_CALLERS:
        cmd = [str(h.LAUNCHER), sys.executable, str(h.EXAMPLES / script), "--turns", str(turns)]
        for shape in shapes:
            cmd += ["--specialist", urls[shape], option, f"conv-{service.split('-')[0]}-{shape}"]
        env = h.otel_env(service, endpoint, AGNO_TELEMETRY="false")  # Agno's call home off (it posts the ids)
        procs.append(
            (
                label,
                service,
                shapes,
                subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE),
            )
        )
    return procs


def framework_records(procs: list) -> dict[str, list[dict]]:
    """Wait for the ``start_framework_callers`` processes; returns ``{label: records}`` in the
    orchestrator's record shape plus ``caller`` (its service). ``requested``: the contextId the turn
    sent, the one the previous turn was answered in; ``answered``: the one this turn was; both from
    the caller's ``a2a_delegate.Delegate.last``. Raises RuntimeError if one failed."""
    out: dict[str, list[dict]] = {}
    for label, service, shapes, proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"the {label} caller exited with {proc.returncode}:\n{stderr[-2000:]}")
        for line in stdout.splitlines():
            if line.startswith('{"thread"') or line.startswith('{"session"'):
                rec = json.loads(line)
                conversation = rec.get("thread") or rec["session"]
                shape = next(s for s in shapes if conversation.endswith(f"-{s}"))
                out.setdefault(label, []).append(
                    {
                        "conversation": f"{shape} via {label}",
                        "specialist": shape,
                        "caller": service,
                        "turn": rec["turn"],
                        "attempt": 1,
                        "requested": rec["requested"],
                        "answered": rec["context_id"],
                        "trace_id": rec["trace_id"],
                    }
                )
    return out


def truth_word(forgot) -> str:
    return {None: "first turn", False: "continued", True: "FORGOT"}[forgot]


def report(records: list[dict], spans: list[h.Span], truth: dict[str, list[int]], caller: str) -> list[str]:
    """Print ground truth and verdict per turn for one caller's records; return the disagreements."""
    hops: dict[str, list[h.Span]] = {}
    for s in h.hop_spans(spans):
        hops.setdefault(s.trace_id, []).append(s)
    problems: list[str] = []
    for shape in dict.fromkeys(r["specialist"] for r in records):
        print(f"\n{shape} via {caller}")
        print(f"  {'turn':<5}{'contextId sent':<16}{'model saw':<12}{'truth':<12}{'collector verdict'}")
        recs = [r for r in records if r["specialist"] == shape]
        for rec in recs:
            if rec["attempt"] > 1:
                continue  # the re-send is in the same trace: its hop is printed with the first
            seen = truth.get(rec["trace_id"], [])
            forgot = h.expected_verdict(rec, seen)
            found = hops.get(rec["trace_id"], [])
            if not found:
                problems.append(f"{shape} via {caller} turn {rec['turn']}: the collector reported no hop")
            found.sort(key=lambda s: bool(s.attributes.get("agent_identity.delegation.duplicate")))
            for i, hop in enumerate(found):
                if len(seen) == len(found) > 1:  # a re-sent delegation: one count per execution, in order
                    forgot = h.expected_verdict(rec, seen[i : i + 1])
                a = hop.attributes
                result, flagged = a.get("agent_identity.hop.result"), a.get("agent_identity.hop.mismatch")
                agree = (flagged is False and result == "first_turn") if forgot is None else flagged is forgot
                marks = " ".join(
                    m
                    for m, on in (("MISMATCH", flagged), ("DUPLICATE", a.get("agent_identity.delegation.duplicate")))
                    if on
                )
                sent = (rec["requested"] or "(none)")[:12]
                shown = seen[i : i + 1] if len(seen) == len(found) else seen
                print(
                    f"  {rec['turn']:<5}{sent:<16}{','.join(map(str, shown)) or '?':<12}{truth_word(forgot):<12}"
                    f"{result} {marks}{'' if agree else '   <-- DISAGREES'}"
                )
                if not agree:
                    problems.append(
                        f"{shape} via {caller} turn {rec['turn']}: truth {truth_word(forgot)} "
                        f"(model saw {seen}), collector said {result} (mismatch={flagged})"
                    )
    return problems


def check_duplicates(records: list[dict], spans: list[h.Span]) -> list[str]:
    duplicates = [s for s in h.hop_spans(spans) if s.attributes.get("agent_identity.delegation.duplicate")]
    retried = {r["trace_id"] for r in records if r["attempt"] > 1}
    if len(duplicates) != len(retried) or any(s.trace_id not in retried for s in duplicates):
        return [
            f"expected {len(retried)} duplicate execution(s) on the retried turn, "
            f"the collector flagged {len(duplicates)}"
        ]
    return []


def expected_counts(records: list[dict], truth: dict[str, list[int]], by: str = "specialist") -> dict[str, float]:
    """Flagged hops the ground truth calls for (every send of a forgetting turn), per callee
    (``by="specialist"``) or per caller service (``by="caller"``)."""
    out: dict[str, float] = {}
    for rec in records:
        if h.expected_verdict(rec, truth.get(rec["trace_id"], [])):
            out[rec[by]] = out.get(rec[by], 0) + 1
    return out


def metrics(port: int, records: list[dict], truth: dict[str, list[int]]) -> list[str]:
    """Print the collector's counters (once they count every hop); return the disagreements."""
    deadline, samples = time.monotonic() + 15, []
    while time.monotonic() < deadline:
        samples = h.scrape(port)
        if h.metric_sum(samples, "agent_identity_hops") >= len(records):
            break
        time.sleep(0.5)
    print(f"\ncollector metrics (Prometheus, http://127.0.0.1:{port}/metrics)")
    for name, labels, value in sorted(samples, key=lambda x: (x[0], sorted(x[1].items()))):
        print(f"  {name}{{{', '.join(f'{k}={v}' for k, v in sorted(labels.items()))}}} {value:g}")
    problems = []
    want = expected_counts(records, truth)
    for shape, _ in SPECIALISTS + FRAMEWORK_SPECIALISTS:
        got = h.metric_sum(samples, "agent_identity_mismatches", callee_service=shape)
        if got != want.get(shape, 0):
            problems.append(
                f"agent_identity_mismatches into {shape}: {got:g}, the ground truth says {want.get(shape, 0):g}"
            )
    want = expected_counts(records, truth, by="caller")
    for caller in dict.fromkeys(r["caller"] for r in records):
        got = h.metric_sum(samples, "agent_identity_mismatches", caller_service=caller)
        if got != want.get(caller, 0):
            problems.append(
                f"agent_identity_mismatches from {caller}: {got:g}, the ground truth says {want.get(caller, 0):g}"
            )
    dup = h.metric_sum(
        samples, "agent_identity_duplicate_executions", caller_service="orchestrator", callee_service=RETRIED
    )
    if dup != 1:
        problems.append(f"agent_identity_duplicate_executions orchestrator -> {RETRIED}: {dup:g}, expected 1")
    return problems


def restarting_delegates(url: str, collector, work: Path, turns: int) -> list[str]:
    """A caller that drops the contextId every turn (a fresh context per send) next to one that
    keeps it, both in one conversation of their own: every hop looks first-turn to the collector,
    so only the caller side sees the restart (CLIENT span ``agent_identity.conversation.previous_id``,
    counter ``agent_identity.delegate.restarts``). Ground truth: the callers' own records."""
    problems: list[str] = []
    print("\ncallers that restart their delegate (caller-side signal; the collector sees first turns)")
    print("  caller             turn  contextId sent  previous in effect  marked on span  hop verdict")
    for service, extra in (("restarting-caller", ()), ("keeping-caller", ("--keep",))):
        recs = h.run_restarting_caller(service, url, collector.endpoint, *extra, turns=turns)
        traces, deadline = {r["trace_id"] for r in recs}, time.monotonic() + 45
        while True:  # until groupbytrace released (and the processor judged) every trace of this caller
            spans = h.read_spans(collector.spans_file)
            judged = {s.trace_id for s in spans if "agent_identity.hop.result" in s.attributes}
            if traces <= judged or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for r in recs:
            restart = r["previous"] is not None and r["requested"] != r["previous"]
            client = [s for s in spans if s.service == service and s.trace_id == r["trace_id"] and s.kind == 3]
            marked = any("agent_identity.conversation.previous_id" in s.attributes for s in client)
            verdict = next(
                (
                    s.attributes.get("agent_identity.hop.result")
                    for s in spans
                    if s.trace_id == r["trace_id"] and "agent_identity.hop.result" in s.attributes
                ),
                "?",
            )
            print(
                f"  {service:18} {r['turn']:<5} {str(r['requested'] or '(none)')[:14]:15} "
                f"{str(r['previous'] or '(none)')[:18]:19} {'YES' if marked else 'no':15} {verdict}"
            )
            if marked != restart:
                problems.append(f"{service} turn {r['turn']}: restart={restart}, CLIENT span marked={marked}")
        want = sum(1 for r in recs if r["previous"] is not None and r["requested"] != r["previous"])
        deadline, got = time.monotonic() + 20, -1.0
        while time.monotonic() < deadline:  # the caller flushed its counters at exit; the file follows
            got = h.metric_total(h.read_metrics(work / "metrics.jsonl"), service, "agent_identity.delegate.restarts")
            if got == want:
                break
            time.sleep(0.5)
        print(f"  {service}: agent_identity.delegate.restarts = {got:g} (the records say {want})")
        if got != want:
            problems.append(f"{service}: agent_identity.delegate.restarts {got:g}, expected {want}")
    return problems


def recovery(binary: str, work: Path) -> list[str]:
    """The founding essay's recovery test, with its own collector (groupbytrace must outwait the
    held response): a LangGraph checkout (SQLite checkpointer) whose ``charge`` delegation times
    out after 1 s while the specialist, done in milliseconds, holds its response 3 s; the process
    exits, a second resumes and retries with the same ``delegation(key=...)``. Against a naive and
    an idempotent specialist (``examples/charge_specialist.py``), side by side: the charges each
    really made (its own record) and what the collector reports. Returns the disagreements."""
    work.mkdir()
    collector = h.start_collector(binary, work, groupbytrace_wait="8s")
    procs, problems, rows = [], [], []
    try:
        for kind in ("naive", "idempotent"):
            service = f"payments-{kind}"
            proc, url = h.start_charge_specialist(
                service, collector.endpoint, work / f"{kind}.jsonl", idempotent=kind == "idempotent"
            )
            procs.append(proc)
            records = h.run_recovery(url, work / f"{kind}.sqlite", collector.endpoint, f"checkout-{kind}")
            rows.append((service, f"checkout-{kind}", records, work / f"{kind}.jsonl"))
        deadline = time.monotonic() + 60
        while True:  # both deliveries of both scenarios judged
            judged = [s for s in h.hop_spans(h.read_spans(collector.spans_file)) if s.service.startswith("payments")]
            if len(judged) >= 4 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        samples = h.scrape(collector.metrics_port)
        print(
            "\nRecovery test: checkout -> charge (delegation key order-42:charge, 1 s timeout, response held 3 s),"
            " crash, resume from the SQLite checkpoint, retry"
        )
        print(
            f"  {'specialist':<20} {'attempts':>8} {'charges made (truth)':>20} | collector: "
            f"{'duplicate executions':>20} {'duplicate deliveries':>20} {'lost responses':>14}"
        )
        for service, caller, records, record in rows:
            charges = len(h.read_charges(record))
            got = {
                name: h.metric_sum(samples, name, caller_service=caller, callee_service=service)
                for name in (
                    "agent_identity_duplicate_executions",
                    "agent_identity_duplicate_deliveries",
                    "agent_identity_lost_responses",
                )
            }
            print(
                f"  {service:<20} {len(records):>8} {charges:>20} | {'':>10} "
                f"{got['agent_identity_duplicate_executions']:>20g} {got['agent_identity_duplicate_deliveries']:>20g} "
                f"{got['agent_identity_lost_responses']:>14g}"
            )
            if got["agent_identity_duplicate_executions"] != charges - 1:
                problems.append(
                    f"{service}: {charges} charges made, "
                    f"{got['agent_identity_duplicate_executions']:g} duplicate executions reported"
                )
            if got["agent_identity_duplicate_deliveries"] != len(records) - 1:
                problems.append(
                    f"{service}: {len(records)} deliveries, "
                    f"{got['agent_identity_duplicate_deliveries']:g} duplicate deliveries reported"
                )
    finally:
        for proc in procs:
            h.stop(proc)
        collector.stop()
    return problems


#: the turns at realistic latency: (conversation, how the supervisor sends, specialist shape, what it does)
REALISTIC = (
    ("keeps", "a2a-agent-minted", "session-local", "one AgentSession per contextId (continues)"),
    ("forgets", "a2a-agent", "a2a-executor", "A2AExecutor, a new AgentSession per request (forgets)"),
)
REALISTIC_LATENCY = "3"  # seconds per model call


def realistic(binary: str, work: Path, turns: int = 2) -> list[str]:
    """Turns at realistic latency, with the shipped timers (groupbytrace's 5 s wait, the apps'
    default 5 s batch delay): a supervisor (``examples/supervisor.py``: plan model call, delegation,
    summarise model call, 3 s each) talks to a specialist that continues (the client names the new
    context on turn 1, ``A2AAgent.get_session(service_session_id=<new id>)``) and one that forgets,
    side by side. Prints each turn's ground truth beside the verdict and the time it took; returns
    the disagreements."""
    work.mkdir()
    collector = h.start_collector(binary, work, groupbytrace_wait="5s")  # the shipped default
    procs, problems, truth_file = [], [], work / "truth.jsonl"
    try:
        with ThreadPoolExecutor(len(REALISTIC)) as pool:
            started = list(
                pool.map(
                    lambda row: h.start_specialist(
                        f"slow-{row[2]}",
                        collector.endpoint,
                        shape=row[2],
                        truth=truth_file,
                        stdout=subprocess.DEVNULL,
                        OFFLINE_MODEL_LATENCY=REALISTIC_LATENCY,
                        **h.REAL_APP_ENV,
                    ),
                    REALISTIC,
                )
            )
        procs += [proc for proc, _ in started]
        began = time.monotonic()
        conversations = [(name, kind, url) for (name, kind, _, _), (_, url) in zip(REALISTIC, started, strict=True)]
        records = h.run_supervisor(collector.endpoint, conversations, turns, REALISTIC_LATENCY)
        ran = time.monotonic() - began
        spans = h.wait_for_hops(collector.spans_file, len(records))
        judged = time.monotonic() - began
        truth = h.read_truth(truth_file)
        print(
            f"\nRealistic latency: {REALISTIC_LATENCY} s per model call (supervisor plan + specialist + supervisor "
            f"summarise), apps' default 5 s batch delay, groupbytrace 5 s; {ran:.0f} s of traffic, "
            f"every verdict after {judged:.0f} s"
        )
        print(f"  {'conversation':<28} {'turn':<5}{'contextId sent':<16}{'model saw':<11}{'truth':<19}verdict")
        what = {name: f"{name} ({kind})" for name, kind, _, _ in REALISTIC}
        for rec in sorted(records, key=lambda r: (r["conversation"], r["turn"])):
            hops = [s for s in h.hop_spans(spans) if s.trace_id == rec["trace_id"]]
            got = "+".join(str(s.attributes.get("agent_identity.hop.result")) for s in hops) or "no verdict"
            seen = truth.get(rec["trace_id"], [])
            want = "first_turn" if rec["turn"] == 1 else h.expected_result(rec, seen)
            sent = "minted" if rec["turn"] == 1 and rec["requested"] else ("yes" if rec["requested"] else "none")
            print(f"  {what[rec['conversation']]:<28} {rec['turn']:<5}{sent:<16}{seen!s:<11}{want:<19}{got}")
            if got != want:
                problems.append(f"realistic latency, {rec['conversation']} turn {rec['turn']}: {got}, truth {want}")
    finally:
        for proc in procs:
            h.stop(proc)
        collector.stop()
    return problems


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
    truth_file = work / "truth.jsonl"
    procs = []
    collector = zipkin = None
    try:
        zipkin = zb.start_for_demo(work)  # before the collector: it exports to Zipkin too
        os.environ["AGENT_IDENTITY_METRICS_FILE"] = str(work / "metrics.jsonl")  # the Python-side counters
        collector = h.start_collector(args.collector, work, overlays=(h.PYTHON_METRICS_OVERLAY,))
        print(f"collector: OTLP/HTTP {collector.endpoint}, spans -> {collector.spans_file}")
        urls = {}
        for shape, what in SPECIALISTS:
            proc, urls[shape] = h.start_specialist(shape, collector.endpoint, shape=shape, truth=truth_file)
            procs.append(proc)
            print(f"{shape}: {what}, A2A server at {urls[shape]}")
        with ThreadPoolExecutor(3) as pool:  # each process imports its framework: start them side by side
            started = list(
                pool.map(
                    lambda shape: h.start_specialist(
                        shape, collector.endpoint, shape=shape, truth=truth_file, AGNO_TELEMETRY="false"
                    ),
                    [shape for shape, _ in FRAMEWORK_SPECIALISTS],
                )
            )
        for (shape, what), (proc, url) in zip(FRAMEWORK_SPECIALISTS, started, strict=False):
            procs.append(proc)
            urls[shape] = url
            print(f"{shape}: {what}, A2A server at {url}")
        callers = start_framework_callers(urls, collector.endpoint, args.turns)
        procs += [proc for *_, proc in callers]
        via_agent, _ = h.run_orchestrator(
            [(s, urls[s]) for s, _ in SPECIALISTS], collector.endpoint, turns=args.turns, retry_turn=2
        )
        direct, _ = h.run_orchestrator(
            [(s, urls[s]) for s in DIRECT], collector.endpoint, turns=args.turns, direct=True
        )
        served, _ = h.run_orchestrator(
            [(s, urls[s]) for s, _ in FRAMEWORK_SPECIALISTS], collector.endpoint, turns=args.turns
        )
        framework = framework_records(callers)
        for rec in via_agent + direct + served:
            rec["caller"] = "orchestrator"
        records = via_agent + direct + served + [r for recs in framework.values() for r in recs]
        spans = h.wait_for_hops(collector.spans_file, len(records))
        truth = h.read_truth(truth_file)
        problems = report(via_agent, spans, truth, "A2AAgent") + report(direct, spans, truth, "a2a-sdk client")
        problems += report(served, spans, truth, "A2AAgent")
        for label, recs in framework.items():
            problems += report(recs, spans, truth, f"{label} (a2a-sdk client)")
        expected_calls = {label: len(shapes) * args.turns for label, _, _, _, shapes in FRAMEWORK_CALLERS}
        problems += [
            f"{label}: {len(framework.get(label, []))} turns recorded, expected {n}"
            for label, n in expected_calls.items()
            if len(framework.get(label, [])) != n
        ]
        problems += check_duplicates(records, spans)
        problems += metrics(collector.metrics_port, records, truth)
        problems += restarting_delegates(urls["plain"], collector, work, args.turns)
        problems += recovery(args.collector, work / "recovery")
        problems += realistic(args.collector, work / "realistic")
        zb.show_links(zipkin, records, spans)  # one link per conversation, one to the flagged hops; waits for Enter
    except Exception as exc:
        print(f"demo could not run: {exc}", file=sys.stderr)
        return 2
    finally:
        for proc in procs:
            h.stop(proc)
        if collector is not None:
            collector.stop()
        if zipkin is not None:
            zipkin.stop()
        if args.keep:
            print(f"\nwork directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if problems:
        print("\nFAIL:\n  " + "\n  ".join(problems))
        return 1
    flagged, per_caller = sum(expected_counts(records, truth).values()), expected_counts(records, truth, by="caller")
    print(
        f"\nOK: every verdict equals the ground truth ({len(records)} sends, {flagged:g} flagged, no false alarm), "
        "the retried delegation counted as 1 duplicate execution, every delegate restart marked and counted"
    )
    print(
        "  sends / flagged per caller: "
        + ", ".join(
            f"{c} {sum(r['caller'] == c for r in records)}/{per_caller.get(c, 0):g}"
            for c in dict.fromkeys(r["caller"] for r in records)
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
