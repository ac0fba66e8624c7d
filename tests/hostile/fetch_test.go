//go:build !js

package hostile

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestASilentServerCannotHoldAnExtensionCall is review item 8: an http-get to a server that
// never answers waited as long as its caller did. It is refused fetch-timeout at the request's
// bound (the plan says so), and the next call is served.
func TestASilentServerCannotHoldAnExtensionCall(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/silent" {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte("answered"))
	}))
	t.Cleanup(func() { close(stop); up.Close() })
	host := strings.TrimPrefix(up.URL, "http://")
	relay := harness.StartRelay(t)
	desc := `{"id":"slow","name":"Slow","capabilities":["network"],"bounds":{"hosts":["` + host + `"],"maxRequests":10},
		"tools":[{"name":"silent","primitive":"http-get","url":"http://` + host + `/silent"},
		         {"name":"quick","primitive":"http-get","url":"http://` + host + `/quick"}]}`
	if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(desc), false); r.status != http.StatusOK {
		t.Fatalf("sideload: %d %s", r.status, r.body)
	}
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions/proposals/slow/plan", nil, ""); !strings.Contains(r.body, "each request at most 10s and a call at most 20s") {
		t.Fatalf("the plan does not state the time bounds: %s", r.body)
	}
	if r := postJSON(t, relay, "/api/extensions/admit", map[string]any{"id": "slow", "decision": "admit", "confirm": true}, true); r.status != http.StatusOK {
		t.Fatalf("admit: %d %s", r.status, r.body)
	}
	r := postJSON(t, relay, "/api/extensions/call", map[string]any{"extension": "slow", "tool": "silent"}, true)
	if r.m["refused"] != "fetch-timeout" || !strings.Contains(r.body, "10s") {
		t.Fatalf("the call to a silent server answered %s", r.body)
	}
	if r := postJSON(t, relay, "/api/extensions/call", map[string]any{"extension": "slow", "tool": "quick"}, true); r.m["ok"] != true || !strings.Contains(r.body, "answered") {
		t.Fatalf("the next call answered %s", r.body)
	}
	served(t, relay)
}
