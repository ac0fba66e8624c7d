package extensions

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

const digest = "0000000000000000000000000000000000000000000000000000000000000000"

func TestAdmitRefusals(t *testing.T) {
	t.Parallel()
	notes := `{"id":"notes","name":"Notes","capabilities":["read"],"bounds":{},"tools":[{"name":"read_note","primitive":"read-file"}]}`
	cases := []struct {
		name, desc string
		place      Placement
		existing   []string
		want       refusal.Rule
	}{
		{"admissible", notes, Page, nil, ""},
		{"admissible on machine", notes, Machine, nil, ""},
		{"unknown capability", `{"id":"a","name":"A","capabilities":["teleport"],"tools":[{"name":"t","primitive":"now"}]}`, Page, nil, refusal.UnknownCapability},
		{"eval before exec", `{"id":"a","name":"A","capabilities":["exec","eval"],"tools":[{"name":"t","primitive":"now"}]}`, Page, nil, refusal.EvalNotAToolPath},
		{"exec", `{"id":"a","name":"A","capabilities":["exec"],"tools":[{"name":"t","primitive":"now"}]}`, Machine, nil, refusal.ExecAbsent},
		{"runsIn process", `{"id":"a","name":"A","runsIn":"process","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`, Machine, nil, refusal.ExecAbsent},
		{"import", `{"id":"a","name":"A","capabilities":["import"],"tools":[{"name":"t","primitive":"now"}]}`, Page, nil, refusal.CapabilityUnmediated},
		{"delete", `{"id":"a","name":"A","capabilities":["delete"],"tools":[{"name":"t","primitive":"now"}]}`, Page, nil, refusal.CapabilityUnmediated},
		{"network without hosts", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"maxRequests":3},"tools":[{"name":"t","primitive":"http-get","url":"http://x/"}]}`, Page, nil, refusal.NetworkUnbounded},
		{"network without budget", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["x"]},"tools":[{"name":"t","primitive":"http-get","url":"http://x/"}]}`, Page, nil, refusal.NetworkUnbounded},
		{"network wildcard host", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["*"],"maxRequests":3},"tools":[{"name":"t","primitive":"http-get","url":"http://x/"}]}`, Page, nil, refusal.NetworkUnbounded},
		{"network bytes at the limit", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["x"],"maxRequests":3,"maxBytes":8388608},"tools":[{"name":"t","primitive":"http-get","url":"http://x/"}]}`, Page, nil, ""},
		{"network bytes past the limit", `{"id":"a","name":"A","capabilities":["network"],"bounds":{"hosts":["x"],"maxRequests":3,"maxBytes":8388609},"tools":[{"name":"t","primitive":"http-get","url":"http://x/"}]}`, Page, nil, refusal.NetworkUnbounded},
		{"no tools", `{"id":"a","name":"A","capabilities":["clock"],"tools":[]}`, Page, nil, refusal.NoTools},
		{"bad tool name", `{"id":"a","name":"A","capabilities":["clock"],"tools":[{"name":"no spaces","primitive":"now"}]}`, Page, nil, refusal.BadToolName},
		{"unknown primitive", `{"id":"a","name":"A","capabilities":["clock"],"tools":[{"name":"t","primitive":"shell"}]}`, Page, nil, refusal.UnknownPrimitive},
		{"under-declared capability", `{"id":"a","name":"A","capabilities":["read"],"tools":[{"name":"t","primitive":"write-file"}]}`, Page, nil, refusal.UnderDeclared},
		{"wasm without digest", `{"id":"a","name":"A","capabilities":["wasm"],"tools":[{"name":"t","primitive":"wasm","wasm":{"module":"m.wasm","export":"run"}}]}`, Page, nil, refusal.UnderDeclared},
		{"wasm without export", `{"id":"a","name":"A","capabilities":["wasm"],"tools":[{"name":"t","primitive":"wasm","wasm":{"module":"m.wasm","sha256":"` + digest + `"}}]}`, Page, nil, refusal.UnderDeclared},
		{"bad params", `{"id":"a","name":"A","capabilities":["clock"],"tools":[{"name":"t","primitive":"now","params":{"type":"string"}}]}`, Page, nil, refusal.UnderDeclared},
		{"unsupported abi", `{"id":"a","name":"A","capabilities":["wasm"],"tools":[{"name":"t","primitive":"wasm","wasm":{"module":"m.wasm","sha256":"` + digest + `","export":"run","abi":"wasi"}}]}`, Page, nil, refusal.UnsupportedABI},
		{"duplicate within", `{"id":"a","name":"A","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"},{"name":"t","primitive":"now"}]}`, Page, nil, refusal.DuplicateTool},
		{"duplicate against loaded", notes, Page, []string{"read_note"}, refusal.DuplicateTool},
		{"declared secret", secretDesc("BRAVE_API_KEY", "api.example.org"), Machine, nil, ""},
		{"the OpenAI key", secretDesc("OPENAI_API_KEY", "api.example.org"), Machine, nil, refusal.SecretReserved},
		{"the Gemini key", secretDesc("GEMINI_API_KEY", "api.example.org"), Machine, nil, refusal.SecretReserved},
		{"the mini-app registry with its JWT secrets", secretDesc("MINI_APPS", "api.example.org"), Machine, nil, refusal.SecretReserved},
		{"a relay setting", secretDesc("VOICEBOX_EXTENSIONS_DIR", "api.example.org"), Machine, nil, refusal.SecretReserved},
		{"the home directory", secretDesc("HOME", "api.example.org"), Machine, nil, refusal.SecretReserved},
		{"a base directory", secretDesc("XDG_CONFIG_HOME", "api.example.org"), Machine, nil, refusal.SecretReserved},
		{"a proxy with its password", secretDesc("HTTPS_PROXY", "api.example.org"), Machine, nil, refusal.SecretReserved},
		{"reserved wins over a bad host", secretDesc("OPENAI_API_KEY", "evil.example"), Machine, nil, refusal.SecretReserved},
		{"secret to a host outside bounds", secretDesc("BRAVE_API_KEY", "evil.example"), Machine, nil, refusal.UnderDeclared},
		{"secret without network", `{"id":"a","name":"A","capabilities":["clock"],"bounds":{"secrets":[{"name":"K","header":"X-K","hosts":["x"]}]},"tools":[{"name":"t","primitive":"now"}]}`, Page, nil, refusal.UnderDeclared},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, r := Parse([]byte(c.desc))
			if r != nil {
				t.Fatalf("Parse: %v", r)
			}
			got := Admit(d, c.place, c.existing)
			if c.want == "" {
				if got != nil {
					t.Fatalf("Admit = %v, want admitted", got)
				}
				return
			}
			if got == nil || got.Rule != c.want {
				t.Fatalf("Admit = %v, want %s", got, c.want)
			}
			if got.Why == "" {
				t.Fatal("a refusal must say why")
			}
		})
	}
}

// secretDesc is a network descriptor reaching api.example.org that declares secret name for host.
func secretDesc(name, host string) string {
	return `{"id":"s","name":"S","capabilities":["network"],"bounds":{"hosts":["api.example.org"],"maxRequests":3,
		"secrets":[{"name":"` + name + `","header":"X-Token","hosts":["` + host + `"]}]},
		"tools":[{"name":"get","primitive":"http-get","url":"https://api.example.org/?q={q}"}]}`
}

func TestParseRefusesMalformedSecrets(t *testing.T) {
	t.Parallel()
	withSecrets := func(secrets string) string {
		return `{"id":"s","name":"S","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":3,"secrets":` + secrets + `},"tools":[{"name":"get","primitive":"http-get","url":"https://h/"}]}`
	}
	for name, raw := range map[string]string{
		"the earlier env headers": `{"id":"s","name":"S","capabilities":["network"],"bounds":{"hosts":["h"],"maxRequests":3},"tools":[{"name":"get","primitive":"http-get","url":"https://h/","headers":[{"name":"X-Key","env":"OPENAI_API_KEY"}]}]}`,
		"a lower-case name":       withSecrets(`[{"name":"openai_api_key","header":"X-K","hosts":["h"]}]`),
		"an empty name":           withSecrets(`[{"name":"","header":"X-K","hosts":["h"]}]`),
		"the Host header":         withSecrets(`[{"name":"K","header":"Host","hosts":["h"]}]`),
		"a header with a space":   withSecrets(`[{"name":"K","header":"X K","hosts":["h"]}]`),
		"one header twice":        withSecrets(`[{"name":"K","header":"X-K","hosts":["h"]},{"name":"L","header":"x-k","hosts":["h"]}]`),
		"a prefix naming another": withSecrets(`[{"name":"K","header":"X-K","prefix":"$OPENAI_API_KEY ","hosts":["h"]}]`),
		"a prefix with a newline": withSecrets(`[{"name":"K","header":"X-K","prefix":"a\nb","hosts":["h"]}]`),
		"no hosts":                withSecrets(`[{"name":"K","header":"X-K","hosts":[]}]`),
		"an unknown field":        withSecrets(`[{"name":"K","header":"X-K","hosts":["h"],"value":"x"}]`),
		"too many":                withSecrets(`[{"name":"A","header":"A","hosts":["h"]},{"name":"B","header":"B","hosts":["h"]},{"name":"C","header":"C","hosts":["h"]},{"name":"D","header":"D","hosts":["h"]},{"name":"E","header":"E","hosts":["h"]},{"name":"F","header":"F","hosts":["h"]},{"name":"G","header":"G","hosts":["h"]},{"name":"H","header":"H","hosts":["h"]},{"name":"I","header":"I","hosts":["h"]}]`),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, r := Parse([]byte(raw)); r == nil || r.Rule != refusal.BadDescriptor || r.Why == "" {
				t.Fatalf("Parse = %v, want bad-descriptor", r)
			}
		})
	}
}

func TestSecretReserved(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GEMINI_API_KEY": true, "MINI_APPS": true, "VOICEBOX_ORIGIN": true,
		"VOICEBOX_ANYTHING_NEW": true, "XDG_RUNTIME_DIR": true, "HOME": true, "PATH": true, "GODEBUG": true,
		"CREDENTIALS_DIRECTORY": true, "BRAVE_API_KEY": false, "GITHUB_TOKEN": false, "VOICEBOX": false,
	} {
		if got := SecretReserved(name); got != want {
			t.Errorf("SecretReserved(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestDiscloseSecrets(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"id":"brave","name":"Brave","capabilities":["network"],"bounds":{"hosts":["api.search.brave.com"],"maxRequests":4,
		"secrets":[{"name":"BRAVE_API_KEY","header":"X-Subscription-Token","hosts":["api.search.brave.com"]}]},
		"tools":[{"name":"search","primitive":"http-get","url":"https://api.search.brave.com/res/v1/web/search?q={q}"}]}`)
	d, r := Parse(raw)
	if r != nil {
		t.Fatal(r)
	}
	if r := Admit(d, Machine, nil); r != nil {
		t.Fatal(r)
	}
	p := Disclose(d, Machine, raw)
	if len(p.Secrets) != 1 || p.Secrets[0].Name != "BRAVE_API_KEY" || len(p.Secrets[0].Tools) != 1 || p.Secrets[0].Tools[0].URL == "" {
		t.Fatalf("secrets = %+v", p.Secrets)
	}
	const says = "sends $BRAVE_API_KEY in X-Subscription-Token to api.search.brave.com"
	summary := strings.Join(p.Summary, "\n")
	for _, want := range []string{says, "search: https://api.search.brave.com/res/v1/web/search?q={q}", "each request at most 10s and a call at most 20s"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, summary)
		}
	}
	// The secret set is part of the plan: another set is another hash, so an admission of the
	// first is not one of the second.
	other := []byte(strings.Replace(string(raw), "BRAVE_API_KEY", "OTHER_API_KEY", 1))
	d2, _ := Parse(other)
	if Disclose(d2, Machine, other).Hash == p.Hash {
		t.Fatal("a changed secret set must change the plan hash")
	}
	none := Disclose(&Descriptor{ID: "n"}, Machine, []byte("{}"))
	if b, _ := json.Marshal(none); !strings.Contains(string(b), `"secrets":[]`) {
		t.Fatalf("a plan without secrets says so: %s", b)
	}
}

func TestParseRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"id":"a","name":"A","grant":"everything","tools":[]}`,
		`{"id":"../x","name":"A","tools":[]}`,
		`{"id":"voicebox.builtin","name":"A","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`,
		`{"id":"wasm-shelf-hash","name":"A","capabilities":[],"tools":[{"name":"hash","primitive":"now"}]}`,
		`{"id":"a"} {}`,
		`{"id":"a","name":"A","tools":[]}]`, // dec.More() once let a closing bracket through
		`not json`,
	} {
		if _, r := Parse([]byte(raw)); r == nil || r.Rule != refusal.BadDescriptor {
			t.Errorf("Parse(%s) = %v, want bad-descriptor", raw, r)
		}
	}
}

func TestDisclose(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"id":"web","name":"Web","capabilities":["network"],"bounds":{"hosts":["api.example.org"],"maxRequests":4},"tools":[{"name":"search","primitive":"http-get","url":"https://api.example.org/?q={q}"}]}`)
	d, r := Parse(raw)
	if r != nil {
		t.Fatal(r)
	}
	p := Disclose(d, Page, raw)
	if len(p.Grants) != 1 || p.Grants[0].Enforcement != "mediated-fetch" || p.Grants[0].Capability != "network" {
		t.Fatalf("grants = %+v", p.Grants)
	}
	if strings.Join(p.Never, ",") != "exec,eval,import" || len(p.Hash) != 64 {
		t.Fatalf("plan = %+v", p)
	}
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), "api.example.org") {
		t.Fatalf("plan JSON %s does not name the host", b)
	}
	other := Disclose(d, Page, append(raw, ' '))
	if other.Hash == p.Hash {
		t.Fatal("a changed descriptor must change the plan hash")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"a","name":"A","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`))
	f.Add([]byte(secretDesc("BRAVE_API_KEY", "api.example.org")))
	f.Add([]byte(secretDesc("OPENAI_API_KEY", "api.example.org")))
	f.Add([]byte(`{"id":"r","name":"R","capabilities":["network"],"bounds":{"hosts":["mcp.example.com"],"maxRequests":10},"mcp":{"url":"https://mcp.example.com/mcp","tools":["get-time"]}}`))
	for _, id := range []string{"brave-search", "mcp-server-local", "mcp-server-remote", "notes", "web-search"} {
		f.Add(original(f, id))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, r := Parse(raw)
		if r == nil {
			if Admit(d, Page, nil) == nil {
				for _, s := range AllSecrets(d) {
					if SecretReserved(s.Name) {
						t.Fatalf("admitted a reserved secret %s", s.Name)
					}
				}
				_ = Disclose(d, Page, raw)
				for i := range d.Tools {
					if _, err := toolschema.Parse(d.Tools[i].ArgumentSchema()); err != nil {
						t.Fatalf("tool %s: the argument schema of an admitted tool does not parse: %v", d.Tools[i].Name, err)
					}
				}
			}
		}
	})
}

func TestLookalikeDescriptorNamesAreInvalidName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, desc, char string }{
		{"zero-width id", `{"id":"\u200bnotes","name":"Notes","capabilities":[],"bounds":{},"tools":[{"name":"now","primitive":"now"}]}`, "U+200B"},
		{"reversed name", `{"id":"notes","name":"Notes \u202eexe","capabilities":[],"bounds":{},"tools":[{"name":"now","primitive":"now"}]}`, "U+202E"},
		{"escape in the name", `{"id":"notes","name":"Notes\u001b[2J","capabilities":[],"bounds":{},"tools":[{"name":"now","primitive":"now"}]}`, "U+001B"},
		{"reversed tool name", `{"id":"notes","name":"Notes","capabilities":[],"bounds":{},"tools":[{"name":"now\u202e","primitive":"now"}]}`, "U+202E"},
	} {
		_, r := Parse([]byte(c.desc))
		if r == nil || r.Rule != refusal.InvalidName || !strings.Contains(r.Why, c.char) {
			t.Errorf("%s: Parse = %v; want invalid-name naming %s", c.name, r, c.char)
		}
	}
	if _, r := Parse([]byte(`{"id":"notes","name":"Notes 📝 café","capabilities":[],"bounds":{},"tools":[{"name":"now","primitive":"now"}]}`)); r != nil {
		t.Errorf("a clean name with an emoji and an accent was refused: %v", r)
	}
}
