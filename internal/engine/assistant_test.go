package engine

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// assistantAPI is an Engine with an open memory workspace, a memory shelf (with the samples), a
// peer that records the tools frame, and the messages posted to the page.
type assistantAPI struct {
	*Engine
	mem    *fsroot.MemRoot
	door   routed
	mu     sync.Mutex
	posted []map[string]any
}

func newAssistantAPI(t *testing.T) *assistantAPI {
	t.Helper()
	a, mem := memoryAPI(t)
	x := &assistantAPI{Engine: a, mem: mem}
	shelf := fsroot.NewMemory()
	a.apps.openShelf = func(context.Context) (fsroot.Root, error) { return shelf, nil }
	a.post = func(msg []byte) {
		var m map[string]any
		json.Unmarshal(msg, &m)
		x.mu.Lock()
		x.posted = append(x.posted, m)
		x.mu.Unlock()
	}
	a.relay.peer = newPeer("ws://relay.invalid/channel", nil, func(PeerState) {})
	mustDo(t, a, "root.open", `{"kind":"opfs"}`, nil)
	a.ws.mu.Lock()
	x.door = routed{a, a.ws.exec}
	a.ws.mu.Unlock()
	return x
}

func (x *assistantAPI) relayCall(tool, args string) (map[string]any, error) {
	out, err := x.door.Execute(context.Background(), wire.Call{CallID: "c", Tool: tool, DescriptorID: executor.BuiltinDescriptor, Args: json.RawMessage(args), BoundsEcho: json.RawMessage(`{}`)})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	json.Unmarshal(out, &m)
	return m, nil
}

func (x *assistantAPI) opened() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var ids []string
	for _, m := range x.posted {
		if m["type"] == "miniapp.open" {
			ids = append(ids, m["entry"].(map[string]any)["appId"].(string))
		}
	}
	return ids
}

func (x *assistantAPI) toolsFrame() string {
	x.relay.peer.mu.Lock()
	defer x.relay.peer.mu.Unlock()
	return string(x.relay.peer.tools)
}

func TestTheAssistantsMiniAppToolsInTheWorker(t *testing.T) {
	t.Parallel()
	x := newAssistantAPI(t)

	list, err := x.relayCall("list-mini-apps", `{}`)
	if err != nil || list["count"].(float64) < 3 {
		t.Fatalf("list-mini-apps = %v, %v; want the samples", list, err)
	}
	if _, err := x.relayCall("list-mini-apps", `{"all":true}`); refusal.RuleOf(err) != refusal.InvalidArgument {
		t.Errorf("list-mini-apps with an unknown key: %v", err)
	}

	// A launch opens the app in the registry and asks the page to show its frame.
	got, err := x.relayCall("launch-mini-app", `{"name":"timer"}`)
	if err != nil || got["launched"] != true || got["id"] != "app_timer" {
		t.Fatalf("launch-mini-app = %v, %v", got, err)
	}
	if ids := x.opened(); len(ids) != 1 || ids[0] != "app_timer" || !x.apps.registry.IsOpen("app_timer") {
		t.Fatalf("the page was asked to open %v", ids)
	}
	if _, err := x.relayCall("launch-mini-app", `{"name":"no such app"}`); refusal.RuleOf(err) != refusal.MiniAppNotFound {
		t.Errorf("launching an unknown app: %v", err)
	}

	// Its registered tools reach the relay in a tools frame, and are called under their names.
	mustDo(t, x.Engine, "miniapps.register", `{"appId":"app_timer","tool":{"name":"start","description":"Start","parameters":{"type":"object","properties":{"seconds":{"type":"integer"}}}}}`, nil)
	name := miniapp.ModelName("app_timer", "start")
	if f := x.toolsFrame(); !strings.HasPrefix(f, `{"type":"tools","tools":[`) || !strings.Contains(f, name) {
		t.Fatalf("the tools frame is %s", f)
	}
	if _, err := x.relayCall(name, `{"seconds":"five"}`); refusal.RuleOf(err) != refusal.InvalidArgumentType {
		t.Errorf("an app tool with a bad argument: %v", err)
	}
	// The frame answers 42: the relay is told {"result":42}, an object as every observation is.
	answered := make(chan map[string]any, 1)
	go func() {
		m, err := x.relayCall(name, `{"seconds":5}`)
		if err != nil {
			t.Error(err)
		}
		answered <- m
	}()
	callID := ""
	for callID == "" {
		x.mu.Lock()
		for _, m := range x.posted {
			if m["type"] == "miniapp.call" {
				callID, _ = m["callId"].(string)
			}
		}
		x.mu.Unlock()
		runtime.Gosched()
	}
	mustDo(t, x.Engine, "miniapps.result", `{"callId":"`+callID+`","result":42}`, nil)
	if m := <-answered; m["result"] != 42.0 {
		t.Fatalf("a number from the app reached the relay as %v", m)
	}
	mustDo(t, x.Engine, "miniapps.close", `{"appId":"app_timer"}`, nil)
	if f := x.toolsFrame(); f != `{"type":"tools","tools":[]}` {
		t.Fatalf("after the app closed the tools frame is %s", f)
	}
	if _, err := x.relayCall(name, `{}`); refusal.RuleOf(err) != refusal.UnknownTool {
		t.Errorf("a closed app's tool: %v", err)
	}

	// create-mini-app writes the file through the executor (undoable) and opens it.
	html := `<!doctype html><title>Counter</title><p>0</p>`
	made, err := x.relayCall("create-mini-app", `{"title":"My Counter","html":`+quote(html)+`}`)
	if err != nil || made["path"] != "my-counter.html" || made["id"] != "page_my-counter" {
		t.Fatalf("create-mini-app = %v, %v", made, err)
	}
	if b, err := x.mem.ReadFile(context.Background(), "my-counter.html"); err != nil || string(b) != html {
		t.Fatalf("the workspace holds %q, %v", b, err)
	}
	if ids := x.opened(); ids[len(ids)-1] != "page_my-counter" {
		t.Fatalf("the page was asked to open %v", ids)
	}
	for _, c := range []struct {
		args string
		rule refusal.Rule
	}{
		{`{"title":"My Counter","html":"<p>"}`, refusal.MiniAppNameTaken},
		{`{"title":"!!!","html":"<p>"}`, refusal.InvalidMiniAppName},
		{`{"title":"Blank","html":"  "}`, refusal.MissingHTML},
		{`{"title":"Huge","html":` + quote(strings.Repeat("x", 4<<20+1)) + `}`, refusal.MiniAppTooLarge},
		{`{"title":"X","html":"<p>","extra":1}`, refusal.InvalidArgument},
	} {
		if _, err := x.relayCall("create-mini-app", c.args); refusal.RuleOf(err) != c.rule {
			t.Errorf("create-mini-app %.60s: %v, want %s", c.args, err, c.rule)
		}
	}
	if undo, err := x.relayCall("undo-last", `{}`); err != nil || undo["removed"] != true || undo["path"] != "my-counter.html" {
		t.Fatalf("undoing the created app = %v, %v", undo, err)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
