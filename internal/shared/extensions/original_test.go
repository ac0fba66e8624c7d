package extensions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// original reads a descriptor of testdata/original: the original Voicebox's catalogue, written
// here in its format.
func original(t testing.TB, id string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "original", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestTheOriginalCatalogueLoadsUnchanged holds the five descriptors of the original's catalogue
// to what its documentation says of them: web search, Brave search and the remote MCP server are
// admitted under mediated fetch with their request budgets, the notes reader under the folder's
// walls, and the local MCP server, which starts a process, is refused exec-absent.
func TestTheOriginalCatalogueLoadsUnchanged(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id         string
		want       refusal.Rule
		budget     int
		grant      string
		summarySay string
	}{
		{"web-search", "", 5, "network", "url https://api.duckduckgo.com/?format=json unless the model names another on the allowed hosts"},
		{"brave-search", "", 20, "network", "sends $BRAVE_API_KEY in X-Subscription-Token to api.search.brave.com (with the requests of brave_search: https://api.search.brave.com/res/v1/web/search)"},
		{"mcp-server-remote", "", 20, "network", "mediated-fetch"},
		{"notes", "", 0, "read", "path notes.md unless the model names another in the folder"},
		{"mcp-server-local", refusal.ExecAbsent, 0, "", ""},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			t.Parallel()
			raw := original(t, c.id)
			d, r := Parse(raw)
			if r != nil {
				t.Fatalf("Parse: %v", r)
			}
			got := Admit(d, Machine, nil)
			if c.want != "" {
				if got == nil || got.Rule != c.want {
					t.Fatalf("Admit = %v, want %s", got, c.want)
				}
				return
			}
			if got != nil {
				t.Fatalf("Admit = %v, want admitted", got)
			}
			if d.Bounds.MaxRequests != c.budget {
				t.Fatalf("maxRequests = %d, want the documented %d", d.Bounds.MaxRequests, c.budget)
			}
			p := Disclose(d, Machine, raw)
			if len(p.Grants) != 1 || p.Grants[0].Capability != c.grant {
				t.Fatalf("grants = %+v, want one of %s", p.Grants, c.grant)
			}
			if summary := strings.Join(p.Summary, "\n"); !strings.Contains(summary, c.summarySay) {
				t.Fatalf("the plan does not say %q:\n%s", c.summarySay, summary)
			}
		})
	}
}

// TestBoundArgumentsAndWhatTheModelSupplies: the original's params bind the primitive's
// arguments; the model supplies the rest (and may name its own, which win, as the original's).
func TestBoundArgumentsAndWhatTheModelSupplies(t *testing.T) {
	t.Parallel()
	d, r := Parse(original(t, "notes"))
	if r != nil {
		t.Fatal(r)
	}
	notes := &d.Tools[0]
	if b := notes.Bound(); b == nil || b.Path == nil || *b.Path != "notes.md" {
		t.Fatalf("bound = %+v", b)
	}
	schema, err := toolschema.Parse(notes.ArgumentSchema())
	if err != nil {
		t.Fatalf("the implied schema does not parse: %v", err)
	}
	for _, args := range []string{`{}`, `{"path":"other.md"}`} {
		if _, err := schema.Validate(json.RawMessage(args)); err != nil {
			t.Errorf("%s: %v", args, err)
		}
	}
	if _, err := schema.Validate(json.RawMessage(`{"url":"x"}`)); err == nil {
		t.Error("an argument read-file does not take was accepted")
	}
	if got := notes.CallArgs(map[string]any{}); got["path"] != "notes.md" {
		t.Fatalf("CallArgs = %v", got)
	}
	if got := notes.CallArgs(map[string]any{"path": "other.md"}); got["path"] != "other.md" {
		t.Fatalf("the model's path does not win: %v", got)
	}

	// A tool with nothing bound requires what its primitive needs.
	d, r = Parse([]byte(`{"id":"p","name":"P","capabilities":["network"],"bounds":{"hosts":["127.0.0.1"],"maxRequests":1},"tools":[{"name":"probe","primitive":"http-get","params":{}}]}`))
	if r != nil || Admit(d, Machine, nil) != nil {
		t.Fatalf("the original's self-probe (params {}) is admissible: %v", r)
	}
	schema, _ = toolschema.Parse(d.Tools[0].ArgumentSchema())
	if _, err := schema.Validate(json.RawMessage(`{}`)); refusal.RuleOf(err) != refusal.MissingArgument {
		t.Fatalf("an http-get with no bound url needs the model's: %v", err)
	}
	// A url template takes no url from the model.
	d, _ = Parse([]byte(`{"id":"q","name":"Q","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1},"tools":[{"name":"fixed","primitive":"http-get","url":"https://h/x"}]}`))
	if s := string(d.Tools[0].ArgumentSchema()); strings.Contains(s, "url") {
		t.Fatalf("a fixed url template still asks for a url: %s", s)
	}
}

func TestTheOriginalsDescriptorRules(t *testing.T) {
	t.Parallel()
	digest := strings.Repeat("ab", 32)
	cases := []struct {
		name, desc string
		want       refusal.Rule
	}{
		{"now needs no capability", `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"clock","primitive":"now","params":{}}]}`, ""},
		{"now with clock declared still", `{"id":"a","name":"A","capabilities":["clock"],"tools":[{"name":"clock","primitive":"now"}]}`, ""},
		{"wasm needs no capability", `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"hash","primitive":"wasm","wasm":{"module":"hash.wasm","sha256":"` + digest + `","export":"sha256"}}]}`, ""},
		{"the original's wasm asset", `{"id":"a","name":"A","source":"catalogue","runsIn":"host","capabilities":[],"bounds":{},"tools":[{"name":"hash","primitive":"wasm","params":{},"wasm":{"path":"hash.wasm","digest":"` + digest + `","abi":"buffer-abi/1","input":{"addr":1024,"maxBytes":8192},"output":{"addr":9216,"bytes":32},"call":{"export":"sha256"}}}]}`, ""},
		{"the original's diff asset", `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"diff","primitive":"wasm","wasm":{"path":"diff.wasm","digest":"` + digest + `","abi":"buffer-abi/diff","inputA":{"addr":65536,"maxBytes":65536},"inputB":{"addr":131072,"maxBytes":65536},"output":{"addr":196608,"maxBytes":262144},"call":{"export":"diff"}}}]}`, ""},
		{"another layout", `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"hash","primitive":"wasm","wasm":{"path":"hash.wasm","digest":"` + digest + `","abi":"buffer-abi/1","input":{"addr":0,"maxBytes":8192},"output":{"addr":9216,"bytes":32},"call":{"export":"sha256"}}}]}`, refusal.UnsupportedABI},
		{"an ABI nobody drives", `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"hash","primitive":"wasm","wasm":{"path":"hash.wasm","digest":"` + digest + `","abi":"wasi","call":{"export":"sha256"}}}]}`, refusal.UnsupportedABI},
		{"a wasm asset without its digest", `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"hash","primitive":"wasm","wasm":{"path":"hash.wasm","abi":"buffer-abi/1","call":{"export":"sha256"}}}]}`, refusal.UnderDeclared},
		{"a command is a launch", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1,"command":"sh -c x"},"tools":[{"name":"t","primitive":"http-get","params":{"url":"https://h/"}}]}`, refusal.ExecAbsent},
		{"a url bound to a read tool", `{"id":"a","name":"A","capabilities":["read"],"tools":[{"name":"t","primitive":"read-file","params":{"url":"https://h/"}}]}`, refusal.UnderDeclared},
		{"headers on a read tool", `{"id":"a","name":"A","capabilities":["read"],"tools":[{"name":"t","primitive":"read-file","params":{"path":"a","headers":{"X-A":"b"}}}]}`, refusal.UnderDeclared},
		{"content bound to a fetch", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1},"tools":[{"name":"t","primitive":"http-get","params":{"content":"x"}}]}`, refusal.UnderDeclared},
		{"two addresses", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1},"tools":[{"name":"t","primitive":"http-get","url":"https://h/a","params":{"url":"https://h/b"}}]}`, refusal.UnderDeclared},
		{"a header secret of the relay's", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1},"tools":[{"name":"t","primitive":"http-get","params":{"headers":{"Authorization":"Bearer $OPENAI_API_KEY"}}}]}`, refusal.SecretReserved},
		{"a header secret without network", `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"t","primitive":"http-get","params":{"headers":{"X-K":"$K"}}}]}`, refusal.UnderDeclared},
		{"a literal header", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1},"tools":[{"name":"t","primitive":"http-get","params":{"headers":{"Accept":"application/json"}}}]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, r := Parse([]byte(c.desc))
			if r != nil {
				t.Fatalf("Parse: %v", r)
			}
			got := Admit(d, Machine, nil)
			if c.want == "" && got != nil || c.want != "" && (got == nil || got.Rule != c.want) {
				t.Fatalf("Admit = %v, want %q", got, c.want)
			}
		})
	}
}

func TestParseReadsTheOriginalsFieldsStrictly(t *testing.T) {
	t.Parallel()
	digest := strings.Repeat("ab", 32)
	fetch := func(params string) string {
		return `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1},"tools":[{"name":"t","primitive":"http-get","params":` + params + `}]}`
	}
	for name, raw := range map[string]string{
		"a source the original does not name": `{"id":"a","name":"A","source":"internet","capabilities":[],"tools":[{"name":"t","primitive":"now"}]}`,
		"a runsIn the original does not name": `{"id":"a","name":"A","runsIn":"container","capabilities":[],"tools":[{"name":"t","primitive":"now"}]}`,
		"a key the original does not bind":    fetch(`{"query":"x"}`),
		"a number where a url goes":           fetch(`{"url":5}`),
		"an empty path":                       `{"id":"a","name":"A","capabilities":["read"],"tools":[{"name":"t","primitive":"read-file","params":{"path":""}}]}`,
		"params that are not an object":       fetch(`["url"]`),
		"the Host header":                     fetch(`{"headers":{"Host":"evil.example"}}`),
		"a header value with a newline":       fetch(`{"headers":{"X-A":"a\nb"}}`),
		"two secrets in one value":            fetch(`{"headers":{"X-A":"$A$B"}}`),
		"a lower-case secret":                 fetch(`{"headers":{"X-A":"$brave"}}`),
		"a secret in the middle":              fetch(`{"headers":{"X-A":"a $KEY b"}}`),
		"a header bounds.secrets fills too":   `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1,"secrets":[{"name":"K","header":"X-K","hosts":["h"]}]},"tools":[{"name":"t","primitive":"http-get","params":{"headers":{"x-k":"$L"}}}]}`,
		"a wasm field on a fetch":             `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":1},"tools":[{"name":"t","primitive":"http-get","wasm":{"path":"m.wasm"}}]}`,
		"two digests that disagree":           `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"t","primitive":"wasm","wasm":{"module":"m.wasm","sha256":"` + digest + `","digest":"` + strings.Repeat("cd", 32) + `","export":"run"}}]}`,
		"a long prompt snippet":               `{"id":"a","name":"A","capabilities":[],"tools":[{"name":"t","primitive":"now","promptSnippet":"` + strings.Repeat("x", MaxPromptSnippetBytes+1) + `"}]}`,
		"the original's proposal state":       `{"id":"a","name":"A","state":"pending","capabilities":[],"tools":[{"name":"t","primitive":"now"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, r := Parse([]byte(raw)); r == nil || r.Rule != refusal.BadDescriptor || r.Why == "" {
				t.Fatalf("Parse = %v, want bad-descriptor", r)
			}
		})
	}
}

// TestHeaderSecretsAreDeclaredSecrets: a $NAME in a tool's header is a secret like one of
// bounds.secrets: disclosed, reserved names refused, sent only with that tool's requests.
func TestHeaderSecretsAreDeclaredSecrets(t *testing.T) {
	t.Parallel()
	raw := original(t, "brave-search")
	d, r := Parse(raw)
	if r != nil {
		t.Fatal(r)
	}
	all := AllSecrets(d)
	if len(all) != 1 || all[0].Name != "BRAVE_API_KEY" || all[0].Header != "X-Subscription-Token" || !slices.Equal(all[0].Hosts, []string{"api.search.brave.com"}) {
		t.Fatalf("AllSecrets = %+v", all)
	}
	p := Disclose(d, Machine, raw)
	if len(p.Secrets) != 1 || p.Secrets[0].Tools[0].Name != "brave_search" {
		t.Fatalf("plan secrets = %+v", p.Secrets)
	}
	literal, secrets := RequestHeaders(d, &d.Tools[0], "api.search.brave.com", "api.search.brave.com")
	if len(literal) != 0 || len(secrets) != 1 || secrets[0].Name != "BRAVE_API_KEY" {
		t.Fatalf("RequestHeaders = %v, %v", literal, secrets)
	}
	if _, secrets := RequestHeaders(d, nil, "api.search.brave.com", "api.search.brave.com"); len(secrets) != 0 {
		t.Fatalf("a tool's header secret went with another's request: %v", secrets)
	}
	prefixed := []byte(strings.Replace(string(raw), `"$BRAVE_API_KEY"`, `"Bearer $BRAVE_API_KEY"`, 1))
	d, r = Parse(prefixed)
	if r != nil {
		t.Fatal(r)
	}
	if s := AllSecrets(d); len(s) != 1 || s[0].Prefix != "Bearer " {
		t.Fatalf("a prefixed secret = %+v", s)
	}
}
