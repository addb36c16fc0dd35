// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

// benchTrace is a realistic agent trace: an orchestrator delegating to
// `agents` specialists over A2A, each running `calls` chat/tool spans with
// HTTP children; every span carries the attributes the instrumentation sets.
func benchTrace(tid pcommon.TraceID, agents, calls int) ptrace.Traces {
	td := ptrace.NewTraces()
	next := uint64(0)
	add := func(ss ptrace.SpanSlice, parent pcommon.SpanID, kind ptrace.SpanKind, attrs map[string]any) pcommon.SpanID {
		next++
		s := ss.AppendEmpty()
		s.SetTraceID(tid)
		var id pcommon.SpanID
		for i := range 8 {
			id[i] = byte(next >> (8 * i))
		}
		s.SetSpanID(id)
		s.SetParentSpanID(parent)
		s.SetName(fmt.Sprint("span-", next))
		s.SetKind(kind)
		s.SetStartTimestamp(pcommon.Timestamp(next))
		_ = s.Attributes().FromRaw(attrs)
		return id
	}
	scope := func(svc string) ptrace.SpanSlice {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr(attrServiceName, svc)
		rs.Resource().Attributes().PutStr("telemetry.sdk.language", "python")
		return rs.ScopeSpans().AppendEmpty().Spans()
	}
	orch := scope("orchestrator")
	root := add(orch, pcommon.SpanID{}, ptrace.SpanKindInternal, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: "orchestrator",
		attrConversationID: "conv-x", attrExecutionID: "exec-o"})
	for a := range agents {
		send := add(orch, root, ptrace.SpanKindClient, map[string]any{
			attrOperationName: operationInvokeAgent, attrAgentName: "specialist",
			attrConversationID: "conv-x", attrExecutionID: "exec-o", attrDelegationID: fmt.Sprint("d", a)})
		sp := scope(fmt.Sprint("specialist-", a%3))
		server := add(sp, send, ptrace.SpanKindServer, map[string]any{"http.request.method": "POST", "url.path": "/"})
		agent := add(sp, server, ptrace.SpanKindInternal, map[string]any{
			attrOperationName: operationInvokeAgent, attrAgentName: "specialist",
			attrConversationID: "conv-x", attrExecutionID: fmt.Sprint("exec-", a)})
		for range calls {
			chat := add(sp, agent, ptrace.SpanKindClient, map[string]any{
				attrOperationName: "chat", "gen_ai.request.model": "gpt", "gen_ai.usage.input_tokens": 100,
				attrExecutionID: fmt.Sprint("exec-", a)})
			add(sp, chat, ptrace.SpanKindClient, map[string]any{"http.request.method": "POST", "server.address": "api"})
		}
	}
	return td
}

const benchAgents, benchCalls = 10, 24 // 1 + 10*(3+2*24) = 511 spans

func BenchmarkAgentIdentity(b *testing.B) {
	for _, backfill := range []bool{false, true} {
		b.Run(fmt.Sprint("backfill=", backfill), func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			cfg.Backfill = backfill
			p, err := newIdentityProcessor(processortest.NewNopSettings(componentType), cfg)
			require.NoError(b, err)
			td := benchTrace(pcommon.TraceID{1}, benchAgents, benchCalls)
			spans := td.SpanCount()
			ctx := context.Background()
			b.ReportAllocs()
			start, cpu := time.Now(), cpuTime()
			n := 0
			for b.Loop() {
				_, _ = p.processTraces(ctx, td) // idempotent on re-runs
				n++
			}
			reportPerSpan(b, start, cpu, n*spans)
		})
	}
}

// BenchmarkGroupByTraceBaseline runs the contrib groupbytrace processor (the
// stage the identity processor runs after) over the same traces: consume a
// trace, and count the time until it is released downstream. wait_duration is
// 1µs so timers do not dominate, and at most inFlight traces wait at a time.
// This is wall time: groupbytrace's worker goroutine may use a second core.
func BenchmarkGroupByTraceBaseline(b *testing.B) {
	const inFlight = 64
	var released atomic.Int64
	next, _ := consumer.NewTraces(func(context.Context, ptrace.Traces) error {
		released.Add(1)
		return nil
	})
	f := groupbytraceprocessor.NewFactory()
	cfg := f.CreateDefaultConfig()
	require.NoError(b, componenttest.CheckConfigStruct(cfg))
	raw := map[string]any{"wait_duration": time.Microsecond, "num_traces": 100_000, "num_workers": 1}
	require.NoError(b, confmapUnmarshal(raw, cfg))
	set := processortest.NewNopSettings(component.MustNewType("groupbytrace"))
	p, err := f.CreateTraces(context.Background(), set, cfg, next)
	require.NoError(b, err)
	require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(b, p.Shutdown(context.Background())) }()

	// One input, its trace id rewritten per iteration (groupbytrace copies
	// the input synchronously); BenchmarkTraceIDRewrite measures that cost.
	td := benchTrace(pcommon.TraceID{1}, benchAgents, benchCalls)
	spans := td.SpanCount()
	ctx := context.Background()
	b.ReportAllocs()
	start, cpu := time.Now(), cpuTime()
	n := int64(0)
	for b.Loop() {
		for n-released.Load() >= inFlight {
			time.Sleep(10 * time.Microsecond)
		}
		n++
		setTraceID(td, n)
		require.NoError(b, p.ConsumeTraces(ctx, td))
	}
	for released.Load() < n {
		time.Sleep(10 * time.Microsecond)
	}
	reportPerSpan(b, start, cpu, int(n)*spans)
}

// setTraceID gives every span of td the trace id n.
func setTraceID(td ptrace.Traces, n int64) {
	var tid pcommon.TraceID
	for i := range 8 {
		tid[i] = byte(n >> (8 * i))
	}
	tid[15] = 1
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				s.SetTraceID(tid)
			}
		}
	}
}

// BenchmarkTraceIDRewrite is the harness cost inside the baseline's figure.
func BenchmarkTraceIDRewrite(b *testing.B) {
	td := benchTrace(pcommon.TraceID{1}, benchAgents, benchCalls)
	start, n := time.Now(), int64(0)
	for b.Loop() {
		n++
		setTraceID(td, n)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n*int64(td.SpanCount())), "ns/span")
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerSpan reports wall and CPU (all goroutines, GC included) per span.
func reportPerSpan(b *testing.B, start time.Time, cpu time.Duration, spans int) {
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(spans), "ns/span")
	b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(spans), "cpu-ns/span")
}
