// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// agentAttrs are the attributes of an invoke_agent span with a conversation.
func agentAttrs(conv string) map[string]any {
	return map[string]any{attrOperationName: operationInvokeAgent, attrConversationID: conv}
}

// countResults tallies agent_identity.hop.result over all spans.
func countResults(td ptrace.Traces) map[string]int {
	out := map[string]int{}
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				if v, ok := s.Attributes().Get(attrHopResult); ok {
					out[v.Str()]++
				}
			}
		}
	}
	return out
}

func TestLargeTraces(t *testing.T) {
	const n = 100_000
	shapes := map[string]func(i int) spanIn{
		// one service, a chain n deep, backfill walks all of it
		"deep_chain": func(i int) spanIn {
			s := spanIn{ID: fmt.Sprint(i), Service: "a", Kind: "client"}
			if i > 0 {
				s.Parent = fmt.Sprint(i - 1)
			} else {
				s.Attrs = agentAttrs("x")
			}
			return s
		},
		// two services alternating along a chain: n-1 hops, every one compared
		"alternating_chain": func(i int) spanIn {
			s := spanIn{ID: fmt.Sprint(i), Service: []string{"a", "b"}[i%2], Kind: "client",
				Attrs: agentAttrs([]string{"x", "y"}[i%3%2])}
			if i > 0 {
				s.Parent = fmt.Sprint(i - 1)
			}
			return s
		},
		// one caller span with n-1 callees in another service
		"wide": func(i int) spanIn {
			if i == 0 {
				return spanIn{ID: "0", Service: "a", Kind: "client", Attrs: agentAttrs("x")}
			}
			return spanIn{ID: fmt.Sprint(i), Parent: "0", Service: "b", Attrs: agentAttrs("y")}
		},
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			spans := make([]spanIn, n)
			for i := range spans {
				spans[i] = shape(i)
				spans[i].Start = 1
			}
			td := buildTraces(t, spans)
			h := newHarness(t, configFrom(t, map[string]any{"backfill": true, "hop_window": "0s"}))
			start := time.Now()
			require.NoError(t, h.proc.ConsumeTraces(context.Background(), td))
			t.Logf("%d spans in %v", n, time.Since(start))
			out := h.sink.AllTraces()[0]
			assert.Equal(t, n, out.SpanCount())
			results := countResults(out)
			assert.Zero(t, results[resultUnresolved])
			if name != "deep_chain" {
				assert.Equal(t, n-1, results[resultContinued]+results[resultContextChanged]+results[resultFirstTurn])
			}
		})
	}
}

func TestConcurrentCalls(t *testing.T) {
	h := newHarness(t, configFrom(t, map[string]any{"backfill": true, "hop_window": "0s"}))
	input, err := readGolden("mismatching_hop")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				spans := append([]spanIn(nil), input...)
				for k := range spans {
					spans[k].Trace = fmt.Sprintf("g%d-%d", g, i)
				}
				assert.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, spans)))
			}
		}()
	}
	wg.Wait()
	m := h.metrics(t)
	assert.Equal(t, int64(400), m["agent_identity.mismatches{callee_agent=specialist,callee_service=specialist,caller_service=orchestrator,reason=context_changed}"])
}

// A batch holding several traces is split per trace: no hop crosses traces.
func TestBatchOfTraces(t *testing.T) {
	spans := []spanIn{
		{Trace: "t1", ID: "p", Service: "a", Kind: "client", Attrs: agentAttrs("x")},
		{Trace: "t2", ID: "c", Parent: "p", Service: "b", Attrs: agentAttrs("y")},
	}
	h := newHarness(t, configFrom(t, map[string]any{"hop_window": "0s"}))
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, spans)))
	// c's parent is not in its trace (unresolved); p has no callee in its own
	// trace, as when trace context is lost on the hop.
	assert.Equal(t, map[string]int{resultUnresolved: 1, resultNoCallee: 1}, countResults(h.sink.AllTraces()[0]))
}

// Two traces with the same span ids in one batch (span ids are unique per
// trace only) are each judged as if alone: the span-id index is per trace.
func TestBatchOfTracesSharingSpanIDs(t *testing.T) {
	input, err := readGolden("mismatching_hop")
	require.NoError(t, err)
	alone := newHarness(t, configFrom(t, map[string]any{"hop_window": "0s"}))
	require.NoError(t, alone.proc.ConsumeTraces(context.Background(), buildTraces(t, input)))
	want := countResults(alone.sink.AllTraces()[0])
	require.NotEmpty(t, want)

	var both []spanIn
	for _, tid := range []string{"t1", "t2"} {
		for _, s := range input {
			s.Trace = tid
			both = append(both, s)
		}
	}
	h := newHarness(t, configFrom(t, map[string]any{"hop_window": "0s"}))
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, both)))
	got := countResults(h.sink.AllTraces()[0])
	for r, n := range want {
		want[r] = 2 * n
	}
	assert.Equal(t, want, got)
}

func TestEmptyAndSpanlessInput(t *testing.T) {
	h := newHarness(t, configFrom(t, map[string]any{"hop_window": "0s"}))
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for _, in := range []ptrace.Traces{ptrace.NewTraces(), td} {
		require.NoError(t, h.proc.ConsumeTraces(context.Background(), in))
	}
	assert.Len(t, h.sink.AllTraces(), 2)
}

// The processor keeps nothing once a trace is processed: the heap does not
// grow with the number of distinct traces seen.
func TestNoStateRetained(t *testing.T) {
	h := newHarness(t, configFrom(t, map[string]any{"backfill": true, "hop_window": "0s"}))
	td := benchTrace(pcommon.TraceID{1}, benchAgents, benchCalls)
	ctx := context.Background()
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	sink := h.sink
	run := func(from, to int64) {
		for n := from; n < to; n++ {
			setTraceID(td, n)
			require.NoError(t, h.proc.ConsumeTraces(ctx, td))
		}
		sink.Reset()
	}
	run(0, 100) // warm up metric label sets
	before := heap()
	run(100, 2100)
	after := heap()
	assert.Less(t, int64(after)-int64(before), int64(64<<10), "heap grew from %d to %d", before, after)
}

// TestServiceName: the SDK default and malformed names are "no usable name".
func TestServiceName(t *testing.T) {
	for raw, want := range map[any]string{
		"checkout": "checkout", "unknown_service": "", "unknown_service:python": "", "": "", 12: "",
		"unknown_services": "unknown_services", "my_unknown_service": "my_unknown_service",
	} {
		res := pcommon.NewResource()
		require.NoError(t, res.Attributes().FromRaw(map[string]any{attrServiceName: raw}))
		assert.Equal(t, want, serviceName(res), "service.name %#v", raw)
	}
	assert.Empty(t, serviceName(pcommon.NewResource()))
}

// TestRedeliveredCopyIsOneSpan: identical copies are aliased; a copy that
// differs in any compared field makes the span id ambiguous.
func TestRedeliveredCopyIsOneSpan(t *testing.T) {
	base := []spanIn{
		{ID: "a", Service: "a", Kind: "client", Start: 1, Attrs: agentAttrs("c1")},
		{ID: "a", Service: "a", Kind: "client", Start: 1, Attrs: agentAttrs("c1")},
		{ID: "b", Parent: "a", Service: "b", Kind: "server", Start: 2},
	}
	variants := map[string]func(s *spanIn){
		"identical": func(*spanIn) {},
		"start":     func(s *spanIn) { s.Start = 3 },
		"kind":      func(s *spanIn) { s.Kind = "internal" },
		"service":   func(s *spanIn) { s.Service = "other" },
		"attrs":     func(s *spanIn) { s.Attrs = agentAttrs("c2") },
		"parent":    func(s *spanIn) { s.Parent = "x" },
	}
	for name, mutate := range variants {
		t.Run(name, func(t *testing.T) {
			spans := append([]spanIn(nil), base...)
			mutate(&spans[1])
			td := buildTraces(t, spans)
			sc := getScratch()
			idx := buildIndex(groupByTrace(td, sc)[0], sc)
			child := idx.parent[2]
			if name == "identical" {
				assert.Equal(t, parentCopy, idx.parent[1])
				assert.Equal(t, int32(0), child)
			} else {
				assert.NotEqual(t, parentCopy, idx.parent[1])
				assert.Equal(t, parentMissing, child)
			}
		})
	}
}

// Only rules that name a request on their own (a span condition, no
// callee_service) make a span without a callee no_callee; caller_service, when
// set, must be the span's service.
func TestNoCalleeRules(t *testing.T) {
	spans := []spanIn{
		{ID: "a_send", Service: "a", Kind: "client", Attrs: agentAttrs("x")},
		{ID: "b_send", Service: "b", Kind: "client", Attrs: agentAttrs("y")},
		{ID: "b_plain", Service: "b", Kind: "internal"},
	}
	for name, tc := range map[string]struct {
		rules []any
		want  map[string]int
	}{
		"default":          {nil, map[string]int{resultNoCallee: 2}},
		"callee pair only": {[]any{map[string]any{"caller_service": "a", "callee_service": "z", "caller_span_kind": "client"}}, map[string]int{}},
		"service, no span": {[]any{map[string]any{"caller_service": "b"}}, map[string]int{}},
		"service and kind": {[]any{map[string]any{"caller_service": "b", "caller_span_kind": "client"}}, map[string]int{resultNoCallee: 1}},
		"any kind, attrs":  {[]any{map[string]any{"caller_attributes": map[string]any{attrConversationID: "x"}}}, map[string]int{resultNoCallee: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			raw := map[string]any{}
			if tc.rules != nil {
				raw["require_continuation"] = tc.rules
			}
			h := newHarness(t, configFrom(t, raw))
			require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, spans)))
			require.NoError(t, h.proc.Shutdown(context.Background())) // a request without a callee is held until then
			assert.Equal(t, tc.want, countResults(h.sink.AllTraces()[0]))
		})
	}
}

// TestScratchReuse: the pooled buffers of a large trace never leak into the
// analysis of the next (smaller) one: same marks as on a fresh processor.
func TestScratchReuse(t *testing.T) {
	input, err := readGolden("shape_a2a_executor_per_request")
	require.NoError(t, err)
	fresh := newHarness(t, configFrom(t, map[string]any{"backfill": true, "hop_window": "0s"}))
	require.NoError(t, fresh.proc.ConsumeTraces(context.Background(), buildTraces(t, input)))
	want := fresh.sink.AllTraces()[0]

	h := newHarness(t, configFrom(t, map[string]any{"backfill": true, "hop_window": "0s"}))
	for range 3 {
		require.NoError(t, h.proc.ConsumeTraces(context.Background(), benchTrace(pcommon.TraceID{7}, 20, 30)))
		require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, input)))
		got := h.sink.AllTraces()[len(h.sink.AllTraces())-1]
		assert.Equal(t, countResults(want), countResults(got))
		assert.Equal(t, want.ResourceSpans().At(2).ScopeSpans().At(0).Spans().At(0).Attributes().AsRaw(),
			got.ResourceSpans().At(2).ScopeSpans().At(0).Spans().At(0).Attributes().AsRaw())
	}
}
