package extensions

import (
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestRemoteMCPDescriptors: what the parse and the gate say of a remote MCP descriptor, and what
// its plan discloses.
func TestRemoteMCPDescriptors(t *testing.T) {
	t.Parallel()
	pin := `{"name":"a","description":"Adds.","annotations":{"readOnlyHint":true},"sha256":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`
	const head = `{"id":"r","name":"R","capabilities":["network"],"bounds":{"hosts":["mcp.example.com"],"maxRequests":10},`
	for _, c := range []struct {
		name, raw string
		parse     refusal.Rule
		admit     refusal.Rule
	}{
		{"no tools yet", head + `"tools":[],"mcp":{"url":"https://mcp.example.com/mcp"}}`, "", ""},
		{"admitted tools", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["get-time","a.b/c"]}}`, "", ""},
		{"runs in remote", head + `"runsIn":"remote","mcp":{"url":"https://mcp.example.com/mcp"}}`, "", ""},
		{"runs in host", head + `"runsIn":"host","mcp":{"url":"https://mcp.example.com/mcp"}}`, refusal.BadDescriptor, ""},
		{"tools of its own", head + `"tools":[{"name":"t","primitive":"now"}],"mcp":{"url":"https://mcp.example.com/mcp"}}`, refusal.BadDescriptor, ""},
		{"not http", head + `"mcp":{"url":"file:///etc/passwd"}}`, refusal.BadDescriptor, ""},
		{"a password in the url", head + `"mcp":{"url":"https://u:p@mcp.example.com/mcp"}}`, refusal.BadDescriptor, ""},
		{"a tool twice", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["a","a"]}}`, refusal.BadDescriptor, ""},
		{"a control character", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["a\nb"]}}`, refusal.InvalidName, ""},
		{"a pinned definition", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["a"],"definitions":[PIN]}}`, "", ""},
		{"a definition of no admitted tool", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["b"],"definitions":[PIN]}}`, refusal.BadDescriptor, ""},
		{"a tool pinned twice", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["a"],"definitions":[PIN,PIN]}}`, refusal.BadDescriptor, ""},
		{"a digest that is no digest", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["a"],"definitions":[{"name":"a","sha256":"xyz"}]}}`, refusal.BadDescriptor, ""},
		{"a view that is no ui:// resource", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["a"],"definitions":[{"name":"a","view":"https://evil.example/","sha256":"` + strings.Repeat("0", 64) + `"}]}}`, refusal.BadDescriptor, ""},
		{"a bidi override", head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["\u202eteg"]}}`, refusal.InvalidName, ""},
		{"another host", head + `"mcp":{"url":"https://evil.example/mcp"}}`, "", refusal.UnderDeclared},
		{"no network", `{"id":"r","name":"R","capabilities":[],"bounds":{},"mcp":{"url":"https://mcp.example.com/mcp"}}`, "", refusal.UnderDeclared},
		{"a process", `{"id":"r","name":"R","capabilities":["network"],"bounds":{"hosts":["mcp.example.com"],"maxRequests":10,"command":"npx x"},"mcp":{"url":"https://mcp.example.com/mcp"}}`, "", refusal.ExecAbsent},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, r := Parse([]byte(strings.ReplaceAll(c.raw, "PIN", pin)))
			if got := ruleOf(r); got != c.parse {
				t.Fatalf("parse: %v, want %q", r, c.parse)
			}
			if r != nil {
				return
			}
			if got := ruleOf(Admit(d, Machine, nil)); got != c.admit {
				t.Fatalf("admit: %q, want %q", got, c.admit)
			}
		})
	}
	raw := []byte(head + `"mcp":{"url":"https://mcp.example.com/mcp","tools":["get-time","a"],"definitions":[` + pin + `]}}`)
	d, _ := Parse(raw)
	p := Disclose(d, Machine, raw)
	summary := strings.Join(p.Summary, "\n")
	if p.MCP == nil || p.MCP.Tools[0] != "r__get-time" || !strings.Contains(summary, "https://mcp.example.com/mcp") || !strings.Contains(summary, "may change") ||
		!strings.Contains(summary, `MCP tool a: declares it changes nothing (readOnlyHint), so it runs without asking you; description "Adds."`) {
		t.Fatalf("the plan: %+v\n%s", p.MCP, summary)
	}
}

func ruleOf(r *refusal.Refusal) refusal.Rule {
	if r == nil {
		return ""
	}
	return r.Rule
}
