"""Issue 22 on real OpenAI Agents runs: a tool's work handed to a thread pool the traced way carries
the run's ids (and a reused worker outside the run none); the application's own conversation id on
a tool's span always wins, under any count limit; ``suppress_instrumentation`` turns us off."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agents import Runner, SQLiteSession, function_tool
from agents.memory import OpenAIConversationsSession
from oa_helpers import CONV, EXEC, LocalService, agent_with_tool, call_tool, reply_seen, spans_named
from openai import AsyncOpenAI
from opentelemetry import trace
from opentelemetry.instrumentation.utils import suppress_instrumentation

from app_shapes import LIMITS, NAME, SHAPES, check, run_shape

tracer = trace.get_tracer("oa-context-tests")
_POOL: dict = {}


def _work(tag: str) -> None:
    tracer.start_span(f"worker {tag}").end()


@function_tool
def pooled(city: str) -> str:
    """Hand the work to the thread pool."""
    _POOL["submit"](_POOL["pool"], _work, city).result(10)
    return "done"


@function_tool
def shaped(city: str) -> str:
    """Run the application code shape named ``city``."""
    run_shape(city)
    return "done"


async def test_tool_work_in_a_thread_pool_has_the_runs_ids_and_the_reused_worker_none(instrumentor, exporter, submit):
    with ThreadPoolExecutor(max_workers=1) as pool:
        _POOL.update(pool=pool, submit=submit)
        agent = agent_with_tool("pooler", [call_tool("pooled", {"city": "in run"}), reply_seen()], tools=[pooled])
        await Runner.run(agent, "hi", session=SQLiteSession("conv-oa-pool"))
        submit(pool, _work, "after").result(10)
    spans = exporter.get_finished_spans()
    (run,) = spans_named(spans, "invoke_agent pooler")
    (inside,) = spans_named(spans, "worker in run")
    (after,) = spans_named(spans, "worker after")
    assert (inside.attributes.get(CONV), inside.attributes.get(EXEC)) == ("conv-oa-pool", run.attributes[EXEC])
    assert CONV not in after.attributes and EXEC not in after.attributes


async def test_suppressed_run_has_no_span_or_attribute_of_ours(instrumentor, exporter):
    agent = agent_with_tool("quiet", [call_tool("shaped", {"city": "set later"}), reply_seen()], tools=[shaped])
    with suppress_instrumentation():
        result = await Runner.run(agent, "hi", session=SQLiteSession("conv-quiet"))
    assert result.final_output.startswith("seen")
    spans = exporter.get_finished_spans()
    assert not spans_named(spans, "invoke_agent")
    assert [dict(s.attributes) for s in spans if s.name == NAME] == [{"app.first": "x", CONV: "app-own"}]


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_the_applications_own_conversation_id_in_a_tool_wins(limited, exporter, shape, limit):
    limited(**({} if limit is None else {"max_span_attributes": limit}))
    agent = agent_with_tool("shaper", [call_tool("shaped", {"city": shape}), reply_seen()], tools=[shaped])
    await Runner.run(agent, "hi", session=SQLiteSession("conv-oa-shapes"))
    spans = exporter.get_finished_spans()
    (run,) = spans_named(spans, "invoke_agent shaper")
    (app,) = [s for s in spans if s.name == NAME]
    assert app.parent.span_id == run.context.span_id  # inside the run
    check(app, shape, limit, run.attributes[EXEC])


@function_tool
def claim(city: str) -> str:
    """Set the application's own conversation id on the current span (``city``: the id, or ``-``)."""
    if city != "-":
        trace.get_current_span().set_attribute(CONV, city)
    tracer.start_span("tool work").end()
    return "done"


@pytest.mark.parametrize("own", ["mine", None], ids=["app sets its id", "app sets nothing"])
@pytest.mark.parametrize("learned", [False, True], ids=["sqlite session", "id learned mid-run"])
async def test_the_applications_own_conversation_id_on_the_run_span_wins(instrumentor, exporter, own, learned):
    """The run's ``invoke_agent`` span is ours (the SDK has no OpenTelemetry span): an id the
    application sets on it from a tool stays, also when the run learns its id from the service
    during the run (an OpenAI Conversations session's turn 1); without one, the span reports the
    run's id (the session's, or the one the service assigned)."""
    agent = agent_with_tool("owner", [call_tool("claim", {"city": own or "-"}), reply_seen()], tools=[claim])
    with LocalService() as service:  # its own: the shared one's conversations are counted elsewhere
        if learned:
            client = AsyncOpenAI(base_url=f"{service.url}/v1", api_key="offline", max_retries=0)
            session: Any = OpenAIConversationsSession(openai_client=client)
        else:
            session = SQLiteSession("conv-oa-owned")
        await Runner.run(agent, "hi", session=session)
    run_id = session.session_id
    assert run_id.startswith("conv_srv_" if learned else "conv-oa-owned")
    spans = exporter.get_finished_spans()
    (run,) = spans_named(spans, "invoke_agent owner")
    (work,) = spans_named(spans, "tool work")
    assert run.attributes[CONV] == (own or run_id)
    assert (work.attributes[CONV], work.attributes[EXEC]) == (run_id, run.attributes[EXEC])  # the run's id inside
    assert "agent_identity.conversation.changed" not in run.attributes
