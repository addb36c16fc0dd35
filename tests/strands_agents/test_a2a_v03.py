"""a2a-sdk 0.3 (what Strands' A2A extra pins), real servers on 127.0.0.1: Strands' ``A2AServer``
called by a plain a2a-sdk 0.3 client and by Strands' ``A2AAgent``. The same CLIENT and SERVER spans,
attributes and delegation ids as with a2a-sdk 1.x; ``resumed`` on the serving agent's run matches the
history its model saw (``seen=<n>``): a client that sends the contextId continues, ``A2AAgent``
(which never sends one) starts a new remote conversation on every call, and the caller's span says so."""

from __future__ import annotations

import uuid

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, TextPart
from offline_strands import OfflineModel, seen
from opentelemetry.trace import SpanKind
from strands import Agent, tool
from strands.agent.a2a_agent import A2AAgent
from strands.session.file_session_manager import FileSessionManager
from strands_a2a_support import serving, specialist_factory

import a2a
from metric_points import metric_points
from otel_agent_identity.scope import new_delegation_id

pytestmark = pytest.mark.e2e
CONV, EXEC, DELEG = "gen_ai.conversation.id", "agent_identity.execution.id", "agent_identity.delegation.id"
RESUMED, PREVIOUS = "agent_identity.conversation.resumed", "agent_identity.conversation.previous_id"
assert a2a.__name__ and __import__("importlib.metadata").metadata.version("a2a-sdk").startswith("0.3")


def _message(text: str, context_id: str | None = None) -> Message:
    return Message(
        role=Role.user, parts=[Part(root=TextPart(text=text))], message_id=uuid.uuid4().hex, context_id=context_id
    )


def _answer(event) -> str:
    task = event[0] if isinstance(event, tuple) else event
    parts = task.parts if isinstance(task, Message) else [p for a in task.artifacts or () for p in a.parts]
    return "".join(p.root.text for p in parts if getattr(p.root, "text", None))


def _by_name(exporter, prefix, kind=None):
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix) and (kind is None or s.kind is kind)]


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_plain_client_continues_the_context_it_sends(instrumentor, exporter, tmp_path, streaming):
    with serving(specialist_factory(str(tmp_path))) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
            sent, answers, context_id = [], [], None
            for turn in range(2):
                message = _message(f"hello {turn}", context_id)
                events = [e async for e in client.send_message(message)]
                task = events[-1][0]
                context_id = task.context_id
                sent.append(message.message_id)
                answers.append(_answer(events[-1]))
    assert [seen(a) for a in answers] == [1, 3]  # ground truth: turn 2's model saw turn 1
    clients = _by_name(exporter, "invoke_agent", SpanKind.CLIENT)
    servers = _by_name(exporter, "SendStreamingMessage" if streaming else "SendMessage", SpanKind.SERVER)
    runs = _by_name(exporter, "invoke_agent specialist", SpanKind.INTERNAL)
    assert len(clients) == len(servers) == len(runs) == 2
    for turn, (c, s, r, mid) in enumerate(zip(clients, servers, runs, sent, strict=True)):
        a = c.attributes
        assert c.name == "invoke_agent specialist" and a[CONV] == context_id
        assert a["a2a.message.id"] == mid and a[DELEG] == new_delegation_id(transport_key=mid)
        assert a["a2a.method.name"] == ("SendStreamingMessage" if streaming else "SendMessage")
        assert a["a2a.task.state"] == "TASK_STATE_COMPLETED" and a["a2a.protocol.version"].startswith("0.3")
        assert a["server.address"] == "127.0.0.1" and isinstance(a["server.port"], int)
        assert (a.get("agent_identity.conversation.requested_id") == context_id) is (turn == 1)
        assert s.parent.span_id == c.context.span_id and s.context.trace_id == c.context.trace_id  # traceparent
        assert s.attributes[CONV] == context_id and s.attributes["a2a.message.id"] == mid
        assert s.attributes["a2a.task.id"] == a["a2a.task.id"]
        assert r.context.trace_id == c.context.trace_id
        assert r.attributes[CONV] == context_id and r.attributes[RESUMED] is (turn == 1)  # as the model saw
        assert DELEG not in s.attributes and DELEG not in r.attributes  # identity stays in the caller


@pytest.fixture
def metric_reader(tracer_provider, exporter):
    """The instrumentor on, its counters on a meter provider read by the test."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from otel_agent_identity import AgentIdentityInstrumentor

    reader = InMemoryMetricReader()
    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
    yield reader
    inst.uninstrument()


async def test_a2a_agent_starts_a_new_remote_conversation_every_call(metric_reader, exporter, tmp_path):
    """Strands' ``A2AAgent`` never sends a contextId: each call lands in a new server context, whose
    agent starts from nothing (its model saw 1 message, ``resumed`` false). Inside the caller's
    conversation the second call is marked with the context the first one was in."""
    with serving(specialist_factory(str(tmp_path / "server"))) as url:
        remote = A2AAgent(endpoint=url, name="specialist")

        @tool
        async def ask_specialist(input: str) -> str:
            """Asks the remote specialist."""
            return str(await remote.invoke_async(input))

        orchestrator = Agent(
            name="orchestrator",
            model=OfflineModel(),
            tools=[ask_specialist],
            callback_handler=None,
            session_manager=FileSessionManager(session_id="conv-orch", storage_dir=str(tmp_path / "client")),
        )
        first = await remote.invoke_async("direct call")
        assert seen(str(first)) == 1
        await orchestrator.invoke_async("turn 1")
        await orchestrator.invoke_async("turn 2")
    assert "seen=1" in str(orchestrator.messages[-3:])  # the remote agent saw 1 message on turn 2 as well
    clients = _by_name(exporter, "invoke_agent specialist", SpanKind.CLIENT)
    runs = _by_name(exporter, "invoke_agent specialist", SpanKind.INTERNAL)
    assert len(clients) == len(runs) == 3
    contexts = [c.attributes[CONV] for c in clients]
    assert len(set(contexts)) == 3  # three calls, three remote conversations
    for c, r in zip(clients, runs, strict=True):
        assert "agent_identity.conversation.requested_id" not in c.attributes  # nothing asked to continue
        assert len(c.attributes[DELEG]) == 32 and c.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
        assert r.context.trace_id == c.context.trace_id and r.attributes[RESUMED] is False
        assert r.attributes[CONV] == c.attributes[CONV]  # the server's agent is in the context it answered in
    direct, in_turn_1, in_turn_2 = clients
    assert "agent_identity.parent.execution.id" not in direct.attributes
    assert in_turn_1.attributes["agent_identity.parent.conversation.id"] == "conv-orch"
    assert PREVIOUS not in in_turn_1.attributes
    assert in_turn_2.attributes[PREVIOUS] == in_turn_1.attributes[CONV]  # the delegate restarted: visible
    (restarts,) = metric_points(metric_reader, "agent_identity.delegate.restarts")
    assert restarts.value == 1 and restarts.attributes["framework"] == "strands"
    assert restarts.attributes["agent"] == "specialist"


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_a_failed_remote_task_fails_both_sides(instrumentor, exporter, streaming):
    def failing(context_id):
        model = OfflineModel(fail=RuntimeError("down"))
        return Agent(name="specialist", description="Fails.", model=model, callback_handler=None)

    with serving(failing) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
            events = [e async for e in client.send_message(_message("hello"))]
    assert events[-1][0].status.state == "failed"  # the call succeeded, the delegated work did not
    (c,) = _by_name(exporter, "invoke_agent specialist", SpanKind.CLIENT)
    (s,) = _by_name(exporter, "SendStreamingMessage" if streaming else "SendMessage", SpanKind.SERVER)
    (r,) = _by_name(exporter, "invoke_agent specialist", SpanKind.INTERNAL)
    for span in (c, s):
        assert not span.status.is_ok and span.attributes["error.type"] == "TASK_STATE_FAILED"
    assert not r.status.is_ok and r.attributes[EXEC] and r.context.trace_id == c.context.trace_id


def test_traceparent_joins_the_callers_own_headers_without_changing_its_context():
    from a2a.client.middleware import ClientCallContext
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace import TracerProvider

    from otel_agent_identity.adapters.a2a import v03

    mine = ClientCallContext(state={"http_kwargs": {"headers": {"authorization": "Bearer t"}, "timeout": 5}, "k": 1})
    with TracerProvider().get_tracer("t").start_as_current_span("send") as span:
        sent = v03.inject_trace_context(mine)
    headers = sent.state["http_kwargs"]["headers"]
    assert headers["authorization"] == "Bearer t" and sent.state["http_kwargs"]["timeout"] == 5 and sent.state["k"] == 1
    assert headers["traceparent"].split("-")[2] == format(span.get_span_context().span_id, "016x")
    assert mine.state == {"http_kwargs": {"headers": {"authorization": "Bearer t"}, "timeout": 5}, "k": 1}
    assert v03.inject_trace_context(mine) is mine  # no current span: nothing to send, the caller's own
    assert otel_trace.get_current_span() is otel_trace.INVALID_SPAN


def test_0_3_events_read_as_1_x_ones():
    from a2a.types import Task, TaskState, TaskStatus, TaskStatusUpdateEvent

    from otel_agent_identity.adapters.a2a.attributes import event_facts

    task = Task(id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.input_required))
    update = TaskStatusUpdateEvent(
        task_id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.completed), final=True
    )
    want = {"context_id": "c-1", "task_id": "t-1", "state": "TASK_STATE_INPUT_REQUIRED"}
    assert event_facts((task, None)) == event_facts((task, update)) == event_facts(task) == want  # the client's Task
    assert event_facts(update) == {**want, "state": "TASK_STATE_COMPLETED"}  # the server's event
    assert event_facts(_message("hi", "c-2")) == {"context_id": "c-2"}
