// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/join"
)

// complete says whether a held trace has every part its hops need, so it can
// be judged now rather than at the end of the hop window (join.Done), or what
// it waits for:
//   - every span's parent is in (no span waits for its parent: the caller
//     side of a hop, or a same-service ancestor the analysis walks);
//   - every requesting span has a callee below it (no_callee only once the
//     window passed);
//   - below every hop whose send was answered SUBMITTED/WORKING (a
//     long-running task), the callee's agent span is in;
//   - every cancelled or failed send of a long-running task was followed up
//     to an answer (else, at the window's end, its response is lost);
//   - below every hop a rule requires, the callee's agent span is in, or the
//     entry span declares `resumed`, or the trace was held agent_wait (a
//     callee without an agent span of its own: a plain a2a-sdk executor);
//   - the trace has a hop, or was held agent_wait (a trace of one service);
//   - no hop in it is a provisional first turn (provisionalFirstTurn), or the
//     trace was held first_turn_wait: such a trace waits for another trace
//     (join.Others), an earlier turn of the same context.
//
// A trace is usually complete when its last span arrives: a span ends after
// its children, a synchronous request after the callee's entry span, so the
// root comes last from the caller's process and each callee entry span with
// its agent spans from the callee's.
func (p *identityProcessor) complete(td ptrace.Traces, age time.Duration, earlier map[pcommon.SpanID]string) join.Wait {
	sc := getScratch()
	defer sc.release()
	groups := groupByTrace(td, sc)
	if len(groups) != 1 {
		return join.Done // not one trace (never from the join): judge as it is
	}
	spans := groups[0]
	tr := &traceAnalysis{traceIndex: buildIndex(spans, sc)}
	hops := false // a cross-service hop is in (the trace has a callee part)
	for i, s := range spans {
		if tr.parent[i] == parentMissing && (tr.ambiguous == nil || !tr.ambiguous[i]) {
			caller, gone := earlier[s.span.ParentSpanID()]
			if !gone {
				return join.Parts
			}
			hops = hops || caller != s.service // a late callee part of a judged trace
		}
	}
	if p.checksNoCallee {
		foreign := tr.foreignBelow()
		for _, i := range tr.order {
			s := spans[i]
			if !foreign[i] && s.service != "" && (tr.ambiguous == nil || !tr.ambiguous[i]) &&
				!tr.isEntry(i) && p.isRequestingSpan(s) {
				return join.Parts
			}
		}
	}
	waitAgent := age < p.joiner.agentWait
	for _, c := range tr.order {
		if !tr.isEntry(c) {
			continue
		}
		hops = true
		par := tr.parent[c]
		if p.awaitsCallee(tr, par, c) || (waitAgent && p.awaitsAgent(tr, par, c)) {
			return join.Parts
		}
	}
	// No hop yet: a root span that arrived first (a span exported before its
	// children, e.g. one ended early, or a caller whose callee is slower)
	// waits agent_wait for parts below it.
	if !hops && waitAgent {
		return join.Parts
	}
	if age < p.joiner.firstTurnWait && p.provisionalFirstTurn(tr) {
		return join.Others
	}
	return join.Done
}

// provisionalFirstTurn reports whether a hop of tr would be judged
// first_turn only because the context memory knows no earlier answer of its
// callee in the requested context (crosstrace.go firstInContext: the caller
// did not say answered_before). An earlier turn whose trace is still on its
// way (other processes export on their own timers) would make it a later
// turn: the trace waits first_turn_wait for it. Each such hop's answer is
// remembered now (as judging it will), so that a later turn waiting too sees
// this one, whichever wait ends first.
func (p *identityProcessor) provisionalFirstTurn(tr *traceAnalysis) bool {
	provisional := false
	for _, c := range tr.order {
		if !tr.isEntry(c) || tr.answeredBefore(tr.parent[c]) || cardFetch(tr.spans[c].span, tr.spans[tr.parent[c]].span) {
			continue
		}
		if tr.ruleMemo == nil {
			tr.ruleMemo = make([][]int32, len(p.rules))
		}
		if h := p.resolveHop(tr, tr.parent[c], c); h.firstTurn && h.classify() == resultFirstTurn {
			provisional = true
			if p.noteAnswered(tr, &h) {
				p.ins.evicted(context.Background(), storeContexts, 1)
			}
		}
	}
	return provisional
}

// awaitsAgent reports whether required hop par -> c has no serving agent span
// below c yet, and c (or the span the callee's side is read from below it,
// calleeEntry) does not declare resumed.
func (p *identityProcessor) awaitsAgent(tr *traceAnalysis, par, c int32) bool {
	if _, declared := boolAttr(tr.spans[tr.calleeEntry(c)].span, attrResumed); declared || tr.firstBelow(c, tr.isAgent) >= 0 {
		return false
	}
	return p.requires(tr, par, c)
}

// requires reports whether a rule requires hop par -> c.
func (p *identityProcessor) requires(tr *traceAnalysis, par, c int32) bool {
	caller, callee := tr.spans[par].service, tr.spans[c].service
	for k := range p.rules {
		r := &p.rules[k]
		if (r.caller != "" && r.caller != caller) || (r.callee != "" && r.callee != callee) {
			continue
		}
		for i := par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
			if r.matches(tr.spans[i].span) {
				return true
			}
		}
	}
	return false
}

// isEntry reports whether i is a callee entry span: its parent is in another
// (named) service.
func (tr *traceAnalysis) isEntry(i int32) bool {
	par := tr.parent[i]
	return par >= 0 && tr.spans[par].service != "" && tr.spans[i].service != "" &&
		tr.spans[par].service != tr.spans[i].service
}

// awaitsCallee reports whether hop par -> c waits for a part of a
// long-running task: the send (the nearest CLIENT span at or above par in the
// caller's service that recorded a task state) was answered SUBMITTED or
// WORKING, and the callee's agent span is not in yet, or the send failed or
// was cancelled and no follow-up of its task (poll, subscription) brought an
// answer yet.
func (p *identityProcessor) awaitsCallee(tr *traceAnalysis, par, c int32) bool {
	send := tr.taskSend(par)
	if send < 0 {
		return false
	}
	s := tr.spans[send].span
	if !pendingState(strAttr(s, attrTaskState)) || !isSend(s) {
		return false
	}
	if tr.firstBelow(c, tr.isAgent) < 0 {
		return true
	}
	return (s.Status().Code() == ptrace.StatusCodeError || sendCancelled(s)) &&
		!p.followedUp(tr.spans[send].service, strAttr(s, attrTaskID))
}

// taskSend returns the nearest CLIENT span at or above par, in par's
// service up to the invoke_agent send, that carries a2a.task.state; -1 when
// none does.
func (tr *traceAnalysis) taskSend(par int32) int32 {
	caller := tr.spans[par].service
	for i := par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
		s := tr.spans[i].span
		if s.Kind() != ptrace.SpanKindClient {
			continue
		}
		if strAttr(s, attrTaskState) != "" {
			return i
		}
		if strAttr(s, attrOperationName) == operationInvokeAgent {
			return -1
		}
	}
	return -1
}

func pendingState(state string) bool {
	return state == taskStateSubmitted || state == taskStateWorking
}

// isSend reports whether CLIENT span s sent a message (a2a.method.name
// SendMessage / SendStreamingMessage, or not recorded), not a GetTask poll or
// a subscription, whose callee runs no agent for it.
func isSend(s ptrace.Span) bool {
	m := strAttr(s, attrMethodName)
	return m == "" || strings.HasPrefix(m, "Send")
}

// lateHop handles span c whose parent left the join before (its trace was
// judged complete, then this part arrived): in the same service it is no hop
// (nothing to mark); in another, a hop whose caller side is gone: recorded
// `not_required` (a hop a rule requires from a requesting span would have
// kept the trace waiting for its callee), unless it is a card fetch. False
// when c's parent is unknown.
func (tr *traceAnalysis) lateHop(c int32, t *tally) bool {
	s := tr.spans[c]
	caller, ok := tr.sc.earlier[s.span.ParentSpanID()]
	if !ok || caller == "" || s.service == "" {
		return false
	}
	if caller != s.service && !cardFetch(s.span) {
		attrs := s.span.Attributes()
		attrs.PutStr(attrHopResult, resultNotRequired)
		attrs.PutStr(attrHopCallerService, caller)
		bump(&t.hops, hopKey{caller: caller, callee: s.service, result: resultNotRequired})
	}
	return true
}

// awaitsFollowUp reports whether frag holds a failed or cancelled CLIENT
// send of a long-running task (its trace waits for a follow-up that may come
// in another trace: the join asks again every tick).
func awaitsFollowUp(frag ptrace.Traces) bool {
	for _, rs := range frag.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				if s.Kind() == ptrace.SpanKindClient && pendingState(strAttr(s, attrTaskState)) && isSend(s) &&
					strAttr(s, attrTaskID) != "" && (s.Status().Code() == ptrace.StatusCodeError || sendCancelled(s)) {
					return true
				}
			}
		}
	}
	return false
}
