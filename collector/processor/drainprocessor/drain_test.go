// SPDX-License-Identifier: Apache-2.0

package drainprocessor

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

func start(t *testing.T, delay time.Duration) (*consumertest.TracesSink, func(context.Context) error, func(ptrace.Traces) error) {
	t.Helper()
	sink := new(consumertest.TracesSink)
	f := NewFactory()
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), &Config{Delay: delay}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	return sink, p.Shutdown, func(td ptrace.Traces) error { return p.ConsumeTraces(context.Background(), td) }
}

func TestPassesTracesThroughUnchanged(t *testing.T) {
	sink, shutdown, consume := start(t, 0)
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("s")
	if err := consume(td); err != nil {
		t.Fatal(err)
	}
	if got := sink.SpanCount(); got != 1 {
		t.Fatalf("spans out = %d, want 1", got)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestShutdownWaitsDelay(t *testing.T) {
	_, shutdown, _ := start(t, 300*time.Millisecond)
	began := time.Now()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(began); waited < 300*time.Millisecond {
		t.Fatalf("Shutdown returned after %v, before the 300ms delay", waited)
	}
}

func TestShutdownEndsWithItsContext(t *testing.T) {
	_, shutdown, _ := start(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- shutdown(ctx) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown ignored its context")
	}
}

func TestNegativeDelayRejected(t *testing.T) {
	if (&Config{Delay: -time.Second}).Validate() == nil {
		t.Fatal("negative delay accepted")
	}
}
