package assistant_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/shared/commands"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// rootTools are the built-ins that need a root; with none declared each is refused at once.
var rootTools = map[string]any{
	"read_file":        map[string]string{"name": "a.txt"},
	"write_file":       map[string]string{"name": "a.txt", "content": "x"},
	"list_files":       map[string]string{},
	"delete_file":      map[string]string{"name": "a.txt"},
	"edit_file":        map[string]string{"name": "a.txt", "oldText": "x", "newText": "y"},
	"grep_files":       map[string]string{"query": "x"},
	"undo_last_action": map[string]string{},
	"launch_mini_app":  map[string]string{"name": "timer"},
	"create_mini_app":  map[string]string{"title": "T", "html": "<p>"},
	"list_mini_apps":   map[string]string{},
}

func TestRouterWithNoRoot(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	for name, args := range rootTools {
		m := r.refused(refusal.RootNotDeclared, name, args)
		if !strings.Contains(m["why"].(string), "choose a folder") {
			t.Errorf("%s: the refusal does not say what to do: %v", name, m)
		}
	}
	// The extension tools run in the relay, root or not.
	if m := r.ok("list_extensions", map[string]string{}); m["catalogue"] == nil {
		t.Fatalf("list_extensions answered %v", m)
	}
}

func TestRouterWithAMachineRoot(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	dir := r.machine()
	ev := r.events()

	old := []byte("line one\nline two\n\x00\xff binary tail")
	os.WriteFile(filepath.Join(dir, "notes.md"), old, 0o644)
	w := r.ok("write_file", map[string]string{"name": "todo.txt", "content": "buy milk\n"})
	if w["created"] != true || w["undoable"] != true {
		t.Fatalf("write_file observed %v", w)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "todo.txt")); string(b) != "buy milk\n" {
		t.Fatalf("the machine's disk holds %q", b)
	}
	r.ok("edit_file", map[string]string{"name": "todo.txt", "oldText": "milk", "newText": "oat milk"})
	if got := r.ok("read_file", map[string]string{"name": "todo.txt"}); got["content"] != "buy oat milk\n" {
		t.Fatalf("read_file observed %v", got)
	}
	if got := r.ok("grep_files", map[string]string{"query": "OAT"}); got["count"] != 1.0 {
		t.Fatalf("grep_files observed %v", got)
	}
	if got := r.ok("list_files", map[string]string{}); got["count"] != 2.0 {
		t.Fatalf("list_files observed %v", got)
	}

	// A delete waits for the page's approval, which reaches it though a machine holds the root.
	answer := r.async("delete_file", map[string]string{"name": "notes.md"})
	asked := r.decideNext(ev, true)
	if asked.Data["tool"] != "delete_file" || !strings.Contains(asked.Data["summary"].(string), "notes.md") {
		t.Fatalf("the approval request says %v", asked.Data)
	}
	if d := wait(t, answer); d["deleted"] != true || d["approval"] != "approved" {
		t.Fatalf("delete_file answered %v", d)
	}
	if settled := next(t, ev, "approval-settled"); settled.Data["outcome"] != "approved" {
		t.Fatalf("the approval settled %v", settled.Data)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.md")); !os.IsNotExist(err) {
		t.Fatalf("notes.md is still on disk: %v", err)
	}
	// Undo brings it back byte for byte, then undoes the edit.
	if u := r.ok("undo_last_action", map[string]string{}); u["undone"] != "delete" || u["restored"] != true {
		t.Fatalf("undo answered %v", u)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(b) != string(old) {
		t.Fatalf("after undo notes.md holds %q", b)
	}
	r.ok("undo_last_action", map[string]string{})
	if b, _ := os.ReadFile(filepath.Join(dir, "todo.txt")); string(b) != "buy milk\n" {
		t.Fatalf("after the second undo todo.txt holds %q", b)
	}
	// The history is in the folder's hidden .voicebox, out of every tool's reach.
	if _, err := os.Stat(filepath.Join(dir, ".voicebox", "history")); err != nil {
		t.Fatalf("no history on the machine's disk: %v", err)
	}
	r.refused(refusal.DotfileRefused, "read_file", map[string]string{"name": ".voicebox/history"})

	// Mini-apps live in the page; none is the executor now.
	for _, name := range []string{"launch_mini_app", "create_mini_app", "list_mini_apps"} {
		r.refused(refusal.NoPage, name, rootTools[name])
	}
	if _, err := os.Stat(filepath.Join(dir, "t.html")); !os.IsNotExist(err) {
		t.Fatalf("create_mini_app wrote to the machine: %v", err)
	}
}

func TestRouterWithAPageRoot(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	p := r.page()
	changed := make(chan struct{}, 8)
	cancel := r.cat.OnChange(func() { changed <- struct{}{} })
	defer cancel()

	r.ok("write_file", map[string]string{"name": "a/b.txt", "content": "hello"})
	if b, err := p.root.ReadFile(context.Background(), "a/b.txt"); err != nil || string(b) != "hello" {
		t.Fatalf("the page's root holds %q, %v", b, err)
	}
	if got := r.ok("read_file", map[string]string{"name": "a/b.txt"}); got["content"] != "hello" {
		t.Fatalf("read_file observed %v", got)
	}

	// The mini-app store's tools go to the page, with their arguments as checked.
	r.ok("launch_mini_app", map[string]string{"name": "timer"})
	r.ok("create_mini_app", map[string]string{"title": "Counter", "html": "<p>0</p>"})
	r.ok("list_mini_apps", map[string]string{})
	seen := p.calls()
	if len(seen) != 3 || seen[0].Tool != "launch-mini-app" || string(seen[0].Args) != `{"name":"timer"}` ||
		seen[1].Tool != "create-mini-app" || seen[2].Tool != "list-mini-apps" {
		t.Fatalf("the page saw %+v", seen)
	}

	// The page reports an open app's tools: they join the catalogue and the instruction.
	appTool := miniapp.ModelName("app_timer", "start")
	decls, _ := json.Marshal([]tool.Declaration{{Name: appTool, Description: "Start the timer",
		Parameters: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"integer","minimum":1}},"required":["seconds"]}`)}})
	p.send(`{"type":"tools","tools":` + string(decls) + `}`)
	waitChange(t, changed)
	if !hasDecl(r.cat.Declarations(), appTool) || !strings.Contains(r.cat.Instruction(), appTool) {
		t.Fatalf("the page's tool is not offered: %v", names(r.cat.Declarations()))
	}
	r.refused(refusal.InvalidArgumentRange, appTool, map[string]int{"seconds": 0})
	r.refused(refusal.MissingArgument, appTool, map[string]int{})
	if got := r.ok(appTool, map[string]int{"seconds": 5}); got["page"] != appTool {
		t.Fatalf("the app tool answered %v", got)
	}
	if n := len(p.calls()); n != 4 {
		t.Fatalf("the page saw %d calls; refused ones must not reach it", n)
	}

	// The page goes away: its tools go with it, and the root is declared but unreachable.
	p.ws.CloseNow()
	waitChange(t, changed)
	r.waitRoot(func(h hub.Holding) bool { return !h.Connected })
	if hasDecl(r.cat.Declarations(), appTool) {
		t.Fatalf("the page left and its tool is still offered")
	}
	r.refused(refusal.UnknownTool, appTool, map[string]int{"seconds": 5})
	r.refused(refusal.NoPage, "read_file", map[string]string{"name": "a/b.txt"})
}

func waitChange(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(bound):
		t.Fatal("OnChange never fired")
	}
}

func hasDecl(decls []tool.Declaration, name string) bool {
	for _, d := range decls {
		if d.Name == name {
			return true
		}
	}
	return false
}

func names(decls []tool.Declaration) []string {
	var out []string
	for _, d := range decls {
		out = append(out, d.Name)
	}
	return out
}

func TestApprovalOutcomes(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: 300 * time.Millisecond})
	dir := r.machine()
	ev := r.events()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep me"), 0o644)

	// Denied: the model is told, and the file stays.
	answer := r.async("delete_file", map[string]string{"name": "keep.txt"})
	asked := r.decideNext(ev, false)
	if d := wait(t, answer); d["refused"] != string(refusal.ApprovalDenied) {
		t.Fatalf("a denied delete answered %v", d)
	}
	if settled := next(t, ev, "approval-settled"); settled.Data["outcome"] != "denied" {
		t.Fatalf("settled %v", settled.Data)
	}
	// A second decision finds nothing waiting.
	if code, m := r.post("/api/approvals/"+asked.Data["id"].(string), map[string]bool{"approve": true}); code != http.StatusNotFound || m["refused"] != "not-found" {
		t.Fatalf("a late decision answered %d %v", code, m)
	}
	// No decision before the deadline: timed out, the file stays.
	if d := r.call("delete_file", map[string]string{"name": "keep.txt"}); d["refused"] != string(refusal.ApprovalTimedOut) {
		t.Fatalf("an unanswered delete answered %v", d)
	}
	if settled := next(t, ev, "approval-settled"); settled.Data["outcome"] != "timed-out" {
		t.Fatalf("settled %v", settled.Data)
	}
	// The caller stops waiting: the same.
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan json.RawMessage, 1)
	go func() { got <- r.cat.Call(ctx, "delete_file", json.RawMessage(`{"name":"keep.txt"}`)) }()
	next(t, ev, "approval")
	cancel()
	var m map[string]any
	json.Unmarshal(<-got, &m)
	if m["refused"] != string(refusal.ApprovalTimedOut) {
		t.Fatalf("an abandoned delete answered %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "keep me" {
		t.Fatalf("keep.txt holds %q", b)
	}
	// A page that subscribes while a request waits is told of it in hello.
	slow := assistant.Options{ApprovalTimeout: bound}
	r2 := newRig(t, slow)
	dir2 := r2.machine()
	r2.events() // one page listens, so the request waits
	os.WriteFile(filepath.Join(dir2, "x.txt"), []byte("x"), 0o644)
	answer = r2.async("delete_file", map[string]string{"name": "x.txt"})
	var pending []any
	for deadline := time.Now().Add(bound); len(pending) == 0 && time.Now().Before(deadline); {
		resp, err := http.Get(r2.url + "/api/approvals")
		if err != nil {
			t.Fatal(err)
		}
		var list map[string]any
		json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		pending, _ = list["approvals"].([]any)
		time.Sleep(5 * time.Millisecond)
	}
	hello := next(t, r2.events(), "hello")
	waiting, _ := hello.Data["approvals"].([]any)
	if len(waiting) != 1 || hello.Data["mode"] != "offline" {
		t.Fatalf("hello says %v", hello.Data)
	}
	id := waiting[0].(map[string]any)["id"].(string)
	if code, _ := r2.post("/api/approvals/"+id, map[string]any{}); code != http.StatusBadRequest {
		t.Fatalf("a decision without approve answered %d", code)
	}
	r2.post("/api/approvals/"+id, map[string]bool{"approve": true})
	if d := wait(t, answer); d["approval"] != "approved" {
		t.Fatalf("answered %v", d)
	}
}

// TestEveryRefusalPerTool calls each built-in in each way it can be refused, on a machine root
// (the page's worker runs the same executor; tests/assistant_test.go drives it in Chromium).
func TestEveryRefusalPerTool(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: 200 * time.Millisecond})
	dir := r.machine()
	os.WriteFile(filepath.Join(dir, "twice.txt"), []byte("ab ab"), 0o644)
	os.Mkdir(filepath.Join(dir, "folder"), 0o755)
	long := strings.Repeat("a/", 40) + "x"
	type c struct {
		tool string
		args any
		rule refusal.Rule
	}
	cases := []c{
		{"no_such_tool", map[string]string{}, refusal.UnknownTool},
		{"undo_last_action", map[string]string{}, refusal.NothingToUndo},
		{"redo_last_action", map[string]string{}, refusal.NothingToRedo},
	}
	// The argument rules and the path rules of every file tool.
	for _, tool := range []string{"read_file", "write_file", "delete_file", "edit_file"} {
		base := map[string]string{"read_file": `{}`, "write_file": `{"content":"x"}`, "delete_file": `{}`, "edit_file": `{"oldText":"a","newText":"b"}`}[tool]
		with := func(extra string) json.RawMessage {
			if base == `{}` {
				return json.RawMessage("{" + extra + "}")
			}
			return json.RawMessage(strings.TrimSuffix(base, "}") + "," + extra + "}")
		}
		cases = append(cases,
			c{tool, json.RawMessage(base), refusal.MissingArgument},
			c{tool, with(`"name":null`), refusal.MissingArgument},
			c{tool, with(`"name":7`), refusal.InvalidArgumentType},
			c{tool, with(`"name":"a.txt","mode":"x"`), refusal.InvalidArgument},
			c{tool, with(`"name":"a.txt","__proto__":{}`), refusal.InvalidArgument},
			c{tool, with(`"name":""`), refusal.OutsideRoot},
			c{tool, with(`"name":"../etc/passwd"`), refusal.OutsideRoot},
			c{tool, with(`"name":".voicebox/history"`), refusal.DotfileRefused},
			c{tool, with(`"name":"` + long + `"`), refusal.PathTooLong},
			c{tool, with(`"name":"folder"`), refusal.IsADirectory},
		)
		if tool != "write_file" {
			cases = append(cases, c{tool, with(`"name":"missing.txt"`), refusal.NotFound})
		}
	}
	cases = append(cases,
		c{"read_file", map[string]any{"name": "twice.txt", "head": 1, "tail": 1}, refusal.InvalidArgument},
		c{"read_file", map[string]any{"name": "twice.txt", "head": 0}, refusal.InvalidArgumentRange},
		c{"read_files", map[string]any{}, refusal.MissingArgument},
		c{"read_files", map[string]any{"names": "twice.txt"}, refusal.InvalidArgumentType},
		c{"read_files", map[string]any{"names": []string{}}, refusal.InvalidArgumentRange},
		c{"read_files", map[string]any{"names": strings.Split("a,b,c,d,e,f,g,h,i", ",")}, refusal.InvalidArgumentRange},
		c{"read_media_file", map[string]string{"name": "twice.txt"}, refusal.NotMedia},
		c{"read_media_file", map[string]string{"name": "missing.png"}, refusal.NotFound},
		c{"read_media_file", map[string]string{"name": "../x.png"}, refusal.OutsideRoot},
		c{"move_file", map[string]string{"from": "twice.txt"}, refusal.MissingArgument},
		c{"move_file", map[string]string{"from": "missing.txt", "to": "b.txt"}, refusal.NotFound},
		c{"move_file", map[string]string{"from": "twice.txt", "to": "folder"}, refusal.FileExists},
		c{"move_file", map[string]string{"from": "folder", "to": "twice.txt/b.txt"}, refusal.NotADirectory},
		c{"move_file", map[string]string{"from": "folder", "to": "folder/inner"}, refusal.InvalidArgument},
		c{"move_file", map[string]string{"from": "twice.txt", "to": "../b.txt"}, refusal.OutsideRoot},
		c{"move_file", map[string]string{"from": "twice.txt", "to": ".hidden"}, refusal.DotfileRefused},
		c{"create_folder", map[string]string{}, refusal.MissingArgument},
		c{"create_folder", map[string]string{"name": "twice.txt/sub"}, refusal.FileExists},
		c{"create_folder", map[string]string{"name": "../up"}, refusal.OutsideRoot},
		c{"create_folder", map[string]string{"name": "a/.git"}, refusal.DotfileRefused},
		c{"file_info", map[string]string{}, refusal.MissingArgument},
		c{"file_info", map[string]string{"name": "missing"}, refusal.NotFound},
		c{"file_info", map[string]string{"name": ".voicebox"}, refusal.DotfileRefused},
		c{"directory_tree", map[string]any{"depth": 0}, refusal.InvalidArgumentRange},
		c{"directory_tree", map[string]string{"dir": "missing"}, refusal.NotFound},
		c{"directory_tree", map[string]string{"dir": "twice.txt"}, refusal.NotADirectory},
		c{"edit_file", map[string]any{"name": "twice.txt", "oldText": "ab", "newText": "x", "dryRun": "yes"}, refusal.InvalidArgumentType},
		c{"edit_file", map[string]any{"name": "twice.txt", "oldTexts": []string{"abab", "zz"}, "newTexts": []string{"b", "c"}}, refusal.OldTextNotFound},
		c{"write_file", map[string]string{"name": "twice.txt/x", "content": "x"}, refusal.NotADirectory},
		c{"write_file", map[string]string{"name": "big.txt", "content": strings.Repeat("x", 70<<10)}, refusal.InvalidToolArguments},
		c{"list_files", map[string]string{"dir": "missing"}, refusal.NotFound},
		c{"list_files", map[string]string{"dir": "twice.txt"}, refusal.NotADirectory},
		c{"list_files", map[string]string{"dir": "../x"}, refusal.OutsideRoot},
		c{"list_files", map[string]int{"dir": 1}, refusal.InvalidArgumentType},
		c{"edit_file", map[string]string{"name": "twice.txt", "oldText": "zz", "newText": "y"}, refusal.OldTextNotFound},
		c{"edit_file", map[string]string{"name": "twice.txt", "oldText": "ab", "newText": "y"}, refusal.OldTextAmbiguous},
		c{"edit_file", map[string]string{"name": "twice.txt", "oldText": "", "newText": "y"}, refusal.OldTextAmbiguous},
		c{"grep_files", map[string]string{"query": ""}, refusal.InvalidArgumentLength},
		c{"grep_files", map[string]string{}, refusal.MissingArgument},
		c{"grep_files", map[string]string{"query": "a", "dir": "missing"}, refusal.NotFound},
		c{"grep_files", map[string]string{"query": "a", "dir": ".voicebox"}, refusal.DotfileRefused},
		c{"delete_file", map[string]string{"name": "twice.txt"}, refusal.NoPage}, // no page listens to ask
		c{"undo_last_action", map[string]string{"force": "yes"}, refusal.InvalidArgument},
		c{"launch_mini_app", map[string]string{}, refusal.MissingArgument},
		c{"launch_mini_app", map[string]string{"name": "timer"}, refusal.NoPage},
		c{"create_mini_app", map[string]string{"title": "", "html": "<p>"}, refusal.InvalidArgumentLength},
		c{"create_mini_app", map[string]string{"title": "T"}, refusal.MissingArgument},
		c{"create_mini_app", map[string]string{"title": "T", "html": "<p>"}, refusal.NoPage},
		c{"list_mini_apps", map[string]string{"x": "y"}, refusal.InvalidArgument},
		c{"list_mini_apps", map[string]string{}, refusal.NoPage},
		c{"list_extensions", map[string]string{"x": "y"}, refusal.InvalidArgument},
		c{"call_extension", map[string]string{}, refusal.MissingArgument},
		c{"call_extension", map[string]string{"name": "nothing"}, refusal.UnknownTool},
		c{"call_extension", map[string]string{"name": "nothing", "arguments": "[1]"}, refusal.InvalidArgumentType},
		c{"propose_extension", map[string]string{"descriptor": "{not json"}, refusal.BadDescriptor},
		c{"propose_extension", map[string]string{"descriptor": "{}"}, refusal.BadDescriptor},
		c{"propose_extension", map[string]string{}, refusal.MissingArgument},
		c{"diff_file", map[string]string{"name": "a.txt"}, refusal.MissingArgument},
		c{"diff_file", map[string]string{"name": "../a.txt", "content": "x"}, refusal.OutsideRoot},
		c{"diff_file", map[string]string{"name": ".env", "content": "x"}, refusal.DotfileRefused},
		c{"diff_file", map[string]string{"name": "folder", "content": "x"}, refusal.IsADirectory},
		c{"diff_file", map[string]any{"name": "a.txt", "content": 3}, refusal.InvalidArgumentType},
		c{"list_tools", map[string]string{"x": "y"}, refusal.InvalidArgument},
		c{"list_tools", map[string]int{"kind": 1}, refusal.InvalidArgumentType},
		c{"search_tools", map[string]string{}, refusal.MissingArgument},
		c{"search_tools", map[string]string{"query": ""}, refusal.InvalidArgumentLength},
		c{"search_tools", map[string]any{"query": "x", "limit": 0}, refusal.InvalidArgumentRange},
		c{"search_tools", json.RawMessage(`{"query":"x","limit":1e999}`), refusal.InvalidArgument},
	)
	for _, cs := range cases {
		m := r.call(cs.tool, cs.args)
		if m["refused"] != string(cs.rule) {
			t.Errorf("%s %s answered %v, want %s", cs.tool, jsonOf(cs.args), m, cs.rule)
		}
	}
	// Undo refuses to overwrite a change made after the model's.
	r.ok("write_file", map[string]string{"name": "u.txt", "content": "model"})
	os.WriteFile(filepath.Join(dir, "u.txt"), []byte("person"), 0o644)
	r.refused(refusal.UndoConflict, "undo_last_action", map[string]string{})
	// Every tool was covered.
	covered := map[string]bool{}
	for _, cs := range cases {
		covered[cs.tool] = true
	}
	for _, d := range commands.Builtins().Declarations() {
		if !covered[d.Name] {
			t.Errorf("no refusal of %s is tested", d.Name)
		}
	}
}

func jsonOf(v any) string {
	if raw, ok := v.(json.RawMessage); ok {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestExtensionTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	dir := r.machine()
	ev := r.events()
	desc := `{"id":"scribe","name":"Scribe","description":"Writes notes.","source":"local","capabilities":["write"],"bounds":{},` +
		`"tools":[{"name":"write_note","description":"Write a note.","primitive":"write-file","params":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}}]}`
	p := r.ok("propose_extension", map[string]string{"descriptor": desc})
	if p["staged"] != "scribe" || !strings.Contains(p["note"].(string), "admits it") {
		t.Fatalf("propose_extension answered %v", p)
	}
	// Staged is not admitted.
	r.refused(refusal.UnknownTool, "call_extension", map[string]string{"name": "write_note"})
	if _, err := r.exts.Admissions.Decide("scribe", true, "host-token", nil); err != nil {
		t.Fatal(err)
	}
	if err := r.exts.Reload(); err != nil {
		t.Fatal(err)
	}
	list := r.ok("list_extensions", map[string]string{})
	if admitted, _ := list["admitted"].([]any); len(admitted) != 1 {
		t.Fatalf("list_extensions answered %v", list)
	}
	// A writing extension waits for the user; denied, it never runs.
	answer := r.async("call_extension", map[string]string{"name": "write_note", "arguments": `{"path":"n.txt","content":"x"}`})
	if asked := r.decideNext(ev, false); !strings.Contains(asked.Data["summary"].(string), "scribe") {
		t.Fatalf("the approval says %v", asked.Data)
	}
	if d := wait(t, answer); d["refused"] != string(refusal.ApprovalDenied) {
		t.Fatalf("a denied extension write answered %v", d)
	}
	// The request names the file to be written, however long the content before it.
	long := `{"content":"` + strings.Repeat("harmless ", 40) + `","path":"target.txt"}`
	answer = r.async("call_extension", map[string]string{"name": "write_note", "arguments": long})
	if asked := r.decideNext(ev, false); !strings.Contains(asked.Data["summary"].(string), "target.txt") {
		t.Fatalf("the approval does not name the file it writes: %v", asked.Data["summary"])
	}
	wait(t, answer)
	// Approved, it runs on the root's executor, which holds the admitted set and verifies the
	// call's attribution against it.
	answer = r.async("call_extension", map[string]string{"name": "write_note", "arguments": `{"path":"n.txt","content":"x"}`})
	r.decideNext(ev, true)
	if d := wait(t, answer); d["refused"] != nil || d["approval"] != "approved" {
		t.Fatalf("an approved extension write answered %v", d)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "n.txt")); err != nil || string(b) != "x" {
		t.Fatalf("after the approved write the machine's disk holds %q, %v", b, err)
	}
}

func TestTurnRoute(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	r.machine()
	ev := r.events()
	code, turn := r.post("/api/turn", map[string]string{"transcript": "write todo.txt: buy milk"})
	if code != http.StatusOK || turn["ok"] != true || turn["mode"] != "offline" || !strings.Contains(turn["understood"].(string), "todo.txt") {
		t.Fatalf("the turn answered %d %v", code, turn)
	}
	if a := turn["action"].(map[string]any); a["verb"] != "write_file" || a["content"] != "buy milk" {
		t.Fatalf("the turn's action is %v", a)
	}
	if call := next(t, ev, "call"); call.Data["turnId"] != turn["turnId"] || call.Data["source"] != "turn" || call.Data["ok"] != true {
		t.Fatalf("the call event says %v", call.Data)
	}
	_, read := r.post("/api/turn", map[string]any{"action": map[string]string{"verb": "read_file", "name": "todo.txt"}})
	if res := read["result"].(map[string]any); res["content"] != "buy milk" {
		t.Fatalf("the action turn answered %v", read)
	}
	_, unknown := r.post("/api/turn", map[string]string{"transcript": "sing me a song"})
	if unknown["ok"] != false || unknown["refused"] != "not-understood" || !strings.Contains(unknown["help"].(string), "write todo.txt: buy milk") {
		t.Fatalf("a turn not understood answered %v", unknown)
	}
	_, bad := r.post("/api/turn", map[string]any{"action": map[string]string{"verb": "format_disk"}})
	if bad["refused"] != "unknown-tool" {
		t.Fatalf("an unknown verb answered %v", bad)
	}
	for _, body := range []any{map[string]any{}, map[string]any{"transcript": "ls", "action": map[string]string{"verb": "list_files"}}} {
		if code, m := r.post("/api/turn", body); code != http.StatusBadRequest || m["refused"] != "invalid-argument" {
			t.Fatalf("%v answered %d %v", body, code, m)
		}
	}
	resp, err := http.Get(r.url + "/api/assistant")
	if err != nil {
		t.Fatal(err)
	}
	var status map[string]any
	json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	if status["mode"] != "offline" || !strings.Contains(status["instruction"].(string), "undo_last_action") {
		t.Fatalf("GET /api/assistant answered %v", status)
	}
	live := newRig(t, assistant.Options{Live: func() bool { return true }})
	if _, m := live.post("/api/turn", map[string]string{"transcript": "help"}); m["mode"] != "live" || m["ok"] != true || m["help"] == "" {
		t.Fatalf("help with a live model answered %v", m)
	}
}

// TestClosingSettlesApprovals: at shutdown a waiting delete is told timed out at once, and so is
// one asked afterwards; nothing is deleted.
func TestClosingSettlesApprovals(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: bound})
	dir := r.machine()
	ev := r.events()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	answer := r.async("delete_file", map[string]string{"name": "a.txt"})
	next(t, ev, "approval")
	r.cat.Close()
	if d := wait(t, answer); d["refused"] != string(refusal.ApprovalTimedOut) || !strings.Contains(d["why"].(string), "shutting down") {
		t.Fatalf("a waiting delete at shutdown answered %v", d)
	}
	r.refused(refusal.ApprovalTimedOut, "delete_file", map[string]string{"name": "a.txt"})
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatalf("a.txt is gone: %v", err)
	}
}

// TestTypedCreateNeverReplaces: "create", "new" and "make" ask for a new file; typed about a file
// that exists, they are refused file-exists and the file keeps its content. "write" replaces.
func TestTypedCreateNeverReplaces(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	dir := r.machine()
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("precious"), 0o644)
	for _, typed := range []string{"create notes.md", "new notes.md", "make notes.md: hello", "create file notes.md"} {
		code, turn := r.post("/api/turn", map[string]string{"transcript": typed})
		if code != http.StatusOK || turn["ok"] != false || turn["refused"] != string(refusal.FileExists) {
			t.Errorf("%q answered %d %v, want file-exists", typed, code, turn)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(b) != "precious" {
		t.Fatalf("notes.md holds %q", b)
	}
	if _, turn := r.post("/api/turn", map[string]string{"transcript": "create fresh.md"}); turn["ok"] != true {
		t.Fatalf("creating a new file answered %v", turn)
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh.md")); err != nil {
		t.Fatal(err)
	}
	if _, turn := r.post("/api/turn", map[string]string{"transcript": "write notes.md: replaced"}); turn["ok"] != true {
		t.Fatalf("a typed write answered %v", turn)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(b) != "replaced" {
		t.Fatalf("after write, notes.md holds %q", b)
	}
}

// TestAnApprovedDeleteStaysOnItsRoot: the person approves deleting a file of the workspace they
// were asked about; when another executor took the root meanwhile (a paired machine), the
// delete is refused root-changed rather than run on that other folder.
func TestAnApprovedDeleteStaysOnItsRoot(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: bound})
	p := r.page()
	ev := r.events()
	if err := p.root.WriteFile(context.Background(), "keep.txt", []byte("the page's")); err != nil {
		t.Fatal(err)
	}
	answer := r.async("delete_file", map[string]string{"name": "keep.txt"})
	asked := next(t, ev, "approval")
	dir := r.machine() // takes the root from the page
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("the machine's"), 0o644)
	if code, m := r.post("/api/approvals/"+asked.Data["id"].(string), map[string]bool{"approve": true}); code != http.StatusOK {
		t.Fatalf("deciding: %d %v", code, m)
	}
	if d := wait(t, answer); d["refused"] != string(refusal.RootChanged) {
		t.Fatalf("a delete approved for the page's folder, with a machine holding the root, answered %v", d)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "keep.txt")); err != nil || string(b) != "the machine's" {
		t.Fatalf("the machine's keep.txt: %q, %v", b, err)
	}
}

// TestPendingApprovalsAreBounded: a model that asks for more deletes at once than the page can
// show gets the extra ones refused at once; the ones waiting are unaffected.
func TestPendingApprovalsAreBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: bound})
	dir := r.machine()
	ev := r.events()
	var answers []<-chan map[string]any
	for i := range assistant.MaxPendingApprovals {
		name := fmt.Sprintf("f%02d.txt", i)
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
		answers = append(answers, r.async("delete_file", map[string]string{"name": name}))
		next(t, ev, "approval")
	}
	os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644)
	if d := r.call("delete_file", map[string]string{"name": "extra.txt"}); d["refused"] != string(refusal.TooManyApprovals) {
		t.Fatalf("a delete past %d waiting answered %v", assistant.MaxPendingApprovals, d)
	}
	r.cat.Close() // settles the waiting ones
	for _, a := range answers {
		if d := wait(t, a); d["refused"] != string(refusal.ApprovalTimedOut) {
			t.Fatalf("a waiting delete answered %v", d)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "extra.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestAnMCPClientsApprovalNamesIt: a delete from an MCP client asks the page in a request that
// names the client, and the call event says where it came from; with no page listening, the same
// delete is refused no-page at once and nothing is deleted.
func TestAnMCPClientsApprovalNamesIt(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{ApprovalTimeout: bound})
	dir := r.machine()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	ctx, cancel := context.WithTimeout(assistant.WithMCPClient(context.Background(), "desktop"), bound)
	defer cancel()
	var nobody map[string]any
	json.Unmarshal(r.cat.Call(ctx, "delete_file", json.RawMessage(`{"name":"a.txt"}`)), &nobody)
	if nobody["refused"] != string(refusal.NoPage) {
		t.Fatalf("with no page listening the delete answered %v", nobody)
	}
	ev := r.events()
	answer := make(chan map[string]any, 1)
	go func() {
		var m map[string]any
		json.Unmarshal(r.cat.Call(ctx, "delete_file", json.RawMessage(`{"name":"a.txt"}`)), &m)
		answer <- m
	}()
	asked := next(t, ev, "approval")
	if asked.Data["client"] != "desktop" || !strings.Contains(asked.Data["summary"].(string), `MCP client "desktop"`) {
		t.Fatalf("the request does not name the client: %v", asked.Data)
	}
	r.post("/api/approvals/"+asked.Data["id"].(string), map[string]bool{"approve": false})
	if d := wait(t, answer); d["refused"] != string(refusal.ApprovalDenied) {
		t.Fatalf("a denied delete answered %v", d)
	}
	for {
		call := next(t, ev, "call")
		if call.Data["tool"] == "delete_file" {
			if call.Data["source"] != "mcp" || call.Data["client"] != "desktop" {
				t.Fatalf("the call event says %v", call.Data)
			}
			break
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatalf("a.txt is gone: %v", err)
	}
}

// TestTheOriginalsNewTools: diff_file runs on the root's executor over /channel and writes
// nothing; list_tools and search_tools answer without a root, from the catalogue.
func TestTheOriginalsNewTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, assistant.Options{})
	// Without a root the index still answers, and diff_file is refused as every file tool is.
	list := r.ok("list_tools", map[string]string{})
	if n, _ := list["counts"].(map[string]any)["native"].(float64); int(n) != len(commands.Builtins().Declarations()) {
		t.Fatalf("list_tools without a root: %v", list["counts"])
	}
	r.refused(refusal.RootNotDeclared, "diff_file", map[string]string{"name": "a.txt", "content": "x"})
	found := r.ok("search_tools", map[string]any{"query": "diff", "limit": 1})
	tools, _ := found["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "diff_file" || found["query"] != "diff" {
		t.Fatalf("search_tools diff: %v", found)
	}
	dir := r.machine()
	os.WriteFile(filepath.Join(dir, "plan.txt"), []byte("one\ntwo\n"), 0o644)
	d := r.ok("diff_file", map[string]string{"name": "plan.txt", "content": "one\n2\n"})
	if d["changed"] != true || !strings.Contains(d["diff"].(string), "-two\n+2") {
		t.Fatalf("diff_file: %v", d)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "plan.txt")); string(b) != "one\ntwo\n" {
		t.Fatalf("diff_file wrote the file: %q", b)
	}
	// The extensions are indexed: the catalogue's, staged with propose_extension.
	ext := r.ok("list_tools", map[string]string{"kind": "extension"})
	for _, e := range ext["tools"].([]any) {
		if m := e.(map[string]any); m["status"] != "catalogue" || m["invocation"].(map[string]any)["tool"] != "propose_extension" {
			t.Fatalf("an extension entry %v", m)
		}
	}
	if ext["count"] == 0.0 {
		t.Fatal("the catalogue is not indexed")
	}
}
