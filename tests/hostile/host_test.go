//go:build !js

package hostile

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestForeignHostNamesAreRefused is review item 7: a page of another site that a DNS answer
// pointed at 127.0.0.1 (DNS rebinding) sends its own name in Host and no Origin on a same-origin
// GET. It got the whole extensions listing; now every route refuses it before any handler runs,
// while loopback names (and *.localhost, where mini-apps get their own hosts) are served.
func TestForeignHostNamesAreRefused(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for _, path := range []string{"/api/extensions", "/api/root", "/", "/api/health"} {
		for _, host := range []string{"evil.example", "evil.example:" + relay.Port(), "localhost.evil.example", "127.0.0.1.nip.io:" + relay.Port()} {
			r := send(t, nil, http.MethodGet, relay.URL+path, map[string]string{"Host": host}, "")
			if !r.refused(http.StatusMisdirectedRequest, "host-refused") || strings.Contains(r.body, "catalogue") {
				t.Errorf("GET %s with Host %s answered %d %s", path, host, r.status, r.body)
			}
		}
	}
	// The socket routes refuse it too, before the upgrade.
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(relay.URL, "http")+"/channel", &websocket.DialOptions{Host: "evil.example"})
	if err == nil || resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a /channel upgrade with Host evil.example: %v %v", resp, err)
	}
	for _, host := range []string{"localhost:" + relay.Port(), "app-0123abcd.localhost:" + relay.Port(), "[::1]:" + relay.Port()} {
		if r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", map[string]string{"Host": host}, ""); r.status != http.StatusOK {
			t.Errorf("GET /api/extensions with Host %s answered %d %s", host, r.status, r.body)
		}
	}
	served(t, relay)
}
