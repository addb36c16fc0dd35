// SPDX-License-Identifier: Apache-2.0

package ackpair_test

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/goleak"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/ackholdprocessor"
	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/ackreleaseprocessor"
	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/internal/ackpair"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The pair under test: ack_hold and ack_release, through their factories.
var (
	newHold    = ackholdprocessor.NewFactory
	newRelease = ackreleaseprocessor.NewFactory
)

// later stands for groupbytrace: it answers at once and passes the spans on
// from another goroutine when told to.
type later struct {
	mu   sync.Mutex
	held []ptrace.Traces
	next consumer.Traces
}

func (l *later) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (l *later) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = append(l.held, td)
	return nil
}

// flush releases everything held, merged into one batch as the batch processor would.
func (l *later) flush() error {
	l.mu.Lock()
	all := ptrace.NewTraces()
	for _, td := range l.held {
		td.ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
	}
	l.held = nil
	l.mu.Unlock()
	return l.next.ConsumeTraces(context.Background(), all)
}

var lastSpan atomic.Uint64

// traces makes one span per trace id given, each with a span id never used before.
func traces(ids ...byte) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for _, id := range ids {
		s := spans.AppendEmpty()
		s.SetTraceID(pcommon.TraceID{id})
		var sid pcommon.SpanID
		binary.LittleEndian.PutUint64(sid[:], lastSpan.Add(1))
		s.SetSpanID(sid)
	}
	return td
}

func pipeline(t *testing.T, name string, timeout time.Duration, exporter consumer.Traces) (processor.Traces, *later) {
	t.Helper()
	rf := newRelease()
	rel, err := rf.CreateTraces(context.Background(), processortest.NewNopSettings(rf.Type()), &ackreleaseprocessor.Config{Name: name}, exporter)
	if err != nil {
		t.Fatal(err)
	}
	l := &later{next: rel}
	hf := newHold()
	h, err := hf.CreateTraces(context.Background(), processortest.NewNopSettings(hf.Type()), &ackholdprocessor.Config{Name: name, Timeout: timeout}, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []component.Component{h, rel} {
		if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			t.Fatal(err)
		}
	}
	return h, l
}

func consumeAsync(h processor.Traces, td ptrace.Traces) chan error {
	out := make(chan error, 1)
	go func() { out <- h.ConsumeTraces(context.Background(), td) }()
	return out
}

func TestHoldAnswersOnlyOnceEveryTraceIsExported(t *testing.T) {
	sink := new(consumertest.TracesSink)
	h, l := pipeline(t, t.Name(), time.Minute, sink)
	first := consumeAsync(h, traces(1, 1, 2)) // two traces
	second := consumeAsync(h, traces(2))      // more of trace 2, another request
	for l.mu.Lock(); len(l.held) < 2; l.mu.Lock() {
		l.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	l.mu.Unlock()
	select {
	case err := <-first:
		t.Fatalf("answered before export: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if sink.SpanCount() != 4 {
		t.Fatalf("exported %d spans, want 4", sink.SpanCount())
	}
}

func TestHoldReturnsTheExportError(t *testing.T) {
	boom := errors.New("backend down")
	h, l := pipeline(t, t.Name(), time.Minute, consumertest.NewErr(boom))
	res := consumeAsync(h, traces(3))
	for l.mu.Lock(); len(l.held) < 1; l.mu.Lock() {
		l.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	l.mu.Unlock()
	if err := l.flush(); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, boom) {
		t.Fatalf("hold returned %v, want the export error", err)
	}
}

func TestHoldTimesOutWhenNothingIsReleasedAndForgets(t *testing.T) {
	h, _ := pipeline(t, t.Name(), 20*time.Millisecond, new(consumertest.TracesSink))
	if err := h.ConsumeTraces(context.Background(), traces(4)); !errors.Is(err, ackholdprocessor.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	if n := ackpair.For(t.Name()).Waiting(); n != 0 {
		t.Fatalf("%d traces left waiting after the timeout", n)
	}
}

func TestHoldPassesOnAnEmptyRequest(t *testing.T) {
	sink := new(consumertest.TracesSink)
	h, _ := pipeline(t, t.Name(), time.Minute, sink)
	if err := h.ConsumeTraces(context.Background(), ptrace.NewTraces()); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	if (&ackholdprocessor.Config{Timeout: 0}).Validate() == nil {
		t.Fatal("a zero timeout must be rejected")
	}
	if (&ackholdprocessor.Config{Timeout: time.Second, ResendAfter: -time.Second}).Validate() == nil {
		t.Fatal("a negative resend_after must be rejected")
	}
	if err := newHold().CreateDefaultConfig().(*ackholdprocessor.Config).Validate(); err != nil {
		t.Fatal(err)
	}
}

// realPipeline is ack_hold -> groupbytrace (the contrib processor) -> ack_release -> exporter.
func realPipeline(t *testing.T, name string, timeout time.Duration, groupbytrace map[string]any, exporter consumer.Traces) processor.Traces {
	return resendPipeline(t, name, timeout, 0, groupbytrace, exporter)
}

// resendPipeline is realPipeline with ack_hold's resend_after, and, when it is
// positive, an ack_release checkpoint right after groupbytrace (tier2-identity.yaml).
func resendPipeline(t *testing.T, name string, timeout, resend time.Duration, groupbytrace map[string]any,
	exporter consumer.Traces) processor.Traces {
	t.Helper()
	rf := newRelease()
	rel, err := rf.CreateTraces(context.Background(), processortest.NewNopSettings(rf.Type()), &ackreleaseprocessor.Config{Name: name}, exporter)
	require.NoError(t, err)
	afterGroup := consumer.Traces(rel)
	if resend > 0 {
		afterGroup, err = rf.CreateTraces(context.Background(), processortest.NewNopSettings(rf.Type()),
			&ackreleaseprocessor.Config{Name: name, Checkpoint: true}, rel)
		require.NoError(t, err)
	}
	gf := groupbytraceprocessor.NewFactory()
	gcfg := gf.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(groupbytrace).Unmarshal(gcfg))
	gbt, err := gf.CreateTraces(context.Background(), processortest.NewNopSettings(gf.Type()), gcfg, afterGroup)
	require.NoError(t, err)
	hf := newHold()
	h, err := hf.CreateTraces(context.Background(), processortest.NewNopSettings(hf.Type()),
		&ackholdprocessor.Config{Name: name, Timeout: timeout, ResendAfter: resend}, gbt)
	require.NoError(t, err)
	for _, c := range []component.Component{rel, gbt, h} {
		require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
		t.Cleanup(func() { require.NoError(t, c.Shutdown(context.Background())) })
	}
	return h
}

// Behind the real groupbytrace: two requests carrying parts of one trace
// (and another trace) are answered only once groupbytrace released the trace
// and the exporter has every span of the request.
func TestHoldBehindRealGroupByTrace(t *testing.T) {
	sink := new(consumertest.TracesSink)
	h := realPipeline(t, t.Name(), time.Minute, map[string]any{"wait_duration": 200 * time.Millisecond}, sink)
	var wg sync.WaitGroup
	for _, td := range []ptrace.Traces{traces(7, 7, 8), traces(7)} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := map[pcommon.SpanID]bool{}
			for _, s := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
				want[s.SpanID()] = true
			}
			assert.NoError(t, h.ConsumeTraces(context.Background(), td))
			for _, got := range sink.AllTraces() {
				for _, rs := range got.ResourceSpans().All() {
					for _, ss := range rs.ScopeSpans().All() {
						for _, s := range ss.Spans().All() {
							delete(want, s.SpanID())
						}
					}
				}
			}
			assert.Empty(t, want, "answered before every span of the request was exported")
		}()
	}
	wg.Wait()
	assert.Equal(t, 4, sink.SpanCount())
}

// A trace groupbytrace evicts (num_traces full) never comes out: the request
// is answered with ErrTimeout, which the sender's queue retries. Whichever of
// the two traces groupbytrace keeps is held for a minute, longer than the
// timeout: both requests time out, in either order of arrival.
func TestHoldTimesOutOnAnEvictedTrace(t *testing.T) {
	h := realPipeline(t, t.Name(), 300*time.Millisecond,
		map[string]any{"wait_duration": time.Minute, "num_traces": 1}, new(consumertest.TracesSink))
	first, second := consumeAsync(h, traces(9)), consumeAsync(h, traces(10))
	assert.ErrorIs(t, <-first, ackholdprocessor.ErrTimeout)
	assert.ErrorIs(t, <-second, ackholdprocessor.ErrTimeout)
}

// With resend_after and the checkpoint, a trace groupbytrace evicted is passed
// on again (that trace only) instead of holding its request for the whole
// timeout: both requests are answered without error, every span exported.
func TestHoldResendsWhatGroupByTraceLost(t *testing.T) {
	sink := new(consumertest.TracesSink)
	h := resendPipeline(t, t.Name(), 10*time.Second, 100*time.Millisecond,
		map[string]any{"wait_duration": 20 * time.Millisecond, "num_traces": 1}, sink)
	first, second := consumeAsync(h, traces(11, 11)), consumeAsync(h, traces(12))
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	got := map[pcommon.TraceID]int{}
	for _, td := range sink.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					got[s.TraceID()]++
				}
			}
		}
	}
	assert.GreaterOrEqual(t, got[pcommon.TraceID{11}], 2)
	assert.GreaterOrEqual(t, got[pcommon.TraceID{12}], 1)
	assert.Zero(t, ackpair.For(t.Name()).Waiting())
}

// The lost share stands alone: a request of two traces of which a component
// drops one (the first time) gets only that trace's spans again.
func TestHoldResendsOnlyTheLostTrace(t *testing.T) {
	sink := new(consumertest.TracesSink)
	rf := newRelease()
	rel, err := rf.CreateTraces(context.Background(), processortest.NewNopSettings(rf.Type()), &ackreleaseprocessor.Config{Name: t.Name()}, sink)
	require.NoError(t, err)
	check, err := rf.CreateTraces(context.Background(), processortest.NewNopSettings(rf.Type()),
		&ackreleaseprocessor.Config{Name: t.Name(), Checkpoint: true}, rel)
	require.NoError(t, err)
	var calls atomic.Int32
	drop := &dropFirst{trace: pcommon.TraceID{14}, next: check, calls: &calls}
	hf := newHold()
	h, err := hf.CreateTraces(context.Background(), processortest.NewNopSettings(hf.Type()),
		&ackholdprocessor.Config{Name: t.Name(), Timeout: 10 * time.Second, ResendAfter: 50 * time.Millisecond}, drop)
	require.NoError(t, err)
	require.NoError(t, h.ConsumeTraces(context.Background(), traces(13, 14, 14)))
	assert.Equal(t, int32(2), calls.Load(), "the request, then its lost trace")
	assert.Equal(t, 3, sink.SpanCount(), "trace 13 once, trace 14's two spans once")
}

// dropFirst passes every batch on, but drops trace's spans the first time.
type dropFirst struct {
	trace   pcommon.TraceID
	next    consumer.Traces
	calls   *atomic.Int32
	dropped atomic.Bool
}

func (d *dropFirst) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

func (d *dropFirst) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	d.calls.Add(1)
	out := ptrace.NewTraces()
	td.CopyTo(out)
	if !d.dropped.Swap(true) {
		for _, rs := range out.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				ss.Spans().RemoveIf(func(s ptrace.Span) bool { return s.TraceID() == d.trace })
			}
		}
	}
	return d.next.ConsumeTraces(ctx, out)
}
