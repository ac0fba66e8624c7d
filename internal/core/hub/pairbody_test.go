package hub

import (
	"net/http"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestPairingTakesTheOriginalsEnvKey: POST /api/pair {envKey} pairs that name, as the
// original's body does; the bearer it mints connects; two different names in one body are
// refused, and DELETE takes envKey too.
func TestPairingTakesTheOriginalsEnvKey(t *testing.T) {
	t.Parallel()
	r := startRelay(t, Options{}, server.Config{})
	status, m := r.post(t, http.MethodPost, "/api/pair", map[string]any{"envKey": "laptop"}, true)
	bearer, _ := m["bearer"].(string)
	if status != http.StatusOK || m["name"] != "laptop" || !strings.HasPrefix(bearer, hoststate.BearerPrefix) {
		t.Fatalf("POST /api/pair {envKey}: %d %v", status, m)
	}
	r.machine(t, bearer, nil) // it waits until the environment holds the root
	if status, m := r.post(t, http.MethodPost, "/api/pair", map[string]any{"envKey": "laptop", "name": "desk"}, true); status != http.StatusBadRequest || refused(m) != refusal.InvalidArgument {
		t.Fatalf("two names answered %d %v", status, m)
	}
	if status, m := r.post(t, http.MethodPost, "/api/pair", map[string]any{"envKey": "laptop", "name": "laptop"}, true); status != http.StatusOK {
		t.Fatalf("the same name twice answered %d %v", status, m)
	}
	if status, m := r.post(t, http.MethodDelete, "/api/pair", map[string]any{"envKey": "laptop"}, true); status != http.StatusOK || m["name"] != "laptop" {
		t.Fatalf("DELETE /api/pair {envKey}: %d %v", status, m)
	}
	if ps, _ := r.state.List(); len(ps) != 0 {
		t.Fatalf("after the unpairing the pairings are %v", ps)
	}
}
