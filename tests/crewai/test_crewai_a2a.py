"""CrewAI's A2A pieces (a2a-sdk 0.3, real HTTP on 127.0.0.1): the executor helper
(``crewai.a2a.utils.task.execute``) serves each request with a fresh ``Task`` and no memory keyed
by the contextId, so its run is in the request's contextId and ``resumed=false``, which the model
confirms (it sees only the request, turn after turn); an executor that gives the contextId to a
persisted conversational Flow (``examples/crewai_specialist.py``'s ``FlowExecutor``) continues, and
its turn says ``resumed=true`` from what CrewAI restored; CrewAI's A2A send
(``execute_a2a_delegation``) is a CLIENT run with a delegation id in the remote conversation."""

from __future__ import annotations

import socket
import threading
import time

import pytest

pytest.importorskip("a2a.server.apps")

import crewai_specialist
import uvicorn
from a2a.server.agent_execution import AgentExecutor
from crew_support import CONV, DELEG, EXEC, PARENT_EXEC, RESUMED, agent_spans, forecaster, spans_of
from crewai.a2a.utils import task as crewai_a2a_task
from crewai.a2a.utils.delegation import execute_a2a_delegation
from offline_crewai import seen


class CrewExecutor(AgentExecutor):
    """The application's a2a-sdk executor, as CrewAI documents it: its helper does the work."""

    def __init__(self) -> None:
        self.agent = forecaster()

    async def execute(self, context, event_queue) -> None:
        await crewai_a2a_task.execute(self.agent, context, event_queue)

    async def cancel(self, context, event_queue) -> None:
        raise NotImplementedError


@pytest.fixture(scope="module")
def server():
    yield from _serve(CrewExecutor())


@pytest.fixture(scope="module")
def flow_server(tmp_path_factory):
    yield from _serve(crewai_specialist.FlowExecutor("forecaster", None, str(tmp_path_factory.mktemp("flows"))))


def _serve(executor):
    """Serve ``executor`` over A2A 0.3 on 127.0.0.1 in a thread; yields its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    app = crewai_specialist.a2a_app(executor, "forecaster", url)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the A2A server did not start"
        time.sleep(0.05)
    yield url
    srv.should_exit = True
    thread.join(timeout=30)


def _send(url, context_id=None):
    return execute_a2a_delegation(
        endpoint=url, auth=None, timeout=30, task_description="weather in Paris?", context_id=context_id
    )


def test_served_requests_are_never_resumed_and_sends_are_delegations(instrumentor, exporter, server):
    first = _send(server)
    assert "sunny in Paris" in first["result"] and seen(first["result"]) == 4
    (client,) = agent_spans(exporter, f"invoke_agent {server}")
    (served,) = agent_spans(exporter, "invoke_agent Forecaster")
    cid = served.attributes[CONV]
    assert client.kind.name == "CLIENT" and len(client.attributes[DELEG]) == 32
    assert client.attributes[CONV] == cid  # the contextId the server answered in, learnt after turn 1
    assert served.attributes[RESUMED] is False
    assert "tool-body" in [s.name for s in spans_of(exporter, served.attributes[EXEC])]
    assert all(s.attributes.get(CONV) == cid for s in spans_of(exporter, served.attributes[EXEC]))
    exporter.clear()

    second = _send(server, context_id=cid)  # the caller continues the conversation...
    assert seen(second["result"]) == 4  # ...the served agent saw only this request: it forgot
    (client2,) = agent_spans(exporter, f"invoke_agent {server}")
    (served2,) = agent_spans(exporter, "invoke_agent Forecaster")
    assert client2.attributes[CONV] == served2.attributes[CONV] == cid
    assert served2.attributes[RESUMED] is False
    assert client2.attributes[DELEG] != client.attributes[DELEG]


def test_agent_with_an_a2a_client_config_delegates(instrumentor, exporter, server):
    """A crew agent with ``a2a=A2AClientConfig(endpoint=...)``: CrewAI's own delegation loop sends
    the task; the send is a CLIENT run nested in the crew's, with a delegation id."""
    from crewai.a2a.config import A2AClientConfig
    from offline_crewai import OfflineA2ACaller

    from crewai import Agent, Crew, Task

    caller = Agent(role="Caller", goal="g", backstory="b", llm=OfflineA2ACaller(), a2a=A2AClientConfig(endpoint=server))
    crew = Crew(
        name="calling", agents=[caller], tasks=[Task(description="weather?", expected_output="t", agent=caller)]
    )
    assert "sunny in Paris" in crew.kickoff().raw  # the remote answer came back through CrewAI's loop
    (outer,) = agent_spans(exporter, "invoke_agent calling")
    (send,) = [s for s in agent_spans(exporter) if s.kind.name == "CLIENT"]
    (served,) = agent_spans(exporter, "invoke_agent Forecaster")
    assert send.attributes[PARENT_EXEC] == outer.attributes[EXEC] and len(send.attributes[DELEG]) == 32
    assert send.attributes[CONV] == served.attributes[CONV] and served.attributes[RESUMED] is False
    assert CONV not in outer.attributes  # the crew has none of its own; the remote conversation is the send's


def test_a_persisted_flow_served_over_a2a_continues_the_context(instrumentor, exporter, flow_server):
    """Both ways, against the model's count: turn 2 in the same contextId gets turn 1 back from
    ``@persist`` (a fresh flow instance: ``resumed=true``, the model saw 4 messages); another
    contextId starts from nothing (``resumed=false``, 2 messages)."""
    first = _send(flow_server)
    assert seen(first["result"]) == 2
    (turn,) = agent_spans(exporter, "invoke_agent CrewFlow")
    cid = turn.attributes[CONV]
    assert turn.attributes[RESUMED] is False
    exporter.clear()
    assert seen(_send(flow_server, context_id=cid)["result"]) == 4  # the model got turn 1
    (turn2,) = agent_spans(exporter, "invoke_agent CrewFlow")
    assert turn2.attributes[CONV] == cid and turn2.attributes[RESUMED] is True
    (send,) = [s for s in agent_spans(exporter) if s.kind.name == "CLIENT"]
    assert send.attributes[CONV] == cid
    exporter.clear()
    assert seen(_send(flow_server, context_id="another-context")["result"]) == 2
    (turn3,) = agent_spans(exporter, "invoke_agent CrewFlow")
    assert turn3.attributes[CONV] == "another-context" and turn3.attributes[RESUMED] is False
