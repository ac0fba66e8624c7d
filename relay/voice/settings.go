package voice

import (
	"encoding/json"
	"sync"

	"github.com/voicebox-go/voicebox/relay/hoststate"
	"github.com/voicebox-go/voicebox/relay/live"
)

// SettingsFile is the state file the agent settings are kept in.
const SettingsFile = ".agent-settings.json"

// DefaultProvider is the provider of a relay whose settings were never changed.
const DefaultProvider = "gemini"

// maxSettingsFileBytes bounds what is read of SettingsFile.
const maxSettingsFileBytes = 16 << 10

// Settings are the agent settings: which provider, model, voice and thinking depth the next live
// session uses. A change applies to the next session, never to one that runs. It is safe for
// concurrent use.
type Settings struct {
	reg   *live.Providers
	state *hoststate.Dir

	mu  sync.Mutex
	cur live.Choice
}

// NewSettings returns the settings kept in state (nil keeps them in memory only), starting from
// what was saved when it still resolves, else from the defaults.
func NewSettings(reg *live.Providers, state *hoststate.Dir) *Settings {
	s := &Settings{reg: reg, state: state}
	s.cur, _ = reg.Resolve(live.Choice{Provider: DefaultProvider})
	if state != nil {
		if b, err := state.ReadFile(SettingsFile, maxSettingsFileBytes); err == nil && b != nil {
			var c live.Choice
			if json.Unmarshal(b, &c) == nil {
				if c, err := reg.Resolve(c); err == nil {
					s.cur = c
				}
			}
		}
	}
	return s
}

// Current returns the settings the next session starts with.
func (s *Settings) Current() live.Choice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Set resolves c (see live.Providers.Resolve: a model or voice of another provider is refused),
// keeps it, and returns what was kept.
func (s *Settings) Set(c live.Choice) (live.Choice, error) {
	c, err := s.reg.Resolve(c)
	if err != nil {
		return live.Choice{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != nil {
		b, _ := json.MarshalIndent(c, "", "  ")
		if err := s.state.WriteFile(SettingsFile, append(b, '\n')); err != nil {
			return live.Choice{}, err
		}
	}
	s.cur = c
	return c, nil
}
