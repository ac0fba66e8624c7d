package relay

import (
	"path"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/voice"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/externalapps"
	"github.com/voicebox-go/voicebox/internal/door/mcp"
)

// TestEveryStateFileHasOneOwner: the core's state files and each door's (Door.StateFiles) are
// apart, so a door never reads or replaces a file another part keeps.
func TestEveryStateFileHasOneOwner(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	for _, f := range []string{hoststate.HostTokenFile, hoststate.PairingsFile, voice.KeysFile, voice.SettingsFile, core.ACMECacheDir, core.ControlSocketFile} {
		owner[f] = "the core"
	}
	for _, d := range []core.Door{&extensionhost.Door{}, &externalapps.Door{}, &mcp.Door{}} {
		for _, f := range d.StateFiles() {
			for name, o := range owner {
				if m, _ := path.Match(f, name); m || name == f {
					t.Errorf("%s is kept by %s, and the %s door keeps %s", name, o, d.Name(), f)
				}
			}
			owner[f] = "the " + d.Name() + " door"
		}
	}
	if len(owner) < 10 {
		t.Fatalf("only %d state files found: %v", len(owner), owner)
	}
}
