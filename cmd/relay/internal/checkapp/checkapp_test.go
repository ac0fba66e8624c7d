package checkapp

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

const host = "http://127.0.0.1:8787"

// app serves a page with the three embedding headers, less the one named by ?omit=, or with one
// replaced by ?csp= / ?coep= / ?corp=.
func app(t *testing.T) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/?"+r.URL.RawQuery, http.StatusFound)
			return
		}
		set := func(name, def, override string) {
			v := def
			if q.Has(override) {
				v = q.Get(override)
			}
			if q.Get("omit") != name {
				w.Header().Set(name, v)
			}
		}
		set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'self' "+host, "csp")
		set("Cross-Origin-Embedder-Policy", "credentialless", "coep")
		set("Cross-Origin-Resource-Policy", "cross-origin", "corp")
		if q.Has("xfo") {
			w.Header().Set("X-Frame-Options", q.Get("xfo"))
		}
		w.Write([]byte("<!doctype html><title>app</title>"))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, &out, &errOut, host)
	return code, out.String() + errOut.String()
}

func TestCheckAppNamesEachMissingHeader(t *testing.T) {
	t.Parallel()
	ts := app(t)
	code, out := run(t, ts.URL+"/")
	if code != 0 || strings.Contains(out, "MISSING") || !strings.Contains(out, "every embedding header is there") {
		t.Fatalf("a complete app: exit %d\n%s", code, out)
	}
	for _, name := range []string{"Content-Security-Policy", "Cross-Origin-Embedder-Policy", "Cross-Origin-Resource-Policy"} {
		code, out := run(t, ts.URL+"/?omit="+name)
		if code != 1 {
			t.Errorf("without %s: exit %d\n%s", name, code, out)
		}
		var missing []string
		for line := range strings.SplitSeq(out, "\n") {
			if strings.Contains(line, "MISSING") {
				missing = append(missing, line)
			}
		}
		if len(missing) != 1 || !strings.Contains(missing[0], name) {
			t.Errorf("without %s, the missing lines are %q", name, missing)
		}
	}
}

func TestCheckAppJudgesTheValues(t *testing.T) {
	t.Parallel()
	ts := app(t)
	for _, tt := range []struct {
		query  string
		header string // the header reported missing or wrong; "" for none
	}{
		{"csp=frame-ancestors+'self'", "Content-Security-Policy"},
		{"csp=frame-ancestors+'none'", "Content-Security-Policy"},
		{"csp=default-src+'self'", "Content-Security-Policy"},
		{"csp=frame-ancestors+http://127.0.0.1:9999", "Content-Security-Policy"},
		{"csp=frame-ancestors+http://127.0.0.1:*", ""},
		{"csp=frame-ancestors+*", ""},
		{"csp=frame-ancestors+http:", ""},
		{"csp=frame-ancestors+127.0.0.1:8787", ""},
		{"csp=frame-ancestors+https://127.0.0.1:8787", "Content-Security-Policy"},
		{"csp=default-src+'self',+frame-ancestors+'none'", "Content-Security-Policy"},
		{"coep=require-corp", "Cross-Origin-Embedder-Policy"},
		{"corp=same-site", "Cross-Origin-Resource-Policy"},
		{"xfo=DENY", ""}, // frame-ancestors is there, so browsers ignore X-Frame-Options
	} {
		code, out := run(t, ts.URL+"/?"+tt.query)
		switch {
		case tt.header == "" && code != 0:
			t.Errorf("%s: exit %d, want 0\n%s", tt.query, code, out)
		case tt.header != "" && (code != 1 || !strings.Contains(out, "MISSING "+tt.header)):
			t.Errorf("%s: exit %d, want %s reported\n%s", tt.query, code, tt.header, out)
		}
	}
	// Redirects are followed, as the frame would follow them, and the final answer is judged.
	code, out := run(t, ts.URL+"/moved?omit=Cross-Origin-Resource-Policy")
	if code != 1 || !strings.Contains(out, "after redirects") || !strings.Contains(out, "MISSING Cross-Origin-Resource-Policy") {
		t.Fatalf("through a redirect: exit %d\n%s", code, out)
	}
	// The host is configurable, and the flag may follow the URL.
	code, out = run(t, ts.URL+"/", "--host", "https://voicebox.example.com")
	if code != 1 || !strings.Contains(out, "does not name https://voicebox.example.com") {
		t.Fatalf("another host: exit %d\n%s", code, out)
	}
}

func TestCheckAppRefusesBadUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"ftp://x/"}, {"http://127.0.0.1:1/", "extra"}, {"--host", "nope", "http://127.0.0.1:1/"}} {
		if code, out := run(t, args...); code != 2 {
			t.Errorf("%q: exit %d\n%s", args, code, out)
		}
	}
	// Nothing listens on port 1: the fetch fails and says so.
	if code, out := run(t, "http://127.0.0.1:1/"); code != 2 || !strings.Contains(out, "could not fetch") {
		t.Errorf("an unreachable app: exit %d\n%s", code, out)
	}
}

func TestAdmitsFollowsSourceMatching(t *testing.T) {
	t.Parallel()
	app, _ := url.Parse("https://app.example.com/x")
	for _, tt := range []struct {
		sources, host string
		want          bool
	}{
		{"'self'", "https://app.example.com", true},
		{"'self'", "https://app.example.com:8443", false},
		{"https://*.example.com", "https://vb.example.com", true},
		{"https://*.example.com", "https://example.com", false},
		{"vb.example.com", "https://vb.example.com", true},
		{"vb.example.com", "http://vb.example.com", false}, // the app's scheme is https
		{"http://vb.example.com", "https://vb.example.com", true},
		{"https:", "http://vb.example.com", false},
		{"'none' https://vb.example.com", "https://vb.example.com", true},
		{"https://vb.example.com/path/", "https://vb.example.com", true},
		{"https://vb.example.com:8443", "https://vb.example.com:8443", true},
		{"https://vb.example.com", "https://vb.example.com:8443", false},
	} {
		if got := admits(strings.Fields(tt.sources), app, tt.host); got != tt.want {
			t.Errorf("admits(%q, %s) = %v, want %v", tt.sources, tt.host, got, tt.want)
		}
	}
}
