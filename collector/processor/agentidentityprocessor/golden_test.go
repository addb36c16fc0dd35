// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*/expected.json")

// goldenInput is testdata/golden/<case>/input.json: a config (as in collector
// YAML) and fragments, each sent to the processor as one batch.
type goldenInput struct {
	Config    map[string]any `json:"config"`
	Fragments [][]spanIn     `json:"fragments"`
}

type spanOut struct {
	ID      string         `json:"id"`
	Service any            `json:"service,omitempty"`
	Attrs   map[string]any `json:"attrs,omitempty"`
}

// goldenOutput is expected.json: every span that left, batch by batch (a
// trace leaves once its hops have their parts, or at Shutdown), and the
// counters.
type goldenOutput struct {
	Fragments [][]spanOut      `json:"fragments"`
	Metrics   map[string]int64 `json:"metrics"`
}

func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "golden", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "input.json"))
			require.NoError(t, err)
			var in goldenInput
			require.NoError(t, json.Unmarshal(raw, &in))
			h := newHarness(t, configFrom(t, in.Config))

			got := goldenOutput{Fragments: [][]spanOut{}}
			in_ := 0
			for k, frag := range in.Fragments {
				// a later fragment's spans start later (a later turn starts after
				// the one before it): default start 100 s a fragment further on
				frag = slices.Clone(frag)
				for i := range frag {
					if frag[i].Start == 0 {
						frag[i].Start = int64(100*k + i + 1)
					}
				}
				require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, frag)))
				in_ += len(frag)
			}
			// What the join still holds (a hop missing a part) leaves at
			// Shutdown, judged as at the end of the hop window.
			require.NoError(t, h.proc.Shutdown(context.Background()))
			out := 0
			for _, batch := range h.sink.AllTraces() {
				out += batch.SpanCount()
				var spans []spanOut
				for _, rs := range batch.ResourceSpans().All() {
					var svc any
					if v, ok := rs.Resource().Attributes().Get(attrServiceName); ok {
						svc = v.AsRaw()
					}
					for _, ss := range rs.ScopeSpans().All() {
						for _, s := range ss.Spans().All() {
							spans = append(spans, spanOut{ID: s.Name(), Service: svc, Attrs: s.Attributes().AsRaw()})
						}
					}
				}
				got.Fragments = append(got.Fragments, spans)
			}
			require.Equal(t, in_, out, "every span that enters leaves")
			got.Metrics = h.metrics(t)

			gotJSON, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			path := filepath.Join(dir, "expected.json")
			if *update {
				require.NoError(t, os.WriteFile(path, append(gotJSON, '\n'), 0o600))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run `go test -run TestGolden -update` to create it")
			assert.JSONEq(t, string(want), string(gotJSON))
		})
	}
}

// readGolden returns the first fragment of a golden case's input.
func readGolden(name string) ([]spanIn, error) {
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", name, "input.json"))
	if err != nil {
		return nil, err
	}
	var in goldenInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	return in.Fragments[0], nil
}
