package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/externalapp"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestExternalAppCallsGoToTheMainThread: the relay's calls of external app tools and
// get_app_context are posted to the page as externalapp.call and settled by
// externalapps.result; other names keep their routes.
func TestExternalAppCallsGoToTheMainThread(t *testing.T) {
	t.Parallel()
	a := newEngine(time.Now(), nil)
	posted := make(chan map[string]any, 8)
	a.post = func(msg []byte) {
		var m map[string]any
		json.Unmarshal(msg, &m)
		posted <- m
	}
	r := routed{a, newExecutor(context.Background(), fsroot.NewMemory(), nil, nil)}

	answer := func(m map[string]any, result string) {
		in := fmt.Sprintf(`{"type":"call","id":1,"method":"externalapps.result","params":{"callId":%q,%s}}`, m["callId"], result)
		if out := string(a.handle([]byte(in))); !strings.Contains(out, `"accepted":true`) {
			t.Errorf("externalapps.result answered %s", out)
		}
	}
	call := func(name, args string) (json.RawMessage, error) {
		return r.Execute(context.Background(), wire.Call{CallID: "c1", Tool: name, Args: json.RawMessage(args)})
	}
	type res struct {
		out json.RawMessage
		err error
	}
	run := func(name, args string) chan res {
		ch := make(chan res, 1)
		go func() { out, err := call(name, args); ch <- res{out, err} }()
		return ch
	}

	name := externalapp.ModelName("orders", "set_order_status")
	done := run(name, `{"id":"A-1"}`)
	m := <-posted
	if m["type"] != "externalapp.call" || m["name"] != name || m["args"].(map[string]any)["id"] != "A-1" {
		t.Fatalf("posted %v", m)
	}
	answer(m, `"result":{"text":"done"}`)
	if got := <-done; got.err != nil || string(got.out) != `{"text":"done"}` {
		t.Fatalf("the call answered %s %v", got.out, got.err)
	}

	done = run(externalapp.ContextTool, `{"app":"orders"}`)
	m = <-posted
	answer(m, `"refused":"external-app-navigated","why":"the app loaded another document"`)
	if got := <-done; refusal.RuleOf(got.err) != refusal.ExternalAppNavigated {
		t.Fatalf("a refused call answered %s %v", got.out, got.err)
	}

	done = run(name, `{}`)
	m = <-posted
	answer(m, `"result":"not an object"`)
	if got := <-done; refusal.RuleOf(got.err) != refusal.ExecThrew {
		t.Fatalf("a non-object answer: %s %v", got.out, got.err)
	}

	done = run(name, `{}`)
	m = <-posted
	answer(m, `"result":{"text":"`+strings.Repeat("x", maxExternalAnswerBytes)+`"}`)
	if got := <-done; refusal.RuleOf(got.err) != refusal.ToolOutputOverBudget {
		t.Fatalf("an oversized answer: %v", got.err)
	}

	// The caller stops waiting: the page is told to cancel.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := r.Execute(ctx, wire.Call{Tool: name, Args: json.RawMessage(`{}`)}); errc <- err }()
	m = <-posted
	cancel()
	if err := <-errc; err != context.Canceled {
		t.Fatalf("a cancelled call: %v", err)
	}
	if c := <-posted; c["type"] != "externalapp.cancel" || c["callId"] != m["callId"] {
		t.Fatalf("after the cancel, posted %v", c)
	}

	// A sandboxed mini-app's name still goes to the registry, and a built-in to the executor.
	if _, err := call(miniapp.ModelName("app_scoreboard", "add_points"), `{}`); refusal.RuleOf(err) != refusal.UnknownTool {
		t.Fatalf("a sandboxed name: %v", err)
	}
	if out, err := call("now", `{}`); err != nil || !strings.Contains(string(out), `"unixMs"`) {
		t.Fatalf("a built-in: %s %v", out, err)
	}
	select {
	case m := <-posted:
		t.Fatalf("a call that is not an external app's reached the page: %v", m)
	default:
	}
}

// TestExternalAppsReportRidesTheToolsFrame: the main thread's report of its open external apps
// goes to the relay in the tools frame, and an empty report takes it out again.
func TestExternalAppsReportRidesTheToolsFrame(t *testing.T) {
	t.Parallel()
	x := newAssistantAPI(t)
	report := `{"apps":[{"id":"orders","live":true,"context":true,"tools":[{"name":"list_orders","description":"List.","readOnly":true}]}]}`
	mustDo(t, x.Engine, "externalapps.report", report, nil)
	if f := x.toolsFrame(); f != `{"type":"tools","tools":[],"externalApps":`+report+`}` {
		t.Fatalf("the tools frame is %s", f)
	}
	mustDo(t, x.Engine, "externalapps.report", `{"apps":[]}`, nil)
	if f := x.toolsFrame(); f != `{"type":"tools","tools":[]}` {
		t.Fatalf("after the apps closed, the tools frame is %s", f)
	}
	out := string(x.handle([]byte(`{"type":"call","id":9,"method":"externalapps.report","params":{"apps":[{"id":"` + strings.Repeat("x", maxExternalReportBytes) + `"}]}}`)))
	if !strings.Contains(out, `"refused":"tool-output-over-budget"`) {
		t.Fatalf("an oversized report: %.200s", out)
	}
}
