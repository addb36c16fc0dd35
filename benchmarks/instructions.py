"""Instructions per agent run and per child span: every variant, bare and instrumented, side by side.

    .venv/bin/python benchmarks/instructions.py [--rounds R] [--n N] [--only PART,...|NAME$] [--wall] [--control]

runs one measuring process per mode at once, each under ``valgrind --tool=callgrind
--dump-before=os_getppid``: ``bare`` (our processor registered and quiet) and ``ours`` (instrumented
once, before any workload is built), with the same ``PYTHONHASHSEED``, so both execute the same
sequence; ``--control`` adds a second bare process, whose difference to the first is the method's
floor (it measures 0.00). Each ``os.getppid()`` below dumps the instructions counted since the
previous one, so every segment (N runs, or 3N runs, of one variant) gets its own count. Per run =
(count(3N) - count(N)) / 2N, which cancels the segment's fixed cost; rounds alternate all
variants. Every figure is also a ratio to one bare SDK span (start + end on a provider without
processors) measured in the same rounds; instruction counts do not depend on the machine's load.

Why not both modes in one process: instrumenting and uninstrumenting between segments changes
the wrapped classes, and the interpreter's specialised bytecode for the framework's code then
runs deoptimised for a while; a bare workload measured right after such a cycle costs ~20 K
instructions (0.2 span) more per Agent Framework turn than the same workload before it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import glob
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

LONG_ID = "c" * 256  # the default max_id_length
CONCURRENT = 8  # runs in flight at once in the concurrency variant (its figures are per run)


def _marker() -> None:
    os.getppid()  # callgrind dumps its counters here (--dump-before=os_getppid)


# -- workloads: name -> (make(mode) -> callable, modes) ----------------------------------------------
# each framework is imported by its own workloads only (Google ADK runs in .venv-adk, Strands in
# .venv-strands, CrewAI in .venv-crewai, without Agent Framework): these are imported before counting
# starts when one of their workloads is selected, and their workloads are skipped where the framework
# is not installed
PREIMPORT = {
    "AF ": ("agent_framework", "offline_chat"),
    "Google ADK": ("google.adk.runners", "offline_adk"),
    "Strands": ("strands", "offline_strands"),
    "CrewAI": ("crewai", "offline_crewai"),
    "LlamaIndex": ("llama_index.core.agent.workflow", "offline_llama_index"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing
        return False


def _workloads():
    from opentelemetry.sdk.trace import TracerProvider

    from conftest import PROVIDER, attach_scope
    from otel_agent_identity.scope import IdentityScope

    loop = asyncio.new_event_loop()
    run = loop.run_until_complete
    bare_tracer = TracerProvider().get_tracer("unit")
    tracer = PROVIDER.get_tracer("bench")
    w: dict = {}

    w["sdk span (unit)"] = lambda: lambda: bare_tracer.start_span("s").end()
    six = {f"a{i}": "v" for i in range(6)}
    w["sdk span, 6 attributes"] = lambda: lambda: bare_tracer.start_span("s", attributes=six).end()

    def af_agent(name="bench", **kwargs):  # an Agent Framework agent on the offline chat client
        from agent_framework.observability import OBSERVABILITY_SETTINGS
        from offline_chat import OfflineChatClient

        from agent_framework import Agent

        OBSERVABILITY_SETTINGS.enable_instrumentation = True
        return Agent(client=OfflineChatClient(mode="service"), name=name, **kwargs)

    def af_steady(cid=None):
        agent = af_agent()
        session = agent.create_session()
        if cid:
            session.service_session_id = cid
        run(agent.run("hello", session=session))
        return lambda: run(agent.run("hello", session=session))

    w["AF steady turn"] = af_steady
    w["AF steady turn, 256-char id"] = lambda: af_steady(LONG_ID)

    def af_turn1():
        agent = af_agent()
        return lambda: run(agent.run("hello", session=agent.create_session()))

    w["AF turn 1"] = af_turn1

    def af_tool():
        from offline_chat import get_weather

        agent = af_agent(tools=[get_weather])
        session = agent.create_session()
        run(agent.run("weather?", session=session))
        return lambda: run(agent.run("weather?", session=session))

    w["AF tool turn"] = af_tool

    def af_concurrent():
        agents = [af_agent(f"bench{i}") for i in range(CONCURRENT)]
        sessions = [a.create_session() for a in agents]

        async def turns():
            await asyncio.gather(*(a.run("hello", session=s) for a, s in zip(agents, sessions, strict=False)))

        run(turns())
        return lambda: run(turns())

    w[f"AF steady turn, {CONCURRENT} concurrent (per run)"] = af_concurrent

    def af_stream():
        agent = af_agent()
        session = agent.create_session()
        run(agent.run("hello", session=session))

        async def consume():
            async for _ in agent.run("hello", session=session, stream=True):
                pass

        return lambda: run(consume())

    w["AF steady turn, streamed"] = af_stream

    def lg(stream=False):
        import test_bench_langgraph as lgb

        graph = lgb._graph(0)
        if not stream:
            return graph
        from langgraph.graph import END, START, StateGraph

        g = StateGraph(lgb.S)
        g.add_node("step", lambda s: {"x": s["x"] + 1})
        g.add_edge(START, "step")
        g.add_edge("step", END)
        compiled = g.compile(name="bench")
        config = {"configurable": {"thread_id": "conv_1"}}
        return lambda: list(compiled.stream({"x": 0}, config))

    w["LangGraph invoke"] = lg
    w["LangGraph stream"] = lambda: lg(True)

    def oai():
        import test_bench_openai_agents as ob
        from agents import Agent as OAgent
        from agents import Runner, set_trace_processors, set_tracing_disabled

        set_trace_processors([])
        set_tracing_disabled(True)
        agent = OAgent(name="bench", model=ob.TurnModel())
        return lambda: run(Runner.run(agent, "hello", conversation_id="conv_1"))

    w["OpenAI Agents Runner.run"] = oai

    def agno():
        import test_bench_agno as ab  # sets AGNO_TELEMETRY=false before agno is imported

        return ab._turn(0)

    w["Agno Agent.run"] = agno

    def pydantic_ai(native=False, processor=None):
        from offline_pydantic_ai import echo_model
        from pydantic_ai.models.instrumented import InstrumentationSettings

        from pydantic_ai import Agent as PAgent

        agent = PAgent(echo_model(), name="bench")
        agent.instrument = native  # the framework's own spans (enriched by ours) or none (ours made)
        if processor is not None:  # the framework's spans on a provider of their own, with this processor
            provider = TracerProvider()
            if processor:
                provider.add_span_processor(processor)
            agent.instrument = InstrumentationSettings(tracer_provider=provider)
        return lambda: run(agent.run("hello", conversation_id="conv_1"))

    w["Pydantic AI Agent.run"] = pydantic_ai
    w["Pydantic AI Agent.run, native spans"] = lambda: pydantic_ai(True)
    try:  # pip install openinference-instrumentation-pydantic-ai: not a dependency, measured beside ours
        from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor

        w["Pydantic AI native spans, no processor"] = lambda: pydantic_ai(True, False)
        w["Pydantic AI native spans, OpenInference processor"] = lambda: pydantic_ai(True, OpenInferenceSpanProcessor())
    except ImportError:
        pass

    def adk():  # one turn of a new session (the session's history would grow run after run)
        import logging

        from google.adk.agents import LlmAgent
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService
        from google.genai import types
        from offline_adk import OfflineLlm

        runner = Runner(
            app_name="bench",
            agent=LlmAgent(name="bench", model=OfflineLlm()),
            session_service=InMemorySessionService(),
            auto_create_session=True,
        )
        message = types.Content(role="user", parts=[types.Part(text="hello")])
        # a warning per run otherwise: the offline model reports no token usage
        logging.getLogger("google_adk.google.adk.telemetry._metrics").setLevel(logging.ERROR)
        sessions = iter(range(1 << 62))

        async def turn():
            async for _ in runner.run_async(user_id="u", session_id=f"s{next(sessions)}", new_message=message):
                pass

        return lambda: run(turn())

    w["Google ADK Runner.run_async"] = adk

    def strands():  # one turn of an agent without a session manager, its messages cleared each turn
        from offline_strands import OfflineModel
        from strands import Agent as SAgent

        agent = SAgent(name="bench", model=OfflineModel(), callback_handler=None)

        def turn():
            agent.messages.clear()
            run(agent.invoke_async("hello"))

        return turn

    w["Strands Agent.invoke_async"] = strands

    def crewai_kickoff():  # one agent, one task, one model call (no tool): CrewAI's lightest run
        os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
        os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
        import logging

        from offline_crewai import OfflineCrewLLM

        from crewai import Agent, Crew, Task

        logging.getLogger("crewai").setLevel(logging.ERROR)  # a token-count warning per call otherwise
        agent = Agent(role="bench", goal="g", backstory="b", llm=OfflineCrewLLM())
        crew = Crew(agents=[agent], tasks=[Task(description="hello", expected_output="text", agent=agent)])
        return crew.kickoff

    w["CrewAI Crew.kickoff"] = crewai_kickoff

    def llama_index():  # one turn with a memory keyed conv_1, new per run (its history would grow)
        from llama_index.core.agent.workflow import FunctionAgent
        from llama_index.core.memory import ChatMemoryBuffer
        from offline_llama_index import offline_llm

        agent = FunctionAgent(name="bench", llm=offline_llm())

        async def turn():
            await agent.run(user_msg="hello", memory=ChatMemoryBuffer.from_defaults(chat_store_key="conv_1"))

        return lambda: run(turn())

    w["LlamaIndex FunctionAgent.run"] = llama_index

    def a2a_send(streaming=False):  # a real client and server in one process (httpx's ASGI transport)
        # a2a-sdk's own ~35 spans per request off, as in the demo (read when a2a-sdk is first imported)
        os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")
        import httpx
        from a2a.client import ClientConfig, create_client
        from a2a.types import Message, Part, Role, SendMessageRequest

        spec = importlib.util.spec_from_file_location("a2a_serve", HERE.parent / "examples" / "a2a_serve.py")
        serve = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(serve)  # the examples' specialist app (not an installed module)

        class Echo(serve.ReplyExecutor):
            async def reply(self, context):
                return "ok", 1, context.context_id

        url = "http://127.0.0.1:9/"  # never dialled: the transport calls the app
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=serve.executor_app(Echo(False, None), url, "bench")))
        client = run(create_client(url, client_config=ClientConfig(httpx_client=http, streaming=streaming)))
        ids = iter(range(1 << 62))

        async def send():
            message = Message(role=Role.ROLE_USER, parts=[Part(text="hi")], message_id=f"m{next(ids)}")
            async for _ in client.send_message(SendMessageRequest(message=message)):
                pass

        return lambda: run(send())

    w["A2A send"] = a2a_send
    w["A2A send, streamed"] = lambda: a2a_send(True)

    def child():
        return lambda: tracer.start_span("child").end()

    def child_in_scope():
        token = attach_scope(IdentityScope("conv_1", "exec_1"))
        fn = child()

        def call():
            fn()

        call.token = token  # kept attached for the segment; detached by the caller
        return call

    w["child span"] = child
    w["child span, in a run scope"] = child_in_scope
    return w


INSTRUMENTED = {
    "AF steady turn",
    f"AF steady turn, {CONCURRENT} concurrent (per run)",
    "AF steady turn, 256-char id",
    "AF turn 1",
    "AF tool turn",
    "AF steady turn, streamed",
    "LangGraph invoke",
    "LangGraph stream",
    "OpenAI Agents Runner.run",
    "Agno Agent.run",
    "Pydantic AI Agent.run",
    "Pydantic AI Agent.run, native spans",
    "Google ADK Runner.run_async",
    "Strands Agent.invoke_async",
    "CrewAI Crew.kickoff",
    "LlamaIndex FunctionAgent.run",
    "A2A send",
    "A2A send, streamed",
}
#: measured bare only: a peer's cost, compared with its own baseline variant (no processor)
PEERS = {"Pydantic AI native spans, OpenInference processor": "Pydantic AI native spans, no processor"}
#: for the child span: bare = our processor registered but outside any run (the SDK calls it on every
#: span); ours = the same span inside a run's scope, stamped
PAIRS = {"child span, in a run scope": "child span"}
#: a peer's instrumentor (or span processor, added to the provider), not a dependency (pip install
#: it): measured in a process of its own, set up as bare and instrumented by it once, before anything
#: is built, on the workloads it instruments
PEER_MODES = {
    "openinference": ("Google ADK", "openinference.instrumentation.google_adk", "GoogleADKInstrumentor"),
    "openinference-strands": (
        "Strands",
        "openinference.instrumentation.strands_agents",
        "StrandsAgentsToOpenInferenceProcessor",
    ),
    "openinference-crewai": ("CrewAI", "openinference.instrumentation.crewai", "CrewAIInstrumentor"),
    "openinference-llama-index": ("LlamaIndex", "openinference.instrumentation.llama_index", "LlamaIndexInstrumentor"),
}


def _selected(name: str, only: set) -> bool:
    return not only or name.startswith("sdk span") or any(o in name or o == name + "$" for o in only)


def child_main(mode: str, rounds: int, n: int, only: set, labels_path: str, wall: bool = False) -> None:
    """Measure every selected variant, round after round, in one mode: ``ours`` (instrumented once,
    before anything is built), ``bare`` (our processor registered, quiet: the instrumentor ran
    and was undone before anything is built) or a peer's (:data:`PEER_MODES`: bare, and the peer's
    instrumentor on)."""
    from conftest import PROVIDER, use_globally
    from otel_agent_identity import AgentIdentityInstrumentor
    from otel_agent_identity.scope import detach_context

    use_globally()

    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=PROVIDER)
    if mode != "ours":
        inst.uninstrument()
    if mode in PEER_MODES:
        peer_workloads, module, cls = PEER_MODES[mode]
        peer = getattr(importlib.import_module(module), cls)()
        if hasattr(peer, "instrument"):
            peer.instrument(tracer_provider=PROVIDER)
        else:  # a span processor (OpenInference's Strands one rewrites Strands' own spans)
            PROVIDER.add_span_processor(peer)
    variants = []
    for name, make in _workloads().items():
        if not _selected(name, only) or not all(
            _installed(m) for start, modules in PREIMPORT.items() if name.startswith(start) for m in modules
        ):
            continue
        if mode in PEER_MODES:
            if name.startswith((peer_workloads, "sdk span")):
                variants.append((name, make))
        elif name in PEERS or name in PEERS.values():
            if mode != "ours":
                variants.append((name, make))
        elif name in INSTRUMENTED or name.startswith("sdk span") or mode == "ours":  # child spans: ours only
            variants.append((name, make))
    for prefix, modules in PREIMPORT.items():
        if any(name.startswith(prefix) for name, _ in variants):
            for module in modules:
                importlib.import_module(module)
    labels: list = []
    # counting starts here (--instr-atstart=no): imports and set-up run at valgrind's light speed
    if not wall:
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], stdout=subprocess.DEVNULL, check=False)
    _marker()
    labels.append(None)
    for r in range(1, rounds + 1):  # each variant is warmed up before its segments
        for name, make in variants:
            fn = make()
            for _ in range(3):
                fn()  # warm
            gc.collect()
            m = 20 if name.startswith(("sdk span", "child span")) else 1  # ~1/20 of a run
            for k in (n * m, 3 * n * m):
                _marker()
                labels.append(None)
                start = time.thread_time_ns()
                for _ in range(k):
                    fn()
                elapsed = time.thread_time_ns() - start
                _marker()
                labels.append([name, k, r, elapsed])
            token = getattr(fn, "token", None)
            if token is not None:
                detach_context(token)
    Path(labels_path).write_text(json.dumps(labels))


def _measure(mode: str, args) -> subprocess.Popen:
    """Start one measuring process; its results are read by :func:`_per_call`."""
    out = tempfile.mkdtemp(prefix=f"cg-{mode}-")
    child = (
        [
            sys.executable,
            __file__,
            "--child",
            mode,
            "--rounds",
            str(args.rounds),
            "--n",
            str(args.n),
            "--labels",
            os.path.join(out, "labels.json"),
        ]
        + (["--only", args.only] if args.only else [])
        + (["--wall"] if args.wall else [])
    )
    cmd = (
        child
        if args.wall
        else [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--dump-before=os_getppid",
            "--dump-instr=no",
            "--dump-line=no",
            f"--callgrind-out-file={out}/cg.out",
            *child,
        ]
    )
    # the same hash seed in every process: dict and set layouts, so instruction counts, match
    proc = subprocess.Popen(
        cmd, stderr=None if args.wall else subprocess.DEVNULL, env=dict(os.environ, PYTHONHASHSEED="0")
    )
    proc.out = out
    return proc


def _per_call(out: str, wall: bool) -> dict:
    """name -> {round: per call} of one process (per run for the concurrent variant)."""
    labels = json.loads(Path(out, "labels.json").read_text())
    counts = {}
    for path in glob.glob(f"{out}/cg.out.*"):
        with open(path) as f:
            for line in f:
                if line.startswith("summary:"):
                    counts[int(path.rsplit(".", 1)[1])] = int(line.split()[1])
    segs: dict = {}
    for i, label in enumerate(labels, start=1):
        if label is None or (not wall and i not in counts):
            continue
        name, k, r, ns = label
        segs.setdefault(name, {}).setdefault(r, {})[k] = ns / 1000 if wall else counts[i]
    per: dict = {}
    for name, rounds in segs.items():
        for r, by_k in rounds.items():
            if len(by_k) == 2:
                lo, hi = sorted(by_k)
                per.setdefault(name, {})[r] = (
                    (by_k[hi] - by_k[lo]) / (hi - lo) / (CONCURRENT if "concurrent" in name else 1)
                )
    return per


def parent_main(args) -> None:
    only = {o for o in args.only.split(",") if o}
    modes = (
        ["bare", "ours"]
        + (["control"] if args.control else [])
        + [
            mode
            for mode, (prefix, module, _) in PEER_MODES.items()  # when installed and selected
            if _installed(module) and (not only or any(o.rstrip("$") in prefix or prefix in o for o in only))
        ]
    )
    procs = {mode: _measure(mode, args) for mode in modes}  # side by side: one process per mode
    for proc in procs.values():
        if proc.wait() != 0:
            raise SystemExit(f"a measuring process failed ({proc.args[:3]}...)")
    per = {mode: _per_call(proc.out, args.wall) for mode, proc in procs.items()}
    units = {mode: p["sdk span (unit)"] for mode, p in per.items()}
    unit = statistics.median([v for u in units.values() for v in u.values()])
    what, scale = ("µs of thread CPU time", 1) if args.wall else ("K instructions (callgrind)", 1e3)
    print(
        f"per call, {what}; {args.rounds} rounds of N and 3N calls, N={args.n}; median [min-max] over rounds;"
        f" one process per mode; unit = one bare SDK span = {unit / scale:.2f}"
    )
    for mode in modes:
        for name, by_r in per[mode].items():
            values = list(by_r.values())
            ratios = [v / units[mode][r] for r, v in by_r.items()]
            print(
                f"  {name + ' / ' + mode:52s} {statistics.median(values) / scale:10.2f}  "
                f"[{min(values) / scale:.2f}-{max(values) / scale:.2f}]  = {statistics.median(ratios):7.2f} spans"
            )
    print("added by agent identity, in bare SDK spans (round r of ours minus round r of bare; median [min-max]):")
    pairs = [
        (name, ("ours", name), ("bare", name))
        for name in per["ours"]
        if name in per["bare"] and not name.startswith("sdk span")
    ]
    pairs += [(name, ("ours", name), ("ours", bare)) for name, bare in PAIRS.items() if name in per["ours"]]
    pairs += [
        (f"{name} (a peer, bare)", ("bare", name), ("bare", base))
        for name, base in PEERS.items()
        if name in per["bare"]
    ]
    pairs += [
        (f"{name} ({mode}, a peer)", (mode, name), ("bare", name))
        for mode in PEER_MODES
        if mode in per
        for name in per[mode]
        if name in per["bare"] and not name.startswith("sdk span")
    ]
    if args.control:
        pairs += [
            (f"{name} (control: bare again)", ("control", name), ("bare", name))
            for name in per["control"]
            if name in per["bare"] and not name.startswith("sdk span")
        ]
    for label, (om, on), (bm, bn) in pairs:
        ours, bare = per[om][on], per[bm][bn]
        diffs = [(ours[r] - bare[r]) / units[om][r] for r in ours if r in bare]
        print(
            f"  {label:52s} +{statistics.median(diffs):5.2f}  [{min(diffs):.2f} - {max(diffs):.2f}]"
            f"   (+{(statistics.median(ours.values()) - statistics.median(bare.values())) / scale:.2f})"
        )


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--child", choices=("bare", "ours", "control", *PEER_MODES))
    p.add_argument("--rounds", type=int, default=3)
    # N >= 16: with fewer runs per segment, where the garbage collector's older-generation passes
    # fall (one segment or the other) moves a per-run figure by up to 0.3 span
    p.add_argument("--n", type=int, default=24)
    p.add_argument("--only", default="")
    p.add_argument("--labels", default="")
    p.add_argument("--wall", action="store_true", help="thread CPU time instead of callgrind instructions")
    p.add_argument("--control", action="store_true", help="also a second bare process: the method's floor")
    a = p.parse_args()
    if a.child:
        child_main(a.child, a.rounds, a.n, {o for o in a.only.split(",") if o}, a.labels, a.wall)
    else:
        parent_main(a)
