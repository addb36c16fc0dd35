// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.uber.org/zap"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/join"
	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/recall"
)

// Stores counted in agent_identity_evictions (label `store`).
const (
	storeHeldTraces  = "held_traces"
	storeContexts    = "contexts"
	storeDelegations = "delegations"
	storeTasks       = "tasks"
)

// joiner holds traces until their hops can be judged (internal/join) and
// passes released traces on: at once from ConsumeTraces when a fragment
// completes its trace, else from its own goroutine (window expiry, a
// follow-up seen in another trace) and at Shutdown, to next.
type joiner struct {
	store  *join.Store
	next   consumer.Traces
	logger *zap.Logger
	tick   time.Duration
	// agentWait: how long a required hop waits for the callee's agent span;
	// firstTurnWait: how long a provisional first turn waits for an earlier
	// turn (complete.go)
	agentWait, firstTurnWait time.Duration
	stop                     chan struct{}
	done                     chan struct{}
	once                     sync.Once
	// started: the goroutine runs (Start was called)
	started bool
}

// memories are the cross-trace memories (internal/recall): never nil once
// the processor is built (in memory; read from and written to `storage` once
// started with one).
type memories struct {
	contexts, delegations, tasks *recall.Table
}

func newMemories(cfg *Join) memories {
	open := func(n int) *recall.Table {
		t, _ := recall.Open(context.Background(), nil, n, 0, nil) // cannot fail without storage
		return t
	}
	return memories{
		contexts:    open(orDefault(cfg.ContextSlots, defaultContextSlots)),
		delegations: open(orDefault(cfg.DelegationSlots, defaultDelegationSlots)),
		tasks:       open(orDefault(cfg.TaskSlots, defaultTaskSlots)),
	}
}

// openMemories opens the memories in the storage extension id (one client
// each), replacing the in-memory ones.
func (p *identityProcessor) openMemories(ctx context.Context, host component.Host, self component.ID,
	id component.ID, cfg *Join, logger *zap.Logger) error {
	var m memories
	for _, t := range []struct {
		name string
		n    int
		dst  **recall.Table
	}{
		{storeContexts, orDefault(cfg.ContextSlots, defaultContextSlots), &m.contexts},
		{storeDelegations, orDefault(cfg.DelegationSlots, defaultDelegationSlots), &m.delegations},
		{storeTasks, orDefault(cfg.TaskSlots, defaultTaskSlots), &m.tasks},
	} {
		client, err := recall.Client(ctx, host, id, self, t.name)
		if err != nil {
			return errors.Join(err, m.close(ctx))
		}
		if *t.dst, err = recall.Open(ctx, client, t.n, time.Second, logger); err != nil {
			return errors.Join(err, client.Close(ctx), m.close(ctx))
		}
	}
	p.mem = m
	return nil
}

func (m memories) close(ctx context.Context) error {
	return errors.Join(m.contexts.Close(ctx), m.delegations.Close(ctx), m.tasks.Close(ctx))
}

func newJoiner(p *identityProcessor, cfg *Join, next consumer.Traces, logger *zap.Logger) *joiner {
	if cfg.HopWindow <= 0 {
		return nil
	}
	return &joiner{
		store:         join.New(cfg.HopWindow, cfg.AgentWait, cfg.MaxHeldSpans, p.complete, serviceName, awaitsFollowUp),
		next:          next,
		logger:        logger,
		tick:          min(cfg.HopWindow/10, time.Second),
		agentWait:     cfg.AgentWait,
		firstTurnWait: cfg.FirstTurnWait,
		stop:          make(chan struct{}),
		done:          make(chan struct{}),
	}
}

// consume is processTraces with the join: it returns the traces this batch
// completed, judged, or ErrSkipProcessingData when it completed none.
func (p *identityProcessor) consume(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	if td.SpanCount() == 0 {
		return td, nil
	}
	p.noteFollowUps(td)
	ids, frags := join.Split(td)
	now := time.Now()
	var rel []join.Released
	for i, tid := range ids {
		rel = append(rel, p.joiner.store.Add(tid, frags[i], now)...)
	}
	if len(rel) == 0 {
		return td, processorhelper.ErrSkipProcessingData
	}
	return p.judgeReleased(ctx, rel), nil
}

// judgeReleased judges each released trace and returns them as one batch.
func (p *identityProcessor) judgeReleased(ctx context.Context, rel []join.Released) ptrace.Traces {
	out := ptrace.NewTraces()
	evicted := int64(0)
	inStartOrder(rel)
	for _, r := range rel {
		if r.Reason == join.Evicted {
			evicted++
		}
		p.judgeWith(ctx, r.Traces, r.Earlier).ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	if evicted > 0 {
		p.ins.evicted(ctx, storeHeldTraces, evicted)
	}
	return out
}

// run releases, every tick, the traces whose window passed and those that
// became complete (a follow-up in another trace, a wait that ended), and
// everything at stop.
func (p *identityProcessor) run() {
	j := p.joiner
	defer close(j.done)
	t := time.NewTicker(j.tick)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			p.emit(append(j.store.Expired(now), j.store.Recheck(now)...))
		case <-j.stop:
			p.emit(j.store.Drain(time.Now()))
			return
		}
	}
}

// emit judges rel and passes it to the next consumer (the processor's own
// call: what groupbytrace and tail_sampling do with what they release).
func (p *identityProcessor) emit(rel []join.Released) {
	if len(rel) == 0 {
		return
	}
	ctx := context.Background()
	td := p.judgeReleased(ctx, rel)
	if err := p.joiner.next.ConsumeTraces(ctx, td); err != nil {
		p.joiner.logger.Warn("agentidentity: next consumer refused judged spans", zap.Error(err), zap.Int("spans", td.SpanCount()))
	}
}

func (j *joiner) start(p *identityProcessor) {
	if j != nil && !j.started {
		j.started = true
		go p.run()
	}
}

// shutdown releases every held trace to the next consumer (judged with what
// it has) and stops the goroutine. Safe to call twice, and without start.
func (j *joiner) shutdown(p *identityProcessor) {
	if j == nil {
		return
	}
	j.once.Do(func() {
		close(j.stop)
		if j.started {
			<-j.done
		} else {
			p.emit(j.store.Drain(time.Now()))
		}
	})
}
