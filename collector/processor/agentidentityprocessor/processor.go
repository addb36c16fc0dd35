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
	// requesting: some rule can mark a span as a request (see markNoCallee)
	requesting bool
	// memory: verdicts given before (nil without `storage`), memory.go
	memory *verdictMemory
}

// rule is a ContinuationRule ready for matching.
type rule struct {
	kind           ptrace.SpanKind // SpanKindUnspecified: any
	attrs          []attrCond      // sorted by key
	caller, callee string
	// requests: the rule names a request on its own (a span condition, no
	// callee_service), so a matching span with no callee is no_callee.
	requests bool
}

func newIdentityProcessor(set processor.Settings, cfg *Config) (*identityProcessor, error) {
	ins, err := newInstruments(set.MeterProvider)
	if err != nil {
		return nil, err
	}
	p := &identityProcessor{backfill: cfg.Backfill, ins: ins}
	for _, r := range cfg.RequireContinuation {
		p.rules = append(p.rules, rule{
			kind:   spanKinds[strings.ToLower(r.CallerSpanKind)],
			attrs:  attrConds(r.CallerAttributes),
			caller: r.CallerService,
			callee: r.CalleeService,
			requests: r.CalleeService == "" &&
				(spanKinds[strings.ToLower(r.CallerSpanKind)] != ptrace.SpanKindUnspecified || len(r.CallerAttributes) > 0),
		})
		p.requesting = p.requesting || p.rules[len(p.rules)-1].requests
	}
	return p, nil
}

// processTraces analyses each trace of the batch in place. It keeps no
// state between calls and is safe for concurrent use.
func (p *identityProcessor) processTraces(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	sc := getScratch()
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
	return td, nil
}

// trace holds the per-trace analysis state.
type trace struct {
	*traceIndex
	convMemo, delegMemo []int32
	ruleMemo            [][]int32
	deleg               map[delegationKey][]delegated
	// served: entry spans the serving process itself marked a duplicate
	// execution (countServedMarks), already counted
	served map[int32]bool
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
	tr := &trace{traceIndex: buildIndex(spans, sc), ruleMemo: make([][]int32, len(p.rules)), deleg: sc.delegations()}
	for i := range spans {
		c := int32(i)
		par := tr.parent[c]
		switch {
		case par == parentCopy:
			// analysed as its original; marked by copyMarks
		case par == parentMissing || !tr.reached[c],
			// Without a usable service.name on either side we cannot tell a
			// cross-process hop from a same-process call.
			par >= 0 && (spans[par].service == "" || spans[c].service == ""):
			spans[c].span.Attributes().PutStr(attrHopResult, resultUnresolved)
			bump(&t.unresolved, serviceLabel(spans[c].service))
		case par >= 0 && spans[par].service != spans[c].service:
			p.checkHop(tr, par, c, t)
			tr.countServedMarks(par, c, t)
		}
	}
	p.markNoCallee(tr, t)
	p.markDuplicates(tr, t)
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
func (tr *trace) copyMarks() {
	for _, c := range tr.copies {
		tr.spans[c[1]].span.Attributes().CopyTo(tr.spans[c[0]].span.Attributes())
	}
}

func (tr *trace) hasConv(i int32) bool { return strAttr(tr.spans[i].span, attrConversationID) != "" }

func (tr *trace) isAgent(i int32) bool {
	return strAttr(tr.spans[i].span, attrOperationName) == operationInvokeAgent
}

// checkHop judges hop par -> c: did the callee continue what the caller
// requested? It compares like with like (README "Hop model"): the contextId
// the caller asked for with the context the callee's entry span answered in
// (protocol continuity), then whether the run serving it resumed prior state
// (state continuity).
func (p *identityProcessor) checkHop(tr *trace, par, c int32, t *tally) {
	caller, callee := tr.spans[par], tr.spans[c]
	from := int32(-1) // caller span whose request is compared
	for k := range p.rules {
		r := &p.rules[k]
		if (r.caller != "" && r.caller != caller.service) || (r.callee != "" && r.callee != callee.service) {
			continue
		}
		if from = tr.nearest(&tr.ruleMemo[k], par, func(i int32) bool { return r.matches(tr.spans[i].span) }); from >= 0 {
			break
		}
	}
	required := from >= 0
	if !required {
		if f := p.failedRequest(tr, par, c); f >= 0 {
			from, required = f, true
		} else {
			from = par
		}
	}
	callerConv := ""
	if i := tr.nearest(&tr.convMemo, from, tr.hasConv); i >= 0 {
		callerConv = strAttr(tr.spans[i].span, attrConversationID)
	}
	agentConv, agent, execution := "", "", ""
	// Resumed: declared on the entry span (a server no adapter wraps, or the
	// application's own word), else the serving agent span's (any framework);
	// unknown there, a serving agent span marked with the agent conversation it
	// served this context with before (rebuilt since) did not resume.
	resumed, resumedKnown := boolAttr(callee.span, attrResumed)
	if a := tr.firstBelow(c, tr.isAgent); a >= 0 {
		as := tr.spans[a].span
		agentConv, agent, execution = strAttr(as, attrConversationID), strAttr(as, attrAgentName), strAttr(as, attrExecutionID)
		if !resumedKnown {
			resumed, resumedKnown = boolAttr(as, attrResumed)
		}
		if !resumedKnown && strAttr(as, attrPreviousID) != "" {
			resumed, resumedKnown = false, true
		}
	}
	if execution == "" {
		execution = strAttr(callee.span, attrExecutionID)
	}
	// Requested: what the requesting span (else the entry span, the same
	// request seen by the callee) says the request carried. A send span of
	// this instrumentation (it carries a delegation id) without one asked for
	// nothing: a first turn. Any other caller span (semconv only) requested
	// the conversation it carries.
	reqSpan := tr.spans[from].span
	requested := strAttr(reqSpan, attrRequestedID)
	if requested == "" {
		requested = strAttr(callee.span, attrRequestedID)
	}
	ours := requested != "" || strAttr(reqSpan, attrDelegationID) != ""
	if !ours {
		requested = callerConv
	}
	// Answered: the context the entry span answered in; a callee
	// instrumented by semconv alone has only its agent span's.
	answered := strAttr(callee.span, attrConversationID)
	if answered == "" {
		answered = agentConv
	}

	result := resultNotRequired
	switch {
	case !required:
	case requested == "" && ours:
		result = resultFirstTurn
	case requested == "":
		result = resultCallerUnknown
	case answered == "":
		result = resultCalleeUnknown
	case answered != requested:
		result = resultContextChanged
	case resumedKnown && !resumed:
		result = resultStateNotResumed
	default:
		result = resultContinued
	}
	attrs := callee.span.Attributes()
	attrs.EnsureCapacity(attrs.Len() + 8) // one growth for every mark below
	attrs.PutStr(attrHopResult, result)
	attrs.PutStr(attrHopCallerService, caller.service)
	if flagged, judged := verdict(result); judged {
		attrs.PutBool(attrHopMismatch, flagged)
	}
	if callerConv != "" {
		attrs.PutStr(attrHopCallerConversationID, callerConv)
	}
	if required && requested != "" {
		attrs.PutStr(attrHopRequestedID, requested)
	}
	if answered != "" {
		attrs.PutStr(attrHopCalleeConversationID, answered)
	}
	if agentConv != "" && agentConv != answered {
		attrs.PutStr(attrHopCalleeAgentConvID, agentConv)
	}
	if resumedKnown {
		attrs.PutBool(attrHopCalleeResumed, resumed)
	}
	tr.markResponseLost(par, c, caller.service, callee.service, t)
	bump(&t.hops, hopKey{caller: caller.service, callee: callee.service, agent: agent, result: result})

	if execution == "" {
		return
	}
	d := tr.nearest(&tr.delegMemo, par, func(i int32) bool { return strAttr(tr.spans[i].span, attrDelegationID) != "" })
	if d < 0 {
		return
	}
	if tr.deleg == nil {
		tr.deleg = make(map[delegationKey][]delegated)
	}
	key := delegationKey{caller: caller.service, id: strAttr(tr.spans[d].span, attrDelegationID), callee: callee.service}
	tr.deleg[key] = append(tr.deleg[key], delegated{entry: c, execution: execution, start: callee.span.StartTimestamp()})
}

// failedRequest returns, for a hop par -> c that no rule matched, the
// requesting span of a send that failed after its request left (status ERROR:
// a timeout, a connection reset): such a span never learnt the context the
// callee answered in, so it lacks the gen_ai.conversation.id a rule (the
// default one) requires. The callee did receive the request (the hop exists),
// so the span is judged as if it carried the context the entry span c
// answered in. It is par or a same-service ancestor; -1 when there is none.
func (p *identityProcessor) failedRequest(tr *trace, par, c int32) int32 {
	answered := strAttr(tr.spans[c].span, attrConversationID)
	if answered == "" {
		return -1
	}
	caller, callee := tr.spans[par].service, tr.spans[c].service
	for i := par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
		s := tr.spans[i].span
		if s.Status().Code() != ptrace.StatusCodeError || strAttr(s, attrConversationID) != "" {
			continue
		}
		for k := range p.rules {
			r := &p.rules[k]
			if (r.caller == "" || r.caller == caller) && (r.callee == "" || r.callee == callee) &&
				r.matchesAnswering(s, answered) {
				return i
			}
		}
	}
	return -1
}

// markResponseLost marks the entry span c agent_identity.hop.response_lost
// when the callee completed the request (c's status is not ERROR) but the
// caller's send failed (par, or the nearest same-service CLIENT span above it
// up to the invoke_agent send, has status ERROR: a timeout, a reset): the
// work was done and the caller did not learn it, so it may retry.
func (tr *trace) markResponseLost(par, c int32, caller, callee string, t *tally) {
	if tr.spans[c].span.Status().Code() == ptrace.StatusCodeError {
		return
	}
	for i := par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
		s := tr.spans[i].span
		if s.Kind() != ptrace.SpanKindClient {
			continue
		}
		if s.Status().Code() == ptrace.StatusCodeError {
			tr.spans[c].span.Attributes().PutBool(attrHopResponseLost, true)
			bump(&t.lostResponses, pairKey{caller: caller, callee: callee})
			return
		}
		if strAttr(s, attrOperationName) == operationInvokeAgent {
			return
		}
	}
}

// boolAttr returns a boolean attribute of span and whether it has one.
func boolAttr(span ptrace.Span, key string) (value, ok bool) {
	if v, found := span.Attributes().Get(key); found && v.Type() == pcommon.ValueTypeBool {
		return v.Bool(), true
	}
	return false, false
}

// verdict says whether a hop result is flagged (agent_identity.hop.mismatch
// true) and whether it is a verdict at all (the flag is set only then).
func verdict(result string) (flagged, judged bool) {
	switch result {
	case resultContextChanged, resultStateNotResumed:
		return true, true
	case resultContinued, resultFirstTurn:
		return false, true
	}
	return false, false
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
func (p *identityProcessor) markNoCallee(tr *trace, t *tally) {
	if !p.requesting {
		return
	}
	foreign := tr.foreignBelow() // foreign[i]: a descendant of i is in another service
	for _, i := range tr.order {
		s := tr.spans[i]
		if foreign[i] || s.service == "" || (tr.ambiguous != nil && tr.ambiguous[i]) || !p.requests(s) {
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

// requests reports whether s satisfies a rule that names a request.
func (p *identityProcessor) requests(s spanRef) bool {
	for k := range p.rules {
		r := &p.rules[k]
		if r.requests && (r.caller == "" || r.caller == s.service) && r.matches(s.span) {
			return true
		}
	}
	return false
}

// foreignBelow returns, per span, whether any descendant is in another
// service (or has no usable service.name). Reached spans only; one pass,
// children before parents.
func (tr *trace) foreignBelow() []bool {
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
// start time).
func (p *identityProcessor) markDuplicates(tr *trace, t *tally) {
	for key, hops := range tr.deleg {
		if len(hops) < 2 {
			continue
		}
		slices.SortStableFunc(hops, func(a, b delegated) int {
			switch {
			case a.start < b.start:
				return -1
			case a.start > b.start:
				return 1
			}
			return int(a.entry - b.entry)
		})
		seen := map[string]bool{hops[0].execution: true}
		for _, h := range hops[1:] {
			if h.execution == hops[0].execution {
				continue
			}
			tr.spans[h.entry].span.Attributes().PutBool(attrDelegationDuplicate, true)
			if !seen[h.execution] {
				seen[h.execution] = true
				if !tr.served[h.entry] {
					bump(&t.duplicates, pairKey{caller: key.caller, callee: key.callee})
				}
			}
		}
	}
}

// countServedMarks counts what the serving process marked on the entry span c
// of hop par -> c: agent_identity.delegation.duplicate=true (it had executed
// this delegation before, possibly in another trace: a retry after a crash is
// a new trace, which no per-trace analysis sees beside the first, and in two
// tiers it may reach another instance) and
// agent_identity.delegation.redelivered=true (it had received the delegation
// before, executed again or answered from a ledger). markDuplicates does not
// count such an execution a second time.
func (tr *trace) countServedMarks(par, c int32, t *tally) {
	attrs := tr.spans[c].span.Attributes()
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
func (tr *trace) backfill() {
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
