// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// hopParts is one hop of trace `trace`, in the four parts that reach the
// collector separately on real traffic (each process exports what ended):
// the caller's root agent span, its A2A send, the callee's entry span, and
// the callee's agent span with its chat span. The callee forgot (resumed=false)
// a context the caller had been answered in before: state_not_resumed.
func hopParts(trace string) [][]spanIn {
	return [][]spanIn{
		{{Trace: trace, ID: trace + "root", Service: "orchestrator", Kind: "internal",
			Attrs: map[string]any{attrOperationName: operationInvokeAgent, attrConversationID: "conv-O"}}},
		{{Trace: trace, ID: trace + "send", Parent: trace + "root", Service: "orchestrator", Kind: "client",
			Attrs: map[string]any{attrOperationName: operationInvokeAgent, attrConversationID: "ctx-" + trace,
				attrRequestedID: "ctx-" + trace, attrDelegationID: "d-" + trace, attrAnsweredBefore: true}}},
		{{Trace: trace, ID: trace + "entry", Parent: trace + "send", Service: "specialist", Kind: "server",
			Attrs: map[string]any{attrConversationID: "ctx-" + trace, attrRequestedID: "ctx-" + trace}}},
		{{Trace: trace, ID: trace + "agent", Parent: trace + "entry", Service: "specialist", Kind: "internal",
			Attrs: map[string]any{attrOperationName: operationInvokeAgent, attrAgentName: "specialist",
				attrConversationID: "ctx-" + trace, attrResumed: false, attrExecutionID: "e-" + trace}},
			{Trace: trace, ID: trace + "chat", Parent: trace + "agent", Service: "specialist", Kind: "client",
				Attrs: map[string]any{attrOperationName: "chat"}}},
	}
}

func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

const (
	forgotten  = "agent_identity.mismatches{callee_agent=specialist,callee_service=specialist,caller_service=orchestrator,reason=state_not_resumed}"
	hopsForgot = "agent_identity.hops{callee_agent=specialist,callee_service=specialist,caller_service=orchestrator,result=state_not_resumed}"
)

// A hop's parts in separate ConsumeTraces calls, in every order: nothing
// leaves before the last part arrives, then the whole trace leaves once,
// judged (the forgotten state flagged), nothing unresolved, no no_callee.
func TestJoinPartsInEveryOrder(t *testing.T) {
	for _, order := range permutations(4) {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			h := newHarness(t, configFrom(t, nil))
			parts := hopParts("t1")
			for k, i := range order {
				require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, parts[i])))
				if k < len(order)-1 {
					require.Empty(t, h.sink.AllTraces(), "held until its last part")
				}
			}
			require.Len(t, h.sink.AllTraces(), 1)
			out := h.sink.AllTraces()[0]
			assert.Equal(t, 5, out.SpanCount())
			assert.Equal(t, map[string]int{resultStateNotResumed: 1}, countResults(out))
			m := h.metrics(t)
			assert.Equal(t, int64(1), m[forgotten])
			assert.Equal(t, int64(1), m[hopsForgot])
			for k := range m {
				assert.NotContains(t, k, "unresolved")
				assert.NotContains(t, k, "no_callee")
			}
		})
	}
}

// startedHarness is a harness whose processor runs (its window goroutine).
func startedHarness(t *testing.T, raw map[string]any) *harness {
	h := newHarness(t, configFrom(t, raw))
	require.NoError(t, h.proc.Start(context.Background(), componenttest.NewNopHost()))
	return h
}

// When the window ends, what is held leaves judged with what it has: a send
// whose callee never arrived is no_callee, a callee whose caller never arrived
// is unresolved, each counted once (not per span).
func TestJoinWindowExpiry(t *testing.T) {
	h := startedHarness(t, map[string]any{"hop_window": "300ms"})
	caller := hopParts("t1")
	callee := hopParts("t2")
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, append(caller[0], caller[1]...))))
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, append(callee[2], callee[3]...))))
	assert.Empty(t, h.sink.AllTraces())
	require.Eventually(t, func() bool { return h.sink.SpanCount() == 5 }, 5*time.Second, 10*time.Millisecond)
	m := h.metrics(t)
	assert.Equal(t, int64(1), m["agent_identity.no_callee{callee_agent=,caller_service=orchestrator,caller_status=ok}"])
	assert.Equal(t, int64(1), m["agent_identity.unresolved{callee_service=specialist}"], "once per hop, not per span")
}

// A collector restarted in the middle of a turn gets the late spans of a hop
// whose earlier spans it never saw (they left before the restart): 13 callee
// spans under 3 parents it never saw (an a2a-sdk server's request handler and
// event queue spans) and 2 caller spans under its root. Each part's top span
// is marked unresolved; the counter counts each service's missing part once,
// not each span.
func TestJoinRestartedMidTurnCountsUnresolvedOncePerPart(t *testing.T) {
	h := startedHarness(t, map[string]any{"hop_window": "300ms"})
	var late []spanIn
	for i := range 13 {
		parent := fmt.Sprintf("gone-handler-%d", i%3) // spans the collector saw before its restart
		late = append(late, spanIn{Trace: "t1", ID: fmt.Sprintf("a2a-%d", i), Parent: parent, Service: "specialist"})
	}
	late = append(late,
		spanIn{Trace: "t1", ID: "summarise", Parent: "gone-root", Service: "orchestrator", Attrs: map[string]any{attrOperationName: "chat"}},
		spanIn{Trace: "t1", ID: "tool", Parent: "gone-root", Service: "orchestrator"},
		spanIn{Trace: "t1", ID: "tool-child", Parent: "tool", Service: "orchestrator"})
	for _, s := range late { // one span a request, as BatchSpanProcessors deliver a turn's end
		require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, []spanIn{s})))
	}
	require.Eventually(t, func() bool { return h.sink.SpanCount() == len(late) }, 5*time.Second, 10*time.Millisecond)
	marked := 0
	for _, td := range h.sink.AllTraces() {
		marked += countResults(td)[resultUnresolved]
	}
	assert.Equal(t, 15, marked, "every part's top span is marked (not tool-child: its parent is in)")
	m := h.metrics(t)
	assert.Equal(t, int64(1), m["agent_identity.unresolved{callee_service=specialist}"], "once per part, not per span")
	assert.Equal(t, int64(1), m["agent_identity.unresolved{callee_service=orchestrator}"])
}

// Above max_held_spans the oldest held trace leaves early (judged with what it
// has) and is counted in agent_identity_evictions{store=held_traces}.
func TestJoinEviction(t *testing.T) {
	h := newHarness(t, configFrom(t, map[string]any{"max_held_spans": 3}))
	for _, tr := range []string{"t1", "t2", "t3"} {
		require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, hopParts(tr)[1]))) // a send alone: held
	}
	require.Equal(t, 0, h.sink.SpanCount())
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, hopParts("t4")[1])))
	assert.Equal(t, 1, h.sink.SpanCount(), "the oldest left")
	assert.Equal(t, int64(1), h.metrics(t)["agent_identity.evictions{store=held_traces}"])
	require.NoError(t, h.proc.Shutdown(context.Background()))
	assert.Equal(t, 4, h.sink.SpanCount(), "every span that enters leaves, at Shutdown the held ones")
}

// A collector restart with `storage` remembers the contexts answered and the
// delegations executed: turn 2 of a context answered before the restart, from
// a restarted caller (answered_before=false), is still compared (forgotten:
// flagged), and a retry of a delegation executed before the restart is a
// duplicate. The memories live in a real file_storage.
func TestJoinRestartWithStorage(t *testing.T) {
	dir := t.TempDir()
	run := func(traces ...ptrace.Traces) map[string]int64 {
		id, ext := startFileStorage(t, dir)
		defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()
		cfg := configFrom(t, map[string]any{"agent_wait": "0s"})
		cfg.Storage = &id
		h := newHarness(t, cfg)
		require.NoError(t, h.proc.Start(context.Background(), storageHost{exts: map[component.ID]component.Component{id: ext}}))
		for _, td := range traces {
			require.NoError(t, h.proc.ConsumeTraces(context.Background(), td))
		}
		require.NoError(t, h.proc.Shutdown(context.Background()))
		return h.metrics(t)
	}
	turn := func(trace, exec string, answeredBefore bool, at int64) ptrace.Traces { // at: start, seconds
		return buildTraces(t, []spanIn{
			{Trace: trace, ID: trace + "send", Service: "orchestrator", Kind: "client", Start: at, Attrs: map[string]any{
				attrOperationName: operationInvokeAgent, attrConversationID: "ctx-1", attrRequestedID: "ctx-1",
				attrDelegationID: "del-" + trace[:2], attrAnsweredBefore: answeredBefore}},
			{Trace: trace, ID: trace + "entry", Parent: trace + "send", Service: "specialist", Kind: "server",
				Start: at + 1, Attrs: map[string]any{attrConversationID: "ctx-1"}},
			{Trace: trace, ID: trace + "agent", Parent: trace + "entry", Service: "specialist", Kind: "internal",
				Start: at + 2, Attrs: map[string]any{attrOperationName: operationInvokeAgent, attrAgentName: "specialist",
					attrConversationID: "ctx-1", attrResumed: false, attrExecutionID: exec}},
		})
	}
	first := run(turn("t1", "e1", false, 10))
	assert.Equal(t, int64(1), first["agent_identity.hops{callee_agent=specialist,callee_service=specialist,caller_service=orchestrator,result=first_turn}"])
	// t2: turn 2 after both restarted; t1b: the same delegation (del-t1) retried, executed again
	second := run(turn("t2", "e2", false, 20), turn("t1b", "e3", false, 30))
	assert.Equal(t, int64(2), second[hopsForgot], "the context was answered before the restart")
	assert.Equal(t, int64(1), second["agent_identity.duplicate_executions{callee_service=specialist,caller_service=orchestrator}"])
}

// Concurrent calls, each trace's parts from several goroutines: every span
// leaves once and every hop is judged once (run with -race).
func TestJoinConcurrent(t *testing.T) {
	h := newHarness(t, configFrom(t, nil))
	const traces = 40
	var wg sync.WaitGroup
	for i := range traces {
		parts := hopParts(fmt.Sprintf("c%02d", i))
		for k := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, parts[(k+i)%len(parts)])))
			}()
		}
	}
	wg.Wait()
	assert.Equal(t, 5*traces, h.sink.SpanCount())
	m := h.metrics(t)
	assert.Equal(t, int64(traces), m[forgotten])
}

// A part arriving after its trace was judged complete (a slow tool server
// whose caller's root arrived first) is no orphan: the join remembers the
// released trace's spans for the window (tail_sampling's decision cache).
// In another service than its parent it is a hop recorded not_required;
// nothing is unresolved.
func TestJoinLatePartOfAJudgedTrace(t *testing.T) {
	h := newHarness(t, configFrom(t, nil))
	parts := hopParts("t1")
	var whole []spanIn
	for _, p := range parts {
		whole = append(whole, p...)
	}
	whole = append(whole, spanIn{Trace: "t1", ID: "t1http", Parent: "t1root", Service: "orchestrator", Kind: "client"})
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, whole)))
	require.Len(t, h.sink.AllTraces(), 1, "complete: judged at once")
	late := []spanIn{
		{Trace: "t1", ID: "t1tool", Parent: "t1http", Service: "tools", Kind: "server"},
		{Trace: "t1", ID: "t1tool-db", Parent: "t1tool", Service: "tools", Kind: "client"},
	}
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, late)))
	require.Len(t, h.sink.AllTraces(), 2, "the late part leaves at once too")
	assert.Equal(t, map[string]int{resultNotRequired: 1}, countResults(h.sink.AllTraces()[1]))
	m := h.metrics(t)
	assert.Equal(t, int64(1), m["agent_identity.hops{callee_agent=,callee_service=tools,caller_service=orchestrator,result=not_required}"])
	for k := range m {
		assert.NotContains(t, k, "unresolved")
	}
}

// A batch of several traces (no groupbytrace before) is split by trace id;
// each trace is joined and judged on its own.
func TestJoinBatchOfTraces(t *testing.T) {
	h := newHarness(t, configFrom(t, nil))
	var batch []spanIn
	for _, tr := range []string{"t1", "t2"} {
		for _, p := range hopParts(tr) {
			batch = append(batch, p...)
		}
	}
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, batch)))
	assert.Equal(t, 10, h.sink.SpanCount())
	assert.Equal(t, int64(2), h.metrics(t)[forgotten])
}

// A required hop whose callee has no agent span of its own (a plain a2a-sdk
// executor) is judged once agent_wait passed, well before the hop window; a
// cancelled send of a long-running task leaves as soon as a poll in another
// trace brought the task's answer (not lost), before the window.
func TestJoinWaitsEndWithoutNewParts(t *testing.T) {
	h := startedHarness(t, map[string]any{"agent_wait": "200ms", "hop_window": "1m"})
	plain := hopParts("t1")
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, append(append(plain[0], plain[1]...), plain[2]...))))
	cancelled := []spanIn{
		{Trace: "t2", ID: "t2send", Service: "orchestrator", Kind: "client", Attrs: map[string]any{
			attrOperationName: operationInvokeAgent, attrConversationID: "ctx-2", attrRequestedID: "ctx-2",
			attrAnsweredBefore: true, attrTaskID: "task-2", attrTaskState: taskStateWorking, attrSendCancelled: true}},
		{Trace: "t2", ID: "t2entry", Parent: "t2send", Service: "specialist", Kind: "server",
			Attrs: map[string]any{attrConversationID: "ctx-2"}},
		{Trace: "t2", ID: "t2agent", Parent: "t2entry", Service: "specialist", Kind: "internal",
			Attrs: map[string]any{attrOperationName: operationInvokeAgent, attrConversationID: "ctx-2", attrResumed: true}},
	}
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, cancelled)))
	require.Eventually(t, func() bool { return h.sink.SpanCount() == 3 }, 5*time.Second, 10*time.Millisecond,
		"the plain callee's hop, after agent_wait")
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, []spanIn{
		{Trace: "t3", ID: "t3poll", Service: "orchestrator", Kind: "client", Attrs: map[string]any{
			attrTaskID: "task-2", attrTaskState: "TASK_STATE_COMPLETED"}},
	})))
	require.Eventually(t, func() bool { return h.sink.SpanCount() == 7 }, 5*time.Second, 10*time.Millisecond,
		"the cancelled send, once its task was polled to an answer")
	m := h.metrics(t)
	// t1's callee declares no resumed (state_unknown), t2's agent span does
	assert.Equal(t, int64(1), m["agent_identity.hops{callee_agent=,callee_service=specialist,caller_service=orchestrator,result=state_unknown}"])
	assert.Equal(t, int64(1), m["agent_identity.hops{callee_agent=,callee_service=specialist,caller_service=orchestrator,result=continued}"])
	for k := range m {
		assert.NotContains(t, k, "lost_responses")
	}
}

// A GetTask poll answered WORKING (its callee runs no agent for it) does not
// keep its trace waiting: the trace leaves once complete, the send's hop
// judged when the callee's agent span arrived.
func TestJoinPollIsNoSend(t *testing.T) {
	h := newHarness(t, configFrom(t, map[string]any{"agent_wait": "0s"}))
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, []spanIn{
		{ID: "root", Service: "orchestrator", Kind: "internal", Attrs: map[string]any{attrOperationName: operationInvokeAgent}},
		{ID: "poll", Parent: "root", Service: "orchestrator", Kind: "client", Attrs: map[string]any{
			attrMethodName: "GetTask", attrTaskID: "task-1", attrTaskState: taskStateWorking, attrConversationID: "ctx-1"}},
		{ID: "poll-server", Parent: "poll", Service: "specialist", Kind: "server", Attrs: map[string]any{
			attrMethodName: "GetTask", attrTaskID: "task-1", attrTaskState: taskStateWorking, attrConversationID: "ctx-1"}},
	})))
	assert.Equal(t, 3, h.sink.SpanCount(), "judged at once")
}

// A later turn judged before turn 1 (its trace completed first, in another
// batch) does not make turn 1 a later turn: the context memory keeps the
// earliest answered start. The callee forgets: turn 1 first_turn, turn 2
// (answered_before from the caller) state_not_resumed, both ways.
func TestJoinTurnsJudgedOutOfOrder(t *testing.T) {
	h := newHarness(t, configFrom(t, map[string]any{"agent_wait": "0s"}))
	turn := func(trace string, answeredBefore bool, at int64) ptrace.Traces {
		return buildTraces(t, []spanIn{
			{Trace: trace, ID: trace + "send", Service: "orchestrator", Kind: "client", Start: at, Attrs: map[string]any{
				attrOperationName: operationInvokeAgent, attrConversationID: "ctx-9", attrRequestedID: "ctx-9",
				attrDelegationID: "del-" + trace, attrAnsweredBefore: answeredBefore}},
			{Trace: trace, ID: trace + "entry", Parent: trace + "send", Service: "specialist", Kind: "server",
				Start: at + 1, Attrs: map[string]any{attrConversationID: "ctx-9"}},
			{Trace: trace, ID: trace + "agent", Parent: trace + "entry", Service: "specialist", Kind: "internal",
				Start: at + 2, Attrs: map[string]any{attrOperationName: operationInvokeAgent, attrAgentName: "specialist",
					attrConversationID: "ctx-9", attrResumed: false, attrExecutionID: "e-" + trace}},
		})
	}
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), turn("t2", true, 20))) // turn 2 first
	require.NoError(t, h.proc.ConsumeTraces(context.Background(), turn("t1", false, 10)))
	require.NoError(t, h.proc.Shutdown(context.Background()))
	got := h.metrics(t)
	assert.Equal(t, int64(1), got["agent_identity.hops{callee_agent=specialist,callee_service=specialist,caller_service=orchestrator,result=first_turn}"])
	assert.Equal(t, int64(1), got[hopsForgot])
}

// turnTo is one turn in context ctx-1 to callee (whose agent span says
// resumed), starting at `at` seconds. ours: the caller is of this
// instrumentation (a delegation id; turn 1 requests nothing, a later turn the
// context, without answered_before: it went to another replica's URL); else a
// caller with semconv spans only (a JS or Java agent), whose every turn
// requests the conversation it carries.
func turnTo(t *testing.T, trace, callee string, turn int, ours, resumed bool, at int64) ptrace.Traces {
	send := map[string]any{attrOperationName: operationInvokeAgent, attrConversationID: "ctx-1"}
	if ours {
		send[attrDelegationID] = "del-" + trace
		if turn > 1 {
			send[attrRequestedID] = "ctx-1"
		}
	}
	return buildTraces(t, []spanIn{
		{Trace: trace, ID: trace + "send", Service: "orchestrator", Kind: "client", Start: at, Attrs: send},
		{Trace: trace, ID: trace + "entry", Parent: trace + "send", Service: callee, Kind: "server", Start: at + 1,
			Attrs: map[string]any{attrConversationID: "ctx-1"}},
		{Trace: trace, ID: trace + "agent", Parent: trace + "entry", Service: callee, Kind: "internal", Start: at + 2,
			Attrs: map[string]any{attrOperationName: operationInvokeAgent, attrAgentName: callee,
				attrConversationID: "ctx-1", attrResumed: resumed && turn > 1, attrExecutionID: "e-" + trace}},
	})
}

func hopsOf(callee, result string) string {
	return fmt.Sprintf("agent_identity.hops{callee_agent=%s,callee_service=%s,caller_service=orchestrator,result=%s}",
		callee, callee, result)
}

// Turn 2's trace complete before turn 1's (its callee process exported
// first): turn 2, which would be a first turn only because the context memory
// knows no earlier answer, waits first_turn_wait; turn 1 arriving meanwhile
// makes it a later turn, judged at once (well before the wait ends):
// state_not_resumed for a callee that forgets, continued for one that
// continues, not first_turn.
func TestJoinLaterTurnWaitsForTurn1(t *testing.T) {
	for _, ours := range []bool{true, false} {
		t.Run(fmt.Sprintf("ours=%v", ours), func(t *testing.T) {
			h := startedHarness(t, map[string]any{"agent_wait": "0s", "first_turn_wait": "10m", "hop_window": "20m"})
			ctx := context.Background()
			require.NoError(t, h.proc.ConsumeTraces(ctx, turnTo(t, "f2", "forgets", 2, ours, false, 20)))
			require.NoError(t, h.proc.ConsumeTraces(ctx, turnTo(t, "c2", "continues", 2, ours, true, 20)))
			require.Zero(t, h.sink.SpanCount(), "turn 2 waits for an earlier turn")
			require.NoError(t, h.proc.ConsumeTraces(ctx, turnTo(t, "f1", "forgets", 1, ours, false, 10)))
			require.NoError(t, h.proc.ConsumeTraces(ctx, turnTo(t, "c1", "continues", 1, ours, true, 10)))
			want := 12 // every turn left (turn 1 of ours at once)
			if !ours {
				want = 6 // turn 1 of a semconv caller requested a context: it waits (a genuine first turn)
			}
			require.Eventually(t, func() bool { return h.sink.SpanCount() == want }, 10*time.Second, 10*time.Millisecond,
				"turn 2 judged once turn 1 arrived, long before first_turn_wait")
			require.NoError(t, h.proc.Shutdown(ctx))
			m := h.metrics(t)
			assert.Equal(t, int64(1), m[hopsOf("forgets", resultStateNotResumed)])
			assert.Equal(t, int64(1), m[hopsOf("continues", resultContinued)])
			assert.Equal(t, int64(1), m[hopsOf("forgets", resultFirstTurn)])
			assert.Equal(t, int64(1), m[hopsOf("continues", resultFirstTurn)])
		})
	}
}

// A genuine first turn in a context the client named (no earlier turn ever
// comes) is judged first_turn once first_turn_wait passed, not before; a
// later turn whose caller says answered_before does not wait.
func TestJoinClientMintedFirstTurnAfterTheWait(t *testing.T) {
	h := startedHarness(t, map[string]any{"agent_wait": "0s", "first_turn_wait": "300ms", "hop_window": "1m"})
	ctx := context.Background()
	start := time.Now()
	minted := turnTo(t, "m1", "forgets", 2, true, false, 10) // requests ctx-1, nothing answered in it yet
	require.NoError(t, h.proc.ConsumeTraces(ctx, minted))
	require.Eventually(t, func() bool { return h.sink.SpanCount() == 3 }, 10*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "held first_turn_wait")
	assert.Equal(t, map[string]int{resultFirstTurn: 1}, countResults(h.sink.AllTraces()[0]))

	told := hopParts("t9") // answered_before=true: compared at once
	var whole []spanIn
	for _, p := range told {
		whole = append(whole, p...)
	}
	require.NoError(t, h.proc.ConsumeTraces(ctx, buildTraces(t, whole)))
	assert.Equal(t, 8, h.sink.SpanCount(), "not held")
	assert.Equal(t, int64(1), h.metrics(t)[hopsForgot])
}
