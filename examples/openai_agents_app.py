"""An OpenAI Agents SDK support app, offline (``agents.testing.ScriptedModel``; no API key).

    opentelemetry-instrument python examples/openai_agents_app.py

Three turns of one conversation on ``SQLiteSession("support-42")``:
1. and 2. ``support`` calls its ``fetch_status`` tool (an HTTP GET with httpx to a status service
   this app serves on 127.0.0.1) and asks ``weather_agent`` through ``as_tool`` (a nested run with
   its own ``lookup`` tool);
3. a streamed run: ``triage`` hands off to ``weather_agent``.
Each answer reports how many input items the model saw (turn 2 > turn 1: the session resumed).
The SDK's own tracing stays on with no processor (nothing leaves the process).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from agents import Agent, Runner, SQLiteSession, function_tool, set_trace_processors
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

CONVERSATION = "support-42"
_ids = itertools.count(1)


class _Status(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"all systems nominal"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def _call(name: str, arguments: dict) -> ModelStep:
    return ModelStep(output=[function_call(name, arguments, call_id=f"call_{next(_ids)}")])


def _answer(prefix: str) -> ModelStep:
    def respond(call):
        seen = 1 if isinstance(call.input, str) else len(call.input)
        return [assistant_message(f"{prefix} (seen {seen})")]

    return ModelStep.respond(respond)


@function_tool
def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def _weather_agent() -> Agent:
    return Agent(
        name="weather_agent",
        instructions="weather only",
        tools=[lookup],
        model=ScriptedModel([_call("lookup", {"city": "Paris"}), _answer("sunny in Paris")]),
    )


async def main() -> None:
    set_trace_processors([])
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    status_url = f"http://127.0.0.1:{server.server_address[1]}/status"

    @function_tool
    async def fetch_status() -> str:
        """The service status page."""
        async with httpx.AsyncClient() as client:
            return (await client.get(status_url)).text

    session = SQLiteSession(CONVERSATION)
    try:
        for turn in (1, 2):
            support = Agent(
                name="support",
                instructions="help the user",
                tools=[fetch_status, _weather_agent().as_tool(tool_name="ask_weather", tool_description="Ask weather")],
                model=ScriptedModel(
                    [_call("fetch_status", {}), _call("ask_weather", {"input": "Paris?"}), _answer("status ok, sunny")]
                ),
            )
            result = await Runner.run(support, f"turn {turn}: status and weather?", session=session)
            print(f"[turn {turn}] {result.final_output}", file=sys.stderr)
        weather = _weather_agent()
        triage = Agent(name="triage", handoffs=[weather], model=ScriptedModel([_call("transfer_to_weather_agent", {})]))
        streamed = Runner.run_streamed(triage, "turn 3: weather again?", session=session)
        async for _event in streamed.stream_events():
            pass
        print(f"[turn 3] {streamed.last_agent.name}: {streamed.final_output}", file=sys.stderr)
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    asyncio.run(main())
