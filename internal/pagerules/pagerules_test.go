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

	"github.com/voicebox-go/voicebox/shared/externalapp"
	"github.com/voicebox-go/voicebox/shared/miniapp"
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
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("this test runs public/names.js in Node (18 or newer), and node is not on PATH")
	}
	dir := t.TempDir()
	for _, name := range []string{"names.js", "rules.js"} {
		b, err := os.ReadFile(filepath.Join(publicDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"package.json": `{"type":"module"}`, "driver.js": nodeDriver}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := nameCases()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "driver.js")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
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
