// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/recall"
)

// defaultMemorySlots is the default of `memory_slots`.
const defaultMemorySlots = 1 << 16

// memoryFlushInterval is how often the memory writes what it learnt to storage.
const memoryFlushInterval = 100 * time.Millisecond

// VerdictMemory is the part of Config that remembers which spans were judged,
// in a storage extension, so a trace delivered again (at-least-once delivery:
// a sender that did not see the answer re-sends, e.g. the persistent queue of
// tier2-identity.yaml after a SIGKILL) is judged again but not counted again.
type VerdictMemory struct {
	// Storage is the id of a storage extension (e.g. `file_storage`) that
	// keeps the memory across restarts. Zero value and default: no memory;
	// every delivery of a trace is judged and counted.
	Storage *component.ID `mapstructure:"storage"`

	// MemorySlots bounds the memory: one slot (24 bytes in memory, 28 in a
	// storage record) per verdict span, hashed by span id; a newer verdict span
	// hashed to the same slot replaces the older one. A re-delivery is
	// recognised while its spans are still in their slots: with N slots,
	// after n later verdict spans about exp(-n/N) of them are (N = 65,536:
	// 78 % after a minute at 250 traces/s). Zero value: 65,536.
	MemorySlots int `mapstructure:"memory_slots"`
}

var errMemorySlots = errors.New("`memory_slots` must not be negative")

func (m *VerdictMemory) validate() error {
	if m.MemorySlots < 0 {
		return errMemorySlots
	}
	return nil
}

// verdictMemory is the open memory of one processor: a recall.Table of
// `memory_slots` slots, each a verdict span's trace and span id, read from
// storage at start and written behind every memoryFlushInterval in one
// transaction (a storage transaction per trace would cost more than the rest
// of the pipeline; the layout is recall's: records of changed slots, then a
// snapshot). A SIGKILL loses the last interval's slots: a trace judged in it
// and sent again is counted again (docs/reliability.md).
type verdictMemory struct {
	*recall.Table
	client     storage.Client
	duplicates metric.Int64Counter // agent_identity.duplicate_verdicts: verdicts given again, not counted again
}

// openMemory opens the storage client of cfg.Storage on host, reads the
// slots it holds and starts the writer; nil when no storage is configured.
func openMemory(ctx context.Context, host component.Host, id component.ID, cfg *VerdictMemory,
	duplicates metric.Int64Counter, logger *zap.Logger) (*verdictMemory, error) {
	if cfg.Storage == nil {
		return nil, nil
	}
	client, err := recall.Client(ctx, host, *cfg.Storage, id, "verdicts")
	if err != nil {
		return nil, err
	}
	n := cfg.MemorySlots
	if n == 0 {
		n = defaultMemorySlots
	}
	t, err := recall.Open(ctx, client, n, memoryFlushInterval, logger)
	if err != nil {
		return nil, errors.Join(err, client.Close(ctx))
	}
	return &verdictMemory{Table: t, client: client, duplicates: duplicates}, nil
}

func (m *verdictMemory) close(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.Close(ctx)
}

// seenAll records keys (trace id + span id of each verdict span) and reports
// whether every one of them was recorded before.
func (m *verdictMemory) seenAll(keys [][24]byte) bool {
	all := true
	for _, k := range keys {
		if !m.Set(m.slot(k), k) {
			all = false
		}
	}
	return all
}

// slot is the index of k: span ids are random, so their bits spread evenly.
func (m *verdictMemory) slot(k [24]byte) uint32 {
	return uint32((binary.LittleEndian.Uint64(k[16:]) ^ binary.LittleEndian.Uint64(k[8:16])) % uint64(m.Len()))
}

// processTraceOnce judges one trace like processTrace, then asks the memory
// whether its verdict spans (the spans marked agent_identity.hop.result) were
// all judged before: if so the trace is a re-delivery, its verdict spans are
// marked agent_identity.verdict.duplicate=true and nothing of it is counted;
// else its counts go into t. A re-delivery merged with spans not judged
// before (a late fragment) is counted again as a whole.
func (p *identityProcessor) processTraceOnce(ctx context.Context, spans []spanRef, sc *scratch, t *tally) {
	own := &sc.own
	defer own.reset()
	p.processTrace(spans, sc, own)
	keys, marked := sc.keys[:0], sc.marked[:0]
	for i, s := range spans {
		if _, ok := s.span.Attributes().Get(attrHopResult); ok {
			var k [24]byte
			tid, sid := s.span.TraceID(), s.span.SpanID()
			copy(k[:16], tid[:])
			copy(k[16:], sid[:])
			keys = append(keys, k)
			marked = append(marked, int32(i))
		}
	}
	sc.keys, sc.marked = keys, marked
	if len(keys) == 0 || !p.memory.seenAll(keys) {
		t.merge(own)
		return
	}
	p.markDuplicateVerdicts(ctx, spans, marked)
}

// markDuplicateVerdicts marks the verdict spans of a re-delivered trace and
// counts them by callee service.
func (p *identityProcessor) markDuplicateVerdicts(ctx context.Context, spans []spanRef, marked []int32) {
	bySvc := map[string]int64{}
	for _, i := range marked {
		spans[i].span.Attributes().PutBool(attrVerdictDuplicate, true)
		bySvc[serviceLabel(spans[i].service)]++
	}
	for svc, n := range bySvc {
		p.memory.duplicates.Add(ctx, n, metric.WithAttributes(attribute.String(labelCalleeService, svc)))
	}
}

// merge adds o's counts to t.
func (t *tally) merge(o *tally) {
	mergeCounts(&t.hops, o.hops)
	mergeCounts(&t.unresolved, o.unresolved)
	mergeCounts(&t.duplicates, o.duplicates)
	mergeCounts(&t.noCallee, o.noCallee)
	mergeCounts(&t.deliveries, o.deliveries)
	mergeCounts(&t.lostResponses, o.lostResponses)
	mergeCounts(&t.evictions, o.evictions)
}

func mergeCounts[K comparable](dst *counts[K], src counts[K]) {
	for _, c := range src {
		dst.add(c.key, c.n)
	}
}
