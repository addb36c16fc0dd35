// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"strings"

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
}

// groupByTrace splits a batch into its traces, keeping batch order. After
// groupbytrace a batch is one trace: one slice, allocated once.
func groupByTrace(td ptrace.Traces) [][]spanRef {
	refs := make([]spanRef, 0, td.SpanCount())
	multi := false
	var first pcommon.TraceID
	for _, rs := range td.ResourceSpans().All() {
		svc := serviceName(rs.Resource())
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				if len(refs) == 0 {
					first = span.TraceID()
				} else if !multi && span.TraceID() != first {
					multi = true
				}
				refs = append(refs, spanRef{span: span, service: svc})
			}
		}
	}
	if !multi {
		return [][]spanRef{refs}
	}
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
// built per call and dropped afterwards: the processor keeps no trace state.
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
}

func buildIndex(spans []spanRef) *traceIndex {
	n := len(spans)
	buf := make([]int32, 4*n+1) // parent, counts (n+1), fill, order
	t := &traceIndex{spans: spans, parent: buf[:n:n]}
	ids := make(map[pcommon.SpanID]int32, n)
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
				t.ambiguous = make([]bool, n)
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
	t.kids = make([]int32, counts[n])
	fill := buf[2*n+1 : 3*n+1 : 3*n+1]
	copy(fill, counts[:n])
	for i, p := range t.parent {
		if p >= 0 {
			t.kids[fill[p]] = int32(i)
			fill[p]++
		}
	}
	// Breadth-first from the roots; a span never reached sits on a cycle.
	t.reached = make([]bool, n)
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
		*memo = make([]int32, len(t.spans))
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
	svc := t.spans[c].service
	q := append(t.queue[:0], c)
	res := int32(-1)
	for k := 0; k < len(q); k++ {
		i := q[k]
		if pred(i) {
			res = i
			break
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
