package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// chunked is a reader without a length, so the client sends it chunked.
type chunked struct{ io.Reader }

func TestTheWallHoldsEveryStateChange(t *testing.T) {
	t.Parallel()
	ts := echoServer(t, 0, Config{})
	page := strings.Replace(ts.URL, "127.0.0.1", "localhost", 1)
	for _, tt := range []struct {
		name   string
		method string
		origin string
		ctype  string
		body   io.Reader
		status int
		rule   refusal.Rule
	}{
		{"the page", "POST", page, "application/json", strings.NewReader(`{"name":"a"}`), 200, ""},
		{"a program", "POST", "", "application/json", strings.NewReader(`{"name":"a"}`), 200, ""},
		{"a chunked body", "POST", "", "application/json", chunked{strings.NewReader(`{"name":"a"}`)}, 200, ""},
		{"a body of unknown length that is empty", "POST", "", "application/json", chunked{strings.NewReader("")}, 400, refusal.BodyRequired},
		{"Origin null", "POST", "null", "application/json", strings.NewReader(`{"name":"a"}`), 403, refusal.OriginRefused},
		{"another site", "POST", "https://elsewhere.example", "application/json", strings.NewReader(`{"name":"a"}`), 403, refusal.OriginRefused},
		{"another port of this host", "POST", "http://127.0.0.1:1", "application/json", strings.NewReader(`{"name":"a"}`), 403, refusal.OriginRefused},
		{"text/plain", "POST", "", "text/plain", strings.NewReader(`{"name":"a"}`), 415, refusal.UnsupportedContentType},
		{"a DELETE with no body", "DELETE", "", "", nil, 415, refusal.UnsupportedContentType},
		{"a GET from Origin null changes nothing and passes", "GET", "null", "", nil, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(tt.method, ts.URL+"/api/echo", tt.body)
			if tt.method == "GET" {
				req, _ = http.NewRequest("GET", ts.URL+"/api/health", nil)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || (tt.rule != "" && !strings.Contains(string(b), `"refused":"`+string(tt.rule)+`"`)) {
				t.Fatalf("answered %d %s, want %d %s", resp.StatusCode, b, tt.status, tt.rule)
			}
		})
	}
}
