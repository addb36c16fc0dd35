// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"
)

// storageHost is a host with one real file_storage extension.
type storageHost struct {
	exts map[component.ID]component.Component
}

func (h storageHost) GetExtensions() map[component.ID]component.Component { return h.exts }

// startFileStorage starts a file_storage extension over dir; the caller shuts it down.
func startFileStorage(t testing.TB, dir string) (component.ID, extension.Extension) {
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	cfg.Compaction.Directory = dir
	id := component.NewID(f.Type())
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), storageHost{}))
	return id, ext
}

// hopTrace: caller A asks B to continue conversation c; B continues it.
func hopTrace(t *testing.T, trace string) ptrace.Traces {
	return buildTraces(t, []spanIn{
		{Trace: trace, ID: trace + "-client", Service: "a", Kind: "client",
			Attrs: map[string]any{attrOperationName: operationInvokeAgent, attrConversationID: "c", attrRequestedID: "c", attrAnsweredBefore: true}},
		{Trace: trace, ID: trace + "-server", Parent: trace + "-client", Service: "b", Kind: "server",
			Attrs: map[string]any{attrConversationID: "c"}},
	})
}

// A trace delivered again after a restart (same storage, new process) is
// judged again, its verdict marked duplicate and counted once, in
// agent_identity_duplicate_verdicts rather than agent_identity_hops; a new
// trace is counted as usual. The memory lives in a real file_storage.
func TestRedeliveryAfterRestartIsMarkedNotCounted(t *testing.T) {
	dir := t.TempDir()
	run := func(traces ...string) (map[string]int64, []ptrace.Traces) {
		id, ext := startFileStorage(t, dir)
		defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()
		cfg := configFrom(t, nil)
		cfg.Storage = &id
		cfg.MemorySlots = 1 << 10
		cfg.AgentWait = 0
		h := newHarness(t, cfg)
		require.NoError(t, h.proc.Start(context.Background(), storageHost{exts: map[component.ID]component.Component{id: ext}}))
		for _, tr := range traces {
			require.NoError(t, h.proc.ConsumeTraces(context.Background(), hopTrace(t, tr)))
		}
		m := h.metrics(t)
		require.NoError(t, h.proc.Shutdown(context.Background()))
		return m, h.sink.AllTraces()
	}
	first, _ := run("t1")
	assert.Equal(t, int64(1), first["agent_identity.hops{callee_agent=,callee_service=b,caller_service=a,result=continued}"])

	second, out := run("t1", "t2")
	assert.Equal(t, int64(1), second["agent_identity.hops{callee_agent=,callee_service=b,caller_service=a,result=continued}"],
		"t1 again is not counted, t2 is")
	assert.Equal(t, int64(1), second["agent_identity.duplicate_verdicts{callee_service=b}"])
	require.Len(t, out, 2)
	server := func(td ptrace.Traces) ptrace.Span { return td.ResourceSpans().At(1).ScopeSpans().At(0).Spans().At(0) }
	dup, ok := server(out[0]).Attributes().Get(attrVerdictDuplicate)
	assert.True(t, ok && dup.Bool(), "the re-judged verdict is marked")
	assert.Equal(t, "continued", strAttr(server(out[0]), attrHopResult), "and still carries its verdict")
	_, ok = server(out[1]).Attributes().Get(attrVerdictDuplicate)
	assert.False(t, ok, "a first verdict is not marked")
}

// The memory is written as records of changed slots and, once they hold as
// many slots as the memory, one snapshot replacing them: reopened (a restart)
// it holds exactly the slots it held, in either state, and the store stays
// bounded. Slots of the older layout (one key per slot) are read, then
// deleted with the first snapshot.
func TestMemoryRecordsAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	const slots = 16
	open := func() (*verdictMemory, func() int) {
		id, ext := startFileStorage(t, dir)
		t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
		m, err := openMemory(context.Background(), storageHost{exts: map[component.ID]component.Component{id: ext}},
			component.NewID(componentType), &VerdictMemory{Storage: &id, MemorySlots: slots}, noop.Int64Counter{}, zap.NewNop())
		require.NoError(t, err)
		keys := func() int {
			n := 0
			require.NoError(t, m.client.(storage.Walker).Walk(context.Background(), func(string, []byte) ([]*storage.Operation, error) {
				n++
				return nil, nil
			}))
			return n
		}
		return m, keys
	}
	key := func(n uint64) [24]byte {
		var k [24]byte
		binary.LittleEndian.PutUint64(k[16:], n*0x9e3779b97f4a7c15)
		k[0] = byte(n)
		return k
	}

	m, _ := open()
	legacy := key(1000)
	i := m.slot(legacy)
	require.NoError(t, m.client.Set(context.Background(), strconv.FormatUint(uint64(i), 36), legacy[:]))
	require.NoError(t, m.close(context.Background()))

	m, keys := open()
	assert.True(t, m.seenAll([][24]byte{legacy}), "a slot of the older layout is read")
	for round := range uint64(5) { // 5 writes of 5 slots: records, then a snapshot, then records
		batch := make([][24]byte, 5)
		for j := range batch {
			batch[j] = key(round*5 + uint64(j))
		}
		m.seenAll(batch)
		m.Flush()
		assert.LessOrEqual(t, keys(), 1+slots/5+2, "records are replaced by a snapshot")
	}
	want := m.Slots()
	require.NoError(t, m.close(context.Background()))

	m, _ = open()
	assert.Equal(t, want, m.Slots(), "a restart reads the snapshot and the records after it")
	require.NoError(t, m.close(context.Background()))
}

func TestMemoryNeedsAStorageExtension(t *testing.T) {
	cfg := configFrom(t, map[string]any{"storage": "file_storage"})
	h := newHarness(t, cfg)
	assert.ErrorContains(t, h.proc.Start(context.Background(), storageHost{}), "not found")
	assert.Error(t, (&Config{VerdictMemory: VerdictMemory{MemorySlots: -1}}).Validate())
}

// BenchmarkVerdictMemory is the memory's cost per trace of one verdict span
// (the loadgen shape): a slot read and written in memory, written to a real file_storage every 100 ms.
func BenchmarkVerdictMemory(b *testing.B) {
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory, cfg.Compaction.Directory = b.TempDir(), b.TempDir()
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(b, err)
	require.NoError(b, ext.Start(context.Background(), storageHost{}))
	defer func() { require.NoError(b, ext.Shutdown(context.Background())) }()
	id := component.NewID(f.Type())
	m, err := openMemory(context.Background(), storageHost{exts: map[component.ID]component.Component{id: ext}},
		component.NewID(componentType), &VerdictMemory{Storage: &id}, noop.Int64Counter{}, zap.NewNop())
	require.NoError(b, err)
	defer func() { require.NoError(b, m.close(context.Background())) }()
	var k [24]byte
	n := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		n++
		binary.LittleEndian.PutUint64(k[16:], n*0x9e3779b97f4a7c15)
		m.seenAll([][24]byte{k})
	}
}
