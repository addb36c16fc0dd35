"""A caller that sends twice to a slow A2A callee (``charge_specialist.py --hold-each``): once inside
``asyncio.wait_for(..., --timeout)``, which cancels the send before the answer, once without a
timeout. The timed send's timeout starts once the callee recorded its work (``--charges``): the
send is cancelled after its request reached the callee, whatever the machine's speed.
``--mode direct``: an a2a-sdk client's ``send_message``; ``--mode agent``: an Agent Framework
``A2AAgent`` run. No tracing code besides one root span per send (to name its trace):
run it under the launcher (``opentelemetry-instrument``).

Prints one JSON line per send on stdout: ``{"timeout", "trace_id", "answered"}`` (``answered``:
the caller received the callee's answer; the ground truth of the caller's side).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from pathlib import Path

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Message as A2AMessage
from a2a.types import Part, Role, SendMessageRequest
from opentelemetry import trace


async def _direct(url: str, text: str) -> bool:
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False))
        request = SendMessageRequest(
            message=A2AMessage(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=uuid.uuid4().hex)
        )
        return bool([event async for event in client.send_message(request)])


async def _agent(url: str, text: str) -> bool:
    from agent_framework.a2a import A2AAgent

    response = await A2AAgent(name="payments", url=url).run(text)
    return bool(response.messages)


async def _reached(charges: Path, trace_id: str, bound: float = 60.0) -> None:
    """Wait (bounded) until the callee recorded the work of the send in ``trace_id``: the timeout
    then starts with the request at the callee, however slow this machine is to send it."""
    deadline = time.monotonic() + bound
    while not (charges.exists() and trace_id in charges.read_text()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the callee never received the send of trace {trace_id}")
        await asyncio.sleep(0.05)


async def main(url: str, mode: str, timeout: float, charges: Path) -> None:
    send = _direct if mode == "direct" else _agent
    tracer = trace.get_tracer("cancel_caller")
    for limit in (timeout, None):
        with tracer.start_as_current_span("checkout") as root:
            trace_id = format(root.get_span_context().trace_id, "032x")
            task = asyncio.ensure_future(send(url, f"order-{uuid.uuid4().hex[:6]}"))
            if limit is not None:
                await _reached(charges, trace_id)
            try:
                answered = await asyncio.wait_for(task, limit)
            except TimeoutError:
                answered = False
        print(json.dumps({"timeout": limit, "trace_id": trace_id, "answered": answered}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", choices=("direct", "agent"), required=True)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--charges", type=Path, required=True, help="the callee's record of the work it did")
    args = parser.parse_args()
    asyncio.run(main(args.url, args.mode, args.timeout, args.charges))
