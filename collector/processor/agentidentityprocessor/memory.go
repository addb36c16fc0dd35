// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// defaultMemorySlots is the default of `memory_slots`.
const defaultMemorySlots = 1 << 20

// metricDuplicateVerdicts counts spans whose verdict was given again (a
// re-delivered trace) and so not counted a second time.
const metricDuplicateVerdicts = "agent_identity.duplicate_verdicts"

// VerdictMemory is the part of Config that remembers which spans were judged,
// in a storage extension, so a trace delivered again (at-least-once delivery:
// a sender that did not see the answer re-sends, e.g. the persistent queue of
// tier2-identity.yaml after a SIGKILL) is judged again but not counted again.
type VerdictMemory struct {
	// Storage is the id of a storage extension (e.g. `file_storage`) that
	// keeps the memory across restarts. Zero value and default: no memory;
	// every delivery of a trace is judged and counted.
	Storage *component.ID `mapstructure:"storage"`

	// MemorySlots bounds the memory: one storage key per slot, each holding
	// the trace and span id of the last verdict span hashed to it (24 bytes).
	// A re-delivery is recognised while its spans are still in their slots:
	// with N slots, after n later verdicts about exp(-n/N) of them are. Zero
	// value: 1,048,576 (1 Mi slots, ~40 MiB of storage).
	MemorySlots int `mapstructure:"memory_slots"`
}

var errMemorySlots = errors.New("`memory_slots` must not be negative")

func (m *VerdictMemory) validate() error {
	if m.MemorySlots < 0 {
		return errMemorySlots
	}
	return nil
}

// verdictMemory is the open memory of one processor.
type verdictMemory struct {
	client     storage.Client
	slots      uint64
	duplicates metric.Int64Counter
	logger     *zap.Logger
}

// openMemory opens the storage client of cfg.Storage on host, or returns nil
// when no storage is configured.
func openMemory(ctx context.Context, host component.Host, id component.ID, cfg *VerdictMemory,
	mp metric.MeterProvider, logger *zap.Logger) (*verdictMemory, error) {
	if cfg.Storage == nil {
		return nil, nil
	}
	ext, ok := host.GetExtensions()[*cfg.Storage]
	if !ok {
		return nil, fmt.Errorf("storage extension %q not found", cfg.Storage)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("extension %q is not a storage extension", cfg.Storage)
	}
	client, err := se.GetClient(ctx, component.KindProcessor, id, "verdicts")
	if err != nil {
		return nil, err
	}
	counter, err := mp.Meter(scopeName).Int64Counter(metricDuplicateVerdicts, metric.WithUnit("{span}"),
		metric.WithDescription("Verdict spans of a trace judged again (a re-delivery), not counted again."))
	if err != nil {
		return nil, errors.Join(err, client.Close(ctx))
	}
	slots := uint64(cfg.MemorySlots)
	if slots == 0 {
		slots = defaultMemorySlots
	}
	return &verdictMemory{client: client, slots: slots, duplicates: counter, logger: logger}, nil
}

func (m *verdictMemory) close(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.client.Close(ctx)
}

// seenAll records keys (trace id + span id of each verdict span) and reports
// whether every one of them was recorded before. A storage error counts as
// not seen: the trace is counted (possibly twice), never lost.
func (m *verdictMemory) seenAll(ctx context.Context, keys [][24]byte) bool {
	ops := make([]*storage.Operation, 0, 2*len(keys))
	for _, k := range keys {
		ops = append(ops, storage.GetOperation(m.slot(k)))
	}
	for i := range keys {
		ops = append(ops, storage.SetOperation(m.slot(keys[i]), keys[i][:]))
	}
	if err := m.client.Batch(ctx, ops...); err != nil {
		m.logger.Warn("verdict memory unavailable: counting the trace", zap.Error(err))
		return false
	}
	for i, k := range keys {
		if !bytes.Equal(ops[i].Value, k[:]) {
			return false
		}
	}
	return true
}

// slot is the storage key of k: span ids are random, so their low bits
// spread evenly.
func (m *verdictMemory) slot(k [24]byte) string {
	return strconv.FormatUint((binary.LittleEndian.Uint64(k[16:])^binary.LittleEndian.Uint64(k[8:16]))%m.slots, 36)
}

// processTraceOnce judges one trace like processTrace, then asks the memory
// whether its verdict spans (the spans marked agent_identity.hop.result) were
// all judged before: if so the trace is a re-delivery, its verdict spans are
// marked agent_identity.verdict.duplicate=true and nothing of it is counted;
// else its counts go into t. A re-delivery merged with spans not judged
// before (a late fragment) is counted again as a whole.
func (p *identityProcessor) processTraceOnce(ctx context.Context, spans []spanRef, sc *scratch, t *tally) {
	var own tally
	p.processTrace(spans, sc, &own)
	var keys [][24]byte
	var marked []int
	for i, s := range spans {
		if _, ok := s.span.Attributes().Get(attrHopResult); ok {
			var k [24]byte
			tid, sid := s.span.TraceID(), s.span.SpanID()
			copy(k[:16], tid[:])
			copy(k[16:], sid[:])
			keys = append(keys, k)
			marked = append(marked, i)
		}
	}
	if len(keys) == 0 || !p.memory.seenAll(ctx, keys) {
		t.merge(&own)
		return
	}
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
}

func mergeCounts[K comparable](dst *map[K]int64, src map[K]int64) {
	for k, n := range src {
		if *dst == nil {
			*dst = make(map[K]int64, len(src))
		}
		(*dst)[k] += n
	}
}
