"""The report command's parsing on its own: durations, malformed Zipkin answers, an unreachable
server (the real-backend checks are in test_zipkin_stack.py)."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from otel_agent_identity import report


@pytest.mark.parametrize("text,seconds", [("30s", 30), ("15m", 900), ("1h", 3600), ("7d", 604800)])
def test_since(text, seconds):
    assert report.parse_since(text) == seconds


@pytest.mark.parametrize("text", ["", "0h", "1", "1w", "-1h", "1.5h", "h"])
def test_bad_since_is_refused(text):
    with pytest.raises(ValueError):
        report.parse_since(text)


def test_malformed_spans_are_skipped_not_fatal():
    traces = [
        [
            {
                "traceId": "a" * 32,
                "id": "1",
                "timestamp": 10,
                "tags": {"gen_ai.conversation.id": "c1"},
                "localEndpoint": {"serviceName": "orchestrator"},
            },
            {"traceId": "a" * 32, "id": "2", "parentId": "1", "tags": "not a dict"},
            "not a span",
            {
                "traceId": "a" * 32,
                "id": "3",
                "parentId": "1",
                "timestamp": 11,
                "localEndpoint": None,
                "tags": {"agent_identity.hop.result": "context_changed", "agent_identity.hop.mismatch": "true"},
            },
        ],
        [{"traceId": "b" * 32, "id": "1"}],  # no conversation id: not listed
        [],
    ]
    (conv,) = report.conversations(traces)
    assert conv.id == "c1" and conv.trace_ids == ["a" * 32] and conv.services == ["orchestrator"]
    assert [(h.result, h.flagged, h.callee) for h in conv.hops] == [("context_changed", True, None)]


def test_a_trace_belongs_to_its_earliest_conversation_id():
    trace = [
        {"traceId": "a" * 32, "id": "2", "timestamp": 20, "tags": {"gen_ai.conversation.id": "callee-ctx"}},
        {"traceId": "a" * 32, "id": "1", "timestamp": 10, "tags": {"gen_ai.conversation.id": "entry"}},
    ]
    assert [c.id for c in report.conversations([trace])] == ["entry"]


def test_hops_read_requested_answered_and_resumed_and_the_table_gives_the_reason():
    def hop(span_id, result, **tags):
        tags = {
            "agent_identity.hop.result": result,
            "agent_identity.hop.caller.service.name": "orchestrator",
            "agent_identity.hop.caller.conversation.id": "caller-own",
            **tags,
        }
        return {
            "traceId": "a" * 32,
            "id": span_id,
            "parentId": "1",
            "timestamp": int(span_id) * 10,
            "tags": tags,
            "localEndpoint": {"serviceName": "specialist"},
        }

    trace = [
        {"traceId": "a" * 32, "id": "1", "timestamp": 1, "tags": {"gen_ai.conversation.id": "c1"}},
        hop(
            "2",
            "first_turn",
            **{"agent_identity.hop.mismatch": "false", "agent_identity.hop.callee.conversation.id": "ctx-1"},
        ),
        hop(
            "3",
            "state_not_resumed",
            **{
                "agent_identity.hop.mismatch": "true",
                "agent_identity.hop.requested_id": "ctx-1",
                "agent_identity.hop.callee.conversation.id": "ctx-1",
                "agent_identity.hop.callee.resumed": "false",
            },
        ),
        hop(
            "4",
            "context_changed",
            **{
                "agent_identity.hop.mismatch": "true",
                "agent_identity.hop.requested_id": "ctx-1",
                "agent_identity.hop.callee.conversation.id": "ctx-2",
            },
        ),
        # a healthy hop carries each id once: the entry span's own conversation is the answered one,
        # and on `continued` the requested one too
        hop("5", "continued", **{"agent_identity.hop.mismatch": "false", "gen_ai.conversation.id": "ctx-1"}),
        hop(
            "6",
            "continued",
            **{"agent_identity.hop.mismatch": "false", "agent_identity.hop.callee.conversation.id": "ctx-3"},
        ),
    ]
    (conv,) = report.conversations([trace])
    assert [(h.result, h.flagged, h.asked, h.used, h.resumed) for h in conv.hops] == [
        ("first_turn", False, None, "ctx-1", None),
        ("state_not_resumed", True, "ctx-1", "ctx-1", False),
        ("context_changed", True, "ctx-1", "ctx-2", None),
        ("continued", False, "ctx-1", "ctx-1", None),
        ("continued", False, "ctx-3", "ctx-3", None),
    ]
    lines = report.table([conv], "http://zipkin", "1h").splitlines()
    assert [line.split(": ", 1)[1] for line in lines if line.lstrip().startswith("flagged")] == [
        "state_not_resumed (asked to continue ctx-1, the callee answered in it without resuming its state)",
        "context_changed (asked to continue ctx-1, the callee answered in ctx-2)",
    ]


@pytest.fixture
def server():
    """A real HTTP server on 127.0.0.1 that answers every GET with ``server.body``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(httpd.body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("body", [b"{}", b"not json", b"[1, 2]"])
def test_a_server_that_is_not_zipkin_exits_2(server, body, capsys):
    server.body = body
    assert report.main(["--zipkin", f"http://127.0.0.1:{server.server_port}"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_no_conversations_exits_0(server, capsys):
    server.body = b"[]"
    assert report.main(["--zipkin", f"http://127.0.0.1:{server.server_port}", "--since", "15m"]) == 0
    assert capsys.readouterr().out.startswith("0 conversation(s)")


def test_unreachable_zipkin_exits_2(capsys):
    assert report.main(["--zipkin", "http://127.0.0.1:9"]) == 2
    assert "cannot read http://127.0.0.1:9" in capsys.readouterr().err


def test_the_names_the_report_reads_are_rows_of_the_attribute_table():
    table = (Path(__file__).resolve().parents[2] / "docs" / "attributes.md").read_text()
    names = [
        v for k, v in vars(report).items() if k.isupper() and isinstance(v, str) and v.startswith("agent_identity.")
    ]
    assert names and all(f"| `{name}` |" in table for name in names)


def test_a_caller_without_a_run_of_its_own_gets_one_row_per_callee_conversation():
    """A supervisor with no agent run talks to billing and to shipping in one trace: its first send
    carries billing's context (the trace's earliest conversation id); each hop is filed under the
    context it asked to continue, each conversation gets its row, shipping's flagged hop under its own."""

    def span(span_id, service, **tags):
        return {
            "traceId": "a" * 32,
            "id": span_id,
            "parentId": "1" if span_id != "1" else None,
            "timestamp": int(span_id) * 10,
            "tags": tags,
            "localEndpoint": {"serviceName": service},
        }

    billing, shipping = "d1e5" + "0" * 28, "b18c" + "0" * 28
    trace = [
        span("2", "supervisor", **{"gen_ai.conversation.id": billing, "agent_identity.delegation.id": "del-b"}),
        span(
            "3",
            "billing",
            **{
                "gen_ai.conversation.id": billing,
                "agent_identity.hop.result": "continued",
                "agent_identity.hop.mismatch": "false",
                "agent_identity.hop.caller.service.name": "supervisor",
            },
        ),
        span("4", "supervisor", **{"gen_ai.conversation.id": shipping, "agent_identity.delegation.id": "del-s"}),
        span(
            "5",
            "shipping",
            **{
                "gen_ai.conversation.id": shipping,
                "agent_identity.hop.result": "state_not_resumed",
                "agent_identity.hop.mismatch": "true",
                "agent_identity.hop.requested_id": shipping,
                "agent_identity.hop.caller.service.name": "supervisor",
                "agent_identity.hop.callee.resumed": "false",
            },
        ),
    ]
    trace[1]["parentId"], trace[3]["parentId"] = "2", "4"
    convs = {c.id: c for c in report.conversations([trace])}
    assert set(convs) == {billing, shipping}
    assert [(h.callee, h.result) for h in convs[billing].hops] == [("billing", "continued")]
    assert [(h.callee, h.result, h.flagged) for h in convs[shipping].hops] == [("shipping", "state_not_resumed", True)]
    assert convs[billing].services == ["billing", "supervisor"] and convs[shipping].services == [
        "shipping",
        "supervisor",
    ]
    assert convs[billing].trace_ids == convs[shipping].trace_ids == ["a" * 32]
    text = report.table(list(convs.values()), "http://zipkin", "1h")
    assert f"\n{shipping}:\n  flagged   trace {'a' * 32}  supervisor -> shipping: state_not_resumed" in text
    assert f"\n{billing}:" not in text  # nothing broke there
    rows = [line.split()[0] for line in text.splitlines()[2:] if line and not line.startswith((" ", "\n"))]
    assert sorted(rows[:2]) == sorted([billing, shipping])


def test_a_caller_with_its_own_conversation_keeps_its_hops_whatever_their_contexts():
    trace = [
        {"traceId": "a" * 32, "id": "1", "timestamp": 1, "tags": {"gen_ai.conversation.id": "own"}},
        *(
            {
                "traceId": "a" * 32,
                "id": str(i),
                "parentId": "1",
                "timestamp": i,
                "tags": {"agent_identity.hop.result": "first_turn", "agent_identity.hop.callee.conversation.id": ctx},
            }
            for i, ctx in ((2, "ctx-a"), (3, "ctx-b"))
        ),
    ]
    (conv,) = report.conversations([trace])
    assert conv.id == "own" and [h.used for h in conv.hops] == ["ctx-a", "ctx-b"]
