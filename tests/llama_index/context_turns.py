"""The headline forgetting: a ``Context`` reused for a second turn, then restored with
``Context.from_dict`` (through JSON) for a third, on the offline model, instrumented. The first
turn gives the memory (a ``ChatMemoryBuffer`` keyed ``conv-ctx``); the later turns rely on the
context to carry it.

``turns(exporter)`` returns what the model saw each turn, each run's recorded ``resumed`` and
conversation id. Run as a script (``python context_turns.py``), it instruments an in-memory
provider and prints ``{"pydantic": version, "seen": [...], "resumed": [...], "conversation": [...],
"warned": bool}`` as JSON: the test runs it under another pydantic (``PYTHONPATH``) to show both ways.
"""

from __future__ import annotations

import asyncio
import json
import warnings


def turns(exporter) -> dict:
    from li_support import RESUMED, agent_spans, weather_agent
    from llama_index.core.memory import ChatMemoryBuffer
    from llama_index.core.workflow import Context
    from offline_llama_index import seen

    agent = weather_agent()

    async def go():
        ctx = Context(agent)
        memory = ChatMemoryBuffer.from_defaults(chat_store_key="conv-ctx")
        first = await agent.run(user_msg="hello", ctx=ctx, memory=memory)
        second = await agent.run(user_msg="hello again", ctx=ctx)
        restored = Context.from_dict(agent, json.loads(json.dumps(ctx.to_dict())))
        third = await agent.run(user_msg="and again", ctx=restored)
        return [seen(first), seen(second), seen(third)]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        saw = asyncio.run(go())
    runs = sorted(agent_spans(exporter.get_finished_spans()), key=lambda s: s.start_time)
    import pydantic

    return {
        "pydantic": pydantic.VERSION,
        "seen": saw,
        "resumed": [s.attributes.get(RESUMED) for s in runs],
        "conversation": [s.attributes.get("gen_ai.conversation.id") for s in runs],
        "warned": any(type(w.message).__name__ == "UnserializableKeyWarning" for w in caught),
    }


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_agent_identity import AgentIdentityInstrumentor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    AgentIdentityInstrumentor().instrument(tracer_provider=provider)
    print(json.dumps(turns(exporter)))
