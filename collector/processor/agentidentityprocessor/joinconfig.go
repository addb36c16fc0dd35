// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"errors"
	"time"
)

// Defaults of the join (README "Hops across fragments and traces").
const (
	defaultHopWindow       = 5 * time.Minute
	defaultMaxHeldSpans    = 200_000
	defaultContextSlots    = 1 << 16
	defaultDelegationSlots = 1 << 16
	defaultTaskSlots       = 1 << 14
	defaultAgentWait       = 15 * time.Second
	defaultFirstTurnWait   = 15 * time.Second
)

// Join is the part of Config that joins a hop's parts across fragments,
// batches and traces.
type Join struct {
	// HopWindow is how long the processor holds the spans of a trace, from
	// its first span, waiting for the parts its hops need: the callee's entry
	// span below each request, the parent of each span whose parent is not in
	// yet, the callee's agent span below a send answered SUBMITTED/WORKING,
	// the follow-up of a cancelled long-running send. A trace whose parts are
	// all in is judged and passed on at once; one still missing a part when
	// the window ends is judged with what it has (`unresolved`, `no_callee`,
	// `agent_identity.hop.response_lost`). Default: 5m (agent turns take
	// 10-120 s, A2A tasks minutes). Zero: no join, each batch is judged alone
	// as it comes (a late fragment's spans are unresolved).
	HopWindow time.Duration `mapstructure:"hop_window"`

	// AgentWait is how long a hop a rule requires waits, within the hop
	// window, for the callee's agent span below its entry span (the agent
	// span gives `resumed`; its process exports it with or before the entry
	// span, but a batch split or a stream that ends after the response can
	// put it in a later fragment). A callee with no agent span of its own (a
	// plain a2a-sdk executor) is judged after it. A trace with no
	// cross-service hop in yet (a trace of one service, or whose first part
	// was its root) also waits this long for more parts. Default: 15s. Zero:
	// no wait.
	AgentWait time.Duration `mapstructure:"agent_wait"`

	// FirstTurnWait is how long, within the hop window from its first span,
	// a trace waits when a hop in it would be judged `first_turn` only
	// because the context memory knows no earlier answer of its callee in
	// the requested context (the caller did not say answered_before: a
	// client-minted turn 1, or a later turn sent to another replica or by a
	// caller without this instrumentation). An earlier turn of that context
	// ended before this trace's first span started, so its parts reach the
	// collector at most the other processes' export delay after this
	// trace's first part: judged meanwhile, it makes this hop a later turn,
	// judged as one at once; else the hop is judged `first_turn` when the
	// wait ends. Hops with answered_before, with an earlier answer in the
	// memory or with no requested context do not wait. Default: 15s (an
	// app's 5 s batch delay plus groupbytrace's 5 s, with margin). Zero: no
	// wait (a later turn whose trace completes before turn 1's is judged
	// `first_turn`).
	FirstTurnWait time.Duration `mapstructure:"first_turn_wait"`

	// MaxHeldSpans bounds the spans held at once; above it the oldest held
	// trace is judged with what it has and passed on (counted in
	// agent_identity_evictions{store="held_traces"}). Default: 200,000.
	// Zero: unbounded.
	MaxHeldSpans int `mapstructure:"max_held_spans"`

	// ContextSlots bounds the memory of (callee service, context) pairs a
	// callee answered in, which tells a first turn in a context the client
	// named itself from a later turn: one 24-byte slot each (in memory and,
	// with `storage`, in a storage record). Zero value: 65,536.
	ContextSlots int `mapstructure:"context_slots"`

	// DelegationSlots bounds the memory of the first execution per
	// (caller service, delegation id, callee service), which finds a second
	// execution in another trace or caller process: 24 bytes each. Zero
	// value: 65,536.
	DelegationSlots int `mapstructure:"delegation_slots"`

	// TaskSlots bounds the memory of long-running A2A tasks (caller service,
	// a2a.task.id) a caller followed up to an answer: 24 bytes each. Zero
	// value: 16,384.
	TaskSlots int `mapstructure:"task_slots"`
}

var errJoinNegative = errors.New("`hop_window`, `agent_wait`, `first_turn_wait`, `max_held_spans`, `context_slots`, `delegation_slots` and `task_slots` must not be negative")

func defaultJoin() Join {
	return Join{HopWindow: defaultHopWindow, AgentWait: defaultAgentWait, FirstTurnWait: defaultFirstTurnWait,
		MaxHeldSpans: defaultMaxHeldSpans}
}

func (j *Join) validate() error {
	if j.HopWindow < 0 || j.AgentWait < 0 || j.FirstTurnWait < 0 || j.MaxHeldSpans < 0 || j.ContextSlots < 0 || j.DelegationSlots < 0 || j.TaskSlots < 0 {
		return errJoinNegative
	}
	return nil
}

func orDefault(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}
