"""A2A specialists whose agent runs on LangGraph, Agno, the OpenAI Agents SDK or LlamaIndex, each served by a
plain a2a-sdk ``AgentExecutor`` (``specialist.py --shape <name>``), one that continues each
contextId and one that forgets it, per framework, plus the healthy shapes a naive "new agent
conversation = forgot" or "no session = forgot" rule gets wrong. No tracing code: the framework
adapters record ``agent_identity.conversation.resumed`` from what the framework loaded.

Shapes (``CONTINUES``: what really happens on turns 2+ of one contextId):
  - ``langgraph-thread``: a checkpointer, ``thread_id`` = the contextId. Continues.
  - ``langgraph-new-thread``: a fresh ``thread_id`` per request, answered in the contextId. Forgets.
  - ``langgraph-stateless``: no checkpointer; the executor keeps each context's messages and feeds
    the whole history to the graph. Continues.
  - ``agno-session``: an Agno db (SQLite, ``--db PATH``, else in memory), ``session_id`` = the
    contextId, history added to the context. Continues; two processes on one ``--db`` are replicas.
  - ``agno-new-session``: a new session per request. Forgets.
  - ``agno-no-history``: a db and ``session_id`` = the contextId, but ``add_history_to_context``
    off: the session keeps the runs, the model never sees them. Forgets.
  - ``openai-session``: an OpenAI Agents ``SQLiteSession(contextId)`` per context. Continues.
  - ``openai-no-session``: no session. Forgets.
  - ``openai-previous-response``: the real ``OpenAIResponsesModel`` against a local Responses
    stand-in (``tests/agent_framework/responses_standin.py``, 127.0.0.1), continued through
    ``previous_response_id`` (the executor keeps the last response id per context). Continues.
  - ``llama-memory``: a LlamaIndex ``FunctionAgent`` run with one ``Memory`` per contextId
    (``Memory.from_defaults(session_id=contextId)``). Continues.
  - ``llama-context``: a ``FunctionAgent`` whose ``Context`` is persisted per contextId as JSON
    (``ctx.to_dict()``) and restored with ``Context.from_dict`` (LlamaIndex's documented way to
    keep a conversation between requests), the first request giving it a ``ChatMemoryBuffer``
    keyed by the contextId. With pydantic 2.14 LlamaIndex cannot serialise the memory, drops it
    with a warning, and every restored context starts empty: forgets; with pydantic < 2.14 it
    continues (``CONTINUES`` follows the installed pydantic).

Ground truth: each model reports how many messages of the conversation it saw per request
(``a2a_serve.write_truth``: 1, 3, 5 when it continues; 1, 1, 1 when it forgets). Each model call
takes ``OFFLINE_MODEL_LATENCY`` seconds (``model_latency``; default 0).
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor
from model_latency import think

CONTINUES = {
    "langgraph-thread": True,
    "langgraph-new-thread": False,
    "langgraph-stateless": True,
    "agno-session": True,
    "agno-new-session": False,
    "agno-no-history": False,
    "openai-session": True,
    "openai-no-session": False,
    "openai-previous-response": True,
    "llama-memory": True,
    # LlamaIndex serialises a context's ChatMemoryBuffer with pydantic < 2.14 only
    "llama-context": tuple(int(p) for p in version("pydantic").split(".")[:2]) < (2, 14),
}

Truth = Callable[[int, str | None], None]  # (messages seen, agent conversation id)


class _Executor(AgentExecutor):
    """Runs ``answer(text, context_id) -> reply`` and answers in the request's contextId."""

    def __init__(self, answer) -> None:
        self.answer = answer

    async def execute(self, context, event_queue) -> None:
        reply = await self.answer(get_message_text(context.message), context.context_id)
        await event_queue.enqueue_event(new_text_message(reply, context_id=context.context_id))

    async def cancel(self, context, event_queue) -> None:
        return None


# -- LangGraph -------------------------------------------------------------------------------
def _langgraph(shape: str, name: str, truth: Truth):
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, MessagesState, StateGraph
    from offline_langchain import OfflineToolModel

    model = OfflineToolModel()

    async def respond(state: MessagesState, config) -> dict:
        messages = state["messages"]
        truth(len(messages), config.get("configurable", {}).get("thread_id"))
        return {"messages": [await model.ainvoke(messages)]}

    graph = StateGraph(MessagesState)
    graph.add_node("respond", respond)
    graph.add_edge(START, "respond")
    stateless = shape == "langgraph-stateless"
    app = graph.compile(name=name, checkpointer=None if stateless else InMemorySaver())
    histories: dict[str, list] = {}

    async def answer(text: str, context_id: str) -> str:
        if stateless:
            messages = [*histories.get(context_id, []), HumanMessage(text)]
            out = await app.ainvoke({"messages": messages})
            histories[context_id] = out["messages"]
        else:
            thread = context_id if shape == "langgraph-thread" else uuid.uuid4().hex
            out = await app.ainvoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread}})
        return str(out["messages"][-1].content)

    return answer


# -- Agno ------------------------------------------------------------------------------------
def _agno(shape: str, name: str, truth: Truth, db_path: str | None):
    from agno.agent import Agent
    from offline_agno import OfflineToolModel

    class Model(OfflineToolModel):
        def _respond(self, messages: list, tools: list | None):
            seen = [m for m in messages if m.role in ("user", "assistant")]
            truth(len(seen), _current_session[0])
            return super()._respond(seen, tools)

    if db_path:
        from agno.db.sqlite import SqliteDb

        db = SqliteDb(db_file=db_path)
    else:
        from agno.db.in_memory import InMemoryDb

        db = InMemoryDb()
    agent = Agent(name=name, model=Model(), db=db, telemetry=False, add_history_to_context=shape != "agno-no-history")
    _current_session: list = [None]

    async def answer(text: str, context_id: str) -> str:
        session_id = uuid.uuid4().hex if shape == "agno-new-session" else context_id
        _current_session[0] = session_id
        out = await agent.arun(text, session_id=session_id)
        return str(out.content)

    return answer


# -- OpenAI Agents SDK -----------------------------------------------------------------------
def _openai_agents(shape: str, name: str, truth: Truth):
    from agents import Agent, Runner, SQLiteSession, set_trace_processors

    set_trace_processors([])  # the SDK's own traces stay in the process
    if shape == "openai-previous-response":
        return _openai_chain(name, truth)
    from agents.testing import ModelStep, ScriptedModel, assistant_message

    sessions: dict[str, Any] = {}
    current: list = [None]

    def reply(call) -> list:
        seen = 1 if isinstance(call.input, str) else len(call.input)
        truth(seen, current[0])
        return [assistant_message(f"seen={seen}")]

    class Model(ScriptedModel):
        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            await think()
            return await super().get_response(*args, **kwargs)

    model = Model()
    agent = Agent(name=name, instructions="answer briefly", model=model)

    async def answer(text: str, context_id: str) -> str:
        session = None
        if shape == "openai-session":
            session = sessions.get(context_id) or sessions.setdefault(context_id, SQLiteSession(context_id))
        current[0] = context_id if session is not None else None
        model.enqueue(ModelStep.respond(reply))  # one answer per request: ``seen=<n>``
        result = await Runner.run(agent, text, session=session)
        return str(result.final_output)

    return answer


def _openai_chain(name: str, truth: Truth):
    from agents import Agent, OpenAIResponsesModel, Runner
    from openai import AsyncOpenAI

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "agent_framework"))
    from responses_standin import ResponsesStandIn

    standin = ResponsesStandIn().__enter__()  # lives as long as the process
    client = AsyncOpenAI(base_url=standin.base_url, api_key="offline", max_retries=0)
    agent = Agent(name=name, instructions="answer briefly", model=OpenAIResponsesModel("gpt-standin", client))
    last: dict[str, str] = {}

    async def answer(text: str, context_id: str) -> str:
        result = await Runner.run(agent, text, previous_response_id=last.get(context_id))
        last[context_id] = result.last_response_id
        found = re.search(r"\[seen (\d+)\]", str(result.final_output))
        truth(int(found.group(1)) if found else 0, None)
        return str(result.final_output)

    return answer


# -- LlamaIndex agent workflows --------------------------------------------------------------
def _llama_index(shape: str, name: str, truth: Truth):
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.memory import ChatMemoryBuffer, Memory
    from llama_index.core.workflow import Context
    from offline_llama_index import offline_llm, seen

    agent = FunctionAgent(name=name.replace("-", "_"), description="answers briefly", llm=offline_llm())
    memories: dict[str, Any] = {}  # llama-memory: contextId -> Memory
    contexts: dict[str, str] = {}  # llama-context: contextId -> the context, as JSON

    async def answer(text: str, context_id: str) -> str:
        if shape == "llama-memory":
            memory = memories.get(context_id) or memories.setdefault(
                context_id, Memory.from_defaults(session_id=context_id)
            )
            out = await agent.run(user_msg=text, memory=memory)
            truth(seen(out), context_id)
            return str(out)
        saved = contexts.get(context_id)
        if saved is None:  # the context's first request: a memory keyed by the contextId
            ctx, memory = Context(agent), ChatMemoryBuffer.from_defaults(chat_store_key=context_id)
            out = await agent.run(user_msg=text, ctx=ctx, memory=memory)
        else:
            ctx = Context.from_dict(agent, json.loads(saved))
            out = await agent.run(user_msg=text, ctx=ctx)
        contexts[context_id] = json.dumps(ctx.to_dict())
        truth(seen(out), context_id)
        return str(out)

    return answer


def build_executor(shape: str, name: str, truth: Truth, db_path: str | None = None) -> AgentExecutor:
    """The executor of ``shape`` (one of ``CONTINUES``); ``truth(messages, conversation)`` is
    called once per model call with what the model saw."""
    if shape.startswith("langgraph"):
        return _Executor(_langgraph(shape, name, truth))
    if shape.startswith("agno"):
        return _Executor(_agno(shape, name, truth, db_path))
    if shape.startswith("llama"):
        return _Executor(_llama_index(shape, name, truth))
    return _Executor(_openai_agents(shape, name, truth))
