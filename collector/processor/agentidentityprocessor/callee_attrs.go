// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
)

// The callee's side of a hop, read from whatever its telemetry carries
// (docs/a2a.md, "Callees in other languages"). resolveHop reads our attributes
// first (those of the span calleeEntry picks: the entry span, or our A2A SERVER
// span below a transport's HTTP SERVER span; then its serving agent span's);
// readCallee then
// names where they came from (agent_identity.hop.callee.kind) and, for a
// callee that carries less, fills what is missing:
//   - agent_identity: our attributes (this instrumentation, or an agent in any
//     language that follows the `resumed` contract of docs/attributes.md), or
//     a span of our tracer (ourScope);
//   - a2a_semconv: the A2A semantic conventions, a span of the callee's
//     service at or below its entry span with a2a.method.name, whose
//     gen_ai.conversation.id is the context it answered in;
//   - a2a_java: a2a-java's extras/opentelemetry (gen_ai.agent.a2a.*, its
//     request handler's SERVER span): gen_ai.agent.a2a.context_id is the
//     request's contextId (like agent_identity.conversation.requested_id), not
//     the one answered in;
//   - http: none of these, an HTTP SERVER span under the caller's CLIENT
//     span (a @a2a-js/sdk agent under the Node SDK's HTTP instrumentation).
//
// Where the callee does not say which context it answered in, the caller's
// send span does (a send of this instrumentation): a response in another
// context than the requested one marked it agent_identity.conversation.changed;
// a send that ended with an answer, unmarked, was answered in the requested
// context; on a first turn its gen_ai.conversation.id is the context the callee
// assigned. Only `resumed` (ours, or the contract's) says whether the run
// resumed prior state: without it, a hop answered in the requested context is
// state_unknown whatever the callee kind, never continued nor
// state_not_resumed.

// Values of agent_identity.hop.callee.kind.
const (
	calleeKindOurs    = "agent_identity"
	calleeKindSemconv = "a2a_semconv"
	calleeKindA2AJava = "a2a_java"
	calleeKindHTTP    = "http"
)

// Attributes read from other A2A instrumentations, and the one written.
const (
	// attrA2AMethod: the A2A semconv's (and our) method name of an A2A span.
	attrA2AMethod = "a2a.method.name"
	// a2a-java extras/opentelemetry (A2AObservabilityNames): the request's
	// contextId and the method (SendMessage, ...) of its request handler span.
	attrA2AJavaContextID = "gen_ai.agent.a2a.context_id"
	attrA2AJavaOperation = "gen_ai.agent.a2a.operation.name"
	// ourScope: the instrumentation scope of this instrumentation's spans
	// (the Python package's tracer).
	ourScope = "otel_agent_identity"
	// attrHopCalleeKind: where the callee's side of the hop was read from.
	attrHopCalleeKind = "agent_identity.hop.callee.kind"
	// resultStateUnknown: the callee answered in the requested context, and
	// its telemetry carries no `resumed` signal: unjudged for state (neither
	// a mismatch nor no_callee).
	resultStateUnknown = "state_unknown"
)

// calleeSide is what readCallee learnt about the callee of a hop.
type calleeSide struct {
	kind string
	// changed: the caller's send span saw the answer come in another context
	// (the callee's own telemetry did not say which)
	changed bool
	// fromCaller: answered was read from the caller's send span
	fromCaller bool
	// mapped: the kind's own attributes gave the answered or requested context
	mapped bool
}

// readCallee sets h.side and fills, for a callee without our attributes,
// what resolveHop could not read: the context answered in (the A2A semconv
// span's, else what the caller's send span saw) and the requested context
// (a2a-java's, when the caller's spans carry none).
func (tr *traceAnalysis) readCallee(h *hop) {
	c := h.c
	switch {
	case h.resumedKnown || h.execution != "" || tr.isOurs(h.e):
		h.side.kind = calleeKindOurs
	case tr.firstBelow(c, tr.hasA2AJava) >= 0:
		h.side.kind = calleeKindA2AJava
		if h.requested == "" && !h.ours {
			h.requested = strAttr(tr.spans[tr.firstBelow(c, tr.hasA2AJava)].span, attrA2AJavaContextID)
			h.side.mapped = h.requested != ""
		}
	case tr.firstBelow(c, tr.isA2ASemconv) >= 0:
		h.side.kind = calleeKindSemconv
		if h.answered == "" {
			h.answered = strAttr(tr.spans[tr.firstBelow(c, tr.isA2ASemconv)].span, attrConversationID)
			h.side.mapped = h.answered != ""
		} else { // read from the A2A SERVER span below a transport's entry span
			h.side.mapped = h.e != c && h.answered == strAttr(tr.spans[h.e].span, attrConversationID)
		}
	default:
		h.side.kind = calleeKindHTTP
	}
	if h.answered == "" && h.execution == "" {
		tr.answeredSeenByCaller(h) // no agent run of ours says it
	}
	if h.execution == "" && (h.side.kind == calleeKindHTTP || h.side.kind == calleeKindA2AJava) {
		// A callee whose telemetry shows no agent run at all (HTTP spans
		// only, a2a-java's): each request it served counts as one execution
		// of the caller's delegation (a replay is not told apart). One whose
		// spans name agent runs (ours, A2A semconv) executed only where an
		// execution id says so: a ledger replay there is no execution.
		tid, sid := tr.spans[c].span.TraceID(), tr.spans[c].span.SpanID()
		h.execution = string(tid[:]) + string(sid[:])
	}
}

// answeredSeenByCaller reads the context the callee answered in from the
// caller's send span (the nearest CLIENT span at or above h.par in the
// caller's service that carries a2a.method.name or a requested id).
func (tr *traceAnalysis) answeredSeenByCaller(h *hop) {
	caller := tr.spans[h.par].service
	for i := h.par; i >= 0 && tr.spans[i].service == caller; i = tr.parent[i] {
		s := tr.spans[i].span
		if s.Kind() != ptrace.SpanKindClient || (strAttr(s, attrA2AMethod) == "" && strAttr(s, attrRequestedID) == "") {
			continue
		}
		requested := strAttr(s, attrRequestedID)
		switch changed, _ := boolAttr(s, attrConversationChanged); {
		case changed:
			h.side.changed, h.side.fromCaller = true, true
		case s.Status().Code() == ptrace.StatusCodeError || sendCancelled(s) || pendingState(strAttr(s, attrTaskState)):
			// no answer seen: the context it was answered in is unknown
		case requested != "":
			h.answered, h.side.fromCaller = requested, true
		default: // a first turn: the context the callee assigned
			h.answered, h.side.fromCaller = strAttr(s, attrConversationID), true
		}
		return
	}
}

// markCallee writes the callee kind on the entry span of a hop whose verdict
// rests on it (the context was read through the mapping or from the caller's
// send span, or the hop is state_unknown) and counts a hop unjudged for state.
func (tr *traceAnalysis) markCallee(h *hop, result string, t *tally) {
	if !h.side.mapped && !h.side.fromCaller && !h.side.changed && result != resultStateUnknown {
		return
	}
	tr.spans[h.c].span.Attributes().PutStr(attrHopCalleeKind, h.side.kind)
	if result == resultStateUnknown {
		bump(&t.stateUnknown, unjudgedKey{caller: tr.spans[h.par].service, callee: tr.spans[h.c].service, kind: h.side.kind})
	}
}

// calleeEntry returns the span the callee's side of the hop into entry span c
// is read from: the most informative span at or below c in c's service, c or
// a SERVER span above the serving agent run (the request as a layer below the
// transport saw it), in this order: one of ours (isOurs), one of the A2A
// semconv (a2a.method.name), one of a2a-java; else c. A callee that also runs
// ASGI/Starlette server tracing has the HTTP SERVER span as c, and our A2A
// SERVER span below it carries the request (requested, answered, resumed).
func (tr *traceAnalysis) calleeEntry(c int32) int32 {
	if tr.isOurs(c) {
		return c
	}
	best, rank := c, 3
	tr.firstBelowOutside(c, func(i int32) bool {
		if i != c && tr.spans[i].span.Kind() != ptrace.SpanKindServer {
			return false
		}
		switch {
		case tr.isOurs(i):
			best = i
			return true
		case rank > 1 && tr.isA2ASemconv(i):
			best, rank = i, 1
		case rank > 2 && tr.hasA2AJava(i):
			best, rank = i, 2
		}
		return false
	}, tr.isAgent)
	return best
}

// isOurs reports whether span i is of this instrumentation: it carries our
// attributes, or our tracer emitted it (our A2A SERVER span of a first turn
// may carry none).
func (tr *traceAnalysis) isOurs(i int32) bool {
	return tr.spans[i].ours || hasOwnAttr(tr.spans[i].span)
}

// hasOwnAttr reports whether span carries an attribute of this
// instrumentation (agent_identity.*, not one the processor wrote).
func hasOwnAttr(span ptrace.Span) bool {
	for k := range span.Attributes().All() {
		if strings.HasPrefix(k, "agent_identity.") && !strings.HasPrefix(k, "agent_identity.hop.") && k != attrVerdictDuplicate {
			return true
		}
	}
	return false
}

func (tr *traceAnalysis) hasA2AJava(i int32) bool {
	s := tr.spans[i].span
	return strAttr(s, attrA2AJavaOperation) != "" || strAttr(s, attrA2AJavaContextID) != ""
}

func (tr *traceAnalysis) isA2ASemconv(i int32) bool {
	return strAttr(tr.spans[i].span, attrA2AMethod) != ""
}

// unjudgedKey is the label set of agent_identity.state_unknown.
type unjudgedKey struct{ caller, callee, kind string }

func (k unjudgedKey) set() attribute.Set {
	return attribute.NewSet(
		attribute.String(labelCallerService, k.caller),
		attribute.String(labelCalleeService, k.callee),
		attribute.String(labelCalleeKind, k.kind))
}

// labelCalleeKind: agent_identity.hop.callee.kind of a hop unjudged for state.
const labelCalleeKind = "callee_kind"
