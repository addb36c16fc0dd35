// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

// Attribute names follow docs/attributes.md (THE table); attributes_test.go
// fails when this file and the table disagree.

// Attributes the processor reads (set by the instrumentation or the SDK).
const (
	attrServiceName   = "service.name"
	attrOperationName = "gen_ai.operation.name"
	attrAgentName     = "gen_ai.agent.name"
	attrExecutionID   = "agent_identity.execution.id"
	attrDelegationID  = "agent_identity.delegation.id"
	// attrRequestedID: the id a span asked to continue (A2A CLIENT and SERVER
	// spans: the request's contextId, absent on a first turn).
	attrRequestedID = "agent_identity.conversation.requested_id"
	// attrResumed: whether the agent run started from prior conversation state.
	attrResumed = "agent_identity.conversation.resumed"
	// attrDelegationRedelivered: the serving process had received this
	// delegation before (a retry, executed again or not).
	attrDelegationRedelivered = "agent_identity.delegation.redelivered"
	// attrPreviousID: on a serving agent span, the agent conversation that
	// served the same contextId last time in that process (it rebuilt its
	// conversation since).
	attrPreviousID = "agent_identity.conversation.previous_id"
	// attrConversationChanged: on an A2A CLIENT span, the callee's answer
	// came in another context than the one requested (the caller received it).
	attrConversationChanged = "agent_identity.conversation.changed"
	// attrTaskState: the A2A task state of the last response a span saw;
	// on a CLIENT span, anything but submitted or working is the callee's answer.
	attrTaskState      = "a2a.task.state"
	taskStateSubmitted = "TASK_STATE_SUBMITTED"
	taskStateWorking   = "TASK_STATE_WORKING"
	// attrSendCancelled: on an A2A CLIENT span, the caller cancelled the send
	// before any answer arrived (status stays UNSET: cancellation is no error).
	attrSendCancelled = "agent_identity.send.cancelled"
	// attrMethodName: the A2A method of a CLIENT or SERVER span (SendMessage,
	// SendStreamingMessage, GetTask, ...).
	attrMethodName = "a2a.method.name"
	// attrTaskID: the A2A task a span's request or responses belong to.
	attrTaskID = "a2a.task.id"
	// attrAnsweredBefore: on an A2A CLIENT send span that requested a
	// context, whether the caller's process had received a response in that
	// context from the same destination before.
	attrAnsweredBefore = "agent_identity.conversation.answered_before"

	// operationInvokeAgent is the gen_ai.operation.name of agent spans.
	operationInvokeAgent = "invoke_agent"
)

// Attributes the processor writes (rows whose "set by" includes col).
const (
	attrConversationID          = "gen_ai.conversation.id"
	attrHopResult               = "agent_identity.hop.result"
	attrHopMismatch             = "agent_identity.hop.mismatch"
	attrHopCallerService        = "agent_identity.hop.caller.service.name"
	attrHopCallerConversationID = "agent_identity.hop.caller.conversation.id"
	attrHopCalleeConversationID = "agent_identity.hop.callee.conversation.id"
	attrHopRequestedID          = "agent_identity.hop.requested_id"
	attrHopCalleeAgentConvID    = "agent_identity.hop.callee.agent.conversation.id"
	attrHopCalleeResumed        = "agent_identity.hop.callee.resumed"
	attrConversationBackfilled  = "agent_identity.conversation.backfilled"
	attrDelegationDuplicate     = "agent_identity.delegation.duplicate"
	// attrVerdictDuplicate marks the verdict spans of a trace judged again
	// (memory.go): a re-delivery, not counted again.
	attrVerdictDuplicate = "agent_identity.verdict.duplicate"
	attrHopResponseLost  = "agent_identity.hop.response_lost"
)

// writtenAttributes lists every attribute the processor may set.
var writtenAttributes = []string{
	attrConversationID,
	attrHopResult,
	attrHopMismatch,
	attrHopCallerService,
	attrHopCallerConversationID,
	attrHopCalleeConversationID,
	attrHopRequestedID,
	attrHopCalleeAgentConvID,
	attrHopCalleeResumed,
	attrConversationBackfilled,
	attrDelegationDuplicate,
	attrVerdictDuplicate,
	attrHopResponseLost,
}

// Values of agent_identity.hop.result. The flagged ones (hop.mismatch=true)
// are the reasons: resultContextChanged and resultStateNotResumed.
const (
	resultContinued = "continued"
	// resultFirstTurn: the caller asked to continue nothing (no contextId
	// sent): never a mismatch.
	resultFirstTurn = "first_turn"
	// resultContextChanged: the callee answered in another context than the
	// one requested (protocol continuity broken).
	resultContextChanged = "context_changed"
	// resultStateNotResumed: the callee answered in the requested context but
	// the run serving it started from no prior state (state continuity broken).
	resultStateNotResumed = "state_not_resumed"
	resultUnresolved      = "unresolved"
	resultCallerUnknown   = "caller_unknown"
	resultCalleeUnknown   = "callee_unknown"
	resultNotRequired     = "not_required"
	// resultNoCallee marks a requesting span (caller conditions of a
	// require_continuation rule) with no descendant in another service: the
	// request left no trace of a callee in this trace (lost traceparent, a
	// late fragment, or a failed send).
	resultNoCallee = "no_callee"
)

// unknownService is the metric label for spans whose resource has no usable
// service.name (absent, not a string, empty or sdkUnknownService).
const unknownService = "unknown"

// sdkUnknownService is the service.name the SDKs default to when none is
// configured, alone or as "unknown_service:<process executable name>".
const sdkUnknownService = "unknown_service"
