// SPDX-License-Identifier: Apache-2.0

package join

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func frag(tid byte, ids ...byte) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	for _, id := range ids {
		s := spans.AppendEmpty()
		s.SetTraceID(pcommon.TraceID{tid})
		s.SetSpanID(pcommon.SpanID{id})
	}
	return td
}

func doneAt(td ptrace.Traces, spans int) Wait {
	if td.SpanCount() >= spans {
		return Done
	}
	return Parts
}

func name(res pcommon.Resource) string {
	v, _ := res.Attributes().Get("service.name")
	return v.Str()
}

// Fragments merge per trace; Ready decides; expiry, eviction and Drain release
// the rest, oldest first; every span comes out once.
func TestStore(t *testing.T) {
	ready := func(td ptrace.Traces, _ time.Duration, _ map[pcommon.SpanID]string) Wait { return doneAt(td, 3) }
	s := New(time.Minute, time.Second, 5, ready, name, func(ptrace.Traces) bool { return false })
	now := time.Unix(0, 0)
	assert.Empty(t, s.Add(pcommon.TraceID{1}, frag(1, 1), now))
	assert.Empty(t, s.Add(pcommon.TraceID{2}, frag(2, 1, 2), now.Add(time.Second)))
	out := s.Add(pcommon.TraceID{1}, frag(1, 2, 3), now.Add(2*time.Second))
	require.Len(t, out, 1)
	assert.Equal(t, Complete, out[0].Reason)
	assert.Equal(t, 3, out[0].Traces.SpanCount())
	assert.Equal(t, 2*time.Second, out[0].Held)

	assert.Empty(t, s.Add(pcommon.TraceID{3}, frag(3, 1, 2), now.Add(3*time.Second)))
	out = s.Add(pcommon.TraceID{4}, frag(4, 1, 2), now.Add(4*time.Second)) // 6 held > 5
	require.Len(t, out, 1)
	assert.Equal(t, Evicted, out[0].Reason)
	assert.Equal(t, pcommon.TraceID{2}, out[0].Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID())

	out = s.Expired(now.Add(63 * time.Second))
	require.Len(t, out, 1, "trace 3 held a minute, trace 4 not yet")
	assert.Equal(t, Expired, out[0].Reason)
	out = s.Drain(now.Add(64 * time.Second))
	require.Len(t, out, 1)
	assert.Equal(t, Drained, out[0].Reason)
	traces, spans := s.Len()
	assert.Zero(t, traces)
	assert.Zero(t, spans)

}

// A late part of a released trace comes out with the services of the spans
// that left before, within the window; after it they are forgotten.
func TestStoreRemembersReleased(t *testing.T) {
	ready := func(td ptrace.Traces, _ time.Duration, _ map[pcommon.SpanID]string) Wait { return doneAt(td, 2) }
	s := New(time.Minute, time.Second, 0, ready, name, func(ptrace.Traces) bool { return false })
	now := time.Unix(0, 0)
	require.Len(t, s.Add(pcommon.TraceID{1}, frag(1, 1, 2), now), 1)
	assert.Empty(t, s.Add(pcommon.TraceID{1}, frag(1, 9), now.Add(30*time.Second)))
	out := s.Drain(now.Add(31 * time.Second))
	require.Len(t, out, 1)
	assert.Equal(t, map[pcommon.SpanID]string{{1}: "svc", {2}: "svc"}, out[0].Earlier)
	s.Expired(now.Add(2 * time.Minute))
	assert.Empty(t, s.Add(pcommon.TraceID{1}, frag(1, 10), now.Add(2*time.Minute)))
	out = s.Drain(now.Add(2 * time.Minute))
	require.Len(t, out, 1)
	assert.Nil(t, out[0].Earlier, "forgotten after the window")
}

// A trace Ready says waits for others is asked again at every Recheck (and
// leaves once Ready says Done, before the window); one waiting for its own
// parts is not (only once held settle).
func TestStoreRechecksTracesWaitingForOthers(t *testing.T) {
	other := false // what another trace brings
	asked := map[byte]int{}
	ready := func(td ptrace.Traces, _ time.Duration, _ map[pcommon.SpanID]string) Wait {
		tid := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()[0]
		asked[tid]++
		switch {
		case tid == 2:
			return Parts
		case other:
			return Done
		}
		return Others
	}
	s := New(time.Minute, 30*time.Second, 0, ready, name, func(ptrace.Traces) bool { return false })
	now := time.Unix(0, 0)
	assert.Empty(t, s.Add(pcommon.TraceID{1}, frag(1, 1), now))
	assert.Empty(t, s.Add(pcommon.TraceID{2}, frag(2, 1), now))
	assert.Empty(t, s.Recheck(now.Add(time.Second)))
	assert.Empty(t, s.Recheck(now.Add(2*time.Second)))
	assert.Equal(t, map[byte]int{1: 3, 2: 1}, asked, "trace 1 at every Recheck, trace 2 only at its arrival")
	other = true
	out := s.Recheck(now.Add(3 * time.Second))
	require.Len(t, out, 1)
	assert.Equal(t, Complete, out[0].Reason)
	assert.Equal(t, pcommon.TraceID{1}, out[0].Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID())
	traces, _ := s.Len()
	assert.Equal(t, 1, traces)
}

// A batch of several traces is split into one ptrace.Traces per trace, with
// each span's resource and scope; a batch of one trace is passed as it is.
func TestSplit(t *testing.T) {
	td := frag(1, 1, 2)
	frag(2, 3).ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1).SetTraceID(pcommon.TraceID{2})
	ids, parts := Split(td)
	require.Equal(t, []pcommon.TraceID{{1}, {2}}, ids)
	assert.Equal(t, 1, parts[0].SpanCount())
	assert.Equal(t, 2, parts[1].SpanCount())
	assert.Equal(t, "svc", name(parts[1].ResourceSpans().At(0).Resource()))

	one := frag(5, 1, 2)
	ids, parts = Split(one)
	assert.Equal(t, []pcommon.TraceID{{5}}, ids)
	assert.Equal(t, one, parts[0])
	ids, _ = Split(ptrace.NewTraces())
	assert.Empty(t, ids)
}
