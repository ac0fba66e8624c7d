package extensionhost

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/wasmabi/wasmabitest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// admit stages raw and admits it with the host token.
func (f *fixture) admit(raw string) {
	f.t.Helper()
	code, m, body := f.do("POST", "/api/extensions/sideload", "", raw)
	if code != 200 {
		f.t.Fatalf("sideload: %d %s", code, body)
	}
	id, _ := m["staged"].(string)
	if code, _, body := f.do("POST", "/api/extensions/admit", "tok", `{"id":"`+id+`","decision":"admit","confirm":true}`); code != 200 {
		f.t.Fatalf("admit %s: %d %s", id, code, body)
	}
}

// call runs a tool through POST /api/extensions/call and returns the answer.
func (f *fixture) call(ext, tool, args string) map[string]any {
	f.t.Helper()
	_, m, _ := f.do("POST", "/api/extensions/call", "tok", `{"extension":"`+ext+`","tool":"`+tool+`","args":`+args+`}`)
	return m
}

func observedField(m map[string]any, key string) any {
	obs, _ := m["observed"].(map[string]any)
	return obs[key]
}

// TestArgumentsAreValidatedBeforeRouting: every toolschema rule refuses the call before the
// executor is asked, and what is handed on is exactly what was checked.
func TestArgumentsAreValidatedBeforeRouting(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.admit(`{"id":"files","name":"Files","capabilities":["read","clock"],"bounds":{},"tools":[
		{"name":"read_one","primitive":"read-file","params":{"type":"object","properties":{
			"path":{"type":"string","minLength":1,"maxLength":20},
			"mode":{"type":"string","enum":["text","bytes"]},
			"lines":{"type":"integer","minimum":1,"maximum":100},
			"tags":{"type":"array","items":{"type":"string"}}},
			"required":["path"],"additionalProperties":false}},
		{"name":"clock","primitive":"now"}]}`)
	for _, c := range []struct {
		name, tool, args string
		want             refusal.Rule
	}{
		{"not an object", "read_one", `[1]`, refusal.InvalidToolArguments},
		{"missing", "read_one", `{}`, refusal.MissingArgument},
		{"null is missing", "read_one", `{"path":null}`, refusal.MissingArgument},
		{"undeclared key", "read_one", `{"path":"a","shell":"rm"}`, refusal.InvalidArgument},
		{"wrong type", "read_one", `{"path":7}`, refusal.InvalidArgumentType},
		{"too long", "read_one", `{"path":"` + strings.Repeat("a", 21) + `"}`, refusal.InvalidArgumentLength},
		{"out of range", "read_one", `{"path":"a","lines":0}`, refusal.InvalidArgumentRange},
		{"not in enum", "read_one", `{"path":"a","mode":"exec"}`, refusal.InvalidArgumentEnum},
		{"too deep", "read_one", `{"path":"a","tags":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`, refusal.InvalidArgumentBounds},
		{"no params takes no arguments", "clock", `{"tz":"UTC"}`, refusal.InvalidArgument},
	} {
		t.Run(c.name, func(t *testing.T) {
			if m := f.call("files", c.tool, c.args); m["refused"] != string(c.want) || m["why"] == "" {
				t.Fatalf("got %v, want %s", m, c.want)
			}
		})
	}
	if len(f.asked) != 0 {
		t.Fatalf("refused calls reached the executor: %+v", f.asked)
	}
	if m := f.call("files", "read_one", `{"path" : "a.txt", "lines": 3}`); m["ok"] != true || len(f.asked) != 1 || string(f.asked[0].Args) != `{"lines":3,"path":"a.txt"}` {
		t.Fatalf("a valid call: %v, asked %+v", m, f.asked)
	}
	if m := f.call("files", "clock", `{}`); m["ok"] != true {
		t.Fatalf("a call without arguments: %v", m)
	}
}

// TestWasmToolsThroughTheRegistry: the catalogue's text tools are staged (with their module),
// admitted and called; the module is re-read and its digest re-checked at every call.
func TestWasmToolsThroughTheRegistry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if code, _, body := f.do("POST", "/api/extensions/stage-catalogue", "", `{"id":"text-tools"}`); code != 200 {
		t.Fatalf("stage: %d %s", code, body)
	}
	if m := f.call("text-tools", "crc32", `{"input":"123456789"}`); m["refused"] != "not-admitted" {
		t.Fatalf("a staged wasm tool ran: %v", m)
	}
	if code, _, body := f.do("POST", "/api/extensions/admit", "tok", `{"id":"text-tools","decision":"admit","confirm":true}`); code != 200 {
		t.Fatalf("admit: %d %s", code, body)
	}
	if m := f.call("text-tools", "crc32", `{"input":"123456789"}`); observedField(m, "text") != "cbf43926" {
		t.Fatalf("crc32: %v", m)
	}
	if m := f.call("text-tools", "word_count", `{"input":"two lines\nthree words here\n"}`); observedField(m, "text") != "2 5 27" {
		t.Fatalf("word_count: %v", m)
	}
	if m := f.call("text-tools", "crc32", `{"input":7}`); m["refused"] != "invalid-argument-type" {
		t.Fatalf("a number as input: %v", m)
	}
	if m := f.call("text-tools", "crc32", `{"input":"`+strings.Repeat("é", 4097)+`"}`); m["refused"] != "over-budget" {
		t.Fatalf("8194 bytes of input: %v", m)
	}
	module := filepath.Join(f.dir, "wasm", "text-tools.wasm")
	good, err := os.ReadFile(module)
	if err != nil {
		t.Fatalf("stage-catalogue did not copy the module: %v", err)
	}
	bad, _ := os.ReadFile(filepath.Join("wasmtool", "testdata", "trap.wasm"))
	os.WriteFile(module, bad, 0o600)
	if m := f.call("text-tools", "crc32", `{"input":"x"}`); m["refused"] != "digest-mismatch" {
		t.Fatalf("a swapped module: %v", m)
	}
	os.Remove(module)
	if m := f.call("text-tools", "crc32", `{"input":"x"}`); m["refused"] != "wasm-unreadable" {
		t.Fatalf("a missing module: %v", m)
	}
	os.WriteFile(module, good, 0o600)
	if m := f.call("text-tools", "crc32", `{"input":"123456789"}`); observedField(m, "text") != "cbf43926" {
		t.Fatalf("after the module came back: %v", m)
	}
}

// TestHostileWasmThroughTheRegistry admits each hostile fixture as an extension and, after each
// call it makes, checks that the relay still answers a good wasm call.
func TestHostileWasmThroughTheRegistry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.do("POST", "/api/extensions/stage-catalogue", "", `{"id":"text-tools"}`)
	f.do("POST", "/api/extensions/admit", "tok", `{"id":"text-tools","decision":"admit","confirm":true}`)
	os.MkdirAll(filepath.Join(f.dir, "hostile"), 0o700)
	for _, c := range []struct {
		fixture string
		want    refusal.Rule
	}{
		{"loop", refusal.TimeExceeded},
		{"grow", refusal.ResourceExceeded},
		{"trap", refusal.WasmTrapped},
		{"import", refusal.ImportUndeclared},
		{"overflow", refusal.OverBudget},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("wasmtool", "testdata", c.fixture+".wasm"))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(f.dir, "hostile", c.fixture+".wasm"), b, 0o600)
			sum := sha256.Sum256(b)
			f.admit(fmt.Sprintf(`{"id":"h-%s","name":"H","capabilities":[],"bounds":{},"tools":[{"name":"h_%s","primitive":"wasm","wasm":{"module":"hostile/%s.wasm","sha256":"%s","export":"run"}}]}`,
				c.fixture, c.fixture, c.fixture, hex.EncodeToString(sum[:])))
			if m := f.call("h-"+c.fixture, "h_"+c.fixture, `{"input":"x"}`); m["refused"] != string(c.want) {
				t.Fatalf("got %v, want %s", m, c.want)
			}
			if m := f.call("text-tools", "crc32", `{"input":"123456789"}`); observedField(m, "text") != "cbf43926" {
				t.Fatalf("the next call: %v", m)
			}
		})
	}
}

// TestModulesTheBytesRefuseAreNotAdmitted: a module that is not WebAssembly, or whose memories
// pass the bound together (a small exported one and big others), is refused by name when its
// descriptor is admitted, and the admitted tools answer on.
func TestModulesTheBytesRefuseAreNotAdmitted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.do("POST", "/api/extensions/stage-catalogue", "", `{"id":"text-tools"}`)
	f.do("POST", "/api/extensions/admit", "tok", `{"id":"text-tools","decision":"admit","confirm":true}`)
	os.MkdirAll(filepath.Join(f.dir, "hostile"), 0o700)
	garbage, _ := os.ReadFile(filepath.Join("wasmtool", "testdata", "garbage.wasm"))
	for name, c := range map[string]struct {
		module []byte
		want   refusal.Rule
	}{
		"garbage": {garbage, refusal.WasmInvalid},
		"multi":   {wasmabitest.MultiMemory(slices.Repeat([]wasmabitest.Memory{{Min: 4096, Max: 4096}}, 8)...), refusal.ResourceExceeded},
	} {
		os.WriteFile(filepath.Join(f.dir, "hostile", name+".wasm"), c.module, 0o600)
		sum := sha256.Sum256(c.module)
		_, m, body := f.do("POST", "/api/extensions/sideload", "", fmt.Sprintf(`{"id":"h-%s","name":"H","capabilities":[],"bounds":{},"tools":[{"name":"h_%s","primitive":"wasm","wasm":{"module":"hostile/%s.wasm","sha256":"%s","export":"run"}}]}`,
			name, name, name, hex.EncodeToString(sum[:])))
		id, _ := m["staged"].(string)
		if code, m, body2 := f.do("POST", "/api/extensions/admit", "tok", `{"id":"`+id+`","decision":"admit","confirm":true}`); code == 200 || m["refused"] != string(c.want) {
			t.Fatalf("%s: sideload %s, admit %d %s; want %s", name, body, code, body2, c.want)
		}
		if m := f.call("text-tools", "crc32", `{"input":"123456789"}`); observedField(m, "text") != "cbf43926" {
			t.Fatalf("the next call: %v", m)
		}
	}
}

// TestAdmissionNeedsTheModule: a wasm descriptor whose module is not in the directory, or is not
// the pinned one, is not admitted.
func TestAdmissionNeedsTheModule(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	raw := `{"id":"m","name":"M","capabilities":["wasm"],"bounds":{},"tools":[{"name":"m","primitive":"wasm","wasm":{"module":"m.wasm","sha256":"` + strings.Repeat("ab", 32) + `","export":"run"}}]}`
	f.do("POST", "/api/extensions/sideload", "", raw)
	if _, m, _ := f.do("POST", "/api/extensions/admit", "tok", `{"id":"m","decision":"admit","confirm":true}`); m["refused"] != "wasm-unreadable" {
		t.Fatalf("admit without the module: %v", m)
	}
	os.WriteFile(filepath.Join(f.dir, "m.wasm"), []byte("\x00asm\x01\x00\x00\x00"), 0o600)
	if _, m, _ := f.do("POST", "/api/extensions/admit", "tok", `{"id":"m","decision":"admit","confirm":true}`); m["refused"] != "digest-mismatch" {
		t.Fatalf("admit with another module: %v", m)
	}
	escape := strings.Replace(raw, `"m.wasm"`, `"../m.wasm"`, 1)
	f.do("POST", "/api/extensions/sideload", "", escape)
	if _, m, _ := f.do("POST", "/api/extensions/admit", "tok", `{"id":"m","decision":"admit","confirm":true}`); m["refused"] != "outside-root" {
		t.Fatalf("admit with a module outside the directory: %v", m)
	}
}

// TestLogsAreRedacted: what the relay logs of a mediated fetch carries no credential from the
// query and no header value taken from the environment, only the header's name.
func TestLogsAreRedacted(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hop":
			http.Redirect(w, r, "/mid?access_token=hop-secret-9", http.StatusFound)
			return
		case "/mid":
			http.Redirect(w, r, "/end", http.StatusFound)
			return
		}
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://foreign.invalid/?api_key=away-secret-8", http.StatusFound)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer upstream.Close()
	host := strings.TrimPrefix(upstream.URL, "http://")
	f := newFixture(t)
	f.g.Fetcher.Getenv = func(k string) string {
		if k == "TEST_SEARCH_KEY" {
			return "env-secret-7"
		}
		return ""
	}
	f.admit(`{"id":"keyed","name":"K","capabilities":["network"],"bounds":{"hosts":["` + host + `"],"maxRequests":10,
		"secrets":[{"name":"TEST_SEARCH_KEY","header":"X-Key","hosts":["` + host + `"]}]},"tools":[
		{"name":"get","primitive":"http-get","url":"http://` + host + `/{path}?q={q}&key={key}",
		 "params":{"type":"object","properties":{"path":{"type":"string"},"q":{"type":"string"},"key":{"type":"string"}},"required":["path","q","key"]}}]}`)
	if m := f.call("keyed", "get", `{"path":"hop","q":"cats","key":"query-secret-6"}`); m["ok"] != true {
		t.Fatalf("the call: %v", m)
	}
	if m := f.call("keyed", "get", `{"path":"away","q":"cats","key":"query-secret-6"}`); m["refused"] != "redirect-host-not-allowed" || strings.Contains(fmt.Sprint(m), "secret") {
		t.Fatalf("the refused call: %v", m)
	}
	logs := f.logs.String()
	for _, secret := range []string{"query-secret-6", "env-secret-7", "hop-secret-9", "away-secret-8"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %s:\n%s", secret, logs)
		}
	}
	for _, want := range []string{"key=[redacted]", "access_token=[redacted]", "X-Key (from $TEST_SEARCH_KEY)", "q=cats", "servedBy=" + upstream.URL} {
		if !strings.Contains(logs, want) && !strings.Contains(logs, strings.ReplaceAll(want, "[redacted]", "%5Bredacted%5D")) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
}
