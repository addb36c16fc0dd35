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
