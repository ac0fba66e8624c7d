//go:build !js

package hostile

import (
	"net/http"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestAnActionIsHeldToItsBoundAsSentAndMiniAppToolReachesNoBuiltIn: POST /api/turn {action}
// now passes the arguments on as the caller wrote them (the bound is measured on them, never on
// an escaped copy) and takes the original's {verb: "mini_app_tool", name, args}. The attacks:
// arguments one byte over the bound as sent, markup well under it that an encoder's escapes
// would put six times over it, a verb written twice, and mini_app_tool naming built-in tools
// (delete_file, which waits for a person's approval, and write_file) to run them by the back
// door. The walls: over the bound is invalid-tool-arguments; under it, the call reaches its
// next check (no workspace is open: root-not-declared); of two verbs the later is the one run
// and checked; mini_app_tool reaches only an open app's tools, unknown-tool for a built-in.
func TestAnActionIsHeldToItsBoundAsSentAndMiniAppToolReachesNoBuiltIn(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	page := map[string]string{"Origin": relay.URL}
	turn := func(action string) reply {
		t.Helper()
		return send(t, nil, http.MethodPost, relay.URL+"/api/turn", page, `{"action":`+action+`}`)
	}
	const bound = 65536 // toolschema.MaxArgumentBytes
	prefix := `{"name":"a.txt","content":"`
	over := strings.Repeat("<", bound-len(prefix)-len(`"}`)+1)
	if r := turn(`{"verb":"write_file","name":"a.txt","content":"` + over + `"}`); r.m["refused"] != "invalid-tool-arguments" || !strings.Contains(r.body, "65537 bytes") {
		t.Errorf("arguments one byte over the bound as sent answered %d %.300s", r.status, r.body)
	}
	under := strings.Repeat("<", 60000)
	if r := turn(`{"verb":"write_file","name":"a.txt","content":"` + under + `"}`); r.m["refused"] != "root-not-declared" {
		t.Errorf("60,000 '<' (360,000 bytes escaped) answered %d %.300s", r.status, r.body)
	}
	if r := turn(`{"verb":"list_tools","verb":"write_file","name":"a.txt"}`); r.m["refused"] != "missing-argument" || !strings.Contains(r.body, "content") {
		t.Errorf("two verbs answered %d %.300s; the later, write_file, must be the one checked", r.status, r.body)
	}
	for _, name := range []string{"delete_file", "write_file", "app_00000000__delete_file"} {
		r := turn(`{"verb":"mini_app_tool","name":"` + name + `","args":{"name":"a.txt","content":"x"}}`)
		if r.m["refused"] != "unknown-tool" || !strings.Contains(r.body, "no open mini-app") {
			t.Errorf("mini_app_tool %s answered %d %.300s", name, r.status, r.body)
		}
	}
	if r := turn(`{"verb":"list_tools"}`); r.status != http.StatusOK || r.m["ok"] != true {
		t.Errorf("the next action answered %d %.300s", r.status, r.body)
	}
	served(t, relay)
}

// TestPairingTakesOneNameInEitherSpelling: POST /api/pair now reads the original's envKey as
// the environment's name. The attacks: envKey without the host token; a body naming two
// environments (name and envKey differ), so that one is checked and the other paired; an envKey
// out of the name rule (a path, 300 bytes). The walls: host-token-required; invalid-argument for
// two names, nothing paired; the name rule holds for envKey (invalid-argument); the next pairing
// by envKey is served, under that name.
func TestPairingTakesOneNameInEitherSpelling(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	token := map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}
	pair := func(header map[string]string, body string) reply {
		t.Helper()
		return send(t, nil, http.MethodPost, relay.URL+"/api/pair", header, body)
	}
	if r := pair(nil, `{"envKey":"laptop"}`); !r.refused(http.StatusForbidden, "host-token-required") {
		t.Errorf("envKey without the host token answered %d %s", r.status, r.body)
	}
	if r := pair(token, `{"name":"laptop","envKey":"desk"}`); !r.refused(http.StatusBadRequest, "invalid-argument") {
		t.Errorf("two names answered %d %s", r.status, r.body)
	}
	for _, bad := range []string{"../../etc", strings.Repeat("a", 300)} {
		if r := pair(token, `{"envKey":"`+bad+`"}`); !r.refused(http.StatusBadRequest, "invalid-argument") {
			t.Errorf("envKey %.40q answered %d %s", bad, r.status, r.body)
		}
	}
	r := pair(token, `{"envKey":"laptop"}`)
	if bearer, _ := r.m["bearer"].(string); r.status != http.StatusOK || r.m["name"] != "laptop" || !strings.HasPrefix(bearer, "vbx_") {
		t.Fatalf("the next pairing answered %d %s", r.status, r.body)
	}
	served(t, relay)
}
