// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// attributesDoc is THE attribute table, relative to this package.
var attributesDoc = filepath.Join("..", "..", "..", "docs", "attributes.md")

// tableRows returns name -> cells for the rows of the markdown table that
// follows heading (a row's name is read between its first pair of backticks).
func tableRows(t *testing.T, heading string) map[string][]string {
	raw, err := os.ReadFile(attributesDoc)
	require.NoError(t, err)
	rows := map[string][]string{}
	in := heading == ""
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			if in && len(rows) > 0 {
				break
			}
			in = heading == "" || strings.TrimSpace(strings.TrimLeft(line, "#")) == heading
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		name := strings.SplitN(cells[0], "`", 3)[1]
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[name] = cells
	}
	require.NotEmpty(t, rows, "no table under %q in %s", heading, attributesDoc)
	return rows
}

// stringConsts returns every string constant declared in a Go file.
func stringConsts(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}

func TestAttributesFollowTable(t *testing.T) {
	rows := tableRows(t, "")
	// Every agent_identity.* / gen_ai.* name in attributes.go is a row.
	for _, name := range stringConsts(t, "attributes.go") {
		if strings.HasPrefix(name, "agent_identity.") || strings.HasPrefix(name, "gen_ai.") {
			assert.Contains(t, rows, name, "attributes.go names %q, the table does not", name)
		}
	}
	// The attributes the processor writes are exactly the col rows.
	var colRows []string
	for name, cells := range rows {
		if len(cells) > 2 && strings.Contains(cells[2], "col") {
			colRows = append(colRows, name)
		}
	}
	written := append([]string(nil), writtenAttributes...)
	sort.Strings(colRows)
	sort.Strings(written)
	assert.Equal(t, colRows, written, "writtenAttributes and the table's col rows differ")
}

// TestMetricsFollowTable checks the counters declared in metadata.yaml (the
// generated TelemetryBuilder's names) against the table: the same names, each
// with the labels the table gives and metrics.go sets.
func TestMetricsFollowTable(t *testing.T) {
	rows := tableRows(t, "Metrics (collector)")
	cm, err := confmaptest.LoadConf("metadata.yaml")
	require.NoError(t, err)
	var md struct {
		Telemetry struct {
			Metrics map[string]struct {
				Prefix     string   `mapstructure:"prefix"`
				Attributes []string `mapstructure:"attributes"`
			} `mapstructure:"metrics"`
		} `mapstructure:"telemetry"`
	}
	require.NoError(t, cm.Unmarshal(&md, confmap.WithIgnoreUnused()))
	require.Len(t, md.Telemetry.Metrics, len(rows))
	labels := []string{labelCallerService, labelCalleeService, labelCalleeAgent, labelResult, labelReason, labelCallerStatus, labelStore}
	for key, m := range md.Telemetry.Metrics {
		prom := strings.ReplaceAll(m.Prefix+key, ".", "_")
		require.Contains(t, rows, prom)
		var got []string
		for _, l := range strings.Split(rows[prom][2], ",") {
			got = append(got, strings.Trim(strings.TrimSpace(l), "`"))
		}
		assert.ElementsMatch(t, m.Attributes, got, "labels of %s", prom)
		for _, l := range m.Attributes {
			assert.Contains(t, labels, l, "metrics.go does not set label %s of %s", l, prom)
		}
	}
}
