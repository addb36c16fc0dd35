// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		name    string
		want    *Config
		wantErr error
	}{
		{name: "", want: &Config{RequireContinuation: defaultRules(), Join: defaultJoin()}},
		{name: "backfill", want: &Config{Backfill: true, RequireContinuation: defaultRules(), Join: defaultJoin()}},
		{name: "pairs", want: &Config{RequireContinuation: []ContinuationRule{
			{CallerService: "orchestrator", CalleeService: "specialist"},
			{CallerSpanKind: "producer", CallerAttributes: map[string]string{
				"messaging.system": "kafka", "gen_ai.conversation.id": "",
			}},
		}, Join: defaultJoin()}},
		{name: "none", want: &Config{RequireContinuation: []ContinuationRule{}, Join: defaultJoin()}},
		{name: "join", want: &Config{RequireContinuation: defaultRules(), Join: Join{
			HopWindow: 90 * time.Second, AgentWait: 5 * time.Second, FirstTurnWait: 8 * time.Second, MaxHeldSpans: 1000,
			ContextSlots: 64, DelegationSlots: 32, TaskSlots: 16,
		}}},
		{name: "no_join", want: &Config{RequireContinuation: defaultRules(), Join: Join{AgentWait: defaultAgentWait,
			FirstTurnWait: defaultFirstTurnWait, MaxHeldSpans: defaultMaxHeldSpans}}},
		{name: "negative_window", wantErr: errJoinNegative},
		{name: "negative_first_turn_wait", wantErr: errJoinNegative},
		{name: "empty_rule", wantErr: errEmptyRule},
		{name: "bad_kind", wantErr: errSpanKind},
		{name: "empty_key", wantErr: errEmptyAttributeKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := component.NewIDWithName(componentType, tt.name)
			sub, err := cm.Sub(id.String())
			require.NoError(t, err)
			cfg := NewFactory().CreateDefaultConfig().(*Config)
			require.NoError(t, sub.Unmarshal(cfg))
			if tt.wantErr != nil {
				assert.ErrorIs(t, cfg.Validate(), tt.wantErr)
				return
			}
			require.NoError(t, cfg.Validate())
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(createDefaultConfig()))
}
