"""Real A2A servers (a2a-sdk 0.3) on 127.0.0.1, in a thread of the test process: Strands'
``A2AServer`` with one Agent per A2A context, each on a ``FileSessionManager`` keyed by the
contextId (the app's wiring that maps a contextId to a session), answering with the offline model's
``"seen=<n> ..."``: the history the serving agent really saw."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from contextlib import contextmanager

import uvicorn
from offline_strands import OfflineModel
from strands import Agent
from strands.multiagent.a2a import A2AServer
from strands.session.file_session_manager import FileSessionManager


def specialist_factory(storage_dir: str, name: str = "specialist"):
    """``agent_factory(context_id)``: an Agent whose session is the A2A context."""

    def factory(context_id: str) -> Agent:
        manager = FileSessionManager(session_id=context_id, storage_dir=storage_dir)
        return Agent(
            name=name, description="Answers.", model=OfflineModel(), callback_handler=None, session_manager=manager
        )

    return factory


@contextmanager
def serving(factory, **server_kwargs):
    """Serve ``A2AServer(agent_factory=factory)`` on a free port of 127.0.0.1; yields its URL.
    Waits (bounded) until uvicorn has started; stops it on exit."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = A2AServer(agent_factory=factory, host="127.0.0.1", port=port, **server_kwargs).to_starlette_app()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the A2A server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
