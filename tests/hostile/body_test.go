//go:build !js

package hostile

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// headersOnlyWait bounds how long the headers-only case waits for its answer. It is half the
// relay's idle bound for a body (server.BodyIdleTimeout, 10 s): a relay that reads the body
// before it answers can only answer after that bound runs out, so the answer arriving within
// this wait, with no body byte sent, is the wall. It is generous for a loaded machine, where the
// answer takes milliseconds.
const headersOnlyWait = 5 * time.Second

// TestABodyRefusedByItsHeadersIsRefusedAtOnce: a request whose headers already say it will be
// refused (a Content-Length over the route's bound, a type that is not JSON, no host token) is
// answered 413 body-too-large, 415 unsupported-content-type, 403 host-token-required, 403
// origin-refused (another site's page, a sandboxed frame), 421 host-refused (a rebound name) or
// 404 not-found (an answer that never needed the body) before a single body byte is sent,
// and its connection is closed, instead of the relay waiting out the body's idle bound for a
// body the client never sends.
func TestABodyRefusedByItsHeadersIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	token := relay.HostToken(t)
	host := strings.TrimPrefix(relay.URL, "http://")
	cases := []struct {
		name, path, token, ctype, length string
		status                           int
		rule                             string
		extra                            string // more header lines, each ending in CRLF
		host                             string // the Host header, when not the relay's
	}{
		{name: "over the bound", path: "/api/extensions/revoke", token: token, ctype: "application/json", length: "10000000", status: http.StatusRequestEntityTooLarge, rule: "body-too-large"},
		{name: "not JSON", path: "/api/extensions/revoke", token: token, ctype: "text/plain", length: "1000", status: http.StatusUnsupportedMediaType, rule: "unsupported-content-type"},
		{name: "no host token", path: "/api/extensions/admit", ctype: "application/json", length: "1000", status: http.StatusForbidden, rule: "host-token-required"},
		{name: "another site's page", path: "/api/extensions/revoke", token: token, ctype: "application/json", length: "1000", status: http.StatusForbidden, rule: "origin-refused", extra: "Origin: http://evil.example\r\n"},
		{name: "a sandboxed frame", path: "/api/extensions/revoke", token: token, ctype: "application/json", length: "1000", status: http.StatusForbidden, rule: "origin-refused", extra: "Origin: null\r\n"},
		{name: "an address that serves nothing", path: "/api/nothing-here", token: token, ctype: "application/json", length: "1000", status: http.StatusNotFound, rule: "not-found"},
		{name: "a route that takes no such method", path: "/api/health", token: token, ctype: "application/json", length: "1000", status: http.StatusNotFound, rule: "not-found"},
		{name: "a rebound name", path: "/api/extensions/revoke", token: token, ctype: "application/json", length: "1000", status: http.StatusMisdirectedRequest, rule: "host-refused", host: "evil.example"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", host, patience)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := "POST " + c.path + " HTTP/1.1\r\nHost: " + cmp.Or(c.host, host) + "\r\nX-Voicebox-Host-Token: " + c.token +
				"\r\nContent-Type: " + c.ctype + "\r\nContent-Length: " + c.length + "\r\n" + c.extra + "\r\n"
			if _, err := io.WriteString(conn, head); err != nil {
				t.Fatal(err)
			}
			// No body byte is ever written: the answer must come from the headers alone.
			conn.SetReadDeadline(time.Now().Add(headersOnlyWait))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer within %v with the body unsent (the relay waits for it): %v", headersOnlyWait, err)
			}
			b, _ := io.ReadAll(resp.Body)
			var m map[string]any
			json.Unmarshal(b, &m)
			if resp.StatusCode != c.status || m["refused"] != c.rule || m["why"] == "" {
				t.Fatalf("answered %d %s; want %d %s", resp.StatusCode, b, c.status, c.rule)
			}
			if !resp.Close {
				t.Fatalf("the answer keeps the connection (Connection: %q); the unsent body would be read as the next request", resp.Header.Get("Connection"))
			}
			if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("the relay did not close the connection after the answer: %d, %v", n, err)
			}
		})
	}
	served(t, relay)
}
