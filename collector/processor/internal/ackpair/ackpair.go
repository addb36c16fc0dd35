// SPDX-License-Identifier: Apache-2.0

// Package ackpair is what ack_hold (ackholdprocessor) and ack_release
// (ackreleaseprocessor) share: the registry of the requests a hold waits on,
// linked by name, and the two halves of the hand-over (Hold, Release). See
// ackholdprocessor's package doc for what the pair is for.
package ackpair // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/internal/ackpair"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/batchpersignal"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ErrTimeout is returned (retryable) when a request's spans did not leave
// the pipeline within the hold's timeout.
var ErrTimeout = errors.New("ack_hold: spans not exported within timeout")

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
	// passed: the marker went past a checkpoint (Pass)
	passed bool
}

// Registry links an ack_hold to the ack_release of the same name.
type Registry struct {
	mu      sync.Mutex
	waiting map[pcommon.TraceID][]entry
}

var (
	registriesMu sync.Mutex
	registries   = map[string]*Registry{}
)

// For returns the registry of name, made on first use.
func For(name string) *Registry {
	registriesMu.Lock()
	defer registriesMu.Unlock()
	r := registries[name]
	if r == nil {
		r = &Registry{waiting: map[pcommon.TraceID][]entry{}}
		registries[name] = r
	}
	return r
}

// Hold passes td on to next and returns once every trace of it was exported
// (the exporter's error, if any), or with ErrTimeout after timeout, or the
// context's error. With resend positive, every resend the traces of td whose
// share has not gone past a checkpoint (Pass) are passed on again (a copy of
// their spans of td; resent, if not nil, is told how many): what a component
// between the two lost (groupbytrace evicts, or drops the spans that reach it
// while it releases their trace) is sent again without waiting for the
// timeout, and without sending the request's other traces twice.
func (r *Registry) Hold(ctx context.Context, td ptrace.Traces, timeout, resend time.Duration,
	resent func(traces int), next consumer.Traces) error {
	req := &request{done: make(chan struct{})}
	entries := markers(td)
	if len(entries) == 0 {
		return next.ConsumeTraces(ctx, td)
	}
	req.left = len(entries)
	r.mu.Lock()
	for tid, marker := range entries {
		r.waiting[tid] = append(r.waiting[tid], entry{marker: marker, req: req})
	}
	r.mu.Unlock()
	// Registered before passing on: the release can come at once.
	if err := next.ConsumeTraces(ctx, td); err != nil {
		r.forget(entries, req)
		return err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if resend > 0 {
		ticker := time.NewTicker(resend)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		select {
		case <-req.done:
			return req.err
		case <-tick:
			if lost := r.notPassed(entries, req); len(lost) > 0 {
				if resent != nil {
					resent(len(lost))
				}
				// An error here is the same as a loss: sent again next tick.
				_ = next.ConsumeTraces(ctx, only(td, lost))
			}
		case <-timer.C:
			r.forget(entries, req)
			return fmt.Errorf("%w (%s)", ErrTimeout, timeout)
		case <-ctx.Done():
			r.forget(entries, req)
			return ctx.Err()
		}
	}
}

// notPassed returns the traces of req still waiting whose marker has not
// gone past a checkpoint.
func (r *Registry) notPassed(entries map[pcommon.TraceID]pcommon.SpanID, req *request) map[pcommon.TraceID]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[pcommon.TraceID]bool{}
	for tid := range entries {
		for _, e := range r.waiting[tid] {
			if e.req == req && !e.passed {
				out[tid] = true
			}
		}
	}
	return out
}

// only returns a copy of td's spans of the traces in keep, with their
// resource and scope (contrib's batchpersignal split, the kept ones joined).
func only(td ptrace.Traces, keep map[pcommon.TraceID]bool) ptrace.Traces {
	out := ptrace.NewTraces()
	for _, one := range batchpersignal.SplitTraces(td) {
		if keep[one.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()] {
			one.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
		}
	}
	return out
}

// Pass records that the spans of td went past a checkpoint (the ack_release
// with `checkpoint: true`, right after groupbytrace): the traces of held
// requests they mark are not sent again.
func (r *Registry) Pass(td ptrace.Traces) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waiting) == 0 {
		return
	}
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				es := r.waiting[span.TraceID()]
				for i := range es {
					if es[i].marker == span.SpanID() {
						es[i].passed = true
					}
				}
			}
		}
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
func (r *Registry) forget(entries map[pcommon.TraceID]pcommon.SpanID, req *request) {
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

// Release passes td on to next, then tells every waiting request whose spans
// td carried that they are out, with the error of the call.
func (r *Registry) Release(ctx context.Context, td ptrace.Traces, next consumer.Traces) error {
	// The spans' ids are read before passing on: the exporter may keep td.
	type key struct {
		tid pcommon.TraceID
		sid pcommon.SpanID
	}
	var out []key
	r.mu.Lock()
	if len(r.waiting) > 0 {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					if _, ok := r.waiting[span.TraceID()]; ok {
						out = append(out, key{span.TraceID(), span.SpanID()})
					}
				}
			}
		}
	}
	r.mu.Unlock()
	err := next.ConsumeTraces(ctx, td)
	if len(out) == 0 {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range out {
		es := r.waiting[k.tid]
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
			delete(r.waiting, k.tid)
		} else {
			r.waiting[k.tid] = es
		}
	}
	return err
}
