"""Real A2A hops across Strands Agents and CrewAI, a2a-sdk 1.x and 0.3, judged by the real collector
(shipped single-node config): each agent in its own venv, as a subprocess under its own launcher.

- a2a-sdk 1.x callers (``.venv``, ``examples/orchestrator.py``: Agent Framework ``A2AAgent`` built
  from the card, and a direct a2a-sdk 1.x client, each unstreamed and streamed: ``--stream``) talk
  A2A 0.3 (``message/send``, ``message/stream``) to the 0.3 servers: a2a-sdk 1.x picks its 0.3
  JSON-RPC transport from a card whose ``protocolVersion`` is 0.3 (``a2a.compat.v0_3``);
- Strands' ``A2AServer`` (a2a-sdk 0.3, ``.venv-strands``, ``examples/strands_specialist.py``), two
  replicas behind a round-robin load balancer (``a2a_harness.load_balancer``: turn 2 goes to the
  other replica; the Agent Card gives the balancer's URL):
  ``session`` (a ``FileSessionManager`` keyed by the contextId, one store shared by the replicas:
  turn 2 on the other replica restores turn 1, it continues) and ``memory`` (no session manager:
  the other replica has never seen the context, it forgets);
- CrewAI serving (an a2a-sdk 0.3 executor, ``.venv-crewai``, ``examples/crewai_specialist.py``):
  ``crewai`` runs CrewAI's executor helper (``crewai.a2a.utils.task.execute``: a fresh ``Task`` per
  request, it forgets); ``crewai-flow`` a conversational ``Flow`` persisted with ``@persist``, a fresh
  instance per request, ``handle_turn(session_id=contextId)``: CrewAI restores turn 1, it continues;
- Agent Framework agents on a2a-sdk 1.x serving A2A 0.3 too (``.venv``, ``examples/specialist.py
  --v03``: a2a-sdk 1.x's ``enable_v0_3_compat``): ``af-session`` keeps a session per contextId,
  ``af-forgets`` (``A2AExecutor``) starts a new one per request;
- CrewAI's A2A client (``execute_a2a_delegation``, a2a-sdk 0.3, ``.venv-crewai``,
  ``examples/crewai_a2a_app.py``) sending the contextId it was answered in, to all of them (0.3 ->
  0.3 and 0.3 -> 1.x; it streams, every card says ``streaming``);
- a Strands app's tool sending with a2a-sdk 0.3's own client and the contextId it was answered in
  (``.venv-strands``, ``examples/strands_app.py --via client``) to the 1.x servers (0.3 -> 1.x).

Ground truth: each callee's model records how many messages of the conversation it really saw,
per trace. Every hop's verdict must equal it, both ways: turn 1 ``first_turn``, turn 2 ``continued``
when the model saw turn 1, ``state_not_resumed`` (flagged, counted in ``agent_identity_mismatches``)
when it did not; the callee's ``agent_identity.conversation.resumed`` must say the same. Strands'
own ``A2AAgent`` (``examples/strands_app.py --via a2a-agent``) never sends a contextId: every call
is a new remote conversation, ``first_turn`` each time, the restart visible on the caller's send
span (``agent_identity.conversation.previous_id``).

Needs the collector (``AGENT_IDENTITY_COLLECTOR``) and the Strands and CrewAI venvs' interpreters
(``AGENT_IDENTITY_STRANDS_PYTHON``, ``AGENT_IDENTITY_CREWAI_PYTHON``): ``make test-a2a-crossversion``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import a2a_harness as h
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collector"))
import collector_support as cs

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
STRANDS_PY = os.environ.get("AGENT_IDENTITY_STRANDS_PYTHON")
CREWAI_PY = os.environ.get("AGENT_IDENTITY_CREWAI_PYTHON")
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
    pytest.mark.skipif(
        not (COLLECTOR and STRANDS_PY and CREWAI_PY),
        reason="needs AGENT_IDENTITY_COLLECTOR, _STRANDS_PYTHON and _CREWAI_PYTHON (make test-a2a-crossversion)",
    ),
]
TURNS = 2
RESULT, MISMATCH = "agent_identity.hop.result", "agent_identity.hop.mismatch"
RESUMED = "agent_identity.conversation.resumed"
# callee -> the verdicts its turns call for (the ground truth must say the same: checked too)
WANT_0_3 = {  # the a2a-sdk 0.3 servers
    "strands-session": ["first_turn", "continued"],
    "strands-memory": ["first_turn", "state_not_resumed"],
    "crewai": ["first_turn", "state_not_resumed"],
    "crewai-flow": ["first_turn", "continued"],
}
WANT_1_X = {  # a2a-sdk 1.x servers serving 0.3 too (examples/specialist.py --v03)
    "af-session": ["first_turn", "continued"],
    "af-forgets": ["first_turn", "state_not_resumed"],
}
A2A_AGENT_CALLEES = ("strands-session", "crewai", "af-session")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The collector and the callees; yields ``(collector, {callee: url}, truth file)``."""
    work = tmp_path_factory.mktemp("a2a-crossversion")
    truth = work / "truth.jsonl"
    with contextlib.ExitStack() as stack:
        collector, procs = stack.enter_context(h.collector_run(COLLECTOR, work, groupbytrace_wait="1s"))

        def start(script, service, python, *args):
            proc, url = h.start_server(
                script, service, collector.endpoint, "--truth", str(truth), *args, stdout=subprocess.DEVNULL,
                python=python,
            )  # fmt: skip
            procs.append(proc)
            return url

        urls = {}
        for shape in ("session", "memory"):
            urls[f"strands-{shape}"], replicas = stack.enter_context(h.load_balancer())
            args = (
                "--shape",
                shape,
                "--storage",
                str(work / f"{shape}-sessions"),
                "--public-url",
                urls[f"strands-{shape}"],
            )
            replicas += [start("strands_specialist.py", f"strands-{shape}", STRANDS_PY, *args) for _ in range(2)]
        urls["crewai"] = start("crewai_specialist.py", "crewai", CREWAI_PY)
        flows = ("--shape", "flow", "--storage", str(work))
        urls["crewai-flow"] = start("crewai_specialist.py", "crewai-flow", CREWAI_PY, *flows)
        urls["af-session"] = start("specialist.py", "af-session", None, "--shape", "session-local", "--v03")
        urls["af-forgets"] = start("specialist.py", "af-forgets", None, "--shape", "a2a-executor", "--v03")
        yield collector, urls, truth


def _judged(collector, traces: set[str]) -> list[h.Span]:
    """Every span the collector wrote, once each of ``traces`` has its hop verdict (bounded)."""

    def ready():
        spans = h.read_spans(collector.spans_file)
        return spans if traces <= {s.trace_id for s in h.hop_spans(spans)} else None

    return cs.wait_for(ready, 120, "a verdict on every hop")


def _check(
    collector, truth_file: Path, records: list[dict], caller: str, streamed: bool | None = None
) -> dict[str, list[str]]:
    """Per callee, the collector's verdicts on ``records`` (turn order); asserts each equals its
    ground truth (and its mismatch flag), that every hop is from ``caller`` to our callee, and, when
    ``streamed`` is given, that the caller sent over the streaming method exactly then (CrewAI's
    client and Strands' ``A2AAgent`` stream whenever the card allows)."""
    spans = _judged(collector, {rec["trace_id"] for rec in records})
    by_id = {s.span_id: s for s in spans}
    truth = h.read_truth(truth_file)
    got: dict[str, list[str]] = {}
    for rec in sorted(records, key=lambda r: r["turn"]):
        (hop,) = [s for s in h.hop_spans(spans) if s.trace_id == rec["trace_id"]]
        a = hop.attributes
        want = h.expected_result(rec, truth[rec["trace_id"]])
        assert a[RESULT] == want, (rec, truth[rec["trace_id"]], a)
        assert a.get(MISMATCH) is (want == "state_not_resumed"), a
        assert a["agent_identity.hop.caller.service.name"] == caller and hop.service == rec["callee"], (rec, a)
        assert "agent_identity.hop.callee.kind" not in a, a  # judged from our callee's own spans
        saw_before = any(n > 1 for n in truth[rec["trace_id"]])  # the callee's run says what its model saw
        callee_spans = [s for s in spans if s.trace_id == rec["trace_id"] and s.service == rec["callee"]]
        assert {s.attributes[RESUMED] for s in callee_spans if RESUMED in s.attributes} == {saw_before}, rec
        send = by_id.get(hop.parent_id)  # the caller's send span: the wire spoke A2A 0.3
        while send is not None and "a2a.protocol.version" not in send.attributes:
            send = by_id.get(send.parent_id)
        assert (
            send is not None and send.service == caller and send.attributes["a2a.protocol.version"] in ("0.3", "0.3.0")
        )
        method = send.attributes.get("a2a.method.name")
        if streamed is not None:
            assert method == ("SendStreamingMessage" if streamed else "SendMessage"), (rec, send.attributes)
        served = {s.attributes.get("a2a.method.name") for s in callee_spans if s.kind == 2}
        assert method in served, (rec, served)
        # a turn 2 sent to the URL that answered turn 1 (a load balancer's) says so: judged in any order
        assert send.attributes.get("agent_identity.conversation.answered_before") is (bool(rec["requested"]) or None)
        got.setdefault(rec["callee"], []).append(a[RESULT])
    return got


@pytest.mark.parametrize(
    ("direct", "stream"),
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["af_a2a_agent", "a2a_sdk_1x_client", "af_a2a_agent_stream", "a2a_sdk_1x_client_stream"],
)
def test_1x_callers_judged_right_on_0_3_strands_and_crewai(world, direct, stream):
    """a2a-sdk 1.x -> 0.3: Agent Framework's ``A2AAgent`` and a direct 1.x client continue the
    contextId they were answered in, unstreamed (``message/send``) and streamed (``message/stream``:
    the 0.3 cards say ``streaming``); Strands' session replicas and CrewAI's persisted Flow
    continue, Strands' memory replicas and CrewAI's helper forget."""
    collector, urls, truth = world
    callees = [(name, urls[name]) for name in WANT_0_3]
    records, _ = h.run_orchestrator(callees, collector.endpoint, turns=TURNS, direct=direct, card=True, stream=stream)
    assert not [r for r in records if r["error"]], records
    for rec in records:
        rec["callee"] = rec["specialist"]
        assert (rec["requested"] is None) is (rec["turn"] == 1) and rec["answered"], rec
    assert _check(collector, truth, records, "orchestrator", streamed=stream) == WANT_0_3


def test_crewai_client_judged_right_on_strands_and_crewai(world):
    """CrewAI's A2A client (a2a-sdk 0.3) sends the contextId it was answered in on turn 2: 0.3 -> 0.3
    across frameworks (the same callees, the same verdicts), and 0.3 -> 1.x (Agent Framework agents
    on a2a-sdk 1.x serving 0.3: one keeps a session per contextId, one forgets)."""
    collector, urls, truth = world
    cmd = [str(Path(CREWAI_PY).with_name("opentelemetry-instrument")), CREWAI_PY]
    out = truth.with_name("crewai-app.jsonl")
    cmd += [str(h.EXAMPLES / "crewai_a2a_app.py"), "--turns", str(TURNS), "--out", str(out)]
    for callee, url in urls.items():
        cmd += ["--callee", f"{callee}={url}"]
    env = h.otel_env("crewai-app", collector.endpoint, CREWAI_DISABLE_TELEMETRY="true")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == TURNS * len(urls), records
    assert _check(collector, truth, records, "crewai-app") == {**WANT_0_3, **WANT_1_X}


def _strands_app(collector, urls: dict, callee: str, via: str, service: str, conversation: str) -> list[dict]:
    """Run ``examples/strands_app.py --via {via}`` (``.venv-strands``, under its launcher) for
    ``TURNS`` turns of ``conversation`` to ``callee``; returns its records, with ``callee`` and
    ``answered``."""
    cmd = [str(Path(STRANDS_PY).with_name("opentelemetry-instrument")), STRANDS_PY]
    cmd += [str(h.EXAMPLES / "strands_app.py"), "--specialist", urls[callee], "--via", via]
    cmd += ["--conversation", conversation, "--turns", str(TURNS)]
    env = h.otel_env(service, collector.endpoint)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"session"')]
    return [{**rec, "callee": callee, "answered": rec["context_id"]} for rec in lines]


def test_strands_a2a_agent_starts_a_new_remote_conversation_every_call(world):
    """Strands' ``A2AAgent`` (a2a-sdk 0.3) never sends a contextId (issue 33): each call is a new
    remote conversation, so each hop is ``first_turn`` (nothing was asked to continue: no false
    alarm), and the remote model saw only that call's message (ground truth, no miss: nothing it
    was asked to keep was lost). The restart shows on the caller's side: its second send carries
    ``agent_identity.conversation.previous_id``, the context of the first."""
    collector, urls, truth = world
    records = []
    for callee in A2A_AGENT_CALLEES:
        records += _strands_app(collector, urls, callee, "a2a-agent", "strands-app", f"conv-{callee}")
    assert len(records) == TURNS * len(A2A_AGENT_CALLEES) and not any(rec["requested"] for rec in records)
    assert _check(collector, truth, records, "strands-app") == {c: ["first_turn"] * TURNS for c in A2A_AGENT_CALLEES}
    spans = h.read_spans(collector.spans_file)
    all_truth = h.read_truth(truth)
    for callee in A2A_AGENT_CALLEES:
        mine = sorted((r for r in records if r["callee"] == callee), key=lambda r: r["turn"])
        assert all(all_truth[r["trace_id"]] == [1] for r in mine)  # the remote model started fresh each time
        sends = [
            s.attributes
            for r in mine
            for s in spans
            if s.trace_id == r["trace_id"]
            and s.service == "strands-app"
            and s.kind == 3
            and "a2a.message.id" in s.attributes
        ]
        assert len(sends) == TURNS and sends[0]["gen_ai.conversation.id"] != sends[1]["gen_ai.conversation.id"]
        assert "agent_identity.conversation.previous_id" not in sends[0]
        assert sends[1]["agent_identity.conversation.previous_id"] == sends[0]["gen_ai.conversation.id"]


@pytest.mark.parametrize("callee", ["af-session", "af-forgets"])
def test_strands_a2a_0_3_client_continues_on_1x_servers(world, callee):
    """A Strands app whose tool sends with a2a-sdk 0.3's own client (``examples/strands_app.py --via
    client``, the way a Strands app continues a remote conversation: its ``A2AAgent`` sends no
    contextId) passes the contextId it was answered in on turn 2: 0.3 -> 1.x (Agent Framework on
    a2a-sdk 1.x serving 0.3), one callee that keeps a session per contextId, one that forgets."""
    collector, urls, truth = world
    records = _strands_app(collector, urls, callee, "client", "strands-client", f"client-{callee}")
    assert len(records) == TURNS and records[1]["requested"] == records[0]["context_id"], records
    assert _check(collector, truth, records, "strands-client", streamed=False) == {callee: WANT_1_X[callee]}


def test_hops_and_mismatches_counted(world):
    """After the callers (module order): the collector's Prometheus counters agree with its verdict
    spans, per caller and callee: every hop once in ``agent_identity_hops{result}``, every
    ``state_not_resumed`` once in ``agent_identity_mismatches``."""
    collector, _, _ = world
    hops = h.hop_spans(h.read_spans(collector.spans_file))
    one_x_callers, strands_client_callees = 4, 2  # the parametrized tests' runs
    assert len(hops) == TURNS * (
        one_x_callers * len(WANT_0_3) + len(WANT_0_3) + len(WANT_1_X) + len(A2A_AGENT_CALLEES) + strands_client_callees
    )
    want = Counter(
        (s.attributes["agent_identity.hop.caller.service.name"], s.service, s.attributes[RESULT]) for s in hops
    )

    def counted() -> bool:
        samples = h.scrape(collector.metrics_port)
        for (caller, callee, result), n in want.items():
            labels = {"caller_service": caller, "callee_service": callee}
            if h.metric_sum(samples, "agent_identity_hops", result=result, **labels) != n:
                return False
            flagged = h.metric_sum(samples, "agent_identity_mismatches", reason=result, **labels)
            if flagged != (n if result == "state_not_resumed" else 0):
                return False
        return True

    cs.wait_for(counted, 30, f"agent_identity_hops and _mismatches == {dict(want)}")
