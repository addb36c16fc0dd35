// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Parent slots that are not span indexes.
const (
	parentNone    int32 = -1 // root span: no parent span id
	parentMissing int32 = -2 // parent id not in this batch, or ambiguous
	memoUnknown   int32 = -3 // memo slot not computed yet
	parentCopy    int32 = -4 // an identical copy of an earlier span: not analysed
)

// spanRef is one span and the service.name of its resource ("" when the
// resource has no usable service.name: see serviceName).
type spanRef struct {
	span    ptrace.Span
	service string
	// ours: emitted by this instrumentation's tracer (scope ourScope)
	ours bool
}

// scratch holds the per-call buffers, reused across calls through a pool so a
// fresh trace costs no index, tally or delegation allocation once the pool is
// warm. release drops every reference into the trace (spans, services) before
// it goes back: the processor keeps no trace state between calls.
type scratch struct {
	refs  []spanRef
	ids   map[pcommon.SpanID]int32
	ints  []int32
	bools []bool
	one   [1][]spanRef
	// index is buildIndex's result for the trace being judged
	index traceIndex
	// deleg: trace.deleg of the trace being judged (emptied by reset)
	deleg map[delegationKey][]delegated
	// tally counts the call; own counts one trace (processTraceOnce)
	tally, own tally
	// keys and marked: processTraceOnce's verdict spans
	keys   [][24]byte
	marked []int32
	// earlier: services of the trace's spans that left the join before
	earlier map[pcommon.SpanID]string
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func (sc *scratch) release() {
	clear(sc.refs[:cap(sc.refs)])
	sc.refs = sc.refs[:0]
	sc.one[0] = nil
	clear(sc.ids)
	sc.index = traceIndex{}
	sc.earlier = nil
	sc.tally.reset()
	scratchPool.Put(sc)
}

// delegations returns the trace's empty delegation map.
func (sc *scratch) delegations() map[delegationKey][]delegated {
	if sc.deleg == nil {
		sc.deleg = make(map[delegationKey][]delegated)
	}
	return sc.deleg
}

// int32s returns n int32s from the scratch (contents undefined), valid
// until the next call of int32s' sibling allocations are released.
func (sc *scratch) int32s(n int) []int32 {
	if cap(sc.ints)-len(sc.ints) < n {
		// a new backing array: slices handed out earlier keep the old one
		sc.ints = make([]int32, 0, max(2*cap(sc.ints), len(sc.ints)+n, 1024))
	}
	out := sc.ints[len(sc.ints) : len(sc.ints)+n : len(sc.ints)+n]
	sc.ints = sc.ints[:len(sc.ints)+n]
	return out
}

// boolsN returns n false bools from the scratch.
func (sc *scratch) boolsN(n int) []bool {
	if cap(sc.bools)-len(sc.bools) < n {
		sc.bools = make([]bool, 0, max(2*cap(sc.bools), len(sc.bools)+n, 1024))
	}
	out := sc.bools[len(sc.bools) : len(sc.bools)+n : len(sc.bools)+n]
	clear(out)
	sc.bools = sc.bools[:len(sc.bools)+n]
	return out
}

// reset makes the per-trace buffers whole again for the next trace.
func (sc *scratch) reset() {
	sc.ints = sc.ints[:0]
	sc.bools = sc.bools[:0]
	clear(sc.ids) // span ids are unique per trace only
	if len(sc.deleg) > 0 {
		clear(sc.deleg)
	}
}

// groupByTrace splits a batch into its traces, keeping batch order. After
// groupbytrace a batch is one trace: one slice, from the scratch. Plain index
// loops and the rare split in its own function keep the frame small: the
// caller is often a goroutine groupbytrace just started, with a small stack.
func groupByTrace(td ptrace.Traces, sc *scratch) [][]spanRef {
	refs := sc.refs[:0]
	if n := td.SpanCount(); cap(refs) < n {
		refs = make([]spanRef, 0, n)
	}
	multi := false
	var first pcommon.TraceID
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		svc := serviceName(rs.Resource())
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			ours := sss.At(j).Scope().Name() == ourScope
			for k := range spans.Len() {
				span := spans.At(k)
				if len(refs) == 0 {
					first = span.TraceID()
				} else if !multi && span.TraceID() != first {
					multi = true
				}
				refs = append(refs, spanRef{span: span, service: svc, ours: ours})
			}
		}
	}
	sc.refs = refs
	if multi {
		return splitByTrace(refs)
	}
	sc.one[0] = refs
	return sc.one[:]
}

// splitByTrace groups refs by trace id, in order of first appearance.
func splitByTrace(refs []spanRef) [][]spanRef {
	var groups [][]spanRef
	byID := make(map[pcommon.TraceID]int)
	for _, r := range refs {
		tid := r.span.TraceID()
		idx, ok := byID[tid]
		if !ok {
			idx = len(groups)
			byID[tid] = idx
			groups = append(groups, nil)
		}
		groups[idx] = append(groups[idx], r)
	}
	return groups
}

// serviceName returns the resource's service.name, or "" when it has none we
// can tell processes apart by: absent, not a string, empty, or the SDK default
// "unknown_service" / "unknown_service:<process>". Spans of such resources are
// never compared across a hop nor backfilled (see processTrace).
func serviceName(res pcommon.Resource) string {
	v, ok := res.Attributes().Get(attrServiceName)
	if !ok || v.Type() != pcommon.ValueTypeStr {
		return ""
	}
	name := v.Str()
	if name == sdkUnknownService || strings.HasPrefix(name, sdkUnknownService+":") {
		return ""
	}
	return name
}

// sameSpan reports whether b is a copy of a (an OTLP at-least-once retry
// re-delivers a batch byte-identically): equal in everything the analysis
// reads. Span ids are compared by the caller, trace ids by groupByTrace.
func sameSpan(a, b spanRef) bool {
	x, y := a.span, b.span
	return a.service == b.service && x.TraceID() == y.TraceID() && x.ParentSpanID() == y.ParentSpanID() &&
		x.Name() == y.Name() && x.Kind() == y.Kind() &&
		x.StartTimestamp() == y.StartTimestamp() && x.EndTimestamp() == y.EndTimestamp() &&
		x.Attributes().Equal(y.Attributes())
}

// strAttr returns a non-empty string attribute; other types count as absent.
func strAttr(span ptrace.Span, key string) string {
	if v, ok := span.Attributes().Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// traceIndex is the parent/child structure of one trace (or fragment). It is
// built per trace in the call's scratch and dropped afterwards: the processor
// keeps no trace state.
type traceIndex struct {
	spans  []spanRef
	parent []int32 // span index, parentNone, parentMissing or parentCopy
	// copies lists {copy, original} for spans identical to an earlier one
	copies [][2]int32
	// ambiguous[i]: span i shares its id with a conflicting span (nil when
	// no id of the trace is ambiguous)
	ambiguous []bool
	// children of span i are kids[first[i]:first[i+1]] (CSR layout)
	first, kids []int32
	// reached is false for spans in (or below) a parent cycle
	reached []bool
	// order lists reached spans parents-first
	order []int32
	queue []int32
	sc    *scratch
}

func buildIndex(spans []spanRef, sc *scratch) *traceIndex {
	n := len(spans)
	buf := sc.int32s(4*n + 1) // parent, counts (n+1), fill, order
	clear(buf[:2*n+1])        // parent and counts start zeroed
	t := &sc.index
	*t = traceIndex{spans: spans, parent: buf[:n:n], sc: sc}
	if sc.ids == nil {
		sc.ids = make(map[pcommon.SpanID]int32, n)
	}
	ids := sc.ids
	for i, s := range spans {
		id := s.span.SpanID()
		switch j, dup := ids[id]; {
		case !dup:
			ids[id] = int32(i)
		case j >= 0 && sameSpan(spans[j], s):
			// A re-delivered copy: analysed once, as span j.
			t.parent[i] = parentCopy
			t.copies = append(t.copies, [2]int32{int32(i), j})
		default:
			ids[id] = parentMissing // conflicting copies: children are unresolved
			if t.ambiguous == nil {
				t.ambiguous = sc.boolsN(n)
			}
		}
	}
	if t.ambiguous != nil {
		for i, s := range spans {
			t.ambiguous[i] = ids[s.span.SpanID()] == parentMissing
		}
	}
	counts := buf[n : 2*n+1 : 2*n+1]
	for i, s := range spans {
		if t.parent[i] == parentCopy {
			continue
		}
		pid := s.span.ParentSpanID()
		p := parentNone
		if !pid.IsEmpty() {
			if j, ok := ids[pid]; ok && j >= 0 {
				p = j
				counts[j+1]++
			} else {
				p = parentMissing
			}
		}
		t.parent[i] = p
	}
	for i := 1; i <= n; i++ {
		counts[i] += counts[i-1]
	}
	t.first = counts
	t.kids = sc.int32s(int(counts[n]))
	fill := buf[2*n+1 : 3*n+1 : 3*n+1]
	copy(fill, counts[:n])
	for i, p := range t.parent {
		if p >= 0 {
			t.kids[fill[p]] = int32(i)
			fill[p]++
		}
	}
	// Breadth-first from the roots; a span never reached sits on a cycle.
	t.reached = sc.boolsN(n)
	t.order = buf[3*n+1 : 3*n+1 : 4*n+1]
	for i, p := range t.parent {
		if p == parentNone || p == parentMissing {
			t.reached[i] = true
			t.order = append(t.order, int32(i))
		}
	}
	for k := 0; k < len(t.order); k++ {
		i := t.order[k]
		for _, c := range t.kids[t.first[i]:t.first[i+1]] {
			if !t.reached[c] {
				t.reached[c] = true
				t.order = append(t.order, c)
			}
		}
	}
	return t
}

// sameServiceParent returns the parent of i when it is in i's service, else
// -1. Spans without a usable service.name have no same-service parent: two of
// them may be different processes.
func (t *traceIndex) sameServiceParent(i int32) int32 {
	if p := t.parent[i]; p >= 0 && t.spans[i].service != "" && t.spans[p].service == t.spans[i].service {
		return p
	}
	return -1
}

// nearest returns the nearest span at or above i, in i's service, for which
// pred holds, or -1. memo (lazily allocated, one slot a span) makes repeated
// walks linear in total. i must be reached (acyclic ancestry).
func (t *traceIndex) nearest(memo *[]int32, i int32, pred func(int32) bool) int32 {
	if *memo == nil {
		*memo = t.sc.int32s(len(t.spans))
		for k := range *memo {
			(*memo)[k] = memoUnknown
		}
	}
	m := *memo
	path := t.queue[:0]
	res := int32(-1)
	for cur := i; cur >= 0; cur = t.sameServiceParent(cur) {
		if m[cur] != memoUnknown {
			res = m[cur]
			break
		}
		path = append(path, cur)
		if pred(cur) {
			res = cur
			break
		}
	}
	for _, k := range path {
		m[k] = res
	}
	t.queue = path[:0]
	return res
}

// firstBelow returns the shallowest span at or below c, in c's service, for
// which pred holds, or -1.
func (t *traceIndex) firstBelow(c int32, pred func(int32) bool) int32 {
	return t.firstBelowOutside(c, pred, nil)
}

// firstBelowOutside is firstBelow not looking below a span for which skip
// (nil: none) holds.
func (t *traceIndex) firstBelowOutside(c int32, pred, skip func(int32) bool) int32 {
	svc := t.spans[c].service
	q := append(t.queue[:0], c)
	res := int32(-1)
	for k := 0; k < len(q); k++ {
		i := q[k]
		if pred(i) {
			res = i
			break
		}
		if skip != nil && skip(i) {
			continue
		}
		for _, ch := range t.kids[t.first[i]:t.first[i+1]] {
			if t.spans[ch].service == svc {
				q = append(q, ch)
			}
		}
	}
	t.queue = q[:0]
	return res
}
