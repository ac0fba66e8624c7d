//go:build !js

package tests

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestTheLiveModelUsesAnExternalApp is the model's side end to end: with Order Book open, a live
// session (the OpenAI fixture) starts with the app in its instruction (the operator's name and
// description, the app's tools fenced) and the current view note; the model reads the open
// orders with the app's read-only tool, then changes one with its write tool, which waits for the
// person's approval in the page; after the turn, the note is taken again and shows the change.
func TestTheLiveModelUsesAnExternalApp(t *testing.T) {
	t.Parallel()
	outputs := make(chan string, 4)
	var responses atomic.Int32
	var once sync.Once
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
			if c.AudioBytes() >= 24000 {
				once.Do(func() {
					c.Hear("ship the second open order")
					c.CallTools(vendorfixture.ToolCall{ID: "call_read", Name: "app_x_orders__list_orders", Args: `{"status":"open"}`})
				})
			}
		},
		OnToolOutput: func(c *vendorfixture.Conn, id string, out json.RawMessage) { outputs <- id + " " + string(out) },
		OnResponseCreate: func(c *vendorfixture.Conn) {
			if responses.Add(1) == 1 {
				c.CallTools(vendorfixture.ToolCall{ID: "call_write", Name: "app_x_orders__set_order_status", Args: `{"id":"A-1002","status":"shipped"}`})
				return
			}
			c.Say("A-1002 is shipped.", vendorfixture.Tone(24000, 200, 660))
		},
	}})
	s := startExternal(t, "VOICEBOX_OPENAI_URL="+fx.OpenAIURL(), "OPENAI_API_KEY="+fx.Key(), "GEMINI_API_KEY=")
	tab := s.tab
	harness.Eval[bool](tab, `(voicebox.externalApps.open('orders'), true)`)
	s.waitState(t, "orders", `s.live && s.tools.length === 2`)
	// The relay has the page's report before the session starts.
	for deadline := time.Now().Add(externalBound); len(modelView(t, s, false).Tools) != 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the relay never heard of the open app")
		}
	}
	chooseOpenAI(t, tab)
	clickMic(t, tab)

	conn := fx.Conn(t, 0, liveBound)
	// session reads the instruction and tool names of the n-th session.update the vendor got.
	session := func(n int) (string, string) {
		t.Helper()
		var f struct {
			Session struct {
				Instructions string
				Tools        []struct{ Name string }
			}
		}
		if err := json.Unmarshal(conn.WaitType(t, liveBound, "session.update", n).Raw, &f); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range f.Session.Tools {
			names = append(names, tl.Name)
		}
		return f.Session.Instructions, strings.Join(names, ",")
	}
	instruction, tools := session(1)
	for _, want := range []string{
		"## Order Book (app \"orders\")\nThe team's order book: the open orders, their customers and their status.\n<app-provided-tool-list>\n",
		"- app_x_orders__set_order_status (asks first): Change the status of one order.\n",
		"# Current view\nOrder Book:\n<app-provided-view>\ntitle: Order Book\nsummary: 3 orders: 2 open, 1 closed\n",
	} {
		if !strings.Contains(instruction, want) {
			t.Fatalf("the session's instruction lacks %q:\n%s", want, instruction)
		}
	}
	if !strings.HasSuffix(tools, ",app_x_orders__list_orders,app_x_orders__set_order_status,get_app_context") {
		t.Fatalf("the session's tools: %s", tools)
	}

	wait := func(what string) string {
		t.Helper()
		select {
		case out := <-outputs:
			return out
		case <-time.After(liveBound):
			t.Fatalf("the vendor got no output for %s", what)
			return ""
		}
	}
	if out := wait("the read"); !strings.HasPrefix(out, "call_read ") || !strings.Contains(out, "A-1001") || !strings.Contains(out, "A-1002") || strings.Contains(out, "A-1003") {
		t.Fatalf("the read-only tool answered %s", out)
	}
	prompt := harness.WaitFor[string](tab, `(document.querySelector('.xa-approval[data-tool="set_order_status"]') || {}).textContent`, liveBound)
	if !strings.Contains(prompt, "The assistant wants to run set_order_status in Order Book") {
		t.Fatalf("the approval prompt says %q", prompt)
	}
	harness.Eval[bool](tab, `(document.querySelector('.xa-approval[data-tool="set_order_status"] .xa-approve').click(), true)`)
	if out := wait("the write"); !strings.HasPrefix(out, "call_write ") || !strings.Contains(out, `Order A-1002 is now shipped.`) || !strings.Contains(out, `approved`) {
		t.Fatalf("the write tool answered %s", out)
	}
	if got := inFrame(t, tab, s.app.URL+"/", `document.querySelector('tr[data-id="A-1002"] td[data-status]').textContent`); got != "shipped" {
		t.Fatalf("the app shows %q for A-1002", got)
	}
	// After the turn the view is read again: the note now tells of the change, and only it.
	if update, _ := session(2); !strings.Contains(update, "summary: 3 orders: 1 open, 2 closed\n") || strings.Contains(update, "2 open, 1 closed") ||
		strings.Count(update, "# Current view") != 1 {
		t.Fatalf("after the turn the session got:\n%s", update)
	}
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'idle'`, liveBound)
}
