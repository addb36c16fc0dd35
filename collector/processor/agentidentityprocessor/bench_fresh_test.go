// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
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

// Fresh-trace benchmarks: every iteration processes a trace the processor has
// never seen (a copy made outside the timer), as a collector does, beside
// groupbytrace on the same shapes. allocs/op and B/op are per trace.

// traceBuilder appends spans with sequential ids to one trace.
type traceBuilder struct {
	td   ptrace.Traces
	next uint64
	// stamped: spans inside a run carry the run's gen_ai.conversation.id, as
	// this instrumentation's span processor stamps them; false: a callee
	// instrumented by semconv alone (chat and HTTP spans without it: the
	// backfill's work)
	stamped bool
}

func (t *traceBuilder) scope(svc string) ptrace.SpanSlice {
	rs := t.td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(attrServiceName, svc)
	rs.Resource().Attributes().PutStr("telemetry.sdk.language", "python")
	return rs.ScopeSpans().AppendEmpty().Spans()
}

func (t *traceBuilder) add(ss ptrace.SpanSlice, parent pcommon.SpanID, kind ptrace.SpanKind, attrs map[string]any) pcommon.SpanID {
	t.next++
	s := ss.AppendEmpty()
	s.SetTraceID(pcommon.TraceID{1})
	var id pcommon.SpanID
	for i := range 8 {
		id[i] = byte(t.next >> (8 * i))
	}
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	s.SetName(fmt.Sprint("span-", t.next))
	s.SetKind(kind)
	s.SetStartTimestamp(pcommon.Timestamp(t.next))
	_ = s.Attributes().FromRaw(attrs)
	return id
}

// delegate adds one A2A hop below parent (in ss's service) to svc: the CLIENT
// send, the callee's SERVER span and agent run with calls chat+HTTP pairs, as
// this instrumentation emits them (turn 2: a contextId requested). Returns the
// callee's agent span and its span slice.
func (t *traceBuilder) delegate(ss ptrace.SpanSlice, parent pcommon.SpanID, svc string, n, calls int) (pcommon.SpanID, ptrace.SpanSlice) {
	ctxID := fmt.Sprint("ctx-", n)
	send := t.add(ss, parent, ptrace.SpanKindClient, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: svc, attrConversationID: ctxID,
		attrRequestedID: ctxID, attrExecutionID: "exec-o", attrDelegationID: fmt.Sprint("d", n),
		"a2a.method.name": "SendMessage"})
	callee := t.scope(svc)
	server := t.add(callee, send, ptrace.SpanKindServer, map[string]any{
		"a2a.method.name": "SendMessage", attrConversationID: ctxID, attrRequestedID: ctxID})
	agent := t.add(callee, server, ptrace.SpanKindInternal, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: svc, attrConversationID: ctxID,
		attrResumed: true, attrExecutionID: fmt.Sprint("exec-", n)})
	for range calls {
		chatAttrs := map[string]any{attrOperationName: "chat", "gen_ai.request.model": "gpt",
			"gen_ai.usage.input_tokens": 100}
		httpAttrs := map[string]any{"http.request.method": "POST", "server.address": "api"}
		if t.stamped {
			for _, m := range []map[string]any{chatAttrs, httpAttrs} {
				m[attrConversationID], m[attrExecutionID] = ctxID, fmt.Sprint("exec-", n)
			}
		}
		chat := t.add(callee, agent, ptrace.SpanKindClient, chatAttrs)
		t.add(callee, chat, ptrace.SpanKindClient, httpAttrs)
	}
	return agent, callee
}

func orchestrator(t *traceBuilder) (pcommon.SpanID, ptrace.SpanSlice) {
	ss := t.scope("orchestrator")
	return t.add(ss, pcommon.SpanID{}, ptrace.SpanKindInternal, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: "orchestrator",
		attrConversationID: "conv-x", attrExecutionID: "exec-o"}), ss
}

// freshShapes are the agent-shaped traces of the fresh benchmarks.
var freshShapes = []struct {
	name  string
	build func(t *traceBuilder) ptrace.Traces
}{
	// orchestrator delegating to 10 specialists, 24 chat+HTTP pairs each: 511 spans
	{"fanout_511", func(t *traceBuilder) ptrace.Traces {
		root, ss := orchestrator(t)
		for a := range 10 {
			t.delegate(ss, root, fmt.Sprint("specialist-", a%3), a, 24)
		}
		return t.td
	}},
	// a chain of 40 A2A hops, each agent with 4 chat+HTTP pairs: 441 spans
	{"chain_441", func(t *traceBuilder) ptrace.Traces {
		parent, ss := orchestrator(t)
		for d := range 40 {
			parent, ss = t.delegate(ss, parent, fmt.Sprint("agent-", d%2), d, 4)
		}
		return t.td
	}},
	// 100 delegations of 48 chat+HTTP pairs: 9,901 spans
	{"fanout_9901", func(t *traceBuilder) ptrace.Traces {
		root, ss := orchestrator(t)
		for a := range 100 {
			t.delegate(ss, root, fmt.Sprint("specialist-", a%5), a, 48)
		}
		return t.td
	}},
}

// copies makes k fresh copies of td (outside the timer).
func copies(td ptrace.Traces, k int) []ptrace.Traces {
	out := make([]ptrace.Traces, k)
	for i := range out {
		out[i] = ptrace.NewTraces()
		td.CopyTo(out[i])
	}
	return out
}

// batchOf is how many fresh copies are made per round (about 16k spans).
func batchOf(spans int) int { return max(4, 16384/spans) }

// freshVariants: which spans carry ids, and whether backfill is on.
var freshVariants = []struct {
	name              string
	stamped, backfill bool
}{
	{"stamped/backfill=on", true, true}, // this instrumentation, collector-config default
	{"stamped/backfill=off", true, false},
	{"semconv/backfill=on", false, true}, // chat and HTTP spans without ids: every one backfilled
}

func BenchmarkFreshAgentIdentity(b *testing.B) {
	for _, shape := range freshShapes {
		for _, v := range freshVariants {
			b.Run(shape.name+"/"+v.name, func(b *testing.B) {
				cfg := createDefaultConfig().(*Config)
				cfg.Backfill = v.backfill
				p, err := newIdentityProcessor(processortest.NewNopSettings(componentType), cfg)
				require.NoError(b, err)
				td := shape.build(&traceBuilder{td: ptrace.NewTraces(), stamped: v.stamped})
				spans, k := td.SpanCount(), batchOf(td.SpanCount())
				ctx := context.Background()
				b.ReportAllocs()
				var wall, cpu time.Duration
				b.StopTimer()
				for i := 0; i < b.N; {
					batch := copies(td, min(k, b.N-i))
					runtime.GC() // the copies' garbage is not the processor's
					b.StartTimer()
					start, c0 := time.Now(), cpuTime()
					for _, fresh := range batch {
						_, _ = p.processTraces(ctx, fresh)
					}
					wall, cpu = wall+time.Since(start), cpu+cpuTime()-c0
					b.StopTimer()
					i += len(batch)
				}
				b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N*spans), "ns/span")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*spans), "cpu-ns/span")
			})
		}
	}
}

// BenchmarkFreshGroupByTrace is groupbytrace (v0.161.0, wait_duration 1µs, 1
// worker) on the same fresh traces: consume a copy, wait until released.
func BenchmarkFreshGroupByTrace(b *testing.B) {
	for _, shape := range freshShapes {
		b.Run(shape.name, func(b *testing.B) {
			var released atomic.Int64
			next, _ := consumer.NewTraces(func(context.Context, ptrace.Traces) error {
				released.Add(1)
				return nil
			})
			f := groupbytraceprocessor.NewFactory()
			cfg := f.CreateDefaultConfig()
			raw := map[string]any{"wait_duration": time.Microsecond, "num_traces": 100_000, "num_workers": 1}
			require.NoError(b, confmapUnmarshal(raw, cfg))
			p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(component.MustNewType("groupbytrace")), cfg, next)
			require.NoError(b, err)
			require.NoError(b, p.Start(context.Background(), componenttest.NewNopHost()))
			defer func() { require.NoError(b, p.Shutdown(context.Background())) }()
			td := shape.build(&traceBuilder{td: ptrace.NewTraces(), stamped: true})
			spans, k := td.SpanCount(), batchOf(td.SpanCount())
			ctx := context.Background()
			b.ReportAllocs()
			var wall, cpu time.Duration
			n := int64(0)
			b.StopTimer()
			for i := 0; i < b.N; {
				batch := copies(td, min(k, b.N-i))
				for _, fresh := range batch {
					n++
					setTraceID(fresh, n)
				}
				runtime.GC()
				b.StartTimer()
				start, c0 := time.Now(), cpuTime()
				for j, fresh := range batch {
					for int64(i+j)-released.Load() >= 64 {
						time.Sleep(10 * time.Microsecond)
					}
					require.NoError(b, p.ConsumeTraces(ctx, fresh))
				}
				for released.Load() < n {
					time.Sleep(10 * time.Microsecond)
				}
				wall, cpu = wall+time.Since(start), cpu+cpuTime()-c0
				b.StopTimer()
				i += len(batch)
			}
			b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N*spans), "ns/span")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*spans), "cpu-ns/span")
		})
	}
}
