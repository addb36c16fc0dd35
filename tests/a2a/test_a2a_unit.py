"""The a2a-sdk adapter without a network: a stub transport under the real ``BaseClient``, the server
wrapper around stub handler methods, the pure attribute readers, lifecycle and error discipline."""

from __future__ import annotations

import pytest
from a2a.client import ClientCallContext, ClientConfig
from a2a.client.base_client import BaseClient
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)
from opentelemetry import baggage, context, trace
from opentelemetry.trace import SpanKind

import otel_agent_identity
from otel_agent_identity.adapters import a2a as a2a_adapter
from otel_agent_identity.adapters.a2a import attributes as facts
from otel_agent_identity.adapters.a2a.server import server_wrapper
from otel_agent_identity.scope import new_delegation_id


class StubTransport:
    """Answers every send with a completed task in context ``ctx-server`` and records the call."""

    def __init__(self) -> None:
        self.contexts: list = []

    async def send_message(self, request, *, context=None):
        self.contexts.append(context)
        task = Task(
            id="task-1",
            context_id=request.message.context_id or "ctx-server",
            status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED),
        )
        return SendMessageResponse(task=task)


def _client(transport: StubTransport | None = None) -> tuple[BaseClient, StubTransport]:
    transport = transport or StubTransport()
    card = AgentCard(
        name="stub",
        capabilities=AgentCapabilities(streaming=False),
        supported_interfaces=[AgentInterface(url="http://127.0.0.1:9/", protocol_version="1.0")],
    )
    return BaseClient(card, ClientConfig(streaming=False), transport, []), transport


def _request(message_id: str = "m-1", context_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, parts=[Part(text="hi")], message_id=message_id, context_id=context_id)
    )


async def _send(client, request, **kw) -> list:
    return [e async for e in client.send_message(request, **kw)]


async def test_direct_send_span_ids_and_traceparent_only(instrumentor, exporter):
    client, transport = _client()
    token = context.attach(baggage.set_baggage("gen_ai.conversation.id", "secret"))
    try:
        caller = ClientCallContext(service_parameters={"X-App": "1"})
        await _send(client, _request(), context=caller)
    finally:
        context.detach(token)
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent stub"]
    assert span.kind is SpanKind.CLIENT
    a = span.attributes
    assert a["gen_ai.conversation.id"] == "ctx-server"  # first turn: as the server assigned it
    assert a["a2a.task.id"] == "task-1" and a["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert a["agent_identity.delegation.id"] == new_delegation_id(transport_key="m-1")
    assert (a["server.address"], a["server.port"], a["a2a.protocol.version"]) == ("127.0.0.1", 9, "1.0")
    sent = transport.contexts[0].service_parameters
    assert sent["X-App"] == "1" and "baggage" not in sent
    assert sent["traceparent"].split("-")[2] == format(span.context.span_id, "016x")
    assert caller.service_parameters == {"X-App": "1"}  # the caller's object is not mutated


async def test_conversation_as_sent_and_key_from_application(instrumentor, exporter):
    client, _ = _client()
    with otel_agent_identity.delegation(key="job-7") as did:
        await _send(client, _request("m-2", "ctx-app"))
    (span,) = exporter.get_finished_spans()
    assert span.attributes["gen_ai.conversation.id"] == "ctx-app"
    assert span.attributes["agent_identity.delegation.id"] == did


async def test_instrumentation_error_never_reaches_the_application(instrumentor, exporter, monkeypatch):
    client, transport = _client()
    monkeypatch.setattr(facts, "request_attributes", lambda *a, **k: 1 / 0)
    events = await _send(client, _request())
    assert events[0].task.id == "task-1" and transport.contexts == [None]


async def test_uninstrument_restores_and_twice_is_harmless(tracer_provider, exporter):
    inst = otel_agent_identity.AgentIdentityInstrumentor()
    for _ in range(2):
        inst.instrument(tracer_provider=tracer_provider)
        inst.instrument(tracer_provider=tracer_provider)
        inst.uninstrument()
    client, transport = _client()
    await _send(client, _request())
    assert transport.contexts == [None] and not exporter.get_finished_spans()


def _call_context(traceparent: str):
    from a2a.server.context import ServerCallContext

    return ServerCallContext(state={"headers": {"traceparent": traceparent, "a2a-version": "1.0"}})


TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize("streaming", [False, True])
async def test_server_span_continues_the_caller_and_is_current_inside(instrumentor, exporter, streaming):
    seen = []
    task = Task(id="t-9", context_id="ctx-9", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))

    async def on_send(params, ctx):
        seen.append(trace.get_current_span())
        return task

    async def on_stream(params, ctx):
        seen.append(trace.get_current_span())
        yield task

    wrapper = server_wrapper(trace.get_tracer("t"), streaming)
    args = (_request("m-9"), _call_context(TRACEPARENT))
    if streaming:
        assert [e async for e in wrapper(on_stream, None, args, {})] == [task]
    else:
        assert await wrapper(on_send, None, args, {}) is task
    (span,) = exporter.get_finished_spans()
    assert span.kind is SpanKind.SERVER
    assert seen[0].get_span_context() == span.context  # the handler (and the executor it schedules) runs inside
    assert format(span.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert format(span.parent.span_id, "016x") == "b7ad6b7169203331"
    a = span.attributes
    assert span.name == a["a2a.method.name"] == ("SendStreamingMessage" if streaming else "SendMessage")
    assert (a["a2a.message.id"], a["a2a.task.id"], a["gen_ai.conversation.id"]) == ("m-9", "t-9", "ctx-9")
    assert a["a2a.protocol.version"] == "1.0"


async def test_server_error_is_recorded_and_reraised(instrumentor, exporter):
    async def on_send(params, ctx):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await server_wrapper(trace.get_tracer("t"), False)(on_send, None, (_request(), _call_context(TRACEPARENT)), {})
    (span,) = exporter.get_finished_spans()
    assert span.attributes["error.type"] == "ValueError"


@pytest.mark.parametrize("odd", [None, object(), 42, "text", StreamResponse()])
def test_readers_tolerate_odd_input(odd):
    assert facts.event_facts(odd) == {}
    assert facts.message_attributes(odd) == {}
    assert facts.request_attributes(odd)[facts.attrs.A2A_METHOD_NAME] == "SendMessage"
    assert a2a_adapter.context_rule(None, odd, None) is None


async def test_server_reads_grpc_metadata(instrumentor, exporter):
    from a2a.server.context import ServerCallContext

    class Servicer:  # the part of grpc.aio.ServicerContext the adapter reads
        def invocation_metadata(self):
            return (("traceparent", TRACEPARENT), ("a2a-version", "1.0"))

    async def on_send(params, ctx):
        return Task(id="t", context_id="c")

    ctx = ServerCallContext(state={"grpc_context": Servicer()})
    await server_wrapper(trace.get_tracer("t"), False)(on_send, None, (_request(), ctx), {})
    (span,) = exporter.get_finished_spans()
    assert format(span.parent.span_id, "016x") == "b7ad6b7169203331"


@pytest.mark.parametrize("state", [TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED])
async def test_failed_remote_task_marks_client_and_server_spans_as_errors(instrumentor, exporter, state):
    from opentelemetry.trace import StatusCode

    failed = Task(id="t-f", context_id="ctx-f", status=TaskStatus(state=state))
    client, transport = _client()

    async def failing_send(request, *, context=None):
        return SendMessageResponse(task=failed)

    transport.send_message = failing_send
    events = await _send(client, _request("m-f"))  # the call itself succeeds: the app gets the task
    assert len(events) == 1

    async def on_send(params, ctx):
        return failed

    assert (
        await server_wrapper(trace.get_tracer("t"), False)(on_send, None, (_request(), _call_context(TRACEPARENT)), {})
        is failed
    )
    spans = exporter.get_finished_spans()
    assert {s.kind for s in spans} == {SpanKind.CLIENT, SpanKind.SERVER}
    for span in spans:
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == TaskState.Name(state)


async def test_completed_remote_task_is_not_an_error(instrumentor, exporter):
    from opentelemetry.trace import StatusCode

    client, _transport = _client()
    await _send(client, _request("m-ok"))
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.UNSET and "error.type" not in span.attributes


async def test_suppressed_send_and_serve_pass_through_with_no_span_of_ours(instrumentor, exporter):
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    client, transport = _client()
    task = Task(id="t-1", context_id="ctx-1", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))

    async def on_send(params, ctx):
        return task

    with suppress_instrumentation():
        events = await _send(client, _request())
        served = await server_wrapper(trace.get_tracer("t"), False)(on_send, None, (_request(), None), {})
    assert events and served is task and transport.contexts == [None]  # the call as made: nothing injected
    assert not exporter.get_finished_spans()


class FailingTransport(StubTransport):
    """Raises the application's ``error`` from every send."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    async def send_message(self, request, *, context=None):
        raise self.error


async def test_client_error_that_cannot_be_formatted_reaches_the_caller(instrumentor, exporter):
    from unprintable import Unprintable, assert_error_span

    error = Unprintable()
    client, _ = _client(FailingTransport(error))
    with pytest.raises(Unprintable) as raised:
        await _send(client, _request())
    assert raised.value is error and raised.traceback
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent stub"]
    assert_error_span(span)


@pytest.mark.parametrize("streaming", [False, True])
async def test_server_error_that_cannot_be_formatted_reaches_the_caller(instrumentor, exporter, streaming):
    from unprintable import Unprintable, assert_error_span

    error = Unprintable()

    async def on_send(params, ctx):
        raise error

    async def on_stream(params, ctx):
        raise error
        yield  # an async generator

    wrapper = server_wrapper(trace.get_tracer("t"), streaming)
    args = (_request(), _call_context(TRACEPARENT))
    with pytest.raises(Unprintable) as raised:
        if streaming:
            [e async for e in wrapper(on_stream, None, args, {})]
        else:
            await wrapper(on_send, None, args, {})
    assert raised.value is error and raised.traceback
    (span,) = exporter.get_finished_spans()
    assert_error_span(span)


@pytest.mark.parametrize("bad", ["x" * 5000, "a\nb", "\x00"], ids=["5000 chars", "newline", "NUL"])
async def test_a_peers_bad_ids_never_reach_a_span(instrumentor, exporter, bad, caplog, monkeypatch):
    """A2A ids come from the remote peer: a contextId, message id or task id that is not a printable
    str within max_id_length (the extractors' rule) is left off every span, with a warning; the
    request is still served, and a good id beside it is kept."""
    monkeypatch.setattr(facts, "_warned", set())  # one warning per field and process
    task = Task(id=bad, context_id=bad, status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))

    async def on_send(params, ctx):
        with trace.get_tracer("app").start_as_current_span("inside"):
            return task

    request = _request(message_id=bad, context_id=bad)
    with caplog.at_level("WARNING", logger="otel_agent_identity"):
        assert (
            await server_wrapper(trace.get_tracer("t"), False)(on_send, None, (request, _call_context(TRACEPARENT)), {})
            is task
        )
    client, _transport = _client()
    await _send(client, _request(message_id="m-ok", context_id=bad))
    spans = exporter.get_finished_spans()
    assert {s.name for s in spans} >= {"SendMessage", "inside", "invoke_agent stub"}
    for span in spans:
        for key, value in span.attributes.items():
            assert bad not in (value if isinstance(value, tuple) else (value,)), (span.name, key)
    (client_span,) = [s for s in spans if s.name == "invoke_agent stub"]
    assert client_span.attributes["a2a.message.id"] == "m-ok"
    assert "an A2A context_id was" in caplog.text


def test_the_a2a_sdk_release_is_read_once_per_process(monkeypatch):
    """``v03.installed()`` (asked on every instrument and uninstrument) reads the distribution's
    metadata once; the answer is this venv's release (a2a-sdk 1.x here: not 0.3)."""
    from importlib import metadata

    from otel_agent_identity.adapters.a2a import v03

    reads = []
    real = metadata.version

    def version(name):
        reads.append(name)
        return real(name)

    v03.installed.cache_clear()
    monkeypatch.setattr(metadata, "version", version)
    try:
        assert [v03.installed() for _ in range(3)] == [False] * 3
        assert reads == ["a2a-sdk"]
    finally:
        v03.installed.cache_clear()
