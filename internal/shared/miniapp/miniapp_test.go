package miniapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

const setScore = `{"name":"set_score","description":"Add points to a team on the scoreboard",
  "parameters":{"type":"object","properties":{"team":{"type":"string","enum":["home","away"]},
  "points":{"type":"number","description":"Points to add"}},"required":["team","points"]}}`

func decl(name string) json.RawMessage {
	return json.RawMessage(`{"name":"` + name + `","description":"d","parameters":{"type":"object","properties":{"n":{"type":"integer"}}}}`)
}

func TestParseDeclaration(t *testing.T) {
	t.Parallel()
	desc := func(n int) string { return `{"name":"t","description":"` + strings.Repeat("é", n) + `"}` }
	tests := []struct {
		name string
		decl string
		rule refusal.Rule // "" means accepted
		want string       // the normal form, when accepted and given
	}{
		{name: "spec example", decl: setScore},
		{name: "WebMCP spelling", decl: `{"name":"t","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`,
			want: `{"name":"t","description":"d","parameters":{"type":"object"},"annotations":{"readOnlyHint":true}}`},
		{name: "no schema takes no arguments", decl: `{"name":"t","description":"d"}`,
			want: `{"name":"t","description":"d","parameters":{"type":"object"}}`},
		{name: "extra fields are dropped", decl: `{"name":"t","description":"d","title":"T","execute":{}}`,
			want: `{"name":"t","description":"d","parameters":{"type":"object"}}`},
		{name: "readOnlyHint false", decl: `{"name":"t","description":"d","annotations":{"readOnlyHint":false}}`,
			want: `{"name":"t","description":"d","parameters":{"type":"object"}}`},
		{name: "not an object", decl: `[]`, rule: refusal.InvalidToolDeclaration},
		{name: "a string", decl: `"set_score"`, rule: refusal.InvalidToolDeclaration},
		{name: "null", decl: `null`, rule: refusal.InvalidToolDeclaration},
		{name: "a number", decl: `42`, rule: refusal.InvalidToolDeclaration},
		{name: "not JSON", decl: `{`, rule: refusal.InvalidToolDeclaration},
		{name: "no name", decl: `{"description":"d"}`, rule: refusal.InvalidToolName},
		{name: "name not string", decl: `{"name":5,"description":"d"}`, rule: refusal.InvalidToolName},
		{name: "name case matters", decl: `{"NAME":"t","description":"d"}`, rule: refusal.InvalidToolName},
		{name: "name empty", decl: `{"name":"","description":"d"}`, rule: refusal.InvalidToolName},
		{name: "name 64", decl: `{"name":"` + strings.Repeat("a", 64) + `","description":"d"}`},
		{name: "name 65", decl: `{"name":"` + strings.Repeat("a", 65) + `","description":"d"}`},
		{name: "name 128", decl: `{"name":"` + strings.Repeat("a", 128) + `","description":"d"}`},
		{name: "name 129", decl: `{"name":"` + strings.Repeat("a", 129) + `","description":"d"}`, rule: refusal.InvalidToolName},
		{name: "name with space", decl: `{"name":"set score","description":"d"}`, rule: refusal.InvalidToolName},
		{name: "name with dot", decl: `{"name":"a.b","description":"d"}`},
		{name: "name with slash", decl: `{"name":"a/b","description":"d"}`, rule: refusal.InvalidToolName},
		{name: "untrusted content hint", decl: `{"name":"t","description":"d","annotations":{"untrustedContentHint":true}}`},
		{name: "untrusted content hint not a bool", decl: `{"name":"t","description":"d","annotations":{"untrustedContentHint":"yes"}}`, rule: refusal.InvalidToolParameters},
		{name: "name non-ASCII", decl: `{"name":"é","description":"d"}`, rule: refusal.InvalidToolName},
		{name: "no description", decl: `{"name":"t"}`, rule: refusal.InvalidToolDescription},
		{name: "description empty", decl: `{"name":"t","description":""}`, rule: refusal.InvalidToolDescription},
		{name: "description not string", decl: `{"name":"t","description":["d"]}`, rule: refusal.InvalidToolDescription},
		{name: "description 1024 code points", decl: desc(MaxDescriptionLength)},
		{name: "description 1025 code points", decl: desc(MaxDescriptionLength + 1), rule: refusal.InvalidToolDescription},
		{name: "bad schema", decl: `{"name":"t","description":"d","parameters":{"type":"object","properties":{"p":{"type":"string","pattern":"x"}}}}`, rule: refusal.InvalidToolParameters},
		{name: "null schema", decl: `{"name":"t","description":"d","parameters":null}`, rule: refusal.InvalidToolParameters},
		{name: "both spellings", decl: `{"name":"t","description":"d","parameters":{"type":"object"},"inputSchema":{"type":"object"}}`, rule: refusal.InvalidToolParameters},
		{name: "readOnlyHint not bool", decl: `{"name":"t","description":"d","annotations":{"readOnlyHint":"yes"}}`, rule: refusal.InvalidToolParameters},
		{name: "annotations not object", decl: `{"name":"t","description":"d","annotations":1}`, rule: refusal.InvalidToolParameters},
		{name: "name checked before description", decl: `{"name":"a b"}`, rule: refusal.InvalidToolName},
		{name: "description checked before schema", decl: `{"name":"t","parameters":[]}`, rule: refusal.InvalidToolDescription},
		{name: "too large", decl: `{"name":"t","description":"d","x":"` + strings.Repeat("x", MaxDeclarationBytes) + `"}`, rule: refusal.InvalidToolParameters},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := ParseDeclaration([]byte(tt.decl))
			if tt.rule != "" {
				if got := refusal.RuleOf(err); got != tt.rule {
					t.Fatalf("ParseDeclaration error = %v, want rule %s", err, tt.rule)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDeclaration refused: %v", err)
			}
			if tt.want != "" && string(d.JSON()) != tt.want {
				t.Fatalf("JSON() = %s, want %s", d.JSON(), tt.want)
			}
			if _, err := ParseDeclaration(d.JSON()); err != nil {
				t.Fatalf("the normal form does not parse again: %v", err)
			}
		})
	}
}

var vendorName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestModelName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", MaxToolNameLength)
	tests := []struct{ app, tool string }{
		{"app_scoreboard", "set_score"},
		{"app_scoreboard", strings.Repeat("t", 50)},
		{"app_scoreboard", strings.Repeat("t", 51)},
		{"app_scoreboard", long},
		{strings.Repeat("a", MaxAppIDLength), long},
		{"a", "b__c"},
		{"a__b", "c"},
		{"a", "cart.add"},
		{"a", "cart_add"},
		{"a", "cart.add_"},
		{"a", "."},
		{"a", strings.Repeat("t.", MaxWebMCPToolNameLength/2)},
		{"a", strings.Repeat("t", MaxWebMCPToolNameLength)},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		n := ModelName(tt.app, tt.tool)
		if !vendorName.MatchString(n) {
			t.Errorf("ModelName(%q, %q) = %q, not a vendor-safe name", tt.app, tt.tool, n)
		}
		if !strings.HasPrefix(n, "app_") {
			t.Errorf("ModelName(%q, %q) = %q lacks the app_ prefix", tt.app, tt.tool, n)
		}
		key := tt.app + "\x00" + tt.tool
		if other, ok := seen[n]; ok && other != key {
			t.Errorf("ModelName collides for %q and %q: %q", other, key, n)
		}
		seen[n] = key
	}
	if ModelName("a", "set_score") != "app_"+tool.Digest("a")+"__set_score" {
		t.Errorf("short names must read app_<hash>__<tool>: %q", ModelName("a", "set_score"))
	}
}

// fakeApp records calls and answers with a programmable function.
type fakeApp struct {
	calls   atomic.Int64
	mu      sync.Mutex
	last    string
	answer  func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error)
	once    sync.Once
	reached chan struct{} // closed at the first call, when made by newFakeApp
}

func (a *fakeApp) CallTool(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	a.calls.Add(1)
	if a.reached != nil {
		a.once.Do(func() { close(a.reached) })
	}
	a.mu.Lock()
	a.last = tool + " " + string(args)
	a.mu.Unlock()
	if a.answer != nil {
		return a.answer(ctx, tool, args)
	}
	return json.RawMessage(`{"ok":true}`), nil
}

func openApp(t *testing.T, r *Registry, id string) *fakeApp {
	t.Helper()
	a := &fakeApp{}
	if err := r.Open(id, a); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRegistryBounds(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	openApp(t, r, "app_one")
	for i := range MaxToolsPerApp {
		if _, err := r.Register("app_one", decl(fmt.Sprintf("t%d", i))); err != nil {
			t.Fatalf("tool %d refused: %v", i+1, err)
		}
	}
	if _, err := r.Register("app_one", decl("t16")); refusal.RuleOf(err) != refusal.TooManyTools {
		t.Fatalf("17th tool: %v, want %s", err, refusal.TooManyTools)
	}
	if n := len(r.Tools("app_one")); n != MaxToolsPerApp {
		t.Fatalf("after the 17th, %d tools, want %d", n, MaxToolsPerApp)
	}
	if _, err := r.Dispatch(context.Background(), ModelName("app_one", "t0"), json.RawMessage(`{}`)); err != nil {
		t.Fatalf("the first tool stopped working: %v", err)
	}
	if _, err := r.Dispatch(context.Background(), ModelName("app_one", "t16"), nil); refusal.RuleOf(err) != refusal.UnknownTool {
		t.Fatalf("the refused 17th answers %v, want %s", err, refusal.UnknownTool)
	}
	if !r.Unregister("app_one", "t3") || r.Unregister("app_one", "t3") {
		t.Fatalf("Unregister reported wrongly")
	}
	if _, err := r.Register("app_one", decl("t16")); err != nil {
		t.Fatalf("after unregistering one, a 16th is refused: %v", err)
	}
}

func TestRegistryRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(r *Registry) error
		rule refusal.Rule
	}{
		{"app id 64", func(r *Registry) error { return r.Open(strings.Repeat("a", MaxAppIDLength), &fakeApp{}) }, ""},
		{"app id 65", func(r *Registry) error { return r.Open(strings.Repeat("a", MaxAppIDLength+1), &fakeApp{}) }, refusal.InvalidAppID},
		{"app id empty", func(r *Registry) error { return r.Open("", &fakeApp{}) }, refusal.InvalidAppID},
		{"app id with slash", func(r *Registry) error { return r.Open("a/b", &fakeApp{}) }, refusal.InvalidAppID},
		{"nil app", func(r *Registry) error { return r.Open("a", nil) }, refusal.InvalidAppID},
		{"register to a closed app", func(r *Registry) error { _, err := r.Register("nobody", decl("t")); return err }, refusal.InvalidAppID},
		{"duplicate", func(r *Registry) error {
			r.Open("a", &fakeApp{})
			r.Register("a", decl("t"))
			_, err := r.Register("a", decl("t"))
			return err
		}, refusal.InvalidToolName},
		{"same tool name in two apps", func(r *Registry) error {
			r.Open("a", &fakeApp{})
			r.Open("b", &fakeApp{})
			r.Register("a", decl("t"))
			_, err := r.Register("b", decl("t"))
			return err
		}, ""},
		{"built-in name", func(r *Registry) error {
			r.builtins[ModelName("a", "t")] = true
			r.Open("a", &fakeApp{})
			_, err := r.Register("a", decl("t"))
			return err
		}, refusal.InvalidToolName},
		{"bad declaration", func(r *Registry) error {
			r.Open("a", &fakeApp{})
			_, err := r.Register("a", json.RawMessage(`{"name":"t"}`))
			return err
		}, refusal.InvalidToolDescription},
		{"unknown tool", func(r *Registry) error {
			_, err := r.Dispatch(context.Background(), "read_file", nil)
			return err
		}, refusal.UnknownTool},
		{"unknown tool after close", func(r *Registry) error {
			r.Open("a", &fakeApp{})
			r.Register("a", decl("t"))
			r.Close("a")
			_, err := r.Dispatch(context.Background(), ModelName("a", "t"), nil)
			return err
		}, refusal.UnknownTool},
		{"resolve unknown", func(r *Registry) error { _, _, err := r.Resolve("app_00000000__t"); return err }, refusal.UnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.run(NewRegistry("read_file"))
			if got := refusal.RuleOf(err); got != tt.rule || (tt.rule == "" && err != nil) {
				t.Fatalf("got %v, want rule %q", err, tt.rule)
			}
		})
	}
}

func TestReplaceKeepsTheGoodOnes(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	openApp(t, r, "a")
	if _, err := r.Register("a", decl("old")); err != nil {
		t.Fatal(err)
	}
	errs, err := r.Replace("a", []json.RawMessage{decl("x"), json.RawMessage(`{"name":"bad name","description":"d"}`), decl("y"), decl("x"), json.RawMessage(`"z"`)})
	if err != nil {
		t.Fatal(err)
	}
	wantRules := []refusal.Rule{"", refusal.InvalidToolName, "", refusal.InvalidToolName, refusal.InvalidToolDeclaration}
	for i, e := range errs {
		if refusal.RuleOf(e) != wantRules[i] || (wantRules[i] == "" && e != nil) {
			t.Errorf("declaration %d: %v, want %q", i, e, wantRules[i])
		}
		// Each refusal names the declaration's place in the list.
		if r, ok := refusal.As(e); ok && !strings.HasPrefix(r.Why, fmt.Sprintf("declaration %d: ", i)) {
			t.Errorf("declaration %d: the reason %q does not name its index", i, r.Why)
		}
	}
	var names []string
	for _, d := range r.Tools("a") {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "x,y" {
		t.Fatalf("tools after Replace = %v, want x,y", names)
	}
	if _, _, err := r.Resolve(ModelName("a", "old")); refusal.RuleOf(err) != refusal.UnknownTool {
		t.Fatalf("the replaced tool still resolves: %v", err)
	}
	tooMany := make([]json.RawMessage, MaxToolsPerApp+1)
	for i := range tooMany {
		tooMany[i] = decl(fmt.Sprintf("t%d", i))
	}
	errs, _ = r.Replace("a", tooMany)
	if refusal.RuleOf(errs[MaxToolsPerApp]) != refusal.TooManyTools || errs[MaxToolsPerApp-1] != nil {
		t.Fatalf("Replace with 17: last errors %v, %v", errs[MaxToolsPerApp-1], errs[MaxToolsPerApp])
	}
	if _, err := r.Replace("nobody", nil); refusal.RuleOf(err) != refusal.InvalidAppID {
		t.Fatalf("Replace on a closed app: %v", err)
	}
}

// TestOneAppsRegistrationIsBounded: an app's declarations together are bounded like the
// original's registration body (64 KiB); the one that would pass it is refused body-too-large, the
// registered ones keep working, and removing a tool makes room again.
func TestOneAppsRegistrationIsBounded(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	openApp(t, r, "a")
	openApp(t, r, "b")
	big := func(name string) []byte {
		// A declaration of about 20 KiB in normal form: a long enum.
		var members []string
		for i := 0; i < 2000; i++ {
			members = append(members, fmt.Sprintf(`"m%05d"`, i))
		}
		return []byte(`{"name":"` + name + `","description":"d","parameters":{"type":"object","properties":{"p":{"type":"string","enum":[` + strings.Join(members, ",") + `]}}}}`)
	}
	d, err := ParseDeclaration(big("x"))
	if err != nil {
		t.Fatal(err)
	}
	per := len(d.JSON())
	fits := MaxRegistrationBytes / per
	for i := 0; i < fits; i++ {
		if _, err := r.Register("a", big(fmt.Sprintf("t%d", i))); err != nil {
			t.Fatalf("tool %d of %d bytes each: %v", i, per, err)
		}
	}
	if _, err := r.Register("a", big("over")); refusal.RuleOf(err) != refusal.BodyTooLarge {
		t.Fatalf("the tool past %d bytes: %v, want body-too-large", MaxRegistrationBytes, err)
	}
	if len(r.Tools("a")) != fits {
		t.Fatalf("a refused registration changed the tools: %d", len(r.Tools("a")))
	}
	// Another app has its own budget.
	if _, err := r.Register("b", big("t0")); err != nil {
		t.Fatalf("another app: %v", err)
	}
	if !r.Unregister("a", "t0") {
		t.Fatal("t0 was not registered")
	}
	if _, err := r.Register("a", big("again")); err != nil {
		t.Fatalf("after removing a tool: %v", err)
	}
	// Replace counts from nothing, and names the index of the one that does not fit.
	raws := make([]json.RawMessage, fits+1)
	for i := range raws {
		raws[i] = big(fmt.Sprintf("r%d", i))
	}
	errs, _ := r.Replace("a", raws)
	if refusal.RuleOf(errs[fits]) != refusal.BodyTooLarge || errs[fits-1] != nil {
		t.Fatalf("Replace: the last errors are %v and %v", errs[fits-1], errs[fits])
	}
}

func TestFunctionDeclarationsResolveBack(t *testing.T) {
	t.Parallel()
	r := NewRegistry("read_file", "launch_mini_app")
	openApp(t, r, "app_b")
	openApp(t, r, "app_a")
	long := strings.Repeat("x", MaxToolNameLength)
	for _, c := range []struct {
		app  string
		decl json.RawMessage
	}{{"app_b", json.RawMessage(setScore)}, {"app_a", json.RawMessage(setScore)}, {"app_a", decl(long)}, {"app_a", decl(long[:63] + "y")}} {
		if _, err := r.Register(c.app, c.decl); err != nil {
			t.Fatal(err)
		}
	}
	fds := r.FunctionDeclarations()
	if len(fds) != 4 {
		t.Fatalf("%d declarations, want 4", len(fds))
	}
	wantOrder := []struct{ app, tool string }{{"app_a", "set_score"}, {"app_a", long}, {"app_a", long[:63] + "y"}, {"app_b", "set_score"}}
	seen := map[string]bool{}
	for i, fd := range fds {
		if !vendorName.MatchString(fd.Name) || seen[fd.Name] || fd.Name == "read_file" {
			t.Errorf("declaration name %q is not unique and vendor-safe", fd.Name)
		}
		seen[fd.Name] = true
		app, tool, err := r.Resolve(fd.Name)
		if err != nil || app != wantOrder[i].app || tool != wantOrder[i].tool {
			t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", fd.Name, app, tool, err, wantOrder[i].app, wantOrder[i].tool)
		}
		if !json.Valid(fd.Parameters) || fd.Description == "" {
			t.Errorf("declaration %q is incomplete: %+v", fd.Name, fd)
		}
	}
}

func TestDispatch(t *testing.T) {
	t.Parallel()
	big := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }
	block := func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	tests := []struct {
		name      string
		args      string
		answer    func(context.Context, string, json.RawMessage) (json.RawMessage, error)
		timeout   time.Duration
		rule      refusal.Rule
		want      string // the result, when accepted
		why       string
		reachesIt bool
	}{
		{name: "ok", args: `{"points":3,"team":"home"}`, want: `{"ok":true}`, reachesIt: true},
		{name: "bad arguments never reach the app", args: `{"team":"visitors","points":3}`, rule: refusal.InvalidArgumentEnum},
		{name: "missing argument", args: `{"team":"home"}`, rule: refusal.MissingArgument},
		{name: "null arguments are {}", args: `null`, rule: refusal.MissingArgument},
		{name: "output at bound", args: `{"team":"home","points":1}`, reachesIt: true,
			answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return big(MaxOutputBytes), nil
			},
			want: string(big(MaxOutputBytes))},
		{name: "output over bound", args: `{"team":"home","points":1}`, reachesIt: true,
			answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return big(MaxOutputBytes + 1), nil
			},
			rule: refusal.ToolOutputOverBudget, why: "output over budget (max 64KB)"},
		{name: "empty output is null", args: `{"team":"home","points":1}`, reachesIt: true, want: `null`,
			answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return nil, nil }},
		{name: "output not JSON", args: `{"team":"home","points":1}`, reachesIt: true, rule: refusal.ExecThrew,
			answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{`), nil
			}},
		{name: "app error", args: `{"team":"home","points":1}`, reachesIt: true, rule: refusal.ExecThrew, why: "boom",
			answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return nil, errors.New("boom")
			}},
		{name: "app refusal passes", args: `{"team":"home","points":1}`, reachesIt: true, rule: refusal.PageClosed,
			answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return nil, refusal.New(refusal.PageClosed, "gone")
			}},
		{name: "app panics", args: `{"team":"home","points":1}`, reachesIt: true, rule: refusal.ExecThrew,
			answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) { panic("oops") }},
		{name: "timeout", args: `{"team":"home","points":1}`, reachesIt: true, answer: block, timeout: time.Millisecond,
			rule: refusal.ToolTimeout, why: "tool execution timed out after 1ms"},
	}
	for _, tt := range tests {
		// Every case holds for an App called on a goroutine of the registry's and for a
		// PromptApp, called on the caller's.
		for _, prompt := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/prompt=%v", tt.name, prompt), func(t *testing.T) {
				t.Parallel()
				r := NewRegistry()
				if tt.timeout != 0 {
					r.timeout = tt.timeout
				}
				app := &fakeApp{answer: tt.answer, reached: make(chan struct{})}
				var called App = app
				if prompt {
					called = promptApp{app}
				}
				if err := r.Open("app_score", called); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Register("app_score", []byte(setScore)); err != nil {
					t.Fatal(err)
				}
				out, err := r.Dispatch(context.Background(), ModelName("app_score", "set_score"), json.RawMessage(tt.args))
				if tt.reachesIt {
					// A call that timed out may reach the app after Dispatch answered: the call is
					// handed over on a goroutine of its own. It does reach it.
					<-app.reached
				} else if app.calls.Load() > 0 {
					t.Fatal("refused arguments reached the app")
				}
				if (out == nil) == (err == nil) {
					t.Fatalf("Dispatch must give exactly one of a result and a refusal: %s, %v", out, err)
				}
				if tt.rule != "" {
					r, ok := refusal.As(err)
					if !ok || r.Rule != tt.rule || !strings.Contains(r.Why, tt.why) {
						t.Fatalf("Dispatch error = %v, want rule %s with %q", err, tt.rule, tt.why)
					}
					return
				}
				if err != nil || string(out) != tt.want {
					t.Fatalf("Dispatch = %.100s, %v; want %.100s", out, err, tt.want)
				}
			})
		}
	}
}

// promptApp is a fakeApp that promises to return when its ctx is done (miniapp.PromptApp).
type promptApp struct{ *fakeApp }

func (promptApp) ReturnsWhenDone() {}

// TestAPromptAppIsCalledOnTheCallersGoroutine: the registry calls a PromptApp (the page's frames)
// on the goroutine that dispatched the call, with no goroutine of its own per call, and an App
// without the promise on another; both under the tool-timeout.
func TestAPromptAppIsCalledOnTheCallersGoroutine(t *testing.T) {
	t.Parallel()
	// onCaller reports whether the goroutine running the tool is the test's own: its stack
	// starts in the testing package's tRunner.
	onCaller := func() bool {
		buf := make([]byte, 64<<10)
		return strings.Contains(string(buf[:runtime.Stack(buf, false)]), "testing.tRunner(")
	}
	for _, tt := range []struct {
		name string
		app  func(*fakeApp) App
		want bool
	}{
		{"a PromptApp", func(a *fakeApp) App { return promptApp{a} }, true},
		{"an App", func(a *fakeApp) App { return a }, false},
	} {
		var inline atomic.Bool
		fake := &fakeApp{answer: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
			inline.Store(onCaller())
			if _, ok := ctx.Deadline(); !ok {
				return nil, errors.New("no deadline")
			}
			return json.RawMessage(`1`), nil
		}}
		r := NewRegistry()
		if err := r.Open("a", tt.app(fake)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Register("a", decl("t")); err != nil {
			t.Fatal(err)
		}
		if out, err := r.Dispatch(context.Background(), ModelName("a", "t"), nil); err != nil || string(out) != "1" {
			t.Fatalf("%s answered %s, %v", tt.name, out, err)
		}
		if inline.Load() != tt.want {
			t.Errorf("%s ran on the caller's goroutine: %v, want %v", tt.name, inline.Load(), tt.want)
		}
	}
}

func TestDispatchHandsTheValidatedArguments(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	app := openApp(t, r, "a")
	if _, err := r.Register("a", []byte(setScore)); err != nil {
		t.Fatal(err)
	}
	// Duplicate keys: the app reads the value that was validated, re-encoded, not the raw text.
	if _, err := r.Dispatch(context.Background(), ModelName("a", "set_score"), json.RawMessage(` {"team":"x","team":"home", "points": 1.50} `)); err != nil {
		t.Fatal(err)
	}
	if want := `set_score {"points":1.50,"team":"home"}`; app.last != want {
		t.Fatalf("the app read %q, want %q", app.last, want)
	}
}

func TestTimeoutReason(t *testing.T) {
	t.Parallel()
	if got := timedOut(ToolTimeout); got != "tool execution timed out after 5000ms" {
		t.Fatalf("timeout reason = %q", got)
	}
	if outputOverBudget != "output over budget (max 64KB)" {
		t.Fatalf("output reason = %q", outputOverBudget)
	}
}

func TestCancelledCallIsAnswered(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	if err := r.Open("a", &fakeApp{answer: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register("a", decl("t")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Dispatch(ctx, ModelName("a", "t"), nil); refusal.RuleOf(err) != refusal.ToolTimeout {
		t.Fatalf("a cancelled call answered %v", err)
	}
}

// TestRegistryHammer registers, replaces, unregisters, closes and dispatches from many goroutines
// at once, then checks that every call got exactly one answer and the registry still holds its bounds.
func TestRegistryHammer(t *testing.T) {
	t.Parallel()
	r := NewRegistry("read_file")
	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	var answered atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("app_%d", w%3)
			for i := range rounds {
				switch i % 5 {
				case 0:
					r.Open(id, &fakeApp{})
				case 1:
					r.Register(id, decl(fmt.Sprintf("t%d", i%20)))
				case 2:
					r.Replace(id, []json.RawMessage{decl("t1"), decl("t2")})
				case 3:
					r.Unregister(id, "t1")
				case 4:
					if i%10 == 9 {
						r.Close(id)
					}
				}
				out, err := r.Dispatch(context.Background(), ModelName(id, "t2"), json.RawMessage(`{"n":1}`))
				if (out == nil) == (err == nil) {
					t.Errorf("call answered %s and %v", out, err)
				}
				answered.Add(1)
				_ = r.FunctionDeclarations()
			}
		}()
	}
	wg.Wait()
	if answered.Load() != workers*rounds {
		t.Fatalf("%d answers for %d calls", answered.Load(), workers*rounds)
	}
	for a := range 3 {
		if n := len(r.Tools(fmt.Sprintf("app_%d", a))); n > MaxToolsPerApp {
			t.Fatalf("app_%d holds %d tools", a, n)
		}
	}
	names := map[string]bool{}
	for _, fd := range r.FunctionDeclarations() {
		if names[fd.Name] {
			t.Fatalf("name %q offered twice", fd.Name)
		}
		names[fd.Name] = true
		if _, _, err := r.Resolve(fd.Name); err != nil {
			t.Fatalf("offered name %q does not resolve: %v", fd.Name, err)
		}
	}
}

func TestValidateChecksWithoutCalling(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	app := &fakeApp{}
	if err := r.Open("a", app); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Register("a", []byte(`{"name":"cart.add","description":"d","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}`)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, app, tool, args string
		rule                  refusal.Rule
		want                  string
	}{
		{name: "valid", app: "a", tool: "cart.add", args: `{"n":2}`, want: `{"n":2}`},
		{name: "missing", app: "a", tool: "cart.add", args: `{}`, rule: refusal.MissingArgument},
		{name: "wrong type", app: "a", tool: "cart.add", args: `{"n":"two"}`, rule: refusal.InvalidArgumentType},
		{name: "no such tool", app: "a", tool: "cart.remove", args: `{}`, rule: refusal.UnknownTool},
		{name: "no such app", app: "b", tool: "cart.add", args: `{"n":1}`, rule: refusal.UnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Validate(tt.app, tt.tool, json.RawMessage(tt.args))
			if tt.rule != "" {
				if rf, ok := refusal.As(err); !ok || rf.Rule != tt.rule {
					t.Fatalf("Validate = %s, %v; want rule %s", got, err, tt.rule)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Validate = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	if n := app.calls.Load(); n != 0 {
		t.Fatalf("Validate called the app %d times", n)
	}
}

func TestLookalikeToolNamesAndAppIDsAreInvalidName(t *testing.T) {
	t.Parallel()
	_, err := ParseDeclaration([]byte(`{"name":"get\u202etxt","description":"reads"}`))
	if r, ok := refusal.As(err); !ok || r.Rule != refusal.InvalidName || !strings.Contains(r.Why, "U+202E") || !strings.Contains(r.Why, "index 3") {
		t.Errorf("ParseDeclaration = %v; want invalid-name naming U+202E at index 3", err)
	}
	if err := checkAppID("app\u200b"); refusal.RuleOf(err) != refusal.InvalidName {
		t.Errorf("checkAppID = %v; want invalid-name", err)
	}
}
