package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// newFilesServer is a Server over an empty public directory, for the app files' routes.
func newFilesServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{Public: t.TempDir(), Build: "test-build", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAppFileName(t *testing.T) {
	t.Parallel()
	tok := strings.Repeat("ab", appFileTokenBytes)
	for _, tt := range []struct {
		rest, token, name string
		ok                bool
	}{
		{tok + "/index.html", tok, "index.html", true},
		{tok + "/js/helper.mjs", tok, "js/helper.mjs", true},
		{tok + "/../x.js", "", "", false},
		{tok + "/js/../../x.js", "", "", false},
		{tok + "/.secret", "", "", false},
		{tok + "/js/.hidden.mjs", "", "", false},
		{tok + "/", "", "", false},
		{tok, "", "", false},
		{strings.ToUpper(tok) + "/index.html", "", "", false},
		{"short/index.html", "", "", false},
		{tok + "//index.html", "", "", false},
		{tok + "/a\\b", "", "", false},
	} {
		token, name, ok := appFileName(tt.rest)
		if token != tt.token || name != tt.name || ok != tt.ok {
			t.Errorf("appFileName(%q) = %q, %q, %v; want %q, %q, %v", tt.rest, token, name, ok, tt.token, tt.name, tt.ok)
		}
	}
}

// mustCreate makes a bundle of a, failing the test when it is refused.
func mustCreate(t *testing.T, a *appFiles) string {
	t.Helper()
	tok, rf := a.create()
	if rf != nil {
		t.Fatal(rf)
	}
	return tok
}

func TestAppFilesBounds(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	a := newAppFiles()
	a.now = func() time.Time { return now }
	tok := mustCreate(t, a)
	for i := range miniappstore.MaxFolderFiles {
		if rf := a.put(tok, "f"+strings.Repeat("x", i), nil); rf != nil {
			t.Fatalf("file %d: %v", i, rf)
		}
	}
	if rf := a.put(tok, "one-more", nil); rf == nil || rf.Rule != refusal.MiniAppTooLarge {
		t.Fatalf("a file past MaxFolderFiles: %v", rf)
	}
	big := mustCreate(t, a)
	if rf := a.put(big, "a", make([]byte, miniappstore.MaxFolderBytes)); rf != nil {
		t.Fatal(rf)
	}
	if rf := a.put(big, "b", []byte{1}); rf == nil || rf.Rule != refusal.MiniAppTooLarge {
		t.Fatalf("a byte past MaxFolderBytes: %v", rf)
	}
	// Bundles past MaxAppFilesBytes together are refused; the oldest keeps its files.
	var refused *refusal.Refusal
	for range MaxAppFilesBytes / miniappstore.MaxFolderBytes {
		b := mustCreate(t, a)
		if refused = a.put(b, "a", make([]byte, miniappstore.MaxFolderBytes)); refused != nil {
			break
		}
	}
	if refused == nil || refused.Rule != refusal.AppFilesFull {
		t.Fatalf("a file past MaxAppFilesBytes together: %v", refused)
	}
	if a.total > MaxAppFilesBytes {
		t.Fatalf("the bundles hold %d bytes, over %d", a.total, MaxAppFilesBytes)
	}
	if _, ok := a.get(big, "a"); !ok {
		t.Fatal("the oldest bundle was dropped to make room")
	}
	// Past MaxAppFileBundles a new bundle is refused, and the oldest is still served.
	for len(a.order) < MaxAppFileBundles {
		mustCreate(t, a)
	}
	if _, rf := a.create(); rf == nil || rf.Rule != refusal.AppFilesFull {
		t.Fatalf("a bundle past MaxAppFileBundles: %v", rf)
	}
	if _, ok := a.get(big, "a"); !ok {
		t.Fatal("the oldest bundle was dropped for a new one")
	}
	// A bundle lives AppFilesLifetime; then its room is free again.
	now = now.Add(AppFilesLifetime + time.Second)
	if _, ok := a.get(big, "a"); ok {
		t.Fatal("a bundle outlived AppFilesLifetime")
	}
	if rf := a.put(big, "x", nil); rf == nil || rf.Rule != refusal.NotFound {
		t.Fatalf("a put to an expired bundle: %v", rf)
	}
	mustCreate(t, a)
}

func TestAppFilesRoutes(t *testing.T) {
	t.Parallel()
	s := newFilesServer(t)
	do := func(method, target string, body []byte, ctype string) *http.Response {
		req := httptest.NewRequest(method, target, bytes.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Result()
	}
	res := do("POST", "/api/app-files", []byte("{}"), "application/json")
	var made struct{ Token, Base string }
	json.NewDecoder(res.Body).Decode(&made)
	if res.StatusCode != 200 || made.Base != AppFilesPath+made.Token+"/" {
		t.Fatalf("POST /api/app-files: %d %+v", res.StatusCode, made)
	}
	if res := do("PUT", "/api/app-files/"+made.Token+"/js/helper.mjs", []byte("export const x = 1;"), "application/octet-stream"); res.StatusCode != 200 {
		t.Fatalf("PUT: %d", res.StatusCode)
	}
	for name, want := range map[string]struct {
		status int
		rule   refusal.Rule
	}{
		"/.env":            {400, refusal.DotfileRefused},
		"/js/%2e%2e/x.js":  {400, refusal.OutsideRoot},
		"/%E2%80%AEsj.exe": {400, refusal.InvalidName},
		"/a%E2%80%8B.js":   {400, refusal.InvalidName},
	} {
		res := do("PUT", "/api/app-files/"+made.Token+name, []byte("x"), BytesType)
		var body struct{ Refused refusal.Rule }
		json.NewDecoder(res.Body).Decode(&body)
		if res.StatusCode != want.status || body.Refused != want.rule {
			t.Errorf("PUT %s: %d %s; want %d %s", name, res.StatusCode, body.Refused, want.status, want.rule)
		}
	}
	if res := do("PUT", "/api/app-files/"+made.Token+"/big", make([]byte, miniappstore.MaxFolderFileBytes+1), BytesType); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("PUT of a file over the bound: %d", res.StatusCode)
	}
	res = do("GET", AppFilesPath+made.Token+"/js/helper.mjs", nil, "")
	got, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(got) != "export const x = 1;" || res.Header.Get("Access-Control-Allow-Origin") != "null" ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/javascript") || res.Header.Get("Content-Security-Policy") != "sandbox; default-src 'none'" {
		t.Fatalf("GET the module: %d %q %v", res.StatusCode, got, res.Header)
	}
	// (ServeMux answers a path with ".." with a redirect to its clean form, which names nothing.)
	for _, target := range []string{AppFilesPath + made.Token + "/missing.js", AppFilesPath + strings.Repeat("0", 32) + "/js/helper.mjs", AppFilesPath + made.Token + "/js/%2e%2e/x"} {
		if res := do("GET", target, nil, ""); res.StatusCode != 404 {
			t.Errorf("GET %s: %d", target, res.StatusCode)
		}
	}
	// The bytes are the only CORS answer: the API around them has none.
	if res := do("GET", "/api/health", nil, ""); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("/api/health answers with CORS %q", res.Header.Get("Access-Control-Allow-Origin"))
	}
	if res := do("DELETE", "/api/app-files/"+made.Token, []byte("{}"), "application/json"); res.StatusCode != 200 {
		t.Fatalf("DELETE: %d", res.StatusCode)
	}
	if res := do("DELETE", "/api/app-files/"+made.Token, []byte("{}"), "application/json"); res.StatusCode != 404 {
		t.Fatalf("DELETE of a bundle that is gone: %d", res.StatusCode)
	}
	if res := do("PUT", "/api/app-files/"+made.Token+"/x.js", []byte("x"), "text/plain"); res.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("PUT of text/plain bytes: %d", res.StatusCode)
	}
	if res := do("GET", AppFilesPath+made.Token+"/js/helper.mjs", nil, ""); res.StatusCode != 404 {
		t.Fatalf("GET after DELETE: %d", res.StatusCode)
	}
}

func TestBridgePolicyNamesTheBundleOnly(t *testing.T) {
	t.Parallel()
	s := newFilesServer(t)
	tok := strings.Repeat("cd", appFileTokenBytes)
	for query, want := range map[string]string{
		"?files=" + tok:       "img-src data: blob: http://127.0.0.1:8787/app-files/" + tok + "/",
		"?files=nottoken":     "img-src data: blob:;",
		"?files=" + tok + "x": "img-src data: blob:;",
		"":                    "img-src data: blob:;",
	} {
		req := httptest.NewRequest("GET", BridgePath+query, nil)
		req.Host = "127.0.0.1:8787"
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, want) || !strings.Contains(csp, "connect-src 'none'") {
			t.Errorf("bridge%s: policy %q, want it to hold %q and connect-src 'none'", query, csp, want)
		}
	}
}
