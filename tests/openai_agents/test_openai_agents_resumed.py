"""``agent_identity.conversation.resumed`` of OpenAI Agents SDK runs, against what the model really
saw: a session's items (read by the SDK itself), a service-side chain through
``previous_response_id`` (the real ``OpenAIResponsesModel`` against a local Responses stand-in), and
history given in the input; both ways."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from agents import Agent, Runner, SQLiteSession
from agents.testing import ScriptedModel
from oa_helpers import reply_seen, spans_named

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent_framework"))
from responses_standin import ResponsesStandIn

RESUMED = "agent_identity.conversation.resumed"


def _resumed(exporter) -> list:
    return [s.attributes.get(RESUMED) for s in spans_named(exporter.get_finished_spans(), "invoke_agent")]


def _agent(turns: int) -> Agent:
    return Agent(name="helper", instructions="be brief", model=ScriptedModel([reply_seen() for _ in range(turns)]))


def test_a_session_with_items_resumed_a_new_one_did_not(instrumentor, exporter):
    agent = _agent(4)

    async def go():
        session = SQLiteSession("conv-1")
        out = [await Runner.run(agent, "hello", session=session) for _ in range(3)]
        out.append(await Runner.run(agent, "hello", session=SQLiteSession("conv-2")))
        return [o.final_output for o in out]

    assert asyncio.run(go()) == ["seen 1", "seen 3", "seen 5", "seen 1"]
    assert _resumed(exporter) == [False, True, True, False]


def test_no_session_never_resumed_history_in_the_input_did(instrumentor, exporter):
    agent = _agent(3)

    async def go():
        first = await Runner.run(agent, "hello")
        again = await Runner.run(agent, "hello")
        fed = await Runner.run(agent, [*first.to_input_list(), {"role": "user", "content": "more"}])
        return [first.final_output, again.final_output, fed.final_output]

    assert asyncio.run(go()) == ["seen 1", "seen 1", "seen 3"]
    assert _resumed(exporter) == [False, False, True]


def test_a_previous_response_id_chain_resumed(instrumentor, exporter):
    from agents import OpenAIResponsesModel
    from openai import AsyncOpenAI

    with ResponsesStandIn() as standin:
        client = AsyncOpenAI(base_url=standin.base_url, api_key="offline", max_retries=0)
        agent = Agent(name="helper", instructions="be brief", model=OpenAIResponsesModel("gpt-standin", client))

        async def go():
            seen, previous = [], None
            for _ in range(3):
                result = await Runner.run(agent, "hello", previous_response_id=previous)
                seen.append(int(re.search(r"\[seen (\d+)\]", result.final_output).group(1)))
                previous = result.last_response_id
            return seen

        assert asyncio.run(go()) == [1, 3, 5]
    assert _resumed(exporter) == [False, True, True]


def test_streamed_runs_record_it_too(instrumentor, exporter):
    agent = _agent(2)

    async def go():
        session = SQLiteSession("conv-s")
        for _ in range(2):
            result = Runner.run_streamed(agent, "hello", session=session)
            async for _event in result.stream_events():
                pass

    asyncio.run(go())
    assert _resumed(exporter) == [False, True]
