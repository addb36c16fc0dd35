// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/join"
	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/recall"
)

// heldHop is one hop as an SDK exports it (one ResourceSpans per process,
// the resource attributes the SDK sets, 32-hex ids as the instrumentation
// writes them): the caller's A2A send and the callee's entry, agent and chat
// spans. Its caller's root span is not in, so the join holds it.
func heldHop(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	var tid pcommon.TraceID
	binary.LittleEndian.PutUint64(tid[:], uint64(n)+1)
	id := func(k int) pcommon.SpanID {
		var s pcommon.SpanID
		binary.LittleEndian.PutUint64(s[:], uint64(n)*8+uint64(k)+1)
		return s
	}
	hex := func(k int) string { return fmt.Sprintf("%032x", n*8+k) }
	process := func(svc string) ptrace.SpanSlice {
		rs := td.ResourceSpans().AppendEmpty()
		a := rs.Resource().Attributes()
		a.PutStr("service.name", svc)
		a.PutStr("telemetry.sdk.language", "python")
		a.PutStr("telemetry.sdk.name", "opentelemetry")
		a.PutStr("telemetry.sdk.version", "1.39.0")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("otel_agent_identity")
		return ss.Spans()
	}
	span := func(spans ptrace.SpanSlice, k, parent int, name string, kind ptrace.SpanKind, attrs map[string]any) {
		s := spans.AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(id(k))
		s.SetParentSpanID(id(parent))
		s.SetName(name)
		s.SetKind(kind)
		s.SetStartTimestamp(pcommon.Timestamp(1e18 + k))
		s.SetEndTimestamp(pcommon.Timestamp(1e18 + 3e9 + k))
		_ = s.Attributes().FromRaw(attrs)
	}
	ctx := hex(7)
	caller := process("orchestrator")
	span(caller, 1, 0, "invoke_agent specialist", ptrace.SpanKindClient, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: "specialist", attrConversationID: ctx,
		attrRequestedID: ctx, attrDelegationID: hex(1), attrExecutionID: hex(2), attrAnsweredBefore: true,
		"a2a.method.name": "SendMessage", "server.address": "127.0.0.1", "server.port": 9101,
	})
	callee := process("specialist")
	span(callee, 2, 1, "POST /", ptrace.SpanKindServer, map[string]any{
		attrConversationID: ctx, attrRequestedID: ctx, "a2a.method.name": "SendMessage", "http.route": "/",
	})
	span(callee, 3, 2, "invoke_agent specialist", ptrace.SpanKindInternal, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: "specialist", attrConversationID: ctx,
		attrExecutionID: hex(3), attrResumed: true, "gen_ai.provider.name": "langgraph",
	})
	span(callee, 4, 3, "chat offline", ptrace.SpanKindClient, map[string]any{
		attrOperationName: "chat", attrConversationID: ctx, attrExecutionID: hex(3),
		"gen_ai.request.model": "offline", "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 40,
	})
	return td
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkJoinHeldHop measures the memory of one held hop (4 spans as the
// SDK exports them, held by the join while its caller's root span is not in)
// and the time to take it in: B/held-hop and B/held-span are the heap held
// per item once 20,000 hops are held (the spans themselves, as pdata, and the
// join's bookkeeping, B/join-overhead-per-hop).
func BenchmarkJoinHeldHop(b *testing.B) {
	const hops = 20_000
	tds := make([]ptrace.Traces, hops)
	for i := range tds {
		tds[i] = heldHop(i)
	}
	cfg := createDefaultConfig().(*Config)
	cfg.MaxHeldSpans = 0
	var perHop, overhead float64
	for b.Loop() {
		b.StopTimer()
		p, err := newIdentityProcessor(processortest.NewNopSettings(componentType), cfg)
		require.NoError(b, err)
		p.joiner = newJoiner(p, &cfg.Join, nil, nil)
		empty := heapInUse()
		fresh := make([]ptrace.Traces, hops)
		for i, td := range tds {
			fresh[i] = ptrace.NewTraces()
			td.CopyTo(fresh[i])
		}
		before := heapInUse()
		b.StartTimer()
		for _, td := range fresh {
			_, _ = p.processTraces(context.Background(), td)
		}
		b.StopTimer()
		fresh = nil
		after := heapInUse()
		traces, spans := p.joiner.store.Len()
		require.Equal(b, hops, traces)
		require.Equal(b, 4*hops, spans)
		perHop = float64(after-empty) / hops
		overhead = float64(after-before) / hops
		runtime.KeepAlive(p)
		b.StartTimer()
	}
	b.ReportMetric(perHop, "B/held-hop")
	b.ReportMetric(perHop/4, "B/held-span")
	b.ReportMetric(overhead, "B/join-overhead-per-hop")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*hops), "ns/hop-in")
}

// BenchmarkJoinReleased measures what the join remembers of a judged trace
// for the window (its span ids and services, for its late parts): B/span.
func BenchmarkJoinReleased(b *testing.B) {
	const hops = 20_000
	cfg := createDefaultConfig().(*Config)
	cfg.MaxHeldSpans = 0
	cfg.AgentWait = 0
	var perSpan float64
	for b.Loop() {
		b.StopTimer()
		p, err := newIdentityProcessor(processortest.NewNopSettings(componentType), cfg)
		require.NoError(b, err)
		p.joiner = newJoiner(p, &cfg.Join, nil, nil)
		before := heapInUse()
		b.StartTimer()
		for i := range hops {
			td := heldHop(i)
			td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetParentSpanID(pcommon.SpanID{}) // the root: complete
			out, _ := p.processTraces(context.Background(), td)
			require.Equal(b, 4, out.SpanCount())
		}
		b.StopTimer()
		perSpan = float64(heapInUse()-before) / (4 * hops)
		runtime.KeepAlive(p)
		b.StartTimer()
	}
	b.ReportMetric(perSpan, "B/released-span")
}

// BenchmarkJoinFirstTurnRecheck measures what asking again of a trace that
// waits first_turn_wait costs each second (the completeness check with the
// hop's resolution and memory look-up and record): ns/recheck.
func BenchmarkJoinFirstTurnRecheck(b *testing.B) {
	cfg := createDefaultConfig().(*Config)
	p, err := newIdentityProcessor(processortest.NewNopSettings(componentType), cfg)
	require.NoError(b, err)
	p.joiner = newJoiner(p, &cfg.Join, nil, nil)
	td := heldHop(0)
	send := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	send.SetParentSpanID(pcommon.SpanID{})               // the root: complete
	send.Attributes().PutBool(attrAnsweredBefore, false) // a client-minted turn 1: provisional
	require.Equal(b, join.Others, p.complete(td, 0, nil))
	for b.Loop() {
		p.complete(td, 0, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/recheck")
}

// BenchmarkMemoryTables measures the context and delegation memories: bytes
// per remembered item (their slots, allocated up front) and the time of one
// look-up-and-record (what a judged hop costs each).
func BenchmarkMemoryTables(b *testing.B) {
	const n = 1 << 16
	before := heapInUse()
	t, err := recall.Open(context.Background(), nil, n, 0, nil)
	require.NoError(b, err)
	perItem := float64(heapInUse()-before) / n
	keys := make([]recall.Key, 4096)
	for i := range keys {
		keys[i] = recall.KeyOf("specialist", fmt.Sprintf("ctx-%032x", i))
	}
	i := 0
	for b.Loop() {
		t.PutIfAbsent(keys[i%len(keys)], recall.ValueOf("exec"))
		i++
	}
	b.ReportMetric(perItem, "B/item")
	runtime.KeepAlive(t)
}
