// SPDX-License-Identifier: Apache-2.0

// Package join holds the fragments of a trace until the hops in it can be
// judged: the processor asks, at every arrival, whether the merged trace is
// complete (Ready); a trace that never becomes complete is given up on after
// the hop window, and the oldest ones when the held spans exceed the bound.
// Every span handed to Add comes out exactly once (Add's, Expired's, Recheck's
// or Drain's result), as one ptrace.Traces per trace. Like tail_sampling's
// decision wait and groupbytrace, it keeps the spans themselves, in memory.
package join // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/join"

import (
	"container/list"
	"maps"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Reason says why a held trace left.
type Reason int

const (
	// Complete: Ready said every hop of the trace has its parts.
	Complete Reason = iota
	// Expired: the hop window passed since the trace's first fragment.
	Expired
	// Evicted: the held spans exceeded MaxSpans; the oldest trace left early.
	Evicted
	// Drained: the processor is shutting down.
	Drained
)

// Released is one trace leaving the join.
type Released struct {
	Traces ptrace.Traces
	Reason Reason
	// Held is how long the trace was held (first fragment to release).
	Held time.Duration
	// Earlier: span id -> service of the parts of this trace that left
	// before (within the window), for spans whose parent is among them.
	Earlier map[pcommon.SpanID]string
}

// Wait is what Ready says of a held trace.
type Wait int

const (
	// Done: the trace is complete; it leaves now.
	Done Wait = iota
	// Parts: the trace waits for parts of its own (Ready is asked again at
	// each of its arrivals and once it was held settle).
	Parts
	// Others: the trace waits for what another trace may bring (Ready is
	// asked again at every Recheck too, until it says otherwise).
	Others
)

// Ready says whether a held trace is complete; age is how long it has been
// held, earlier the services of the trace's spans that already left (nil:
// none). It runs under the store's lock (one trace at a time) and must not
// keep td or earlier.
type Ready func(td ptrace.Traces, age time.Duration, earlier map[pcommon.SpanID]string) Wait

// Service names a resource's process ("" when it has none usable).
type Service func(res pcommon.Resource) string

// Watch reports whether a fragment makes its trace wait for something
// another trace may bring (Recheck asks Ready again of such traces).
type Watch func(frag ptrace.Traces) bool

// Store is the set of held traces, safe for concurrent use.
type Store struct {
	window   time.Duration
	settle   time.Duration
	maxSpans int
	ready    Ready
	service  Service
	watch    Watch

	mu     sync.Mutex
	traces map[pcommon.TraceID]*held
	// age lists the held traces oldest first (expiry and eviction order)
	age   list.List
	spans int
	// gone: the span ids and services of traces released within the window
	// (tail_sampling's decision cache, for the late parts of a trace), oldest
	// first in goneAge, at most maxSpans span ids in all
	gone      map[pcommon.TraceID]*goneTrace
	goneAge   list.List
	goneSpans int
}

type goneTrace struct {
	tid   pcommon.TraceID
	spans map[pcommon.SpanID]string
	last  time.Time
	elem  *list.Element
}

type held struct {
	tid   pcommon.TraceID
	td    ptrace.Traces
	first time.Time
	spans int
	elem  *list.Element
	// watched: a fragment waits for another trace (Watch); others: Ready
	// last said Others; settled: Ready was asked again once the trace was
	// held settle
	watched, others, settled bool
}

// New returns a store that holds a trace at most window after its first
// fragment and at most maxSpans spans in all (0: no bound), and remembers
// the spans of released traces (id and service) as long, within the same
// bound. Recheck asks Ready again of a trace once it was held settle, and of
// watched traces.
func New(window, settle time.Duration, maxSpans int, ready Ready, service Service, watch Watch) *Store {
	return &Store{window: window, settle: settle, maxSpans: maxSpans, ready: ready, service: service, watch: watch,
		traces: map[pcommon.TraceID]*held{}, gone: map[pcommon.TraceID]*goneTrace{}}
}

func (s *Store) earlier(tid pcommon.TraceID) map[pcommon.SpanID]string {
	if g := s.gone[tid]; g != nil {
		return g.spans
	}
	return nil
}

// forget drops what is remembered of released traces older than the window,
// and the oldest beyond maxSpans.
func (s *Store) forget(now time.Time) {
	for e := s.goneAge.Front(); e != nil; e = s.goneAge.Front() {
		g := e.Value.(*goneTrace)
		if now.Sub(g.last) < s.window && (s.maxSpans == 0 || s.goneSpans <= s.maxSpans) {
			return
		}
		s.goneAge.Remove(e)
		delete(s.gone, g.tid)
		s.goneSpans -= len(g.spans)
	}
}

// Add merges the fragment frag of trace tid (every span of frag has that
// trace id; frag is taken over) into what is held for it. It returns the
// trace when it is now complete, and the traces evicted to keep the bound.
func (s *Store) Add(tid pcommon.TraceID, frag ptrace.Traces, now time.Time) []Released {
	n := frag.SpanCount()
	watched := s.watch(frag)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.traces[tid]
	if h == nil {
		h = &held{tid: tid, td: frag, first: now, spans: n}
		h.elem = s.age.PushBack(h)
		s.traces[tid] = h
	} else {
		frag.ResourceSpans().MoveAndAppendTo(h.td.ResourceSpans())
		h.spans += n
	}
	h.watched = h.watched || watched
	s.spans += n
	var out []Released
	if s.ask(h, now) {
		out = append(out, s.remove(h, Complete, now))
	}
	for s.maxSpans > 0 && s.spans > s.maxSpans && s.age.Len() > 0 {
		out = append(out, s.remove(s.age.Front().Value.(*held), Evicted, now))
	}
	return out
}

// Expired releases the traces held for the window or longer.
func (s *Store) Expired(now time.Time) []Released {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Released
	for e := s.age.Front(); e != nil; e = s.age.Front() {
		h := e.Value.(*held)
		if now.Sub(h.first) < s.window {
			break
		}
		out = append(out, s.remove(h, Expired, now))
	}
	s.forget(now)
	return out
}

// ask asks Ready of h and reports whether it is complete.
func (s *Store) ask(h *held, now time.Time) bool {
	w := s.ready(h.td, now.Sub(h.first), s.earlier(h.tid))
	h.others = w == Others
	return w == Done
}

// Recheck asks Ready again of the held traces that may have become complete
// without a part of their own: those waiting for another trace (Watch, e.g. a
// long-running task's follow-up; Ready's Others, e.g. an earlier turn of a
// conversation, or a wait that ended) and those just held settle (a wait that
// ended), and releases the complete ones.
func (s *Store) Recheck(now time.Time) []Released {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Released
	for e := s.age.Front(); e != nil; {
		h := e.Value.(*held)
		e = e.Next()
		age := now.Sub(h.first)
		settling := !h.settled && age >= s.settle
		if !settling && !h.watched && !h.others {
			continue
		}
		h.settled = h.settled || settling
		if s.ask(h, now) {
			out = append(out, s.remove(h, Complete, now))
		}
	}
	return out
}

// Drain releases everything held.
func (s *Store) Drain(now time.Time) []Released {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Released
	for e := s.age.Front(); e != nil; e = s.age.Front() {
		out = append(out, s.remove(e.Value.(*held), Drained, now))
	}
	return out
}

// Len returns the number of held traces and spans.
func (s *Store) Len() (traces, spans int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.traces), s.spans
}

// remove takes h out and remembers its spans (after the trace's earlier
// parts, which the release carries).
func (s *Store) remove(h *held, why Reason, now time.Time) Released {
	s.age.Remove(h.elem)
	delete(s.traces, h.tid)
	s.spans -= h.spans
	g := s.gone[h.tid]
	var earlier map[pcommon.SpanID]string
	if g == nil {
		g = &goneTrace{tid: h.tid, spans: make(map[pcommon.SpanID]string, h.spans)}
		s.gone[h.tid] = g
	} else {
		earlier = maps.Clone(g.spans)
		s.goneAge.Remove(g.elem)
	}
	g.last = now
	g.elem = s.goneAge.PushBack(g)
	for _, rs := range h.td.ResourceSpans().All() {
		svc := s.service(rs.Resource())
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				if _, ok := g.spans[span.SpanID()]; !ok {
					g.spans[span.SpanID()] = svc
					s.goneSpans++
				}
			}
		}
	}
	s.forget(now)
	return Released{Traces: h.td, Reason: why, Held: now.Sub(h.first), Earlier: earlier}
}

// Split returns td's spans as one ptrace.Traces per trace id, in order of
// first appearance. A batch of one trace (the common case behind
// groupbytrace) is returned as it is, without a copy.
func Split(td ptrace.Traces) ([]pcommon.TraceID, []ptrace.Traces) {
	var first pcommon.TraceID
	found, multi := false, false
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				if !found {
					first, found = span.TraceID(), true
				} else if span.TraceID() != first {
					multi = true
				}
			}
		}
	}
	if !found {
		return nil, nil
	}
	if !multi {
		return []pcommon.TraceID{first}, []ptrace.Traces{td}
	}
	return splitCopy(td)
}

// splitCopy copies each trace's spans, with their resource and scope, into a
// ptrace.Traces of its own.
func splitCopy(td ptrace.Traces) ([]pcommon.TraceID, []ptrace.Traces) {
	var ids []pcommon.TraceID
	var out []ptrace.Traces
	idx := map[pcommon.TraceID]int{}
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			// per trace, the scope copy in the trace's output
			scopes := map[pcommon.TraceID]ptrace.SpanSlice{}
			for _, span := range ss.Spans().All() {
				tid := span.TraceID()
				dst, ok := scopes[tid]
				if !ok {
					i, seen := idx[tid]
					if !seen {
						i = len(out)
						idx[tid] = i
						ids = append(ids, tid)
						out = append(out, ptrace.NewTraces())
					}
					nrs := out[i].ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(nrs.Resource())
					nrs.SetSchemaUrl(rs.SchemaUrl())
					nss := nrs.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(nss.Scope())
					nss.SetSchemaUrl(ss.SchemaUrl())
					dst = nss.Spans()
					scopes[tid] = dst
				}
				span.CopyTo(dst.AppendEmpty())
			}
		}
	}
	return ids, out
}
