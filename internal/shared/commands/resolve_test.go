package commands

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestResolveTypedCommands(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, name, args string
	}{
		{"list files", ListFiles, `{}`},
		{"ls", ListFiles, `{}`},
		{"List Files.", ListFiles, `{}`},
		{"what files are there?", ListFiles, `{}`},
		{"files", ListFiles, `{}`},
		{"list files in docs", ListFiles, `{"dir":"docs"}`},
		{"ls docs/2026/", ListFiles, `{"dir":"docs/2026"}`},
		{"show files in \"my folder\"", ListFiles, `{"dir":"my folder"}`},
		{"read notes.md", ReadFile, `{"name":"notes.md"}`},
		{"cat docs/plan.txt", ReadFile, `{"name":"docs/plan.txt"}`},
		{"show notes.md", ReadFile, `{"name":"notes.md"}`},
		{"open notes.md", ReadFile, `{"name":"notes.md"}`},
		{"read \"my notes.md\"", ReadFile, `{"name":"my notes.md"}`},
		{"read file notes.md", ReadFile, `{"name":"notes.md"}`},
		{"write todo.txt: buy milk", WriteFile, `{"content":"buy milk","name":"todo.txt"}`},
		{"write todo.txt:buy: milk", WriteFile, `{"content":"buy: milk","name":"todo.txt"}`},
		{"save \"a b.txt\": x", WriteFile, `{"content":"x","name":"a b.txt"}`},
		{"create file empty.txt", WriteFile, `{"content":"","name":"empty.txt"}`},
		{"new notes.md", WriteFile, `{"content":"","name":"notes.md"}`},
		{"delete old.txt", DeleteFile, `{"name":"old.txt"}`},
		{"rm \"a b.txt\"", DeleteFile, `{"name":"a b.txt"}`},
		{"remove notes.md.", DeleteFile, `{"name":"notes.md"}`},
		{`in notes.md replace "milk" with "oat milk"`, EditFile, `{"name":"notes.md","newText":"oat milk","oldText":"milk"}`},
		{`edit notes.md: replace milk with oat milk`, EditFile, `{"name":"notes.md","newText":"oat milk","oldText":"milk"}`},
		{`replace "a with b" with "c" in x.txt`, EditFile, `{"name":"x.txt","newText":"c","oldText":"a with b"}`},
		{`replace milk with "" in todo.txt`, EditFile, `{"name":"todo.txt","newText":"","oldText":"milk"}`},
		{"search for milk", GrepFiles, `{"query":"milk"}`},
		{"grep TODO", GrepFiles, `{"query":"TODO"}`},
		{"find buy milk in docs", GrepFiles, `{"dir":"docs","query":"buy milk"}`},
		{`search for "milk in the fridge"`, GrepFiles, `{"query":"milk in the fridge"}`},
		{`look for "x" in src/`, GrepFiles, `{"dir":"src","query":"x"}`},
		{"open timer", LaunchMiniApp, `{"name":"timer"}`},
		{"open the timer app", LaunchMiniApp, `{"name":"timer"}`},
		{"launch Pomodoro Timer", LaunchMiniApp, `{"name":"Pomodoro Timer"}`},
		{"open game.html", LaunchMiniApp, `{"name":"game.html"}`},
		{"list apps", ListMiniApps, `{}`},
		{"apps", ListMiniApps, `{}`},
		{"create app Counter: <!doctype html><p>0</p>", CreateMiniApp, `{"html":"<!doctype html><p>0</p>","title":"Counter"}`},
		{"list extensions", ListExtensions, `{}`},
		{`call web_search {"query":"weather"}`, CallExtension, `{"arguments":"{\"query\":\"weather\"}","name":"web_search"}`},
		{`call extension read_note with {"path":"a"}`, CallExtension, `{"arguments":"{\"path\":\"a\"}","name":"read_note"}`},
		{`propose extension {"id":"x"}`, ProposeExtension, `{"descriptor":"{\"id\":\"x\"}"}`},
		{"undo", UndoLastAction, `{}`},
		{"redo", RedoLastAction, `{}`},
		{"Redo that", RedoLastAction, `{}`},
		{"Undo that!", UndoLastAction, `{}`},
	}
	for _, c := range cases {
		r := Resolve(c.in)
		if r.Err != nil || r.Name != c.name || string(r.Args) != c.args || r.Understood == "" {
			t.Errorf("Resolve(%q) = %q %s %q %v; want %q %s", c.in, r.Name, r.Args, r.Understood, r.Err, c.name, c.args)
			continue
		}
		// Every resolution is a call the catalogue accepts as it is.
		if _, err := Builtins().Map(r.Name, r.Args); err != nil {
			t.Errorf("Resolve(%q) gives a call Map refuses: %v", c.in, err)
		}
		if again := Resolve(c.in); again.Name != r.Name || string(again.Args) != string(r.Args) || again.Understood != r.Understood {
			t.Errorf("Resolve(%q) is not deterministic", c.in)
		}
	}
}

// TestResolveMarksNewFiles: create, new and make ask for a new file (the router refuses them over
// one that exists); write, save and put replace.
func TestResolveMarksNewFiles(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"create notes.md": true, "new notes.md": true, "make a.txt: x": true, "create file a.txt": true,
		"write a.txt: x": false, "save a.txt: x": false, "put a.txt: x": false,
	} {
		if r := Resolve(in); r.Name != WriteFile || r.NewFile != want {
			t.Errorf("Resolve(%q) = %q NewFile %v; want write_file NewFile %v", in, r.Name, r.NewFile, want)
		}
	}
}

func TestResolveSaysWhatItDoesNotUnderstand(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "sing me a song", "what time is it", "write notes", "delete", "read", "list my big folder",
		"undo everything", "in notes.md replace milk", "call web_search query weather", "create app Counter", strings.Repeat("x", MaxTranscriptBytes+1), "\xff"} {
		r := Resolve(in)
		if refusal.RuleOf(r.Err) != refusal.NotUnderstood || r.Name != "" || !strings.Contains(r.Help, "write todo.txt: buy milk") {
			t.Errorf("Resolve(%.40q) = %q %v; want not-understood with help", in, r.Name, r.Err)
		}
	}
	if r := Resolve("help"); r.Err != nil || r.Name != "" || r.Help != Help {
		t.Errorf("help gives %+v", r)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"write a.txt: b", `in a replace "b" with "c"`, "search for x in y", "open the timer app", "“quoted”"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := Resolve(in)
		switch {
		case r.Err != nil && (r.Name != "" || refusal.RuleOf(r.Err) != refusal.NotUnderstood):
			t.Fatalf("Resolve(%q) refused with a call or another rule: %+v", in, r)
		case r.Err == nil && r.Name == "" && r.Help == "":
			t.Fatalf("Resolve(%q) gave neither a call, help nor a refusal: %+v", in, r)
		}
		if r.Name != "" {
			var m map[string]string
			if err := json.Unmarshal(r.Args, &m); err != nil {
				t.Fatalf("Resolve(%q) args %s: %v", in, r.Args, err)
			}
		}
	})
}

// TestResolveTheOriginalsNewCommands: typed forms of diff_file, list_tools and search_tools.
func TestResolveTheOriginalsNewCommands(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, name, args string }{
		{"diff notes.md: new text", DiffFile, `{"content":"new text","name":"notes.md"}`},
		{"preview file notes.md: x", DiffFile, `{"content":"x","name":"notes.md"}`},
		{"list tools", ListTools, `{}`},
		{"show all tools", ListTools, `{}`},
		{"tools", ListTools, `{}`},
		{"what tools do you have?", ListTools, `{}`},
		{"list extension tools", ListTools, `{"kind":"extension"}`},
		{"search tools for diff", SearchTools, `{"query":"diff"}`},
		{"find tools weather", SearchTools, `{"query":"weather"}`},
		{"what tools are there for the time", SearchTools, `{"query":"the time"}`},
	}
	for _, c := range cases {
		r := Resolve(c.in)
		if r.Err != nil || r.Name != c.name || string(r.Args) != c.args {
			t.Errorf("Resolve(%q) = %s %s (%v), want %s %s", c.in, r.Name, r.Args, r.Err, c.name, c.args)
		}
	}
}

// TestResolveAToolProposal: "create a tool called NAME that ..." stages a descriptor as the
// original's script resolver builds it (id NAME-tool, the transcript as the description, source
// model, runsIn host), one tool of the primitive the sentence names.
func TestResolveAToolProposal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in        string
		primitive string
		caps      []string
		check     func(d map[string]any, tool map[string]any) bool
	}{
		{"create a tool called clock that tells the time", "now", []string{}, nil},
		{"Create a tool called clock that tells me the date.", "now", []string{}, nil},
		{"create a tool called lister that lists the files", "list-files", []string{"read"}, nil},
		{"create a tool called notes that reads docs/notes.md", "read-file", []string{"read"},
			func(d, tool map[string]any) bool { return tool["params"].(map[string]any)["path"] == "docs/notes.md" }},
		{`create a tool called jot that writes log.txt with "hello"`, "write-file", []string{"write"},
			func(d, tool map[string]any) bool {
				p := tool["params"].(map[string]any)
				return p["path"] == "log.txt" && p["content"] == "hello" && d["bounds"].(map[string]any)["maxBytes"] == 65536.0
			}},
		{"create a tool called weather that gets https://api.example.com/now?city=x", "http-get", []string{"network"},
			func(d, tool map[string]any) bool {
				b := d["bounds"].(map[string]any)
				return tool["params"].(map[string]any)["url"] == "https://api.example.com/now?city=x" && b["hosts"].([]any)[0] == "api.example.com" && b["maxRequests"] == 5.0
			}},
	}
	for _, c := range cases {
		r := Resolve(c.in)
		if r.Err != nil || r.Name != ProposeExtension {
			t.Errorf("Resolve(%q) = %s %v, want propose_extension", c.in, r.Name, r.Err)
			continue
		}
		var args struct{ Descriptor string }
		json.Unmarshal(r.Args, &args)
		var d map[string]any
		if err := json.Unmarshal([]byte(args.Descriptor), &d); err != nil {
			t.Fatalf("%q: the descriptor is not JSON: %v", c.in, err)
		}
		tools, _ := d["tools"].([]any)
		if len(tools) != 1 {
			t.Fatalf("%q: tools %v", c.in, d["tools"])
		}
		tool := tools[0].(map[string]any)
		name := strings.Fields(c.in)[4]
		caps, _ := json.Marshal(d["capabilities"])
		wantCaps, _ := json.Marshal(c.caps)
		if d["id"] != name+"-tool" || d["name"] != name || d["source"] != "model" || d["runsIn"] != "host" ||
			tool["name"] != name || tool["primitive"] != c.primitive || string(caps) != string(wantCaps) ||
			!strings.HasPrefix(strings.ToLower(d["description"].(string)), "create a tool called") {
			t.Errorf("%q: descriptor %s", c.in, args.Descriptor)
		}
		if c.check != nil && !c.check(d, tool) {
			t.Errorf("%q: descriptor %s", c.in, args.Descriptor)
		}
		// The gate reads it in the original's format and admits it.
		parsed, bad := extensions.Parse([]byte(args.Descriptor))
		if bad != nil {
			t.Fatalf("%q: the gate cannot read the descriptor: %v", c.in, bad)
		}
		if bad := extensions.Admit(parsed, extensions.Page, nil); bad != nil {
			t.Errorf("%q: the gate refuses it: %v", c.in, bad)
		}
	}
	if r := Resolve("create a tool called x that sings"); refusal.RuleOf(r.Err) != refusal.NotUnderstood || !strings.Contains(r.Err.Error(), "tell the time") {
		t.Errorf("an unknown ability: %s %v", r.Name, r.Err)
	}
}

// TestACountIsSaidInWords: "Write 1 byte", never "Write 1 bytes" (issue 36, item 10).
func TestACountIsSaidInWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"write a.txt: x":  "Write 1 byte to a.txt.",
		"write a.txt: xy": "Write 2 bytes to a.txt.",
		"write a.txt:":    "Write 0 bytes to a.txt.",
		"diff a.txt: x":   "Show what writing 1 byte to a.txt would change, without writing.",
	} {
		if got := Resolve(in).Understood; got != want {
			t.Errorf("Resolve(%q) understood %q, want %q", in, got, want)
		}
	}
}
