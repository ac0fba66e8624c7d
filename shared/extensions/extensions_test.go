package extensions

import (
	"encoding/json"
	"strings"
	"testing"

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

func TestParseRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"id":"a","name":"A","grant":"everything","tools":[]}`,
		`{"id":"../x","name":"A","tools":[]}`,
		`{"id":"voicebox.builtin","name":"A","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`,
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
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, r := Parse(raw)
		if r == nil {
			_ = Admit(d, Page, nil)
		}
	})
}
