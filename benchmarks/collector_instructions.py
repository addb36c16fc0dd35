"""Judging's share of the collector's work in instructions: two collectors, with and without
agentidentity, each under ``valgrind --tool=callgrind``, fed the same pre-encoded agent-shaped
requests side by side (the throughput test's replay, tests/collector/test_reliability_load.py).

    cd collector/distribution && CGO_ENABLED=0 go build -trimpath -o /tmp/otelcol-nocgo . && cd -
    export PYTHONPATH=tests/collector:examples  # the collector tests' support modules it replays
    .venv/bin/python benchmarks/collector_instructions.py /tmp/otelcol-nocgo [--pipeline tier2] [--traces 2000]
    .venv/bin/python benchmarks/collector_instructions.py /tmp/otelcol-nocgo --floor  # any processor there

Counters are zeroed once both collectors' pipelines run (``callgrind_control -z``) and read once
the file exporter of each has sent every span (``callgrind_control -d``), so startup and shutdown
are left out; what the processes do meanwhile besides the load (timers, telemetry, GC of idle
memory) is in both. Instruction counts do not depend on the machine's load, CPU seconds do (the
throughput test varies by ±4 points between runs on a shared machine). The collector must be built
without cgo (valgrind aborts on a cgo Go binary) and runs with ``GODEBUG=asyncpreemptoff=1``
(valgrind mishandles the preemption signal); callgrind still aborts now and then on a signal
(``vgCallgrind_post_signal`` assertion, in the collector's log): run again. Valgrind slows the
collectors ~50x: a trace whose spans reach groupbytrace more than ``wait_duration`` (1 s) apart is
judged as two fragments (printed), and the background work in the window grows with wall time, so
the "without" count per span varies by a few percent between runs on a loaded machine. Now and
then groupbytrace loses the spans of such a split trace (they never reach the exporter): the window
then ends once nothing is left in groupbytrace and the written count has not moved for 20 s, and
``spans_written`` reports it (per span figures stay per span sent).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "collector" / "configs"
PIPELINES = {  # as in test_reliability_load.THROUGHPUT: config, overlays for both, the "without" overlay
    "single-node": ("single-node.yaml", (), str(CONFIGS / "without-agentidentity.yaml")),
    "tier2": (
        "tier2-identity.yaml",
        (str(CONFIGS / "tier2-http.yaml"),),
        str(CONFIGS / "tier2-without-agentidentity.yaml"),
    ),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("collector", help="otelcol-agentidentity built with CGO_ENABLED=0")
    ap.add_argument("--pipeline", choices=list(PIPELINES), default="single-node")
    ap.add_argument("--traces", type=int, default=2000)
    ap.add_argument(
        "--floor",
        action="store_true",
        help="single-node: a pass-through processor in agentidentity's place (what any processor costs there)",
    )
    args = ap.parse_args()

    import collector_support as cs
    import reliability_support as rs

    work = Path(tempfile.mkdtemp(prefix="collector-instructions-"))
    wrapper = work / "valgrind-collector.sh"
    wrapper.write_text(
        "#!/bin/sh\nexport GODEBUG=asyncpreemptoff=1\n"
        f'exec valgrind --tool=callgrind --callgrind-out-file={work}/callgrind.%p.out {args.collector} "$@"\n'
    )
    wrapper.chmod(0o755)
    cs.COLLECTOR = str(wrapper)
    wait_for = cs.wait_for
    cs.wait_for = lambda check, timeout=30.0, what="": wait_for(check, timeout * 30, what)  # 50x slower

    config, overlays, without = PIPELINES[args.pipeline]
    with_overlays = overlays
    if args.floor:
        if args.pipeline != "single-node":
            ap.error("--floor is for the single-node pipeline")
        with_overlays = (str(CONFIGS / "passthrough-instead-of-agentidentity.yaml"),)
    requests, spans = rs.agent_requests(args.traces)
    env = {"GROUPBYTRACE_WAIT": "1s", "DRAIN_DELAY": "1s", "AGENT_IDENTITY_SPANS_FILE_MAX_MB": "2000"}
    cols = {
        "with": cs.start_collector(config, work, name="with", extra_configs=with_overlays, **env),
        "without": cs.start_collector(config, work, name="without", extra_configs=(*overlays, without), **env),
    }
    try:
        for c in cols.values():
            subprocess.run(["callgrind_control", "-z", str(c.proc.pid)], check=True, capture_output=True)
        rs.replay([c.endpoint for c in cols.values()], requests, timeout=1800)
        # Both collectors are polled in one loop, every 2 s (a scrape under callgrind is as costly
        # as a few hundred spans, and the collector with agentidentity serves more series), so
        # what the polling costs them is the same and small. Under callgrind groupbytrace now and
        # then loses the spans of a trace whose second half arrives while its first is being
        # released (the written count then stays below the spans sent, nothing left in memory): a
        # collector is settled once every span is written, or once its count has not moved for
        # 20 s with groupbytrace empty.
        written: dict[str, float] = {}
        moved = {k: (-1.0, time.monotonic()) for k in cols}

        def settled() -> bool:
            done = True
            for k, c in cols.items():
                samples = rs.parse_metrics(c.metrics())
                n = written[k] = rs.metric_sum(samples, "otelcol_exporter_sent_spans", exporter="file")
                held = rs.metric_sum(samples, "otelcol_processor_groupbytrace_num_traces_in_memory")
                if n != moved[k][0] or held:
                    moved[k] = (n, time.monotonic())
                done = done and (n >= spans or time.monotonic() - moved[k][1] > 20)
            return done

        deadline = time.monotonic() + 1800
        while not settled():
            if time.monotonic() > deadline:
                raise TimeoutError(f"spans written after 1800 s: {written} of {spans} each")
            time.sleep(2)
        instr = {}
        for c in cols.values():
            subprocess.run(["callgrind_control", "-d", str(c.proc.pid)], check=True, capture_output=True)
        for k, c in cols.items():
            dump = sorted(glob.glob(f"{work}/callgrind.{c.proc.pid}.out.*"))[-1]
            totals = [ln for ln in Path(dump).read_text().splitlines() if ln.startswith(("totals:", "summary:"))]
            instr[k] = int(totals[0].split()[1])
        result = {
            "pipeline": args.pipeline + (" (floor: pass-through in agentidentity's place)" if args.floor else ""),
            "spans": spans,
            "instructions_per_span": {k: round(n / spans) for k, n in instr.items()},
            "judging_share": round((instr["with"] - instr["without"]) / instr["with"], 4),
            "spans_written": written,
            "callgrind_dumps": str(work),
            "verdicts": dict(rs.verdicts(rs.read_spans_tolerant(cols["with"].spans_file))),
        }
        print(json.dumps(result))
    finally:
        for c in cols.values():
            c.stop()


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
