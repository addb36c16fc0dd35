// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

// fuzzTrace decodes 4 bytes a span: id, parent (0: root, ids may repeat,
// point to themselves, form cycles or be missing), service, and flags (kind,
// invoke_agent, conversation id string/int, delegation and execution ids).
func fuzzTrace(data []byte) ptrace.Traces {
	td := ptrace.NewTraces()
	for i := 0; i+4 <= len(data) && i < 4*512; i += 4 {
		id, parent, svc, flags := data[i], data[i+1], data[i+2], data[i+3]
		rs := td.ResourceSpans().AppendEmpty()
		if svc%4 != 3 {
			rs.Resource().Attributes().PutStr(attrServiceName, fmt.Sprint("s", svc%4))
		}
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID{1})
		s.SetSpanID(pcommon.SpanID{id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{parent})
		}
		s.SetKind(ptrace.SpanKind(flags % 6))
		s.SetStartTimestamp(pcommon.Timestamp(flags))
		a := s.Attributes()
		if flags&0x08 != 0 {
			a.PutStr(attrOperationName, operationInvokeAgent)
		}
		switch flags >> 4 & 3 {
		case 1:
			a.PutStr(attrConversationID, fmt.Sprint("c", svc>>4))
		case 2:
			a.PutInt(attrConversationID, int64(svc))
		}
		switch svc >> 2 & 3 {
		case 1:
			a.PutStr(attrRequestedID, fmt.Sprint("c", svc>>5))
		case 2:
			a.PutBool(attrResumed, false)
		case 3:
			a.PutBool(attrResumed, true)
		}
		if flags&0x40 != 0 {
			a.PutStr(attrDelegationID, "d")
		}
		if flags&0x80 != 0 {
			a.PutStr(attrExecutionID, fmt.Sprint("e", parent%3))
		}
	}
	return td
}

func FuzzTraceWalk(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0x1a, 2, 1, 0, 0x5a, 3, 2, 1, 0x91, 4, 3, 1, 0x98})
	f.Add([]byte{1, 2, 0, 0x1a, 2, 1, 1, 0x1a, 3, 3, 2, 0})                // cycle, self-parent
	f.Add([]byte{1, 0, 0, 0x5a, 1, 0, 0, 0x5a, 2, 1, 1, 0x98, 3, 9, 1, 0}) // duplicate id, missing parent
	f.Add([]byte{1, 0, 0, 0xda, 2, 1, 1, 0x88, 3, 1, 1, 0x89, 4, 1, 1, 0x8a})
	f.Fuzz(func(t *testing.T, data []byte) {
		set := processortest.NewNopSettings(componentType)
		for _, backfill := range []bool{false, true} {
			cfg := createDefaultConfig().(*Config)
			cfg.Backfill = backfill
			p, err := newIdentityProcessor(set, cfg)
			if err != nil {
				t.Fatal(err)
			}
			td := fuzzTrace(data)
			want := td.SpanCount()
			out, err := p.processTraces(t.Context(), td)
			if err != nil || out.SpanCount() != want {
				t.Fatalf("spans in %d, out %d, err %v", want, out.SpanCount(), err)
			}
			checkMismatches(t, out)
		}
	})
}

// checkMismatches: a flagged hop always names what was requested, and
// either a different answered context or a run that did not resume.
func checkMismatches(t *testing.T, td ptrace.Traces) {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				result := strAttr(s, attrHopResult)
				flagged, _ := verdict(result)
				if v, ok := s.Attributes().Get(attrHopMismatch); ok && v.Bool() != flagged {
					t.Fatalf("hop.mismatch %v with result %q", v.Bool(), result)
				}
				requested, answered := strAttr(s, attrHopRequestedID), strAttr(s, attrHopCalleeConversationID)
				if result == resultContinued && (requested != "" || answered == "" && strAttr(s, attrConversationID) == "") {
					// a continued hop shows the id once: on the entry span itself, else as the callee's
					t.Fatalf("continued with requested %q answered %q", requested, answered)
				}
				if !flagged {
					continue
				}
				resumed, known := s.Attributes().Get(attrHopCalleeResumed)
				switch {
				case requested == "" || answered == "":
					t.Fatalf("%s with requested %q answered %q", result, requested, answered)
				case result == resultContextChanged && requested == answered,
					result == resultStateNotResumed && (requested != answered || !known || resumed.Bool()):
					t.Fatalf("%s with requested %q answered %q resumed %v", result, requested, answered, resumed.AsRaw())
				}
			}
		}
	}
}
