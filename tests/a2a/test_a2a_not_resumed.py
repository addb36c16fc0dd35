"""``agent_identity.state.not_resumed`` (the serving process's counter) counts a run that resumed
nothing only where this process had already answered in the requested contextId: state really
lost. A client that names a new contextId itself (a2a-sdk ``context_id=uuid4()``) asks to
"continue" a context the callee never answered: not counted (the collector judges it
``first_turn``). A restarted process has no memory of its answers: not counted either (the
collector's ``state_not_resumed`` covers it). Real a2a-sdk client and server (uvicorn, 127.0.0.1,
in this process: its metric reader sees the server's counter); ground truth: how many messages the
executor's model saw per request (``examples/specialist.py`` shapes, ``--truth``)."""

from __future__ import annotations

import json
import uuid

import a2a_harness as h
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a_test_support import send_text
from agent_framework.a2a import A2AAgent
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from specialist import CONTINUES, build_app

import otel_agent_identity
from metric_points import metric_points
from otel_agent_identity import continuity

pytestmark = pytest.mark.e2e

NOT_RESUMED = "agent_identity.state.not_resumed"
#: a forgetting and a continuing shape of each counting path: an adapter's run (Agent Framework),
#: the executor's own ``otel_agent_identity.resumed`` declaration (plain)
SHAPES = ("a2a-executor", "session-local", "plain-forgets", "plain")


@pytest.fixture
def reader(tracer_provider, exporter, monkeypatch):
    monkeypatch.setattr(continuity, "served_contexts", continuity.SeenKeys())
    reader = InMemoryMetricReader()
    inst = otel_agent_identity.AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
    yield reader
    inst.uninstrument()


def not_resumed(reader) -> int:
    return sum(point.value for point in metric_points(reader, NOT_RESUMED))


class Specialist:
    """One specialist of ``shape`` and its ground truth: the messages its model saw per request."""

    def __init__(self, client, truth) -> None:
        self.client, self.truth, self.read = client, truth, 0

    async def send(self, context_id: str) -> tuple[str, int]:
        """One request (``context_id`` empty: none); returns (the contextId answered in, messages seen)."""
        answered = await send_text(self.client, context_id)
        lines = self.truth.read_text().splitlines() if self.truth.exists() else []
        seen, self.read = [json.loads(line)["messages"] for line in lines[self.read :]], len(lines)
        assert len(seen) == 1, seen  # one model call per request
        return answered, seen[0]


async def _turns(
    shape: str, tmp_path, reader, first: str, restart_before: int = 0, stream: bool = False
) -> list[tuple[int, int]]:
    """Three turns of one conversation (turn 1 requests ``first``: a client-minted id, or empty);
    returns (messages the model saw, the counter's increase) per turn. ``restart_before``: the
    process's memory of its answers is lost before that turn (a restart). ``stream``: a streaming
    client and executor (``A2AExecutor(stream=True)``)."""
    truth = tmp_path / f"{shape}.jsonl"
    out = []
    app = h.serving_in_loop(lambda url: build_app(url, shape, shape, truth=str(truth), stream=stream))
    async with app as url, httpx.AsyncClient(timeout=30) as http:
        client = await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=stream))
        specialist, context_id = Specialist(client, truth), first
        for turn in (1, 2, 3):
            if turn == restart_before:
                continuity.served_contexts = continuity.SeenKeys()
            before = not_resumed(reader)
            answered, seen = await specialist.send(context_id)
            assert answered and (not first or answered == first)  # ground truth: one context throughout
            context_id = answered
            out.append((seen, not_resumed(reader) - before))
    return out


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("first", ["client-minted", "server-minted"])
async def test_counted_only_when_this_process_answered_in_the_context_before(reader, tmp_path, shape, first):
    turns = await _turns(shape, tmp_path, reader, uuid.uuid4().hex if first == "client-minted" else "")
    seen = [s for s, _ in turns]
    assert seen[0] == 1 and [s > 1 for s in seen[1:]] == [CONTINUES[shape]] * 2  # really continues / forgets
    # turn 1: never (nothing to resume yet, the client named the context or not); later: each lost state
    assert [n for _, n in turns] == ([0, 0, 0] if CONTINUES[shape] else [0, 1, 1])


async def test_streaming_client_and_executor(reader, tmp_path):
    turns = await _turns("a2a-executor", tmp_path, reader, uuid.uuid4().hex, stream=True)
    assert turns == [(1, 0), (1, 1), (1, 1)]


@pytest.mark.parametrize("shape", ["a2a-executor", "plain-forgets"])
async def test_a_restarted_process_does_not_count_its_first_request(reader, tmp_path, shape):
    turns = await _turns(shape, tmp_path, reader, uuid.uuid4().hex, restart_before=2)
    assert turns == [(1, 0), (1, 0), (1, 1)]  # turn 2 lost state, unseen here (the collector's verdict)


@pytest.mark.parametrize("shape", ["a2a-executor", "session-local"])
async def test_agent_framework_session_with_a_new_service_session_id(reader, tmp_path, shape):
    """Agent Framework's client names the context: ``get_session(service_session_id=<new id>)``."""
    truth = tmp_path / "truth.jsonl"
    minted, counts = uuid.uuid4().hex, []
    async with h.serving_in_loop(lambda url: build_app(url, shape, shape, truth=str(truth))) as url:
        agent = A2AAgent(name=shape, url=url)
        session = agent.get_session(service_session_id=minted)
        for turn in (1, 2, 3):
            before = not_resumed(reader)
            await agent.run(f"hello {turn}", session=session)
            counts.append(not_resumed(reader) - before)
    assert (session.service_session_id or {}).get("context_id") == minted  # the server kept the client's id
    seen = [json.loads(line)["messages"] for line in truth.read_text().splitlines()]
    assert len(seen) == 3 and seen[0] == 1 and [s > 1 for s in seen[1:]] == [CONTINUES[shape]] * 2
    assert counts == ([0, 0, 0] if CONTINUES[shape] else [0, 1, 1])
