package voice

import (
	"encoding/json"
	"os"
	"sync"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/live"
)

// SettingsFile is the state file the agent settings are kept in.
const SettingsFile = ".agent-settings.json"

// DefaultProvider is the provider of a relay whose settings were never changed and whose
// environment names none (see ProviderEnv).
const DefaultProvider = "gemini"

// ProviderEnv are the environment variables that choose the default live provider, in the order
// they are read: the first one set to a provider the relay offers decides. A saved setting wins
// over both; LIVE_PROVIDER is the original Voicebox's older name.
var ProviderEnv = []string{"VOICEBOX_LIVE_PROVIDER", "LIVE_PROVIDER"}

// defaultChoice is the choice a relay starts from when nothing was saved: the provider the
// environment names (getenv reads it), or DefaultProvider. A variable naming a provider this
// relay does not offer is passed over rather than leaving the relay with no provider.
func defaultChoice(reg *live.Providers, getenv func(string) string) live.Choice {
	for _, name := range ProviderEnv {
		if p := getenv(name); p != "" {
			if c, err := reg.Resolve(live.Choice{Provider: p}); err == nil {
				return c
			}
		}
	}
	c, _ := reg.Resolve(live.Choice{Provider: DefaultProvider})
	return c
}

// maxSettingsFileBytes bounds what is read of SettingsFile.
const maxSettingsFileBytes = 16 << 10

// Settings are the agent settings: which provider, model, voice and thinking depth the next live
// session uses. A change applies to the next session, never to one that runs. It is safe for
// concurrent use.
type Settings struct {
	reg    *live.Providers
	state  hoststate.Files // nil: memory only
	shared bool            // others change state too: read it at every Current
	getenv func(string) string

	mu  sync.Mutex
	cur live.Choice
}

// NewSettings returns the settings kept in state (nil keeps them in memory only), starting from
// what was saved when it still resolves, else from the provider the environment names
// (ProviderEnv), else from DefaultProvider, each with its default model and voice.
func NewSettings(reg *live.Providers, state *hoststate.Dir) *Settings {
	return newSettings(reg, state, os.Getenv)
}

func newSettings(reg *live.Providers, state *hoststate.Dir, getenv func(string) string) *Settings {
	s := &Settings{reg: reg, getenv: getenv}
	if state != nil {
		s.state = state
	}
	s.cur, _ = s.load()
	return s
}

// NewSharedSettings returns the settings kept in files that other relays change too (a fleet's,
// internal/door/fleet.Files): they are read afresh for every Current, so a change made through any relay
// is the one the next session here starts with. While files cannot be read, Current keeps the
// last settings read.
func NewSharedSettings(reg *live.Providers, files hoststate.Files) *Settings {
	s := &Settings{reg: reg, state: files, shared: true, getenv: os.Getenv}
	s.cur, _ = s.load()
	return s
}

// load returns what was saved when it still resolves, else the environment's default; err says
// the saved settings could not be read.
func (s *Settings) load() (live.Choice, error) {
	c := defaultChoice(s.reg, s.getenv)
	if s.state == nil {
		return c, nil
	}
	b, err := s.state.ReadFile(SettingsFile, maxSettingsFileBytes)
	if err != nil {
		return c, err
	}
	if b != nil {
		var saved live.Choice
		if json.Unmarshal(b, &saved) == nil {
			if saved, err := s.reg.Resolve(saved); err == nil {
				c = saved
			}
		}
	}
	return c, nil
}

// Current returns the settings the next session starts with.
func (s *Settings) Current() live.Choice {
	if s.shared {
		c, err := s.load()
		s.mu.Lock()
		defer s.mu.Unlock()
		if err == nil {
			s.cur = c
		}
		return s.cur
	}
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
