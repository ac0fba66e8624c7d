package pagerules

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/externalapp"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
)

// publicDir is the page's source directory, from this package's directory.
const publicDir = "../../public"

func TestRulesModuleIsCurrent(t *testing.T) {
	t.Parallel()
	want, err := Module()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(publicDir, "rules.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("public/rules.js is stale: run go generate ./internal/pagerules and commit it")
	}
}

func TestEveryRuleIsNamedOnce(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.Name] || !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(r.Name) || r.Doc == "" || r.From == "" {
			t.Errorf("rule %q: a name must be unique UPPER_SNAKE, with a doc and a source", r.Name)
		}
		seen[r.Name] = true
	}
}

// nameCase is one input of the parity test: an app id and a tool name.
type nameCase struct {
	App  string `json:"app"`
	Tool string `json:"tool"`
}

// nameVerdict is what each side says of a case: whether the tool name is valid and, when it is,
// the external app tool's model-facing name.
type nameVerdict struct {
	Valid bool   `json:"valid"`
	Name  string `json:"name"`
}

func nameCases() []nameCase {
	tools := []string{
		"", "a", "A", "0", "_", "-", "set_score", "Set-Score_2",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("z", 200),
		"a.b", "..", ".", "a b", " a", "a ", "a\n", "\na", "a\t", "a/b", "a\\b", "a:b", "a\x00b",
		"é", "café", "名前", "ツール", "tool_🙂", "🙂", "a\u200bb", "ａｂｃ", "Ⅸ", "ß", "İ", "ﬁ",
		"app_x_orders__list", "get_app_context", "__proto__", "constructor",
	}
	apps := []string{"", "a", "orders", "order-book", strings.Repeat("x", 24), strings.Repeat("y", 47),
		strings.Repeat("y", 48), strings.Repeat("z", 60), "café", "名前", "a.b", "🙂🙂"}
	var cases []nameCase
	for _, a := range apps {
		for _, tool := range tools {
			cases = append(cases, nameCase{a, tool})
		}
		// The lengths around MaxModelName, where the name starts being cut.
		room := externalapp.MaxModelName - len(externalapp.ModelPrefix) - len(a) - 2
		for d := -2; d <= 2; d++ {
			if n := room + d; n > 0 {
				cases = append(cases, nameCase{a, strings.Repeat("t", n)})
			}
		}
	}
	// And names made at random from an alphabet that mixes what is allowed with what is not.
	alphabet := []rune("abzAZ09_-. é名🙂\n$")
	rng := rand.New(rand.NewPCG(27, 1))
	for range 400 {
		r := make([]rune, rng.IntN(80))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, nameCase{apps[rng.IntN(len(apps))], string(r)})
	}
	return cases
}

func goVerdicts(cases []nameCase) []nameVerdict {
	out := make([]nameVerdict, len(cases))
	for i, c := range cases {
		out[i].Valid = miniapp.ValidToolName(c.Tool)
		if out[i].Valid {
			out[i].Name = externalapp.ModelName(c.App, c.Tool)
		}
	}
	return out
}

func TestToolNamePatternIsValidToolName(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(string(ToolNamePattern))
	for _, c := range nameCases() {
		if got, want := re.MatchString(c.Tool), miniapp.ValidToolName(c.Tool); got != want {
			t.Errorf("tool %q: the pattern says %v, ValidToolName %v", c.Tool, got, want)
		}
	}
}

func TestWebMCPToolNamePatternIsValidWebMCPToolName(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(string(WebMCPToolNamePattern))
	cases := append(nameCases(), nameCase{"a", strings.Repeat("a.", 64)}, nameCase{"a", strings.Repeat("a", 129)})
	for _, c := range cases {
		if got, want := re.MatchString(c.Tool), miniapp.ValidWebMCPToolName(c.Tool); got != want {
			t.Errorf("tool %q: the pattern says %v, ValidWebMCPToolName %v", c.Tool, got, want)
		}
	}
}

// nodeDriver runs the page's name functions on the cases read from stdin.
const nodeDriver = `import { readFileSync } from 'node:fs';
import { externalModelName, validToolName } from './names.js';
const cases = JSON.parse(readFileSync(0, 'utf8'));
const out = [];
for (const c of cases) {
  const valid = validToolName(c.tool);
  out.push({ valid, name: valid ? await externalModelName(c.app, c.tool) : '' });
}
process.stdout.write(JSON.stringify(out));
`

func TestNamesAgreeWithGo(t *testing.T) {
	t.Parallel()
	cases := nameCases()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	out := runInNode(t, nodeDriver, in, "names.js", "rules.js")
	var js []nameVerdict
	if err := json.Unmarshal(out, &js); err != nil {
		t.Fatalf("node answered %q: %v", out, err)
	}
	want := goVerdicts(cases)
	if len(js) != len(want) {
		t.Fatalf("node answered %d verdicts for %d cases", len(js), len(want))
	}
	for i, c := range cases {
		if js[i] != want[i] {
			t.Errorf("app %q, tool %q: the page says %+v, Go %+v", c.App, c.Tool, js[i], want[i])
		}
	}
}

// runInNode runs driver as an ES module in Node beside the page's modules named, with input on
// its stdin, and returns what it wrote.
func runInNode(t *testing.T, driver string, input []byte, modules ...string) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("this test runs the page's modules in Node (18 or newer), and node is not on PATH")
	}
	dir := t.TempDir()
	for _, name := range modules {
		b, err := os.ReadFile(filepath.Join(publicDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"package.json": `{"type":"module"}`, "driver.js": driver}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(node, "driver.js")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	return out
}

// budgetDriver sizes messages with public/message-budget.js and charges them to budgets.
const budgetDriver = `import { MessageBudget, messageBytes } from './message-budget.js';
const sized = {
  string: messageBytes('x'.repeat(1000)),
  envelope: messageBytes({ type: 'ab', n: 1 }),
  bytes: messageBytes({ b: new Uint8Array(5000) }),
  buffer: messageBytes(new ArrayBuffer(7000)),
  map: messageBytes(new Map([['k', 'vv']])),
  nested: messageBytes([[['deep']]]),
  wide: messageBytes(Array.from({ length: 5000 }, () => 0)),
  sparse: messageBytes(new Array(1e9)),
  keys: messageBytes(Object.fromEntries(Array.from({ length: 5000 }, (_, i) => ['k' + i, 0]))),
  huge: messageBytes({ text: 'x'.repeat(8 << 20) }),
};
const count = new MessageBudget();
let countOver = 0;
for (let i = 1; i <= 501 && !countOver; i++) if (count.charge({ type: 'x' })) countOver = i;
const owed = new MessageBudget();
let owedOver = '';
for (let i = 0; i < 1000 && !owedOver; i++) owedOver = owed.charge('x'.repeat(1 << 20), true);
const bytes = new MessageBudget();
let bytesOver = 0, why = '';
for (let i = 1; i <= 100 && !bytesOver; i++) if ((why = bytes.charge('x'.repeat(1 << 20)))) bytesOver = i;
process.stdout.write(JSON.stringify({ sized, countOver, owedOver, bytesOver, why }));
`

// TestTheMessageBudgetInNode holds public/message-budget.js to miniapp's budgets: what it charges
// a message, and which message it stops an app at.
func TestTheMessageBudgetInNode(t *testing.T) {
	t.Parallel()
	var got struct {
		Sized     map[string]int
		CountOver int
		OwedOver  string
		BytesOver int
		Why       string
	}
	out := runInNode(t, budgetDriver, nil, "message-budget.js", "rules.js")
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node answered %q: %v", out, err)
	}
	over := miniapp.MessageByteBudget + 1
	for name, want := range map[string]int{
		"string":   1000,
		"envelope": 8 + 4 + 2 + 1 + 8, // the object, "type" and its value, "n" and its value
		"bytes":    8 + 1 + 8 + 5000,  // the object, "b", the array and its bytes
		"buffer":   8 + 7000,          // the buffer and its bytes
		"map":      8 + 8 + 1 + 2,     // the map, its entry, the key and the value
		"nested":   8 + 8 + 8 + 4,     // three arrays and the string
		"wide":     over,              // more values than MaxSizedValues
		"sparse":   over,              // a length past them, never walked
		"keys":     over,              // more keys than MaxSizedValues
		"huge":     8 + 4 + 8<<20,     // past the budget by itself
	} {
		if got.Sized[name] != want {
			t.Errorf("messageBytes(%s) = %d, want %d", name, got.Sized[name], want)
		}
	}
	if got.CountOver != miniapp.MessageBudget+1 {
		t.Errorf("the count stopped the app at message %d, want %d", got.CountOver, miniapp.MessageBudget+1)
	}
	if got.OwedOver != "" {
		t.Errorf("1,000 owed answers of 1 MiB were stopped: %s", got.OwedOver)
	}
	if want := miniapp.MessageByteBudget>>20 + 1; got.BytesOver != want || !strings.Contains(got.Why, "bytes within") {
		t.Errorf("1 MiB messages stopped the app at message %d (%q), want %d", got.BytesOver, got.Why, want)
	}
}
