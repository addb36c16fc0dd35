// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"bytes"
	"slices"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/recall"
)

// What a verdict learns from other traces (internal/recall): the contexts a
// callee answered in (a request in a context nobody answered in yet is a
// first turn, whoever named the context), the first execution of each
// delegation (a second one, in any trace or caller process, is a duplicate)
// and the long-running tasks a caller followed up (a cancelled send whose task
// was polled to an answer lost nothing).

// firstInContext reports whether hop h (requested != "") is the first request
// in its context: no span of the caller from the hop up says
// agent_identity.conversation.answered_before=true, and the callee's service
// never answered in that context, as far as the memory knows, on an entry
// span that started before this one (traces are judged in any order: a later
// turn judged first does not make turn 1 a later turn; a trace judged again,
// or asked again while it waits first_turn_wait, finds its own entry).
func (p *identityProcessor) firstInContext(tr *traceAnalysis, h *hop) bool {
	if tr.answeredBefore(h.par) {
		return false
	}
	v, held := p.mem.contexts.Get(contextKey(tr.spans[h.c].service, h.requested))
	start := startValue(tr.spans[h.c].span)
	return !held || bytes.Compare(v[:], start[:]) >= 0
}

// answeredBefore reports whether a span of the caller from par up says
// agent_identity.conversation.answered_before=true (the send may be two
// nested CLIENT spans: Agent Framework's A2AAgent span over a2a-sdk's).
func (tr *traceAnalysis) answeredBefore(par int32) bool {
	caller := tr.spans[par].service
	for i := par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
		if before, _ := boolAttr(tr.spans[i].span, attrAnsweredBefore); before {
			return true
		}
	}
	return false
}

// noteAnswered remembers that the callee of hop h answered in its context
// (its entry span did not fail): the earliest start of an entry span that
// did. It reports whether another context's slot was taken (an eviction).
func (p *identityProcessor) noteAnswered(tr *traceAnalysis, h *hop) (evicted bool) {
	c := tr.spans[h.c]
	if h.answered == "" || c.span.Status().Code() == ptrace.StatusCodeError {
		return false
	}
	return p.mem.contexts.PutMin(contextKey(c.service, h.answered), startValue(c.span))
}

func contextKey(callee, ctx string) recall.Key { return recall.KeyOf(callee, ctx) }

// startValue is an entry span's start time in a slot (ordered as the time).
func startValue(s ptrace.Span) recall.Value { return recall.ValueOfUint(uint64(s.StartTimestamp())) }

// entryValue identifies an entry span (trace and span id) in a slot.
func entryValue(s ptrace.Span) recall.Value {
	tid, sid := s.TraceID(), s.SpanID()
	return recall.ValueOf(string(tid[:]) + string(sid[:]))
}

// markDuplicatesAcrossTraces flags an entry span whose execution is not the
// first one the memory knows for its (caller service, delegation id, callee
// service): a retry from another trace or caller process executed again. An
// execution already marked a duplicate was counted and is not marked again:
// on its entry span (within its trace, markDuplicates) or by the serving
// process (served: on the entry span or the span below it that calleeEntry
// reads, our A2A SERVER span under an ASGI/Starlette HTTP SERVER span; such
// an execution is never taken for the first one). A trace judged again finds
// the same first execution.
func (p *identityProcessor) markDuplicatesAcrossTraces(tr *traceAnalysis, t *tally) {
	for key, hops := range tr.deleg {
		sortByStart(hops)
		k := recall.KeyOf(key.caller, key.id, key.callee)
		for _, h := range hops {
			if tr.served[h.entry] {
				// a retry by the serving process's own word, marked and counted
				// (countServedMarks): never the first execution, even when its
				// trace is judged before the first one's
				continue
			}
			first, _, evicted := p.mem.delegations.PutIfAbsent(k, recall.ValueOf(h.execution))
			if evicted {
				bump(&t.evictions, storeDelegations)
			}
			if first == recall.ValueOf(h.execution) {
				continue
			}
			attrs := tr.spans[h.entry].span.Attributes()
			if marked, _ := boolAttr(tr.spans[h.entry].span, attrDelegationDuplicate); marked {
				continue
			}
			attrs.PutBool(attrDelegationDuplicate, true)
			bump(&t.duplicates, pairKey{caller: key.caller, callee: key.callee})
		}
	}
}

// noteFollowUps remembers every CLIENT span of td that received an answer
// for an A2A task (a2a.task.id with a state other than submitted or working:
// a poll, a subscription or the send itself), by its service and task id.
func (p *identityProcessor) noteFollowUps(td ptrace.Traces) {
	for _, rs := range td.ResourceSpans().All() {
		var svc string
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				if s.Kind() != ptrace.SpanKindClient {
					continue
				}
				state, task := strAttr(s, attrTaskState), strAttr(s, attrTaskID)
				if state == "" || task == "" || pendingState(state) {
					continue
				}
				if svc == "" {
					svc = serviceName(rs.Resource())
				}
				p.mem.tasks.PutIfAbsent(recall.KeyOf(svc, task), recall.ValueOf(state))
			}
		}
	}
}

// followedUp reports whether a CLIENT span of caller received an answer for
// task.
func (p *identityProcessor) followedUp(caller, task string) bool {
	if task == "" {
		return false
	}
	_, held := p.mem.tasks.Get(recall.KeyOf(caller, task))
	return held
}

// sortByStart orders a delegation's hops by entry start time (then index).
func sortByStart(hops []delegated) {
	slices.SortStableFunc(hops, func(a, b delegated) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return int(a.entry - b.entry)
	})
}
