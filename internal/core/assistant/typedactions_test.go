package assistant_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// postRaw sends body to /api/turn byte for byte (json.Marshal would escape <, > and &).
func (r *rig) postRaw(body string) map[string]any {
	r.t.Helper()
	resp, err := http.Post(r.url+"/api/turn", "application/json", strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return m
}

// quoted is s as a JSON string with <, > and & as they are.
func quoted(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// TestAnActionTurnIsMeasuredAsSent: POST /api/turn {action} holds the arguments to their bound as
// the caller wrote them, so markup that is well under it as sent is not refused for what an
// encoder's escapes would make of it; and refusals come in the caller's key order.
func TestAnActionTurnIsMeasuredAsSent(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	p := r.page()
	for _, n := range []int{20000, 60000} {
		content := strings.Repeat("<", n)
		m := r.postRaw(`{"action":{"verb":"write_file","name":"lt.txt","content":` + quoted(content) + `}}`)
		if m["ok"] != true {
			t.Fatalf("write_file of %d '<' answered %v", n, m["why"])
		}
		if b, err := p.root.ReadFile(t.Context(), "lt.txt"); err != nil || string(b) != content {
			t.Fatalf("after writing %d '<' the file holds %d bytes, %v", n, len(b), err)
		}
	}
	html := "<!doctype html><title>Big</title>" + strings.Repeat("<p>a &amp; b</p>", 45000/16)
	if m := r.postRaw(`{"action":{"verb":"create_mini_app","title":"Big","html":` + quoted(html) + `}}`); m["ok"] != true {
		t.Fatalf("create_mini_app with %d bytes of HTML answered %v", len(html), m["why"])
	}
	var made struct{ HTML string }
	if seen := p.calls(); len(seen) != 1 || seen[0].Tool != "create-mini-app" || json.Unmarshal(seen[0].Args, &made) != nil || made.HTML != html {
		t.Fatalf("the page was asked %+v", seen)
	}

	offer(t, r, p, decl("clock", "alarm", `{"type":"object","properties":{"mode":{"type":"string","enum":["calm","loud"]},"target":{"type":"integer"}}}`))
	name := miniapp.ModelName("clock", "alarm")
	m := r.postRaw(`{"action":{"verb":"` + name + `","target":"twenty-four","mode":"turbo"}}`)
	if m["refused"] != "invalid-argument-type" || !strings.Contains(m["why"].(string), `"target"`) {
		t.Fatalf("target then mode answered %v %v", m["refused"], m["why"])
	}
	if m := r.postRaw(`{"action":{"verb":"` + name + `","mode":"turbo","target":"twenty-four"}}`); m["refused"] != "invalid-argument-enum" {
		t.Fatalf("mode then target answered %v %v", m["refused"], m["why"])
	}
	if m := r.postRaw(`{"action":{"verb":"` + name + `","mode":"loud","target":24}}`); m["ok"] != true {
		t.Fatalf("a good call answered %v", m)
	}
}

// TestTheOriginalsMiniAppToolAction: {"verb":"mini_app_tool","name","args"} runs the open app
// tool of that name in its app; when two open apps offer it, it is refused ambiguous-tool
// naming both, and their tools stay callable by their scoped names.
func TestTheOriginalsMiniAppToolAction(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	p := r.page()
	start := `{"type":"object","properties":{"seconds":{"type":"integer","minimum":1}},"required":["seconds"]}`
	offer(t, r, p, decl("timer", "start", start), decl("timer", "stop", `{"type":"object"}`))

	m := r.postRaw(`{"action":{"verb":"mini_app_tool","name":"start","args":{"seconds":5}}}`)
	if m["ok"] != true || m["result"].(map[string]any)["page"] != miniapp.ModelName("timer", "start") {
		t.Fatalf("mini_app_tool start answered %v", m)
	}
	if c, _ := m["miniAppToolCall"].(map[string]any); c["name"] != "start" || fmt.Sprint(c["args"]) != "map[seconds:5]" {
		t.Errorf("the turn reports the call as %v, want the original's {name, args}", m["miniAppToolCall"])
	}
	if seen := p.calls(); len(seen) != 1 || string(seen[0].Args) != `{"seconds":5}` {
		t.Fatalf("the page was asked %+v", seen)
	}
	if m := r.postRaw(`{"action":{"verb":"mini_app_tool","name":"stop"}}`); m["ok"] != true {
		t.Fatalf("mini_app_tool without args answered %v", m)
	}
	for body, rule := range map[string]string{
		`{"action":{"verb":"mini_app_tool","name":"start","args":{}}}`:   "missing-argument",
		`{"action":{"verb":"mini_app_tool","name":"pause","args":{}}}`:   "unknown-tool",
		`{"action":{"verb":"mini_app_tool","args":{}}}`:                  "missing-argument",
		`{"action":{"verb":"mini_app_tool","name":"start","args":[5]}}`:  "invalid-argument-type",
		`{"action":{"verb":"mini_app_tool","name":"start","seconds":5}}`: "invalid-argument",
	} {
		if m := r.postRaw(body); m["refused"] != rule {
			t.Errorf("%s answered %v %v, want %s", body, m["refused"], m["why"], rule)
		}
	}

	p.mu.Lock()
	p.listing = json.RawMessage(`{"count":3,"apps":[{"id":"timer","title":"Kitchen timer","open":true},{"id":"race","title":"Race clock","open":true},{"id":"old","title":"Old","open":false}]}`)
	p.mu.Unlock()
	offer(t, r, p, decl("timer", "start", start), decl("race", "start", start))
	m = r.postRaw(`{"action":{"verb":"mini_app_tool","name":"start","args":{"seconds":5}}}`)
	why, _ := m["why"].(string)
	if m["refused"] != "ambiguous-tool" || !strings.Contains(why, "Kitchen timer (timer)") || !strings.Contains(why, "Race clock (race)") {
		t.Fatalf("a name two apps offer answered %v %v", m["refused"], why)
	}
	full := `{"action":{"verb":"` + miniapp.ModelName("race", "start") + `","seconds":5}}`
	if m := r.postRaw(full); m["ok"] != true {
		t.Fatalf("the scoped name answered %v", m)
	}
}

func decl(app, name, params string) tool.Declaration {
	return tool.Declaration{Name: miniapp.ModelName(app, name), Description: name + " of " + app, Parameters: json.RawMessage(params)}
}

// offer has the page stand-in report decls as its open apps' tools and waits until the
// catalogue offers them.
func offer(t *testing.T, r *rig, p *page, decls ...tool.Declaration) {
	t.Helper()
	changed := make(chan struct{}, 8)
	cancel := r.cat.OnChange(func() { changed <- struct{}{} })
	defer cancel()
	raw, _ := json.Marshal(decls)
	p.send(`{"type":"tools","tools":` + string(raw) + `}`)
	for {
		waitChange(t, changed)
		if hasDecl(r.cat.Declarations(), decls[len(decls)-1].Name) {
			return
		}
	}
}
