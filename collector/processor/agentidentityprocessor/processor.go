// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
)

type identityProcessor struct {
	backfill bool
	rules    []rule
	ins      *instruments
	// checksNoCallee: some rule expects a callee (markNoCallee has work)
	checksNoCallee bool
	// memory: verdicts given before (nil without `storage`), memory.go
	memory *verdictMemory
	// joiner holds traces until their hops' parts are in (nil when
	// hop_window is 0), joined.go; mem: what other traces taught, crosstrace.go
	joiner *joiner
	mem    memories
}

// rule is a ContinuationRule ready for matching.
type rule struct {
	kind           ptrace.SpanKind // SpanKindUnspecified: any
	attrs          []attrCond      // sorted by key
	caller, callee string
	// expectsCallee: the rule names a request on its own (a span condition,
	// no callee_service), so a matching span with no callee is no_callee.
	expectsCallee bool
}

func newIdentityProcessor(set processor.Settings, cfg *Config) (*identityProcessor, error) {
	ins, err := newInstruments(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p := &identityProcessor{backfill: cfg.Backfill, ins: ins, mem: newMemories(&cfg.Join)}
	for _, r := range cfg.RequireContinuation {
		p.rules = append(p.rules, rule{
			kind:   spanKinds[strings.ToLower(r.CallerSpanKind)],
			attrs:  attrConds(r.CallerAttributes),
			caller: r.CallerService,
			callee: r.CalleeService,
			expectsCallee: r.CalleeService == "" &&
				(spanKinds[strings.ToLower(r.CallerSpanKind)] != ptrace.SpanKindUnspecified || len(r.CallerAttributes) > 0),
		})
		p.checksNoCallee = p.checksNoCallee || p.rules[len(p.rules)-1].expectsCallee
	}
	return p, nil
}

// processTraces judges the traces the batch completes (joined.go), or, with
// no join, each trace of the batch as it is. Safe for concurrent use.
func (p *identityProcessor) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	if p.joiner != nil {
		return p.consume(ctx, td)
	}
	return p.judge(ctx, td), nil
}

// judge analyses each trace of td in place.
func (p *identityProcessor) judge(ctx context.Context, td ptrace.Traces) ptrace.Traces {
	return p.judgeWith(ctx, td, nil)
}

// judgeWith is judge for one trace of which the spans of earlier (span id ->
// service) left the join before: a span whose parent is among them is no
// orphan (joined.go).
func (p *identityProcessor) judgeWith(ctx context.Context, td ptrace.Traces, earlier map[pcommon.SpanID]string) ptrace.Traces {
	sc := getScratch()
	sc.earlier = earlier
	t := &sc.tally
	for _, spans := range groupByTrace(td, sc) {
		if p.memory == nil {
			p.processTrace(spans, sc, t)
		} else {
			p.processTraceOnce(ctx, spans, sc, t)
		}
		sc.reset()
	}
	p.ins.record(ctx, t)
	sc.release()
	return td
}

// traceAnalysis is one trace being judged: its index (index.go) and what the
// walk over it learns (memos of nearest-ancestor searches, the executions
// under each delegation id, the entry spans the serving process marked).
type traceAnalysis struct {
	*traceIndex
	convMemo, delegMemo []int32
	ruleMemo            [][]int32
	deleg               map[delegationKey][]delegated
	// served: entry spans the serving process itself marked a duplicate
	// execution (countServedMarks), already counted
	served map[int32]bool
	// followedUp: a CLIENT span of the caller service received an answer
	// for the task id (crosstrace.go)
	followedUp func(caller, task string) bool
	// orphaned: the services whose parts without a parent were counted
	// unresolved (once each per trace)
	orphaned []string
}

// delegationKey is one callee's share of a delegation: the caller's service,
// its delegation id and the callee's service. One delegation id may cover hops
// to several callees (fan-out); only a second execution by the same callee is
// a duplicate.
type delegationKey struct{ caller, id, callee string }

// delegated is one hop made under a delegation id.
type delegated struct {
	entry     int32
	execution string
	start     pcommon.Timestamp
}

func (p *identityProcessor) processTrace(spans []spanRef, sc *scratch, t *tally) {
	tr := &traceAnalysis{traceIndex: buildIndex(spans, sc), ruleMemo: make([][]int32, len(p.rules)), deleg: sc.delegations(),
		followedUp: p.followedUp}
	for i := range spans {
		c := int32(i)
		par := tr.parent[c]
		switch {
		case par == parentCopy:
			// analysed as its original; marked by copyMarks
		case par == parentMissing && tr.reached[c] && tr.lateHop(c, t):
			// its parent left the join before: marked by lateHop
		case par == parentMissing && tr.reached[c]:
			// the top of a part whose parent never arrived: marked, counted
			// once per service of the trace (one hop's missing caller side,
			// e.g. the late spans of a turn a restarted collector never saw)
			spans[c].span.Attributes().PutStr(attrHopResult, resultUnresolved)
			if !slices.Contains(tr.orphaned, spans[c].service) {
				tr.orphaned = append(tr.orphaned, spans[c].service)
				bump(&t.unresolved, serviceLabel(spans[c].service))
			}
		case par == parentMissing || !tr.reached[c],
			// Without a usable service.name on either side we cannot tell a
			// cross-process hop from a same-process call.
			par >= 0 && (spans[par].service == "" || spans[c].service == ""):
			spans[c].span.Attributes().PutStr(attrHopResult, resultUnresolved)
			bump(&t.unresolved, serviceLabel(spans[c].service))
		case par >= 0 && spans[par].service != spans[c].service && !cardFetch(spans[c].span, spans[par].span):
			p.checkHop(tr, par, c, t)
			tr.countServedMarks(par, c, t)
		}
	}
	p.markNoCallee(tr, t)
	p.markDuplicates(tr, t)
	p.markDuplicatesAcrossTraces(tr, t)
	if p.backfill {
		tr.backfill()
	}
	tr.copyMarks()
}

func serviceLabel(svc string) string {
	if svc == "" {
		return unknownService
	}
	return svc
}

// copyMarks gives each re-delivered copy the attributes of the span it copies
// (equal on entry, so this applies the same marks to every copy).
func (tr *traceAnalysis) copyMarks() {
	for _, c := range tr.copies {
		tr.spans[c[1]].span.Attributes().CopyTo(tr.spans[c[0]].span.Attributes())
	}
}

func (tr *traceAnalysis) hasConv(i int32) bool {
	return strAttr(tr.spans[i].span, attrConversationID) != ""
}

func (tr *traceAnalysis) isAgent(i int32) bool {
	return strAttr(tr.spans[i].span, attrOperationName) == operationInvokeAgent
}

// markResponseLost marks the entry span c agent_identity.hop.response_lost
// when the callee completed the request (c's status is not ERROR) but the
// caller's send failed before the caller received the callee's answer: par,
// or the nearest same-service CLIENT span above it up to the invoke_agent
// send, has status ERROR (a timeout, a reset) or agent_identity.send.cancelled
// =true (the caller cancelled it before an answer: asyncio.wait_for, a
// cancelled task), and none of those CLIENT spans recorded the answer
// (sendAnswered). The work was done and the caller did
// not learn it, so it may retry. A send that failed only because the caller
// refused the answer it received (Agent Framework's A2AAgent raises on a
// reply in another context) lost nothing.
func (tr *traceAnalysis) markResponseLost(par, c int32, caller, callee string, t *tally) {
	if tr.spans[c].span.Status().Code() == ptrace.StatusCodeError {
		return
	}
	for i := par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
		s := tr.spans[i].span
		if s.Kind() != ptrace.SpanKindClient {
			continue
		}
		if s.Status().Code() == ptrace.StatusCodeError || sendCancelled(s) {
			if tr.sendAnswered(par, caller) {
				return
			}
			tr.spans[c].span.Attributes().PutBool(attrHopResponseLost, true)
			bump(&t.lostResponses, pairKey{caller: caller, callee: callee})
			return
		}
		if strAttr(s, attrOperationName) == operationInvokeAgent {
			return
		}
	}
}

// sendCancelled reports whether the instrumentation marked CLIENT span s
// agent_identity.send.cancelled=true: its send was cancelled before an answer.
func sendCancelled(s ptrace.Span) bool {
	cancelled, _ := boolAttr(s, attrSendCancelled)
	return cancelled
}

// sendAnswered reports whether a CLIENT span of the send above the callee
// (par and the caller-service spans above it, up to the invoke_agent send)
// recorded the callee's answer, which the instrumentation writes only from a
// response it received: agent_identity.conversation.changed=true (the answer
// came in another context) or an a2a.task.state other than submitted or
// working (the task's outcome, or the callee asking for input). Read only for
// a send that failed or was cancelled.
func (tr *traceAnalysis) sendAnswered(par int32, caller string) bool {
	for i := par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
		s := tr.spans[i].span
		if s.Kind() != ptrace.SpanKindClient {
			continue
		}
		if changed, _ := boolAttr(s, attrConversationChanged); changed {
			return true
		}
		if state := strAttr(s, attrTaskState); state != "" && !pendingState(state) {
			return true
		}
		if task := strAttr(s, attrTaskID); task != "" && tr.followedUp(caller, task) {
			return true // a poll or subscription of the task got the answer
		}
		if strAttr(s, attrOperationName) == operationInvokeAgent {
			return false
		}
	}
	return false
}

// markNoCallee marks each requesting span that has no descendant in another
// service (no hop below it in this trace) agent_identity.hop.result=no_callee
// and counts it. A requesting span is a span, with a usable service.name, an
// unambiguous span id (a conflicting copy's children are unresolved, not
// absent) and no mark of its own (neither an entry span nor unresolved), that satisfies
// the span conditions of a rule without callee_service (the callee is what
// is missing) whose caller_service, if set, is its service. Such a span in a
// trace that lost context on the hop, in a fragment released before its
// callee's spans arrived, or whose send failed (then usually status ERROR:
// the caller_status label) has no callee below it.
func (p *identityProcessor) markNoCallee(tr *traceAnalysis, t *tally) {
	if !p.checksNoCallee {
		return
	}
	foreign := tr.foreignBelow() // foreign[i]: a descendant of i is in another service
	for _, i := range tr.order {
		s := tr.spans[i]
		if foreign[i] || s.service == "" || (tr.ambiguous != nil && tr.ambiguous[i]) || !p.isRequestingSpan(s) {
			continue
		}
		attrs := s.span.Attributes()
		if _, marked := attrs.Get(attrHopResult); marked {
			continue
		}
		attrs.PutStr(attrHopResult, resultNoCallee)
		status := callerStatusOK
		if s.span.Status().Code() == ptrace.StatusCodeError {
			status = callerStatusError
		}
		bump(&t.noCallee, noCalleeKey{caller: s.service, agent: strAttr(s.span, attrAgentName), status: status})
	}
}

// isRequestingSpan reports whether s satisfies a rule that expects a callee.
func (p *identityProcessor) isRequestingSpan(s spanRef) bool {
	for k := range p.rules {
		r := &p.rules[k]
		if r.expectsCallee && (r.caller == "" || r.caller == s.service) && r.matches(s.span) {
			return true
		}
	}
	return false
}

// foreignBelow returns, per span, whether any descendant is in another
// service (or has no usable service.name). Reached spans only; one pass,
// children before parents.
func (tr *traceAnalysis) foreignBelow() []bool {
	foreign := tr.sc.boolsN(len(tr.spans))
	for k := len(tr.order) - 1; k >= 0; k-- {
		i := tr.order[k]
		p := tr.parent[i]
		if p < 0 {
			continue
		}
		if foreign[i] || tr.spans[i].service != tr.spans[p].service || tr.spans[i].service == "" {
			foreign[p] = true
		}
	}
	return foreign
}

// attrCond is one caller_attributes condition: key present with a non-empty
// string, equal to want unless want is "".
type attrCond struct{ key, want string }

// attrConds turns the configured map into a slice (cheaper to walk per span
// than ranging over a map): conditions on a value first (they reject most
// spans, e.g. gen_ai.operation.name=invoke_agent), then by key.
func attrConds(m map[string]string) []attrCond {
	out := make([]attrCond, 0, len(m))
	for k, v := range m {
		out = append(out, attrCond{key: k, want: v})
	}
	slices.SortFunc(out, func(a, b attrCond) int {
		if (a.want == "") != (b.want == "") {
			if a.want != "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

func (r *rule) matches(span ptrace.Span) bool { return r.matchesAnswering(span, "") }

// matchesAnswering is matches with answered standing in for an absent
// gen_ai.conversation.id (see failedRequest); "" for none.
func (r *rule) matchesAnswering(span ptrace.Span, answered string) bool {
	if r.kind != ptrace.SpanKindUnspecified && span.Kind() != r.kind {
		return false
	}
	for _, c := range r.attrs {
		got := strAttr(span, c.key)
		if got == "" && c.key == attrConversationID {
			got = answered
		}
		if got == "" || (c.want != "" && got != c.want) {
			return false
		}
	}
	return true
}

// markDuplicates flags the callee entry spans of the second and later distinct
// executions by one callee service under one delegation id (ordered by entry
// start time), each execution marked and counted once: an entry span whose
// serving process marked it (served: on the span calleeEntry reads, e.g. our
// A2A SERVER span below Starlette's HTTP SERVER span) gets no second mark.
func (p *identityProcessor) markDuplicates(tr *traceAnalysis, t *tally) {
	for key, hops := range tr.deleg {
		if len(hops) < 2 {
			continue
		}
		sortByStart(hops)
		seen := map[string]bool{hops[0].execution: true}
		for _, h := range hops[1:] {
			if h.execution == hops[0].execution {
				continue
			}
			counted := seen[h.execution]
			seen[h.execution] = true
			if tr.served[h.entry] {
				continue // marked (on calleeEntry's span) and counted by countServedMarks
			}
			tr.spans[h.entry].span.Attributes().PutBool(attrDelegationDuplicate, true)
			if !counted {
				bump(&t.duplicates, pairKey{caller: key.caller, callee: key.callee})
			}
		}
	}
}

// countServedMarks counts what the serving process marked on the entry span c
// (or on the span below it that the callee's side is read from, calleeEntry)
// of hop par -> c: agent_identity.delegation.duplicate=true (it had executed
// this delegation before, possibly in another trace: a retry after a crash is
// a new trace, which no per-trace analysis sees beside the first, and in two
// tiers it may reach another instance) and
// agent_identity.delegation.redelivered=true (it had received the delegation
// before, executed again or answered from a ledger). markDuplicates does not
// count such an execution a second time.
func (tr *traceAnalysis) countServedMarks(par, c int32, t *tally) {
	attrs := tr.spans[tr.calleeEntry(c)].span.Attributes()
	key := pairKey{caller: tr.spans[par].service, callee: tr.spans[c].service}
	if v, ok := attrs.Get(attrDelegationDuplicate); ok && v.Type() == pcommon.ValueTypeBool && v.Bool() {
		if tr.served == nil {
			tr.served = make(map[int32]bool)
		}
		tr.served[c] = true
		bump(&t.duplicates, key)
	}
	if v, ok := attrs.Get(attrDelegationRedelivered); ok && v.Type() == pcommon.ValueTypeBool && v.Bool() {
		bump(&t.deliveries, key)
	}
}

// backfill copies the conversation id down to same-service descendants that
// lack the attribute. A span that carries it in any form (a string, "", an
// int, ...) is left as it is, and so are its descendants when its value is not
// a usable id. order is parents-first, so a span's parent is already filled.
func (tr *traceAnalysis) backfill() {
	for _, i := range tr.order {
		attrs := tr.spans[i].span.Attributes()
		if _, ok := attrs.Get(attrConversationID); ok {
			continue
		}
		par := tr.sameServiceParent(i)
		if par < 0 {
			continue
		}
		if id := strAttr(tr.spans[par].span, attrConversationID); id != "" {
			attrs.EnsureCapacity(attrs.Len() + 2)
			attrs.PutStr(attrConversationID, id)
			attrs.PutBool(attrConversationBackfilled, true)
		}
	}
}
