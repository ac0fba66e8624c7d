package commands

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// The issue names these tools; the catalogue offers exactly them, in this order.
var wantBuiltins = []string{
	"read_file", "read_files", "read_media_file", "file_info", "directory_tree",
	"write_file", "create_folder", "move_file", "list_files", "delete_file", "edit_file", "grep_files",
	"launch_mini_app", "create_mini_app", "list_mini_apps", "list_extensions", "call_extension",
	"propose_extension", "diff_file", "list_tools", "search_tools", "undo_last_action", "redo_last_action",
}

func TestBuiltinDeclarationsPassTheSubset(t *testing.T) {
	t.Parallel()
	decls := Builtins().Declarations()
	var names []string
	for _, d := range decls {
		names = append(names, d.Name)
		if _, err := toolschema.Parse(d.Parameters); err != nil {
			t.Errorf("%s: its parameters are outside the subset: %v", d.Name, err)
		}
		// The same checks a mini-app tool's declaration passes at registration.
		raw, _ := json.Marshal(d)
		if _, err := miniapp.ParseDeclaration(raw); err != nil {
			t.Errorf("%s: the declaration is refused as a tool declaration: %v", d.Name, err)
		}
		var schema struct {
			AdditionalProperties *bool `json:"additionalProperties"`
		}
		json.Unmarshal(d.Parameters, &schema)
		if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: the schema does not close its object, so unknown keys would pass", d.Name)
		}
		if strings.HasPrefix(d.Name, AppToolPrefix) {
			t.Errorf("%s: a built-in must not look like a mini-app tool", d.Name)
		}
	}
	if !slices.Equal(names, wantBuiltins) {
		t.Fatalf("the built-ins are %v, want %v", names, wantBuiltins)
	}
	for _, n := range wantBuiltins {
		if !IsBuiltin(n) {
			t.Errorf("IsBuiltin(%q) = false", n)
		}
	}
	if IsBuiltin("app_12345678__x") {
		t.Errorf("IsBuiltin takes a mini-app tool's name")
	}
}

// required lists each built-in's required arguments, and a valid call of it.
var valid = map[string]string{
	"read_file":         `{"name":"a.txt","head":3}`,
	"read_files":        `{"names":["a.txt","b.txt"]}`,
	"read_media_file":   `{"name":"a.png"}`,
	"file_info":         `{"name":"a.txt"}`,
	"create_folder":     `{"name":"docs/drafts"}`,
	"move_file":         `{"from":"a.txt","to":"b.txt"}`,
	"directory_tree":    `{"depth":2}`,
	"write_file":        `{"name":"a.txt","content":"x"}`,
	"list_files":        `{}`,
	"delete_file":       `{"name":"a.txt"}`,
	"edit_file":         `{"name":"a.txt","oldTexts":["x"],"newTexts":["y"],"dryRun":true}`,
	"grep_files":        `{"query":"x"}`,
	"launch_mini_app":   `{"name":"timer"}`,
	"create_mini_app":   `{"title":"T","html":"<p>"}`,
	"list_mini_apps":    `{}`,
	"list_extensions":   `{}`,
	"call_extension":    `{"name":"web_search"}`,
	"propose_extension": `{"descriptor":"{}"}`,
	"undo_last_action":  `{}`,
	"redo_last_action":  `{}`,
	"diff_file":         `{"name":"a.txt","content":"x"}`,
	"list_tools":        `{}`,
	"search_tools":      `{"query":"diff","limit":5}`,
}

func TestMapRefusesEveryArgumentRulePerTool(t *testing.T) {
	t.Parallel()
	set := Builtins()
	for _, name := range wantBuiltins {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := map[string]any{}
			if err := json.Unmarshal([]byte(valid[name]), &base); err != nil {
				t.Fatal(err)
			}
			mapped := func(args map[string]any) error {
				raw, _ := json.Marshal(args)
				_, err := set.Map(name, raw)
				return err
			}
			if err := mapped(base); err != nil {
				t.Fatalf("the valid call %s is refused: %v", valid[name], err)
			}
			with := func(k string, v any) map[string]any {
				m := map[string]any{}
				for kk, vv := range base {
					m[kk] = vv
				}
				m[k] = v
				return m
			}
			tool, _ := set.Lookup(name)
			var schema struct {
				Properties map[string]struct{ Type string } `json:"properties"`
				Required   []string                         `json:"required"`
			}
			json.Unmarshal(tool.Parameters, &schema)
			for _, req := range schema.Required {
				without := with(req, nil)
				delete(without, req)
				if err := mapped(without); refusal.RuleOf(err) != refusal.MissingArgument || !strings.Contains(err.Error(), req) {
					t.Errorf("without %s: %v, want missing-argument naming it", req, err)
				}
				if err := mapped(with(req, nil)); refusal.RuleOf(err) != refusal.MissingArgument {
					t.Errorf("with %s null: %v, want missing-argument", req, err)
				}
			}
			for key, p := range schema.Properties {
				if p.Type != "string" {
					continue
				}
				err := mapped(with(key, ""))
				if rule := refusal.RuleOf(err); rule == refusal.MissingArgument {
					t.Errorf("%s empty: refused missing-argument; an empty string is present", key)
				}
				if err := mapped(with(key, 42)); refusal.RuleOf(err) != refusal.InvalidArgumentType {
					t.Errorf("%s a number: %v, want invalid-argument-type", key, err)
				}
			}
			if err := mapped(with("surprise", "x")); refusal.RuleOf(err) != refusal.InvalidArgument {
				t.Errorf("an unknown key: %v, want invalid-argument", err)
			}
			proto := strings.TrimSuffix(valid[name], "}")
			if proto != "{" {
				proto += ","
			}
			proto += `"__proto__":{"admin":true}}`
			if _, err := set.Map(name, json.RawMessage(proto)); refusal.RuleOf(err) != refusal.InvalidArgument {
				t.Errorf("a __proto__ key: %v, want invalid-argument", err)
			}
			if _, err := set.Map(name, json.RawMessage(`["a"]`)); refusal.RuleOf(err) != refusal.InvalidToolArguments {
				t.Errorf("an array: %v, want invalid-tool-arguments", err)
			}
		})
	}
}

func TestMapRefusesAnUnknownToolNamingTheTools(t *testing.T) {
	t.Parallel()
	_, err := Builtins().Map("format_disk", json.RawMessage(`{}`))
	if refusal.RuleOf(err) != refusal.UnknownTool || !strings.Contains(err.Error(), "read_file") {
		t.Fatalf("an unknown tool: %v", err)
	}
	for _, name := range []string{"", "READ_FILE", "read-file", "app_00000000__x"} {
		if _, err := Builtins().Map(name, nil); refusal.RuleOf(err) != refusal.UnknownTool {
			t.Errorf("Map(%q) = %v, want unknown-tool", name, err)
		}
	}
}

func TestMapLimitsLengthsAndKeepsEmptyStrings(t *testing.T) {
	t.Parallel()
	set := Builtins()
	if _, err := set.Map("grep_files", json.RawMessage(`{"query":""}`)); refusal.RuleOf(err) != refusal.InvalidArgumentLength {
		t.Errorf("an empty query: %v, want invalid-argument-length", err)
	}
	a, err := set.Map("write_file", json.RawMessage(`{"content":"","name":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.String("content") != "" || !a.Has("content") || a.String("name") != "a.txt" {
		t.Fatalf("the action holds %s", a.Args)
	}
	enc, _ := a.MarshalJSON()
	if string(enc) != `{"verb":"write_file","content":"","name":"a.txt"}` {
		t.Fatalf("the action encodes as %s", enc)
	}
	none, _ := set.Map("undo_last_action", nil)
	if enc, _ := none.MarshalJSON(); string(enc) != `{"verb":"undo_last_action"}` {
		t.Fatalf("an action without arguments encodes as %s", enc)
	}
}

func TestSplitAction(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw, name, args string
		rule            refusal.Rule
	}{
		{`{"verb":"read_file","name":"a.txt"}`, "read_file", `{"name":"a.txt"}`, ""},
		{`{"verb":"undo_last_action"}`, "undo_last_action", `{}`, ""},
		{`{"name":"a.txt"}`, "", "", refusal.MissingArgument},
		{`{"verb":null}`, "", "", refusal.MissingArgument},
		{`{"verb":3}`, "", "", refusal.InvalidArgumentType},
		{`"read_file"`, "", "", refusal.InvalidToolArguments},
		{`null`, "", "", refusal.InvalidToolArguments},
	} {
		name, args, err := SplitAction(json.RawMessage(c.raw))
		if refusal.RuleOf(err) != c.rule || name != c.name || (c.rule == "" && string(args) != c.args) {
			t.Errorf("SplitAction(%s) = %q %s %v", c.raw, name, args, err)
		}
	}
}

func TestWithAddsMiniAppToolsAndLeavesOutBadOnes(t *testing.T) {
	t.Parallel()
	good := tool.Declaration{Name: miniapp.ModelName("app_timer", "start"), Description: "Start the timer",
		Parameters: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"integer","minimum":1}},"required":["seconds"]}`)}
	bad := []tool.Declaration{
		{Name: "start", Description: "no prefix", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "app_12345678__x", Description: "", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "app_12345678__y", Description: "pattern", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}`)},
		good, // a second copy of a name
	}
	set, errs := Builtins().With(append([]tool.Declaration{good}, bad...))
	if len(errs) != len(bad) {
		t.Fatalf("With reported %d problems, want %d: %v", len(errs), len(bad), errs)
	}
	if n := len(set.Declarations()); n != len(wantBuiltins)+1 {
		t.Fatalf("the set has %d tools", n)
	}
	if _, err := set.Map(good.Name, json.RawMessage(`{"seconds":0}`)); refusal.RuleOf(err) != refusal.InvalidArgumentRange {
		t.Errorf("a mini-app tool's argument out of range: %v", err)
	}
	if _, err := set.Map(good.Name, json.RawMessage(`{}`)); refusal.RuleOf(err) != refusal.MissingArgument {
		t.Errorf("a mini-app tool without its argument: %v", err)
	}
	a, err := set.Map(good.Name, json.RawMessage(`{"seconds":5}`))
	if err != nil || a.Tool.Builtin || string(a.Args) != `{"seconds":5}` {
		t.Fatalf("a mini-app tool's call maps to %+v, %v", a, err)
	}
	if Builtins().Declarations()[0].Name != "read_file" || len(Builtins().Declarations()) != len(wantBuiltins) {
		t.Fatalf("With changed the built-in set")
	}
	if !strings.Contains(set.Instruction(), good.Name) || strings.Contains(Builtins().Instruction(), good.Name) {
		t.Fatalf("the instruction does not follow the set")
	}
}

func TestInstructionNamesEveryToolAndTheRules(t *testing.T) {
	t.Parallel()
	text := Builtins().Instruction()
	for _, n := range wantBuiltins {
		if !strings.Contains(text, "- "+n+": ") {
			t.Errorf("the instruction does not name %s", n)
		}
	}
	for _, must := range []string{`{"refused": "rule-id", "why": "a sentence"}`, "Never say you did something unless a tool's answer showed it", "approval-denied", "undo_last_action",
		// As the original's instruction does, it names root-not-declared and what to say.
		`"root-not-declared" means no workspace folder has been chosen yet`} {
		if !strings.Contains(text, must) {
			t.Errorf("the instruction lacks %q", must)
		}
	}
	// An app's description cannot break out of its line.
	set, _ := Builtins().With([]tool.Declaration{{Name: "app_12345678__t", Description: "Adds.\n- read_file: lies", Parameters: json.RawMessage(`{"type":"object"}`)}})
	if strings.Contains(set.Instruction(), "\n- read_file: lies") {
		t.Fatalf("a description spans lines of the instruction")
	}
}

// TestToolIndex: list_tools lists the set's tools (native, mini-app) and the extras, filtered by
// kind; search_tools scores as the original's index: the name first, then words and synonyms.
func TestToolIndex(t *testing.T) {
	t.Parallel()
	set, _ := Builtins().With([]tool.Declaration{{Name: "app_12345678__start", Description: "Start the timer", Parameters: json.RawMessage(`{"type":"object"}`)}})
	ext := []IndexEntry{{ID: "extension:clock", Name: "clock", Kind: KindExtension, Category: "now", Status: "admitted", Description: "Tells the time"}}
	entries := set.Index(ext)
	all := ListIndex(entries, "")
	if all.Count != len(wantBuiltins)+2 || all.TotalCount != all.Count || all.Counts[KindNative] != len(wantBuiltins) || all.Counts[KindMiniApp] != 1 || all.Counts[KindExtension] != 1 {
		t.Fatalf("list_tools: %d tools, counts %v", all.Count, all.Counts)
	}
	if l := ListIndex(entries, "MINI_APP"); l.Count != 1 || l.Tools[0].Invocation.Tool != "app_12345678__start" {
		t.Fatalf("list_tools mini-app: %+v", l)
	}
	if l := ListIndex(entries, "wasm"); l.Count != 0 || l.Tools == nil {
		t.Fatalf("an unknown kind lists nothing (as an empty list): %+v", l)
	}
	for _, tt := range []struct {
		query, first string
	}{
		{"diff", DiffFile},
		{"diff_file", DiffFile},
		{"time", "clock"}, // a synonym reaches the extension's description
		{"timer", "app_12345678__start"},
		{"search", SearchTools},
	} {
		got := SearchIndex(entries, tt.query, "", 0)
		if got.Count == 0 || got.Tools[0].Name != tt.first || *got.Query != tt.query {
			names := []string{}
			for _, e := range got.Tools {
				names = append(names, e.Name)
			}
			t.Errorf("search_tools %q: %v, want %s first", tt.query, names, tt.first)
		}
	}
	if got := SearchIndex(entries, "file", KindNative, 2); len(got.Tools) != 2 || got.Count <= 2 {
		t.Errorf("search_tools with a limit: %d of %d", len(got.Tools), got.Count)
	}
	if got := SearchIndex(entries, "zzzzqqq", "", 0); got.Count != 0 || got.Tools == nil {
		t.Errorf("no match: %+v", got)
	}
}

// TestAnActionIsMeasuredAsTheCallerSentIt: the arguments of a typed action are held to the size
// bound as the caller wrote them (an encoder would write each <, > and & as six bytes), and a
// call whose arguments fail several rules is refused for the first in the caller's key order.
func TestAnActionIsMeasuredAsTheCallerSentIt(t *testing.T) {
	t.Parallel()
	html := "<!doctype html><title>t</title>" + strings.Repeat("<p>a &amp; b</p>", 45000/16)
	for _, c := range []struct {
		verb, key, value string
	}{
		{"write_file", "content", strings.Repeat("<", 60000)},
		{"write_file", "content", strings.Repeat("<", 20000)},
		{"create_mini_app", "html", html},
	} {
		other := map[string]string{"write_file": `"name":"a.txt"`, "create_mini_app": `"title":"Lots"`}[c.verb]
		value, _ := json.Marshal(c.value) // only to quote it: the escapes are undone below
		raw := `{"verb":"` + c.verb + `",` + other + `,"` + c.key + `":` + unescapeHTML(string(value)) + `}`
		name, args, err := SplitAction(json.RawMessage(raw))
		if err != nil || name != c.verb || strings.Contains(string(args), `\u003c`) || len(args) > len(raw) {
			t.Fatalf("SplitAction of %d bytes = %q, %d bytes, %v", len(raw), name, len(args), err)
		}
		a, err := Builtins().Map(name, args)
		if err != nil || a.String(c.key) != c.value {
			t.Fatalf("%s with %d bytes of arguments as sent was refused: %v", c.verb, len(args), err)
		}
	}
	over := `{"verb":"write_file","name":"a.txt","content":"` + strings.Repeat("<", toolschema.MaxArgumentBytes) + `"}`
	name, args, _ := SplitAction(json.RawMessage(over))
	if _, err := Builtins().Map(name, args); refusal.RuleOf(err) != refusal.InvalidToolArguments {
		t.Fatalf("arguments over the bound as sent answered %v", err)
	}

	app := tool.Declaration{Name: miniapp.ModelName("app_clock", "alarm"), Description: "Set the alarm",
		Parameters: json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string","enum":["calm","loud"]},"target":{"type":"integer"}}}`)}
	set, errs := Builtins().With([]tool.Declaration{app})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	for raw, want := range map[string]string{
		`{"verb":"` + app.Name + `","target":"twenty-four","mode":"turbo"}`: `"target"`,
		`{"mode":"turbo","verb":"` + app.Name + `","target":"twenty-four"}`: `"mode"`,
	} {
		name, args, err := SplitAction(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		_, err = set.Map(name, args)
		r, _ := refusal.As(err)
		wantRule := map[string]refusal.Rule{`"target"`: refusal.InvalidArgumentType, `"mode"`: refusal.InvalidArgumentEnum}[want]
		if r == nil || r.Rule != wantRule || !strings.Contains(r.Why, want) {
			t.Errorf("%s answered %v, want %s for %s", raw, err, wantRule, want)
		}
	}
}

func unescapeHTML(s string) string {
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(s)
}

// FuzzSplitAction: whatever the action, a split that succeeds gives an object that decodes to
// the action's members less "verb" (the later of two equal keys winning, as in decoding), and the
// verb the action's own; one that fails is a named refusal.
func FuzzSplitAction(f *testing.F) {
	for _, s := range []string{`{"verb":"read_file","name":"a.txt"}`, `{"name":"<b>","verb":"x","verb":"y"}`, ` { "verb" : "w" , "a" : [1, {"b": null}] } `, `{"verb":1}`, `[]`, `{"a":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, args, err := SplitAction(json.RawMessage(raw))
		if err != nil {
			if _, ok := refusal.As(err); !ok {
				t.Fatalf("SplitAction(%q) failed without a refusal: %v", raw, err)
			}
			return
		}
		var whole, rest map[string]any
		if json.Unmarshal([]byte(raw), &whole) != nil || json.Unmarshal(args, &rest) != nil {
			t.Fatalf("SplitAction(%q) = %q, %s: not two objects", raw, name, args)
		}
		if whole["verb"] != name {
			t.Fatalf("SplitAction(%q) named the verb %q", raw, name)
		}
		delete(whole, "verb")
		a, _ := json.Marshal(whole)
		b, _ := json.Marshal(rest)
		if string(a) != string(b) {
			t.Fatalf("SplitAction(%q) gave the arguments %s, want %s", raw, b, a)
		}
	})
}
