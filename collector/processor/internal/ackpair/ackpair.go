// SPDX-License-Identifier: Apache-2.0

// Package ackprocessor provides a pair of processors, `ack_hold` and
// `ack_release`, that make a pipeline acknowledge a request only once every
// span of it has left the pipeline: judged and exported.
//
// groupbytrace answers its caller as soon as it holds the spans, and holds
// them in memory for wait_duration: a SIGKILL loses what it holds although the
// sender (or a persistent queue in front) was told they were delivered.
// `ack_hold`, placed before groupbytrace, passes each request on and then
// waits; `ack_release`, placed before the exporter, tells it when the spans
// of the request have been exported (or failed to). Only then does
// `ack_hold` return, with the exporter's error if any; after `timeout` (a
// trace evicted by groupbytrace, a lost release) it returns a retryable
// error. The sender's persistent queue (tier2-identity.yaml: the durable
// intake) thus keeps every request until its verdicts are exported, across a
// SIGKILL of this process; what it re-delivers after a restart is judged
// again (agentidentity's verdict memory marks those verdicts duplicate).
//
// The two are linked by `name` (default "default"): put both in the same
// pipeline with the same name. A request's spans are matched per trace: the
// first span of each trace in the request marks that trace's share of it
// (groupbytrace keeps one request's spans of a trace together, and so does
// the batch processor unless `send_batch_max_size` splits batches: leave it
// unset between the two).
package ackprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/ackprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
)

var (
	holdType    = component.MustNewType("ack_hold")
	releaseType = component.MustNewType("ack_release")
	// ErrTimeout is returned (retryable) when a request's spans did not leave
	// the pipeline within `timeout`.
	ErrTimeout = errors.New("ack_hold: spans not exported within timeout")
)

// HoldConfig configures ack_hold.
type HoldConfig struct {
	// Name links this ack_hold to the ack_release of the same name. Default "default".
	Name string `mapstructure:"name"`
	// Timeout is how long a request waits for its spans to be exported
	// before it is answered with a retryable error. Set it above
	// groupbytrace's wait_duration plus the batch timeout and the export
	// time, and below the sender's timeout. Default 30s.
	Timeout time.Duration `mapstructure:"timeout"`
}

// ReleaseConfig configures ack_release.
type ReleaseConfig struct {
	// Name links this ack_release to the ack_hold of the same name. Default "default".
	Name string `mapstructure:"name"`
}

// Validate rejects a timeout that is not positive.
func (c *HoldConfig) Validate() error {
	if c.Timeout <= 0 {
		return errors.New("`timeout` must be positive")
	}
	return nil
}

// NewHoldFactory returns the factory of ack_hold.
func NewHoldFactory() processor.Factory {
	return processor.NewFactory(holdType,
		func() component.Config { return &HoldConfig{Name: "default", Timeout: 30 * time.Second} },
		processor.WithTraces(createHold, component.StabilityLevelAlpha))
}

// NewReleaseFactory returns the factory of ack_release.
func NewReleaseFactory() processor.Factory {
	return processor.NewFactory(releaseType,
		func() component.Config { return &ReleaseConfig{Name: "default"} },
		processor.WithTraces(createRelease, component.StabilityLevelAlpha))
}

// request is one held ConsumeTraces call: the number of its traces not yet
// exported, and the first export error.
type request struct {
	left int
	err  error
	done chan struct{}
}

// entry is one trace's share of a request, recognised by one of its spans.
type entry struct {
	marker pcommon.SpanID
	req    *request
}

// registry links an ack_hold to its ack_release.
type registry struct {
	mu      sync.Mutex
	waiting map[pcommon.TraceID][]entry
}

var (
	registriesMu sync.Mutex
	registries   = map[string]*registry{}
)

func registryFor(name string) *registry {
	registriesMu.Lock()
	defer registriesMu.Unlock()
	r := registries[name]
	if r == nil {
		r = &registry{waiting: map[pcommon.TraceID][]entry{}}
		registries[name] = r
	}
	return r
}

func createHold(_ context.Context, _ processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	c := cfg.(*HoldConfig)
	return &hold{reg: registryFor(c.Name), timeout: c.Timeout, next: next}, nil
}

func createRelease(_ context.Context, _ processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	return &release{reg: registryFor(cfg.(*ReleaseConfig).Name), next: next}, nil
}

// hold is the ack_hold processor.
type hold struct {
	component.StartFunc
	component.ShutdownFunc
	reg     *registry
	timeout time.Duration
	next    consumer.Traces
}

func (*hold) Capabilities() consumer.Capabilities { return consumer.Capabilities{MutatesData: false} }

// ConsumeTraces passes td on and returns once every trace of it was exported
// (the exporter's error, if any), or with ErrTimeout, or the context's error.
func (h *hold) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	req := &request{done: make(chan struct{})}
	entries := markers(td)
	if len(entries) == 0 {
		return h.next.ConsumeTraces(ctx, td)
	}
	req.left = len(entries)
	h.reg.mu.Lock()
	for tid, marker := range entries {
		h.reg.waiting[tid] = append(h.reg.waiting[tid], entry{marker: marker, req: req})
	}
	h.reg.mu.Unlock()
	// Registered before passing on: the release can come at once.
	if err := h.next.ConsumeTraces(ctx, td); err != nil {
		h.reg.forget(entries, req)
		return err
	}
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	select {
	case <-req.done:
		return req.err
	case <-timer.C:
		h.reg.forget(entries, req)
		return fmt.Errorf("%w (%s)", ErrTimeout, h.timeout)
	case <-ctx.Done():
		h.reg.forget(entries, req)
		return ctx.Err()
	}
}

// markers returns, per trace of td, the id of its first span.
func markers(td ptrace.Traces) map[pcommon.TraceID]pcommon.SpanID {
	out := map[pcommon.TraceID]pcommon.SpanID{}
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				if _, ok := out[span.TraceID()]; !ok {
					out[span.TraceID()] = span.SpanID()
				}
			}
		}
	}
	return out
}

// forget drops req's entries that are still waiting.
func (r *registry) forget(entries map[pcommon.TraceID]pcommon.SpanID, req *request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for tid := range entries {
		kept := r.waiting[tid][:0]
		for _, e := range r.waiting[tid] {
			if e.req != req {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(r.waiting, tid)
		} else {
			r.waiting[tid] = kept
		}
	}
}

// release is the ack_release processor.
type release struct {
	component.StartFunc
	component.ShutdownFunc
	reg  *registry
	next consumer.Traces
}

func (*release) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeTraces passes td on, then tells every waiting request whose spans
// td carried that they are out, with the error of the call.
func (r *release) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	// The spans' ids are read before passing on: the exporter may keep td.
	type key struct {
		tid pcommon.TraceID
		sid pcommon.SpanID
	}
	var out []key
	r.reg.mu.Lock()
	if len(r.reg.waiting) > 0 {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					if _, ok := r.reg.waiting[span.TraceID()]; ok {
						out = append(out, key{span.TraceID(), span.SpanID()})
					}
				}
			}
		}
	}
	r.reg.mu.Unlock()
	err := r.next.ConsumeTraces(ctx, td)
	if len(out) == 0 {
		return err
	}
	r.reg.mu.Lock()
	defer r.reg.mu.Unlock()
	for _, k := range out {
		es := r.reg.waiting[k.tid]
		for i := 0; i < len(es); i++ {
			if es[i].marker != k.sid {
				continue
			}
			req := es[i].req
			if err != nil && req.err == nil {
				req.err = err
			}
			if req.left--; req.left == 0 {
				close(req.done)
			}
			es = append(es[:i], es[i+1:]...)
			i--
		}
		if len(es) == 0 {
			delete(r.reg.waiting, k.tid)
		} else {
			r.reg.waiting[k.tid] = es
		}
	}
	return err
}

var (
	_ processor.Traces = (*hold)(nil)
	_ processor.Traces = (*release)(nil)
)
