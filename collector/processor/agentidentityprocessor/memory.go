// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
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

// verdictMemory is the open memory of one processor: every slot in memory
// (read from storage at start), and the slots changed since the last write,
// written to storage every memoryFlushInterval in one transaction (a storage
// transaction per trace would cost more than the rest of the pipeline). A
// SIGKILL loses the last interval's slots: a trace judged in it and sent
// again is counted again (docs/reliability.md).
//
// Storage layout: each write is one record, the interval's changed slots
// (memoryLogPrefix + sequence number: 4-byte slot index + 24-byte slot, each),
// appended at the end of the store's key order; one key per slot, updated in
// place, cost a B-tree update per verdict span and rewrote hundreds of pages
// per write (3.5 % of tier 2's CPU at its load limit). Once the records hold
// as many slots as the memory, the write replaces them with one snapshot of
// every slot (memorySnapshotKey) in the same transaction, so the store stays
// within about twice the memory's size.
type verdictMemory struct {
	client     storage.Client
	duplicates metric.Int64Counter // agent_identity.duplicate_verdicts: verdicts given again, not counted again
	logger     *zap.Logger

	mu      sync.Mutex
	slots   [][24]byte
	changed map[uint32]struct{}
	// seq numbers the next record; logged counts the slots in records since
	// the snapshot, logKeys their keys (plus keys of an older layout, deleted
	// with them)
	seq     uint64
	logged  int
	logKeys []string
	stop    chan struct{}
	done    chan struct{}
	closed  sync.Once
}

// Storage keys of the memory. '/' is not a base-36 digit: the older layout's
// keys (one per slot, base 36) never collide with them.
const (
	memorySnapshotKey = "v2/snapshot"
	memoryLogPrefix   = "v2/log/"
	memoryRecordSize  = 4 + 24
)

func memoryLogKey(seq uint64) string { return fmt.Sprintf("%s%016x", memoryLogPrefix, seq) }

// openMemory opens the storage client of cfg.Storage on host, reads the
// slots it holds and starts the writer; nil when no storage is configured.
func openMemory(ctx context.Context, host component.Host, id component.ID, cfg *VerdictMemory,
	duplicates metric.Int64Counter, logger *zap.Logger) (*verdictMemory, error) {
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
	n := cfg.MemorySlots
	if n == 0 {
		n = defaultMemorySlots
	}
	m := &verdictMemory{client: client, duplicates: duplicates, logger: logger, slots: make([][24]byte, n),
		changed: map[uint32]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := m.load(ctx); err != nil {
		return nil, errors.Join(err, client.Close(ctx))
	}
	go m.writer()
	return m, nil
}

// load reads the memory: the older layout's slots, then the snapshot, then
// the records in sequence order.
func (m *verdictMemory) load(ctx context.Context) error {
	w, ok := m.client.(storage.Walker)
	if !ok {
		return nil
	}
	var snapshot []byte
	records := map[string][]byte{}
	err := w.Walk(ctx, func(key string, value []byte) ([]*storage.Operation, error) {
		switch {
		case key == memorySnapshotKey:
			snapshot = slices.Clone(value)
		case strings.HasPrefix(key, memoryLogPrefix):
			records[key] = slices.Clone(value)
		default:
			if i, err := strconv.ParseUint(key, 36, 32); err == nil {
				if int(i) < len(m.slots) && len(value) == 24 {
					copy(m.slots[i][:], value)
				}
				m.logKeys = append(m.logKeys, key)
			}
		}
		return nil, nil
	})
	if err != nil {
		return err
	}
	for i := 0; i < len(m.slots) && (i+1)*24 <= len(snapshot); i++ {
		copy(m.slots[i][:], snapshot[i*24:])
	}
	keys := slices.Sorted(maps.Keys(records)) // fixed-width hex: key order is sequence order
	for _, key := range keys {
		rec := records[key]
		for ; len(rec) >= memoryRecordSize; rec = rec[memoryRecordSize:] {
			if i := binary.LittleEndian.Uint32(rec); int(i) < len(m.slots) {
				copy(m.slots[i][:], rec[4:memoryRecordSize])
			}
			m.logged++
		}
		if seq, err := strconv.ParseUint(key[len(memoryLogPrefix):], 16, 64); err == nil && seq >= m.seq {
			m.seq = seq + 1
		}
	}
	m.logKeys = append(m.logKeys, keys...)
	return nil
}

func (m *verdictMemory) writer() {
	defer close(m.done)
	tick := time.NewTicker(memoryFlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			m.flush()
		case <-m.stop:
			m.flush()
			return
		}
	}
}

// flush writes the changed slots in one storage transaction: one record, or
// the snapshot replacing every record. Only the writer goroutine calls it, so
// the transactions land in the order they were built.
func (m *verdictMemory) flush() {
	m.mu.Lock()
	if len(m.changed) == 0 {
		m.mu.Unlock()
		return
	}
	var ops []*storage.Operation
	if m.logged+len(m.changed) > len(m.slots) {
		snapshot := make([]byte, 0, 24*len(m.slots))
		for _, v := range m.slots {
			snapshot = append(snapshot, v[:]...)
		}
		ops = make([]*storage.Operation, 0, len(m.logKeys)+1)
		ops = append(ops, storage.SetOperation(memorySnapshotKey, snapshot))
		for _, k := range m.logKeys {
			ops = append(ops, storage.DeleteOperation(k))
		}
		m.logKeys, m.logged = m.logKeys[:0], 0
	} else {
		rec := make([]byte, 0, memoryRecordSize*len(m.changed))
		for i := range m.changed {
			rec = binary.LittleEndian.AppendUint32(rec, i)
			rec = append(rec, m.slots[i][:]...)
		}
		key := memoryLogKey(m.seq)
		m.seq++
		m.logged += len(m.changed)
		m.logKeys = append(m.logKeys, key)
		ops = []*storage.Operation{storage.SetOperation(key, rec)}
	}
	clear(m.changed)
	m.mu.Unlock()
	if err := m.client.Batch(context.Background(), ops...); err != nil {
		m.logger.Warn("verdict memory not written", zap.Error(err))
	}
}

func (m *verdictMemory) close(ctx context.Context) error {
	if m == nil {
		return nil
	}
	var err error
	m.closed.Do(func() {
		close(m.stop)
		<-m.done
		err = m.client.Close(ctx)
	})
	return err
}

// seenAll records keys (trace id + span id of each verdict span) and reports
// whether every one of them was recorded before.
func (m *verdictMemory) seenAll(keys [][24]byte) bool {
	all := true
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		i := m.slot(k)
		if m.slots[i] != k {
			all = false
			m.slots[i] = k
			m.changed[i] = struct{}{}
		}
	}
	return all
}

// slot is the index of k: span ids are random, so their bits spread evenly.
func (m *verdictMemory) slot(k [24]byte) uint32 {
	return uint32((binary.LittleEndian.Uint64(k[16:]) ^ binary.LittleEndian.Uint64(k[8:16])) % uint64(len(m.slots)))
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
