//go:build !js

package hostile

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// patience bounds every wait of the suite; reaching it is a failure, never a measurement.
const patience = 30 * time.Second

// reply is an HTTP answer as the cases read it.
type reply struct {
	status int
	body   string
	m      map[string]any
}

// refused reports whether r is a JSON refusal of rule with status.
func (r reply) refused(status int, rule string) bool {
	return r.status == status && r.m["ok"] == false && r.m["refused"] == rule && r.m["why"] != ""
}

// clientFrom returns an HTTP client whose connections come from the loopback address ip (such as
// 127.0.0.2), so a case can be several clients of the relay at once.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: patience}
	return &http.Client{Timeout: patience, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

var plainClient = &http.Client{Timeout: patience}

// send makes one request with client (nil: from 127.0.0.1); header values of "" are left out.
func send(t testing.TB, client *http.Client, method, url string, header map[string]string, body string) reply {
	t.Helper()
	if client == nil {
		client = plainClient
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, body: string(b)}
	json.Unmarshal(b, &r.m)
	return r
}

// postJSON sends v as JSON to relay's path, with the host token when withToken.
func postJSON(t testing.TB, relay *harness.Relay, path string, v any, withToken bool) reply {
	t.Helper()
	b, _ := json.Marshal(v)
	header := map[string]string{}
	if withToken {
		header["X-Voicebox-Host-Token"] = relay.HostToken(t)
	}
	if raw, ok := v.(json.RawMessage); ok {
		b = raw
	}
	return send(t, nil, http.MethodPost, relay.URL+path, header, string(bytes.TrimSpace(b)))
}

// served checks that the relay still serves a legitimate request after an attack: its health,
// and the extensions listing a page reads (with the host token, which passes the gate).
func served(t testing.TB, relay *harness.Relay) {
	t.Helper()
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/health", nil, ""); r.status != http.StatusOK || r.m["ok"] != true {
		t.Fatalf("after the attack /api/health answered %d %s", r.status, r.body)
	}
	if r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}, ""); r.status != http.StatusOK || r.m["ok"] != true {
		t.Fatalf("after the attack GET /api/extensions answered %d %s", r.status, r.body)
	}
}

// waitFor polls cond until it holds, failing the case at patience.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %v", what, patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rootKind returns GET /api/root's kind when it is connected, else "" (asked with the host
// token, which passes the gate).
func rootKind(t testing.TB, relay *harness.Relay) string {
	t.Helper()
	r := send(t, nil, http.MethodGet, relay.URL+"/api/root", map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}, "")
	if r.m["connected"] != true {
		return ""
	}
	kind, _ := r.m["kind"].(string)
	return kind
}
