package voice

import (
	"path/filepath"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/live"
)

// TestTheEnvironmentChoosesTheDefaultProvider: as in the original, a saved (explicit) setting
// wins, then VOICEBOX_LIVE_PROVIDER, then its older name LIVE_PROVIDER, then Gemini. A variable
// naming a provider the relay does not offer is passed over.
func TestTheEnvironmentChoosesTheDefaultProvider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   map[string]string
		saved string // a provider saved in the settings file before the relay starts
		want  string
	}{
		{"nothing set", nil, "", "gemini"},
		{"the new name", map[string]string{"VOICEBOX_LIVE_PROVIDER": "openai"}, "", "openai"},
		{"the old name", map[string]string{"LIVE_PROVIDER": "openai"}, "", "openai"},
		{"the new name over the old", map[string]string{"VOICEBOX_LIVE_PROVIDER": "gemini", "LIVE_PROVIDER": "openai"}, "", "gemini"},
		{"an unknown provider is passed over", map[string]string{"VOICEBOX_LIVE_PROVIDER": "nope", "LIVE_PROVIDER": "openai"}, "", "openai"},
		{"an unknown provider alone leaves Gemini", map[string]string{"VOICEBOX_LIVE_PROVIDER": "nope"}, "", "gemini"},
		{"an empty value is unset", map[string]string{"VOICEBOX_LIVE_PROVIDER": "", "LIVE_PROVIDER": "openai"}, "", "openai"},
		{"a saved setting wins", map[string]string{"VOICEBOX_LIVE_PROVIDER": "openai"}, "gemini", "gemini"},
		{"a saved setting wins the other way", map[string]string{"LIVE_PROVIDER": "gemini"}, "openai", "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := Providers()
			var state *hoststate.Dir
			if tt.saved != "" {
				d, err := hoststate.Open(filepath.Join(t.TempDir(), "state"))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := newSettings(reg, d, func(string) string { return "" }).Set(live.Choice{Provider: tt.saved}); err != nil {
					t.Fatal(err)
				}
				state = d
			}
			got := newSettings(reg, state, func(k string) string { return tt.env[k] }).Current()
			if got.Provider != tt.want {
				t.Fatalf("provider %q, want %q", got.Provider, tt.want)
			}
			want, _ := reg.Resolve(live.Choice{Provider: tt.want})
			if got != want {
				t.Fatalf("choice %+v, want the provider's defaults %+v", got, want)
			}
		})
	}
}
