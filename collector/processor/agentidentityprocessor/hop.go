// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// A hop par -> c (parent span in one service, child in another) is judged in
// three steps, each a function below: resolve reads what the spans around the
// hop say (which span made the request, what it requested, what the callee
// answered in, whether its run resumed prior state), classify turns that into
// an agent_identity.hop.result, and mark writes the verdict on the callee's
// entry span and counts it. It compares like with like (README "Hop model"):
// the contextId the caller asked for with the context the callee's entry span
// answered in (protocol continuity), then whether the run serving it resumed
// prior state (state continuity).

// hop is one cross-service hop par -> c: what resolveHop read around it.
type hop struct {
	par, c int32 // caller span (the hop's parent), callee entry span
	// e: the span the callee's side is read from (calleeEntry): c, or the
	// A2A SERVER span below c when c is a transport's (ASGI/Starlette)
	e int32
	// required: some rule (or a failed send, failedRequest) asks the callee
	// to continue; from is the requesting span compared (par when none)
	required bool
	from     int32
	// callerConv: gen_ai.conversation.id of from or its nearest ancestor
	callerConv string
	// requested: the context the request asked for; ours: the requesting
	// span is a send of this instrumentation (an empty requested is then a
	// first turn)
	requested string
	ours      bool
	// answered: the context the callee's entry span answered in (else its
	// agent span's; entryConv: the entry span's own); agentConv, agent,
	// execution: the callee's agent span
	agentConv, answered, entryConv string
	agent, execution               string
	// resumed: whether the run serving the request resumed prior state,
	// when known
	resumed, resumedKnown bool
	// firstTurn: the first request in the requested context (crosstrace.go):
	// not compared for state
	firstTurn bool
	// side: where the callee's side was read from (callee_attrs.go)
	side calleeSide
}

// checkHop judges hop par -> c: did the callee continue what the caller
// requested?
func (p *identityProcessor) checkHop(tr *traceAnalysis, par, c int32, t *tally) {
	h := p.resolveHop(tr, par, c)
	result := h.classify()
	tr.markHop(&h, result, t)
	tr.markCallee(&h, result, t)
	tr.noteDelegation(&h)
	if h.required && p.noteAnswered(tr, &h) {
		bump(&t.evictions, storeContexts)
	}
}

// resolveHop reads, from the spans around hop par -> c, everything classify
// and markHop need.
func (p *identityProcessor) resolveHop(tr *traceAnalysis, par, c int32) hop {
	h := hop{par: par, c: c, e: tr.calleeEntry(c), from: -1}
	caller, callee, entry := tr.spans[par], tr.spans[c], tr.spans[h.e].span
	for k := range p.rules {
		r := &p.rules[k]
		if (r.caller != "" && r.caller != caller.service) || (r.callee != "" && r.callee != callee.service) {
			continue
		}
		if h.from = tr.nearest(&tr.ruleMemo[k], par, func(i int32) bool { return r.matches(tr.spans[i].span) }); h.from >= 0 {
			break
		}
	}
	h.required = h.from >= 0
	if !h.required {
		if f := p.failedRequest(tr, par, h.e); f >= 0 {
			h.from, h.required = f, true
		} else {
			h.from = par
		}
	}
	if i := tr.nearest(&tr.convMemo, h.from, tr.hasConv); i >= 0 {
		h.callerConv = strAttr(tr.spans[i].span, attrConversationID)
	}
	// Resumed: declared on the entry span (a server no adapter wraps, or the
	// application's own word), else the serving agent span's (any framework);
	// unknown there, a serving agent span marked with the agent conversation it
	// served this context with before (rebuilt since) did not resume.
	h.resumed, h.resumedKnown = boolAttr(entry, attrResumed)
	if a := tr.firstBelow(c, tr.isAgent); a >= 0 {
		as := tr.spans[a].span
		h.agentConv, h.agent, h.execution = strAttr(as, attrConversationID), strAttr(as, attrAgentName), strAttr(as, attrExecutionID)
		if !h.resumedKnown {
			h.resumed, h.resumedKnown = boolAttr(as, attrResumed)
		}
		if !h.resumedKnown && strAttr(as, attrPreviousID) != "" {
			h.resumed, h.resumedKnown = false, true
		}
	}
	if h.execution == "" {
		h.execution = strAttr(entry, attrExecutionID)
	}
	// Requested: what the requesting span (else the entry span, the same
	// request seen by the callee) says the request carried. A send span of
	// this instrumentation (it carries a delegation id) without one asked for
	// nothing: a first turn. Any other caller span (semconv only) requested
	// the conversation it carries.
	reqSpan := tr.spans[h.from].span
	h.requested = strAttr(reqSpan, attrRequestedID)
	if h.requested == "" {
		h.requested = strAttr(entry, attrRequestedID)
	}
	h.ours = h.requested != "" || strAttr(reqSpan, attrDelegationID) != ""
	if !h.ours {
		h.requested = h.callerConv
	}
	// Answered: the context the entry span answered in; a callee
	// instrumented by semconv alone has only its agent span's. entryConv is
	// c's own (what markHop's healthy hop shows).
	h.entryConv = strAttr(callee.span, attrConversationID)
	h.answered = strAttr(entry, attrConversationID)
	if h.answered == "" {
		h.answered = h.agentConv
	}
	tr.readCallee(&h)
	h.firstTurn = h.required && h.requested != "" && p.firstInContext(tr, &h)
	return h
}

// classify returns the hop's agent_identity.hop.result.
func (h *hop) classify() string {
	switch {
	case !h.required:
		return resultNotRequired
	case h.requested == "" && h.ours:
		return resultFirstTurn
	case h.requested == "":
		return resultCallerUnknown
	case h.answered == "" && !h.side.changed:
		return resultCalleeUnknown
	case h.side.changed || h.answered != h.requested:
		return resultContextChanged
	case h.firstTurn:
		return resultFirstTurn
	case h.resumedKnown && !h.resumed:
		return resultStateNotResumed
	case !h.resumedKnown:
		return resultStateUnknown
	}
	return resultContinued
}

// markHop writes the verdict and what it was read from on the callee's entry
// span (agent_identity.hop.*), marks a lost response and counts the hop. On a
// healthy hop (see healthy) the span shows each conversation id once: the
// answered one is the entry span's own gen_ai.conversation.id (written as
// agent_identity.hop.callee.conversation.id only when the entry span has none),
// and a caller conversation or requested id equal to it is left off. Flagged
// and unknown verdicts keep every detail.
func (tr *traceAnalysis) markHop(h *hop, result string, t *tally) {
	caller, callee := tr.spans[h.par], tr.spans[h.c]
	attrs := callee.span.Attributes()
	attrs.EnsureCapacity(attrs.Len() + 8) // one growth for every mark below
	attrs.PutStr(attrHopResult, result)
	attrs.PutStr(attrHopCallerService, caller.service)
	if flagged, judged := verdict(result); judged {
		attrs.PutBool(attrHopMismatch, flagged)
	}
	shown := "" // the id the span already shows, on a healthy hop
	if healthy(result) {
		shown = h.answered
	}
	if h.callerConv != "" && h.callerConv != shown {
		attrs.PutStr(attrHopCallerConversationID, h.callerConv)
	}
	if h.required && h.requested != "" && h.requested != shown {
		attrs.PutStr(attrHopRequestedID, h.requested)
	}
	if h.answered != "" && (shown == "" || h.entryConv == "") {
		attrs.PutStr(attrHopCalleeConversationID, h.answered)
	}
	if h.agentConv != "" && h.agentConv != h.answered {
		attrs.PutStr(attrHopCalleeAgentConvID, h.agentConv)
	}
	if h.resumedKnown {
		attrs.PutBool(attrHopCalleeResumed, h.resumed)
	}
	tr.markResponseLost(h.par, h.c, caller.service, callee.service, t)
	bump(&t.hops, hopKey{caller: caller.service, callee: callee.service, agent: h.agent, result: result})
}

// noteDelegation records the callee's execution under the delegation id of
// the nearest caller span that carries one, for markDuplicates.
func (tr *traceAnalysis) noteDelegation(h *hop) {
	if h.execution == "" {
		return
	}
	d := tr.nearest(&tr.delegMemo, h.par, func(i int32) bool { return strAttr(tr.spans[i].span, attrDelegationID) != "" })
	if d < 0 {
		return
	}
	if tr.deleg == nil {
		tr.deleg = make(map[delegationKey][]delegated)
	}
	caller, callee := tr.spans[h.par], tr.spans[h.c]
	key := delegationKey{caller: caller.service, id: strAttr(tr.spans[d].span, attrDelegationID), callee: callee.service}
	tr.deleg[key] = append(tr.deleg[key], delegated{entry: h.c, execution: h.execution, start: callee.span.StartTimestamp()})
}

// failedRequest returns, for a hop par -> c that no rule matched, the
// requesting span of a send that failed after its request left (status ERROR:
// a timeout, a connection reset; or agent_identity.send.cancelled=true: the
// caller cancelled it before the answer): such a span never learnt the context the
// callee answered in, so it lacks the gen_ai.conversation.id a rule (the
// default one) requires. The callee did receive the request (the hop exists),
// so the span is judged as if it carried the context the callee answered in
// (on e, the span its side is read from: calleeEntry). It is par or a
// same-service ancestor; -1 when there is none.
func (p *identityProcessor) failedRequest(tr *traceAnalysis, par, e int32) int32 {
	answered := strAttr(tr.spans[e].span, attrConversationID)
	if answered == "" {
		return -1
	}
	caller, callee := tr.spans[par].service, tr.spans[e].service
	for i := par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
		s := tr.spans[i].span
		if (s.Status().Code() != ptrace.StatusCodeError && !sendCancelled(s)) || strAttr(s, attrConversationID) != "" {
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

// boolAttr returns a boolean attribute of span and whether it has one.
func boolAttr(span ptrace.Span, key string) (value, ok bool) {
	if v, found := span.Attributes().Get(key); found && v.Type() == pcommon.ValueTypeBool {
		return v.Bool(), true
	}
	return false, false
}

// healthy reports whether a hop result needs no drill-down: continued,
// first_turn and not_required (markHop writes less on them).
func healthy(result string) bool {
	return result == resultContinued || result == resultFirstTurn || result == resultNotRequired
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

// agentCardPaths: where an A2A client fetches a callee's Agent Card (A2A 1.x,
// and 0.3's name).
var agentCardPaths = [...]string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// urlKeys: the attributes an HTTP span names its path or URL in (HTTP semconv,
// stable and older).
var urlKeys = [...]string{"url.path", "http.target", "http.route", "url.full", "http.url"}

// cardFetch reports whether a cross-service pair (the callee's entry span,
// and the caller's span above it when known) is an A2A client fetching the
// callee's Agent Card: agentCardPaths on either, as HTTP tracing records it.
// That is discovery, not a hop: no verdict, not counted.
func cardFetch(spans ...ptrace.Span) bool {
	for _, s := range spans {
		if strAttr(s, "http.request.method") != "GET" && strAttr(s, "http.method") != "GET" {
			continue // the HTTP semconv records the method wherever it records the path
		}
		for _, k := range urlKeys {
			v := strAttr(s, k)
			if v == "" {
				continue
			}
			if q := strings.IndexAny(v, "?#"); q >= 0 {
				v = v[:q]
			}
			for _, path := range agentCardPaths {
				if strings.HasSuffix(v, path) {
					return true
				}
			}
		}
	}
	return false
}
